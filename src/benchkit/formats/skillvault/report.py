"""skillvault's run and report contracts, byte for byte: JSON and tables.

``skillvault.bench.run.v1`` is what ``skillvault bench run`` writes and
``skillvault.bench.report.v1`` what ``skillvault bench report`` derives from it. Other
tools read both, so they are reproduced exactly: key order, keys left out when skillvault
leaves them undefined, JavaScript number formatting (``1``, not ``1.0``), rounding with
``Math.round`` (halves up), Wilson intervals with z = 1.96, ``JSON.stringify(x, null, 2)``
layout and the trailing newline, and the plain-text tables.

Every function here is pure — a function of a loaded config and a
:class:`~benchkit.results.RunResult`, or of a run document — so a server can call them::

    loaded = skillvault.load_config("bench.yaml")
    result = await Runner().run(skillvault.to_suite(loaded))
    run = build_run(loaded, result, git_commit=skillvault.git_commit(loaded.config_dir))
    text = dumps(run)                       # the run JSON, as skillvault writes it
    table = render_run_table(run)           # the run table
    report = build_report(run)              # the report document (copies the run's numbers)

The JavaScript details (number printing, rounding, ``toFixed``, ``JSON.stringify``) live
in :mod:`benchkit._js`.
"""

from benchkit.formats.skillvault._documents import (
    CONTRACT_VERSION,
    FROZEN_CREATED_AT,
    REPORT_CONTRACT,
    RUN_CONTRACT,
    BenchRunError,
    aggregate,
    build_report,
    build_results,
    build_run,
    iso_now,
    wilson95,
)
from benchkit.formats.skillvault._read import parse_run, read_run, run_from_export
from benchkit.formats.skillvault._render import (
    condition_order,
    dumps,
    render_report_table,
    render_run_table,
)

__all__ = [
    "CONTRACT_VERSION",
    "FROZEN_CREATED_AT",
    "REPORT_CONTRACT",
    "RUN_CONTRACT",
    "BenchRunError",
    "aggregate",
    "build_report",
    "build_results",
    "build_run",
    "condition_order",
    "dumps",
    "iso_now",
    "parse_run",
    "read_run",
    "render_report_table",
    "render_run_table",
    "run_from_export",
    "wilson95",
]
