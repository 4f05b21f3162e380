"""Tests for benchkit.stats: cross-checked against scipy and exact rational arithmetic."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any

import attrs
import pytest
import scipy.optimize
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from benchkit import stats
from benchkit.errors import StatsError
from benchkit.stats import (
    Interval,
    PairedComparison,
    bootstrap_interval,
    mcnemar_exact,
    mean,
    paired_comparison,
    pass_at_k,
    percentile,
    weighted_mean,
    wilson_interval,
)

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@contextmanager
def raises_stats(match: str) -> Iterator[None]:
    """Expect a StatsError whose message matches and which carries a fix hint."""
    with pytest.raises(StatsError, match=match) as info:
        yield
    assert info.value.fix, "every StatsError should say how to fix it"
    assert isinstance(info.value, ValueError)


def round_half_up(x: float, digits: int = 4) -> Decimal:
    return Decimal(repr(x)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)


# --------------------------------------------------------------------------- module surface


def test_all_is_sorted_and_complete() -> None:
    assert stats.__all__ == sorted(stats.__all__)
    for name in stats.__all__:
        assert hasattr(stats, name)
    public = {n for n in vars(stats) if not n.startswith("_")}
    expected = {
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
    }
    assert set(stats.__all__) == expected
    assert expected <= public


def test_interval_is_frozen_with_defaults() -> None:
    iv = Interval(0.1, 0.2)
    assert (iv.low, iv.high, iv.level, iv.method) == (0.1, 0.2, 0.95, "")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        iv.low = 0.0  # type: ignore[misc]
    assert iv == Interval(0.1, 0.2, 0.95, "")


# --------------------------------------------------------------------------- mean


@given(st.lists(finite, min_size=1, max_size=50))
def test_mean_matches_fmean(values: list[float]) -> None:
    assert mean(values) == pytest.approx(statistics.fmean(values), rel=1e-12, abs=1e-9)


def test_mean_examples() -> None:
    assert mean([1, 2, 3, 4]) == 2.5
    assert mean(x for x in (1.0, 2.0)) == 1.5  # any iterable, including generators
    assert mean([0.1] * 10) == pytest.approx(0.1, rel=1e-15)
    assert mean([1e308, 1e308]) == 1e308  # the sum overflows, the mean does not


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ([], "empty"),
        ([1.0, math.nan], r"values\[1\].*not finite"),
        ([math.inf], "not finite"),
        (["x"], "not a number"),
        (["1.5"], r"values\[0\]='1.5' is not a number"),
    ],
)
def test_mean_errors(values: list[Any], match: str) -> None:
    with raises_stats(match):
        mean(values)


@given(
    st.lists(
        st.tuples(finite, st.floats(min_value=0, max_value=1e3, allow_nan=False)),
        min_size=1,
        max_size=30,
    ).filter(lambda pairs: any(w > 0 for _, w in pairs))
)
def test_weighted_mean_matches_manual(pairs: list[tuple[float, float]]) -> None:
    values = [v for v, _ in pairs]
    weights = [w for _, w in pairs]
    expected = sum(v * w for v, w in pairs) / sum(weights)
    assert weighted_mean(values, weights) == pytest.approx(expected, rel=1e-9, abs=1e-6)


def test_weighted_mean_examples() -> None:
    assert weighted_mean([1.0, 3.0], [3, 1]) == 1.5
    assert weighted_mean([1.0, 3.0, 100.0], [1, 1, 0]) == 2.0
    assert weighted_mean([2.0, 4.0, 9.0], [1.0, 1.0, 1.0]) == mean([2.0, 4.0, 9.0])


@pytest.mark.parametrize(
    ("values", "weights", "match"),
    [
        ([1.0, 2.0], [1.0], "2 values but 1 weights"),
        ([1.0, 2.0], [1.0, -0.5], r"weights\[1\]=-0.5 is negative"),
        ([], [], "empty"),
        ([1.0, 2.0], [0, 0.0], "all 2 weights are zero"),
        ([1.0], [math.nan], "not finite"),
        ([math.nan], [1.0], "not finite"),
    ],
)
def test_weighted_mean_errors(values: list[float], weights: list[float], match: str) -> None:
    with raises_stats(match):
        weighted_mean(values, weights)


# --------------------------------------------------------------------------- wilson


WILSON_GRID = [
    (s, n, level)
    for n in (1, 2, 3, 5, 10, 17, 50, 100, 1000, 12345)
    for s in sorted({0, 1, n // 3, n // 2, n - 1, n})
    for level in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999)
]


@pytest.mark.parametrize(("s", "n", "level"), WILSON_GRID)
def test_wilson_matches_scipy(s: int, n: int, level: float) -> None:
    ref = scipy.stats.binomtest(s, n).proportion_ci(confidence_level=level, method="wilson")
    iv = wilson_interval(s, n, level=level)
    assert iv.low == pytest.approx(ref.low, abs=1e-12)
    assert iv.high == pytest.approx(ref.high, abs=1e-12)
    assert 0.0 <= iv.low <= s / n <= iv.high <= 1.0
    assert (iv.level, iv.method) == (level, "wilson")


@pytest.mark.parametrize(
    ("s", "n", "low", "high"),
    [
        (1, 3, "0.0615", "0.7923"),
        (3, 3, "0.4385", "1"),
        (2, 3, "0.2077", "0.9385"),
    ],
)
def test_wilson_z196_published_values(s: int, n: int, low: str, high: str) -> None:
    iv = wilson_interval(s, n, z=1.96)
    assert round_half_up(iv.low) == Decimal(low)
    assert round_half_up(iv.high) == Decimal(high)


def test_wilson_z_overrides_level() -> None:
    a = wilson_interval(7, 20, z=1.96)
    b = wilson_interval(7, 20, level=0.95)
    assert a.low == pytest.approx(b.low, abs=1e-4)
    assert a.low != b.low  # 1.96 is not exactly the 97.5% normal quantile
    assert wilson_interval(7, 20, level=0.5, z=1.96).low == a.low


def test_wilson_edges() -> None:
    assert wilson_interval(0, 0) == Interval(0.0, 0.0, 0.95, "wilson")
    assert wilson_interval(0, 10).low == 0.0
    assert wilson_interval(10, 10).high == 1.0
    narrow = wilson_interval(30, 100, level=0.8)
    wide = wilson_interval(30, 100, level=0.99)
    assert wide.low < narrow.low < narrow.high < wide.high


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"successes": -1, "n": 3}, "successes=-1"),
        ({"successes": 1, "n": -3}, "n=-3"),
        ({"successes": 4, "n": 3}, "successes=4, n=3"),
        ({"successes": 1, "n": 3, "level": 1.0}, "level=1.0"),
        ({"successes": 1, "n": 3, "level": 0.0}, "level=0.0"),
        ({"successes": 1, "n": 3, "level": 95}, "level=95"),
        ({"successes": 1, "n": 3, "level": math.nan}, "level=nan"),
        ({"successes": 1, "n": 3, "z": 0.0}, "z=0.0"),
        ({"successes": 1, "n": 3, "z": math.inf}, "z=inf"),
        ({"successes": 1.5, "n": 3}, "successes=1.5 must be an integer"),
        ({"successes": True, "n": 3}, "successes=True must be an integer"),
    ],
)
def test_wilson_errors(kwargs: dict[str, Any], match: str) -> None:
    with raises_stats(match):
        wilson_interval(**kwargs)


# --------------------------------------------------------------------------- pass@k


def chen_reference(n: int, c: int, k: int) -> float:
    """The numerically stable estimator from Chen et al. (2021), numpy-free."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


SMALL_PASS_GRID = [(n, c, k) for n in range(1, 31) for c in range(n + 1) for k in range(1, n + 1)]


def test_pass_at_k_matches_chen_reference() -> None:
    for n, c, k in SMALL_PASS_GRID:
        expected = chen_reference(n, c, k)
        assert pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-12, abs=1e-12), (n, c, k)


def test_pass_at_k_matches_direct_combinations() -> None:
    for n, c, k in SMALL_PASS_GRID:
        direct = 1 - math.comb(n - c, k) / math.comb(n, k)
        assert pass_at_k(n, c, k) == pytest.approx(direct, abs=1e-15), (n, c, k)


def test_pass_at_k_is_exact_for_large_n() -> None:
    assert pass_at_k(10**5, 1, 1) == 1e-5
    assert pass_at_k(10**5, 1, 1) == float(Fraction(1, 10**5))
    # The float product form is off in the last digits here; the exact one is not.
    assert chen_reference(10**5, 1, 1) != 1e-5
    n, c, k = 100_000, 37, 100
    exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    assert pass_at_k(n, c, k) == float(exact)


def test_pass_at_k_large_n_stays_in_range() -> None:
    for c in (1, 10, 1000, 50_000):
        assert 0.0 < pass_at_k(100_000, c, 100) <= 1.0


def test_pass_at_k_examples() -> None:
    assert pass_at_k(5, 2, 2) == 0.7
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(10, 6, 5) == 1.0  # n - c < k: every draw of 5 contains a correct one


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 0, 1), "n=0"),
        ((-1, 0, 1), "n=-1"),
        ((5, -1, 1), "c=-1"),
        ((5, 6, 1), "c=6, n=5"),
        ((5, 2, 0), "k=0"),
        ((5, 2, 6), "k=6, n=5"),
        ((True, 0, 1), "n=True must be an integer"),
        ((5, False, 1), "c=False must be an integer"),
        ((5, 2, 1.0), "k=1.0 must be an integer"),
        ((5.0, 2, 1), "n=5.0 must be an integer"),
        ((5, "2", 1), "c='2' must be an integer"),
        ((5, 2, None), "k=None must be an integer"),
    ],
)
def test_pass_at_k_errors(args: tuple[Any, Any, Any], match: str) -> None:
    with raises_stats(match):
        pass_at_k(*args)


@st.composite
def nck(draw: st.DrawFn, max_n: int = 300) -> tuple[int, int, int]:
    n = draw(st.integers(1, max_n))
    return n, draw(st.integers(0, n)), draw(st.integers(1, n))


@given(nck())
def test_pass_at_k_properties(args: tuple[int, int, int]) -> None:
    n, c, k = args
    value = pass_at_k(n, c, k)
    assert 0.0 <= value <= 1.0
    if c < n:
        assert pass_at_k(n, c + 1, k) >= value
    if k < n:
        assert pass_at_k(n, c, k + 1) >= value
    assert pass_at_k(n, c, 1) == c / n
    assert value == float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


# --------------------------------------------------------------------------- McNemar


MCNEMAR_GRID = [
    *itertools.product((0, 1, 2, 5, 10, 37, 100, 500), repeat=2),
    (900, 1100),
    (950, 1050),
    (1000, 1000),
    (700, 1300),
    (300, 1700),
    (10, 1990),
    (1990, 10),
]


@pytest.mark.parametrize(("b", "c"), [bc for bc in MCNEMAR_GRID if sum(bc) > 0])
def test_mcnemar_matches_scipy(b: int, c: int) -> None:
    ref = scipy.stats.binomtest(min(b, c), b + c, 0.5).pvalue
    got = mcnemar_exact(b, c)
    assert got == pytest.approx(ref, rel=1e-9, abs=0.0)
    assert got > 0.0 or ref == 0.0  # no premature underflow


def test_mcnemar_exact_values() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(1, 9) == 22 / 1024
    assert mcnemar_exact(0, 5) == 2 / 32
    # 2 * 2**-1000 is a normal float; a float-based binomial sum would lose it.
    assert mcnemar_exact(0, 1000) == 2.0**-999
    assert mcnemar_exact(2, 1500) == float(Fraction(2 * (1 + 1500 + math.comb(1500, 2)), 2**1502))


@given(st.integers(0, 400), st.integers(0, 400))
def test_mcnemar_properties(b: int, c: int) -> None:
    p = mcnemar_exact(b, c)
    assert 0.0 <= p <= 1.0
    assert p == mcnemar_exact(c, b)
    n, m = b + c, min(b, c)
    exact = min(Fraction(1), 2 * Fraction(sum(math.comb(n, i) for i in range(m + 1)), 2**n))
    assert p == float(exact)


@pytest.mark.parametrize(
    ("b", "c", "match"),
    [
        (-1, 3, "b=-1, c=3"),
        (3, -2, "b=3, c=-2"),
        (1.5, 3, "b=1.5 must be an integer"),
        (1, True, "c=True must be an integer"),
    ],
)
def test_mcnemar_errors(b: Any, c: Any, match: str) -> None:
    with raises_stats(match):
        mcnemar_exact(b, c)


# --------------------------------------------------------------------------- percentile


def test_percentile_nearest_rank_examples() -> None:
    data = list(range(1, 11))
    random.Random(3).shuffle(data)  # input order must not matter
    assert percentile(data, 0.5) == 5
    assert percentile(data, 0.95) == 10
    assert percentile(data, 0.0) == 1
    assert percentile(data, 1.0) == 10
    assert percentile(data, 0.1) == 1  # 0.1 * 10 is float noise around rank 1
    assert percentile(data, 0.3) == 3
    assert percentile(data, 0.31) == 4
    assert percentile([15, 20, 35, 40, 50], 0.4) == 20  # the Wikipedia example
    assert percentile([7.5], 0.99) == 7.5
    hundred = list(range(1, 101))
    assert 0.07 * 100 > 7  # float noise above the integer rank ...
    assert percentile(hundred, 0.07) == 7  # ... must not push the rank to 8
    assert 0.57 * 100 < 57
    assert percentile(hundred, 0.57) == 57
    assert data != sorted(data)  # the caller's list is not sorted in place


@pytest.mark.parametrize(
    ("values", "p", "match"),
    [
        ([], 0.5, "empty"),
        ([1, 2], -0.1, r"p=-0.1"),
        ([1, 2], 1.5, r"p=1.5"),
        ([1, 2], 95, r"p=95"),
        ([1, 2], math.nan, r"p=nan"),
        ([1, math.nan], 0.5, r"values\[1\] is NaN"),
    ],
)
def test_percentile_errors(values: list[float], p: float, match: str) -> None:
    with raises_stats(match):
        percentile(values, p)


@given(
    st.lists(finite, min_size=1, max_size=40),
    st.floats(0, 1),
    st.floats(0, 1),
)
def test_percentile_properties(values: list[float], p1: float, p2: float) -> None:
    lo, hi = sorted((p1, p2))
    a, b = percentile(values, lo), percentile(values, hi)
    assert a in values
    assert b in values
    assert a <= b


# --------------------------------------------------------------------------- bootstrap


def sample_data(n: int = 200, seed: int = 7) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(0.6, 0.2) for _ in range(n)]


def test_bootstrap_is_deterministic_per_seed() -> None:
    data = sample_data()
    first = bootstrap_interval(data, seed=11)
    assert bootstrap_interval(data, seed=11) == first
    assert bootstrap_interval(list(data), seed=11) == first
    others = {bootstrap_interval(data, seed=s) for s in range(5)}
    assert len(others) > 1
    assert first.method == "bootstrap"
    assert first.level == 0.95


def test_bootstrap_uses_documented_nearest_rank_quantiles() -> None:
    data = sample_data(50)
    resamples, level, seed = 400, 0.9, 5
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(data, k=len(data))) / len(data) for _ in range(resamples))
    alpha = (1 - level) / 2
    expected_low = means[math.ceil(round(alpha * resamples, 9)) - 1]  # 20th of 400
    expected_high = means[math.ceil(round((1 - alpha) * resamples, 9)) - 1]  # 380th
    iv = bootstrap_interval(data, level=level, resamples=resamples, seed=seed)
    assert (iv.low, iv.high) == (expected_low, expected_high)
    assert (iv.low, iv.high) == (means[19], means[379])


def test_bootstrap_default_takes_50th_and_1950th_of_2000() -> None:
    data = sample_data(30)
    rng = random.Random(0)
    means = sorted(math.fsum(rng.choices(data, k=len(data))) / len(data) for _ in range(2000))
    # (1 - 0.95) / 2 * 2000 is 50.00000000000004 in floats; the rank is still the 50th.
    iv = bootstrap_interval(data)
    assert (iv.low, iv.high) == (means[49], means[1949])


def test_bootstrap_contains_the_sample_mean_and_honours_level() -> None:
    data = sample_data()
    m = mean(data)
    narrow = bootstrap_interval(data, level=0.8)
    wide = bootstrap_interval(data, level=0.99)
    for iv in (narrow, wide):
        assert iv.low < m < iv.high
    assert narrow.high - narrow.low < wide.high - wide.low
    # Roughly the normal-theory width: 2 * 1.96 * sd / sqrt(n).
    width = bootstrap_interval(data).high - bootstrap_interval(data).low
    expected = 2 * 1.96 * statistics.stdev(data) / math.sqrt(len(data))
    assert width == pytest.approx(expected, rel=0.15)


@pytest.mark.parametrize("values", [[0.7], [0.1] * 5, [3, 3, 3]])
def test_bootstrap_degenerate(values: list[float]) -> None:
    iv = bootstrap_interval(values)
    assert iv.low == iv.high == values[0]


def test_bootstrap_custom_statistic() -> None:
    data = sample_data(101)
    iv = bootstrap_interval(data, statistic=statistics.median)
    assert iv.low < statistics.median(data) < iv.high
    iv_max = bootstrap_interval(data, statistic=max)
    assert iv_max.high == max(data)
    assert bootstrap_interval([2.0, 2.0], statistic=lambda xs: 10 * xs[0]) == Interval(
        20.0, 20.0, 0.95, "bootstrap"
    )


@pytest.mark.parametrize(
    ("values", "kwargs", "match"),
    [
        ([], {}, "empty"),
        ([1.0, 2.0], {"resamples": 0}, "resamples=0"),
        ([1.0, 2.0], {"resamples": 10.5}, "resamples=10.5 must be an integer"),
        ([1.0, 2.0], {"level": 1.0}, "level=1.0"),
        ([1.0, 2.0], {"level": 95}, "level=95"),
        ([1.0, math.inf], {}, "not finite"),
        ([1.0, 2.0], {"statistic": lambda xs: math.nan}, "NaN"),
    ],
)
def test_bootstrap_errors(values: list[float], kwargs: dict[str, Any], match: str) -> None:
    with raises_stats(match):
        bootstrap_interval(values, **kwargs)


# --------------------------------------------------------------------------- paired


def paired_data(n: int = 120, seed: int = 2) -> tuple[list[float], list[float]]:
    rng = random.Random(seed)
    a = [float(rng.random() < 0.55) for _ in range(n)]
    b = [float(rng.random() < 0.7) for _ in range(n)]
    return a, b


def test_paired_comparison_with_flags() -> None:
    a, b = paired_data()
    result = paired_comparison(a, b, passed_a=[x == 1.0 for x in a], passed_b=[y == 1.0 for y in b])
    assert isinstance(result, PairedComparison)
    assert result.n == len(a)
    assert result.mean_a == statistics.fmean(a)
    assert result.mean_b == statistics.fmean(b)
    assert result.delta == pytest.approx(statistics.fmean(b) - statistics.fmean(a), abs=1e-15)
    assert result.interval.low <= result.delta <= result.interval.high
    assert result.interval.method == "paired_bootstrap"
    assert result.interval.level == 0.95
    counts = (result.a_only, result.b_only, result.both, result.neither)
    assert None not in counts
    assert sum(c for c in counts if c is not None) == result.n
    assert result.a_only == sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    assert result.b_only == sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    assert result.a_only is not None
    assert result.b_only is not None
    assert result.mcnemar_p == mcnemar_exact(result.a_only, result.b_only)


def test_paired_comparison_without_flags() -> None:
    a = [0.2, 0.4, 0.5, 0.9, 0.3]
    b = [0.3, 0.6, 0.5, 1.0, 0.6]
    result = paired_comparison(a, b, level=0.9, resamples=500, seed=3)
    assert (result.a_only, result.b_only, result.both, result.neither) == (None,) * 4
    assert result.mcnemar_p is None
    assert result.delta == pytest.approx(0.14)
    assert result.interval.level == 0.9
    assert 0.0 <= result.interval.low <= result.delta <= result.interval.high
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    expected = bootstrap_interval(diffs, level=0.9, resamples=500, seed=3)
    assert (result.interval.low, result.interval.high) == (expected.low, expected.high)
    assert paired_comparison(a, b, level=0.9, resamples=500, seed=3) == result


def test_paired_comparison_docstring_example() -> None:
    r = paired_comparison(
        [0, 1, 0, 1], [1, 1, 1, 1], passed_a=[False, True, False, True], passed_b=[True] * 4
    )
    assert (r.delta, r.a_only, r.b_only, r.both, r.neither) == (0.5, 0, 2, 2, 0)
    assert r.mcnemar_p == 0.5
    int_a: list[Any] = [0, 1]  # 1/0 are accepted as pass/fail flags too
    int_b: list[Any] = [1, 0]
    flags = paired_comparison([0, 1], [1, 0], passed_a=int_a, passed_b=int_b)
    assert (flags.a_only, flags.b_only) == (1, 1)


@given(st.lists(st.tuples(finite, finite, st.booleans(), st.booleans()), min_size=1, max_size=30))
@settings(max_examples=50, deadline=None)
def test_paired_comparison_properties(rows: list[tuple[float, float, bool, bool]]) -> None:
    a = [r[0] for r in rows]
    b = [r[1] for r in rows]
    result = paired_comparison(
        a, b, passed_a=[r[2] for r in rows], passed_b=[r[3] for r in rows], resamples=200
    )
    assert result.delta == result.mean_b - result.mean_a
    assert result.mean_a == pytest.approx(statistics.fmean(a), rel=1e-12, abs=1e-9)
    assert result.interval.low <= result.interval.high
    assert result.a_only is not None
    assert result.b_only is not None
    assert result.both is not None
    assert result.neither is not None
    assert result.a_only + result.b_only + result.both + result.neither == len(rows)
    assert result.both == sum(1 for r in rows if r[2] and r[3])
    assert result.neither == sum(1 for r in rows if not r[2] and not r[3])
    assert result.mcnemar_p == mcnemar_exact(result.a_only, result.b_only)


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "match"),
    [
        ([1.0, 2.0], [1.0], {}, "a has 2 scores but b has 1"),
        ([], [], {}, "empty"),
        ([1.0], [1.0], {"passed_a": [True]}, "passed_a was given without"),
        ([1.0], [1.0], {"passed_b": [True]}, "passed_b was given without"),
        (
            [1.0, 0.0],
            [1.0, 1.0],
            {"passed_a": [True], "passed_b": [True, True]},
            "passed_a has 1 flags but there are 2 pairs",
        ),
        (
            [1.0],
            [1.0],
            {"passed_a": [True], "passed_b": [0.5]},
            r"passed_b\[0\]=0.5 is not a pass/fail flag",
        ),
        ([1.0], [math.nan], {}, "not finite"),
        ([1.0, 2.0], [1.0, 3.0], {"level": 0}, "level=0"),
    ],
)
def test_paired_comparison_errors(
    a: list[float], b: list[float], kwargs: dict[str, Any], match: str
) -> None:
    with raises_stats(match):
        paired_comparison(a, b, **kwargs)


def test_errors_are_stats_errors_not_nan() -> None:
    calls: list[Callable[[], object]] = [
        lambda: mean([]),
        lambda: weighted_mean([1.0], [0.0]),
        lambda: percentile([], 0.5),
        lambda: bootstrap_interval([]),
    ]
    for call in calls:
        with pytest.raises(StatsError):
            call()


# --------------------------------------------------------------------------- normal / auto


def test_normal_interval_matches_scipy_t_free_formula() -> None:
    values = [0.0, 1.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.75] * 20
    iv = stats.normal_interval(values, level=0.9)
    sem = scipy.stats.sem(values)
    z = scipy.stats.norm.ppf(0.95)
    centre = sum(values) / len(values)
    assert iv.method == "normal"
    assert iv.low == pytest.approx(centre - z * sem, rel=1e-12)
    assert iv.high == pytest.approx(centre + z * sem, rel=1e-12)


def test_normal_interval_single_value_is_degenerate() -> None:
    assert stats.normal_interval([0.3]) == stats.Interval(0.3, 0.3, 0.95, "normal")
    with pytest.raises(StatsError):
        stats.normal_interval([])


def test_mean_interval_switches_method_above_the_bootstrap_limit() -> None:
    small = [0.0, 1.0] * (stats.BOOTSTRAP_MAX_N // 2)
    large = [*small, 1.0]
    assert stats.mean_interval(small).method == "bootstrap"
    assert stats.mean_interval(large).method == "normal"
    assert stats.mean_interval(small, seed=3) == stats.mean_interval(small, seed=3)


def test_paired_comparison_uses_normal_interval_for_many_pairs() -> None:
    n = stats.BOOTSTRAP_MAX_N + 1
    a = [float(i % 2) for i in range(n)]
    b = [float((i + 1) % 3 == 0) for i in range(n)]
    result = stats.paired_comparison(a, b)
    assert result.interval.method == "paired_normal"
    assert result.interval.low <= result.delta <= result.interval.high


# --------------------------------------------------------------------------- Student t


@given(
    st.floats(min_value=-50, max_value=50, allow_nan=False),
    st.floats(min_value=0.5, max_value=500, allow_nan=False),
)
@settings(max_examples=200, deadline=None)
def test_t_cdf_matches_scipy(t: float, df: float) -> None:
    assert stats.t_cdf(t, df) == pytest.approx(scipy.stats.t.cdf(t, df), abs=1e-12)


@given(
    st.floats(min_value=1e-6, max_value=1 - 1e-6, allow_nan=False),
    st.sampled_from([1, 2, 3, 4, 5, 9, 11, 19, 29, 49, 99, 999]),
)
@settings(max_examples=200, deadline=None)
def test_t_quantile_matches_scipy(p: float, df: int) -> None:
    expected = scipy.stats.t.ppf(p, df)
    assert stats.t_quantile(p, df) == pytest.approx(expected, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: stats.t_quantile(1.0, 3), "strictly between 0 and 1"),
        (lambda: stats.t_quantile(0.5, 0), "df=0 must be a positive"),
        (lambda: stats.t_cdf(1.0, -1), "df=-1"),
        (lambda: stats.t_cdf(math.nan, 3), "NaN"),
    ],
)
def test_t_errors(call: Callable[[], object], match: str) -> None:
    with raises_stats(match):
        call()


def test_t_cdf_infinite_and_symmetric() -> None:
    assert stats.t_cdf(math.inf, 4) == 1.0
    assert stats.t_cdf(-math.inf, 4) == 0.0
    assert stats.t_cdf(0.0, 7) == 0.5
    assert stats.t_quantile(0.5, 7) == 0.0
    assert stats.t_quantile(0.025, 7) == -stats.t_quantile(0.975, 7)


# --------------------------------------------------------------------------- clustered


@given(
    st.lists(st.floats(min_value=0, max_value=1, allow_nan=False), min_size=2, max_size=40),
    st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
@settings(max_examples=100, deadline=None)
def test_clustered_interval_without_clusters_is_the_t_interval(
    values: list[float], level: float
) -> None:
    iv = stats.clustered_interval(values, level=level, bounds=None)
    centre = statistics.fmean(values)
    sem = scipy.stats.sem(values)
    assert (iv.method, iv.n, iv.level) == ("cluster_t", len(values), level)
    if sem == 0:
        assert iv.low == iv.high == pytest.approx(centre)
        return
    low, high = scipy.stats.t.interval(level, len(values) - 1, loc=centre, scale=sem)
    assert iv.low == pytest.approx(low, abs=1e-9)
    assert iv.high == pytest.approx(high, abs=1e-9)


def test_clustered_interval_uses_cluster_sums_and_g_minus_1_df() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.5]
    labels = ["a", "a", "b", "b", "c", "c", "d", "d"]
    iv = stats.clustered_interval(values, labels, unit="task")
    est = statistics.fmean(values)
    sums: dict[str, float] = {}
    for v, label in zip(values, labels, strict=True):
        sums[label] = sums.get(label, 0.0) + v - est
    g = len(sums)
    se = math.sqrt(g / (g - 1) * sum(s * s for s in sums.values())) / len(values)
    half = scipy.stats.t.ppf(0.975, g - 1) * se
    assert (iv.method, iv.n) == ("task_t", 4)
    assert iv.low == pytest.approx(max(0.0, est - half), abs=1e-12)
    assert iv.high == pytest.approx(min(1.0, est + half), abs=1e-12)
    # equal-size clusters: the same as the t interval over cluster means
    means = [statistics.fmean(values[i : i + 2]) for i in range(0, 8, 2)]
    plain = stats.clustered_interval(means, bounds=None)
    assert (iv.low, iv.high) == pytest.approx((max(0.0, plain.low), min(1.0, plain.high)))


def test_clustered_interval_is_wider_than_pretending_cells_are_independent() -> None:
    values = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0] * 3
    labels = [f"t{i // 3}" for i in range(len(values))]
    clustered = stats.clustered_interval(values, labels)
    naive = stats.clustered_interval(values)
    assert clustered.high - clustered.low > 1.5 * (naive.high - naive.low)


def test_clustered_interval_degenerate_cases_stay_honest() -> None:
    # every task passed every epoch: not certainty, but Wilson over the 12 tasks
    values = [1.0] * 36
    labels = [f"t{i // 3}" for i in range(36)]
    iv = stats.clustered_interval(values, labels, unit="task")
    wilson = stats.wilson_interval(12, 12)
    assert iv.method == "cluster_wilson" and iv.n == 12
    assert (iv.low, iv.high) == pytest.approx((wilson.low, wilson.high))
    # one cluster: nothing is known about the next one
    one = stats.clustered_interval([0.2, 0.4], ["a", "a"])
    assert (one.low, one.high, one.n) == (0.0, 1.0, 1)
    assert stats.clustered_interval([0.2, 0.4], ["a", "a"], bounds=None).low == pytest.approx(0.3)


def test_clustered_interval_weights_and_errors() -> None:
    iv = stats.clustered_interval([0.0, 1.0, 1.0], weights=[2.0, 1.0, 1.0], bounds=None)
    assert (iv.low + iv.high) / 2 == pytest.approx(0.5)
    with raises_stats("3 values but 2 cluster labels"):
        stats.clustered_interval([0.0, 1.0, 1.0], ["a", "b"])
    with raises_stats("weights must be non-negative"):
        stats.clustered_interval([0.0, 1.0], weights=[0.0, 0.0])
    with raises_stats("1 weights"):
        stats.clustered_interval([0.0, 1.0], weights=[1.0])


def test_cluster_bootstrap_resamples_clusters_and_is_seeded() -> None:
    values = [1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0]
    labels = ["a", "a", "b", "b", "c", "c", "d", "d"]
    iv = stats.cluster_bootstrap_interval(values, labels, seed=4)
    assert iv == stats.cluster_bootstrap_interval(values, labels, seed=4)
    assert (iv.method, iv.n) == ("cluster_bootstrap", 4)
    # cluster means are 1, 0, 0.5, 1: every resampled mean is a mean of those
    assert 0.0 <= iv.low <= 0.625 <= iv.high <= 1.0
    assert stats.cluster_bootstrap_interval([0.5, 0.7], ["a", "a"]).low == pytest.approx(0.6)


def test_variance_split_matches_one_way_anova() -> None:
    rng = random.Random(5)
    tasks = [f"t{i}" for i in range(20) for _ in range(4)]
    values = [rng.random() < (0.2 + 0.03 * int(t[1:])) for t in tasks]
    vs = stats.variance_split([float(v) for v in values], tasks)
    groups = [
        [float(v) for v, t in zip(values, tasks, strict=True) if t == f"t{i}"] for i in range(20)
    ]
    within = statistics.fmean([statistics.variance(g) for g in groups])
    between = max(0.0, statistics.variance([statistics.fmean(g) for g in groups]) - within / 4)
    assert vs.within == pytest.approx(within)
    assert vs.between == pytest.approx(between)
    assert (vs.tasks, vs.epochs) == (20, 4.0)
    se = statistics.stdev([statistics.fmean(g) for g in groups]) / math.sqrt(20)
    if between > 0:
        assert vs.se() == pytest.approx(se)
    assert vs.se(epochs=1e12) < vs.se() < vs.se(epochs=1)
    assert vs.se(tasks=80) == pytest.approx(vs.se() / 2)
    assert stats.variance_split([0.5, 0.7], ["a", "b"]).within is None
    with raises_stats("must be positive"):
        vs.se(tasks=0)


# --------------------------------------------------------------------------- task-level tests


@given(st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 2.0]), min_size=2, max_size=10))
@settings(max_examples=60, deadline=None)
def test_sign_flip_matches_scipy_permutation_test(diffs: list[float]) -> None:
    import numpy as np

    nonzero = [d for d in diffs if d != 0.0]
    p = stats.sign_flip_exact(diffs)
    if len(nonzero) < 2:
        assert p == 1.0  # one non-zero difference: both signs are as extreme
        return
    ref = scipy.stats.permutation_test(
        (np.array(nonzero),),
        lambda x, axis=-1: np.abs(np.sum(x, axis=axis)),
        permutation_type="samples",
        alternative="greater",
        vectorized=True,
        n_resamples=10**6,
    )
    assert p == pytest.approx(ref.pvalue, abs=1e-12)


def test_sign_flip_exact_values_and_limits() -> None:
    assert stats.sign_flip_exact([1.0] * 6) == pytest.approx(2 / 64)
    assert stats.sign_flip_exact([0.0, 0.0]) == 1.0
    with raises_stats("2\\*\\*25 sign patterns"):
        stats.sign_flip_exact([1.0] * 25)


def test_sign_flip_critical_value_is_the_exact_alpha_threshold() -> None:
    p, critical = stats._sign_flip([1.0] * 6, 0.05)
    assert p == pytest.approx(2 / 64)
    assert critical == 6.0  # only the two all-same-sign patterns are that extreme
    assert stats._sign_flip([1.0] * 5, 0.05)[1] == math.inf  # 2/32 > 0.05: never rejects


def test_holm_matches_the_step_down_definition() -> None:
    ps = [0.01, 0.04, 0.03, 0.5]
    assert stats.holm(ps) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert stats.holm([0.9, 0.8]) == [1.0, 1.0]  # 2 * 0.8 caps at 1; monotone after
    assert stats.holm([0.3]) == [0.3]


def test_paired_task_comparison_uses_mcnemar_for_pass_fail_tasks() -> None:
    a = [1.0] * 12
    b = [0.0] * 7 + [1.0] * 5
    r = stats.paired_task_comparison(a, b)
    assert (r.method, r.a_only, r.b_only, r.both, r.neither) == ("mcnemar_exact", 7, 0, 5, 0)
    assert r.p_value == r.mcnemar_p == mcnemar_exact(7, 0) == pytest.approx(0.015625)
    assert (r.n_tasks, r.n_clusters, r.interval.method, r.interval.n) == (
        12,
        12,
        "paired_score",
        12,
    )
    assert r.interval.high < 0  # the test rejects, so the interval excludes 0
    assert r.delta == pytest.approx(-7 / 12)
    assert r.mde is not None and r.mde > 0


def test_paired_task_comparison_sign_flip_for_few_tasks_with_fractions() -> None:
    a = [0.0, 1 / 3, 2 / 3, 1.0, 0.0, 1 / 3]
    b = [1 / 3, 2 / 3, 2 / 3, 1.0, 1.0, 1.0]
    r = stats.paired_task_comparison(a, b)
    assert r.method == "sign_flip_exact"
    assert r.p_value == stats.sign_flip_exact([y - x for x, y in zip(a, b, strict=True)])
    assert r.a_only is None and r.mcnemar_p is None
    # the same pass/fail tasks in 3 clusters: McNemar would pretend 12 units
    clusters = ["p1", "p1", "p1", "p2", "p2", "p2", "p3", "p3", "p3", "p4", "p4", "p4"]
    rc = stats.paired_task_comparison([1.0] * 12, [0.0] * 7 + [1.0] * 5, clusters=clusters)
    assert (rc.method, rc.n_clusters, rc.interval.method) == (
        "sign_flip_exact",
        4,
        "paired_sign_flip",
    )
    assert rc.p_value is not None and rc.p_value > 0.1
    assert rc.interval.low <= 0.0 <= rc.interval.high


def test_paired_task_comparison_t_test_for_many_clusters_matches_scipy() -> None:
    rng = random.Random(9)
    a = [rng.random() for _ in range(40)]
    b = [min(1.0, x + rng.uniform(-0.2, 0.3)) for x in a]
    r = stats.paired_task_comparison(a, b)
    ref = scipy.stats.ttest_rel(b, a)
    assert r.method == "paired_t"
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    low, high = ref.confidence_interval(0.95)
    assert (r.interval.low, r.interval.high) == pytest.approx((low, high), rel=1e-9)
    se = statistics.stdev([y - x for x, y in zip(a, b, strict=True)]) / math.sqrt(40)
    assert r.mde is not None
    # at a true difference of mde the t test's power (noncentral t, scipy) is 80 %
    crit = scipy.stats.t.ppf(0.975, 39)
    ncp = r.mde / se
    power = scipy.stats.nct.sf(crit, 39, ncp) + scipy.stats.nct.cdf(-crit, 39, ncp)
    assert power == pytest.approx(0.8, abs=0.005)
    assert r.mde > (crit + scipy.stats.norm.ppf(0.8)) * se  # the plain formula overpromises
    assert r.tasks_needed(r.mde / 2) == 160


@pytest.mark.parametrize("df", [2, 5, 11, 39, 200])
def test_detectable_effect_matches_noncentral_t_power(df: int) -> None:
    crit = scipy.stats.t.ppf(0.975, df)
    ncp = stats._detectable(crit, 0.8, df)
    power = scipy.stats.nct.sf(crit, df, ncp) + scipy.stats.nct.cdf(-crit, df, ncp)
    # never below the promised 80 %; close to it once there are tens of units
    assert 0.8 <= power <= (0.87 if df < 10 else 0.815 if df < 30 else 0.805)


def test_paired_task_comparison_errors_and_identical_conditions() -> None:
    same = stats.paired_task_comparison([0.5, 0.2, 0.9], [0.5, 0.2, 0.9])
    assert (same.p_value, same.delta, same.mde) == (1.0, 0.0, None)
    assert same.tasks_needed(0.1) is None
    with raises_stats("a has 2 values but b has 1"):
        stats.paired_task_comparison([1.0, 0.0], [1.0])
    with raises_stats("level=2"):
        stats.paired_task_comparison([1.0], [1.0], alpha=2)


def test_paired_task_comparison_with_no_task_moving_is_not_certain() -> None:
    r = stats.paired_task_comparison([1.0, 0.0] * 6, [1.0, 0.0] * 6)
    bound = stats.wilson_interval(0, 12).high
    assert (r.interval.low, r.interval.high) == pytest.approx((-bound, bound))
    assert r.p_value == 1.0 and r.delta == 0.0


@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.25, 0.5, 1.0]),
            st.sampled_from([0.0, 0.5, 0.75, 1.0]),
            st.sampled_from(["p", "q", "r", "s", "t"]),
        ),
        min_size=1,
        max_size=30,
    ),
    st.booleans(),
)
@settings(max_examples=80, deadline=None)
def test_paired_task_comparison_properties(
    rows: list[tuple[float, float, str]], clustered: bool
) -> None:
    a = [r[0] for r in rows]
    b = [r[1] for r in rows]
    clusters = [r[2] for r in rows] if clustered else None
    r = stats.paired_task_comparison(a, b, clusters=clusters)
    assert r.p_value is not None and 0.0 < r.p_value <= 1.0
    assert r.interval.low <= r.delta <= r.interval.high
    assert r.interval.low >= -1.0 and r.interval.high <= 1.0
    assert r.n_tasks == len(rows)
    assert r.n_clusters == (len(set(clusters)) if clusters else len(rows))
    assert r.mde is None or r.mde > 0
    if r.method == "mcnemar_exact":
        assert not clustered or len(set(clusters or ())) == len(rows)
        assert r.mcnemar_p == r.p_value
    # the interval inverts the test: it excludes 0 exactly when p < alpha
    assert (r.interval.low > 0 or r.interval.high < 0) == (r.p_value < 0.05)


@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=1, max_size=60),
    st.sampled_from([0.9, 0.95, 0.99]),
)
@settings(max_examples=60, deadline=None)
def test_an_exact_test_and_its_interval_never_disagree(
    rows: list[tuple[int, int]], level: float
) -> None:
    a = [float(x) for x, _ in rows]
    b = [float(y) for _, y in rows]
    alpha = 1 - level
    for clusters in (None, [i % 7 for i in range(len(rows))]):
        r = stats.paired_task_comparison(a, b, clusters=clusters, level=level, alpha=alpha)
        excludes = r.interval.low > 0 or r.interval.high < 0
        assert r.p_value is not None
        assert excludes == (r.p_value < alpha), (r.method, r.p_value, r.interval)
        assert r.interval.low <= r.delta <= r.interval.high


def _tango_by_definition(better: int, worse: int, n: int, delta: float) -> float:
    """Tango's score statistic at ``delta``, with the constrained maximum-likelihood share
    of pairs a wins found numerically (scipy), not by the closed form."""
    same = n - better - worse

    def minus_loglik(q: float) -> float:
        p = q + delta
        rest = 1 - p - q
        terms = [(better, p), (worse, q), (same, rest)]
        return -sum(k * math.log(v) for k, v in terms if k)

    low, high = max(0.0, -delta) + 1e-12, (1 - delta) / 2 - 1e-12
    q = scipy.optimize.minimize_scalar(
        minus_loglik, bounds=(low, high), method="bounded", options={"xatol": 1e-12}
    ).x
    return (better - worse - n * delta) / math.sqrt(n * (2 * q + delta * (1 - delta)))


@pytest.mark.parametrize(("better", "worse", "n"), [(7, 1, 21), (12, 3, 40), (0, 0, 15), (9, 0, 9)])
def test_the_mcnemar_interval_is_tangos_score_interval(better: int, worse: int, n: int) -> None:
    a = [0.0] * better + [1.0] * worse + [1.0] * (n - better - worse)
    b = [1.0] * better + [0.0] * worse + [1.0] * (n - better - worse)
    r = stats.paired_task_comparison(a, b)
    assert r.method == "mcnemar_exact" and r.interval.method == "paired_score"
    assert r.p_value is not None
    z = scipy.stats.norm.ppf(0.975)
    for end, side in ((r.interval.low, 1.0), (r.interval.high, -1.0)):
        if abs(end) < 1 and not (end == 0.0 and r.p_value >= 0.05):
            # each end is where the score statistic reaches the normal quantile
            assert side * _tango_by_definition(better, worse, n, end) == pytest.approx(z, abs=1e-6)
    if r.p_value >= 0.05:
        assert r.interval.low <= 0.0 <= r.interval.high  # joined to 0, as the test says


def test_the_sign_flip_interval_is_every_difference_the_test_keeps() -> None:
    rng = random.Random(43)
    grid = [i / 200 - 1 for i in range(401)]
    for _ in range(6):
        g = rng.randint(3, 8)
        a = [rng.choice([0.0, 0.25, 0.5, 1.0]) for _ in range(g)]
        b = [rng.choice([0.0, 0.5, 0.75, 1.0]) for _ in range(g)]
        r = stats.paired_task_comparison(a, b)
        assert r.method == "sign_flip_exact" or r.method == "mcnemar_exact"
        if r.method != "sign_flip_exact":
            continue
        kept = [
            m
            for m in grid
            if stats.sign_flip_exact([y - x - m for x, y in zip(a, b, strict=True)]) >= 0.05
        ]
        assert r.interval.method == "paired_sign_flip"
        assert r.interval.low == pytest.approx(min(kept), abs=5.1e-3)
        assert r.interval.high == pytest.approx(max(kept), abs=5.1e-3)


def test_a_unanimous_difference_over_many_clusters_has_a_positive_p_value() -> None:
    r = stats.paired_task_comparison([0.25] * 20, [0.75] * 20)
    assert r.method == "paired_t" and r.p_value == 2.0**-19


def test_paired_t_p_values_keep_their_precision_far_in_the_tail() -> None:
    a = [0.0] * 20
    b = [0.9 + 0.005 * (i % 3) for i in range(20)]
    r = stats.paired_task_comparison(a, b)
    ref = scipy.stats.ttest_rel(b, a).pvalue
    assert r.method == "paired_t" and 0.0 < r.p_value < 1e-20  # type: ignore[operator]
    assert r.p_value == pytest.approx(ref, rel=1e-6)
