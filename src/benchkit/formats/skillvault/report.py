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

from __future__ import annotations

import errno
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchkit._js import (
    MISSING,
    as_doubles,
    object_entries,
    round_to,
    stringify,
    to_fixed,
    to_number,
    to_string,
    truthy,
)
from benchkit.errors import FormatError

if TYPE_CHECKING:
    from benchkit.formats.skillvault import LoadedBenchConfig
    from benchkit.results import CellResult, RunResult

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

CONTRACT_VERSION = "0.1"
RUN_CONTRACT = "skillvault.bench.run.v1"
REPORT_CONTRACT = "skillvault.bench.report.v1"
FROZEN_CREATED_AT = "1970-01-01T00:00:00.000Z"
"""``created_at`` of a deterministic run or report."""

_Z = 1.96
_DELTAS = (
    ("curated_vs_no_skill", "curated_skill"),
    ("self_generated_vs_no_skill", "self_generated_skill"),
)
_BASELINE = "no_skill"


class BenchRunError(FormatError):
    """A run document that ``bench report`` cannot use; the message is skillvault's own."""


def iso_now() -> str:
    """The current UTC time as ``Date.prototype.toISOString`` prints it."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------- JSON


def dumps(document: Any) -> str:
    """A run or report document as skillvault writes it: ``JSON.stringify(document, null, 2)``
    and a newline."""
    return stringify(document, 2) + "\n"


# --------------------------------------------------------------------------- aggregation


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
    for label, target in _DELTAS:
        if _BASELINE in aggregates and target in aggregates:
            deltas[label] = _delta(aggregates[_BASELINE], aggregates[target])
        else:
            deltas[label] = None
    return aggregates, deltas, breakdown


# --------------------------------------------------------------------------- the run


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


# --------------------------------------------------------------------------- reading a run


def _no_constant(name: str) -> Any:
    raise ValueError(f"Unexpected token {name!r} (JSON has no NaN or Infinity)")


def parse_run(text: str, *, source: str | Path | None = None) -> dict[str, Any]:
    """A run document from JSON text, checked as skillvault's ``parseBenchRunOutput`` does.

    Only the shape skillvault relies on is checked: a JSON object whose ``contract_id`` is
    ``skillvault.bench.run.v1`` and whose ``conditions``, ``tasks`` and ``results`` are
    lists. Raises :class:`BenchRunError` with skillvault's messages; ``source`` names the
    file in the error.
    """
    fix = "pass the JSON written by `bench run` (--format json, or --out in table mode)"
    try:
        parsed = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise BenchRunError(
            f"Failed to parse benchmark result JSON: {exc}", file=source, fix=fix
        ) from None
    if not isinstance(parsed, dict):
        raise BenchRunError("Benchmark result JSON must be an object", file=source, fix=fix)
    if "contract_id" not in parsed and isinstance(parsed.get("info"), dict) and "cells" in parsed:
        parsed = run_from_export(text, source=source)
    if parsed.get("contract_id") != RUN_CONTRACT:
        raise BenchRunError(
            "Unsupported benchmark result contract_id",
            file=source,
            json_path="$.contract_id",
            fix=f'{fix}; its contract_id is "{RUN_CONTRACT}"',
        )
    if not all(isinstance(parsed.get(key), list) for key in ("conditions", "tasks", "results")):
        raise BenchRunError(
            "Benchmark result JSON is missing required arrays (conditions/tasks/results)",
            file=source,
            fix=fix,
        )
    run: dict[str, Any] = as_doubles(parsed)
    return run


def run_from_export(text: str, *, source: str | Path | None = None) -> dict[str, Any]:
    """The run document of a skillvault run exported from the run store (``runs export``,
    a :class:`~benchkit.results.RunResult` JSON): its cells, with the config it was run
    from read again for the parts the store does not keep (tasks, bundles, metadata)."""
    from benchkit.formats import skillvault
    from benchkit.results import RunResult

    try:
        result = RunResult.from_json(text)
    except Exception as exc:  # cattrs' errors on a wrong shape
        raise BenchRunError(
            f"Failed to read the exported run: {type(exc).__name__}: {exc}",
            file=source,
            fix="pass the JSON written by `python -m benchkit runs export RUN`",
        ) from None
    info = result.info
    if info.source_format != "skillvault" or info.source_path is None:
        raise BenchRunError(
            f"the exported run {info.run_id!r} is not a skillvault bench run "
            f"(format {info.source_format!r})",
            file=source,
            fix="export a run made from a skillvault bench config",
        )
    loaded = skillvault.load_config(info.source_path)
    return build_run(loaded, result, git_commit=skillvault.git_commit(loaded.config_dir))


def read_run(path: str | Path) -> dict[str, Any]:
    """:func:`parse_run` on a file (read as UTF-8, bad bytes replaced, as Node reads it)."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        code = errno.errorcode.get(exc.errno or 0, "EIO")
        reason = (exc.strerror or "cannot read").lower()
        raise BenchRunError(
            f"{code}: {reason}, open '{path}'",
            fix="pass the path of a run JSON written by `bench run`",
        ) from None
    return parse_run(raw.decode("utf-8", errors="replace"), source=file)


# --------------------------------------------------------------------------- the report


def _run_section(run: Mapping[str, Any]) -> Mapping[str, Any]:
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
    section = _run_section(run)
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


# --------------------------------------------------------------------------- tables


def _entries(value: Any) -> list[tuple[str, Any]]:
    """``Object.keys(value)`` with the values, in JavaScript's order."""
    if isinstance(value, Mapping):
        return object_entries(value)
    if isinstance(value, (list, str)):
        return [(str(i), item) for i, item in enumerate(value)]
    return []


def _fixed(holder: Mapping[str, Any], key: str, digits: int, where: str) -> str:
    value = holder.get(key, MISSING)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BenchRunError(
            f"{where}.{key} is not a number (got {to_string(value)})",
            json_path=f"$.{where}.{key}",
            fix="pass a run JSON written by `bench run`, or fix the value",
        )
    return to_fixed(value, digits)


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise BenchRunError(
            f"{where} is not an object (got {to_string(value)})",
            json_path=f"$.{where}",
            fix="pass a run JSON written by `bench run`",
        )
    return value


def _aggregate_rows(aggregates: Any, ids: Sequence[str]) -> list[str]:
    rows = ["condition | pass_rate | pass/total | avg_duration_ms | ci95_low | ci95_high"]
    table = _object(aggregates, "aggregates")
    for cid in ids:
        agg = table.get(cid)
        if not truthy(agg):
            continue
        where = f"aggregates.{cid}"
        agg = _object(agg, where)
        ci = _object(agg.get("confidence_95", MISSING), f"{where}.confidence_95")
        counts = (
            f"{to_string(agg.get('pass_count', MISSING))}/"
            f"{to_string(agg.get('sample_count', MISSING))}"
        )
        rows.append(
            " | ".join(
                (
                    cid,
                    _fixed(agg, "pass_rate", 4, where),
                    counts,
                    _fixed(agg, "avg_duration_ms", 3, where),
                    _fixed(ci, "low", 4, f"{where}.confidence_95"),
                    _fixed(ci, "high", 4, f"{where}.confidence_95"),
                )
            )
        )
    return rows


def _delta_rows(deltas: Any) -> list[str]:
    rows = ["comparison | pass_rate_delta | pass_count_delta | avg_duration_ms_delta"]
    table = _object(deltas, "deltas")
    for label, _ in _DELTAS:
        data = table.get(label)
        if not truthy(data):
            rows.append(f"{label} | n/a | n/a | n/a")
            continue
        where = f"deltas.{label}"
        data = _object(data, where)
        rate = _fixed(data, "pass_rate_delta", 4, where)
        duration = _fixed(data, "avg_duration_ms_delta", 3, where)
        count = data.get("pass_count_delta", MISSING)  # `count >= 0` compares it as a number
        rows.append(
            f"{label} | {'+' if data['pass_rate_delta'] >= 0 else ''}{rate} | "
            f"{'+' if to_number(count) >= 0 else ''}{to_string(count)} | "
            f"{'+' if data['avg_duration_ms_delta'] >= 0 else ''}{duration}"
        )
    return rows


def _error_rows(breakdown: Any, ids: Sequence[str]) -> list[str]:
    rows = ["condition | error_category | count"]
    table = _object(breakdown, "error_breakdown")
    for cid in ids:
        categories = table.get(cid)
        entries = _entries({} if categories is None else categories)
        if not entries:
            rows.append(f"{cid} | none | 0")
        rows.extend(f"{cid} | {key} | {to_string(count)}" for key, count in entries)
    if not ids:
        rows.append("none | none | 0")
    return rows


def _raw_condition_ids(run: Mapping[str, Any]) -> list[Any]:
    """``run.conditions.map((c) => c.id)`` (a null entry is an error, as in JavaScript)."""
    ids: list[Any] = []
    for index, condition in enumerate(run.get("conditions") or []):
        if condition is None:
            raise BenchRunError(
                f"conditions[{index}] is null",
                json_path=f"$.conditions[{index}]",
                fix="give every condition an id",
            )
        ids.append(condition.get("id", MISSING) if isinstance(condition, Mapping) else MISSING)
    return ids


def condition_order(run: Mapping[str, Any]) -> list[str]:
    """The condition ids a run's tables follow: its ``conditions``, in order."""
    return [to_string(value) for value in _raw_condition_ids(run)]


def _body(document: Mapping[str, Any], ids: Sequence[str]) -> list[str]:
    return [
        "",
        *_aggregate_rows(document.get("aggregates"), ids),
        "",
        *_delta_rows(document.get("deltas")),
        "",
        *_error_rows(document.get("error_breakdown"), ids),
    ]


def render_run_table(run: Mapping[str, Any]) -> str:
    """skillvault's run table: header lines, then conditions, comparisons, errors."""
    section = _run_section(run)
    raw_ids = _raw_condition_ids(run)
    git = section.get("git_commit")
    # Array.prototype.join shows null and undefined as empty strings
    joined = ", ".join("" if c is None or c is MISSING else to_string(c) for c in raw_ids)
    lines = [
        f"benchmark_created_at: {to_string(run.get('created_at', MISSING))}",
        f"config_path: {to_string(section.get('config_path', MISSING))}",
        f"git_commit: {'-' if git is None else to_string(git)}",
        f"deterministic: {to_string(section.get('deterministic', MISSING))}",
        f"seed: {to_string(section.get('seed', MISSING))}",
        f"retries: {to_string(section.get('retries', MISSING))}",
        f"tasks: {len(run.get('tasks') or [])}",
        f"conditions: {joined}",
        *_body(run, [to_string(c) for c in raw_ids]),
    ]
    return "\n".join(lines) + "\n"


def render_report_table(report: Mapping[str, Any], condition_ids: Sequence[str]) -> str:
    """skillvault's report table; ``condition_ids`` come from the run's ``conditions``."""
    lines = [
        f"report_created_at: {to_string(report.get('created_at', MISSING))}",
        f"source_created_at: {to_string(report.get('source_created_at', MISSING))}",
        f"deterministic: {to_string(report.get('deterministic', MISSING))}",
        *_body(report, condition_ids),
    ]
    return "\n".join(lines) + "\n"
