"""MemoryBench's protocols as evaluators: exact-match, deletion-check, retrieval; the export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchkit.errors import ConfigError
from benchkit.formats.memorybench import (
    DeletionCheck,
    MemoryBenchSink,
    MemoryExactMatch,
    MemoryRetrieval,
    exact_match,
    leaked_items,
    result_record,
    session_id,
    summarize_records,
)
from benchkit.formats.memorybench._evaluate import pass_rule, similarity
from benchkit.model import Response, RetrievedItem, RunOptions, Task
from benchkit.results import CellResult, ConditionInfo, RunInfo, RunResult, Score

pytestmark = pytest.mark.anyio

# --------------------------------------------------------------------------- exact-match


@pytest.mark.parametrize(
    ("expected", "generated", "correctness", "reasoning"),
    [
        ("Paris", "  paris ", 1.0, "Exact match between expected and generated answer."),
        ("Paris", "It is PARIS.", 0.9, "Expected answer is contained within generated answer."),
        (
            "a b c d e",
            "a b c d e f",
            0.9,
            "Expected answer is contained within generated answer.",
        ),
        (
            "a b c d e",
            "e d c b a x",
            0.7,
            "High similarity (83.3%) between expected and generated.",
        ),
        ("a b c", "c b x", 0.5, "Partial similarity (50.0%) between expected and generated."),
        ("a b c", "x y a", 0.1, "Low similarity (20.0%) between expected and generated."),
        ("a", "z", 0.0, "No match between expected and generated answer."),
        ("", "anything", 0.9, "Expected answer is contained within generated answer."),
    ],
)
def test_the_correctness_ladder(
    expected: str, generated: str, correctness: float, reasoning: str
) -> None:
    result = exact_match(expected, generated, [])
    assert result.correctness == pytest.approx(correctness)
    assert result.reasoning == reasoning
    assert result.faithfulness == 0.0


def test_percentages_round_half_up_like_to_fixed() -> None:
    # one shared token out of sixteen: 6.25 % -> JavaScript's toFixed(1) gives 6.3
    expected = "a " + " ".join(f"e{i}" for i in range(7))
    generated = "a " + " ".join(f"g{i}" for i in range(8))
    result = exact_match(expected, generated, [])
    assert result.similarity == 1 / 16
    assert result.reasoning == "Low similarity (6.3%) between expected and generated."


def test_faithfulness_is_the_best_context() -> None:
    result = exact_match("the cat sat", "no", ["dogs bark", "THE cat sat down", "x"])
    assert result.faithfulness == 1.0
    partial = exact_match("the cat sat", "no", ["the cat ran"])
    assert partial.faithfulness == 0.5


def test_case_and_whitespace_options() -> None:
    assert exact_match("Paris", "paris", [], case_sensitive=True).correctness == 0.0
    assert exact_match("a  b", "a b", [], normalize_whitespace=False).correctness < 1
    assert exact_match("a\n\tb", "a b", []).correctness == 1.0


@given(st.text(), st.text())
def test_similarity_is_symmetric_and_bounded(a: str, b: str) -> None:
    assert similarity(a, b) == similarity(b, a)
    assert 0.0 <= similarity(a, b) <= 1.0


async def test_exact_match_score_layout_and_pass_rule() -> None:
    task = Task("t", expected="Paris")
    contexts = (RetrievedItem("m1", "Lyon is nice"),)
    evaluator = MemoryExactMatch(metrics=["correctness"])
    score = await evaluator.evaluate(task, Response(output="Paris, of course", retrieved=contexts))
    assert score.name == "exact-match" and score.value == 0.9
    assert not score.passed  # faithfulness 0 < 0.5, even though it is not listed
    assert score.reason == (
        "Expected answer is contained within generated answer. Fails: faithfulness 0.000 < 0.5."
    )
    assert dict(score.details) == {
        "correctness": 0.9,
        "similarity": 0.0,  # "paris," is not "paris": tokens keep their punctuation
        "isExactMatch": 0,
        "isContained": 1,
    }
    lenient = MemoryExactMatch(pass_faithfulness=0.0)
    passed = await lenient.evaluate(task, Response(output="Paris", retrieved=contexts))
    assert passed.passed and set(passed.details) >= {"correctness", "faithfulness"}
    numeric = await MemoryExactMatch().evaluate(Task("t", expected=2022), Response(output=2022.0))
    assert numeric.value == 1.0


def test_pass_rule_and_option_checks() -> None:
    assert pass_rule(0.7, 0.5) is None
    assert pass_rule(0.69, 0.2) == "correctness 0.690 < 0.7 and faithfulness 0.200 < 0.5"
    with pytest.raises(ConfigError, match="pass_correctness"):
        MemoryExactMatch(pass_correctness=2)
    with pytest.raises(ConfigError, match="must be true or false"):
        MemoryExactMatch(case_sensitive="no")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- deletion-check


def test_leak_detection() -> None:
    contents = ["The LOCKER code is 4512.", "the code is 4512 for the locker", "tea"]
    assert leaked_items(["locker code is 4512"], contents) == [0]
    assert leaked_items(["locker code is 4512"], contents, fuzzy=True) == [0, 1]
    assert leaked_items(["  ", ""], contents) == []
    assert leaked_items(["x"], ["a x b"], fuzzy=True) == [0]  # too short for tokens: exact


async def test_deletion_check_scores() -> None:
    task = Task("t", metadata={"memory": {"deleted": ["code 4512"]}})
    evaluator = DeletionCheck()
    clean = await evaluator.evaluate(task, Response(retrieved=(RetrievedItem("m2", "tea"),)))
    assert (clean.value, clean.passed, dict(clean.details)) == (
        1.0,
        True,
        {"deletion_success": 1.0, "leakage_rate": 0.0, "leaked": []},
    )
    leaked = await evaluator.evaluate(
        task, Response(retrieved=(RetrievedItem("m1", "the code 4512"), RetrievedItem("m2", "tea")))
    )
    assert (leaked.value, leaked.passed) == (0.0, False)
    assert dict(leaked.details) == {"deletion_success": 0.0, "leakage_rate": 0.5, "leaked": ["m1"]}
    unconfirmed = await evaluator.evaluate(task, Response(metadata={"unconfirmed_deletes": ["0"]}))
    assert unconfirmed.value == 0.0 and "did not confirm deleting: 0" in (unconfirmed.reason or "")
    nothing = await evaluator.evaluate(Task("t"), Response())
    assert nothing.value is None and "names no deleted content" in (nothing.error or "")
    listed = await DeletionCheck(metrics=["leakage_rate"]).evaluate(task, Response())
    assert set(listed.details) == {"leakage_rate", "leaked"}


# --------------------------------------------------------------------------- retrieval


def test_session_ids_come_from_metadata_then_header_then_record() -> None:
    assert (
        session_id(RetrievedItem("r1", "=== Session: D9 ===", metadata={"_sessionId": "D1"}))
        == "D1"
    )
    assert session_id(RetrievedItem("r1", "x\n=== Session: D9 ===\n")) == "D9"
    assert session_id(RetrievedItem("r1", "=== Session: a b ===")) == "r1"
    assert session_id(RetrievedItem("r1", "", metadata={"_sessionId": ""})) == "r1"


async def test_memory_retrieval_follows_decision_eight() -> None:
    evaluator = MemoryRetrieval(k=3)
    task = Task("t", relevant_ids=["D1", "D3"])
    items = tuple(
        RetrievedItem(f"r{i}", f"=== Session: {s} ===", score=1.0)
        for i, s in enumerate(["D2", "D1", "D1", "D3"])
    )
    score = await evaluator.evaluate(task, Response(retrieved=items))
    assert score.value is None and score.passed and score.error is None
    assert dict(score.details) == {
        "retrieval_precision": 0.5,  # D2, D1 in the top 3 (the duplicate collapses)
        "retrieval_recall": 0.5,
        "retrieval_f1": 0.5,
        "retrieval_coverage": 1.0,
        "retrieval_ndcg": pytest.approx((1 / 1.5849625007211563) / (1 + 1 / 1.5849625007211563)),
        "retrieval_map": 0.25,
    }
    none = await evaluator.evaluate(Task("t"), Response(retrieved=items))
    assert none.details == {} and none.value is None and none.passed
    with pytest.raises(ConfigError, match="unknown retrieval metric 'retrieval_mrr'"):
        MemoryRetrieval(metrics=["retrieval_mrr"])


# --------------------------------------------------------------------------- export


def _cell(**changes: object) -> CellResult:
    fields: dict[str, object] = {
        "task_id": "c1",
        "condition_id": "LocalBaseline",
        "epoch": 0,
        "status": "pass",
        "duration_ms": 12.6,
        "scores": (
            Score("exact-match", 0.9, True, "Contained.", {"correctness": 0.9, "isContained": 1}),
            Score("retrieval", None, True, "metrics", {"retrieval_ndcg": 1.0, "ids": ["x"]}),
        ),
        "response": Response(
            output="Based on…", retrieved=(RetrievedItem("m", "x"),), metadata={"ingested_count": 2}
        ),
    }
    fields.update(changes)
    return CellResult(**fields)  # type: ignore[arg-type]


def test_result_records_have_the_originals_shape() -> None:
    record = result_record(_cell(), run_id="run_1", benchmark="B")
    assert list(record) == [
        "run_id",
        "provider_name",
        "benchmark_name",
        "case_id",
        "status",
        "scores",
        "duration_ms",
        "artifacts",
    ]
    assert record["scores"] == {"correctness": 0.9, "isContained": 1, "retrieval_ndcg": 1.0}
    assert record["duration_ms"] == 13
    assert record["artifacts"] == {
        "generatedAnswer": "Based on…",
        "reasoning": "Contained.",
        "ingestedCount": 2,
        "retrievedCount": 1,
    }
    error = result_record(
        _cell(
            status="timeout",
            error="timed out after 5s",
            error_category="timeout",
            scores=(),
            response=None,
            epoch=1,
        ),
        run_id="run_1",
        benchmark="B",
    )
    assert error["status"] == "error" and error["epoch"] == 1 and error["scores"] == {}
    assert error["error"] == {"message": "timed out after 5s", "category": "timeout"}
    judged = result_record(
        _cell(
            status="error",
            scores=(Score("llm-as-judge", None, False, details={"judge_error": 1}, error="bad"),),
        ),
        run_id="r",
        benchmark="B",
    )
    assert judged["scores"] == {"judge_error": 1} and judged["artifacts"]["reasoning"] == "bad"


async def test_sink_appends_records_and_summaries_average_what_is_there(tmp_path: Path) -> None:
    info = RunInfo(
        run_id="run_9",
        benchmark_id="B",
        benchmark_name="B",
        benchmark_version="1",
        source_path=None,
        source_format="memorybench",
        conditions=(ConditionInfo("LocalBaseline"),),
        options=RunOptions(),
    )
    path = tmp_path / "out" / "results.jsonl"
    for cells in (
        [_cell()],
        [
            _cell(
                task_id="c2",
                status="fail",
                scores=(Score("exact-match", 0.1, False, details={"correctness": 0.1}),),
            )
        ],
    ):
        sink = MemoryBenchSink(path)
        await sink.open(info)
        for cell in cells:
            await sink.write(cell)
        await sink.close(RunResult(info, tuple(cells)))
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["case_id"] for r in records] == ["c1", "c2"]
    [summary] = summarize_records(records)
    assert (summary.cases, summary.passed, summary.failed, summary.errors) == (2, 1, 1, 0)
    assert summary.score_averages == {"correctness": 0.5, "isContained": 1.0, "retrieval_ndcg": 1.0}
    assert summary.score_counts == {"correctness": 2, "isContained": 1, "retrieval_ndcg": 1}
    assert summary.duration_ms == 26
    both = summarize_records(
        [*records, {**records[0], "provider_name": "A", "status": "error", "scores": {}}]
    )
    assert (both[0].provider_name, both[0].errors, dict(both[0].score_averages)) == ("A", 1, {})
