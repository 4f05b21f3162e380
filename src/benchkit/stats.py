"""Small, exact statistics for benchmark results.

Benchmark scores are only useful with an honest idea of their uncertainty, and the numbers
that papers report (pass@k, Wilson intervals, McNemar p-values) must be reproducible to the
last digit. This module implements those few statistics in pure Python (standard library
plus :mod:`attrs`, no numpy/scipy) so that:

* counting statistics are **exact**: :func:`pass_at_k` and :func:`mcnemar_exact` use
  integer arithmetic and round to ``float`` once, at the end, so large ``n`` neither
  overflows nor underflows;
* resampling statistics are **deterministic**: :func:`bootstrap_interval` and
  :func:`paired_comparison` draw from ``random.Random(seed)``, so the same inputs always give
  the same interval;
* bad input fails loudly: every invalid argument raises :class:`benchkit.errors.StatsError`
  naming the offending values and how to fix them, and no function returns NaN;
* the unit is explicit: :func:`clustered_interval`, :func:`paired_task_comparison` and
  :func:`variance_split` take cluster (task) labels, so epochs of one task — repeated
  measurements — never count as independent trials (docs/statistics.md explains each
  number, and tests/test_stats_montecarlo.py checks them by simulation).

Example::

    >>> iv = wilson_interval(8, 10, z=1.96)
    >>> round(iv.low, 4), round(iv.high, 4), iv.method
    (0.4902, 0.9433, 'wilson')
    >>> pass_at_k(n=10, c=3, k=1)
    0.3
"""

from __future__ import annotations

import bisect
import functools
import math
import operator
import random
import statistics
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction

import attrs

from benchkit.errors import StatsError

__all__ = [
    "BOOTSTRAP_MAX_N",
    "EXACT_MAX_CLUSTERS",
    "Interval",
    "PairedComparison",
    "VarianceSplit",
    "bootstrap_interval",
    "cluster_bootstrap_interval",
    "clustered_interval",
    "holm",
    "mcnemar_exact",
    "mean",
    "mean_interval",
    "normal_interval",
    "paired_comparison",
    "paired_task_comparison",
    "pass_at_k",
    "percentile",
    "sign_flip_exact",
    "t_cdf",
    "t_quantile",
    "variance_split",
    "weighted_mean",
    "wilson_interval",
]

# p * n closer than this (relative) to an integer is treated as that integer when ranking,
# so that e.g. p=0.1 of 10 values picks rank 1 even though 0.1 * 10 is not exactly 1.0 in
# every float computation (and (1 - 0.95) / 2 * 2000 is 50.00000000000004, not 50).
_RANK_EPS = 1e-9


@attrs.frozen
class Interval:
    """A confidence interval ``[low, high]`` at confidence ``level``, made by ``method``.

    ``method`` names the procedure: ``"wilson"`` (one epoch, pass/fail, tasks independent),
    ``"task_t"`` / ``"cluster_t"`` (cluster-robust interval across tasks or declared clusters
    with a Student-t quantile on ``n - 1`` degrees of freedom), ``"cluster_wilson"`` (every
    cluster had the same value, so the t interval would have zero width), ``"paired_t"`` /
    ``"paired_cluster_t"`` (the same for per-task differences), ``"paired_score"`` and
    ``"paired_sign_flip"`` (the intervals that invert McNemar's and the sign-flip test: see
    :func:`paired_task_comparison`), ``"bootstrap"`` /
    ``"cluster_bootstrap"`` and ``"paired_bootstrap"``. ``n`` is the number of independent
    units the interval rests on (tasks or clusters; None where the caller did not say).

        >>> Interval(0.25, 0.75, level=0.9, method="wilson").high
        0.75
    """

    low: float
    high: float
    level: float = 0.95
    method: str = ""
    n: int | None = None


@attrs.frozen
class PairedComparison:
    """Condition *b* versus condition *a* on the same items (tasks).

    ``delta`` is ``mean_b - mean_a``; ``interval`` is a paired interval for the mean
    per-item difference ``b[i] - a[i]``. The pass/fail counts are ``None`` unless the items
    are pass/fail: ``a_only`` counts items that passed under *a* and failed under *b*,
    ``b_only`` the reverse, ``both`` and ``neither`` the concordant items.

    ``p_value`` is the two-sided p-value of the test named by ``method``:
    ``"mcnemar_exact"`` (pass/fail items, each its own unit), ``"sign_flip_exact"`` (exact
    permutation test flipping the sign of each cluster's difference, for few clusters) or
    ``"paired_t"`` (Student t across clusters). ``mcnemar_p`` repeats it when the test was
    McNemar's. ``n_tasks`` items were paired in ``n_clusters`` independent clusters (equal
    unless the run declared ``cluster_by``). ``mde`` is the smallest true difference the
    test detects with probability ``power`` at level ``alpha`` for this run's size and
    spread (None when the differences have no spread to estimate it from).
    """

    n: int
    mean_a: float
    mean_b: float
    delta: float
    interval: Interval
    a_only: int | None
    b_only: int | None
    both: int | None
    neither: int | None
    mcnemar_p: float | None
    p_value: float | None = None
    method: str = ""
    n_tasks: int = 0
    n_clusters: int = 0
    mde: float | None = None
    alpha: float = 0.05
    power: float = 0.8

    def tasks_needed(self, effect: float) -> int | None:
        """About how many tasks (at this run's spread and cluster sizes) a test needs to
        detect a true difference of ``effect`` with probability ``power``.

        The minimum detectable effect shrinks with the square root of the number of
        independent units, so this is ``n_tasks * (mde / effect) ** 2`` rounded up; None
        when there is no ``mde`` or ``effect`` is 0.

            >>> r = PairedComparison(40, 0.5, 0.6, 0.1, Interval(0.0, 0.2), None, None, None,
            ...                      None, None, n_tasks=40, n_clusters=40, mde=0.12)
            >>> r.tasks_needed(0.06)
            160
        """
        if self.mde is None or effect == 0 or self.n_tasks == 0:
            return None
        return math.ceil(self.n_tasks * (self.mde / abs(effect)) ** 2 - 1e-9)


@attrs.frozen
class VarianceSplit:
    """Where a condition's uncertainty comes from, per :func:`variance_split`.

    ``between`` estimates the variance of the tasks' true means (what more *tasks* average
    away), ``within`` the variance of one cell around its task's mean (what more *epochs*
    average away; None with one epoch per task, when it cannot be told apart). ``se`` is the
    standard error of the condition's mean for ``tasks`` tasks of ``epochs`` epochs.
    """

    between: float
    within: float | None
    tasks: int
    epochs: float

    def se(self, tasks: int | None = None, epochs: float | None = None) -> float:
        """The standard error of the mean for ``tasks`` tasks x ``epochs`` epochs (this
        run's size by default): ``sqrt(between / tasks + within / (tasks * epochs))``."""
        t = self.tasks if tasks is None else tasks
        e = self.epochs if epochs is None else epochs
        if t <= 0 or e <= 0:
            raise StatsError(
                f"VarianceSplit.se: tasks={t} and epochs={e} must be positive",
                fix="ask about at least one task and one epoch",
            )
        within = self.within or 0.0
        return math.sqrt(self.between / t + within / (t * e))


# --------------------------------------------------------------------------- validation


def _count(func: str, name: str, value: object) -> int:
    """``value`` as an ``int`` if it is an integer (not a bool), else :class:`StatsError`."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)  # type: ignore[arg-type]
        except TypeError:
            pass
    raise StatsError(
        f"{func}: {name}={value!r} must be an integer, not {type(value).__name__}",
        fix=f"pass {name} as an int count (e.g. {name}=10)",
    )


def _level(func: str, level: object) -> float:
    """Validate a confidence level: a real number strictly between 0 and 1."""
    if isinstance(level, bool) or not isinstance(level, (int, float)):
        raise StatsError(
            f"{func}: level={level!r} must be a number, not {type(level).__name__}",
            fix="pass a confidence level such as level=0.95",
        )
    if not 0.0 < level < 1.0:  # also false for NaN
        raise StatsError(
            f"{func}: level={level!r} must be strictly between 0 and 1",
            fix="pass a confidence level such as level=0.95 (not 95)",
        )
    return float(level)


def _finite_values(func: str, values: Iterable[float], name: str = "values") -> list[float]:
    """``values`` as a non-empty list of finite floats, else :class:`StatsError`."""
    found = list(values)
    # The usual case at one C-speed pass each: every value a float and their sum finite
    # (so none is NaN or infinite). Anything else is checked value by value below.
    if found and all(type(v) is float for v in found) and math.isfinite(sum(found)):
        return found
    out: list[float] = []
    for i, v in enumerate(found):
        try:
            if isinstance(v, (str, bytes)):  # float("1.5") would parse; a str is a bug here
                raise TypeError
            f = float(v)
        except (TypeError, ValueError):
            raise StatsError(
                f"{func}: {name}[{i}]={v!r} is not a number",
                fix=f"pass only numbers in {name}",
            ) from None
        if not math.isfinite(f):
            raise StatsError(
                f"{func}: {name}[{i}]={v!r} is not finite",
                fix=f"drop or replace NaN/infinite entries of {name} before calling {func}",
            )
        out.append(f)
    if not out:
        raise StatsError(
            f"{func}: {name} is empty",
            fix=f"pass at least one value in {name}",
        )
    return out


def _fmean(values: list[float]) -> float:
    """Accurate mean of a non-empty list of finite floats (never overflows needlessly)."""
    n = len(values)
    try:
        return math.fsum(values) / n
    except OverflowError:  # the sum overflows although the mean may not
        return math.fsum(v / n for v in values)


def _rank_index(p: float, n: int) -> int:
    """0-based index of the nearest-rank ``p``-quantile among ``n`` sorted values."""
    k = p * n
    r = round(k)
    if abs(k - r) <= _RANK_EPS * max(1.0, k):
        k = r
    return min(max(math.ceil(k) - 1, 0), n - 1)


# --------------------------------------------------------------------------- point estimates


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean, computed with :func:`math.fsum` (so it is correctly rounded-ish).

    Raises :class:`StatsError` on empty input or non-finite values.

        >>> mean([1, 2, 3, 4])
        2.5
    """
    return _fmean(_finite_values("mean", values))


def weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    """``sum(w * v) / sum(w)``.

    Raises :class:`StatsError` if the lengths differ, the input is empty, a weight is
    negative or non-finite, or all weights are zero.

        >>> weighted_mean([1.0, 3.0], [3, 1])
        1.5
    """
    vs = _finite_values("weighted_mean", values)
    ws = _finite_values("weighted_mean", weights, "weights")
    if len(vs) != len(ws):
        raise StatsError(
            f"weighted_mean: {len(vs)} values but {len(ws)} weights",
            fix="pass exactly one weight per value",
        )
    for i, w in enumerate(ws):
        if w < 0:
            raise StatsError(
                f"weighted_mean: weights[{i}]={w!r} is negative",
                fix="use non-negative weights (0 excludes a value)",
            )
    total = math.fsum(ws)
    if total == 0:
        raise StatsError(
            f"weighted_mean: all {len(ws)} weights are zero",
            fix="give at least one value a positive weight",
        )
    result = math.fsum(w * v for w, v in zip(ws, vs, strict=True)) / total
    if not math.isfinite(result):
        raise StatsError(
            "weighted_mean: the weighted sum overflows a float",
            fix="rescale the values or weights",
        )
    return result


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile: ``sorted(values)[clamp(ceil(p * n) - 1, 0, n - 1)]``.

    ``p`` is a fraction in ``[0, 1]`` (not a percentage). The result is always an element of
    ``values``. When ``p * n`` lies within a relative 1e-9 of an integer it is taken as that
    integer, so float noise such as ``0.1 * 10 != 1`` never shifts the rank.

        >>> percentile(range(1, 11), 0.5), percentile(range(1, 11), 0.95)
        (5, 10)
    """
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise StatsError(
            f"percentile: p={p!r} must be a number in [0, 1]",
            fix="pass a fraction such as p=0.95 (not 95)",
        )
    data = list(values)
    if not data:
        raise StatsError("percentile: values is empty", fix="pass at least one value")
    for i, v in enumerate(data):
        if isinstance(v, float) and math.isnan(v):
            raise StatsError(
                f"percentile: values[{i}] is NaN",
                fix="drop NaN entries before calling percentile",
            )
    data.sort()
    return data[_rank_index(float(p), len(data))]


# --------------------------------------------------------------------------- intervals


def wilson_interval(
    successes: int, n: int, *, level: float = 0.95, z: float | None = None
) -> Interval:
    """Wilson score interval (no continuity correction) for ``successes`` out of ``n``.

    ``z`` defaults to the two-sided normal quantile for ``level``
    (``NormalDist().inv_cdf(1 - (1 - level) / 2)``); pass ``z=1.96`` to reproduce tools that
    hard-code it. ``level`` is recorded in the result as given, even when ``z`` overrides it.
    ``n == 0`` gives ``Interval(0.0, 0.0)``.

        >>> iv = wilson_interval(1, 3, z=1.96)
        >>> round(iv.low, 4), round(iv.high, 4)
        (0.0615, 0.7923)
    """
    s = _count("wilson_interval", "successes", successes)
    total = _count("wilson_interval", "n", n)
    lvl = _level("wilson_interval", level)
    if total < 0 or s < 0 or s > total:
        raise StatsError(
            f"wilson_interval: need 0 <= successes <= n, got successes={s}, n={total}",
            fix="pass the number of successes and the number of trials, in that order",
        )
    if z is None:
        zz = statistics.NormalDist().inv_cdf(1.0 - (1.0 - lvl) / 2.0)
    else:
        if isinstance(z, bool) or not isinstance(z, (int, float)) or not 0.0 < z < math.inf:
            raise StatsError(
                f"wilson_interval: z={z!r} must be a finite number > 0",
                fix="pass z=1.96 for a 95% interval, or leave z=None and set level",
            )
        zz = float(z)
    if total == 0:
        return Interval(0.0, 0.0, lvl, "wilson")
    p = s / total
    z2 = zz * zz
    denom = 1.0 + z2 / total
    centre = (p + z2 / (2.0 * total)) / denom
    margin = zz * math.sqrt(p * (1.0 - p) / total + z2 / (4.0 * total * total)) / denom
    low = 0.0 if s == 0 else max(0.0, centre - margin)
    high = 1.0 if s == total else min(1.0, centre + margin)
    return Interval(low, high, lvl, "wilson")


def bootstrap_interval(
    values: Sequence[float],
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    statistic: Callable[[Sequence[float]], float] | None = None,
) -> Interval:
    """Percentile-bootstrap interval for the mean of ``values`` (or for ``statistic``).

    Draws ``resamples`` samples of ``len(values)`` values with replacement from
    ``random.Random(seed)``, computes the statistic on each, sorts the results ``t`` and
    returns the **nearest-rank** quantiles (the rule of :func:`percentile`) at
    ``alpha = (1 - level) / 2`` and ``1 - alpha``: ``low = t[ceil(alpha * R) - 1]`` and
    ``high = t[ceil((1 - alpha) * R) - 1]`` (indices clamped to ``[0, R - 1]``). With the
    defaults that is the 50th and the 1950th of 2000 sorted means. The same arguments always
    give the same interval. A single value, or all-equal values, give the degenerate interval
    ``[statistic(values), statistic(values)]`` without resampling.

        >>> iv = bootstrap_interval([0.0, 1.0, 1.0, 0.0, 1.0], seed=1)
        >>> iv.low <= 0.6 <= iv.high
        True
    """
    data = _finite_values("bootstrap_interval", values)
    lvl = _level("bootstrap_interval", level)
    r = _count("bootstrap_interval", "resamples", resamples)
    if r < 1:
        raise StatsError(
            f"bootstrap_interval: resamples={r} must be at least 1",
            fix="use the default resamples=2000 or more",
        )

    def stat(sample: Sequence[float]) -> float:
        value = _fmean(list(sample)) if statistic is None else float(statistic(sample))
        if math.isnan(value):
            raise StatsError(
                "bootstrap_interval: the statistic returned NaN",
                fix="make the statistic return a number for every non-empty sample",
            )
        return value

    first = data[0]
    if all(v == first for v in data):
        point = first if statistic is None else stat(data)
        return Interval(point, point, lvl, "bootstrap")

    rng = random.Random(seed)
    size = len(data)
    if statistic is None:
        fsum = math.fsum
        choices = rng.choices
        results = [fsum(choices(data, k=size)) / size for _ in range(r)]
    else:
        results = [stat(rng.choices(data, k=size)) for _ in range(r)]
    results.sort()
    alpha = (1.0 - lvl) / 2.0
    return Interval(
        results[_rank_index(alpha, r)], results[_rank_index(1.0 - alpha, r)], lvl, "bootstrap"
    )


def normal_interval(values: Sequence[float], *, level: float = 0.95) -> Interval:
    """Normal-approximation interval for the mean: ``mean ± z · s / √n``.

    ``s`` is the sample standard deviation (n − 1). Cheap for any ``n`` and accurate once
    ``n`` is in the hundreds; a single value gives a degenerate interval.

        >>> iv = normal_interval([0.0, 1.0] * 50)
        >>> round(iv.low, 3), round(iv.high, 3), iv.method
        (0.402, 0.598, 'normal')
    """
    data = _finite_values("normal_interval", values)
    lvl = _level("normal_interval", level)
    centre = _fmean(data)
    if len(data) < 2:
        return Interval(centre, centre, lvl, "normal")
    z = statistics.NormalDist().inv_cdf(1.0 - (1.0 - lvl) / 2.0)
    variance = math.fsum((x - centre) ** 2 for x in data) / (len(data) - 1)
    half = z * math.sqrt(variance / len(data))
    return Interval(centre - half, centre + half, lvl, "normal")


#: Above this many values, :func:`mean_interval` and :func:`paired_comparison` switch from
#: the bootstrap to the normal approximation: 2000 resamples of 100,000 values would take
#: seconds, and at that size the two intervals agree to the third decimal.
BOOTSTRAP_MAX_N = 1000


def mean_interval(
    values: Sequence[float], *, level: float = 0.95, seed: int = 0, resamples: int = 2000
) -> Interval:
    """An interval for the mean: the seeded bootstrap for small samples, the normal
    approximation above :data:`BOOTSTRAP_MAX_N` values (``Interval.method`` says which)."""
    if len(values) > BOOTSTRAP_MAX_N:
        return normal_interval(values, level=level)
    return bootstrap_interval(values, level=level, seed=seed, resamples=resamples)


# --------------------------------------------------------------------------- exact counts


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimator ``1 - C(n - c, k) / C(n, k)`` (Chen et al., 2021).

    ``n`` samples were drawn for a problem and ``c`` of them are correct; the result is the
    probability that at least one of ``k`` samples drawn without replacement is correct.
    Computed exactly with integers and rounded to the nearest float once, so it is exact
    for large ``n`` (``pass_at_k(10**5, 1, 1) == 1e-5``). Returns ``1.0`` when ``n - c < k``.

        >>> pass_at_k(n=5, c=2, k=2)
        0.7
    """
    nn = _count("pass_at_k", "n", n)
    cc = _count("pass_at_k", "c", c)
    kk = _count("pass_at_k", "k", k)
    if nn < 1:
        raise StatsError(f"pass_at_k: n={nn} must be at least 1", fix="pass n >= 1 samples")
    if not 0 <= cc <= nn:
        raise StatsError(
            f"pass_at_k: need 0 <= c <= n, got c={cc}, n={nn}",
            fix="c is the number of correct samples among the n drawn",
        )
    if not 1 <= kk <= nn:
        raise StatsError(
            f"pass_at_k: need 1 <= k <= n, got k={kk}, n={nn}",
            fix="draw at least k samples per problem, or lower k",
        )
    if nn - cc < kk:
        return 1.0
    total = math.comb(nn, kk)
    # int / int true division is correctly rounded, so this is the float nearest the exact value.
    return float(Fraction(total - math.comb(nn - cc, kk), total))


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar test p-value for ``b`` and ``c`` discordant pairs.

    ``min(1, 2 * P[X <= min(b, c)])`` with ``X ~ Binomial(b + c, 1/2)``, summed exactly with
    integers and rounded once, so large counts do not underflow early. ``1.0`` when
    ``b + c == 0``.

        >>> mcnemar_exact(1, 9)
        0.021484375
    """
    bb = _count("mcnemar_exact", "b", b)
    cc = _count("mcnemar_exact", "c", c)
    if bb < 0 or cc < 0:
        raise StatsError(
            f"mcnemar_exact: counts must be non-negative, got b={bb}, c={cc}",
            fix="pass the two discordant-pair counts",
        )
    total = bb + cc
    m = min(bb, cc)
    if total == 0 or 2 * m >= total:  # b == c: the two tails already cover everything
        return 1.0
    term = 1  # C(total, 0)
    tail = 1
    for i in range(m):
        term = term * (total - i) // (i + 1)
        tail += term
    return min(1.0, float(Fraction(2 * tail, 2**total)))


# --------------------------------------------------------------------------- comparisons


def _pairs(
    func: str, a: Sequence[float], b: Sequence[float], *, value: str, item: str
) -> tuple[list[float], list[float]]:
    """``a`` and ``b`` as finite floats of equal length: one ``value`` per ``item`` under
    each of the two conditions being compared."""
    xs = _finite_values(func, a, "a")
    ys = _finite_values(func, b, "b")
    if len(ys) != len(xs):
        raise StatsError(
            f"{func}: a has {len(xs)} {value}s but b has {len(ys)}",
            fix=f"pass one {value} per {item} under each condition, in the same {item} order",
        )
    return xs, ys


def _flags(name: str, flags: Sequence[bool], n: int) -> list[bool]:
    out: list[bool] = []
    for i, f in enumerate(flags):
        if f is True or f is False:
            out.append(f)
        elif isinstance(f, (int, float)) and f in (0, 1):
            out.append(f == 1)
        else:
            raise StatsError(
                f"paired_comparison: {name}[{i}]={f!r} is not a pass/fail flag",
                fix=f"pass True/False (or 1/0) in {name}",
            )
    if len(out) != n:
        raise StatsError(
            f"paired_comparison: {name} has {len(out)} flags but there are {n} pairs",
            fix=f"pass exactly one flag per item in {name}",
        )
    return out


def paired_comparison(
    a: Sequence[float],
    b: Sequence[float],
    *,
    passed_a: Sequence[bool] | None = None,
    passed_b: Sequence[bool] | None = None,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> PairedComparison:
    """Compare scores of the *same* items under two conditions (``a[i]`` pairs with ``b[i]``).

    The interval is a paired bootstrap (see :func:`bootstrap_interval`) of the mean of the
    per-item differences ``b[i] - a[i]`` — or, above :data:`BOOTSTRAP_MAX_N` pairs, the normal
    approximation (``interval.method`` is then ``"paired_normal"``). If both ``passed_a`` and ``passed_b`` are given,
    the 2x2 pass/fail table and the exact McNemar p-value on its discordant cells
    (``a_only``, ``b_only``) are filled in as well.

        >>> r = paired_comparison([0, 1, 0, 1], [1, 1, 1, 1],
        ...                       passed_a=[False, True, False, True], passed_b=[True] * 4)
        >>> r.delta, r.b_only, r.a_only, r.mcnemar_p
        (0.5, 2, 0, 0.5)
    """
    xs, ys = _pairs("paired_comparison", a, b, value="score", item="item")
    n = len(xs)
    if (passed_a is None) != (passed_b is None):
        given = "passed_a" if passed_a is not None else "passed_b"
        raise StatsError(
            f"paired_comparison: {given} was given without its counterpart",
            fix="pass both passed_a and passed_b, or neither",
        )
    mean_a = _fmean(xs)
    mean_b = _fmean(ys)
    diffs = [y - x for x, y in zip(xs, ys, strict=True)]
    if n > BOOTSTRAP_MAX_N:
        interval = attrs.evolve(normal_interval(diffs, level=level), method="paired_normal")
    else:
        interval = attrs.evolve(
            bootstrap_interval(diffs, level=level, resamples=resamples, seed=seed),
            method="paired_bootstrap",
        )
    a_only = b_only = both = neither = None
    p_value = None
    if passed_a is not None and passed_b is not None:
        fa = _flags("passed_a", passed_a, n)
        fb = _flags("passed_b", passed_b, n)
        a_only = sum(1 for x, y in zip(fa, fb, strict=True) if x and not y)
        b_only = sum(1 for x, y in zip(fa, fb, strict=True) if y and not x)
        both = sum(1 for x, y in zip(fa, fb, strict=True) if x and y)
        neither = n - a_only - b_only - both
        p_value = mcnemar_exact(a_only, b_only)
    return PairedComparison(
        n=n,
        mean_a=mean_a,
        mean_b=mean_b,
        delta=mean_b - mean_a,
        interval=interval,
        a_only=a_only,
        b_only=b_only,
        both=both,
        neither=neither,
        mcnemar_p=p_value,
    )


# --------------------------------------------------------------------------- Student t


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def _df(func: str, df: object) -> float:
    if isinstance(df, bool) or not isinstance(df, (int, float)) or not 0 < df < math.inf:
        raise StatsError(
            f"{func}: df={df!r} must be a positive, finite number",
            fix="pass the degrees of freedom, e.g. df = number of clusters - 1",
        )
    return float(df)


def t_cdf(t: float, df: float) -> float:
    """The Student t distribution function ``P[T <= t]`` with ``df`` degrees of freedom.

    Computed from the regularised incomplete beta function, accurate to about 1e-14, so no
    scipy is needed at run time (the tests cross-check against scipy).

        >>> round(t_cdf(2.0, 5), 6)
        0.94903
    """
    nu = _df("t_cdf", df)
    if math.isnan(t):
        raise StatsError("t_cdf: t is NaN", fix="pass a number")
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    t2 = t * t
    if t2 < nu:  # near 0: integrate from the centre, where I_x has full precision
        half = 0.5 * _betainc(0.5, nu / 2.0, t2 / (nu + t2))
        return 0.5 + half if t > 0 else 0.5 - half
    tail = 0.5 * _betainc(nu / 2.0, 0.5, nu / (nu + t2))
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=512)
def _t_quantile(p: float, nu: float) -> float:
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -_t_quantile(1.0 - p, nu)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, nu) < p:
        lo, hi = hi, hi * 2.0
    for _ in range(200):  # bisection to float resolution: robust where Newton may stall
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        if t_cdf(mid, nu) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def t_quantile(p: float, df: float) -> float:
    """The ``p``-quantile of Student's t with ``df`` degrees of freedom (inverse of
    :func:`t_cdf`, by bisection; results are cached).

        >>> round(t_quantile(0.975, 11), 4)
        2.201
    """
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < p < 1.0:
        raise StatsError(
            f"t_quantile: p={p!r} must be strictly between 0 and 1",
            fix="pass a probability such as p=0.975",
        )
    return _t_quantile(float(p), _df("t_quantile", df))


# --------------------------------------------------------------------------- clustered means


def _wilson_fraction(p: float, n: int, z: float) -> tuple[float, float]:
    """Wilson bounds for an observed proportion ``p`` of ``n`` units (``p`` may be fractional)."""
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    margin = z * math.sqrt(max(p * (1.0 - p), 0.0) / n + z2 / (4.0 * n * n)) / denom
    return max(0.0, centre - margin), min(1.0, centre + margin)


def _labels(func: str, clusters: Sequence[object] | None, n: int) -> list[object]:
    if clusters is None:
        return list(range(n))
    labels = list(clusters)
    if len(labels) != n:
        raise StatsError(
            f"{func}: {n} values but {len(labels)} cluster labels",
            fix="pass exactly one cluster label per value",
        )
    return labels


def _weights(func: str, weights: Sequence[float] | None, n: int) -> list[float]:
    if weights is None:
        return [1.0] * n
    ws = _finite_values(func, weights, "weights")
    if len(ws) != n:
        raise StatsError(
            f"{func}: {n} values but {len(ws)} weights",
            fix="pass exactly one weight per value",
        )
    if any(w < 0 for w in ws) or math.fsum(ws) <= 0:
        raise StatsError(
            f"{func}: weights must be non-negative with a positive sum",
            fix="use weights >= 0, at least one of them positive",
        )
    return ws


def _clustered_se(
    values: Sequence[float], labels: Sequence[object], weights: Sequence[float]
) -> tuple[float, float, int]:
    """``(estimate, standard error, number of clusters)`` of a weighted mean, cluster-robust.

    ``se**2 = G / (G - 1) * sum_c (sum_{i in c} w_i (x_i - est))**2 / (sum w)**2``: the
    sandwich (CR1) estimator, which lets values of one cluster be correlated in any way.
    """
    total = math.fsum(weights)
    est = math.fsum(w * x for w, x in zip(weights, values, strict=True)) / total
    sums: dict[object, float] = {}
    for x, label, w in zip(values, labels, weights, strict=True):
        sums[label] = sums.get(label, 0.0) + w * (x - est)
    g = len(sums)
    if g < 2:
        return est, 0.0, g
    var = g / (g - 1) * math.fsum(s * s for s in sums.values()) / (total * total)
    return est, math.sqrt(var), g


def clustered_interval(
    values: Sequence[float],
    clusters: Sequence[object] | None = None,
    *,
    weights: Sequence[float] | None = None,
    level: float = 0.95,
    bounds: tuple[float, float] | None = (0.0, 1.0),
    unit: str = "cluster",
) -> Interval:
    """A cluster-robust interval for the (weighted) mean of ``values``.

    ``clusters[i]`` labels the independent unit value ``i`` belongs to: the task for the
    epochs of one task, or a declared cluster (a passage several questions share). Values of
    one cluster may be correlated in any way; clusters are independent. The interval is
    ``est ± t(G - 1) * se`` with the CR1 cluster-robust standard error and a Student-t
    quantile on ``G - 1`` degrees of freedom (``G`` clusters), clipped to ``bounds``.
    Without ``clusters`` every value is its own cluster (the ordinary t interval).

    When every cluster has the same mean the standard error is 0 and the t interval would
    claim certainty; for bounded values the Wilson interval of that proportion over ``G``
    units is returned instead (``method="cluster_wilson"``). A single cluster says nothing
    about the next one: the interval is then the whole of ``bounds`` (or the point when
    unbounded). ``method`` is ``f"{unit}_t"``; ``Interval.n`` is ``G``.

        >>> iv = clustered_interval([1, 1, 0, 0, 1, 0], ["a", "a", "b", "b", "c", "c"])
        >>> round(iv.low, 3), round(iv.high, 3), iv.method, iv.n
        (0.0, 1.0, 'cluster_t', 3)
    """
    data = _finite_values("clustered_interval", values)
    lvl = _level("clustered_interval", level)
    labels = _labels("clustered_interval", clusters, len(data))
    ws = _weights("clustered_interval", weights, len(data))
    return _clustered_interval(*_clustered_se(data, labels, ws), lvl, bounds, unit)


def _clustered_interval(
    est: float, se: float, g: int, lvl: float, bounds: tuple[float, float] | None, unit: str
) -> Interval:
    """:func:`clustered_interval` from the estimate, its standard error and ``G``."""
    lo_b, hi_b = bounds if bounds is not None else (-math.inf, math.inf)
    if g < 2:
        if bounds is None:
            return Interval(est, est, lvl, f"{unit}_t", g)
        return Interval(lo_b, hi_b, lvl, f"{unit}_t", g)
    if se == 0.0 and bounds is not None and hi_b > lo_b:
        z = statistics.NormalDist().inv_cdf(1.0 - (1.0 - lvl) / 2.0)
        frac = (est - lo_b) / (hi_b - lo_b)
        low, high = _wilson_fraction(min(max(frac, 0.0), 1.0), g, z)
        return Interval(
            lo_b + low * (hi_b - lo_b), lo_b + high * (hi_b - lo_b), lvl, "cluster_wilson", g
        )
    half = t_quantile(1.0 - (1.0 - lvl) / 2.0, g - 1) * se
    return Interval(max(lo_b, est - half), min(hi_b, est + half), lvl, f"{unit}_t", g)


def cluster_bootstrap_interval(
    values: Sequence[float],
    clusters: Sequence[object] | None = None,
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap of the mean that resamples whole clusters (tasks), seeded.

    Kept for comparison and for users who want it: with few clusters the percentile
    bootstrap is too narrow (it divides by ``G`` where the t interval divides by ``G - 1``
    and uses normal-like quantiles), which the Monte-Carlo tests measure; benchkit's
    reports use :func:`clustered_interval`.
    """
    data = _finite_values("cluster_bootstrap_interval", values)
    lvl = _level("cluster_bootstrap_interval", level)
    labels = _labels("cluster_bootstrap_interval", clusters, len(data))
    groups: dict[object, list[float]] = {}
    for x, label in zip(data, labels, strict=True):
        groups.setdefault(label, []).append(x)
    units = [(math.fsum(v), len(v)) for v in groups.values()]
    if len(units) < 2:
        est = _fmean(data)
        return Interval(est, est, lvl, "cluster_bootstrap", len(units))
    rng = random.Random(seed)
    g = len(units)
    results: list[float] = []
    for _ in range(resamples):
        picked = rng.choices(units, k=g)
        results.append(math.fsum(s for s, _ in picked) / sum(n for _, n in picked))
    results.sort()
    alpha = (1.0 - lvl) / 2.0
    return Interval(
        results[_rank_index(alpha, resamples)],
        results[_rank_index(1.0 - alpha, resamples)],
        lvl,
        "cluster_bootstrap",
        g,
    )


def variance_split(
    values: Sequence[float], tasks: Sequence[object], clusters: Sequence[object] | None = None
) -> VarianceSplit:
    """Split the variance of cell values into between-task and within-task parts.

    ``within`` is the pooled variance of epochs around their task's mean (None when no task
    has two epochs); ``between`` the variance of task means minus the part the epochs'
    noise explains (``within / epochs``), floored at 0 — the one-way random-effects
    (ANOVA) estimator. ``tasks`` counts tasks, ``epochs`` is the mean number of cells per
    task. ``clusters`` is accepted for symmetry and ignored: clusters change which units are
    independent, not how much a cell varies.

        >>> vs = variance_split([1, 1, 0, 0, 1, 0], ["a", "a", "b", "b", "c", "c"])
        >>> round(vs.between, 4), round(vs.within or 0, 4), vs.tasks, vs.epochs
        (0.1667, 0.1667, 3, 2.0)
    """
    del clusters
    data = _finite_values("variance_split", values)
    labels = _labels("variance_split", tasks, len(data))
    # A task of one cell keeps its value, not a list: runs of 100,000 one-epoch tasks are
    # common, and a list each would be most of the memory this takes.
    groups: dict[object, float | list[float]] = {}
    for x, label in zip(data, labels, strict=True):
        found = groups.get(label)
        if found is None:
            groups[label] = x
        elif isinstance(found, list):
            found.append(x)
        else:
            groups[label] = [found, x]
    t = len(groups)
    epochs = len(data) / t
    del data, labels
    pooled_ss = 0.0
    pooled_df = 0
    means: list[float] = []
    for members in groups.values():
        if isinstance(members, list):
            m = _fmean(members)
            pooled_ss += math.fsum((x - m) ** 2 for x in members)
            pooled_df += len(members) - 1
            means.append(m)
        else:
            means.append(members)  # the mean of one finite value is that value
    within = pooled_ss / pooled_df if pooled_df else None
    if t < 2:
        return VarianceSplit(0.0, within, t, epochs)
    # harmonic mean of cells per task: the right divisor when tasks ran unequal epochs
    harmonic = t / math.fsum(1.0 / len(v) if isinstance(v, list) else 1.0 for v in groups.values())
    del groups
    var_means = statistics.variance(means)
    between = max(0.0, var_means - (within or 0.0) / harmonic)
    return VarianceSplit(between, within, t, epochs)


# --------------------------------------------------------------------------- task-level tests

#: Up to this many clusters :func:`paired_task_comparison` uses the exact sign-flip test
#: (2**G sign patterns, enumerated in Gray-code order); above it, the paired t test.
EXACT_MAX_CLUSTERS = 14


def sign_flip_exact(differences: Sequence[float]) -> float:
    """Exact two-sided p-value of the sign-flip (Fisher-Pitman) permutation test.

    Under the null hypothesis each cluster's difference is as likely to be ``+d`` as ``-d``
    (the two conditions are exchangeable within a cluster). The p-value is the share of
    the ``2**G`` sign patterns whose ``|sum|`` is at least the observed one. Exact, with no
    distributional assumption, for any ``G``; the cost is ``2**G`` steps, so it is used for
    few clusters (:data:`EXACT_MAX_CLUSTERS`).

        >>> sign_flip_exact([0.5, 0.25, 1.0, 0.75])
        0.125
    """
    return _sign_flip(_finite_values("sign_flip_exact", differences, "differences"), 0.05)[0]


def _sign_flip(values: Sequence[float], alpha: float) -> tuple[float, float]:
    """``(p-value, critical |sum|)`` of the exact sign-flip test.

    The critical value is the smallest ``c`` with ``P[|S*| >= c] <= alpha`` under the sign
    flips (``inf`` when no pattern is rare enough, e.g. 5 clusters at alpha 0.05): the
    exact test's own threshold, which is what its power depends on.
    """
    ds = [d for d in values if d != 0.0]
    g = len(ds)
    if g == 0:
        return 1.0, math.inf
    if g > 24:
        raise StatsError(
            f"sign_flip_exact: {g} non-zero differences would need 2**{g} sign patterns",
            fix="use a paired t test for more than a couple of dozen clusters",
        )
    tol = 1e-9 * max(1.0, math.fsum(abs(d) for d in ds))
    signs = [1] * g
    current = math.fsum(ds)
    sums = [abs(current)]
    patterns = 1 << g
    for i in range(1, patterns):
        bit = (i & -i).bit_length() - 1  # Gray code: flip one sign per step
        current -= 2 * signs[bit] * ds[bit]
        signs[bit] = -signs[bit]
        sums.append(abs(current))
    sums.sort()
    observed = abs(math.fsum(ds))
    at_least = patterns - bisect.bisect_left(sums, observed - tol)
    p_value = min(1.0, at_least / patterns)
    allowed = math.floor(alpha * patterns + 1e-9)
    critical = math.inf
    if allowed > 0:
        # walk down from the largest sums while the tail stays within alpha
        index = patterns - allowed
        candidate = sums[index]
        while index < patterns:
            tail = patterns - bisect.bisect_left(sums, candidate - tol)
            if tail <= allowed:
                critical = candidate
                break
            index = bisect.bisect_right(sums, candidate + tol)
            candidate = sums[index] if index < patterns else math.inf
    return p_value, critical


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` (family-wise error rate control).

    The ``i``-th smallest p is multiplied by ``m - i`` (``i`` from 0), made monotone, and
    capped at 1; the result is in the input order.

        >>> holm([0.01, 0.04, 0.03])
        [0.03, 0.06, 0.06]
    """
    ps = _finite_values("holm", p_values, "p_values")
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def paired_task_comparison(
    a: Sequence[float],
    b: Sequence[float],
    *,
    clusters: Sequence[object] | None = None,
    weights: Sequence[float] | None = None,
    level: float = 0.95,
    alpha: float = 0.05,
    power: float = 0.8,
) -> PairedComparison:
    """Compare two conditions task by task: ``a[i]`` and ``b[i]`` are task ``i``'s values
    (its epochs already reduced: a pass fraction, a mean score or a pass@k estimate).

    The unit of analysis is the cluster (the task, unless ``clusters`` groups tasks); each
    cluster contributes the weighted sum of its tasks' differences. The test is

    * ``mcnemar_exact`` when every value is 0 or 1 and each task is its own cluster (one
      epoch of pass/fail, or tasks that never varied across epochs): the exact sign test on
      the discordant tasks;
    * ``sign_flip_exact`` for at most :data:`EXACT_MAX_CLUSTERS` clusters;
    * ``paired_t`` (Student t on ``G - 1`` degrees of freedom, cluster-robust) otherwise.

    The interval inverts the test, so it excludes 0 exactly when ``p_value < 1 - level``:

    * beside McNemar, ``paired_score`` — Tango's (1998) score interval for the difference
      of paired proportions, joined to 0 when the exact test at 0 does not reject (the
      score test at 0 rejects whenever the exact one does, so the two never disagree);
    * beside the sign-flip test, ``paired_sign_flip`` — every mean difference ``m`` the
      exact sign-flip test of the differences minus ``m`` does not reject (Fisher's
      permutation interval, computed exactly);
    * beside the t test, the cluster-robust t interval (``paired_t``, or
      ``paired_cluster_t`` with declared clusters), the same standard error and degrees of
      freedom as the test.

    The minimum detectable effect ``mde`` is the
    true difference at which the test rejects with probability ``power``: the test's own
    threshold ``c`` for the mean difference — ``t(1 - alpha/2) * se`` for the t test and
    McNemar, the exact ``alpha`` critical value of the sign-flip distribution for that test
    (discrete and conservative with few clusters, so its MDE is larger) — plus the power
    margin of the noncentral t (about ``z(power) * se``; see :func:`_detectable`). None
    when no difference could reach ``alpha``.

        >>> r = paired_task_comparison([0, 1, 0, 0, 1], [1, 1, 1, 1, 1])
        >>> r.method, r.p_value, r.b_only, r.n_clusters
        ('mcnemar_exact', 0.25, 3, 5)
    """
    xs, ys = _pairs("paired_task_comparison", a, b, value="value", item="task")
    n = len(xs)
    lvl = _level("paired_task_comparison", level)
    _level("paired_task_comparison", alpha)
    _level("paired_task_comparison", power)
    labels = _labels("paired_task_comparison", clusters, n)
    ws = _weights("paired_task_comparison", weights, n)
    total = math.fsum(ws)
    mean_a = math.fsum(w * x for w, x in zip(ws, xs, strict=True)) / total
    mean_b = math.fsum(w * y for w, y in zip(ws, ys, strict=True)) / total
    diffs = [y - x for x, y in zip(xs, ys, strict=True)]
    own_clusters = clusters is None or len(set(labels)) == n
    binary = all(v in (0.0, 1.0) for v in xs) and all(v in (0.0, 1.0) for v in ys)
    unit_range = _unit_range(xs, ys)
    unit = "paired_t" if own_clusters else "paired_cluster_t"
    if not all(math.isfinite(d) for d in diffs):  # only at a float's edges
        _finite_values("clustered_interval", diffs)  # raises, as the interval always did
    est, se, g = _clustered_se(diffs, labels, ws)  # once, for the interval and the test
    bounds = (-1.0, 1.0) if unit_range else None
    z = statistics.NormalDist().inv_cdf(1.0 - (1.0 - lvl) / 2.0)
    a_only = b_only = both = neither = None
    if binary:
        a_only = sum(1 for x, y in zip(xs, ys, strict=True) if x > y)
        b_only = sum(1 for x, y in zip(xs, ys, strict=True) if y > x)
        both = sum(1 for x, y in zip(xs, ys, strict=True) if x == y == 1.0)
        neither = n - a_only - b_only - both
    mcnemar_p: float | None = None
    critical: float | None = None  # the test's threshold for |mean difference|, if not t's
    if binary and own_clusters:
        method = "mcnemar_exact"
        mcnemar_p = p_value = mcnemar_exact(a_only or 0, b_only or 0)
        low, high = _tango_interval(b_only or 0, a_only or 0, n, z)
        if p_value >= 1.0 - lvl:  # the exact test at 0 does not reject: nor does the interval
            low, high = min(low, 0.0), max(high, 0.0)
        interval = Interval(low, high, lvl, "paired_score", g)
    elif g <= EXACT_MAX_CLUSTERS:
        method = "sign_flip_exact"
        sums: dict[object, float] = {}
        sizes: dict[object, float] = {}
        for d, label, w in zip(diffs, labels, ws, strict=True):
            sums[label] = sums.get(label, 0.0) + w * d
            sizes[label] = sizes.get(label, 0.0) + w
        p_value, crit_sum = _sign_flip(list(sums.values()), alpha)
        critical = crit_sum / total
        low, high = _sign_flip_interval(
            [(sums[k], sizes[k]) for k in sums], 1.0 - lvl, bounds or _data_range(diffs)
        )
        interval = Interval(low, high, lvl, "paired_sign_flip", g)
    else:
        method = "paired_t"
        interval = attrs.evolve(
            _clustered_interval(est, se, g, lvl, bounds, "cluster"), method=unit
        )
        if se > 0.0:
            t = est / se  # two-sided tail straight from I_x: no 1 - cdf cancellation
            p_value = min(1.0, _betainc((g - 1) / 2.0, 0.5, (g - 1) / (g - 1 + t * t)))
        else:  # every cluster moved by the same amount: the sign-flip p of unanimous signs
            p_value = 1.0 if est == 0.0 else 2.0 ** (1 - g)
            if est != 0.0 and p_value < 1.0 - lvl:
                # the permutation interval is the point est; at least Wilson's share of
                # G of G clusters moves by est, so the near end stays off 0 like the test
                share = _wilson_fraction(1.0, g, z)[0]
                if est > 0:
                    interval = attrs.evolve(interval, low=est * share)
                else:
                    interval = attrs.evolve(interval, high=est * share)
    if g >= 2 and all(d == 0.0 for d in diffs) and unit_range and method != "mcnemar_exact":
        # no task moved: the share of tasks that would move is below Wilson's bound for
        # 0 of G, and each moves the mean by at most 1 — not the zero-width [0, 0]
        bound = _wilson_fraction(0.0, g, z)[1]
        interval = Interval(-bound, bound, lvl, interval.method, g)
    mde = None
    if se > 0.0 and g >= 2:
        if critical is None:
            critical = t_quantile(1.0 - alpha / 2.0, g - 1) * se
        if math.isfinite(critical):
            mde = _detectable(critical / se, power, g - 1) * se
    return PairedComparison(
        n=n,
        mean_a=mean_a,
        mean_b=mean_b,
        delta=mean_b - mean_a,
        interval=interval,
        a_only=a_only,
        b_only=b_only,
        both=both,
        neither=neither,
        mcnemar_p=mcnemar_p,
        p_value=p_value,
        method=method,
        n_tasks=n,
        n_clusters=g,
        mde=mde,
        alpha=alpha,
        power=power,
    )


def _detectable(threshold: float, power: float, df: int) -> float:
    """The noncentrality (true effect / se) at which a test that rejects when
    ``|estimate| / se > threshold`` has at least the given ``power``.

    A t statistic with noncentrality ``d`` exceeds ``c`` when ``Z + d > c * S`` with
    ``S = sqrt(chi2_df / df)`` approximately ``N(1, 1 / (2 df))``, so
    ``P ~ Phi((d - c) / sqrt(1 + c**2 / (2 df)))`` and
    ``d = c + z(power) * sqrt(1 + c**2 / (2 df))``. Against scipy's noncentral t the power
    at that ``d`` is 0.80 at 40 units and errs high (0.81 at 12, 0.83 at 6): the MDE is a
    little conservative for few units, where the plain ``c + z`` overpromises.
    """
    z = statistics.NormalDist().inv_cdf(power)
    return threshold + z * math.sqrt(1.0 + threshold * threshold / (2.0 * df))


def _data_range(diffs: Sequence[float]) -> tuple[float, float]:
    """Where a mean difference of values with no known bounds is sought: the range of the
    observed differences, widened to hold 0."""
    return min(0.0, *diffs), max(0.0, *diffs)


def _tango_interval(better: int, worse: int, n: int, z: float) -> tuple[float, float]:
    """Tango's (1998) score interval for the paired difference ``P(b wins) - P(a wins)``
    of ``n`` pass/fail pairs, ``better`` of them won by b and ``worse`` by a.

    For each candidate difference ``δ`` the score statistic is
    ``(better - worse - n δ) / sqrt(n (2 q + δ (1 - δ)))`` with ``q`` the maximum-likelihood
    share of pairs a wins under ``δ``; the interval holds the ``δ`` where it stays within
    ``±z``. At ``δ = 0`` the statistic is McNemar's ``(better - worse) / sqrt(better +
    worse)``, whose rejections include every rejection of the exact McNemar test.
    """

    def score(delta: float) -> float:
        b = better * (1.0 + delta) + worse * (1.0 - delta) - 2.0 * n * delta
        q = (b + math.sqrt(b * b + 8.0 * n * worse * delta * (1.0 - delta))) / (4.0 * n)
        variance = n * (2.0 * q + delta * (1.0 - delta))
        diff = better - worse - n * delta
        if variance <= 0.0:
            return 0.0 if diff == 0 else math.copysign(math.inf, diff)
        return diff / math.sqrt(variance)

    est = (better - worse) / n

    def edge(inside: float, outside: float, side: float) -> float:
        # the boundary between a δ the test keeps (inside) and one it rejects (outside)
        if side * score(outside) < z:
            return outside
        for _ in range(44):  # to ~1e-13: far below the third decimal reports print
            mid = (inside + outside) / 2.0
            if side * score(mid) < z:
                inside = mid
            else:
                outside = mid
        return inside

    return edge(est, -1.0, 1.0), edge(est, 1.0, -1.0)


def _sign_flip_interval(
    clusters: Sequence[tuple[float, float]], alpha: float, bounds: tuple[float, float]
) -> tuple[float, float]:
    """The mean differences ``m`` the exact sign-flip test does not reject at ``alpha``:
    the interval that inverts :func:`sign_flip_exact`.

    ``clusters`` holds each cluster's ``(sum of w·d, sum of w)``; testing ``m`` flips the
    signs of ``s_c - m·n_c``. For a sign pattern ``ε`` with ``A = Σ ε s`` and
    ``B = Σ ε n`` (the observed pattern: ``A₁``, ``B₁``), ``|A - m B| >= |A₁ - m B₁|``
    holds for ``m`` between ``(A - A₁) / (B - B₁)`` and ``(A + A₁) / (B + B₁)``, so
    ``p(m)`` is a count of intervals covering ``m`` — swept exactly, once. The result is
    the hull of ``{m : p(m) >= alpha}`` within ``bounds``; when 0 falls in a gap of that
    set the hull stops short of 0, so "excludes 0" and "p < alpha" never disagree.
    """
    units = [(s, w) for s, w in clusters if w > 0.0]
    g = len(units)
    a1 = math.fsum(s for s, _ in units)
    b1 = math.fsum(w for _, w in units)
    lo_b, hi_b = bounds
    need = alpha * (1 << g) - 1e-9  # patterns that must count for p(m) >= alpha
    # the observed pattern and its mirror count for every m; the rest, pair by pair
    # (ε and -ε give the same interval), each count twice
    events: list[tuple[float, int]] = []
    for mask in range(1, 1 << (g - 1)):
        a = b = 0.0
        for i, (s, w) in enumerate(units):
            if mask >> i & 1:
                a -= s
                b -= w
            else:
                a += s
                b += w
        r1 = (a - a1) / (b - b1)
        r2 = (a + a1) / (b + b1)
        lo, hi = (r1, r2) if r1 <= r2 else (r2, r1)
        events.append((lo, 2))
        events.append((hi, -2))
    events.sort(key=lambda e: (e[0], -e[1]))  # an interval's ends are in it: opens first
    count = 2
    inside: list[tuple[float, float]] = []  # maximal stretches with p(m) >= alpha
    start: float | None = lo_b if count >= need else None
    for point, step in events:
        before = count
        count += step
        if before < need <= count:
            start = point
        elif count < need <= before and start is not None:
            inside.append((start, point))
            start = None
    if start is not None:
        inside.append((start, hi_b))
    found = [(max(lo, lo_b), min(hi, hi_b)) for lo, hi in inside if hi >= lo_b and lo <= hi_b]
    if not found:
        est = a1 / b1
        return est, est
    low, high = found[0][0], found[-1][1]
    if low <= 0.0 <= high and not any(lo <= 0.0 <= hi for lo, hi in found):
        est = a1 / b1  # 0 is rejected: keep the side of the estimate
        if est > 0:
            low = min(lo for lo, _ in found if lo > 0.0)
        else:
            high = max(hi for _, hi in found if hi < 0.0)
    return low + 0.0, high + 0.0  # never -0.0


def _unit_range(xs: Sequence[float], ys: Sequence[float]) -> bool:
    """True when every value lies in [0, 1], so differences lie in [-1, 1]."""
    return all(0.0 <= v <= 1.0 for v in xs) and all(0.0 <= v <= 1.0 for v in ys)
