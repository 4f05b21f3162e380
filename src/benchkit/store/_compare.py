"""Two runs side by side: the same tasks under run A and run B, paired.

Cells are paired by (task, epoch) within a pair of conditions — by default every condition
id the two runs share, or the only condition of each when they have one each and the ids
differ. For each pair: the pass rates over the paired cells, and the task-level paired
statistics of the within-run comparison (:mod:`benchkit._aggregate`): each task's epochs
reduced, the mean per-task delta with its interval, the p-value of the test valid for the
design (Holm-adjusted too when several pairs are compared), and the tasks that moved.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeVar

import attrs

from benchkit._aggregate import PairedCell, _compare, paired_values, with_holm
from benchkit.errors import ConfigError
from benchkit.results import CellStatus, Comparison, RunInfo, RunResult

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = [
    "ConditionComparison",
    "RegressionCheck",
    "RunComparison",
    "check_regressions",
    "compare_runs",
    "only_conditions",
    "to_markdown",
    "to_table",
]

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
    by_a = _by_condition(cells_a)
    by_b = _by_condition(cells_b)
    errors_as = a.options.errors_as

    def measure(cond_a: str, cond_b: str) -> ConditionComparison:
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
        return ConditionComparison(
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

    return _compare_pairs(a, b, pairs, measure)


def _compare_pairs(
    a: RunInfo,
    b: RunInfo,
    pairs: Sequence[tuple[str, str]] | None,
    measure: Callable[[str, str], ConditionComparison],
) -> RunComparison:
    """Each chosen pair of conditions measured by ``measure``, with Holm's adjustment
    across them: what every comparison of two runs does around its pairing."""
    chosen = list(pairs) if pairs is not None else _pairs(a, b)
    out: list[ConditionComparison] = []
    for cond_a, cond_b in chosen:
        for run, cond in ((a, cond_a), (b, cond_b)):
            if cond not in {c.id for c in run.conditions}:
                raise ConfigError(
                    f"run {run.run_id!r} has no condition {cond!r}",
                    fix="pick from: " + ", ".join(c.id for c in run.conditions) + ".",
                )
        out.append(measure(cond_a, cond_b))
    adjusted = iter(with_holm([c.comparison for c in out if c.comparison is not None]))
    out = [c if c.comparison is None else attrs.evolve(c, comparison=next(adjusted)) for c in out]
    return RunComparison(a.run_id, b.run_id, a.benchmark_id, b.benchmark_id, tuple(out))


# -- two plain stored runs ---------------------------------------------------------------

#: The scoring methods :func:`compare_plain` reduces; others go through :func:`compare_cells`.
PLAIN_METHODS = frozenset(("mean", "weighted_mean"))
_STATUSES = frozenset(("pass", "fail", "error", "timeout"))


class NotPlain(Exception):
    """Raised by :func:`compare_plain` when a row is not what a plain stored cell's columns
    hold (no score column, an unknown status, a score that is no number): the caller
    compares the runs' outlines instead, which reads such cells from their JSON or says
    what is wrong with them."""


class PlainPair(NamedTuple):
    """One pair of conditions of two plain stored runs, as :func:`compare_plain` reads it.

    ``rows`` are the cells both runs have, joined on (task, epoch): ``(task_id, status
    in A, score column in A, status in B, score column in B)``, in run B's order (task
    position, then epoch); a score column holds the score's ``repr`` or ``"null"``.
    ``count_a`` and ``count_b`` count each run's cells of its condition, paired or not.
    """

    rows: list[tuple[str, str, str | None, str, str | None]]
    count_a: int
    count_b: int


def compare_plain(
    a: RunInfo,
    b: RunInfo,
    pairs: Sequence[tuple[str, str]] | None,
    fetch: Callable[[str, str], PlainPair],
) -> RunComparison:
    """:func:`compare_cells` of two stored runs whose cells are all plain (weight 1, no
    cluster, no grader's failure), from their joined columns (``fetch(condition_a,
    condition_b)``) instead of a cell object per stored cell: the same numbers, the
    tasks reduced and paired as :func:`benchkit._aggregate._compare` does. Only for
    run A's scoring in :data:`PLAIN_METHODS`; raises :class:`NotPlain` when a row is not
    a plain cell's."""
    if a.scoring_method not in PLAIN_METHODS:
        raise NotPlain(a.scoring_method)
    zero = a.options.errors_as == "zero"
    weighted = a.scoring_method == "weighted_mean"

    def measure(cond_a: str, cond_b: str) -> ConditionComparison:
        rows, count_a, count_b = fetch(cond_a, cond_b)
        n = len(rows)
        task_ids, statuses_a, scores_a, statuses_b, scores_b = (
            zip(*rows, strict=True) if rows else ((), (), (), (), ())
        )
        if not _STATUSES.issuperset(statuses_a) or not _STATUSES.issuperset(statuses_b):
            raise NotPlain("status")
        if None in scores_a or None in scores_b:  # stored before schema 2: read the JSON
            raise NotPlain("score")
        rate_a = statuses_a.count("pass") / n if n else 0.0
        rate_b = statuses_b.count("pass") / n if n else 0.0
        tasks = len(set(task_ids))
        try:
            found = _plain_values(rows, zero, one_epoch=tasks == n)
        except ValueError as exc:  # a score column that is no number
            raise NotPlain("score") from exc
        xs, ys, units, improved, regressed = found
        comparison = paired_values(
            cond_a,
            cond_b,
            xs,
            ys,
            weights=[1.0] * len(xs) if weighted else None,
            units=units,
            improved=improved,
            regressed=regressed,
            base_rate=rate_a,
            target_rate=rate_b,
        )
        return ConditionComparison(
            condition_a=cond_a,
            condition_b=cond_b,
            paired=n,
            only_a=count_a - n,
            only_b=count_b - n,
            pass_rate_a=rate_a,
            pass_rate_b=rate_b,
            comparison=comparison,
            tasks=tasks,
            clusters=tasks,
        )

    return _compare_pairs(a, b, pairs, measure)


_Values = tuple[list[float], list[float], list[str], list[str], list[str]]


def _plain_values(
    rows: list[tuple[str, str, str | None, str, str | None]], zero: bool, *, one_epoch: bool
) -> _Values:
    """The paired tasks' values under A and B, their units (the task: plain cells have no
    cluster) and the tasks that rose or fell, in B's task order — what ``_compare`` builds
    from the two sides' ``_task_values``. A cell's value is its score, else 0 when it
    errored and ``errors_as`` is ``zero``, else none; a task's is its one cell's value
    (``+ 0.0``, as ``_task_values``) or the mean of its cells' values (``math.fsum``)."""
    xs: list[float] = []
    ys: list[float] = []
    units: list[str] = []
    improved: list[str] = []
    regressed: list[str] = []
    if one_epoch:  # the usual case: a row is a task
        for task_id, status_a, score_a, status_b, score_b in rows:
            if score_a != "null":
                va = float(score_a) + 0.0  # type: ignore[arg-type]  # never None here
            elif zero and (status_a == "error" or status_a == "timeout"):
                va = 0.0
            else:
                continue
            if score_b != "null":
                vb = float(score_b) + 0.0  # type: ignore[arg-type]
            elif zero and (status_b == "error" or status_b == "timeout"):
                vb = 0.0
            else:
                continue
            xs.append(va)
            ys.append(vb)
            units.append(task_id)
            if vb > va:
                improved.append(task_id)
            elif va > vb:
                regressed.append(task_id)
        return xs, ys, units, improved, regressed
    by_task: dict[str, tuple[list[float | None], list[float | None]]] = {}
    for task_id, status_a, score_a, status_b, score_b in rows:
        sides = by_task.get(task_id)
        if sides is None:
            sides = by_task[task_id] = ([], [])
        sides[0].append(_plain_value(status_a, score_a, zero))
        sides[1].append(_plain_value(status_b, score_b, zero))
    for task_id, (values_a, values_b) in by_task.items():
        va_found = _reduced(values_a)
        vb_found = _reduced(values_b)
        if va_found is None or vb_found is None:
            continue
        xs.append(va_found)
        ys.append(vb_found)
        units.append(task_id)
        if vb_found > va_found:
            improved.append(task_id)
        elif va_found > vb_found:
            regressed.append(task_id)
    return xs, ys, units, improved, regressed


def _plain_value(status: str, score: str | None, zero: bool) -> float | None:
    if score != "null":
        return float(score)  # type: ignore[arg-type]  # never None here
    return 0.0 if zero and status in ("error", "timeout") else None


def _reduced(values: list[float | None]) -> float | None:
    """One task's cell values reduced as ``_task_values`` reduces them for ``mean``."""
    if len(values) == 1:
        return None if values[0] is None else values[0] + 0.0
    found = [v for v in values if v is not None]
    return math.fsum(found) / len(found) if found else None


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


# -- regressions -------------------------------------------------------------------------


def only_conditions(cmp: RunComparison, names: Sequence[str]) -> RunComparison:
    """``cmp`` keeping the pairs of conditions ``names`` name (a condition id of either run,
    or a pair's label), with Holm's adjustment redone over the pairs kept: a gate on one
    named condition tests one hypothesis, not every pair the runs share.

    .. versionadded:: 0.2.0
    """
    wanted = set(names)
    kept = [c for c in cmp.conditions if wanted & {c.condition_a, c.condition_b, c.label}]
    found = {n for c in kept for n in (c.condition_a, c.condition_b, c.label)}
    missing = sorted(wanted - found)
    if missing:
        raise ConfigError(
            f"the runs compared have no condition {', '.join(map(repr, missing))}",
            fix="pick from: " + ", ".join(c.label for c in cmp.conditions) + ".",
        )
    bare = [attrs.evolve(c.comparison, p_holm=None) for c in kept if c.comparison is not None]
    adjusted = iter(with_holm(bare))
    kept = [c if c.comparison is None else attrs.evolve(c, comparison=next(adjusted)) for c in kept]
    return attrs.evolve(cmp, conditions=tuple(kept))


@attrs.frozen
class RegressionCheck:
    """Whether run B regressed against run A, the baseline, by more than ``margin``.

    A pair of conditions regressed when its task-level paired difference (B − A, in the
    benchmark's score) is below ``-margin`` **and** the paired test is significant (after
    Holm's adjustment over the pairs compared): worse by more than the margin, and not by
    chance. A pair with no task scored in both runs cannot be checked and fails the check
    too (``unknown``): a gate that cannot see must not pass. ``message`` says why in one
    paragraph; when nothing regressed it says how small a regression the runs could have
    shown (the minimum detectable effect and the number of tasks it rests on).

    .. versionadded:: 0.2.0
    """

    margin: float
    regressed: tuple[ConditionComparison, ...]
    unknown: tuple[ConditionComparison, ...]
    checked: tuple[ConditionComparison, ...]

    @property
    def failed(self) -> bool:
        """True when a pair regressed or could not be checked: CI's exit 1."""
        return bool(self.regressed or self.unknown)

    @property
    def summary(self) -> str:
        """One line: the verdict, for a pull-request comment's first line."""
        if self.regressed:
            worst = ", ".join(f"{c.label} {_delta(c)}" for c in self.regressed)
            return f"regression: {worst} (significant, beyond the margin {self.margin:g})"
        if self.unknown:
            return "cannot tell: " + ", ".join(c.label for c in self.unknown) + " not comparable"
        labelled = len(self.checked) > 1
        return "no regression detectable; " + "; ".join(
            _power(c, labelled=labelled) for c in self.checked
        )

    @property
    def message(self) -> str:
        """The verdict in one paragraph, with the figures it rests on."""
        parts: list[str] = []
        for item in self.regressed:
            cmp = item.comparison
            assert cmp is not None
            iv = cmp.paired.interval
            parts.append(
                f"{item.label} regressed: score {cmp.paired.mean_a:.3f} → "
                f"{cmp.paired.mean_b:.3f} ({_delta(item)}, 95% CI [{iv.low:+.3f}, "
                f"{iv.high:+.3f}]) over {_units(item)}, worse than the margin "
                f"{self.margin:g}; {cmp.verdict}; tasks that got worse: {_ids(cmp.regressed)}."
            )
        for item in self.unknown:
            parts.append(
                f"{item.label} cannot be checked: no task has a score in both runs "
                f"({item.only_a} cells only in A, {item.only_b} only in B)."
            )
        if parts:
            return " ".join(parts)
        notes = []
        for item in self.checked:
            cmp = item.comparison
            assert cmp is not None
            delta = cmp.paired.delta
            if delta < -self.margin:
                notes.append(f"{item.label} is lower by {-delta:.3f}, {cmp.verdict}")
            elif delta < 0 and cmp.significant:
                notes.append(
                    f"{item.label} is lower by {-delta:.3f}, within the margin {self.margin:g}"
                )
        tail = f" ({'; '.join(notes)})" if notes else ""
        return f"{self.summary}{tail}."


def check_regressions(cmp: RunComparison, *, margin: float = 0.0) -> RegressionCheck:
    """Check every pair of ``cmp`` for a regression of run B beyond ``margin`` (see
    :class:`RegressionCheck`); narrow ``cmp`` first with :func:`only_conditions`.

    .. versionadded:: 0.2.0
    """
    if not 0.0 <= margin <= 1.0:
        raise ConfigError(
            f"the regression margin must be from 0 up to 1 (a score difference), got {margin}",
            fix="pass --margin 0.02, say, for two points.",
        )
    regressed: list[ConditionComparison] = []
    unknown: list[ConditionComparison] = []
    checked: list[ConditionComparison] = []
    for item in cmp.conditions:
        if item.comparison is None:
            unknown.append(item)
            continue
        checked.append(item)
        if item.comparison.paired.delta < -margin and item.comparison.significant:
            regressed.append(item)
    return RegressionCheck(margin, tuple(regressed), tuple(unknown), tuple(checked))


def _delta(item: ConditionComparison) -> str:
    assert item.comparison is not None
    return f"Δ {item.comparison.paired.delta:+.3f}"


def _units(item: ConditionComparison) -> str:
    assert item.comparison is not None
    paired = item.comparison.paired
    if paired.n_clusters and paired.n_clusters != paired.n_tasks:
        return f"{paired.n_tasks} tasks in {paired.n_clusters} clusters"
    return f"{paired.n_tasks} tasks"


def _power(item: ConditionComparison, *, labelled: bool) -> str:
    """The smallest regression this pair could have shown, in words."""
    assert item.comparison is not None
    detectable = item.comparison.detectable
    prefix = f"{item.label}: " if labelled else ""
    if detectable.startswith("none"):
        return f"{prefix}no difference is detectable ({detectable}); add tasks"
    if detectable:
        return f"{prefix}smallest detectable difference {detectable}"
    return f"{prefix}no difference in {_units(item)}; smallest detectable difference unknown"


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


def _flip_notes(cmp: RunComparison) -> list[str]:
    """The tasks that moved, one line per pair and direction."""
    lines: list[str] = []
    for item in cmp.conditions:
        if item.comparison is None:
            continue
        binary = item.comparison.paired.a_only is not None  # else: reduced values moved
        up, down = ("(fail → pass)", "(pass → fail)") if binary else ("(higher)", "(lower)")
        if item.comparison.improved:
            lines.append(f"{item.label} improved {up}: {_ids(item.comparison.improved)}")
        if item.comparison.regressed:
            lines.append(f"{item.label} regressed {down}: {_ids(item.comparison.regressed)}")
    return lines


def _notes(cmp: RunComparison, *, flips: bool = True) -> list[str]:
    """What the table leaves out, one line each; the flipped tasks unless ``flips`` is
    False (the Markdown collapses them)."""
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
        if flips:
            lines += _flip_notes(attrs.evolve(cmp, conditions=(item,)))
        if item.comparison.verdict:
            lines.append(f"{item.label}: {item.comparison.verdict}")
        if item.comparison.note:
            lines.append(f"{item.label}: {item.comparison.note}")
        power = "" if item.comparison.unreachable else item.comparison.power_text()
        if power:
            lines.append(f"{item.label}: {power}")
    return lines


#: The marker a pull-request comment carries, so a CI job can find and edit its own comment.
COMMENT_MARKER = "<!-- benchkit-compare -->"


def summary_line(cmp: RunComparison, check: RegressionCheck | None = None) -> str:
    """The comparison in one line: the regression verdict when checked, else each pair's
    difference and whether it is significant."""
    head = f"**{cmp.run_b}** vs baseline **{cmp.run_a}**"
    if check is not None:
        mark = "❌" if check.failed else "✅"
        return f"{mark} {head}: {check.summary}"
    parts = []
    for item in cmp.conditions:
        if item.comparison is None:
            parts.append(f"{item.label}: not comparable")
            continue
        word = "significant" if item.comparison.significant else "not significant"
        parts.append(f"{item.label} {_delta(item)} ({word})")
    return f"{head}: " + ("; ".join(parts) or "no condition compared")


def to_markdown(cmp: RunComparison, check: RegressionCheck | None = None) -> str:
    """The comparison as Markdown, laid out as a pull-request comment: the summary line
    first (the regression verdict when ``check`` is given), the table, the notes, then the
    flipped tasks collapsed in a ``<details>`` block, and a hidden marker
    (:data:`COMMENT_MARKER`) a CI job finds its earlier comment by.

    .. versionchanged:: 0.2.0
       Summary line first, flipped tasks collapsed; ``check`` adds the verdict.
    """
    lines = [summary_line(cmp, check), ""]
    if check is not None and check.failed:
        lines += [check.message, ""]
    lines.append("| " + " | ".join(_HEADERS) + " |")
    lines.append("|" + "|".join("---" for _ in _HEADERS) + "|")
    for item in cmp.conditions:
        lines.append("| " + " | ".join(s.replace("|", "\\|") for s in _row(item)) + " |")
    notes = _notes(cmp, flips=False)
    if notes:
        lines += ["", *(f"- {note}" for note in notes)]
    flips = _flip_notes(cmp)
    if flips:
        up = sum(len(c.comparison.improved) for c in cmp.conditions if c.comparison is not None)
        down = sum(len(c.comparison.regressed) for c in cmp.conditions if c.comparison is not None)
        lines += [
            "",
            "<details>",
            f"<summary>Flipped tasks: {down} worse, {up} better</summary>",
            "",
            *(f"- {note}" for note in flips),
            "",
            "</details>",
        ]
    lines += ["", COMMENT_MARKER]
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
