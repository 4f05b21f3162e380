"""The shipped LoCoMo-shaped set end to end: load, ingest every session, retrieve, score,
export. (The same against LoCoMo's real data is in tests/conformance.)"""

from __future__ import annotations

import math
from pathlib import Path

import attrs
import pytest

import benchkit
from benchkit.formats import memorybench as mb
from benchkit.formats.memorybench import MemoryBenchSink
from benchkit.memory import LocalBaseline, MemoryPipeline

from ._support import REPO
from .test_memory_baseline import reference_retrieve

pytestmark = pytest.mark.anyio
ROOT = REPO / "benchmarks" / "memorybench"
LOCOMO = ROOT / "locomo"


def decision_eight(retrieved: list[str], relevant: list[str], k: int) -> dict[str, float]:
    """Decision 8 of the notes, written out directly."""
    top = retrieved[:k]
    unique = list(dict.fromkeys(top))
    hits = len([i for i in unique if i in relevant])
    precision = hits / len(unique) if unique else 0.0
    recall = hits / len(relevant)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    seen: set[str] = set()
    dcg = ap = 0.0
    found = 0
    for rank, session in enumerate(top, 1):
        if session in relevant and session not in seen:
            seen.add(session)
            found += 1
            dcg += 1 / math.log2(rank + 1)
            ap += found / rank
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return {
        "retrieval_precision": precision,
        "retrieval_recall": recall,
        "retrieval_f1": f1,
        "retrieval_coverage": 1.0 if hits else 0.0,
        "retrieval_ndcg": dcg / ideal,
        "retrieval_map": ap / len(relevant),
    }


async def test_the_locomo_shaped_set_runs_against_localbaseline(tmp_path: Path) -> None:
    suite = mb.load(LOCOMO / "exact-match", root=ROOT).with_options(
        concurrency=4, deterministic=True
    )
    tasks = {t.id: t for t in suite.benchmark.iter_tasks()}
    assert len(tasks) == 18 and all(
        len(t.setup) == t.metadata["memory"].ingestion.total for t in tasks.values()
    )
    results = tmp_path / "results.jsonl"
    result = await benchkit.arun(suite, sinks=[MemoryBenchSink(results)])
    assert len(result.cells) == 18 and {c.status for c in result.cells} <= {"pass", "fail"}
    for cell in result.cells:
        task = tasks[cell.task_id]
        assert cell.response is not None
        documents = [step.content for step in task.setup]
        expected = reference_retrieve(documents, task.input, 10)
        assert [item.content for item in cell.response.retrieved] == [
            documents[i] for i, _ in expected
        ]
        sessions = [item.metadata["_sessionId"] for item in cell.response.retrieved]
        protocol, retrieval = cell.scores
        assert protocol.name == "exact-match" and retrieval.name == "retrieval"
        assert dict(retrieval.details) == pytest.approx(
            decision_eight(sessions, list(task.relevant_ids), 10)
        )
        details = protocol.details
        assert cell.passed == (details["correctness"] >= 0.7 and details["faithfulness"] >= 0.5)
        assert cell.score == protocol.value
    records = results.read_text().splitlines()
    assert len(records) == 18
    again = await benchkit.arun(suite)
    assert again.to_json() == result.to_json()


async def test_lazy_ingestion_makes_retrieval_near_trivial() -> None:
    lazy = mb.load(LOCOMO / "lazy")  # lazy mode, llm-as-judge
    tasks = list(lazy.benchmark.iter_tasks())
    for task in tasks:
        sessions = [s.metadata["_sessionId"] for s in task.setup]
        evidence = sorted(task.relevant_ids, key=lambda s: int(s[1:]))
        assert sessions == evidence or (sessions == ["D1"] and not task.relevant_ids)
    # Retrieval only (the judge needs the LLM client): every gold session is found.
    suite = benchkit.Suite(
        attrs.evolve(
            lazy.benchmark,
            evaluators=(benchkit.EvaluatorSpec("memory_retrieval", {"k": 10}),),
        ),
        conditions=(benchkit.Condition("local", MemoryPipeline(LocalBaseline())),),
    )
    result = await benchkit.arun(suite)
    assert {c.scores[0].details["retrieval_recall"] for c in result.cells} == {1.0}
