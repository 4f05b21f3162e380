"""MemoryBench's own files (corpus/memorybench): LoCoMo (a 3-conversation subset of the real
data set) end to end, its type instructions, the LongMemEval manifest and the providers'
manifests.

The LoCoMo manifest names ``locomo10.json``; the corpus holds its first three records as
``locomo10.first3.json``, so the tests copy the folder and point ``data_file`` at the subset
(the one change), plus an exact-match variant that runs offline.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest

import benchkit
from benchkit.formats import memorybench as mb
from benchkit.formats.memorybench import MemoryBenchSink
from benchkit.formats.memorybench._judge import load_type_instructions
from benchkit.memory import LocalBaseline, MemoryPipeline, as_memory_provider
from benchkit.memory._capabilities import from_original

from .._llm_server import FakeOpenAI
from ..test_memory_baseline import reference_retrieve
from ..test_memory_judge import _judge_reply
from ..test_memory_locomo import decision_eight
from ..test_memory_providers import Notes
from ._corpus import CORPUS

MEMORYBENCH = CORPUS / "memorybench"
PROVIDERS = ("AQRAG", "ContextualRetrieval", "LocalBaseline", "mem0", "supermemory")


@pytest.fixture
def root(corpus: Path, tmp_path: Path) -> Path:
    """A benchmarks root with LoCoMo (the original manifest on the subset) and LoCoMo-exact."""
    benchmarks = tmp_path / "benchmarks"
    locomo = benchmarks / "LoCoMo"
    locomo.mkdir(parents=True)
    for name in ("locomo10.first3.json", "type_instructions.json"):
        shutil.copyfile(MEMORYBENCH / "LoCoMo" / name, locomo / name)
    manifest = json.loads((MEMORYBENCH / "LoCoMo" / "manifest.json").read_text(encoding="utf-8"))
    manifest["data_file"] = "locomo10.first3.json"
    (locomo / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    exact = dict(manifest, name="LoCoMo-exact", data_file="../LoCoMo/locomo10.first3.json")
    exact["ingestion"] = dict(manifest["ingestion"], mode="full")
    exact["evaluation"] = {"protocol": "exact-match"}
    (benchmarks / "locomo-exact").mkdir()
    (benchmarks / "locomo-exact" / "manifest.json").write_text(json.dumps(exact), encoding="utf-8")
    return benchmarks


def test_locomo_subset_loads_fifteen_cases(root: Path) -> None:
    suite = mb.load(root / "LoCoMo", providers=("LocalBaseline", "Other"))
    bench = suite.benchmark
    tasks = list(bench.iter_tasks())
    assert bench.id == "LoCoMo" and bench.task_count == 15
    assert len({t.id for t in tasks}) == 15
    assert [t.id for t in tasks[:6]] == [f"conv-26_{i}" for i in range(5)] + ["conv-30_0"]
    records = json.loads((root / "LoCoMo" / "locomo10.first3.json").read_text(encoding="utf-8"))
    first, raw = tasks[0], records[0]["qa"][0]
    assert first.input == raw["question"] and first.expected == raw["answer"]
    assert tasks[1].expected == str(records[0]["qa"][1]["answer"])  # a number becomes text
    assert first.relevant_ids == ("D1",) and first.tags == (f"type:{raw['category']}",)
    assert attrs.asdict(first.metadata["memory"].ingestion) == {"total": 19, "selected": 1}
    [step] = first.setup
    conversation = records[0]["conversation"]
    assert step.metadata == {
        "_sessionId": "D1",
        "_sessionDate": conversation["session_1_date_time"],
        "_sessionIndex": 0,
    }
    turn = conversation["session_1"][0]
    assert step.content.startswith(
        f"=== Session: D1 ===\nDate: {conversation['session_1_date_time']}\n"
        f"[USER]: {turn['speaker']}: {turn['text']}\n\n[ASSISTANT]: "
    )
    judge = bench.evaluators[0]
    instructions = json.loads((root / "LoCoMo" / "type_instructions.json").read_text())
    assert judge.type == "memory_llm_judge"
    assert judge.options["type_instructions"] == instructions
    assert [c.id for c in suite.conditions] == ["LocalBaseline", "Other"]


def test_type_instructions_load(root: Path) -> None:
    found, warning = load_type_instructions(root / "LoCoMo" / "type_instructions.json")
    assert set(found) == {"1", "2", "3"} and warning is None
    found, warning = load_type_instructions(MEMORYBENCH / "LongMemEval" / "type_instructions.json")
    assert found and warning is None


@pytest.mark.anyio
async def test_the_locomo_subset_runs_against_localbaseline(root: Path, tmp_path: Path) -> None:
    suite = mb.load(root / "locomo-exact", root=root).with_options(
        concurrency=4, deterministic=True
    )
    tasks = {t.id: t for t in suite.benchmark.iter_tasks()}
    assert len(tasks) == 15
    results = tmp_path / "results.jsonl"
    result = await benchkit.arun(suite, sinks=[MemoryBenchSink(results)])
    assert len(result.cells) == 15 and {c.status for c in result.cells} <= {"pass", "fail"}
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
        assert dict(retrieval.details) == pytest.approx(
            decision_eight(sessions, list(task.relevant_ids), 10)
        )
        details = protocol.details
        assert cell.passed == (details["correctness"] >= 0.7 and details["faithfulness"] >= 0.5)
    assert len(results.read_text().splitlines()) == 15
    again = await benchkit.arun(suite)
    assert again.to_json() == result.to_json()


@pytest.mark.anyio
async def test_lazy_ingestion_makes_retrieval_near_trivial(root: Path) -> None:
    lazy = mb.load(root / "LoCoMo")  # the original manifest: lazy mode, llm-as-judge
    for task in lazy.benchmark.iter_tasks():
        sessions = [s.metadata["_sessionId"] for s in task.setup]
        evidence = sorted(task.relevant_ids, key=lambda s: int(s[1:]))
        assert sessions == evidence or (sessions == ["D1"] and not task.relevant_ids)
    suite = benchkit.Suite(
        attrs.evolve(
            lazy.benchmark,
            evaluators=(benchkit.EvaluatorSpec("memory_retrieval", {"k": 10}),),
        ),
        conditions=(benchkit.Condition("local", MemoryPipeline(LocalBaseline())),),
    )
    result = await benchkit.arun(suite)
    assert {c.scores[0].details["retrieval_recall"] for c in result.cells} == {1.0}


@pytest.mark.anyio
async def test_locomo_runs_end_to_end_with_llm_answers_and_judge(
    root: Path, llm_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.url)
    monkeypatch.setenv("BENCHKIT_STORE", str(tmp_path / "store.db"))
    for name in ("MEMORYBENCH_JUDGE_BACKEND", "LLM_JUDGE_BACKEND", "MEMORYBENCH_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)

    def respond(body: Mapping[str, Any]) -> str:
        prompt = body["messages"][0]["content"]
        if prompt.startswith("You are a helpful assistant"):
            return "An answer from memory."
        return _judge_reply(1.0, 1.0)

    llm_server.respond = respond
    result = await benchkit.Runner().run(mb.load(root / "LoCoMo").with_options(concurrency=4))
    agg = result.aggregates[0]
    assert (agg.n, agg.passed, agg.errors) == (15, 15, 0)
    assert len(llm_server.requests) == 30  # an answer and a verdict per case


def test_the_longmemeval_manifest_is_valid(corpus: Path) -> None:
    loaded = mb.load_manifest(MEMORYBENCH / "LongMemEval")
    assert loaded.ingestion.answer_session_ids_field == "answer_session_ids"  # type: ignore[union-attr]
    assert loaded.evaluation.type_field == "question_type"  # type: ignore[union-attr]


@pytest.mark.parametrize("name", PROVIDERS)
def test_provider_manifests_are_read_and_not_taken_for_benchmarks(corpus: Path, name: str) -> None:
    path = MEMORYBENCH / "_provider-manifests" / f"{name}.manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    assert not mb.detect(path, manifest)
    capabilities, wait = from_original(manifest["capabilities"])
    assert {"add", "retrieve"} <= capabilities and wait >= 0


@pytest.mark.anyio
async def test_the_adapter_reads_the_original_capabilities(corpus: Path) -> None:
    aqrag = json.loads(
        (MEMORYBENCH / "_provider-manifests" / "AQRAG.manifest.json").read_text(encoding="utf-8")
    )

    class Original(Notes):
        def get_capabilities(self) -> dict[str, Any]:
            return dict(aqrag["capabilities"])

    store = as_memory_provider(Original(), scope="dict")
    assert store.capabilities == {"add", "retrieve", "delete"}
    assert store.convergence_wait_ms == 750.0  # type: ignore[attr-defined]
    mem0 = json.loads(
        (MEMORYBENCH / "_provider-manifests" / "mem0.manifest.json").read_text(encoding="utf-8")
    )
    assert from_original(mem0["capabilities"]) == (
        frozenset({"add", "retrieve", "delete", "update", "list"}),
        0.0,
    )
