"""Monte-Carlo proof that benchkit's statistics keep their promises (issue 13).

Seeded simulations of whole runs go through the same aggregation every report uses. For
each design the conditions are equally good on average but good at different tasks, and
the checks are: the comparison's type-I error is near alpha = 0.05, the 95 % intervals
cover the true pass rate (or mean score) and the true difference near 95 % of the time,
and — with a real difference the size of the minimum detectable effect the report
predicted — the test detects it about 80 % of the time.

Bands: with N simulated runs, an estimated rate of a true rate r has standard error
sqrt(r (1 - r) / N); each assertion allows 4 standard errors (a correct procedure falls
outside with probability below 1e-4, and the seeds are fixed, so nothing flakes). N = 400
keeps this file to a few seconds; perf/stats_montecarlo.py runs 4000 per design with
bands 3x tighter and records the figures in perf/RESULTS.md.
"""

from __future__ import annotations

import pytest

from ._montecarlo import DESIGNS, Summary, shifted, simulate

N = 400
ALPHA = 0.05


@pytest.fixture(scope="module")
def summaries() -> dict[str, Summary]:
    return {name: simulate(design, N, seed=13) for name, design in DESIGNS.items()}


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_type_one_error_is_near_alpha(summaries: dict[str, Summary], name: str) -> None:
    summary = summaries[name]
    low, high = summary.band(ALPHA)
    assert summary.reject <= high, summary
    if summary.methods == ("paired_t",):  # exact tests may be conservative, t should not be
        assert summary.reject >= low, summary


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_95_percent_intervals_cover_near_95_percent(
    summaries: dict[str, Summary], name: str
) -> None:
    summary = summaries[name]
    low, high = summary.band(0.95)
    assert low <= summary.rate_coverage <= high, summary
    assert low <= summary.delta_coverage <= high, summary


@pytest.mark.parametrize("name", ["binary_epochs_30", "binary_epochs_10", "clustered_20x5"])
def test_counting_cells_as_independent_was_wrong(summaries: dict[str, Summary], name: str) -> None:
    """The pre-issue-13 statistics (McNemar and Wilson over cells) on the same runs: far
    outside the bands the task-level statistics stay in."""
    summary = summaries[name]
    assert summary.naive_reject is not None and summary.naive_coverage is not None
    assert summary.naive_reject > summary.band(ALPHA)[1] + 0.03, summary
    assert summary.naive_coverage < summary.band(0.95)[0] - 0.03, summary


def test_the_designs_use_the_test_the_design_calls_for(summaries: dict[str, Summary]) -> None:
    assert summaries["binary_epochs_30"].methods == ("paired_t",)
    assert "sign_flip_exact" in summaries["binary_epochs_10"].methods
    assert summaries["clustered_10x5"].methods == ("sign_flip_exact",)
    assert summaries["clustered_20x5"].methods == ("paired_t",)


def test_a_real_difference_is_detected_with_the_predicted_power() -> None:
    """Pass/fail tasks, 3 epochs, 40 tasks: the report's minimum detectable effect (MDE)
    under no difference, then runs whose true difference *is* that MDE: about 80 % of them
    must reach p < 0.05, as the report promised."""
    null = simulate(shifted(40, 3, 0.0), N, seed=21)
    assert null.mean_mde is not None
    assert null.reject <= null.band(ALPHA)[1]
    effect = null.mean_mde
    real = simulate(shifted(40, 3, effect), N, seed=22)
    low, high = real.band(0.8)
    # 0.03 below the band: the t-based power formula is a slight overestimate at 40 units
    assert low - 0.03 <= real.reject <= high, (effect, real)
    assert real.band(0.95)[0] <= real.delta_coverage <= real.band(0.95)[1]


def test_power_of_the_exact_test_for_few_tasks_is_close_to_predicted() -> None:
    """12 tasks use the exact sign-flip test; its MDE comes from the test's own critical
    value, so the prediction stays close even though the test is discrete."""
    null = simulate(shifted(12, 3, 0.0), N, seed=31)
    assert null.mean_mde is not None
    real = simulate(shifted(12, 3, null.mean_mde), N, seed=32)
    low, high = real.band(0.8)
    assert low - 0.05 <= real.reject <= high, (null.mean_mde, real)
