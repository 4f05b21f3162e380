"""The eval-skills report: the original's aggregation rules (each with a test), its key
order, JavaScript number formatting, and the JSON / Markdown / HTML / CSV renderings."""

from __future__ import annotations

import json
import math
from datetime import UTC
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchkit._js import round_to
from benchkit.errors import ConfigError
from benchkit.formats.eval_skills.report import (
    build_reports,
    iso_timestamp,
    report_stem,
    to_csv,
    to_html,
    to_json,
    to_markdown,
    write_reports,
)
from benchkit.model import Benchmark, EvaluatorSpec, Response, RunOptions, Task, Usage
from benchkit.results import CellResult, CellStatus, ConditionInfo, RunInfo, RunResult, Score

STAMP = "2026-01-15T10:30:00.000Z"


def cell(
    task_id: str = "t0",
    *,
    skill: str = "s",
    epoch: int = 0,
    status: CellStatus = "pass",
    score: float | None = None,
    latency: float | None = 100.0,
    index: int | None = None,
    output: Any = "x",
    usage: Usage | None = None,
    error: str | None = None,
    duration: float = 0.0,
    scores: tuple[Score, ...] = (),
) -> CellResult:
    """A finished cell; ``latency=None`` means the provider raised (no response)."""
    if score is None and status in ("pass", "fail"):
        score = 1.0 if status == "pass" else 0.0
    category = {"pass": "none", "fail": "assertion_failed", "timeout": "timeout"}.get(
        status, "execution_error"
    )
    response = None if latency is None else Response(output=output, latency_ms=latency, usage=usage)
    return CellResult(
        task_id=task_id,
        condition_id=skill,
        epoch=epoch,
        status=status,
        index=int(task_id[1:]) if index is None else index,
        error_category=category,
        error=error,
        score=score,
        scores=scores,
        response=response,
        duration_ms=duration,
    )


def run_result(
    cells: list[CellResult], *, method: str = "mean", k: int = 1, skills: tuple[str, ...] = ("s",)
) -> RunResult:
    info = RunInfo(
        run_id="r",
        benchmark_id="bench",
        benchmark_name="Bench",
        benchmark_version="1",
        source_path=None,
        source_format="eval-skills",
        conditions=tuple(ConditionInfo(s) for s in skills),
        options=RunOptions(seed=3),
        scoring_method=method,
        scoring_k=k,
    )
    return RunResult(info, tuple(cells))


def benchmark(n: int = 2, *, max_latency: float | None = 1000.0, **metadata: Any) -> Benchmark:
    tasks = [
        Task(f"t{i}", evaluators=(EvaluatorSpec("contains"),), metadata={"scorerType": "contains"})
        for i in range(n)
    ]
    meta = dict(metadata)
    if max_latency is not None:
        meta["maxLatencyMs"] = max_latency
    return Benchmark("bench", tasks=tasks, metadata=meta)


def report(
    cells: list[CellResult],
    *,
    bench: Benchmark | None = None,
    timeout_ms: float = 30000,
    method: str = "mean",
    k: int = 1,
    seed: int | None = None,
) -> dict[str, Any]:
    (only,) = build_reports(
        run_result(cells, method=method, k=k),
        benchmark=bench or benchmark(),
        versions={"s": "1.2.3"},
        timeout_ms=timeout_ms,
        timestamp=STAMP,
        seed=seed,
    )
    return only


# --------------------------------------------------------------------------- shape


def test_report_and_task_result_keys_in_the_original_order() -> None:
    scored = (Score("contains", 0.5, False, reason='Missing keywords: "k" (1/2 matched)'),)
    tasks = [
        Task("t0", metadata={"scorerType": "contains"}),
        Task("t1", metadata={"scorerType": "exact_match", "weight": 2}),
        Task("t2", metadata={"scorerType": "json_schema"}),
        Task("t3", metadata={"scorerType": "regex"}),
    ]
    cells = [
        cell("t0", status="fail", score=0.5, scores=scored, usage=Usage(3, 4)),
        cell("t1", status="error", latency=None, error="process exited with code 1: x"),
        cell("t2", status="timeout", latency=None, error="timed out after 1s", duration=1000.5),
        cell("t3", status="error", latency=42.0, error="evaluator 'regex' raised"),
    ]
    built = report(cells, bench=Benchmark("bench", tasks=tasks))
    assert list(built) == [
        "skillId",
        "skillVersion",
        "benchmarkId",
        "timestamp",
        "summary",
        "latency",
        "tokenCost",
        "taskResults",
        "evaluatorMetadata",
    ]
    assert (built["skillId"], built["skillVersion"], built["benchmarkId"]) == (
        "s",
        "1.2.3",
        "bench",
    )
    assert built["timestamp"] == STAMP and built["evaluatorMetadata"] == {}
    assert list(built["summary"]) == [
        "completionRate",
        "partialScore",
        "errorRate",
        "consistencyScore",
        "compositeScore",
    ]
    assert list(built["latency"]) == ["p50Ms", "p95Ms", "p99Ms"]
    fail, error, timeout, judged = built["taskResults"]
    assert fail == {
        "taskId": "t0",
        "skillId": "s",
        "status": "fail",
        "score": 0.5,
        "latencyMs": 100.0,
        "output": "x",
        "scorerType": "contains",
        "reason": 'Missing keywords: "k" (1/2 matched)',
        "runId": 1,
        "usage": {"promptTokens": 3, "completionTokens": 4, "totalTokens": 7},
    }
    assert list(fail) == list(fail.keys())  # dicts keep the order compared above
    assert list(error) == [
        "taskId", "skillId", "status", "score", "latencyMs", "error", "scorerType", "runId", "weight",
    ]  # fmt: skip
    assert (error["score"], error["latencyMs"], error["weight"]) == (0, 0, 2)
    assert (timeout["status"], timeout["latencyMs"]) == ("timeout", 1000.5)  # decision 5
    assert (judged["status"], judged["latencyMs"], judged["scorerType"]) == ("error", 42.0, "regex")


def test_task_results_are_run_major() -> None:
    cells = [cell(t, epoch=e) for t in ("t0", "t1") for e in (0, 1)]
    rows = report(cells)["taskResults"]
    assert [(r["taskId"], r["runId"]) for r in rows] == [("t0", 1), ("t1", 1), ("t0", 2), ("t1", 2)]


def test_one_report_per_condition_in_order_and_version_only_when_known() -> None:
    cells = [cell(skill="b"), cell(skill="a")]
    reports = build_reports(
        run_result(cells, skills=("b", "a")),
        benchmark=benchmark(),
        versions={"a": "2.0.0"},
        timeout_ms=30000,
        timestamp=STAMP,
    )
    assert [r["skillId"] for r in reports] == ["b", "a"]
    assert "skillVersion" not in reports[0] and reports[1]["skillVersion"] == "2.0.0"


# --------------------------------------------------------------------------- rates and scores


def test_completion_and_error_rates() -> None:
    cells = [
        cell("t0"),
        cell("t1", status="fail", score=0.5),
        cell("t2", status="error", latency=None, error="e"),
        cell("t3", status="timeout", latency=None, error="t"),
    ]
    summary = report(cells, bench=benchmark(4))["summary"]
    assert (summary["completionRate"], summary["errorRate"]) == (0.25, 0.5)
    assert summary["partialScore"] == 0.375  # (1 + 0.5 + 0 + 0) / 4


def test_weighted_mean_uses_the_written_weights() -> None:
    tasks = [Task("t0", metadata={"weight": 3}), Task("t1"), Task("t2", metadata={"weight": 0})]
    cells = [cell("t0"), cell("t1", status="fail", score=0.5), cell("t2")]
    summary = report(cells, bench=Benchmark("b", tasks=tasks), method="weighted_mean")["summary"]
    assert summary["partialScore"] == 0.875  # (3·1 + 1·0.5 + 0·1) / 4


def test_weighted_mean_with_no_weight_is_zero() -> None:
    tasks = [Task("t0", metadata={"weight": 0})]
    summary = report([cell("t0")], bench=Benchmark("b", tasks=tasks), method="weighted_mean")
    assert summary["summary"]["partialScore"] == 0


def test_pass_at_1_is_the_pass_fraction_and_ignores_partial_scores() -> None:
    cells = [
        cell("t0", epoch=0),
        cell("t0", epoch=1, status="fail", score=0.9),
        cell("t1", epoch=0, status="fail", score=0.9),
        cell("t1", epoch=1, status="fail", score=0.9),
    ]
    assert report(cells, method="pass_at_k")["summary"]["partialScore"] == 0.25  # (1/2 + 0) / 2


def test_pass_at_k_uses_the_unbiased_estimator() -> None:
    # n = 3 runs, c = 1 pass: pass@2 = 1 - C(2,2)/C(3,2) = 2/3; a task never passing gives 0
    statuses: list[CellStatus] = ["pass", "fail", "fail"]
    cells = [cell("t0", epoch=e, status=s) for e, s in enumerate(statuses)]
    cells += [cell("t1", epoch=e, status="fail") for e in range(3)]
    summary = report(cells, method="pass_at_k", k=2)["summary"]
    assert summary["partialScore"] == round_to((2 / 3 + 0) / 2, 4) == 0.3333
    all_pass = [cell("t0", epoch=e) for e in range(3)]
    assert report(all_pass, method="pass_at_k", k=2)["summary"]["partialScore"] == 1


def test_consistency_is_one_minus_the_std_dev_of_run_pass_rates() -> None:
    one_run = [cell("t0"), cell("t1", status="fail")]
    assert report(one_run)["summary"]["consistencyScore"] == 1
    two = [
        cell("t0", epoch=0),
        cell("t1", epoch=0),
        cell("t0", epoch=1),
        cell("t1", epoch=1, status="fail"),
    ]
    assert report(two)["summary"]["consistencyScore"] == 0.75  # rates 1 and 0.5
    statuses: list[CellStatus] = ["pass", "fail", "pass"]
    three = [cell("t0", epoch=e, status=s) for e, s in enumerate(statuses)]
    rates = [1.0, 0.0, 1.0]
    mean = sum(rates) / 3
    expected = 1 - math.sqrt(sum((r - mean) ** 2 for r in rates) / 3)
    assert report(three)["summary"]["consistencyScore"] == pytest.approx(expected, abs=1e-15)
    assert report(three)["summary"]["consistencyScore"] != round_to(expected, 4)  # not rounded


def test_latency_percentiles_are_nearest_rank_rounded_half_up() -> None:
    latencies = [30.5, 10.5, 20.4, None, 0.0]
    statuses: list[CellStatus] = ["pass", "pass", "pass", "error", "pass"]
    cells = [
        cell(f"t{i}", latency=lat, status=s, error="e" if s == "error" else None)
        for i, (lat, s) in enumerate(zip(latencies, statuses, strict=True))
    ]
    latency = report(cells, bench=benchmark(5))["latency"]
    # positive latencies sorted: 10.5, 20.4, 30.5 — p50 is the 2nd, p95 and p99 the 3rd
    assert latency == {"p50Ms": 20, "p95Ms": 31, "p99Ms": 31}  # Math.round(30.5) is 31


def test_nearest_rank_over_twenty_values() -> None:
    cells = [cell(f"t{i}", latency=float(i + 1)) for i in range(20)]
    assert report(cells, bench=benchmark(20))["latency"] == {"p50Ms": 10, "p95Ms": 19, "p99Ms": 20}


def test_composite_score_formula() -> None:
    # CR 0.5, ER 0.25, p95 rounded to 251 against maxLatencyMs 1000
    cells = [
        cell("t0", latency=250.6),
        cell("t1", latency=100.0),
        cell("t2", status="fail", latency=50.0),
        cell("t3", status="error", latency=None, error="e"),
    ]
    summary = report(cells, bench=benchmark(4))["summary"]
    assert summary["compositeScore"] == round_to(0.5 * 0.5 + 0.2 * (1 - 251 / 1000) + 0.3 * 0.75, 4)


def test_composite_uses_the_timeout_without_max_latency() -> None:
    cells = [cell("t0", latency=500.0)]
    with_max = report(cells, bench=benchmark(1, max_latency=1000.0))["summary"]
    with_timeout = report(cells, bench=benchmark(1, max_latency=None), timeout_ms=2000)["summary"]
    assert with_max["compositeScore"] == 0.9  # 0.5 + 0.2·0.5 + 0.3
    assert with_timeout["compositeScore"] == 0.95  # 0.5 + 0.2·0.75 + 0.3


def test_slow_skills_lose_the_latency_term_entirely() -> None:
    cells = [cell("t0", latency=5000.0)]
    assert report(cells, bench=benchmark(1))["summary"]["compositeScore"] == 0.8


def test_all_errors_at_latency_zero_score_point_two() -> None:
    cells = [cell(f"t{i}", status="error", latency=None, error="e") for i in range(3)]
    built = report(cells, bench=benchmark(3))
    assert built["summary"]["compositeScore"] == 0.2
    assert built["latency"] == {"p50Ms": 0, "p95Ms": 0, "p99Ms": 0}


def test_zero_results() -> None:
    built = report([])
    assert built["summary"] == {
        "completionRate": 0,
        "partialScore": 0,
        "errorRate": 0,
        "consistencyScore": 1,
        "compositeScore": 0,
    }
    assert built["latency"] == {"p50Ms": 0, "p95Ms": 0, "p99Ms": 0}
    assert built["taskResults"] == []


def test_rates_round_half_up_to_four_digits() -> None:
    cells = [cell(f"t{i}", status="pass" if i == 0 else "fail") for i in range(32)]
    summary = report(cells, bench=benchmark(32))["summary"]
    assert summary["completionRate"] == 0.0313  # 1/32 = 0.03125
    assert summary["partialScore"] == 0.0313


def test_confidence_interval_from_ten_results_seeded() -> None:
    nine = [cell(f"t{i}") for i in range(9)]
    assert "confidenceInterval" not in report(nine, bench=benchmark(9))["summary"]
    ten = [cell(f"t{i}", status="fail", score=i / 10) for i in range(10)]
    first = report(ten, bench=benchmark(10))["summary"]["confidenceInterval"]
    again = report(ten, bench=benchmark(10))["summary"]["confidenceInterval"]
    other = report(ten, bench=benchmark(10), seed=99)["summary"]["confidenceInterval"]
    assert first == again
    assert list(first) == ["lower", "upper", "mean", "level"]
    assert first["lower"] <= first["mean"] == 0.45 <= first["upper"]
    assert first["level"] == 0.95 and first["lower"] < first["upper"]
    assert other != first


def test_token_cost_only_when_usage_is_positive() -> None:
    used = [cell("t0", usage=Usage(2, 5)), cell("t1", usage=Usage(1, 0))]
    assert report(used)["tokenCost"] == {"promptTokens": 3, "completionTokens": 5, "totalTokens": 8}
    assert "tokenCost" not in report([cell("t0", usage=Usage(0, 0))])
    assert "tokenCost" not in report([cell("t0")])


_STATUSES: list[CellStatus] = ["pass", "fail", "error", "timeout"]


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(_STATUSES),
            st.floats(min_value=0, max_value=1),
            st.floats(min_value=0, max_value=10_000),
        ),
        max_size=30,
    ),
    runs=st.integers(min_value=1, max_value=3),
    method=st.sampled_from(["mean", "weighted_mean", "pass_at_k"]),
)
def test_summary_invariants(
    rows: list[tuple[CellStatus, float, float]], runs: int, method: str
) -> None:
    cells = []
    for i, (status, score, latency) in enumerate(rows):
        errored = status in ("error", "timeout")
        cells.append(
            cell(
                f"t{i // runs}",
                epoch=i % runs,
                index=i // runs,
                status=status,
                score=None if errored else (1.0 if status == "pass" else score),
                latency=None if errored else latency,
                error="e" if errored else None,
            )
        )
    built = report(cells, bench=benchmark(len(rows)), method=method)
    summary = built["summary"]
    for key in ("completionRate", "partialScore", "errorRate", "compositeScore"):
        assert 0 <= summary[key] <= 1
        assert summary[key] == round(summary[key], 4)
    assert 0 <= summary["consistencyScore"] <= 1
    assert summary["completionRate"] + summary["errorRate"] <= 1.0001
    if rows:
        passes = sum(1 for s, _, _ in rows if s == "pass")
        assert summary["completionRate"] == round_to(passes / len(rows), 4)
    lat = built["latency"]
    assert lat["p50Ms"] <= lat["p95Ms"] <= lat["p99Ms"]


# --------------------------------------------------------------------------- renderings


def sample_reports() -> list[dict[str, Any]]:
    def make(
        skill: str, composite: float, p95: float, rows: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {
            "skillId": skill,
            "skillVersion": "1.0.0",
            "benchmarkId": "coding-easy",
            "timestamp": STAMP,
            "summary": {
                "completionRate": 0.0625,
                "partialScore": 0.5,
                "errorRate": 0.8567,
                "consistencyScore": 1,
                "compositeScore": composite,
            },
            "latency": {"p50Ms": 12, "p95Ms": p95, "p99Ms": p95},
            "taskResults": rows,
            "evaluatorMetadata": {},
        }

    rows = [
        {"taskId": "coding_001", "status": "pass", "score": 1, "latencyMs": 123.7},
        {"taskId": "coding_002", "status": "timeout", "score": 0, "latencyMs": 1500},
    ]
    return [
        make(
            "slow, skill",
            0.5,
            999.6,
            [{"taskId": "x", "status": "error", "score": 0, "latencyMs": 0}],
        ),
        make("calculator", 0.9986, 1000, rows),
    ]


MARKDOWN = """\
# eval-skills Report

Generated: 2026-01-15T10:30:00.000Z | Benchmark: coding-easy

## Summary

| Skill | Completion Rate | Error Rate | P95 Latency | Composite Score |
|-------|:--------------:|:----------:|:-----------:|:---------------:|
| calculator | 6.3% | 85.7% | 1.0s | 0.999 |
| slow, skill | 6.3% | 85.7% | 1000ms | 0.500 |

## Details: calculator

Version: 1.0.0 | Tasks: 2

### Task Results

| Task ID | Status | Score | Latency |
|---------|--------|-------|---------|
| coding_001 | \u2705 PASS | 1.00 | 124ms |
| coding_002 | \u23f1\ufe0f TIMEOUT | 0.00 | 1.5s |

## Details: slow, skill

Version: 1.0.0 | Tasks: 1

### Task Results

| Task ID | Status | Score | Latency |
|---------|--------|-------|---------|
| x | \u26a0\ufe0f ERROR | 0.00 | 0ms |
"""


def test_markdown_is_the_originals_to_the_byte() -> None:
    assert to_markdown(sample_reports()) == MARKDOWN


def test_markdown_with_no_results() -> None:
    assert to_markdown([]) == "# eval-skills Report\n\nNo evaluation results.\n"


def test_csv() -> None:
    assert to_csv(sample_reports()) == (
        "skillId,benchmarkId,completionRate,partialScore,errorRate,p50Ms,p95Ms,compositeScore\n"
        '"slow, skill",coding-easy,0.0625,0.5000,0.8567,12,999.6,0.5000\n'
        "calculator,coding-easy,0.0625,0.5000,0.8567,12,1000,0.9986"
    )


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag not in ("meta",):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack.pop() == tag

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_is_a_standalone_escaped_page() -> None:
    reports = sample_reports()
    reports[0]["skillId"] = "<script>alert(1)</script>"
    page = to_html(reports)
    assert page.startswith("<!DOCTYPE html>\n<html")
    assert "<style>" in page and "<script>" not in page
    parser = _Collector()
    parser.feed(page)
    assert parser.stack == []  # every element closed, properly nested
    assert parser.tags.count("table") == 3 and parser.tags.count("h2") == 3
    text = "".join(parser.text)
    assert "<script>alert(1)</script>" in text  # shown as text
    assert "Generated: 2026-01-15T10:30:00.000Z | Benchmark: coding-easy" in text
    assert "\u2705 PASS" in text and "1.0s" in text
    assert 'style="text-align:center"' in page


def test_json_has_no_trailing_newline() -> None:
    text = to_json(sample_reports())
    assert not text.endswith("\n") and json.loads(text) == sample_reports()
    assert to_json([]) == "[]"


def test_write_reports_names_files_after_the_timestamp(tmp_path: Path) -> None:
    reports = sample_reports()
    written = write_reports(
        reports, tmp_path / "out", ["json", "markdown", "html", "csv", "json"], timestamp=STAMP
    )
    stem = "eval-result-2026-01-15T10-30-00-000Z"
    assert report_stem(STAMP) == stem
    assert [p.name for p in written] == [
        f"{stem}.json",
        f"{stem}.md",
        f"{stem}.html",
        f"{stem}.csv",
    ]
    assert written[0].read_text(encoding="utf-8") == to_json(reports)
    assert written[1].read_bytes() == MARKDOWN.encode()
    with pytest.raises(ConfigError, match="unknown report format"):
        write_reports(reports, tmp_path, ["pdf"], timestamp=STAMP)


def test_iso_timestamp_is_javascripts() -> None:
    from datetime import datetime

    moment = datetime(2026, 3, 4, 5, 6, 7, 891234, tzinfo=UTC)
    assert iso_timestamp(moment) == "2026-03-04T05:06:07.891Z"
