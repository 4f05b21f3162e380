"""Table, Markdown and JSON renderings of a RunResult."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchkit.results import Comparison, ConditionAggregate, RunResult

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["summary_rows", "to_json", "to_markdown", "to_table"]

_HEADERS = ("condition", "passed", "pass rate [95% CI]", "score", "errors", "p50 ms", "p95 ms")
_CMP_HEADERS = (
    "comparison",
    "Δ pass rate",
    "Δ score [95% CI]",
    "improved",
    "regressed",
    "McNemar p",
)


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _signed(value: float, digits: int = 3) -> str:
    return f"{value:+.{digits}f}"


def _score(agg: ConditionAggregate) -> str:
    if agg.score is None:
        return "–"
    label = f"pass@{agg.k}" if agg.scoring_method == "pass_at_k" else ""
    return f"{agg.score:.3f}" + (f" ({label})" if label else "")


def summary_rows(result: RunResult) -> list[tuple[str, ...]]:
    """One row of display strings per condition (the columns of the summary table)."""
    rows: list[tuple[str, ...]] = []
    for agg in result.aggregates:
        ci = agg.pass_rate_ci
        rows.append(
            (
                agg.condition_id,
                f"{agg.passed}/{agg.n}",
                f"{agg.pass_rate:.3f} [{ci.low:.3f}, {ci.high:.3f}]",
                _score(agg),
                str(agg.errors),
                _num(agg.latency_p50_ms, 1),
                _num(agg.latency_p95_ms, 1),
            )
        )
    return rows


def _comparison_row(cmp: Comparison) -> tuple[str, ...]:
    iv = cmp.paired.interval
    p = cmp.paired.mcnemar_p
    return (
        f"{cmp.target} vs {cmp.baseline}",
        _signed(cmp.pass_rate_delta),
        f"{_signed(cmp.paired.delta)} [{_signed(iv.low)}, {_signed(iv.high)}]",
        str(len(cmp.improved)),
        str(len(cmp.regressed)),
        _num(p, 4),
    )


def _ids(task_ids: tuple[str, ...], limit: int = 20) -> str:
    shown = ", ".join(f"`{t}`" for t in task_ids[:limit])
    more = len(task_ids) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def _title(result: RunResult) -> str:
    info = result.info
    return f"{info.benchmark_name or info.benchmark_id} v{info.benchmark_version}"


def _md_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def to_markdown(result: RunResult) -> str:
    """A Markdown report: summary per condition, comparisons, and errors by category."""
    info = result.info
    lines = [f"# {_title(result)}", "", f"Run `{info.run_id}` · created {info.created_at}", ""]
    if result.interrupted:
        lines += [f"**Interrupted:** {result.not_run} cells did not run.", ""]
    lines += _md_table(_HEADERS, summary_rows(result))
    if result.comparisons:
        lines += ["", "## Comparisons", ""]
        lines += _md_table(_CMP_HEADERS, [_comparison_row(c) for c in result.comparisons])
        flips = [c for c in result.comparisons if c.improved or c.regressed]
        if flips:
            lines += ["", "### Flipped tasks", ""]
            for cmp in flips:
                lines.append(f"- **{cmp.target} vs {cmp.baseline}**")
                if cmp.improved:
                    lines.append(f"  - fail → pass: {_ids(cmp.improved)}")
                if cmp.regressed:
                    lines.append(f"  - pass → fail: {_ids(cmp.regressed)}")
    errors: list[tuple[str, ...]] = [
        (agg.condition_id, cat, str(count))
        for agg in result.aggregates
        for cat, count in agg.errors_by_category.items()
    ]
    if errors:
        lines += ["", "## Failures by category", ""]
        lines += _md_table(("condition", "category", "count"), errors)
    return "\n".join(lines) + "\n"


def to_table(result: RunResult) -> Table:
    """A :class:`rich.table.Table` with the per-condition summary and comparisons."""
    from rich.table import Table

    table = Table(title=f"{_title(result)} — {result.info.run_id}", title_justify="left")
    for header in _HEADERS:
        table.add_column(header, justify="left" if header == "condition" else "right")
    for row in summary_rows(result):
        table.add_row(*row)
    if result.comparisons:
        table.caption = "; ".join(
            f"{c.target} vs {c.baseline}: Δ pass rate {_signed(c.pass_rate_delta)}, "
            f"McNemar p={_num(c.paired.mcnemar_p, 4)}"
            for c in result.comparisons
        )
    return table


def to_json(result: RunResult) -> str:
    """The full result as indented JSON."""
    return result.to_json()
