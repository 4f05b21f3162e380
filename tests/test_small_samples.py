"""Small samples said plainly (issue 26): every comparison says in words whether it is
significant at alpha (after Holm), says once when no result of its size could be, shows
the MDE as "none detectable" rather than a number beyond the possible range, explains an
interval that disagrees with its test, and ``compare`` counts tasks, not cell pairs."""

from __future__ import annotations

import json

import benchkit
from benchkit._aggregate import aggregate_run
from benchkit.reports import to_markdown
from benchkit.results import CellResult, RunInfo, RunResult
from benchkit.store._compare import compare_runs
from benchkit.store._compare import to_markdown as compare_markdown


def _cells(values: dict[str, list[float]], epochs: int = 1, cluster: int = 0) -> list[CellResult]:
    cells = []
    for cond, scores in values.items():
        for i, v in enumerate(scores):
            for e in range(epochs):
                cells.append(
                    CellResult(
                        f"t{i}",
                        cond,
                        e,
                        "pass" if v >= 0.5 else "fail",
                        index=i,
                        score=v,
                        cluster=f"c{i // cluster}" if cluster else None,
                    )
                )
    return cells


def _result(values: dict[str, list[float]], **kwargs: int) -> RunResult:
    cells = _cells(values, **kwargs)
    aggregates, groups, comparisons = aggregate_run(cells, list(values))
    info = RunInfo(
        "r",
        "b",
        None,
        "1",
        None,
        "native",
        tuple(benchkit.ConditionInfo(c) for c in values),
        benchkit.RunOptions(),
    )
    return RunResult(info, tuple(cells), aggregates, groups, comparisons)


def test_five_flipped_tasks_say_why_nothing_can_be_significant() -> None:
    result = _result({"old": [0.0] * 5, "new": [1.0] * 5})
    (cmp,) = result.comparisons
    assert cmp.paired.p_value == 0.0625
    # the interval inverts the exact test: it does not reject, so 0 is in the interval
    iv = cmp.paired.interval
    assert iv.method == "paired_score" and iv.low == 0.0 and iv.high == 1.0
    assert cmp.significant is False and cmp.unreachable and cmp.attainable_p == 0.0625
    assert cmp.verdict == (
        "not significant: with 5 tasks no result can reach p < 0.05 (the exact McNemar "
        "test's smallest p is 0.0625); MDE: none detectable with 5 tasks"
    )
    assert cmp.note == ""  # nothing disagrees, so nothing to explain
    markdown = to_markdown(result)
    assert markdown.count("no result can reach") == 1  # said once, not again under Power
    assert "| cannot be | none detectable with 5 tasks |" in markdown
    data = json.loads(result.to_json())["comparisons"][0]
    assert data["significant"] is False and data["detectable"] == "none detectable with 5 tasks"
    assert data["paired"]["mde"] is None  # no number where the text says none


def test_holm_can_make_a_reachable_size_unreachable() -> None:
    # 6 tasks: McNemar's floor 2^-5 = 0.031 < 0.05, but three comparisons under Holm: 0.094
    result = _result({"a": [0.0] * 6, "b": [1.0] * 6, "c": [1.0] * 6})
    for cmp in result.comparisons:
        assert cmp.unreachable and cmp.attainable_p == 0.09375
        assert "after Holm's adjustment for 3 comparisons" in cmp.verdict
        assert "0.0938 after Holm" in cmp.verdict


def test_a_significant_comparison_says_so_and_agrees_with_its_interval() -> None:
    result = _result({"a": [0.0] * 12, "b": [1.0] * 10 + [0.0] * 2})
    (cmp,) = result.comparisons
    assert cmp.significant is True and not cmp.unreachable and not cmp.note
    assert cmp.verdict.startswith("significant at α = 0.05 (p = ")
    assert cmp.detectable.startswith("±") and cmp.detectable.endswith("with 12 tasks")


def test_the_t_test_has_no_floor() -> None:
    a = [0.0, 1.0] * 10
    b = [1.0, 0.0] * 9 + [0.9, 0.1]
    (cmp,) = _result({"a": [x * 0.999 for x in a], "b": b}).comparisons
    assert cmp.paired.method == "paired_t" and cmp.attainable_p is None
    assert not cmp.unreachable and cmp.detectable == f"±{cmp.paired.mde:.3f} with 20 tasks"


def test_an_mde_beyond_the_possible_range_is_none_detectable() -> None:
    # 7 tasks that flip both ways: p < 0.05 is reachable (2^-6), but at this spread even a
    # difference of 1 would be detected less than 80 % of the time
    (cmp,) = _result({"a": [1, 0, 1, 0, 1, 0, 1], "b": [0, 1, 0, 1, 0, 1, 1]}).comparisons
    assert cmp.paired.method == "mcnemar_exact" and cmp.attainable_p == 2.0**-6
    assert not cmp.unreachable
    raw = benchkit.stats.paired_task_comparison([1, 0, 1, 0, 1, 0, 1], [0, 1, 0, 1, 0, 1, 1])
    assert raw.mde is not None and raw.mde > 1  # the formula's figure, beyond the range
    assert cmp.paired.mde is None  # so the comparison carries none: JSON says null
    assert cmp.detectable == "none detectable with 7 tasks"
    assert "even the largest possible difference could be missed" in cmp.power_text()
    result = _result({"a": [1, 0, 1, 0, 1, 0, 1], "b": [0, 1, 0, 1, 0, 1, 1]})
    assert json.loads(result.to_json())["comparisons"][0]["paired"]["mde"] is None


def test_no_small_design_has_an_interval_that_disagrees_with_its_test() -> None:
    # the designs where the t (or Wilson) interval used to exclude 0 beside p = 0.0625
    designs = [
        {"old": [0.0] * 5, "new": [1.0] * 5},
        {"old": [0.0] * 4 + [1.0], "new": [1.0] * 5},
        {"old": [0.2, 0.1, 0.3, 0.0, 0.4], "new": [0.9, 0.8, 1.0, 0.7, 0.9]},
        {"old": [0.0] * 6, "new": [1.0] * 5 + [0.0]},
    ]
    for values in designs:
        for cluster in (0, 2):
            result = _result(values, cluster=cluster)
            (cmp,) = result.comparisons
            iv, p = cmp.paired.interval, cmp.paired.p_value
            assert p is not None
            assert (iv.low > 0 or iv.high < 0) == (p < 0.05), (values, cluster, iv, p)
            assert cmp.note == ""


def test_compare_counts_tasks_and_clusters_not_cell_pairs() -> None:
    one = _result({"x": [1.0, 0.0, 1.0, 0.0, 1.0, 1.0]}, epochs=3, cluster=2)
    two = _result({"x": [1.0, 1.0, 1.0, 0.0, 1.0, 1.0]}, epochs=3, cluster=2)
    cmp = compare_runs(one, two)
    (item,) = cmp.conditions
    assert (item.paired, item.tasks, item.clusters) == (18, 6, 3)
    markdown = compare_markdown(cmp)
    assert "| condition | tasks |" in markdown and "| x | 6 (3 clusters) |" in markdown
    assert "x: not significant" in markdown
