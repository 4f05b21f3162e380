"""Two runs side by side: the same tasks under run A and run B, paired.

Cells are paired by (task, epoch) within a pair of conditions — by default every condition
id the two runs share, or the only condition of each when they have one each and the ids
differ. For each pair: the pass rates over the paired cells, and the task-level paired
statistics of the within-run comparison (:mod:`benchkit._aggregate`): each task's epochs
reduced, the mean per-task delta with its interval, the p-value of the test valid for the
design (Holm-adjusted too when several pairs are compared), and the tasks that moved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeVar

import attrs

from benchkit._aggregate import PairedCell, _compare, with_holm
from benchkit.errors import ConfigError
from benchkit.results import CellStatus, Comparison, RunInfo, RunResult

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = ["ConditionComparison", "RunComparison", "compare_runs", "to_markdown", "to_table"]

#: How many flipped task ids the table and Markdown renderings list per direction.
SHOWN_FLIPS = 20


@attrs.frozen
class ConditionComparison:
    """Condition ``condition_b`` of run B against ``condition_a`` of run A.

    ``paired`` counts the (task, epoch) cells both ran; ``only_a`` / ``only_b`` those
    without a partner (left out of everything here). ``tasks`` counts the tasks those
    cells belong to and ``clusters`` the independent units among them (the tasks, unless
    the runs declared ``cluster_by``): what the test counts, and what reports show.
    Pass rates are over the paired cells.
    ``comparison`` holds the task-level delta and interval, the p-value and its method, and
    the ``improved`` / ``regressed`` task ids; it is None when no task has a score on both
    sides.
    """

    condition_a: str
    condition_b: str
    paired: int
    only_a: int
    only_b: int
    pass_rate_a: float
    pass_rate_b: float
    comparison: Comparison | None
    tasks: int = 0
    clusters: int = 0

    @property
    def label(self) -> str:
        a, b = self.condition_a, self.condition_b
        return a if a == b else f"{a} → {b}"


@attrs.frozen
class RunComparison:
    """Run B (``run_b``) against run A (``run_a``), one entry per pair of conditions."""

    run_a: str
    run_b: str
    benchmark_a: str
    benchmark_b: str
    conditions: tuple[ConditionComparison, ...]


class OutlineCell(NamedTuple):
    """What :func:`compare_runs` reads of a cell, as :meth:`Store.compare
    <benchkit.store.Store.compare>` reads it from the store's columns: a tuple is built in
    a tenth of the time of a :class:`~benchkit.results.CellResult`."""

    task_id: str
    condition_id: str
    epoch: int
    status: CellStatus
    score: float | None = None
    weight: float = 1.0
    cluster: str | None = None
    error_category: str = "none"

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def errored(self) -> bool:
        return self.status in ("error", "timeout")


class _Cell(PairedCell, Protocol):
    """A cell as pairing reads it: the comparison's fields, plus its condition and epoch."""

    @property
    def condition_id(self) -> str: ...
    @property
    def epoch(self) -> int: ...
    @property
    def status(self) -> str: ...


_C = TypeVar("_C", bound=_Cell)


def _pairs(a: RunInfo, b: RunInfo) -> list[tuple[str, str]]:
    ids_a = [c.id for c in a.conditions]
    ids_b = {c.id for c in b.conditions}
    shared = [(cid, cid) for cid in ids_a if cid in ids_b]
    if shared:
        return shared
    if len(ids_a) == 1 and len(ids_b) == 1:
        return [(ids_a[0], next(iter(ids_b)))]
    raise ConfigError(
        f"runs {a.run_id!r} and {b.run_id!r} share no condition id "
        f"({', '.join(ids_a)} vs {', '.join(sorted(ids_b))})",
        fix="name the pairs to compare: --pair CONDITION_A:CONDITION_B (pairs=[...]).",
    )


def compare_runs(
    a: RunResult, b: RunResult, *, pairs: Sequence[tuple[str, str]] | None = None
) -> RunComparison:
    """Compare run ``b`` with run ``a`` (the baseline), pairing cells by (task, epoch).

    ``pairs`` lists (condition of A, condition of B) to compare; by default the condition
    ids both runs have. Tasks are reduced with run A's scoring method and ``errors_as``.
    """
    return compare_cells(a.info, a.cells, b.info, b.cells, pairs=pairs)


def compare_cells(
    a: RunInfo,
    cells_a: Sequence[_Cell],
    b: RunInfo,
    cells_b: Sequence[_Cell],
    *,
    pairs: Sequence[tuple[str, str]] | None = None,
) -> RunComparison:
    """:func:`compare_runs` of two runs given as their infos and cells (whole
    :class:`~benchkit.results.CellResult` or :class:`OutlineCell`)."""
    chosen = list(pairs) if pairs is not None else _pairs(a, b)
    by_a = _by_condition(cells_a)
    by_b = _by_condition(cells_b)
    errors_as = a.options.errors_as
    out: list[ConditionComparison] = []
    for cond_a, cond_b in chosen:
        for run, cond in ((a, cond_a), (b, cond_b)):
            if cond not in {c.id for c in run.conditions}:
                raise ConfigError(
                    f"run {run.run_id!r} has no condition {cond!r}",
                    fix="pick from: " + ", ".join(c.id for c in run.conditions) + ".",
                )
        side_a = by_a.get(cond_a, [])
        side_b = by_b.get(cond_b, [])
        paired_a, paired_b, n = _paired(side_a, side_b)
        rate_a = [c.status for c in paired_a].count("pass") / n if n else 0.0
        rate_b = [c.status for c in paired_b].count("pass") / n if n else 0.0
        comparison = _compare(
            cond_a,
            cond_b,
            paired_a,
            paired_b,
            base_rate=rate_a,
            target_rate=rate_b,
            errors_as=errors_as,
            method=a.scoring_method,
            k=a.scoring_k,
        )
        out.append(
            ConditionComparison(
                condition_a=cond_a,
                condition_b=cond_b,
                paired=n,
                only_a=len(side_a) - n,
                only_b=len(side_b) - n,
                pass_rate_a=rate_a,
                pass_rate_b=rate_b,
                comparison=comparison,
                tasks=len({c.task_id for c in paired_a}),
                clusters=len(
                    {c.task_id if c.cluster is None else "\x00" + c.cluster for c in paired_a}
                ),
            )
        )
    adjusted = iter(with_holm([c.comparison for c in out if c.comparison is not None]))
    out = [c if c.comparison is None else attrs.evolve(c, comparison=next(adjusted)) for c in out]
    return RunComparison(a.run_id, b.run_id, a.benchmark_id, b.benchmark_id, tuple(out))


def _paired(cells_a: list[_C], cells_b: list[_C]) -> tuple[list[_C], list[_C], int]:
    """The cells of each side whose (task, epoch) the other side has, in their order, and
    how many (task, epoch) pairs there are.

    Usually every cell has its partner, and then the lists come back as they are.
    """
    if (
        len(cells_a) == len(cells_b)
        and len({c.epoch for c in cells_a}) <= 1
        and all(
            x.task_id == y.task_id and x.epoch == y.epoch
            for x, y in zip(cells_a, cells_b, strict=True)
        )
    ):  # one epoch, the same tasks in the same order (the usual case): no keys to build
        return cells_a, cells_b, len({c.task_id for c in cells_a})
    keys_a = [(c.task_id, c.epoch) for c in cells_a]
    keys_b = [(c.task_id, c.epoch) for c in cells_b]
    common = set(keys_a).intersection(keys_b)
    if len(common) != len(cells_a):
        cells_a = [c for c, key in zip(cells_a, keys_a, strict=True) if key in common]
    if len(common) != len(cells_b):
        cells_b = [c for c, key in zip(cells_b, keys_b, strict=True) if key in common]
    return cells_a, cells_b, len(common)


def _by_condition(cells: Sequence[_C]) -> dict[str, list[_C]]:
    out: dict[str, list[_C]] = {}
    for cell in cells:
        out.setdefault(cell.condition_id, []).append(cell)
    return out


# -- rendering ---------------------------------------------------------------------------

_HEADERS = (
    "condition",
    "tasks",
    "pass rate A",
    "pass rate B",
    "Δ pass rate",
    "Δ score [95% CI]",
    "improved",
    "regressed",
    "p (test)",
    "significant",
)


def _row(item: ConditionComparison) -> tuple[str, ...]:
    cmp = item.comparison
    if cmp is None:
        rest = ("–", "–", "0", "0", "–", "–")
    else:
        iv = cmp.paired.interval
        rest = (
            f"{item.pass_rate_b - item.pass_rate_a:+.3f}",
            f"{cmp.paired.delta:+.3f} [{iv.low:+.3f}, {iv.high:+.3f}]",
            str(len(cmp.improved)),
            str(len(cmp.regressed)),
            cmp.p_text(),
            "–"
            if cmp.significant is None
            else "yes"
            if cmp.significant
            else "cannot be"
            if cmp.unreachable
            else "no",
        )
    units = str(item.tasks)
    if item.clusters and item.clusters != item.tasks:
        units += f" ({item.clusters} clusters)"
    return (
        item.label,
        units,
        f"{item.pass_rate_a:.3f}",
        f"{item.pass_rate_b:.3f}",
        *rest,
    )


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:SHOWN_FLIPS])
    return shown + (f", … and {len(ids) - SHOWN_FLIPS} more" if len(ids) > SHOWN_FLIPS else "")


def _notes(cmp: RunComparison) -> list[str]:
    lines: list[str] = []
    if cmp.benchmark_a != cmp.benchmark_b:
        lines.append(
            f"The runs are of different benchmarks ({cmp.benchmark_a} vs {cmp.benchmark_b}); "
            "tasks are paired by id."
        )
    for item in cmp.conditions:
        if item.only_a or item.only_b:
            lines.append(
                f"{item.label}: {item.only_a} cells only in A and {item.only_b} only in B "
                "are left out."
            )
        if item.comparison is None:
            lines.append(f"{item.label}: no task has a score in both runs.")
            continue
        binary = item.comparison.paired.a_only is not None  # else: reduced values moved
        up, down = ("(fail → pass)", "(pass → fail)") if binary else ("(higher)", "(lower)")
        if item.comparison.improved:
            lines.append(f"{item.label} improved {up}: {_ids(item.comparison.improved)}")
        if item.comparison.regressed:
            lines.append(f"{item.label} regressed {down}: {_ids(item.comparison.regressed)}")
        if item.comparison.verdict:
            lines.append(f"{item.label}: {item.comparison.verdict}")
        if item.comparison.note:
            lines.append(f"{item.label}: {item.comparison.note}")
        power = "" if item.comparison.unreachable else item.comparison.power_text()
        if power:
            lines.append(f"{item.label}: {power}")
    return lines


def to_markdown(cmp: RunComparison) -> str:
    """The comparison as Markdown: a table per condition pair and the flipped tasks."""
    lines = [f"# {cmp.run_b} (B) vs {cmp.run_a} (A)", ""]
    lines.append("| " + " | ".join(_HEADERS) + " |")
    lines.append("|" + "|".join("---" for _ in _HEADERS) + "|")
    for item in cmp.conditions:
        lines.append("| " + " | ".join(s.replace("|", "\\|") for s in _row(item)) + " |")
    notes = _notes(cmp)
    if notes:
        lines += ["", *(f"- {note}" for note in notes)]
    return "\n".join(lines) + "\n"


def to_table(cmp: RunComparison) -> RenderableType:
    """The comparison as rich renderables: the table, then the flipped tasks."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"{cmp.run_b} (B) vs {cmp.run_a} (A)", title_justify="left")
    for header in _HEADERS:
        table.add_column(header, justify="left" if header == "condition" else "right")
    for item in cmp.conditions:
        table.add_row(*_row(item))
    return Group(table, *(Text(note) for note in _notes(cmp)))
