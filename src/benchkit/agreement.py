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
* :func:`task_bootstrap` — a percentile interval for any of them that resamples whole
  tasks, so epochs and conditions of one task never count as independent evidence.

Each statistic returns ``None`` where it is undefined (every rating the same, so there is
no disagreement a chance model could explain) — never NaN.

    >>> cohen_kappa([True, True, False, False], [True, False, False, False])
    0.5
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Literal, TypeVar

from benchkit.errors import StatsError
from benchkit.stats import Interval, _level, _rank_index

__all__ = [
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "rogan_gladen",
    "spearman_rho",
    "task_bootstrap",
    "weighted_kappa",
]

_T = TypeVar("_T")


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
    a: Sequence[float],
    b: Sequence[float],
    *,
    weights: Literal["linear", "quadratic"] = "quadratic",
    categories: Sequence[float] | None = None,
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
    category throughout).

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
    leave [0, 1] by chance, so reports clip it. A :class:`StatsError` when
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

    ``tasks[i]`` is item ``i``'s task: each resample draws as many tasks as there are, with
    replacement, and keeps every item of each drawn task, so the items of one task (its
    epochs, its conditions) move together. Resamples where the statistic is undefined
    (None) are skipped; None when more than ``(1 - level) / 2`` of them were — the
    interval would then rest on the resamples that happened to be defined. ``n`` is the
    number of tasks.
    """
    lvl = _level("task_bootstrap", level)
    if len(items) != len(tasks):
        raise StatsError(
            f"task_bootstrap: {len(items)} items but {len(tasks)} task labels",
            fix="pass one task label per item",
        )
    if resamples < 1:
        raise StatsError(
            f"task_bootstrap: resamples={resamples} must be at least 1",
            fix="use the default resamples=1000",
        )
    groups: dict[Hashable, list[_T]] = {}
    for item, task in zip(items, tasks, strict=True):
        groups.setdefault(task, []).append(item)
    units = list(groups.values())
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
