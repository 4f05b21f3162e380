"""skillvault's run and report documents as text: its JSON layout and its plain-text tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchkit._js import MISSING, object_entries, stringify, to_fixed, to_number, to_string, truthy
from benchkit.formats.skillvault._documents import DELTAS, BenchRunError, run_section


def dumps(document: Any) -> str:
    """A run or report document as skillvault writes it: ``JSON.stringify(document, null, 2)``
    and a newline."""
    return stringify(document, 2) + "\n"


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
    for label, _ in DELTAS:
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
    section = run_section(run)
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
