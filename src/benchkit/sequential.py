"""Stop a run when the answer is known: anytime-valid comparisons (``run --until-decided``).

Evaluating against paid models costs money per cell. With ``RunOptions.until_decided``
the Runner runs the tasks in a seeded random order and, after every task that finished
under every condition, asks :class:`StoppingPolicy` whether each comparison is decided:

* **differs** — the paired mean difference ``b - a`` is shown to be non-zero, or
* **within margin** — it is shown to lie inside ``(-margin, margin)`` (``--margin``),

and stops taking cells once every comparison is decided (or the tasks run out).

Looking after every task would inflate the error of an ordinary test; this one is
*anytime-valid*. For each candidate mean ``m`` of the per-task differences ``d_i`` (in
[-1, 1]) it keeps a betting wealth (Waudby-Smith and Ramdas 2023, "hedged capital")

    K_t(m) = ½ Π (1 + λ⁺_i (d_i - m)) + ½ Π (1 - λ⁻_i (d_i - m)),

with bets ``λ`` chosen from the differences seen *before* task ``i`` (predictable). Under
the hypothesis that the mean is ``m``, ``K_t(m)`` is a nonnegative martingale with
``K_0 = 1``, so by Ville's inequality the chance that it **ever** reaches ``1 / α`` is at
most ``α``. The set of ``m`` whose wealth has never reached ``1/α`` is a ``1 - α``
confidence sequence: an interval valid at every look at once. "Differs" is ``0`` leaving
it; "within margin" is the whole of it inside ``(-margin, margin)``. With several
comparisons each is run at ``α / comparisons`` (Bonferroni), so the chance of any false
decision over the whole run stays below ``α``. The candidates form a grid of
:data:`GRID` points plus ``0`` and ``±margin``.

The guarantee assumes the tasks are a random sample from the population of tasks (the
same assumption as every interval benchkit prints) and that the unit is the task: a run
with ``cluster_by`` is refused.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import attrs

from benchkit.errors import StatsError

__all__ = [
    "ALPHA",
    "GRID",
    "ConfidenceSequence",
    "EarlyStop",
    "SequentialDecision",
    "StoppingPolicy",
    "replay",
    "schedule",
]

#: The error rate of ``--until-decided`` over the whole run (all comparisons together).
ALPHA = 0.05
#: Candidate means on the grid of the confidence sequence (plus 0 and ±margin).
GRID = 201
#: The largest bet, as a share of what a process may bet without risking ruin.
_MAX_BET = 0.5

Decision = Literal["differs", "within_margin", "undecided"]


class ConfidenceSequence:
    """The anytime-valid confidence sequence for the mean of values in [-1, 1].

    ``update(d)`` after each task; ``excluded(m)`` says whether ``m`` has been ruled out
    at some look; ``bounds()`` the smallest and largest candidate still in. Candidates are
    the grid, 0 and ``extra`` points (``±margin``).

        >>> cs = ConfidenceSequence(alpha=0.05)
        >>> for _ in range(30):
        ...     cs.update(1.0)
        >>> cs.excluded(0.0), cs.bounds()[0] > 0.5
        (True, True)
    """

    def __init__(
        self, alpha: float = ALPHA, *, extra: Iterable[float] = (), grid: int = GRID
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise StatsError(
                f"ConfidenceSequence: alpha={alpha!r} must be in (0, 1)",
                fix="pass alpha=0.05",
            )
        points = {-1.0 + 2.0 * j / (grid - 1) for j in range(1, grid - 1)}
        points.add(0.0)
        points.update(m for m in extra if -1.0 < m < 1.0)
        self.alpha = alpha
        self.ms = sorted(points)
        self._threshold = math.log(1.0 / alpha)
        self._up = [0.0] * len(self.ms)  # log wealth of the bet that the mean is above m
        self._down = [0.0] * len(self.ms)
        self._out = [False] * len(self.ms)
        self._index = {m: i for i, m in enumerate(self.ms)}
        self.n = 0
        self._sum = 0.0
        self._sumsq = 0.0

    def update(self, d: float) -> None:
        """Add one task's difference (in [-1, 1]) and update every candidate's wealth."""
        if not -1.0 <= d <= 1.0:  # also false for NaN
            raise StatsError(
                f"ConfidenceSequence.update: {d!r} is not a difference in [-1, 1]",
                fix="pass per-task differences of values in [0, 1]",
            )
        # the plug-in mean and variance of the values seen so far, shrunk towards 0 and 1/4
        mu = self._sum / (self.n + 1)
        var = (0.25 + self._sumsq - self.n * mu * mu) / (self.n + 1)
        var = max(var, 1e-4)
        log2 = math.log(2.0)
        for i, m in enumerate(self.ms):
            if self._out[i]:
                continue
            gap = mu - m
            bet = gap / (var + gap * gap)
            up = min(max(bet, 0.0), _MAX_BET / (1.0 + m))
            down = min(max(-bet, 0.0), _MAX_BET / (1.0 - m))
            if up:
                self._up[i] += math.log1p(up * (d - m))
            if down:
                self._down[i] += math.log1p(-down * (d - m))
            a, b = self._up[i], self._down[i]
            top = max(a, b)
            wealth = top + math.log1p(math.exp(min(a, b) - top)) - log2
            if wealth >= self._threshold:
                self._out[i] = True
        self.n += 1
        self._sum += d
        self._sumsq += d * d

    @property
    def mean(self) -> float:
        """The mean of the differences seen so far (0 before the first)."""
        return self._sum / self.n if self.n else 0.0

    def excluded(self, m: float) -> bool:
        """True when the candidate mean ``m`` (0, a grid point or an extra) was ruled out."""
        return self._out[self._index[m]]

    def bounds(self) -> tuple[float, float]:
        """The smallest and largest candidate not ruled out (the grid's ends when all are)."""
        inside = [m for m, out in zip(self.ms, self._out, strict=True) if not out]
        if not inside:  # every candidate ruled out: only with an α so large it means nothing
            return self.ms[0], self.ms[-1]
        return inside[0], inside[-1]


@attrs.frozen
class SequentialDecision:
    """One comparison of an ``--until-decided`` run: ``target`` against ``baseline``.

    ``decision`` is ``differs``, ``within_margin`` or ``undecided``; ``tasks`` is how many
    paired tasks it had seen when it was decided (or at the end); ``low`` / ``high`` bound
    the confidence sequence for the mean per-task difference at that point, at level
    ``1 - alpha`` (``alpha`` is this comparison's share of the run's error rate).
    """

    baseline: str
    target: str
    decision: Decision
    tasks: int
    low: float
    high: float
    alpha: float

    def text(self) -> str:
        bounds = f"[{self.low:+.3f}, {self.high:+.3f}]"
        level = (
            f"{1 - self.alpha:.0%}"
            if round((1 - self.alpha) * 100, 6).is_integer()
            else f"{1 - self.alpha:.1%}"
        )
        cs = f"{level} confidence sequence {bounds}"
        if self.decision == "differs":
            return f"{self.target} vs {self.baseline}: differs after {self.tasks} tasks (0 is outside the {cs})"
        if self.decision == "within_margin":
            return (
                f"{self.target} vs {self.baseline}: the difference is within the margin after "
                f"{self.tasks} tasks (the {cs} lies inside it)"
            )
        return f"{self.target} vs {self.baseline}: undecided after {self.tasks} tasks ({cs})"


@attrs.frozen
class EarlyStop:
    """What ``--until-decided`` did: whether the run ``stopped`` before its tasks ran out,
    after how many complete ``tasks`` (of ``total_tasks``), and each comparison's decision."""

    stopped: bool
    tasks: int
    total_tasks: int
    alpha: float
    margin: float | None
    decisions: tuple[SequentialDecision, ...]

    def text(self) -> str:
        """One line for reports: stopped early or not, after how many tasks, and why."""
        why = "; ".join(d.text() for d in self.decisions)
        if self.stopped:
            return (
                f"Stopped early after {self.tasks} of {self.total_tasks} tasks (random order, "
                f"anytime-valid test after each task, α={self.alpha:g}): {why}."
            )
        return (
            f"Ran all {self.tasks} tasks with --until-decided (α={self.alpha:g}) without "
            f"stopping early: {why}."
        )

    @property
    def saved(self) -> float:
        """The share of the tasks that did not need to run."""
        return 1.0 - self.tasks / self.total_tasks if self.total_tasks else 0.0


def schedule(total: int, seed: int) -> list[int]:
    """The order ``--until-decided`` runs ``total`` tasks in (positions in the benchmark),
    seeded so a resumed or reloaded run sees the same order."""
    order = list(range(total))
    random.Random(f"until-decided:{seed}").shuffle(order)
    return order


class StoppingPolicy:
    """What the Runner consults after each finished cell of an ``--until-decided`` run.

    ``observe(cell)`` collects cells; a task is *complete* once every condition has every
    epoch of it. Complete tasks are fed to the comparisons in the run's schedule order (a
    task that finishes early waits for those before it), so the decision depends on the
    results alone, never on which cell happened to finish first. ``decided`` turns true
    once every comparison is decided; the Runner then stops taking cells.

    ``reduce(cells)`` turns one task's cells under one condition into its value in [0, 1]
    (None when it has none, e.g. its judge failed): the same reduction the comparisons in
    the report use.
    """

    def __init__(
        self,
        conditions: Sequence[str],
        epochs: int,
        order: Sequence[int],
        reduce: Any,
        *,
        margin: float | None = None,
        alpha: float = ALPHA,
    ) -> None:
        if len(conditions) < 2:
            raise StatsError(
                "until_decided needs at least two conditions to compare",
                fix="add a second condition, or run without --until-decided",
            )
        if margin is not None and not 0.0 < margin < 1.0:
            raise StatsError(
                f"margin={margin!r} must be between 0 and 1",
                fix="pass the largest difference you would call no difference, e.g. 0.05",
            )
        self.conditions = list(conditions)
        self.epochs = epochs
        self.order = list(order)
        self.reduce = reduce
        self.margin = margin
        self.alpha = alpha
        self.pairs = [
            (a, b) for i, a in enumerate(self.conditions) for b in self.conditions[i + 1 :]
        ]
        each = alpha / len(self.pairs)
        extra = () if margin is None else (-margin, margin)
        self._cs = {pair: ConfidenceSequence(each, extra=extra) for pair in self.pairs}
        self._decided: dict[tuple[str, str], tuple[Decision, int]] = {}
        self._per_task = epochs * len(self.conditions)
        self._cells: dict[int, list[Any]] = {}
        self._complete: set[int] = set()
        self._next = 0  # position in ``order`` of the next task to feed
        self.tasks = 0  # complete tasks fed, in order
        self.decided = False

    def observe(self, cell: Any) -> bool:
        """Take one finished cell; True once every comparison is decided."""
        if self.decided:
            return True
        found = self._cells.setdefault(cell.index, [])
        found.append(cell)
        if len(found) >= self._per_task:
            self._complete.add(cell.index)
            self._feed()
        return self.decided

    def _feed(self) -> None:
        while self._next < len(self.order) and self.order[self._next] in self._complete:
            index = self.order[self._next]
            self._next += 1
            cells = self._cells.pop(index)
            self.tasks += 1
            values = {
                cond: self.reduce([c for c in cells if c.condition_id == cond])
                for cond in self.conditions
            }
            for a, b in self.pairs:
                if (a, b) in self._decided or values[a] is None or values[b] is None:
                    continue
                cs = self._cs[(a, b)]
                cs.update(values[b] - values[a])
                decision = self._decision(cs)
                if decision != "undecided":
                    self._decided[(a, b)] = (decision, cs.n)
            if len(self._decided) == len(self.pairs):
                self.decided = True
                return

    def _decision(self, cs: ConfidenceSequence) -> Decision:
        if cs.excluded(0.0):
            return "differs"
        margin = self.margin
        if margin is not None and cs.excluded(-margin) and cs.excluded(margin):
            low, high = cs.bounds()
            if -margin < low and high < margin:
                return "within_margin"
        return "undecided"

    def result(self) -> EarlyStop:
        """The decisions so far, as the run's report shows them."""
        decisions = []
        for pair in self.pairs:
            cs = self._cs[pair]
            decision, n = self._decided.get(pair, ("undecided", cs.n))
            low, high = cs.bounds()
            decisions.append(SequentialDecision(pair[0], pair[1], decision, n, low, high, cs.alpha))
        total = len(self.order)
        return EarlyStop(
            stopped=self.decided and self.tasks < total,
            tasks=self.tasks,
            total_tasks=total,
            alpha=self.alpha,
            margin=self.margin,
            decisions=tuple(decisions),
        )


def replay(
    cells: Iterable[Any],
    conditions: Sequence[str],
    epochs: int,
    total_tasks: int,
    seed: int,
    reduce: Any,
    margin: float | None,
) -> EarlyStop:
    """The :class:`EarlyStop` of a stored run, from its cells: the same schedule and the
    same decisions the live run made (cells that finished after the decision change
    nothing, since tasks are fed in schedule order)."""
    policy = StoppingPolicy(conditions, epochs, schedule(total_tasks, seed), reduce, margin=margin)
    for cell in cells:
        if policy.observe(cell):
            break
    return policy.result()
