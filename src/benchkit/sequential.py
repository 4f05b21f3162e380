"""Stop a run when the answer is known: sequential comparisons (``run --until-decided``).

Evaluating against paid models costs money per cell. With ``RunOptions.until_decided``
the Runner runs the tasks in a seeded random order and asks :class:`StoppingPolicy`,
as tasks finish under every condition, whether each comparison is decided:

* **differs** — the paired mean difference ``b - a`` is shown to be non-zero, or
* **within margin** — it is shown to lie inside ``(-margin, margin)`` (``--margin``),

and stops taking cells once every comparison is decided (or the tasks run out).

Looking more than once would inflate the error of an ordinary test. Two designs keep it
at ``α`` (:data:`ALPHA`; with several comparisons each gets ``α / comparisons``, so the
chance of any false decision over the run stays below ``α``):

* **group-sequential** (:class:`GroupSequentialDesign`), when the run knows how many tasks
  it has (its *horizon* ``N``, what the Runner passes): a look after every tenth of the
  tasks (:data:`LOOKS`), each comparing the score statistic ``Σd / sqrt(Σd²)`` of the
  per-task differences ``d`` with a boundary from the Lan-DeMets O'Brien-Fleming-type
  alpha-spending function. Early looks need overwhelming evidence and the last one
  little more than a fixed test of all ``N`` tasks would, so the power stays close to the
  fixed test's while a clear difference stops the run early. The interval is the
  *repeated confidence interval* of the deciding look, the differences the same test
  does not reject, and the p-value orders outcomes by the look they stop at (stage-wise
  ordering): it is below ``α`` exactly when the comparison differs;
* **confidence sequence** (:class:`ConfidenceSequence`), for a run with no horizon: a look
  after every task, for as long as it takes.

For the confidence sequence, each candidate mean ``m`` of the per-task differences
``d_i`` (in [-1, 1]) keeps a betting wealth (Waudby-Smith and Ramdas 2023, "hedged
capital")

    K_t(m) = ½ Π (1 + λ⁺_i (d_i - m)) + ½ Π (1 - λ⁻_i (d_i - m)),

with bets ``λ`` chosen from the differences seen *before* task ``i`` (predictable). Under
the hypothesis that the mean is ``m``, ``K_t(m)`` is a nonnegative martingale with
``K_0 = 1``, so by Ville's inequality the chance that it **ever** reaches ``1 / α`` is at
most ``α``. The set of ``m`` whose wealth has never reached ``1/α`` is a ``1 - α``
confidence sequence: an interval valid at every look at once, and ``1 / max K_t(0)`` an
anytime-valid p-value. The candidates form a grid of :data:`GRID` points plus ``0`` and
``±margin``.

"Differs" is ``0`` leaving the interval; "within margin" is the whole of it inside
``(-margin, margin)``. Either guarantee assumes the tasks are a random sample from the
population of tasks (the same assumption as every interval benchkit prints) and that the
unit is the task: a run with ``cluster_by`` is refused.
"""

from __future__ import annotations

import functools
import math
import random
import statistics
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import attrs

from benchkit import stats
from benchkit.errors import StatsError

__all__ = [
    "ALPHA",
    "GRID",
    "LOOKS",
    "ConfidenceSequence",
    "EarlyStop",
    "GroupSequentialDesign",
    "GroupSequentialTest",
    "SequentialDecision",
    "StoppingPolicy",
    "obrien_fleming_spending",
    "replay",
    "schedule",
]

#: The error rate of ``--until-decided`` over the whole run (all comparisons together).
ALPHA = 0.05
#: Candidate means on the grid of the confidence sequence (plus 0 and ±margin).
GRID = 201
#: How many looks the group-sequential design takes: after every tenth of the tasks.
LOOKS = 10
#: The largest bet, as a share of what a process may bet without risking ruin.
_MAX_BET = 0.5
#: Points of the grid each look's density is integrated on (Simpson's rule; odd).
_POINTS = 101

Decision = Literal["differs", "within_margin", "undecided"]
Design = Literal["group_sequential", "confidence_sequence"]

_SQRT2 = math.sqrt(2.0)
_SQRT2PI = math.sqrt(2.0 * math.pi)


def _tail(x: float) -> float:
    """``P(Z >= x)`` for a standard normal ``Z``, accurate far into the tail."""
    return 0.5 * math.erfc(x / _SQRT2)


def _tail_inverse(p: float) -> float:
    """The ``x`` with ``P(Z >= x) = p`` (``p`` in (0, 1/2]; tiny ``p`` too)."""
    if p >= 1e-10:
        return statistics.NormalDist().inv_cdf(1.0 - p)
    lo, hi = 6.0, 40.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        if _tail(mid) > p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def obrien_fleming_spending(t: float, alpha: float) -> float:
    """How much of a two-sided ``alpha`` the Lan-DeMets O'Brien-Fleming-type spending
    function has spent at information fraction ``t``: ``α/2`` per side,
    ``2 (1 - Φ(z_{1-α/4} / √t))`` each, so almost nothing early and all of it at ``t = 1``.

        >>> round(obrien_fleming_spending(1.0, 0.05), 12)
        0.05
        >>> obrien_fleming_spending(0.5, 0.05) < 0.006
        True
    """
    if t <= 0.0:
        return 0.0
    if t >= 1.0:
        return alpha
    return min(alpha, 4.0 * _tail(_tail_inverse(alpha / 4.0) / math.sqrt(t)))


def _simpson(half: float, points: int) -> tuple[list[float], list[float]]:
    """``points`` (odd) equally spaced nodes on ``[-half, half]`` and Simpson's weights."""
    step = 2.0 * half / (points - 1)
    nodes = [-half + i * step for i in range(points)]
    weights = [
        step / 3.0 * (1.0 if i in (0, points - 1) else 4.0 if i % 2 else 2.0) for i in range(points)
    ]
    return nodes, weights


class GroupSequentialDesign:
    """Two-sided boundaries for ``looks`` equally spaced looks at level ``alpha``.

    The statistic at look ``k`` (information fraction ``t_k = k / looks``) is treated as
    Brownian motion: ``Z_k = S(t_k) / √t_k`` with independent increments. The boundary
    ``c_k`` spends :func:`obrien_fleming_spending` — the chance of crossing first at look
    ``k`` is ``α(t_k) - α(t_{k-1})`` — found by integrating the density of the paths that
    have not crossed yet, look by look (Armitage, McPherson and Rowe 1969; Jennison and
    Turnbull 2000, ch. 19). With five looks at α = 0.05 that gives the published 4.877,
    3.357, 2.680, 2.290, 2.031.

        >>> [round(c, 3) for c in GroupSequentialDesign(5, 0.05).boundaries]
        [4.877, 3.357, 2.68, 2.29, 2.031]
    """

    def __init__(self, looks: int, alpha: float) -> None:
        if looks < 1 or not 0.0 < alpha < 1.0:
            raise StatsError(
                f"GroupSequentialDesign: looks={looks!r} and alpha={alpha!r} must be at "
                "least 1 and in (0, 1)",
                fix="pass looks=10, alpha=0.05",
            )
        self.looks = looks
        self.alpha = alpha
        self.fractions = tuple(k / looks for k in range(1, looks + 1))
        boundaries: list[float] = []
        # the sub-density of the score S(t) over paths still inside, per look: nodes,
        # Simpson weights and density values
        self._inside: list[tuple[list[float], list[float], list[float]]] = []
        spent = previous = 0.0
        for t in self.fractions:
            target = obrien_fleming_spending(t, alpha) - spent
            if not self._inside:
                c = _tail_inverse(target / 2.0)
                nodes, weights = _simpson(c * math.sqrt(t), _POINTS)
                density = [math.exp(-0.5 * x * x / t) / (_SQRT2PI * math.sqrt(t)) for x in nodes]
            else:
                nodes0, weights0, density0 = self._inside[-1]
                sd = math.sqrt(t - previous)
                mass = [w * f for w, f in zip(weights0, density0, strict=True)]

                def crossing(
                    half: float,
                    mass: list[float] = mass,
                    nodes0: list[float] = nodes0,
                    sd: float = sd,
                ) -> float:
                    return sum(
                        m * (_tail((half - u) / sd) + _tail((half + u) / sd))
                        for m, u in zip(mass, nodes0, strict=True)
                    )

                lo, hi = 0.0, 1.0
                while crossing(hi) > target:
                    hi *= 2.0
                for _ in range(48):  # to ~1e-14 of the boundary: far below its 3rd decimal
                    mid = (lo + hi) / 2.0
                    if crossing(mid) > target:
                        lo = mid
                    else:
                        hi = mid
                c = hi / math.sqrt(t)
                nodes, weights = _simpson(hi, _POINTS)
                scale = 1.0 / (_SQRT2PI * sd)
                density = [
                    scale
                    * sum(
                        m * math.exp(-0.5 * ((x - u) / sd) ** 2)
                        for m, u in zip(mass, nodes0, strict=True)
                    )
                    for x in nodes
                ]
            boundaries.append(c)
            self._inside.append((nodes, weights, density))
            spent += target
            previous = t
        self.boundaries = tuple(boundaries)

    def nominal(self, look: int) -> float:
        """The two-sided p-value a single test at look ``look`` (1-based) would need."""
        return 2.0 * _tail(self.boundaries[look - 1])

    def p_value(self, look: int, z: float) -> float:
        """The stage-wise p-value of stopping at ``look`` with statistic ``|z|``: the chance,
        with no difference, of crossing at an earlier look plus that of reaching this one
        and ``|Z| >= |z|`` there. Below ``alpha`` exactly when ``|z|`` crosses the boundary
        at this look (or crossed at an earlier one)."""
        z = abs(z)
        if look == 1:
            return min(1.0, 2.0 * _tail(z))
        before = obrien_fleming_spending(self.fractions[look - 2], self.alpha)
        t, previous = self.fractions[look - 1], self.fractions[look - 2]
        sd = math.sqrt(t - previous)
        half = z * math.sqrt(t)
        nodes, weights, density = self._inside[look - 2]
        reach = math.fsum(
            w * f * (_tail((half - u) / sd) + _tail((half + u) / sd))
            for w, f, u in zip(weights, density, nodes, strict=True)
        )
        return min(1.0, before + reach)


@functools.lru_cache(maxsize=64)
def _design(looks: int, alpha: float) -> GroupSequentialDesign:
    return GroupSequentialDesign(looks, alpha)


class GroupSequentialTest:
    """One comparison of a group-sequential run: per-task differences in, a decision at
    each look out.

    ``update(d)`` adds a task's difference; ``look(k)`` tests at look ``k`` of
    ``design``. The statistic is ``Z = Σd / sqrt(Σd²)`` — McNemar's for pass/fail tasks —
    and the comparison **differs** when ``|Z|`` reaches the look's boundary and, with few
    tasks that moved, the exact test (McNemar's, or the sign-flip test of up to
    :data:`benchkit.stats.EXACT_MAX_CLUSTERS` differences) agrees at the look's nominal
    level: the statistic used is the smaller of the two, so a handful of discordant tasks
    never decides on a normal approximation. :meth:`interval` is the repeated confidence
    interval at the look: the means ``m`` whose statistic ``Σ(d - m) / sqrt(Σ(d - m)²)``
    stays inside the boundary — Tango's score interval for pass/fail tasks, ``mean ±
    c·sqrt(SS / (n (n - c²)))`` otherwise — joined to 0 when the comparison does not
    differ; it holds the true difference at every look at once with probability at least
    ``1 - alpha``.
    """

    def __init__(self, design: GroupSequentialDesign, margin: float | None = None) -> None:
        self.design = design
        self.margin = margin
        self.n = 0
        self._sum = 0.0
        self._sumsq = 0.0
        self._nonzero: list[float] = []
        self._binary = True
        self.decision: Decision = "undecided"
        self._interval: tuple[float, float] | None = None
        self.z = 0.0
        self.looked = 0  # the last look taken (0: none yet)
        self.seen = 0  # tasks seen at that look
        self.estimate = 0.0  # their mean difference

    def update(self, d: float) -> None:
        """Add one task's difference (in [-1, 1])."""
        if not -1.0 <= d <= 1.0:  # also false for NaN
            raise StatsError(
                f"GroupSequentialTest.update: {d!r} is not a difference in [-1, 1]",
                fix="pass per-task differences of values in [0, 1]",
            )
        self.n += 1
        self._sum += d
        self._sumsq += d * d
        if d != 0.0:
            self._nonzero.append(d)
            if d not in (-1.0, 1.0):
                self._binary = False

    @property
    def mean(self) -> float:
        return self._sum / self.n if self.n else 0.0

    def _exact_z(self) -> float:
        """The normal quantile of the exact test's p-value (inf when there is none)."""
        moved = self._nonzero
        if self._binary:
            up = sum(1 for d in moved if d > 0)
            p = stats.mcnemar_exact(up, len(moved) - up)
        elif len(moved) <= stats.EXACT_MAX_CLUSTERS:
            p = stats.sign_flip_exact(moved) if moved else 1.0
        else:
            return math.inf
        return 0.0 if p >= 1.0 else _tail_inverse(p / 2.0)

    def look(self, look: int) -> Decision:
        """Test at look ``look`` (1-based) of the design; the decision (``undecided`` until
        the data decide it)."""
        c = self.design.boundaries[look - 1]
        self.seen = self.n
        self.looked = look
        self.estimate = self.mean
        self._interval = None
        score = self._sum / math.sqrt(self._sumsq) if self._sumsq > 0.0 else 0.0
        self.z = min(abs(score), self._exact_z()) if abs(score) >= c else abs(score)
        if self.z >= c:
            self.decision = "differs"
            return self.decision
        margin = self.margin
        if margin is not None:
            low, high = self.interval()
            if -margin < low and high < margin:
                self.decision = "within_margin"
        return self.decision

    def interval(self) -> tuple[float, float]:
        """The repeated confidence interval at the last look (all of [-1, 1] before the
        first), joined to 0 unless the comparison differs there."""
        if self._interval is not None:
            return self._interval
        if not self.looked or not self.seen:
            return -1.0, 1.0
        c = self.design.boundaries[self.looked - 1]
        n = self.seen
        if self._binary:
            up = sum(1 for d in self._nonzero if d > 0)
            low, high = stats._tango_interval(up, len(self._nonzero) - up, n, c)
        elif n > c * c:
            ss = max(0.0, self._sumsq - self._sum * self._sum / n)
            half = c * math.sqrt(ss / (n * (n - c * c)))
            low, high = max(-1.0, self.estimate - half), min(1.0, self.estimate + half)
            if not self._nonzero:  # no task moved: Wilson's bound on the share that would
                bound = c * c / (n + c * c)
                low, high = -bound, bound
        else:
            low, high = -1.0, 1.0
        if self.z < c:
            low, high = min(low, 0.0), max(high, 0.0)
        self._interval = (low, high)
        return self._interval

    def p_value(self) -> float | None:
        """The stage-wise p-value where it has one: once the comparison differs, or at the
        last look (None at an earlier look, or after "within margin")."""
        if not self.looked or self.decision == "within_margin":
            return None
        if self.decision == "differs" or self.looked == self.design.looks:
            return self.design.p_value(self.looked, self.z)
        return None


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
        self._best_zero = 0.0  # the largest log wealth against m = 0 so far

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
            if m == 0.0:
                self._best_zero = max(self._best_zero, wealth)
            if wealth >= self._threshold:
                self._out[i] = True
        self.n += 1
        self._sum += d
        self._sumsq += d * d

    @property
    def mean(self) -> float:
        """The mean of the differences seen so far (0 before the first)."""
        return self._sum / self.n if self.n else 0.0

    @property
    def p_value(self) -> float:
        """The anytime-valid p-value of "no difference": ``1 / max_t K_t(0)``, capped at 1;
        at most ``alpha`` exactly when 0 has left the sequence."""
        return min(1.0, math.exp(-self._best_zero))

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
    paired tasks it had seen when it was decided (or at the end), ``fed`` how many tasks of
    the schedule had been fed by then (the comparison's figures rest on those first
    ``fed`` tasks); ``low`` / ``high`` bound the interval of the design at that point
    (the repeated confidence interval, or the confidence sequence) for the mean per-task
    difference ``estimate``, at level ``1 - alpha`` (``alpha`` is this comparison's share
    of the run's error rate). ``p_value`` is the design's p-value (stage-wise for the
    group-sequential design, anytime-valid for the confidence sequence; None where the
    design has none: a comparison still undecided before the last look, or within the
    margin).

    .. versionchanged:: 0.2.0
       ``p_value``, ``estimate`` and ``fed``.
    """

    baseline: str
    target: str
    decision: Decision
    tasks: int
    low: float
    high: float
    alpha: float
    p_value: float | None = None
    estimate: float = 0.0
    fed: int = 0

    def interval_name(self, design: Design) -> str:
        return (
            "repeated confidence interval"
            if design == "group_sequential"
            else "confidence sequence"
        )

    def text(self, design: Design = "group_sequential") -> str:
        bounds = f"[{self.low:+.3f}, {self.high:+.3f}]"
        level = (
            f"{1 - self.alpha:.0%}"
            if round((1 - self.alpha) * 100, 6).is_integer()
            else f"{1 - self.alpha:.1%}"
        )
        cs = f"{level} {self.interval_name(design)} {bounds}"
        p = "" if self.p_value is None else f"; p = {_p(self.p_value)}"
        name = f"{self.target} vs {self.baseline}"
        if self.decision == "differs":
            return f"{name}: differs after {self.tasks} tasks (0 is outside the {cs}{p})"
        if self.decision == "within_margin":
            return (
                f"{name}: the difference is within the margin after {self.tasks} tasks "
                f"(the {cs} lies inside it)"
            )
        return f"{name}: undecided after {self.tasks} tasks ({cs}{p})"


def _p(value: float) -> str:
    return f"{value:.4f}" if value >= 1e-4 or value == 0 else f"{value:.1e}"


@attrs.frozen
class EarlyStop:
    """What ``--until-decided`` did: whether the run ``stopped`` before its tasks ran out,
    after how many complete ``tasks`` (of ``total_tasks``), and each comparison's decision.
    ``design`` names the procedure (``group_sequential`` when the run knew its number of
    tasks, ``confidence_sequence`` otherwise) and ``looks`` the task counts it tested at
    (empty for the confidence sequence, which looks after every task); ``seed`` is the
    run's, which fixes the order the tasks were fed in (:func:`schedule`).

    .. versionchanged:: 0.2.0
       ``design``, ``looks`` and ``seed``.
    """

    stopped: bool
    tasks: int
    total_tasks: int
    alpha: float
    margin: float | None
    decisions: tuple[SequentialDecision, ...]
    design: Design = "group_sequential"
    looks: tuple[int, ...] = ()
    seed: int = 0

    def how(self) -> str:
        """The procedure in a few words, for reports."""
        if self.design == "group_sequential":
            return (
                f"random order, group-sequential test with O'Brien-Fleming alpha spending "
                f"at {len(self.looks)} looks, α={self.alpha:g}"
            )
        return f"random order, anytime-valid test after each task, α={self.alpha:g}"

    def text(self) -> str:
        """One line for reports: stopped early or not, after how many tasks, and why."""
        why = "; ".join(d.text(self.design) for d in self.decisions)
        if self.stopped:
            return (
                f"Stopped early after {self.tasks} of {self.total_tasks} tasks "
                f"({self.how()}): {why}."
            )
        return (
            f"Ran {self.tasks} of {self.total_tasks} tasks with --until-decided "
            f"({self.how()}) without stopping early: {why}."
        )

    @property
    def saved(self) -> float:
        """The share of the tasks that did not need to run."""
        return 1.0 - self.tasks / self.total_tasks if self.total_tasks else 0.0

    def decision(self, baseline: str, target: str) -> SequentialDecision | None:
        """The decision of ``target`` against ``baseline`` (None when there is none)."""
        for found in self.decisions:
            if (found.baseline, found.target) == (baseline, target):
                return found
        return None


def schedule(total: int, seed: int) -> list[int]:
    """The order ``--until-decided`` runs ``total`` tasks in (positions in the benchmark),
    seeded so a resumed or reloaded run sees the same order."""
    order = list(range(total))
    random.Random(f"until-decided:{seed}").shuffle(order)
    return order


def look_points(horizon: int, looks: int = LOOKS) -> tuple[int, ...]:
    """The task counts a group-sequential run of ``horizon`` tasks looks at: after every
    ``horizon / looks`` tasks (rounded up), ``min(looks, horizon)`` looks in all.

        >>> look_points(200)
        (20, 40, 60, 80, 100, 120, 140, 160, 180, 200)
        >>> look_points(3)
        (1, 2, 3)
    """
    k = max(1, min(looks, horizon))
    return tuple(math.ceil(j * horizon / k) for j in range(1, k + 1))


class StoppingPolicy:
    """What the Runner consults after each finished cell of an ``--until-decided`` run.

    ``observe(cell)`` collects cells; a task is *complete* once every condition has every
    epoch of it. Complete tasks are fed to the comparisons in the run's schedule order (a
    task that finishes early waits for those before it), so the decision depends on the
    results alone, never on which cell happened to finish first. ``decided`` turns true
    once every comparison is decided; the Runner then stops taking cells.

    ``horizon`` is the number of tasks the run has: with it the comparisons are
    group-sequential (:class:`GroupSequentialTest`, a look at each of
    :func:`look_points`); without it (None) each is an open-ended
    :class:`ConfidenceSequence` that looks after every task.

    ``reduce(cells)`` turns one task's cells under one condition into its value in [0, 1]
    (None when it has none, e.g. its judge failed): the same reduction the comparisons in
    the report use.

    .. versionchanged:: 0.2.0
       ``horizon`` and ``seed``.
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
        horizon: int | None = None,
        seed: int = 0,
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
        if horizon is not None and horizon < 1:
            raise StatsError(
                f"horizon={horizon!r} must be the number of tasks (at least 1), or None",
                fix="pass the number of tasks the run has, or None for no horizon",
            )
        self.conditions = list(conditions)
        self.epochs = epochs
        self.order = list(order)
        self.reduce = reduce
        self.margin = margin
        self.alpha = alpha
        self.seed = seed
        self.pairs = [
            (a, b) for i, a in enumerate(self.conditions) for b in self.conditions[i + 1 :]
        ]
        each = alpha / len(self.pairs)
        self.design: Design = "confidence_sequence" if horizon is None else "group_sequential"
        self.looks = () if horizon is None else look_points(horizon)
        extra = () if margin is None else (-margin, margin)
        self._cs: dict[tuple[str, str], ConfidenceSequence] = {}
        self._gs: dict[tuple[str, str], GroupSequentialTest] = {}
        if horizon is None:
            self._cs = {pair: ConfidenceSequence(each, extra=extra) for pair in self.pairs}
        else:
            design = _design(len(self.looks), each)
            self._gs = {pair: GroupSequentialTest(design, margin) for pair in self.pairs}
        self._each = each
        self._decided: dict[tuple[str, str], SequentialDecision] = {}
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
                d = values[b] - values[a]
                if self._gs:
                    self._gs[(a, b)].update(d)
                    continue
                cs = self._cs[(a, b)]
                cs.update(d)
                decision = self._cs_decision(cs)
                if decision != "undecided":
                    self._decided[(a, b)] = self._snapshot((a, b), decision)
            if self._gs and self.tasks in self.looks:
                look = self.looks.index(self.tasks) + 1
                for pair, test in self._gs.items():
                    if pair not in self._decided and test.look(look) != "undecided":
                        self._decided[pair] = self._snapshot(pair, test.decision)
            if len(self._decided) == len(self.pairs):
                self.decided = True
                return

    def _cs_decision(self, cs: ConfidenceSequence) -> Decision:
        if cs.excluded(0.0):
            return "differs"
        margin = self.margin
        if margin is not None and cs.excluded(-margin) and cs.excluded(margin):
            low, high = cs.bounds()
            if -margin < low and high < margin:
                return "within_margin"
        return "undecided"

    def _snapshot(self, pair: tuple[str, str], decision: Decision) -> SequentialDecision:
        """The comparison's figures as they stand now."""
        if self._gs:
            test = self._gs[pair]
            n, estimate = test.seen, test.estimate
            low, high = test.interval()
            p = test.p_value()
        else:
            cs = self._cs[pair]
            n, estimate = cs.n, cs.mean
            low, high = cs.bounds()
            p = None if decision == "within_margin" else cs.p_value
        return SequentialDecision(
            pair[0], pair[1], decision, n, low, high, self._each, p, estimate, self.tasks
        )

    def result(self) -> EarlyStop:
        """The decisions so far, as the run's report shows them."""
        decisions = [
            self._decided.get(pair) or self._snapshot(pair, "undecided") for pair in self.pairs
        ]
        total = len(self.order)
        return EarlyStop(
            stopped=self.decided and self.tasks < total,
            tasks=self.tasks,
            total_tasks=total,
            alpha=self.alpha,
            margin=self.margin,
            decisions=tuple(decisions),
            design=self.design,
            looks=self.looks,
            seed=self.seed,
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
    policy = StoppingPolicy(
        conditions,
        epochs,
        schedule(total_tasks, seed),
        reduce,
        margin=margin,
        horizon=total_tasks,
        seed=seed,
    )
    for cell in cells:
        if policy.observe(cell):
            break
    return policy.result()
