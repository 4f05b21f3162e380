"""Table, Markdown and JSON renderings of a RunResult.

Every rendering says what its numbers rest on (intervals count tasks or clusters, not
cells), calls out a condition that errored on every cell in one line at the top instead of
comparing it, and says why cells failed: per condition, the error categories with counts
and a few example messages. The Markdown report adds the run's tool's own section: its
:attr:`~benchkit.tools.Tool.report_markdown`, found in :data:`MARKDOWN_SECTIONS` by the
run's source format (as the HTML report finds :attr:`~benchkit.tools.Tool.report_html`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchkit.reports._sections import MARKDOWN_SECTIONS, find_section
from benchkit.results import Comparison, ConditionAggregate, RunResult

if TYPE_CHECKING:
    from rich.table import Table

__all__ = [
    "MARKDOWN_SECTIONS",
    "broken_lines",
    "comparison_lines",
    "failure_lines",
    "interval_note",
    "judge_lines",
    "passed_text",
    "reproduction_lines",
    "summary_rows",
    "to_json",
    "to_markdown",
    "to_table",
    "variance_lines",
    "warning_lines",
]

_HEADERS = (
    "condition",
    "passed",
    "pass rate [95% CI]",
    "score [95% CI]",
    "tasks",
    "errors",
    "p50 ms",
    "p95 ms",
)
_CMP_HEADERS = (
    "comparison",
    "Δ pass rate",
    "Δ score [95% CI]",
    "improved",
    "regressed",
    "p (test)",
    "significant",
    "MDE 80%",
)
#: The interval methods, as the note under the summary names them.
_METHODS = {
    "wilson": "Wilson (each task ran once)",
    "task_t": "cluster-robust t across tasks (epochs of a task are one unit)",
    "cluster_t": "cluster-robust t across the declared clusters",
    "cluster_wilson": "Wilson over tasks/clusters (every unit had the same value)",
}


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _signed(value: float, digits: int = 3) -> str:
    return f"{value:+.{digits}f}"


def _score(agg: ConditionAggregate) -> str:
    if agg.score is None:
        return "–"
    label = f" (pass@{agg.k})" if agg.scoring_method == "pass_at_k" else ""
    ci = agg.score_ci
    interval = "" if ci is None else f" [{ci.low:.3f}, {ci.high:.3f}]"
    return f"{agg.score:.3f}{interval}{label}"


def _units(agg: ConditionAggregate) -> str:
    if agg.n_clusters and agg.n_clusters != agg.n_tasks:
        return f"{agg.n_tasks} ({agg.n_clusters} clusters)"
    return str(agg.n_tasks)


def passed_text(passed: int, n: int, unjudged: int = 0) -> str:
    """``7/10``, or over the judged cells with the unjudged ones beside: ``3/4 +6 unjudged``."""
    text = f"{passed}/{n - unjudged}"
    return f"{text} +{unjudged} unjudged" if unjudged else text


def warning_lines(result: RunResult) -> list[str]:
    """The run's warnings (a weak judge), one line each, as every report shows them first."""
    return list(result.warnings)


def summary_rows(result: RunResult) -> list[tuple[str, ...]]:
    """One row of display strings per condition (the columns of the summary table)."""
    rows: list[tuple[str, ...]] = []
    for agg in result.aggregates:
        ci = agg.pass_rate_ci
        rows.append(
            (
                agg.condition_id,
                passed_text(agg.passed, agg.n, agg.unjudged),
                f"{agg.pass_rate:.3f} [{ci.low:.3f}, {ci.high:.3f}]",
                _score(agg),
                _units(agg),
                str(agg.errors),
                _num(agg.latency_p50_ms, 1),
                _num(agg.latency_p95_ms, 1),
            )
        )
    return rows


def interval_note(result: RunResult) -> str:
    """One sentence naming the interval methods the summary used and their unit."""
    methods: list[str] = []
    for agg in result.aggregates:
        for iv in (agg.pass_rate_ci, agg.score_ci):
            if iv is not None and iv.method in _METHODS and iv.method not in methods:
                methods.append(iv.method)
    if not methods:
        return ""
    return "95% intervals: " + "; ".join(_METHODS[m] for m in methods) + "."


def broken_lines(result: RunResult) -> list[str]:
    """One line per condition that errored on every cell (it is not compared)."""
    lines: list[str] = []
    for agg in result.aggregates:
        if not agg.broken:
            continue
        cats = ", ".join(f"{cat} ×{count}" for cat, count in agg.errors_by_category.items())
        example = agg.failure_examples[0] if agg.failure_examples else None
        why = f" — e.g. {example.task_id}: {example.message}" if example else ""
        if agg.unjudged == agg.n:
            lines.append(
                f"Condition {agg.condition_id} could not be judged on any cell ({agg.n} of "
                f"{agg.n}; {cats}){why}. The judge failed, not the system; the condition is "
                "left out of the comparisons."
            )
            continue
        lines.append(
            f"Condition {agg.condition_id} errored on every cell ({agg.n} of {agg.n}; "
            f"{cats}){why}. It is left out of the comparisons."
        )
    return lines


def failure_lines(agg: ConditionAggregate) -> list[str]:
    """Per error category of ``agg``: ``category ×count: task (epoch): reason; ...``."""
    lines: list[str] = []
    for category, count in agg.errors_by_category.items():
        examples = [e for e in agg.failure_examples if e.category == category]
        quoted = "; ".join(f"{e.task_id} (epoch {e.epoch}): {e.message}" for e in examples)
        lines.append(f"{category} ×{count}" + (f": {quoted}" if quoted else ""))
    return lines


def variance_lines(result: RunResult) -> list[str]:
    """Per condition with several epochs: the variance split and what more epochs or more
    tasks would buy, in standard-error terms."""
    lines: list[str] = []
    for agg in result.aggregates:
        vs = agg.variance
        if vs is None or vs.within is None or vs.tasks < 2 or vs.between + vs.within == 0:
            continue
        se = vs.se()
        lines.append(
            f"{agg.condition_id}: variance between tasks {vs.between:.4f}, within tasks "
            f"{vs.within:.4f} ({vs.epochs:g} epochs) — standard error {se:.3f}; "
            f"unlimited epochs would give {vs.se(epochs=1e12):.3f}, "
            f"twice the tasks {vs.se(tasks=2 * vs.tasks):.3f}"
        )
    return lines


def _level(level: float) -> str:
    """`` (98.3%)`` after an interval whose level is not the header's 95 %."""
    if abs(level - 0.95) < 1e-9:
        return ""
    return f" ({level:.0%})" if round(level * 100, 6).is_integer() else f" ({level:.1%})"


def _comparison_row(cmp: Comparison) -> tuple[str, ...]:
    iv = cmp.paired.interval
    return (
        f"{cmp.target} vs {cmp.baseline}",
        _signed(cmp.pass_rate_delta),
        f"{_signed(cmp.paired.delta)} [{_signed(iv.low)}, {_signed(iv.high)}]{_level(iv.level)}",
        str(len(cmp.improved)),
        str(len(cmp.regressed)),
        cmp.p_text(),
        _significant(cmp),
        _mde(cmp),
    )


def _significant(cmp: Comparison) -> str:
    """``yes`` / ``no`` at the comparison's alpha (after Holm), or ``cannot be`` when no
    result of this size could be."""
    if cmp.significant is None:
        return "–"
    if cmp.significant:
        return "yes"
    return "cannot be" if cmp.unreachable else "no"


def _mde(cmp: Comparison) -> str:
    if cmp.detectable.startswith("none"):
        return cmp.detectable
    return _num(cmp.paired.mde)


def comparison_lines(result: RunResult) -> list[str]:
    """Per comparison, in words: significant or not at α (after Holm), and why its
    interval and test disagree when they do."""
    lines: list[str] = []
    for c in result.comparisons:
        if c.verdict:
            lines.append(f"{c.target} vs {c.baseline}: {c.verdict}")
        if c.note:
            lines.append(f"{c.target} vs {c.baseline}: {c.note}")
    return lines


def judge_lines(result: RunResult) -> list[str]:
    """What :meth:`RunResult.judge_report` finds without human ratings (agreement between
    evaluators, self-consistency, position bias) as point estimates — a bootstrap per pair
    of evaluators would cost seconds on a large run; ``runs show RUN --judges`` adds the
    intervals. Empty when there is nothing to say."""
    if not result.cells:
        return []
    lines = result.judge_report(intervals=False).lines()
    if lines:
        lines.append(
            "intervals and agreement with people: python -m benchkit runs show RUN --judges"
        )
    return lines


def reproduction_lines(result: RunResult) -> list[str]:
    """The reproduction line of each condition against the published figure the benchmark
    declares, then its metrics with intervals (none when it declares none)."""
    return [] if result.reproduction is None else result.reproduction.lines()


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


def created_text(result: RunResult, stored_at: str | None = None) -> str:
    """When the run was made, as a report's header says it: the document's ``created_at``
    (fixed to 1970-01-01 by deterministic mode, which the text then says), and, when the
    run came from a store, when it was stored."""
    info = result.info
    text = f"created {info.created_at}"
    if info.options.deterministic:
        text += " (fixed by deterministic mode)"
    if stored_at:
        text = f"stored {stored_at} · {text}"
    if info.parent_run_id is not None:
        text += f" · rescored from run `{info.parent_run_id}`"
    return text


def to_markdown(result: RunResult, *, stored_at: str | None = None) -> str:
    """A Markdown report: broken conditions, the summary per condition, comparisons with
    their power, the variance split, and why cells failed. ``stored_at``: when the run store
    recorded the run (``runs show`` passes it), shown beside the document's own time.

    .. versionchanged:: 0.2.0
       ``stored_at``; a deterministic run's fixed ``created`` time says so.
    """
    info = result.info
    header = f"Run `{info.run_id}` · {created_text(result, stored_at)}"
    lines = [f"# {_title(result)}", "", header, ""]
    if result.budget is not None:
        lines += [f"**{result.budget.text}**; {result.not_run} cells did not run.", ""]
    elif result.interrupted:
        lines += [f"**Interrupted:** {result.not_run} cells did not run.", ""]
    if result.early_stop is not None:
        lines += [f"**Until decided:** {result.early_stop.text()}", ""]
    for line in warning_lines(result):
        lines += [f"**Warning:** {line}", ""]
    lines += [f"**Broken:** {line}" for line in broken_lines(result)]
    if broken_lines(result):
        lines.append("")
    lines += _md_table(_HEADERS, summary_rows(result))
    note = interval_note(result)
    if note:
        lines += ["", note]
    if result.comparisons:
        lines += ["", "## Comparisons", ""]
        lines += _md_table(_CMP_HEADERS, [_comparison_row(c) for c in result.comparisons])
        lines += [""]
        lines += [
            "Tasks are paired: each task's epochs are reduced first, and the test counts "
            "tasks (or clusters). MDE: the smallest true difference detected with 80 % "
            "power at this size."
        ]
        lines += ["", "### Significance", ""]
        lines += [f"- {line}" for line in comparison_lines(result)]
        # a comparison that cannot be significant said so, once, in its verdict
        power = [(c, "" if c.unreachable else c.power_text()) for c in result.comparisons]
        if any(text for _, text in power):
            lines += ["", "### Power", ""]
            lines += [f"- **{c.target} vs {c.baseline}**: {text}" for c, text in power if text]
        flips = [c for c in result.comparisons if c.improved or c.regressed]
        if flips:
            lines += ["", "### Flipped tasks", ""]
            for cmp in flips:
                binary = cmp.paired.a_only is not None
                up, down = ("fail → pass", "pass → fail") if binary else ("higher", "lower")
                lines.append(f"- **{cmp.target} vs {cmp.baseline}**")
                if cmp.improved:
                    lines.append(f"  - {up}: {_ids(cmp.improved)}")
                if cmp.regressed:
                    lines.append(f"  - {down}: {_ids(cmp.regressed)}")
    reproduced = reproduction_lines(result)
    if reproduced:
        lines += ["", "## Reproduction", ""]
        lines += [f"- {line}" for line in reproduced]
    judges = judge_lines(result)
    if judges:
        lines += ["", "## Judges", ""]
        lines += [f"- {line}" for line in judges]
    variance = variance_lines(result)
    if variance:
        lines += ["", "## Variance", ""]
        lines += [f"- {line}" for line in variance]
    section = _tool_section(result)
    if section:
        lines += ["", section.strip("\n")]
    errors: list[tuple[str, ...]] = []
    for agg in result.aggregates:
        for cat, count in agg.errors_by_category.items():
            examples = [e for e in agg.failure_examples if e.category == cat]
            quoted = "; ".join(f"`{e.task_id}` (epoch {e.epoch}): {e.message}" for e in examples)
            errors.append((agg.condition_id, cat, str(count), quoted))
    if errors:
        lines += ["", "## Failures by category", ""]
        lines += _md_table(("condition", "category", "count", "examples"), errors)
    return "\n".join(lines) + "\n"


def _tool_section(result: RunResult) -> str:
    """The run's tool's own Markdown (by the run's source format), or nothing."""
    section = find_section("report_markdown", result.info.source_format, result.registries)
    return "" if section is None else section(result.to_dict())


def to_table(result: RunResult) -> Table:
    """A :class:`rich.table.Table` with the per-condition summary; broken conditions in the
    title, comparisons, power, variance and failures in the caption."""
    from rich.table import Table

    title = f"{_title(result)} — {result.info.run_id}"
    for line in broken_lines(result):
        title += f"\nBROKEN: {line}"
    for line in warning_lines(result):
        title += f"\nWARNING: {line}"
    if result.early_stop is not None:
        title += f"\n{result.early_stop.text()}"
    table = Table(title=title, title_justify="left", caption_justify="left")
    for header in _HEADERS:
        table.add_column(header, justify="left" if header == "condition" else "right")
    for row in summary_rows(result):
        table.add_row(*row)
    caption: list[str] = []
    note = interval_note(result)
    if note:
        caption.append(note)
    for c in result.comparisons:
        caption.append(
            f"{c.target} vs {c.baseline}: Δ pass rate {_signed(c.pass_rate_delta)}, "
            f"Δ score {_signed(c.paired.delta)}, p={c.p_text()}"
        )
        if c.verdict:
            caption.append(f"  {c.verdict}")
        if c.note:
            caption.append(f"  {c.note}")
        power = "" if c.unreachable else c.power_text()
        if power:
            caption.append(f"  {power}")
    caption += reproduction_lines(result)
    caption += judge_lines(result)
    caption += variance_lines(result)
    for agg in result.aggregates:
        for line in failure_lines(agg):
            caption.append(f"{agg.condition_id} failures: {line}")
    if caption:
        table.caption = "\n".join(caption)
    return table


def to_json(result: RunResult) -> str:
    """The full result as indented JSON (aggregates carry their failure examples, interval
    methods and units; comparisons their test, p-values and minimum detectable effect)."""
    return result.to_json()
