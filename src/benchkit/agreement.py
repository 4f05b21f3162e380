"""Agreement statistics: how far a judge can be trusted, against people and other judges.

LLM judges decide most scores, so their own error is part of every number they produce.
These are the pure functions behind :meth:`benchkit.RunResult.judge_report`
(:mod:`benchkit.judges`), in the style of :mod:`benchkit.stats` — standard library only,
seeded, and loud on bad input:

* :func:`cohen_kappa` — chance-corrected agreement of two raters on categories (pass/fail);
* :func:`weighted_kappa` — the same for ordered categories (scores on a scale), with
  linear or quadratic disagreement weights;
* :func:`spearman_rho` — rank correlation of two raters' scores (average ranks for ties);
* :func:`fleiss_kappa` — agreement of three or more raters per item;
* :func:`krippendorff_alpha` — agreement of any number of raters with missing ratings,
  nominal, ordinal or interval;
* :func:`rogan_gladen` — a pass rate corrected for the judge's sensitivity and specificity;
* :func:`jackknife_interval` — the interval reports give any of them: a score interval
  (Wilson's, carried over) on the pseudo-values of a jackknife over whole tasks, which
  lets tasks rated at chance lower it (so a judge's rare far misses count even where a
  sample happened to show none) and covers 94-98 % from :data:`MIN_TASKS` tasks up on the
  tables ``perf/stats_montecarlo.py --judges`` simulates; epochs and conditions of one
  task never count as independent evidence;
* :func:`task_bootstrap` — a percentile bootstrap over tasks, kept for comparison: it
  covers 92 % at 20 tasks.

Each statistic returns ``None`` where it is undefined (every rating the same, so there is
no disagreement a chance model could explain) — never NaN.

    >>> cohen_kappa([True, True, False, False], [True, False, False, False])
    0.5
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Literal, TypeVar

from benchkit.errors import StatsError
from benchkit.stats import Interval, _level, _rank_index, _wilson_fraction, t_quantile

__all__ = [
    "JACKKNIFE_GROUPS",
    "MIN_TASKS",
    "chance_disagreement",
    "cohen_kappa",
    "corrected_rate_interval",
    "fleiss_kappa",
    "jackknife_interval",
    "krippendorff_alpha",
    "rogan_gladen",
    "spearman_rho",
    "task_bootstrap",
    "weighted_kappa",
]

_T = TypeVar("_T")

#: The fewest tasks an agreement interval is given for. Below it no method benchkit tried
#: covers near 95 % on every table (the jackknife covers 88-94 % at 10-15 tasks on
#: skewed binary tables): reports say so instead of printing an interval.
MIN_TASKS = 20
#: Above this many tasks :func:`jackknife_interval` leaves out groups of tasks rather than
#: one task at a time, so its cost stays near this many evaluations of the statistic
#: (the grouped jackknife's standard error is as good once there are tens of groups).
JACKKNIFE_GROUPS = 50
#: The count :func:`corrected_rate_interval` adds to each cell of the confusion matrix, so a
#: judge's error rate never sits at exactly 0 (the maximum stays inside (0, 1)). A tenth of
#: a count, not Jeffreys' half: with 10-12 rated cells the half count pulled Se and Sp
#: towards 0.5 enough to cover 97-99 % by simulation; a tenth covers 94-98 %
#: (docs/statistics.md).
_PRIOR_COUNT = 0.1
#: Fixed-point steps from t(df) to the Satterthwaite degrees of freedom at a score bound,
#: and the degrees of freedom taken as the normal's (:func:`_score_bounds`).
_SATTERTHWAITE_STEPS = 4
_MAX_DF = 1e6
#: Statistics are kept this far inside (-1, 1) before ``atanh``.
_EDGE = 1e-9


def _same_length(func: str, a: Sequence[object], b: Sequence[object]) -> int:
    if len(a) != len(b):
        raise StatsError(
            f"{func}: the first rater has {len(a)} ratings but the second has {len(b)}",
            fix="pass one rating per item from each rater, in the same item order",
        )
    if not a:
        raise StatsError(f"{func}: no ratings", fix="pass at least one rated item")
    return len(a)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' categories: ``(p_o - p_e) / (1 - p_e)``.

    ``p_o`` is the share of items both put in the same category, ``p_e`` the share
    expected by chance from each rater's own category frequencies. None when ``p_e`` is 1
    (both raters used one and the same category throughout: agreement is certain and says
    nothing).

        >>> cohen_kappa(["a", "b", "a", "b"], ["a", "b", "b", "b"])
        0.5
    """
    n = _same_length("cohen_kappa", a, b)
    agree = sum(1 for x, y in zip(a, b, strict=True) if x == y)
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[k] * cb.get(k, 0) for k in ca) / (n * n)
    if p_e >= 1.0 - 1e-12:
        return None
    return (agree / n - p_e) / (1.0 - p_e)


def weighted_kappa(
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    weights: Literal["linear", "quadratic"] = "quadratic",
    categories: Sequence[Any] | None = None,
    distance: Literal["values", "ranks"] = "values",
) -> float | None:
    """Weighted kappa of two raters' ordered ratings: ``1 - Σ w·o / Σ w·e``.

    The categories are ``categories`` (in order) or the sorted distinct values both raters
    used. Two ratings ``x`` and ``y`` disagree by ``|x - y| / (max - min)`` — the distance
    of the score values on the scale the categories span (``distance="values"``, the
    default: 0.1 and 0.2 are closer than 0.2 and 1.0) — or by ``|i - j| / (k - 1)`` for
    category ranks ``i`` and ``j`` of ``k`` (``distance="ranks"``: equally spaced levels,
    what scikit-learn's ``cohen_kappa_score`` computes). The weight is that distance
    (``linear``) or its square (``quadratic``, the default: Cohen 1968, equal to the
    intraclass correlation for large n). ``o`` is the observed joint distribution, ``e``
    the product of the marginals. None when there is no expected disagreement (one
    category throughout). Ratings are numbers, or with ``distance="ranks"`` any labels
    that sort in their order (hence ``Any``).

        >>> round(weighted_kappa([1, 2, 3, 3], [1, 2, 2, 3]), 4)
        0.8
        >>> round(weighted_kappa([0, 0.1, 1, 1], [0, 0.1, 0.1, 1]), 4)
        0.5424
        >>> round(weighted_kappa([0, 0.1, 1, 1], [0, 0.1, 0.1, 1], distance="ranks"), 4)
        0.8

    .. versionchanged:: 0.2.0
       Weights follow the score values' distances; ``distance="ranks"`` gives the former
       equally spaced weights.
    """
    n = _same_length("weighted_kappa", a, b)
    if weights not in ("linear", "quadratic"):
        raise StatsError(
            f"weighted_kappa: weights={weights!r} is not linear or quadratic",
            fix="pass weights='quadratic' (the usual) or 'linear'",
        )
    if distance not in ("values", "ranks"):
        raise StatsError(
            f"weighted_kappa: distance={distance!r} is not values or ranks",
            fix="pass distance='values' (score distances) or 'ranks' (equally spaced levels)",
        )
    levels = sorted(set(a) | set(b)) if categories is None else list(categories)
    index = {v: i for i, v in enumerate(levels)}
    for name, side in (("a", a), ("b", b)):
        for v in side:
            if v not in index:
                raise StatsError(
                    f"weighted_kappa: {name} has the value {v!r}, not among the categories",
                    fix="list every value the raters used in categories=, in order",
                )
    k = len(levels)
    if k < 2:
        return None
    power = 2 if weights == "quadratic" else 1
    if distance == "ranks":
        position = [i / (k - 1) for i in range(k)]
    else:
        for v in levels:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise StatsError(
                    f"weighted_kappa: the category {v!r} is not a finite number, so it has "
                    "no distance to the others",
                    fix="pass numeric scores, or distance='ranks' for ordered labels",
                )
        low, high = min(levels), max(levels)
        if high == low:
            return None
        position = [(float(v) - low) / (high - low) for v in levels]

    def w(i: int, j: int) -> float:
        return abs(position[i] - position[j]) ** power

    ia = [index[v] for v in a]
    ib = [index[v] for v in b]
    observed = math.fsum(w(i, j) for i, j in zip(ia, ib, strict=True)) / n
    ma, mb = Counter(ia), Counter(ib)
    expected = math.fsum(ma[i] * mb[j] * w(i, j) for i in ma for j in mb) / (n * n)
    if expected <= 1e-15:
        return None
    return 1.0 - observed / expected


def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given the average of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for m in range(i, j + 1):
            ranks[order[m]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman_rho(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation: Pearson's correlation of the (tie-averaged) ranks.

    None when either rater gave every item the same score (no ranking to correlate).

        >>> spearman_rho([0.1, 0.4, 0.9], [1, 2, 3])
        1.0
    """
    _same_length("spearman_rho", a, b)
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = math.fsum(ra) / len(ra), math.fsum(rb) / len(rb)
    sab = math.fsum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    saa = math.fsum((x - ma) ** 2 for x in ra)
    sbb = math.fsum((y - mb) ** 2 for y in rb)
    if saa == 0.0 or sbb == 0.0:
        return None
    return max(-1.0, min(1.0, sab / math.sqrt(saa * sbb)))


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa: agreement of ``m`` raters per item (the same ``m`` for every item).

    ``ratings[i]`` holds the categories the raters gave item ``i``. ``P̄`` is the mean
    share of agreeing rater pairs per item, ``P̄_e`` the chance share from the overall
    category frequencies; kappa is ``(P̄ - P̄_e) / (1 - P̄_e)`` (Fleiss 1971; with two raters
    it is Scott's pi). None when every rating is one category.

        >>> round(fleiss_kappa([["y", "y", "y"], ["n", "n", "n"], ["y", "n", "y"]]), 4)
        0.55
    """
    if not ratings:
        raise StatsError("fleiss_kappa: no items", fix="pass at least one rated item")
    m = len(ratings[0])
    if m < 2 or any(len(r) != m for r in ratings):
        raise StatsError(
            f"fleiss_kappa: every item needs the same number (>= 2) of ratings; the first has {m}",
            fix="pass only items every rater rated (or use krippendorff_alpha for gaps)",
        )
    n = len(ratings)
    totals: Counter[Hashable] = Counter()
    p_sum = 0.0
    for item in ratings:
        counts = Counter(item)
        totals.update(counts)
        p_sum += (sum(c * c for c in counts.values()) - m) / (m * (m - 1))
    p_bar = p_sum / n
    p_e = sum((c / (n * m)) ** 2 for c in totals.values())
    if p_e >= 1.0 - 1e-12:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


def krippendorff_alpha(
    units: Sequence[Sequence[float | Hashable | None]],
    *,
    level: Literal["nominal", "ordinal", "interval"] = "nominal",
) -> float | None:
    """Krippendorff's alpha: ``1 - (n - 1) · D_o / D_e`` over the pairable values.

    ``units[u]`` holds the values the raters gave unit ``u`` (None where a rater gave
    none); units with fewer than two values cannot be paired and are left out. The
    disagreement of two values is 0/1 (``nominal``), their squared difference
    (``interval``) or the squared count of values between them (``ordinal``). Works for
    any number of raters and missing ratings (Krippendorff 2011). None when all pairable
    values are equal (no expected disagreement) or no unit has two values to pair; a
    single pairable unit gives a value (its values' disagreement against their own
    spread), though one unit says little.

        >>> krippendorff_alpha([[1, 1], [0, 0], [1, 0], [0, 0]])
        0.5333333333333333
    """
    if level not in ("nominal", "ordinal", "interval"):
        raise StatsError(
            f"krippendorff_alpha: level={level!r} is not nominal, ordinal or interval",
            fix="pass level='nominal' for categories, 'interval' for scores",
        )
    pairable = [[v for v in u if v is not None] for u in units]
    pairable = [u for u in pairable if len(u) >= 2]
    if len(pairable) < 1:
        return None
    n = sum(len(u) for u in pairable)
    if level == "interval":
        for u in pairable:
            for v in u:
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                    raise StatsError(
                        f"krippendorff_alpha: {v!r} is not a finite number",
                        fix="use level='nominal' for categories",
                    )
        # Σ_{i≠j} (x_i - x_j)² = 2 m Σx² - 2 (Σx)² within a unit and over all values.
        observed = 0.0
        for u in pairable:
            xs = [float(v) for v in u]  # type: ignore[arg-type]
            s, s2, m = math.fsum(xs), math.fsum(x * x for x in xs), len(xs)
            observed += (2 * m * s2 - 2 * s * s) / (m - 1)
        allx = [float(v) for u in pairable for v in u]  # type: ignore[arg-type]
        s, s2 = math.fsum(allx), math.fsum(x * x for x in allx)
        expected = 2 * n * s2 - 2 * s * s
    else:
        coincidence: dict[tuple[Hashable, Hashable], float] = {}
        for u in pairable:
            if len(u) == 2:  # two raters, the usual case: one pair each way
                first, second = u
                coincidence[(first, second)] = coincidence.get((first, second), 0.0) + 1.0
                coincidence[(second, first)] = coincidence.get((second, first), 0.0) + 1.0
                continue
            counts = Counter(u)
            m = len(u)
            for c, nc in counts.items():
                for k, nk in counts.items():
                    pairs = nc * (nc - 1) if c == k else nc * nk
                    if pairs:
                        coincidence[(c, k)] = coincidence.get((c, k), 0.0) + pairs / (m - 1)
        marginal: dict[Hashable, float] = {}
        for (c, _), o in coincidence.items():
            marginal[c] = marginal.get(c, 0.0) + o
        if level == "nominal":
            observed = math.fsum(o for (c, k), o in coincidence.items() if c != k)
            expected = n * n - math.fsum(v * v for v in marginal.values())
        else:
            order = sorted(marginal)  # type: ignore[type-var]
            cum: dict[Hashable, float] = {}
            running = 0.0
            for c in order:
                cum[c] = running  # sum of marginals strictly below c
                running += marginal[c]

            def delta(c: Hashable, k: Hashable) -> float:
                lo, hi = (c, k) if cum[c] <= cum[k] else (k, c)
                between = cum[hi] + marginal[hi] - cum[lo]  # n_lo + ... + n_hi
                return (between - (marginal[lo] + marginal[hi]) / 2.0) ** 2

            observed = math.fsum(o * delta(c, k) for (c, k), o in coincidence.items())
            expected = math.fsum(
                marginal[c] * marginal[k] * delta(c, k) for c in order for k in order
            )
    if expected <= 1e-15 * max(1.0, n * n):
        return None
    return 1.0 - (n - 1) * observed / expected


def rogan_gladen(observed: float, sensitivity: float, specificity: float) -> float:
    """The true pass rate behind an observed one, given the judge's error rates.

    A judge that passes a truly passing answer with probability ``sensitivity`` and fails a
    truly failing one with probability ``specificity`` shows a pass rate of
    ``π·Se + (1 - π)(1 - Sp)``; solving for π gives Rogan and Gladen's (1978) estimator
    ``(observed + Sp - 1) / (Se + Sp - 1)``. Unbiased when Se and Sp are known; it can
    leave [0, 1] by chance, so reports clip it, and the clipped value is biased towards
    the middle when the true rate is near 0 or 1. A :class:`StatsError` when
    ``Se + Sp <= 1``: such a judge is no better than a coin and nothing can be corrected.

        >>> round(rogan_gladen(0.62, sensitivity=0.9, specificity=0.8), 4)
        0.6
    """
    for name, v in (
        ("observed", observed),
        ("sensitivity", sensitivity),
        ("specificity", specificity),
    ):
        if not 0.0 <= v <= 1.0:  # also false for NaN
            raise StatsError(
                f"rogan_gladen: {name}={v!r} must be a rate in [0, 1]",
                fix="pass shares, not percentages",
            )
    informative = sensitivity + specificity - 1.0
    if informative <= 0.0:
        raise StatsError(
            f"rogan_gladen: sensitivity {sensitivity:g} + specificity {specificity:g} <= 1: "
            "the judge is no better than chance",
            fix="measure a better judge (its verdicts carry no information to correct)",
        )
    return (observed + specificity - 1.0) / informative


def _profile(pi: float, counts: tuple[float, ...], start: list[float]) -> float:
    """The log-likelihood of the true pass rate ``pi`` maximised over the judge's
    sensitivity and specificity (Se + Sp > 1); ``start`` holds where to begin and gets
    where the maximum is (the next ``pi`` starts there)."""
    x, n, tp, fn, tn, fp = counts
    se, sp = start
    eps = 1e-9

    def loglik(se: float, sp: float) -> float:
        q = pi * se + (1.0 - pi) * (1.0 - sp)
        out = 0.0
        for k, v in ((x, q), (n - x, 1.0 - q), (tp, se), (fn, 1.0 - se), (tn, sp), (fp, 1.0 - sp)):
            if k:
                out += k * math.log(v)
        return out

    def inside(se: float, sp: float) -> bool:
        return eps <= se <= 1.0 - eps and eps <= sp <= 1.0 - eps and se + sp >= 1.0 + eps

    # Newton's method on (Se, Sp): for a fixed pi, q is linear in them, so the
    # log-likelihood is concave and each damped step climbs to the one maximum
    current = loglik(se, sp)
    for _ in range(100):
        q = pi * se + (1.0 - pi) * (1.0 - sp)
        a = x / q - (n - x) / (1.0 - q)
        b = -(x / q**2 + (n - x) / (1.0 - q) ** 2)
        g1 = a * pi + tp / se - fn / (1.0 - se)
        g2 = -a * (1.0 - pi) + tn / sp - fp / (1.0 - sp)
        h11 = b * pi * pi - tp / se**2 - fn / (1.0 - se) ** 2
        h22 = b * (1.0 - pi) ** 2 - tn / sp**2 - fp / (1.0 - sp) ** 2
        h12 = -b * pi * (1.0 - pi)
        det = h11 * h22 - h12 * h12
        if det > 0.0 and h11 < 0.0:
            d1 = -(h22 * g1 - h12 * g2) / det
            d2 = -(h11 * g2 - h12 * g1) / det
        else:  # flat: climb the gradient
            d1, d2 = g1 * 1e-3, g2 * 1e-3
        step = 1.0
        while step > 1e-12:
            n1, n2 = se + step * d1, sp + step * d2
            n1 = min(1.0 - eps, max(eps, n1))
            n2 = min(1.0 - eps, max(eps, n2))
            if n1 + n2 < 1.0 + eps:  # onto the edge Se + Sp = 1, along the step
                shift = (1.0 + eps - n1 - n2) / 2.0
                n1, n2 = n1 + shift, n2 + shift
            if inside(n1, n2):
                value = loglik(n1, n2)
                if value >= current - 1e-12:
                    break
            step /= 2.0
        else:
            break
        moved = abs(n1 - se) + abs(n2 - sp)
        se, sp, current = n1, n2, max(current, value)
        if moved < 1e-11:
            break
    start[0], start[1] = se, sp
    return current


def corrected_rate_interval(
    judged_passed: float,
    judged: float,
    rated_passed: float,
    rated_failed: float,
    confusion: tuple[float, float, float, float],
    *,
    level: float = 0.95,
    df: int | None = None,
) -> tuple[float, float] | None:
    """A profile-likelihood interval for a condition's true pass rate π when a judge with
    unknown sensitivity and specificity scored every cell and people rated some of them.

    The model behind the Rogan-Gladen correction, with everything measured: of the
    condition's cells people did not rate, the judge passed ``judged_passed`` of
    ``judged``, each with probability ``q = π·Se + (1 - π)(1 - Sp)``; people passed
    ``rated_passed`` and failed ``rated_failed`` of the condition's rated cells (each a
    pass with probability π); and ``confusion`` is ``(judge pass / human pass, judge fail /
    human pass, judge fail / human fail, judge pass / human fail)`` over every rated cell
    (which measures Se and Sp). The interval holds the π whose likelihood, maximised over
    Se and Sp with Se + Sp > 1 (a tenth of a count added to each cell of ``confusion``, so
    an error rate never sits at exactly 0), is within ``z² / 2`` of the best
    (Wilks): it carries the
    uncertainty of the error rates as well as the rate's, stays inside [0, 1] and never
    collapses to a point. Counts may be fractional (effective sizes, for correlated
    epochs); when they are, their design effect was estimated from the tasks, and ``df``
    (tasks - 1) puts Student's t² on ``df`` degrees of freedom in place of ``z²`` in the
    cut, as a t interval does for a variance estimated from that many units. None when no
    rated cell passed or none failed (Se or Sp is unmeasured).

    .. versionadded:: 0.2.0
    """
    lvl = _level("corrected_rate_interval", level)
    tp, fn, tn, fp = confusion
    if tp + fn <= 0 or tn + fp <= 0:
        return None
    # a little in each cell of the confusion matrix: keeps the maximum inside (0, 1) when
    # every rated pass was judged a pass
    c = _PRIOR_COUNT
    counts = (judged_passed, judged, tp + c, fn + c, tn + c, fp + c)
    start = [(tp + c) / (tp + fn + 2 * c), (tn + c) / (tn + fp + 2 * c)]
    if start[0] + start[1] <= 1.0 + 1e-6:
        start = [0.75, 0.75]

    def profile(pi: float) -> float:
        return _profile(pi, counts, start) + (
            (rated_passed * math.log(pi) if rated_passed else 0.0)
            + (rated_failed * math.log1p(-pi) if rated_failed else 0.0)
        )

    # the most likely pi (golden-section search: the profile is unimodal in pi)
    lo, hi = 1e-9, 1.0 - 1e-9
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = profile(a), profile(b)
    for _ in range(60):
        if fa < fb:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = profile(b)
        else:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = profile(a)
    best_pi = (lo + hi) / 2.0
    upper = 1.0 - (1.0 - lvl) / 2.0
    quantile = statistics.NormalDist().inv_cdf(upper) if df is None else t_quantile(upper, df)
    cut = profile(best_pi) - quantile**2 / 2.0

    def edge(inside: float, outside: float) -> float:
        if profile(outside) >= cut:
            return 0.0 if outside < inside else 1.0
        for _ in range(50):
            mid = (inside + outside) / 2.0
            if profile(mid) >= cut:
                inside = mid
            else:
                outside = mid
        return inside

    return edge(best_pi, 1e-9), edge(best_pi, 1.0 - 1e-9)


def _task_units(
    func: str, items: Sequence[_T], tasks: Sequence[Hashable], level: float
) -> tuple[float, list[list[_T]]]:
    """The checked ``level`` and ``items`` grouped by task (``tasks[i]`` is item ``i``'s
    task; groups in the order their tasks first appear): the unit the task-level
    intervals leave out or resample, so a task's epochs and conditions move together."""
    lvl = _level(func, level)
    if len(items) != len(tasks):
        raise StatsError(
            f"{func}: {len(items)} items but {len(tasks)} task labels",
            fix="pass one task label per item",
        )
    units: dict[Hashable, list[_T]] = {}
    for item, task in zip(items, tasks, strict=True):
        units.setdefault(task, []).append(item)
    return lvl, list(units.values())


def jackknife_interval(
    items: Sequence[_T],
    tasks: Sequence[Hashable],
    statistic: Callable[[Sequence[_T]], float | None],
    *,
    level: float = 0.95,
    chance: Callable[[Sequence[_T]], float | tuple[float, float]] | None = None,
    groups: int = JACKKNIFE_GROUPS,
    seed: int = 0,
) -> Interval | None:
    """An interval for an agreement statistic in [-1, 1] (a kappa, an alpha, a
    correlation) from the jackknife over whole tasks.

    Each task in turn is left out (``tasks[i]`` is item ``i``'s task, so its epochs and
    conditions leave together; beyond ``groups`` tasks, seeded groups of tasks) and the
    statistic is recomputed; ``G`` tasks give ``G`` pseudo-values
    ``G·value - (G - 1)·left_out``, whose spread is the statistic's spread per task.

    With ``chance`` (the disagreement two ratings drawn independently from the pooled
    ratings would show, on the statistic's 0-1 scale, or for ratings on a scale that and
    the mean of its square: :func:`chance_disagreement` with ``power=2``) the interval is
    Wilson's score interval carried over to the pseudo-values (method
    ``jackknife_score``): a value ``k`` is inside when
    ``(value - k)² <= q² · V(k) / G``, where ``V(k)`` is the spread per task the
    pseudo-values would have if ``k`` were the truth — the observed tasks mixed with
    more errors (below the value) or with tasks in perfect agreement (pseudo-value 1;
    above it), in the share that moves the mean to ``k``, and ``q`` is Student's t on
    Satterthwaite's degrees of freedom for the part of ``V(k)`` the tasks estimate
    (``G - 1`` near the value, towards the normal's where assumed tasks dominate). The
    errors mixed in are the judge's own: the tasks whose pseudo-value is below the value,
    pooled with ``z²`` (3.84 at 95 %) tasks rated at chance (pseudo-value ``1 - u /
    chance`` for a chance disagreement ``u``), the errors a sample may not have shown —
    a judge's rare far miss on a score scale, which a sample of 50 tasks often lacks
    although it carries half the disagreement (there a symmetric interval on the
    jackknife's spread covered 91-94 %, every miss on the same side). Beyond ``groups``
    tasks a pseudo-value is a group's, not an error's, and the errors mixed in are
    chance-rated tasks only. For a pass rate (pseudo-values 0 and 1, chance at 0) it has
    the form of Wilson's interval. It stays inside [-1, 1] and reaches 1 only when every
    rating agrees. Exactly (every table enumerated) it covers 94.4-97.6 % for pass/fail
    tables of 20 and 50 tasks; by simulation 94-98 % for pass/fail and score tables from
    :data:`MIN_TASKS` to 200 tasks (docs/statistics.md has the tables).

    Without ``chance`` (a rank correlation) the interval is ``tanh(atanh(value) ± t(G - 1)
    · se)`` on the jackknife's standard error of ``atanh`` (method ``jackknife_atanh_t``):
    Fisher's scale keeps it inside [-1, 1]; when one task holds every disagreement
    (leaving it out gives 1, which that scale cannot spread) the statistic is
    ``1 - s · G · (1 - value)`` for a share ``s`` of such tasks, bounded by Wilson's
    interval for 1 of ``G`` (method ``one_disagreement``).

    None when the statistic is undefined on the data or on a leave-out, there are fewer
    than two tasks, or (without ``chance``) the leave-outs do not spread. ``n`` is the
    number of tasks.

    .. versionadded:: 0.2.0
    """
    lvl, units = _task_units("jackknife_interval", items, tasks, level)
    if groups < 2:
        raise StatsError(
            f"jackknife_interval: groups={groups} must be at least 2",
            fix="use the default groups=50",
        )
    g_tasks = len(units)
    value = statistic(items) if g_tasks >= 2 else None
    if value is None:
        return None
    if g_tasks <= groups:
        group_of = list(range(g_tasks))
        g = g_tasks
    else:
        order = list(range(g_tasks))
        random.Random(seed).shuffle(order)
        group_of = [0] * g_tasks
        for rank, index in enumerate(order):
            group_of[index] = rank % groups
        g = groups
    values: list[float] = []
    for left_out in range(g):
        found = statistic(
            [
                x
                for unit, group in zip(units, group_of, strict=True)
                if group != left_out
                for x in unit
            ]
        )
        if found is None:
            return None
        values.append(found)
    expected, square = _chance_moments(chance, items)
    if expected > 0.0:
        pseudo = [g * value - (g - 1) * v for v in values]
        mean = math.fsum(pseudo) / g
        # the spread of a task's pseudo-value: a group of G / g tasks spreads G / g times less
        per_task = math.fsum((p - mean) ** 2 for p in pseudo) / (g - 1) * g_tasks / g
        # a chance-rated task's cells are rated independently, each with pseudo-value
        # 1 - u / expected (mean 0, mean square Var(u) / expected²)
        chance_square = max(0.0, square - expected * expected) / expected**2
        chance_square /= len(items) / g_tasks
        # one pseudo-value a task: the tasks that pull the value down are its errors
        errors = [p for p in pseudo if p < value] if g == g_tasks else []
        low, high = _score_bounds(
            value, per_task, chance_square, g_tasks, g - 1, lvl, errors=errors
        )
        return Interval(low, high, lvl, "jackknife_score", g_tasks)
    if value >= 1.0 - 1e-12:  # every rating agreed and no chance term: nothing to spread
        return None
    if g == g_tasks and max(values) >= 1.0 - 1e-12:
        # one task holds every disagreement: leaving it out gives 1, which Fisher's scale
        # cannot spread. The statistic is 1 - (share of such tasks) * G * (1 - value);
        # bound the share by Wilson's interval for 1 of G.
        z = statistics.NormalDist().inv_cdf(1.0 - (1.0 - lvl) / 2.0)
        low_share, high_share = _wilson_fraction(1.0 / g_tasks, g_tasks, z)
        lost = g_tasks * (1.0 - value)
        return Interval(
            max(-1.0, 1.0 - high_share * lost),
            1.0 - low_share * lost,
            lvl,
            "one_disagreement",
            g_tasks,
        )
    replicates = [math.atanh(min(1.0 - _EDGE, max(-1.0 + _EDGE, v))) for v in values]
    mean = math.fsum(replicates) / g
    spread = math.fsum((r - mean) ** 2 for r in replicates)
    if spread <= 1e-24:
        return None
    centre = math.atanh(min(1.0 - _EDGE, max(-1.0 + _EDGE, value)))
    half = t_quantile(1.0 - (1.0 - lvl) / 2.0, g - 1) * math.sqrt((g - 1) / g * spread)
    return Interval(
        math.tanh(centre - half), math.tanh(centre + half), lvl, "jackknife_atanh_t", g_tasks
    )


def _score_bounds(
    value: float,
    per_task: float,
    chance_square: float,
    tasks: int,
    df: int,
    level: float,
    *,
    errors: Sequence[float] = (),
) -> tuple[float, float]:
    """The score interval of :func:`jackknife_interval`: the ``k`` with
    ``(value - k)² <= q² · V(k) / tasks``, ``V(k)`` the pseudo-values' spread per task when
    enough errors (below ``value``) or perfectly agreeing tasks (1; above it) are mixed
    in to move their mean to ``k``.

    Below: the errors are a profile — the ``errors`` (pseudo-values below the value)
    pooled with ``z²`` chance-rated tasks (mean 0, mean square ``chance_square``), of mean
    ``μ`` and mean square ``M``. A share ``s = (k - μ) / (value - μ)`` of observed tasks
    (mean square ``A = per_task + value²``) gives ``V(k) = s·A + (1 - s)·M - k²``, and the
    bound is the smaller root of ``(1 + c)k² - (2·value + c·D₁)k + value² - c·D₀``
    (``c = q² / tasks``, ``D₁ = (A - M) / (value - μ)``, ``D₀ = (M·value - A·μ) / (value -
    μ)``). Without errors the profile is chance alone (``μ = 0``, ``M`` = chance's ``C``).
    Past the profile's mean or 0 the errors are chance-rated tasks alone, and past chance
    (a bound below 0, or a value at or below 0) ``V`` stays at ``C`` (or the observed
    spread if that is larger). Above: a share ``s = (1 - k) / (1 - value)`` of observed
    tasks gives ``V(k) = s·A + 1 - s - k²``; its root lies between the value and 1.

    Only part of ``V`` is estimated from the tasks: ``s · per_task`` on ``df`` degrees of
    freedom and, below, the errors' own share of the profile on one fewer than there are
    errors; the rest follows from ``k``. So ``q`` is Student's t on Satterthwaite's
    degrees of freedom, ``V² / Σ part² / df_part``, at the bound (a few fixed-point steps
    from ``t(df)``): near the value, where the observed spread is all of ``V``, the t of
    ``df``; far from it, where assumed tasks are most of it, nearly the normal. With
    ``t(df)`` on both sides the lower bound never missed in 1000 simulated samples of 20
    pass/fail tasks (98.0 % covered in all); with this it misses 1.6 % of them, exactly
    (95.8 % in all).
    """
    square = per_task + value * value
    upper_p = 1.0 - (1.0 - level) / 2.0
    # the error profile: the sample's own errors and z² chance-rated tasks
    prior = statistics.NormalDist().inv_cdf(upper_p) ** 2
    own_square = math.fsum(e * e for e in errors) / (len(errors) + prior)
    profile_mean = math.fsum(errors) / (len(errors) + prior)
    profile_square = own_square + prior * chance_square / (len(errors) + prior)

    def observed(share: float) -> float:
        """Satterthwaite's denominator for the observed tasks' part of the spread."""
        return (share * per_task) ** 2 / df

    def toward(cut: float, mean: float, mix: float) -> tuple[float, float, float]:
        """The lower root when the observed tasks are mixed with tasks of ``mean`` and
        mean square ``mix``: the bound, the observed tasks' share there, and ``V``."""
        slope = (square - mix) / (value - mean)
        offset = (mix * value - square * mean) / (value - mean)
        low = _quadratic_root(
            1.0 + cut, -(2.0 * value + cut * slope), value * value - cut * offset, -1
        )
        share = (low - mean) / (value - mean)
        return low, share, share * square + (1.0 - share) * mix - low * low

    def below(q: float) -> tuple[float, float, float]:
        cut = q * q / tasks
        floor = max(profile_mean, 0.0)
        if errors and value > floor:
            low, share, spread = toward(cut, profile_mean, profile_square)
            if low >= floor:
                # the errors' own part of the profile is estimated too, on errors - 1 df
                n_own = len(errors) - 1
                own = ((1.0 - share) * own_square) ** 2 / n_own if n_own else 0.0
                return low, spread, observed(share) + own
        if value > 0.0:
            low, share, spread = toward(cut, 0.0, chance_square)
            if low >= 0.0:
                return low, spread, observed(share)
            return value - math.sqrt(cut * chance_square), chance_square, 0.0
        if per_task >= chance_square:
            return value - math.sqrt(cut * per_task), per_task, observed(1.0)
        return value - math.sqrt(cut * chance_square), chance_square, 0.0

    def above(q: float) -> tuple[float, float, float]:
        cut = q * q / tasks
        slope = (square - 1.0) / (1.0 - value)
        high = _quadratic_root(
            1.0 + cut, cut * slope - 2.0 * value, value * value - cut * (slope + 1.0), 1
        )
        share = (1.0 - high) / (1.0 - value)
        return high, share * square + 1.0 - share - high * high, observed(share)

    def solve(side: Callable[[float], tuple[float, float, float]]) -> float:
        bound, spread, estimated = side(t_quantile(upper_p, df))
        for _ in range(_SATTERTHWAITE_STEPS):
            dof = _MAX_DF if estimated <= 1e-30 else min(_MAX_DF, spread * spread / estimated)
            bound, spread, estimated = side(t_quantile(upper_p, dof))
        return bound

    low = solve(below)
    high = solve(above) if value < 1.0 - 1e-12 else 1.0
    return max(-1.0, low), min(1.0, high)


def _quadratic_root(a: float, b: float, c: float, sign: int) -> float:
    """The smaller (``sign`` -1) or larger (1) root of ``a·x² + b·x + c`` (``a > 0``);
    the callers' quadratics are negative at the value, so two real roots exist."""
    disc = math.sqrt(max(0.0, b * b - 4.0 * a * c))
    return (-b + sign * disc) / (2.0 * a)


def _chance_moments(
    chance: Callable[[Sequence[_T]], float | tuple[float, float]] | None, items: Sequence[_T]
) -> tuple[float, float]:
    """The chance disagreement and the mean of its square (the same for categories) of
    ``chance`` on ``items``; (0, 0) without ``chance``."""
    if chance is None:
        return 0.0, 0.0
    found = chance(items)
    if isinstance(found, tuple):
        return found
    return found, found


def chance_disagreement(
    values: Sequence[Hashable], scale: Sequence[float] | None = None, *, power: int = 1
) -> float:
    """How often two ratings drawn independently from ``values`` disagree: ``1 - Σ p²``
    for categories, or the mean squared distance ``Σ p_i p_j ((v_i - v_j) / range)²`` on
    ``scale`` (numeric ratings, the range of the scale): the denominator a kappa or alpha
    divides by, on a 0-1 scale. ``power=2`` gives the mean of that disagreement's square
    instead (the same for categories, where two ratings disagree by 0 or 1): with the
    mean, the spread of a chance-level task's disagreement, which
    :func:`jackknife_interval` uses.

        >>> chance_disagreement([True, True, False, False])
        0.5
        >>> chance_disagreement([0.0, 1.0], scale=[0.0, 1.0])
        0.5
        >>> chance_disagreement([0.0, 0.5, 1.0], scale=[0.0, 1.0], power=2)
        0.1944444444444444

    .. versionadded:: 0.2.0
    """
    if power not in (1, 2):
        raise StatsError(
            f"chance_disagreement: power={power!r} is not 1 or 2",
            fix="pass power=1 (the mean disagreement) or 2 (the mean of its square)",
        )
    n = len(values)
    if not n:
        return 0.0
    counts = Counter(values)
    if scale is None:
        return 1.0 - math.fsum((c / n) ** 2 for c in counts.values())
    low, high = min(scale), max(scale)
    if high <= low:
        return 0.0
    return math.fsum(
        (ci / n) * (cj / n) * ((float(vi) - float(vj)) / (high - low)) ** (2 * power)  # type: ignore[arg-type]
        for vi, ci in counts.items()
        for vj, cj in counts.items()
    )


def task_bootstrap(
    items: Sequence[_T],
    tasks: Sequence[Hashable],
    statistic: Callable[[Sequence[_T]], float | None],
    *,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> Interval | None:
    """Percentile interval of ``statistic(items)`` that resamples whole tasks, seeded.

    Kept for comparison and for statistics outside [-1, 1]: for a kappa or an alpha it is
    too narrow with few tasks (92 % coverage at 20 tasks, measured by
    ``perf/stats_montecarlo.py``); :func:`jackknife_interval` is what reports use.

    ``tasks[i]`` is item ``i``'s task: each resample draws as many tasks as there are, with
    replacement, and keeps every item of each drawn task, so the items of one task (its
    epochs, its conditions) move together. Resamples where the statistic is undefined
    (None) are skipped; None when more than ``(1 - level) / 2`` of them were — the
    interval would then rest on the resamples that happened to be defined. ``n`` is the
    number of tasks.
    """
    lvl, units = _task_units("task_bootstrap", items, tasks, level)
    if resamples < 1:
        raise StatsError(
            f"task_bootstrap: resamples={resamples} must be at least 1",
            fix="use the default resamples=1000",
        )
    g = len(units)
    if g < 2:
        return None
    rng = random.Random(seed)
    results: list[float] = []
    for _ in range(resamples):
        sample = [x for unit in rng.choices(units, k=g) for x in unit]
        value = statistic(sample)
        if value is not None:
            results.append(value)
    alpha = (1.0 - lvl) / 2.0
    if len(results) < resamples * (1.0 - alpha):
        return None
    results.sort()
    r = len(results)
    return Interval(
        results[_rank_index(alpha, r)],
        results[_rank_index(1.0 - alpha, r)],
        lvl,
        "task_bootstrap",
        g,
    )
