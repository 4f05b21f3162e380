"""Seeded Monte-Carlo designs for benchkit's statistics (shared by the tests and perf/).

Each design draws a population of tasks, runs two conditions over them as CellResults, and
pushes the cells through :func:`benchkit._aggregate.aggregate_run` — the code every report
uses — so what is checked is what users get. Every draw comes from ``random.Random(seed)``.

The designs have a known truth: the population pass rate (or mean score) of condition
``a`` and the population mean difference ``b - a``. Under the null designs the two
conditions are equally good *on average* but good at different tasks, the case where
counting cells as independent trials goes wrong.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from benchkit import stats
from benchkit._aggregate import aggregate_run
from benchkit.results import CellResult

__all__ = [
    "DESIGNS",
    "Design",
    "Outcome",
    "Summary",
    "simulate",
]


@dataclass(frozen=True)
class Outcome:
    """What one simulated run reported, next to the truth."""

    p_value: float
    method: str
    mde: float | None
    delta: float
    delta_covered: bool
    rate_covered: bool
    naive_p: float | None
    naive_covered: bool | None


@dataclass(frozen=True)
class Design:
    """A simulation design: ``draw(rng)`` returns the cells of one run."""

    name: str
    draw: Callable[[random.Random], list[CellResult]]
    truth_a: float
    truth_delta: float
    binary: bool


def _cells(
    cond: str,
    probs: list[float],
    epochs: int,
    rng: random.Random,
    clusters: list[str] | None = None,
    scores: Callable[[float, random.Random], float] | None = None,
) -> list[CellResult]:
    out: list[CellResult] = []
    for t, p in enumerate(probs):
        for e in range(epochs):
            if scores is None:
                ok = rng.random() < p
                value = 1.0 if ok else 0.0
            else:
                value = scores(p, rng)
                ok = value >= 0.5
            out.append(
                CellResult(
                    task_id=f"t{t}",
                    condition_id=cond,
                    epoch=e,
                    status="pass" if ok else "fail",
                    index=t,
                    score=value,
                    cluster=None if clusters is None else clusters[t],
                )
            )
    return out


def _skills(rng: random.Random, n: int, same: float = 0.25) -> tuple[list[float], list[float]]:
    """Per-unit success probabilities of a and b: Beta(0.6, 0.4) each (mean 0.6), b equal
    to a with probability ``same`` and an independent draw otherwise — equal on average,
    different task by task."""
    pa = [rng.betavariate(0.6, 0.4) for _ in range(n)]
    pb = [x if rng.random() < same else rng.betavariate(0.6, 0.4) for x in pa]
    return pa, pb


def binary_epochs(tasks: int, epochs: int) -> Design:
    """Pass/fail tasks run ``epochs`` times; conditions differ per task, not on average."""

    def draw(rng: random.Random) -> list[CellResult]:
        pa, pb = _skills(rng, tasks)
        return _cells("a", pa, epochs, rng) + _cells("b", pb, epochs, rng)

    return Design(f"binary, {tasks} tasks x {epochs} epochs", draw, 0.6, 0.0, True)


def clustered(clusters: int, size: int) -> Design:
    """One epoch of pass/fail tasks in clusters of ``size`` (questions about one passage):
    a task takes its cluster's skill level with probability 0.7, else its own draw from the
    same Beta(0.6, 0.4); declared with ``cluster``."""

    def draw(rng: random.Random) -> list[CellResult]:
        qa, qb = _skills(rng, clusters)
        labels = [f"c{i // size}" for i in range(clusters * size)]

        def task_level(q: float) -> float:
            return q if rng.random() < 0.7 else rng.betavariate(0.6, 0.4)

        pa = [task_level(qa[i // size]) for i in range(clusters * size)]
        pb = [task_level(qb[i // size]) for i in range(clusters * size)]
        return _cells("a", pa, 1, rng, labels) + _cells("b", pb, 1, rng, labels)

    return Design(f"binary, {clusters} clusters x {size} tasks", draw, 0.6, 0.0, True)


def continuous(tasks: int, epochs: int, kappa: float = 8.0) -> Design:
    """Scores in (0, 1): task means Beta(2, 3) (mean 0.4), cell scores Beta around them."""

    def score(mu: float, rng: random.Random) -> float:
        return rng.betavariate(kappa * mu, kappa * (1.0 - mu))

    def draw(rng: random.Random) -> list[CellResult]:
        ma = [rng.betavariate(2.0, 3.0) for _ in range(tasks)]
        mb = [x if rng.random() < 0.5 else rng.betavariate(2.0, 3.0) for x in ma]
        return _cells("a", ma, epochs, rng, scores=score) + _cells(
            "b", mb, epochs, rng, scores=score
        )

    return Design(f"scores, {tasks} tasks x {epochs} epochs", draw, 0.4, 0.0, False)


def shifted(tasks: int, epochs: int, delta: float) -> Design:
    """Pass/fail with a real difference: p_a ~ U(0.2, 0.6) and p_b = p_a + delta + U(-0.15,
    0.15) (no clipping for delta <= 0.25), so the true mean difference is exactly delta."""

    def draw(rng: random.Random) -> list[CellResult]:
        pa = [rng.uniform(0.2, 0.6) for _ in range(tasks)]
        pb = [x + delta + rng.uniform(-0.15, 0.15) for x in pa]
        return _cells("a", pa, epochs, rng) + _cells("b", pb, epochs, rng)

    return Design(f"shift {delta:+.3f}, {tasks} tasks x {epochs} epochs", draw, 0.4, delta, True)


def _naive(cells: list[CellResult], truth: float) -> tuple[float, bool]:
    """What benchkit did before issue 13: McNemar over (task, epoch) cells and a Wilson
    interval over cells — for contrast only."""
    a = {(c.task_id, c.epoch): c.passed for c in cells if c.condition_id == "a"}
    b = {(c.task_id, c.epoch): c.passed for c in cells if c.condition_id == "b"}
    a_only = sum(1 for k, v in a.items() if v and not b[k])
    b_only = sum(1 for k, v in a.items() if b[k] and not v)
    iv = stats.wilson_interval(sum(a.values()), len(a))
    return stats.mcnemar_exact(a_only, b_only), iv.low <= truth <= iv.high


def run_once(design: Design, rng: random.Random) -> Outcome:
    """Simulate one run of ``design`` and read what benchkit reports about it."""
    cells = design.draw(rng)
    aggregates, _, comparisons = aggregate_run(cells, ["a", "b"])
    (cmp,) = comparisons
    agg_a = aggregates[0]
    iv = agg_a.pass_rate_ci if design.binary else agg_a.mean_score_ci
    assert iv is not None
    div = cmp.paired.interval
    naive_p, naive_cov = _naive(cells, design.truth_a) if design.binary else (None, None)
    assert cmp.paired.p_value is not None
    return Outcome(
        p_value=cmp.paired.p_value,
        method=cmp.paired.method,
        mde=cmp.paired.mde,
        delta=cmp.paired.delta,
        delta_covered=div.low <= design.truth_delta <= div.high,
        rate_covered=iv.low <= design.truth_a <= iv.high,
        naive_p=naive_p,
        naive_covered=naive_cov,
    )


@dataclass(frozen=True)
class Summary:
    """Rates over ``n`` simulated runs, and the band a correct procedure stays in."""

    design: str
    n: int
    methods: tuple[str, ...]
    reject: float
    rate_coverage: float
    delta_coverage: float
    mean_mde: float | None
    naive_reject: float | None
    naive_coverage: float | None

    def band(self, rate: float, sigmas: float = 4.0) -> tuple[float, float]:
        """``rate ± sigmas`` binomial standard errors for ``n`` runs: where an estimate of
        a true ``rate`` falls with probability > 99.99 % at 4 sigmas."""
        half = sigmas * (rate * (1.0 - rate) / self.n) ** 0.5
        return rate - half, rate + half


def simulate(design: Design, n: int, seed: int, alpha: float = 0.05) -> Summary:
    """``n`` seeded runs of ``design``, summarised."""
    rng = random.Random(seed)
    runs = [run_once(design, rng) for _ in range(n)]
    mdes = [r.mde for r in runs if r.mde is not None]
    naive = [r for r in runs if r.naive_p is not None]
    return Summary(
        design=design.name,
        n=n,
        methods=tuple(sorted({r.method for r in runs})),
        reject=sum(r.p_value < alpha for r in runs) / n,
        rate_coverage=sum(r.rate_covered for r in runs) / n,
        delta_coverage=sum(r.delta_covered for r in runs) / n,
        mean_mde=sum(mdes) / len(mdes) if mdes else None,
        naive_reject=(
            sum(r.naive_p is not None and r.naive_p < alpha for r in naive) / len(naive)
            if naive
            else None
        ),
        naive_coverage=sum(bool(r.naive_covered) for r in naive) / len(naive) if naive else None,
    )


#: The designs the tests and perf/stats_montecarlo.py run.
DESIGNS: dict[str, Design] = {
    "binary_epochs_30": binary_epochs(30, 5),
    "binary_epochs_10": binary_epochs(10, 5),
    "clustered_20x5": clustered(20, 5),
    "clustered_10x5": clustered(10, 5),
    "continuous_30": continuous(30, 3),
}


# --------------------------------------------------------------------------- --until-decided

#: One task's values under conditions a and b (each in [0, 1]), drawn from ``rng``.
TaskDraw = Callable[[random.Random], tuple[float, float]]


def _epochs(rng: random.Random, chance: float, epochs: int) -> float:
    """A task's pass fraction over ``epochs`` epochs at ``chance``."""
    if epochs == 1:
        return float(rng.random() < chance)
    return sum(rng.random() < chance for _ in range(epochs)) / epochs


def shifted_task(delta: float, epochs: int = 1) -> TaskDraw:
    """p_a ~ U(0.2, 0.6), p_b = p_a + delta + U(-0.15, 0.15): unequal difficulty, and a true
    mean difference of exactly delta (no clipping for delta <= 0.25)."""

    def draw(rng: random.Random) -> tuple[float, float]:
        pa = rng.uniform(0.2, 0.6)
        pb = pa + delta + rng.uniform(-0.15, 0.15)
        return _epochs(rng, pa, epochs), _epochs(rng, pb, epochs)

    return draw


def rare_discordance(share: float) -> TaskDraw:
    """No difference, and tasks that rarely tell the systems apart: a ``share`` of them are
    coin flips for both, the rest pass (60 %) or fail under both, every time."""

    def draw(rng: random.Random) -> tuple[float, float]:
        if rng.random() < share:
            return float(rng.random() < 0.5), float(rng.random() < 0.5)
        same = float(rng.random() < 0.6)
        return same, same

    return draw


def correlated_epochs(epochs: int = 5) -> TaskDraw:
    """No difference: both systems share each task's chance p ~ U(0, 1) over ``epochs``
    epochs, so the epochs of a task are correlated (through p) and the per-task differences
    are fractions, not just -1, 0 and 1."""

    def draw(rng: random.Random) -> tuple[float, float]:
        p = rng.random()
        return _epochs(rng, p, epochs), _epochs(rng, p, epochs)

    return draw


def different_strengths() -> TaskDraw:
    """No difference on average, but the systems are good at different tasks (the null of
    :func:`_skills`: Beta(0.6, 0.4) each, equal on a quarter of the tasks)."""

    def draw(rng: random.Random) -> tuple[float, float]:
        pa = rng.betavariate(0.6, 0.4)
        pb = pa if rng.random() < 0.25 else rng.betavariate(0.6, 0.4)
        return float(rng.random() < pa), float(rng.random() < pb)

    return draw


@dataclass(frozen=True)
class SequentialOutcome:
    """One simulated ``--until-decided`` comparison: what the group-sequential design
    decided (``sign`` of a declared difference, 0 when none) after how many tasks, and what
    the fixed test of all the tasks would have said."""

    sign: int
    tasks: int
    fixed_sign: int


def sequential_run(draw: TaskDraw, horizon: int, rng: random.Random) -> SequentialOutcome:
    """Draw ``horizon`` tasks, feed them to a :class:`GroupSequentialTest` at the looks the
    Runner takes, and test all of them with the fixed-size test a plain run reports."""
    from benchkit.sequential import ALPHA, GroupSequentialTest, _design, look_points

    pairs = [draw(rng) for _ in range(horizon)]
    looks = look_points(horizon)
    test = GroupSequentialTest(_design(len(looks), ALPHA))
    sign = 0
    used = horizon
    for i, (a, b) in enumerate(pairs, 1):
        test.update(b - a)
        if i in looks and test.look(looks.index(i) + 1) == "differs":
            sign = 1 if test.mean > 0 else -1
            used = i
            break
    fixed = stats.paired_task_comparison([a for a, _ in pairs], [b for _, b in pairs])
    assert fixed.p_value is not None
    fixed_sign = 0 if fixed.p_value >= ALPHA else (1 if fixed.delta > 0 else -1)
    return SequentialOutcome(sign, used, fixed_sign)


# --------------------------------------------------------------------------- judge agreement


@dataclass(frozen=True)
class AgreementDesign:
    """Two raters' joint distribution over pairs of ratings (``table`` maps ``(a, b)`` to a
    probability), the levels the ratings take, and the population values of the statistics
    the judge report gives for it."""

    name: str
    table: dict[tuple[float, float], float]
    levels: tuple[float, ...]

    def truth(self, statistic: str) -> float:
        """The population value of ``statistic``: ``kappa`` (Cohen's, nominal),
        ``weighted_kappa`` (quadratic, value distances), ``alpha_nominal`` or
        ``alpha_interval`` (Krippendorff's, two raters, no missing ratings)."""
        levels = self.levels
        span = max(levels) - min(levels)

        def weight(x: float, y: float) -> float:
            if statistic in ("kappa", "alpha_nominal"):
                return float(x != y)
            return ((x - y) / span) ** 2

        rows = {v: sum(p for (a, _), p in self.table.items() if a == v) for v in levels}
        cols = {v: sum(p for (_, b), p in self.table.items() if b == v) for v in levels}
        observed = sum(p * weight(a, b) for (a, b), p in self.table.items())
        if statistic.startswith("alpha"):
            pooled = {v: (rows[v] + cols[v]) / 2 for v in levels}
            expected = sum(pooled[x] * pooled[y] * weight(x, y) for x in levels for y in levels)
        else:
            expected = sum(rows[x] * cols[y] * weight(x, y) for x in levels for y in levels)
        return 1.0 - observed / expected

    def draw(self, rng: random.Random, n: int) -> list[tuple[float, float]]:
        pairs = list(self.table)
        weights = [self.table[p] for p in pairs]
        return rng.choices(pairs, weights, k=n)


def binary_agreement(prevalence: float, se: float, sp: float) -> AgreementDesign:
    """A judge's pass/fail verdicts (1/0) against people's: people pass a share
    ``prevalence``, the judge passes a human pass with probability ``se`` and fails a
    human fail with probability ``sp``."""
    table = {
        (1.0, 1.0): prevalence * se,
        (0.0, 1.0): prevalence * (1 - se),
        (1.0, 0.0): (1 - prevalence) * (1 - sp),
        (0.0, 0.0): (1 - prevalence) * sp,
    }
    return AgreementDesign(f"binary, {prevalence:g} pass, Se {se:g}, Sp {sp:g}", table, (0.0, 1.0))


def ordinal_agreement(
    levels: tuple[float, ...], shares: tuple[float, ...], same: float, near: float
) -> AgreementDesign:
    """Scores on ``levels`` (people's drawn with ``shares``): the judge gives the same
    level with probability ``same``, a neighbouring one with ``near`` (split between the
    two, or all on the one there is at an end), and any level at random otherwise."""
    k = len(levels)
    table: dict[tuple[float, float], float] = {}
    for i, share in enumerate(shares):
        neighbours = [j for j in (i - 1, i + 1) if 0 <= j < k]
        for j in range(k):
            p = (1 - same - near) / k
            if j == i:
                p += same
            if j in neighbours:
                p += near / len(neighbours)
            table[(levels[j], levels[i])] = share * p
    return AgreementDesign(f"{k} levels, same {same:g}, neighbour {near:g}", table, tuple(levels))


#: The agreement designs the tests and perf/stats_montecarlo.py run.
AGREEMENT_DESIGNS: dict[str, AgreementDesign] = {
    "binary": binary_agreement(0.5, 0.85, 0.8),
    "binary_skewed": binary_agreement(0.2, 0.95, 0.7),
    "binary_high": binary_agreement(0.4, 0.97, 0.97),
    "ordinal": ordinal_agreement(
        (0.0, 0.25, 0.5, 0.75, 1.0), (0.1, 0.2, 0.4, 0.2, 0.1), same=0.6, near=0.3
    ),
    "ordinal_uneven": ordinal_agreement((0.0, 0.3, 1.0), (0.4, 0.35, 0.25), same=0.5, near=0.3),
    "ordinal_near": ordinal_agreement(
        (0.0, 0.25, 0.5, 0.75, 1.0), (0.1, 0.2, 0.4, 0.2, 0.1), same=0.7, near=0.3
    ),
}


def agreement_statistic(name: str, levels: tuple[float, ...]) -> Callable[..., float | None]:
    """The function of a sample of (judge, human) pairs the judge report computes."""
    from benchkit import agreement

    def statistic(sample: list[tuple[float, float]]) -> float | None:
        if not sample:
            return None
        a = [x for x, _ in sample]
        b = [y for _, y in sample]
        if name == "kappa":
            return agreement.cohen_kappa(a, b)
        if name == "weighted_kappa":
            return agreement.weighted_kappa(a, b, categories=levels)
        level: Literal["nominal", "interval"] = "nominal" if name == "alpha_nominal" else "interval"
        return agreement.krippendorff_alpha(sample, level=level)

    return statistic


def agreement_chance(
    statistic: str, levels: tuple[float, ...]
) -> Callable[[Sequence[tuple[float, float]]], tuple[float, float]]:
    """The ``chance`` argument of :func:`benchkit.agreement.jackknife_interval` the judge
    report passes for ``statistic``: the chance disagreement of the pooled ratings and the
    mean of its square (categories for kappa and nominal alpha, distances on ``levels``
    otherwise)."""
    from benchkit import agreement

    scale = None if statistic in ("kappa", "alpha_nominal") else list(levels)

    def chance(sample: Sequence[tuple[float, float]]) -> tuple[float, float]:
        values = [v for pair in sample for v in pair]
        return (
            agreement.chance_disagreement(values, scale),
            agreement.chance_disagreement(values, scale, power=2),
        )

    return chance


@dataclass(frozen=True)
class Coverage:
    """How often ``runs`` intervals held the truth, and how often there was none."""

    runs: int
    covered: int
    missing: int
    width: float

    @property
    def rate(self) -> float:
        shown = self.runs - self.missing
        return self.covered / shown if shown else 0.0

    @property
    def se(self) -> float:
        shown = max(1, self.runs - self.missing)
        return math.sqrt(0.95 * 0.05 / shown)


def agreement_coverage(
    design: AgreementDesign, statistic: str, tasks: int, runs: int, seed: int
) -> Coverage:
    """Simulate ``runs`` samples of ``tasks`` rated pairs and count how often the report's
    interval (:func:`benchkit.agreement.jackknife_interval`) holds the population value."""
    from benchkit import agreement

    truth = design.truth(statistic)
    compute = agreement_statistic(statistic, design.levels)
    chance = agreement_chance(statistic, design.levels)
    rng = random.Random(seed)
    covered = missing = 0
    width = 0.0
    for _ in range(runs):
        sample = design.draw(rng, tasks)
        iv = agreement.jackknife_interval(sample, range(tasks), compute, chance=chance)
        if iv is None:
            missing += 1
            continue
        covered += iv.low <= truth <= iv.high
        width += iv.high - iv.low
    return Coverage(runs, covered, missing, width / max(1, runs - missing))


@dataclass(frozen=True)
class ExactCoverage:
    """The probability, over every sample of a design, that the report's interval holds
    the truth (``covered``), lies wholly above it (``above``) or below it (``below``),
    given that there is one; ``none`` is the probability of no interval and ``dropped``
    the probability of the samples not enumerated (each rarer than the floor)."""

    covered: float
    above: float
    below: float
    none: float
    dropped: float


def _compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every way to write ``total`` as ``parts`` non-negative counts."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def exact_agreement_coverage(
    design: AgreementDesign, statistic: str, tasks: int, floor: float = 1e-12
) -> ExactCoverage:
    """The exact coverage of :func:`benchkit.agreement.jackknife_interval` for ``tasks``
    one-cell tasks: every table of counts is enumerated and weighted by its multinomial
    probability, so there is no simulation error. A sample's interval depends only on its
    counts, and so does each leave-out, which is memoised on them. Samples rarer than
    ``floor`` are skipped (their total is ``dropped``). Practical for pass/fail tables
    (four kinds of pair: 23,426 tables at 50 tasks)."""
    from benchkit import agreement

    truth = design.truth(statistic)
    raw = agreement_statistic(statistic, design.levels)
    kinds = list(design.table)
    seen: dict[tuple[int, ...], float | None] = {}

    def compute(sample: Sequence[tuple[float, float]]) -> float | None:
        counts = Counter(sample)
        key = tuple(counts[kind] for kind in kinds)
        if key not in seen:
            seen[key] = raw(list(sample))
        return seen[key]

    chance = agreement_chance(statistic, design.levels)
    logs = [math.log(design.table[kind]) for kind in kinds]
    covered = above = below = none = dropped = 0.0
    for counts in _compositions(tasks, len(kinds)):
        log_p = math.lgamma(tasks + 1) + math.fsum(
            k * lp - math.lgamma(k + 1) for k, lp in zip(counts, logs, strict=True)
        )
        p = math.exp(log_p)
        if p < floor:
            dropped += p
            continue
        sample = [kind for kind, k in zip(kinds, counts, strict=True) for _ in range(k)]
        iv = agreement.jackknife_interval(sample, range(tasks), compute, chance=chance)
        if iv is None:
            none += p
        elif iv.low <= truth <= iv.high:
            covered += p
        elif truth < iv.low:
            above += p
        else:
            below += p
    shown = covered + above + below
    return ExactCoverage(covered / shown, above / shown, below / shown, none, dropped)


def corrected_coverage(
    tasks: int,
    rated: int,
    runs: int,
    seed: int,
    prevalence: float = 0.4,
    se: float = 0.85,
    sp: float = 0.9,
) -> tuple[Coverage, list[str]]:
    """Simulate ``runs`` judged runs of ``tasks`` one-cell tasks, ``rated`` of them rated by
    people, through :func:`benchkit.judges.judge_report`; count how often the corrected
    pass rate's interval holds the true pass rate, and collect the notes of runs with
    none."""
    from benchkit.judges import judge_report
    from benchkit.results import Score

    rng = random.Random(seed)
    covered = missing = 0
    width = 0.0
    notes: list[str] = []
    for _ in range(runs):
        cells, ratings = [], {}
        for i in range(tasks):
            human = rng.random() < prevalence
            judge = (rng.random() < se) if human else (rng.random() >= sp)
            cell = CellResult(f"t{i}", "a", 0, "pass", scores=(Score("j", float(judge), judge),))
            cells.append(cell)
            if i < rated:
                ratings[cell.key] = human
        (h,) = judge_report(cells, ratings).humans
        (rate,) = h.pass_rates
        if rate.interval is None:
            missing += 1
            notes.append(rate.note)
            continue
        covered += rate.interval.low <= prevalence <= rate.interval.high
        width += rate.interval.high - rate.interval.low
    return Coverage(runs, covered, missing, width / max(1, runs - missing)), notes
