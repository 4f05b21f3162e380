"""The eval-skills report: one ``SkillCompletionReport`` per skill, as the original writes it.

:func:`build_reports` is a pure function of a :class:`~benchkit.results.RunResult` (plus
the benchmark, the skills' versions and the run's ``--timeout``): it returns the list of
per-skill report dicts with the original's keys, key order and arithmetic —

* ``completionRate`` = passes / results, ``errorRate`` = (errors + timeouts) / results;
* ``partialScore`` by the benchmark's ``scoringMethod``: ``mean`` of the scores,
  ``weighted_mean`` by task weight, or ``pass_at_k`` (the unbiased estimator per task over
  the runs, averaged over tasks);
* ``consistencyScore`` = max(0, 1 − population std-dev of the per-run pass rates), 1 with
  one run;
* latency p50 / p95 / p99 by nearest rank over the latencies > 0, then ``Math.round``;
* ``compositeScore`` = 0.5·CR + 0.2·(1 − clamp(p95 / maxLatencyMs, 0, 1)) + 0.3·(1 − ER),
  with maxLatencyMs = the benchmark's, else the run's timeout;
* CR, partial, ER and composite rounded half-up to 4 digits (``Math.round(x·1e4)/1e4``);
* ``confidenceInterval`` (from 10 results on): benchkit's seeded bootstrap of the scores.

:func:`to_json`, :func:`to_markdown`, :func:`to_html` and :func:`to_csv` render the list
byte for byte as eval-skills does (numbers and ``toFixed`` the JavaScript way), and
:func:`write_reports` writes ``eval-result-<timestamp>.{json,md,html,csv}``.

    >>> reports = build_reports(result, benchmark=bench, versions={"calc": "1.0.0"},
    ...                         timeout_ms=30000)                        # doctest: +SKIP
    >>> print(to_markdown(reports))                                      # doctest: +SKIP
"""

from benchkit.formats.eval_skills._report_build import build_reports, iso_timestamp
from benchkit.formats.eval_skills._report_render import (
    FORMATS,
    report_stem,
    to_csv,
    to_html,
    to_json,
    to_markdown,
    write_reports,
)

__all__ = [
    "FORMATS",
    "build_reports",
    "iso_timestamp",
    "report_stem",
    "to_csv",
    "to_html",
    "to_json",
    "to_markdown",
    "write_reports",
]
