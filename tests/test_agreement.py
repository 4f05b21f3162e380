"""Agreement statistics (issue 26) against oracles — published values, scipy, and
independent by-the-definition computations — and by Monte-Carlo: the task-bootstrap kappa
interval covers near 95 %, and the Rogan-Gladen pass rate is unbiased when the judge's
error rates are known.

Monte-Carlo bands allow 4 binomial standard errors, as in tests/test_stats_montecarlo.py;
the seeds are fixed, so nothing flakes.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable

import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from benchkit import agreement
from benchkit.errors import StatsError


def _kappa_by_definition(a: list[object], b: list[object]) -> float:
    cats = sorted(set(a) | set(b), key=repr)
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    p_e = sum((a.count(c) / n) * (b.count(c) / n) for c in cats)
    return (p_o - p_e) / (1 - p_e)


def test_cohen_kappa_of_a_hand_computed_table() -> None:
    # 20 judge-pass/human-pass, 5 pass/fail, 10 fail/pass, 15 fail/fail (50 items):
    # p_o = 35/50 = 0.7, p_e = 0.5·0.6 + 0.5·0.4 = 0.5, kappa = 0.4
    a = [True] * 25 + [False] * 25
    b = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert agreement.cohen_kappa(a, b) == pytest.approx(0.4)


@settings(deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("abc")), min_size=1))
def test_cohen_kappa_is_its_definition(pairs: list[tuple[str, str]]) -> None:
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    got = agreement.cohen_kappa(a, b)
    if got is None:  # only when chance agreement is certain
        assert len(set(a) | set(b)) == 1
    else:
        assert got == pytest.approx(_kappa_by_definition(list(a), list(b)), abs=1e-12)


def test_undefined_agreement_is_none_not_nan() -> None:
    assert agreement.cohen_kappa([True] * 5, [True] * 5) is None
    assert agreement.spearman_rho([1, 1, 1], [1, 2, 3]) is None
    assert agreement.fleiss_kappa([["y", "y"], ["y", "y"]]) is None
    assert agreement.krippendorff_alpha([[1, 1], [1, 1]]) is None


def test_weighted_kappa_by_hand_and_its_two_category_case() -> None:
    # categories 1, 2, 3; quadratic weights 0, 1/4, 1. Observed: one (3, 2) pair of four
    # -> 0.25/4; expected: marginals a {1:1, 2:1, 3:2}, b {1:1, 2:2, 3:1}, so
    # Σ ma·mb·w / 16 = (1·2·¼ + 1·1·1 + 1·1·¼ + 1·1·¼ + 2·1·1 + 2·2·¼) / 16 = 5/16
    assert agreement.weighted_kappa([1, 2, 3, 3], [1, 2, 2, 3]) == pytest.approx(
        1 - (0.25 / 4) / (5 / 16)
    )
    assert agreement.weighted_kappa([1, 2, 3, 3], [1, 2, 2, 3], weights="linear") == pytest.approx(
        1 - (0.5 / 4) / ((1 * 2 * 0.5 + 1 + 0.5 + 0.5 + 2 + 2 * 2 * 0.5) / 16)
    )
    a = [0, 0, 1, 1, 1, 0, 1]
    b = [0, 1, 1, 1, 0, 0, 1]
    assert agreement.weighted_kappa(a, b) == pytest.approx(agreement.cohen_kappa(a, b))


def _weighted_kappa_by_definition(
    a: list[float], b: list[float], weight: Callable[[float, float], float]
) -> float:
    n = len(a)
    observed = sum(weight(x, y) for x, y in zip(a, b, strict=True)) / n
    expected = sum(weight(x, y) for x in a for y in b) / (n * n)
    return 1 - observed / expected


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.1, 0.2, 0.9, 1.0]), st.sampled_from([0.0, 0.2, 1.0])),
        min_size=2,
        max_size=30,
    )
)
def test_weighted_kappa_weighs_the_score_values_distances(
    pairs: list[tuple[float, float]],
) -> None:
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    got = agreement.weighted_kappa(a, b)
    low, high = min(a + b), max(a + b)
    if high == low:  # one value throughout: no disagreement to expect
        assert got is None
        return
    assert got is not None
    by_values = _weighted_kappa_by_definition(a, b, lambda x, y: ((x - y) / (high - low)) ** 2)
    assert got == pytest.approx(by_values, abs=1e-12)
    rank = {v: i for i, v in enumerate(sorted(set(a) | set(b)))}
    k = len(rank) - 1
    by_ranks = _weighted_kappa_by_definition(a, b, lambda x, y: ((rank[x] - rank[y]) / k) ** 2)
    assert agreement.weighted_kappa(a, b, distance="ranks") == pytest.approx(by_ranks, abs=1e-12)


def test_weighted_kappa_tells_near_scores_from_far_ones() -> None:
    # the same disagreement counts, but 0.1 vs 0 is a near miss and 1.0 vs 0.1 a far one:
    # rank weights call both one step apart, value weights do not
    near = agreement.weighted_kappa([0.0, 0.1, 1.0, 1.0], [0.1, 0.1, 1.0, 1.0])
    far = agreement.weighted_kappa([0.0, 0.1, 1.0, 1.0], [0.0, 0.1, 0.1, 1.0])
    assert near is not None and far is not None and near > far
    assert agreement.weighted_kappa([0, 1, 2], [0, 1, 2], categories=[0, 1, 2, 10]) == 1.0
    with pytest.raises(StatsError, match="distance='ranks'"):
        agreement.weighted_kappa(["lo", "hi"], ["hi", "hi"], categories=["lo", "hi"])
    assert agreement.weighted_kappa(
        ["lo", "hi"], ["hi", "hi"], categories=["lo", "hi"], distance="ranks"
    ) == pytest.approx(0.0)


def test_krippendorff_alpha_of_one_pairable_unit_is_what_the_docstring_says() -> None:
    # one unit with two values has a value (its disagreement against its own spread);
    # no unit with two values, or no disagreement to expect, gives None
    assert agreement.krippendorff_alpha([[1, 0]]) == 0.0
    assert agreement.krippendorff_alpha([[1, 0], [1], [None, 0]]) == 0.0
    assert agreement.krippendorff_alpha([[1], [0, None]]) is None
    assert agreement.krippendorff_alpha([[1, 1]]) is None
    assert "no unit has two values to pair" in (agreement.krippendorff_alpha.__doc__ or "")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=3, max_size=40))
def test_spearman_matches_scipy(pairs: list[tuple[int, int]]) -> None:
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    got = agreement.spearman_rho(a, b)
    if len(set(a)) < 2 or len(set(b)) < 2:
        assert got is None
        return
    assert got == pytest.approx(float(scipy.stats.spearmanr(a, b).statistic), abs=1e-9)


def test_fleiss_kappa_by_hand_and_as_scotts_pi_for_two_raters() -> None:
    # P_i = 1, 1, 1/3; P̄ = 7/9; category shares 5/9 and 4/9, P_e = 41/81
    ratings = [["y", "y", "y"], ["n", "n", "n"], ["y", "n", "y"]]
    assert agreement.fleiss_kappa(ratings) == pytest.approx((7 / 9 - 41 / 81) / (1 - 41 / 81))
    # two raters: Scott's pi, whose chance term uses the pooled category shares
    a = [1, 1, 0, 1, 0, 0, 1, 1]
    b = [1, 0, 0, 1, 0, 1, 1, 1]
    pooled = Counter(a + b)
    p_e = sum((c / 16) ** 2 for c in pooled.values())
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / 8
    assert agreement.fleiss_kappa(list(zip(a, b, strict=True))) == pytest.approx(
        (p_o - p_e) / (1 - p_e)
    )


def test_krippendorff_alpha_reproduces_the_published_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 coders, 12
    # units, missing values; alpha = 0.743 nominal, 0.815 ordinal, 0.849 interval.
    n = None
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ]
    units = list(zip(*coders, strict=True))
    assert agreement.krippendorff_alpha(units) == pytest.approx(0.743, abs=5e-4)
    assert agreement.krippendorff_alpha(units, level="ordinal") == pytest.approx(0.815, abs=5e-4)
    assert agreement.krippendorff_alpha(units, level="interval") == pytest.approx(0.849, abs=5e-4)


def test_krippendorff_interval_level_equals_its_coincidence_definition() -> None:
    rng = random.Random(3)
    units = [[rng.choice([0.0, 0.25, 0.5, 1.0]) for _ in range(3)] for _ in range(15)]
    values = [v for u in units for v in u]
    n = len(values)
    observed = sum(
        (x - y) ** 2 / (len(u) - 1) for u in units for x, y in itertools.permutations(u, 2)
    )
    expected = sum((x - y) ** 2 for x, y in itertools.permutations(values, 2))
    assert agreement.krippendorff_alpha(units, level="interval") == pytest.approx(
        1 - (n - 1) * observed / expected
    )


def test_rogan_gladen_inverts_the_observed_rate_and_refuses_a_coin() -> None:
    true, se, sp = 0.3, 0.85, 0.9
    observed = true * se + (1 - true) * (1 - sp)
    assert agreement.rogan_gladen(observed, se, sp) == pytest.approx(true)
    with pytest.raises(StatsError, match="no better than chance"):
        agreement.rogan_gladen(0.5, 0.5, 0.5)
    with pytest.raises(StatsError, match="in \\[0, 1\\]"):
        agreement.rogan_gladen(1.5, 0.9, 0.9)


def test_task_bootstrap_moves_a_tasks_items_together_and_is_seeded() -> None:
    # every task's two items are identical, so any resample has an even count of each
    items = [i % 3 for i in range(10) for _ in range(2)]
    tasks = [i for i in range(10) for _ in range(2)]
    seen: list[int] = []

    def count(sample: object) -> float:
        seen.append(len(sample))  # type: ignore[arg-type]
        return float(len(sample))  # type: ignore[arg-type]

    iv = agreement.task_bootstrap(items, tasks, count, resamples=50, seed=1)
    assert iv is not None and iv.n == 10 and iv.method == "task_bootstrap"
    assert set(seen) == {20}
    first = agreement.task_bootstrap(items, tasks, lambda s: sum(s) / len(s), seed=4)
    again = agreement.task_bootstrap(items, tasks, lambda s: sum(s) / len(s), seed=4)
    assert first == again


def _draw_ratings(
    rng: random.Random, tasks: int, prevalence: float, se: float, sp: float
) -> tuple[list[bool], list[bool]]:
    human = [rng.random() < prevalence for _ in range(tasks)]
    judge = [(rng.random() < se) if h else (rng.random() >= sp) for h in human]
    return judge, human


def _true_kappa(prevalence: float, se: float, sp: float) -> float:
    p11 = prevalence * se
    p10 = (1 - prevalence) * (1 - sp)  # judge pass, human fail
    p01 = prevalence * (1 - se)
    p00 = (1 - prevalence) * sp
    judge_pass = p11 + p10
    p_o = p11 + p00
    p_e = judge_pass * prevalence + (1 - judge_pass) * (1 - prevalence)
    return (p_o - p_e) / (1 - p_e) if p01 >= 0 else 0.0


def test_kappa_intervals_cover_near_95_percent() -> None:
    runs, tasks = 200, 60
    prevalence, se, sp = 0.5, 0.85, 0.8
    truth = _true_kappa(prevalence, se, sp)
    rng = random.Random(26)
    covered = undefined = 0
    for i in range(runs):
        judge, human = _draw_ratings(rng, tasks, prevalence, se, sp)
        items = list(zip(judge, human, strict=True))
        iv = agreement.task_bootstrap(
            items,
            range(tasks),
            lambda s: agreement.cohen_kappa([a for a, _ in s], [b for _, b in s]),
            resamples=400,
            seed=i,
        )
        if iv is None:
            undefined += 1
            continue
        covered += iv.low <= truth <= iv.high
    rate = covered / (runs - undefined)
    half = 4 * (0.95 * 0.05 / runs) ** 0.5
    assert undefined == 0
    assert 0.95 - half <= rate <= 0.95 + half, rate


def test_the_corrected_pass_rate_is_unbiased_when_error_rates_are_known() -> None:
    runs, tasks = 3000, 40
    prevalence, se, sp = 0.3, 0.8, 0.9
    rng = random.Random(7)
    estimates: list[float] = []
    raw: list[float] = []
    for _ in range(runs):
        judge, _ = _draw_ratings(rng, tasks, prevalence, se, sp)
        observed = sum(judge) / tasks
        raw.append(observed)
        estimates.append(agreement.rogan_gladen(observed, se, sp))
    mean = sum(estimates) / runs
    spread = (sum((e - mean) ** 2 for e in estimates) / (runs - 1)) ** 0.5
    assert abs(mean - prevalence) <= 4 * spread / runs**0.5, mean
    # the judge's own rate is biased: 0.3·0.8 + 0.7·0.1 = 0.31 on average
    assert sum(raw) / runs == pytest.approx(0.31, abs=0.005)


@pytest.mark.slow
def test_the_corrected_pass_rate_interval_carries_the_error_rates_uncertainty() -> None:
    # 100 judged cells, 50 of them rated by people; the interval redraws both, so it
    # covers the true pass rate although Se and Sp are themselves estimates
    from benchkit.judges import judge_report
    from benchkit.results import CellResult, Score

    runs, prevalence, se, sp = 150, 0.4, 0.85, 0.9
    covered = 0
    for seed in range(runs):
        rng = random.Random(seed)
        cells, ratings = [], {}
        for i in range(100):
            human = rng.random() < prevalence
            judge = (rng.random() < se) if human else (rng.random() >= sp)
            cell = CellResult(f"t{i}", "a", 0, "pass", scores=(Score("j", float(judge), judge),))
            cells.append(cell)
            if i < 50:
                ratings[cell.key] = human
        (h,) = judge_report(cells, ratings, resamples=250, seed=seed).humans
        iv = h.pass_rates[0].interval
        assert iv is not None
        covered += iv.low <= prevalence <= iv.high
    half = 4 * (0.95 * 0.05 / runs) ** 0.5
    assert 0.95 - half <= covered / runs <= 1.0, covered / runs
