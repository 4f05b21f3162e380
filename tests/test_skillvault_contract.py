"""skillvault's run / report contracts: JavaScript numbers, rounding, layout, aggregation, tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchkit._js import round_to
from benchkit.formats.skillvault.report import (
    BenchRunError,
    aggregate,
    build_report,
    condition_order,
    dumps,
    parse_run,
    read_run,
    render_report_table,
    render_run_table,
    wilson95,
)
from benchkit.formats.skillvault.verifiers._command import excerpt

# --------------------------------------------------------------------------- excerpts


def test_excerpts_count_utf16_units_and_never_split_a_pair() -> None:
    assert excerpt("  \n ") is None
    assert excerpt("  hi \n") == "hi"
    assert excerpt("x" * 300) == "x" * 300
    assert excerpt("x" * 301) == "x" * 297 + "..."
    assert excerpt("😀" * 150) == "😀" * 150  # 300 units exactly
    # 296 units then an emoji across the cut at 297: the pair is dropped whole
    assert excerpt("x" * 296 + "😀" * 10) == "x" * 296 + "..."


# --------------------------------------------------------------------------- JSON.stringify


def test_dumps_is_two_space_json_and_a_newline() -> None:
    assert dumps({"b": [], "10": 1.0, "9": [None]}) == (
        '{\n  "9": [\n    null\n  ],\n  "10": 1,\n  "b": []\n}\n'
    )
    assert dumps([]) == "[]\n"


# --------------------------------------------------------------------------- aggregation


def row(condition: str, passed: bool, category: str = "none", ms: int = 0) -> dict[str, Any]:
    return {
        "condition_id": condition,
        "passed": passed,
        "duration_ms": ms,
        "error_category": "none" if passed else category,
    }


def test_aggregate_counts_rates_intervals_and_deltas() -> None:
    rows = [
        row("no_skill", True, ms=1),
        row("no_skill", False, "assertion_failed", ms=2),
        row("no_skill", False, "timeout", ms=2),
        row("curated_skill", True, ms=4),
        row("curated_skill", True, ms=5),
        row("curated_skill", False, "zeta", ms=5),
        row("self_generated_skill", False, "404", ms=1),
    ]
    ids = ["no_skill", "curated_skill", "self_generated_skill", "extra"]
    aggregates, deltas, breakdown = aggregate(rows, ids)
    assert aggregates["no_skill"] == {
        "condition_id": "no_skill",
        "sample_count": 3,
        "pass_count": 1,
        "fail_count": 2,
        "pass_rate": 0.3333,
        "avg_duration_ms": 1.667,
        "confidence_95": {"method": "wilson", "low": 0.0615, "high": 0.7923},
    }
    assert aggregates["curated_skill"]["avg_duration_ms"] == 4.667
    # a zero-sample condition still gets a zero aggregate
    assert aggregates["extra"] == {
        "condition_id": "extra",
        "sample_count": 0,
        "pass_count": 0,
        "fail_count": 0,
        "pass_rate": 0,
        "avg_duration_ms": 0,
        "confidence_95": {"method": "wilson", "low": 0, "high": 0},
    }
    curated = deltas["curated_vs_no_skill"]
    # from the unrounded rates: 2/3 - 1/3 = 0.33333... -> 0.3333 (not 0.6667 - 0.3333 = 0.3334)
    assert curated["pass_rate_delta"] == 0.3333
    # from the rounded averages: 4.667 - 1.667
    assert curated["avg_duration_ms_delta"] == round_to(4.667 - 1.667, 3) == 3
    assert curated["sample_count"] == 3 and curated["pass_count_delta"] == 1
    assert deltas["self_generated_vs_no_skill"]["pass_count_delta"] == -1
    assert deltas["self_generated_vs_no_skill"]["sample_count"] == 1
    assert breakdown["no_skill"] == {"assertion_failed": 1, "timeout": 1}
    assert list(breakdown["curated_skill"]) == ["zeta"]
    assert breakdown["extra"] == {}
    text = dumps(breakdown)
    assert '"extra": {}' in text


def test_error_breakdown_keys_sort_as_javascript_sorts_them() -> None:
    rows = [row("no_skill", False, c) for c in ("b_2", "a", "10", "9", "b_10")]
    _, _, breakdown = aggregate(rows, ["no_skill"])
    assert list(breakdown["no_skill"]) == ["10", "9", "a", "b_10", "b_2"]  # sort()
    # ... and JSON.stringify lists integer-like keys first, in numeric order
    assert dumps(breakdown).index('"9"') < dumps(breakdown).index('"10"')


def test_deltas_are_null_without_their_conditions() -> None:
    _, deltas, _ = aggregate([row("a", True)], ["a"])
    assert deltas == {"curated_vs_no_skill": None, "self_generated_vs_no_skill": None}


@given(st.integers(0, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_contains_the_rate(pair: tuple[int, int]) -> None:
    passed, n = pair
    ci = wilson95(passed, n)
    if n == 0:
        assert ci == {"method": "wilson", "low": 0, "high": 0}
        return
    rate = passed / n
    assert 0 <= ci["low"] <= round_to(rate, 4) <= ci["high"] <= 1
    if passed == 0:
        assert ci["low"] == 0
    if passed == n:
        assert ci["high"] == 1


# --------------------------------------------------------------------------- report


RUN: dict[str, Any] = {
    "contract_version": "0.1",
    "contract_id": "skillvault.bench.run.v1",
    "created_at": "2024-05-01T10:00:00.000Z",
    "run": {
        "config_path": "/x/bench.yaml",
        "git_commit": "abc1234",
        "deterministic": False,
        "seed": 1,
        "retries": 0,
        "metadata": {},
    },
    "conditions": [{"id": "no_skill"}, {"id": "curated_skill"}, {"id": "self_generated_skill"}],
    "tasks": [],
    "results": [],
    "aggregates": {
        "no_skill": {
            "condition_id": "no_skill",
            "sample_count": 2,
            "pass_count": 1,
            "fail_count": 1,
            "pass_rate": 0.5,
            "avg_duration_ms": 12.5,
            "confidence_95": {"method": "wilson", "low": 0.0945, "high": 0.9055},
            "extra": "kept",
        }
    },
    "deltas": {
        "curated_vs_no_skill": None,
        "self_generated_vs_no_skill": {
            "baseline_condition_id": "no_skill",
            "target_condition_id": "self_generated_skill",
            "sample_count": 2,
            "pass_count_delta": -1,
            "pass_rate_delta": -0.5,
            "avg_duration_ms_delta": -0.0,
        },
    },
    "error_breakdown": {"no_skill": {"timeout": 1}, "curated_skill": {}},
}


def test_report_copies_the_runs_numbers_verbatim() -> None:
    report = build_report(RUN, now=lambda: "2030-01-01T00:00:00.000Z")
    assert list(report) == [
        "contract_version",
        "contract_id",
        "created_at",
        "source_created_at",
        "deterministic",
        "aggregates",
        "deltas",
        "error_breakdown",
    ]
    assert report["created_at"] == "2030-01-01T00:00:00.000Z"
    assert report["aggregates"] == RUN["aggregates"]  # extra keys and all: not recomputed
    deterministic = {**RUN, "run": {**RUN["run"], "deterministic": True}}
    assert build_report(deterministic)["created_at"] == "1970-01-01T00:00:00.000Z"
    bare = {k: v for k, v in RUN.items() if k not in ("created_at", "deltas")}
    bare["run"] = {}
    assert list(build_report(bare, now=lambda: "t")) == [
        "contract_version",
        "contract_id",
        "created_at",
        "aggregates",
        "error_breakdown",
    ]


def test_tables_handle_null_deltas_missing_aggregates_and_negative_zero() -> None:
    report = build_report(RUN, now=lambda: "NOW")
    table = render_report_table(report, condition_order(RUN))
    assert table == (
        "report_created_at: NOW\n"
        "source_created_at: 2024-05-01T10:00:00.000Z\n"
        "deterministic: false\n"
        "\n"
        "condition | pass_rate | pass/total | avg_duration_ms | ci95_low | ci95_high\n"
        "no_skill | 0.5000 | 1/2 | 12.500 | 0.0945 | 0.9055\n"
        "\n"
        "comparison | pass_rate_delta | pass_count_delta | avg_duration_ms_delta\n"
        "curated_vs_no_skill | n/a | n/a | n/a\n"
        "self_generated_vs_no_skill | -0.5000 | -1 | +0.000\n"
        "\n"
        "condition | error_category | count\n"
        "no_skill | timeout | 1\n"
        "curated_skill | none | 0\n"
        "self_generated_skill | none | 0\n"
    )
    run_table = render_run_table(RUN)
    assert run_table.startswith(
        "benchmark_created_at: 2024-05-01T10:00:00.000Z\n"
        "config_path: /x/bench.yaml\n"
        "git_commit: abc1234\n"
        "deterministic: false\n"
        "seed: 1\n"
        "retries: 0\n"
        "tasks: 0\n"
        "conditions: no_skill, curated_skill, self_generated_skill\n\n"
    )
    empty = {**RUN, "conditions": []}
    assert render_run_table(empty).endswith("condition | error_category | count\nnone | none | 0\n")


def test_tables_refuse_values_skillvault_cannot_render() -> None:
    broken = json.loads(json.dumps(RUN))
    broken["aggregates"]["no_skill"]["pass_rate"] = "0.5"
    with pytest.raises(BenchRunError, match=r"aggregates\.no_skill\.pass_rate is not a number"):
        render_run_table(broken)
    with pytest.raises(BenchRunError, match="no `run` object"):
        build_report({k: v for k, v in RUN.items() if k != "run"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "Failed to parse benchmark result JSON: "),
        ('{"x": NaN}', "Failed to parse benchmark result JSON: "),
        ("[]", "Benchmark result JSON must be an object"),
        (
            '{"contract_id": "skillvault.bench.report.v1"}',
            "Unsupported benchmark result contract_id",
        ),
        (
            '{"contract_id": "skillvault.bench.run.v1", "conditions": [], "tasks": []}',
            "Benchmark result JSON is missing required arrays (conditions/tasks/results)",
        ),
    ],
)
def test_parse_run_checks_what_skillvault_checks(text: str, message: str) -> None:
    with pytest.raises(BenchRunError) as info:
        parse_run(text)
    assert info.value.message.startswith(message)


def test_read_run_rounds_big_integers_like_json_parse(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({**RUN, "run": {**RUN["run"], "seed": 2**60 + 1}}))
    run = read_run(path)
    assert '"seed": 1152921504606847000' in dumps(run)
    with pytest.raises(BenchRunError, match="ENOENT: no such file or directory"):
        read_run(tmp_path / "missing.json")


def test_zero_sample_conditions_still_get_deltas() -> None:
    ids = ["no_skill", "curated_skill", "self_generated_skill"]
    aggregates, deltas, breakdown = aggregate([], ids)
    assert all(aggregates[c]["pass_rate"] == 0 for c in ids)
    assert deltas["curated_vs_no_skill"] == {
        "baseline_condition_id": "no_skill",
        "target_condition_id": "curated_skill",
        "sample_count": 0,
        "pass_count_delta": 0,
        "pass_rate_delta": 0,
        "avg_duration_ms_delta": 0,
    }
    assert breakdown == {c: {} for c in ids}
