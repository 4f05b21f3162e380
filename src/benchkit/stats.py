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
  naming the offending values and how to fix them, and no function returns NaN.

Example::

    >>> iv = wilson_interval(8, 10, z=1.96)
    >>> round(iv.low, 4), round(iv.high, 4), iv.method
    (0.4902, 0.9433, 'wilson')
    >>> pass_at_k(n=10, c=3, k=1)
    0.3
"""

from __future__ import annotations

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
    "Interval",
    "PairedComparison",
    "bootstrap_interval",
    "mcnemar_exact",
    "mean",
    "mean_interval",
    "normal_interval",
    "paired_comparison",
    "pass_at_k",
    "percentile",
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

    ``method`` names the procedure: ``"wilson"``, ``"bootstrap"`` or ``"paired_bootstrap"``.

        >>> Interval(0.25, 0.75, level=0.9, method="wilson").high
        0.75
    """

    low: float
    high: float
    level: float = 0.95
    method: str = ""


@attrs.frozen
class PairedComparison:
    """Result of :func:`paired_comparison`: condition *b* versus condition *a* on the same items.

    ``delta`` is ``mean_b - mean_a``; ``interval`` is a paired bootstrap interval for the mean
    per-item difference ``b[i] - a[i]``. The pass/fail counts and ``mcnemar_p`` are ``None``
    unless pass/fail flags were given: ``a_only`` counts items that passed under *a* and failed
    under *b*, ``b_only`` the reverse, ``both`` and ``neither`` the concordant items.
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
    out: list[float] = []
    for i, v in enumerate(values):
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
    xs = _finite_values("paired_comparison", a, "a")
    ys = _finite_values("paired_comparison", b, "b")
    n = len(xs)
    if len(ys) != n:
        raise StatsError(
            f"paired_comparison: a has {n} scores but b has {len(ys)}",
            fix="pass one score per item under each condition, in the same item order",
        )
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
