"""skillvault's run and report documents built: aggregates, Wilson intervals, deltas.

:func:`build_run` makes the ``skillvault.bench.run.v1`` document of a loaded config and a
:class:`~benchkit.results.RunResult`; :func:`build_report` the
``skillvault.bench.report.v1`` document of a run. Both are pure, with skillvault's
arithmetic and key order (see :mod:`benchkit.formats.skillvault.report`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from benchkit._js import round_to, truthy
from benchkit.errors import FormatError

if TYPE_CHECKING:
    from benchkit.formats.skillvault._model import LoadedBenchConfig
    from benchkit.results import CellResult, RunResult

CONTRACT_VERSION = "0.1"
RUN_CONTRACT = "skillvault.bench.run.v1"
REPORT_CONTRACT = "skillvault.bench.report.v1"
FROZEN_CREATED_AT = "1970-01-01T00:00:00.000Z"
"""``created_at`` of a deterministic run or report."""

_Z = 1.96
DELTAS = (
    ("curated_vs_no_skill", "curated_skill"),
    ("self_generated_vs_no_skill", "self_generated_skill"),
)
"""The comparisons a run records, each a condition against the ``no_skill`` baseline."""
_BASELINE = "no_skill"


class BenchRunError(FormatError):
    """A run document that ``bench report`` cannot use; the message is skillvault's own."""


def iso_now() -> str:
    """The current UTC time as ``Date.prototype.toISOString`` prints it."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def wilson95(passed: int, n: int) -> dict[str, Any]:
    """skillvault's ``confidence_95``: a Wilson interval with z = 1.96, rounded to 4 places.

    Computed with skillvault's exact formula and operation order, so every double — and
    therefore every rounded digit — is the one JavaScript gets.
    """
    if n <= 0:
        return {"method": "wilson", "low": 0, "high": 0}
    z2 = _Z * _Z
    phat = passed / n
    denominator = 1 + z2 / n
    center = (phat + z2 / (2 * n)) / denominator
    margin = (_Z * math.sqrt(phat * (1 - phat) / n + z2 / (4 * n * n))) / denominator
    return {
        "method": "wilson",
        "low": round_to(max(0.0, center - margin), 4),
        "high": round_to(min(1.0, center + margin), 4),
    }


def _delta(baseline: Mapping[str, Any], target: Mapping[str, Any]) -> dict[str, Any]:
    def rate(agg: Mapping[str, Any]) -> float:
        n: int = agg["sample_count"]
        return 0 if n == 0 else agg["pass_count"] / n

    return {
        "baseline_condition_id": baseline["condition_id"],
        "target_condition_id": target["condition_id"],
        "sample_count": min(baseline["sample_count"], target["sample_count"]),
        "pass_count_delta": target["pass_count"] - baseline["pass_count"],
        # from the unrounded rates, but from the already-rounded average durations
        "pass_rate_delta": round_to(rate(target) - rate(baseline), 4),
        "avg_duration_ms_delta": round_to(
            target["avg_duration_ms"] - baseline["avg_duration_ms"], 3
        ),
    }


def _utf16_key(text: str) -> bytes:
    """Sort key of JavaScript's default ``sort()``: UTF-16 code units."""
    return text.encode("utf-16-be", errors="surrogatepass")


def aggregate(
    results: Iterable[Mapping[str, Any]], condition_ids: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """skillvault's ``aggregates``, ``deltas`` and ``error_breakdown`` from result rows.

    Per condition (in ``condition_ids`` order, extras included): sample, pass and fail
    counts, ``pass_rate`` rounded to 4 places (0 for no samples), ``avg_duration_ms``
    rounded to 3, and :func:`wilson95`. The two deltas compare ``curated_skill`` and
    ``self_generated_skill`` with ``no_skill`` (None when either is missing). The error
    breakdown counts every category but ``none``, keys sorted as JavaScript sorts them.
    """
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for row in results:
        grouped.setdefault(row["condition_id"], []).append(row)
    aggregates: dict[str, Any] = {}
    breakdown: dict[str, Any] = {}
    for cid in condition_ids:
        rows = grouped.get(cid, [])
        n = len(rows)
        passed = sum(1 for row in rows if row["passed"])
        total_ms = 0
        for row in rows:
            total_ms += row["duration_ms"]
        aggregates[cid] = {
            "condition_id": cid,
            "sample_count": n,
            "pass_count": passed,
            "fail_count": n - passed,
            "pass_rate": 0 if n == 0 else round_to(passed / n, 4),
            "avg_duration_ms": 0 if n == 0 else round_to(total_ms / n, 3),
            "confidence_95": wilson95(passed, n),
        }
        counts: dict[str, int] = {}
        for row in rows:
            category = row["error_category"]
            if category != "none":
                counts[category] = counts.get(category, 0) + 1
        breakdown[cid] = {key: counts[key] for key in sorted(counts, key=_utf16_key)}
    deltas: dict[str, Any] = {}
    for label, target in DELTAS:
        if _BASELINE in aggregates and target in aggregates:
            deltas[label] = _delta(aggregates[_BASELINE], aggregates[target])
        else:
            deltas[label] = None
    return aggregates, deltas, breakdown


def _result_row(cell: CellResult) -> dict[str, Any]:
    """One ``results`` entry: the cell's last attempt, as skillvault records it."""
    row: dict[str, Any] = {"condition_id": cell.condition_id, "task_id": cell.task_id}
    if not cell.verdicts:  # the provider failed before any verifier ran
        row.update(
            passed=False,
            duration_ms=0,
            attempts=cell.attempts,
            exit_code=None,
            error_category=cell.error_category,
        )
        if cell.error is not None:
            row["error_message"] = cell.error
        return row
    verdict = cell.verdicts[-1]
    row.update(
        passed=verdict.passed,
        duration_ms=int(verdict.duration_ms),
        attempts=cell.attempts,
        exit_code=verdict.exit_code,
        error_category="none" if verdict.passed else verdict.category,
    )
    if not verdict.passed and verdict.message is not None:
        row["error_message"] = verdict.message
    if verdict.stdout_excerpt is not None:
        row["stdout_excerpt"] = verdict.stdout_excerpt
    if verdict.stderr_excerpt is not None:
        row["stderr_excerpt"] = verdict.stderr_excerpt
    return row


def build_results(loaded: LoadedBenchConfig, result: RunResult) -> list[dict[str, Any]]:
    """The ``results`` rows in skillvault's order — conditions outer, tasks inner, both in
    config order — whatever order the cells finished in."""
    by_key: dict[tuple[str, str], list[CellResult]] = {}
    for cell in result.cells:
        by_key.setdefault((cell.condition_id, cell.task_id), []).append(cell)
    rows: list[dict[str, Any]] = []
    for condition in loaded.config.conditions:
        for task in loaded.config.tasks:
            cells = sorted(by_key.get((condition.id, task.id), ()), key=lambda c: c.epoch)
            rows.extend(_result_row(cell) for cell in cells)
    return rows


def build_run(
    loaded: LoadedBenchConfig, result: RunResult, *, git_commit: str | None
) -> dict[str, Any]:
    """The ``skillvault.bench.run.v1`` document for ``result``, a run of ``loaded``.

    ``git_commit`` is what :func:`benchkit.formats.skillvault.git_commit` found for the
    config's directory (skillvault records it even in deterministic mode). A
    deterministic run has ``created_at`` 1970-01-01T00:00:00.000Z and zero durations.
    """
    config = loaded.config
    deterministic = result.info.options.deterministic
    meta = config.metadata
    metadata = {
        key: value
        for key, value in (
            ("suite", meta.suite),
            ("model_label", meta.model_label),
            ("environment_label", meta.environment_label),
        )
        if value is not None
    }
    conditions: list[dict[str, Any]] = []
    for condition, bundle in zip(config.conditions, loaded.bundle_paths, strict=True):
        ref: dict[str, Any] = {"id": condition.id}
        if bundle is not None:
            ref["bundle_path"] = bundle
        if condition.adapter is not None:
            ref["adapter_id"] = condition.adapter.id
        conditions.append(ref)
    results = build_results(loaded, result)
    aggregates, deltas, breakdown = aggregate(results, [c.id for c in config.conditions])
    return {
        "contract_version": CONTRACT_VERSION,
        "contract_id": RUN_CONTRACT,
        "created_at": FROZEN_CREATED_AT if deterministic else result.info.created_at,
        "run": {
            "config_path": loaded.config_path,
            "git_commit": git_commit,
            "deterministic": deterministic,
            "seed": config.execution.seed,
            "retries": config.execution.retries,
            "metadata": metadata,
        },
        "conditions": conditions,
        "tasks": [
            {
                "id": task.id,
                "domain": task.domain,
                "timeout_ms": task.timeout_ms,
                "verifier": {"type": task.verifier.type, "label": task.verifier.label},
            }
            for task in config.tasks
        ],
        "results": results,
        "aggregates": aggregates,
        "deltas": deltas,
        "error_breakdown": breakdown,
    }


def run_section(run: Mapping[str, Any]) -> Mapping[str, Any]:
    """``run.run``; JavaScript reads properties of any value but null and undefined."""
    section = run.get("run")
    if section is None:
        raise BenchRunError(
            "the run JSON has no `run` object (skillvault fails reading run.deterministic)",
            json_path="$.run",
            fix="pass a complete run JSON written by `bench run`",
        )
    return section if isinstance(section, Mapping) else {}


def build_report(run: Mapping[str, Any], *, now: Callable[[], str] = iso_now) -> dict[str, Any]:
    """The ``skillvault.bench.report.v1`` document for a run document.

    ``aggregates``, ``deltas`` and ``error_breakdown`` are the run's own, copied verbatim —
    never recomputed — as skillvault does. ``created_at`` is 1970-01-01T00:00:00.000Z for
    a deterministic run, else ``now()``; keys the run lacks are left out, as
    ``JSON.stringify`` leaves out undefined values.
    """
    section = run_section(run)
    deterministic = section.get("deterministic")
    report: dict[str, Any] = {
        "contract_version": CONTRACT_VERSION,
        "contract_id": REPORT_CONTRACT,
        "created_at": FROZEN_CREATED_AT if truthy(deterministic) else now(),
    }
    if "created_at" in run:
        report["source_created_at"] = run["created_at"]
    if "deterministic" in section:
        report["deterministic"] = deterministic
    for key in ("aggregates", "deltas", "error_breakdown"):
        if key in run:
            report[key] = run[key]
    return report
