"""semantic_similarity and the RAG metrics (#44): hand-computed values against a judge and
an embeddings model on a real HTTP server (127.0.0.1), on native cells and on the memory
pipeline's; the real local model on a tiny case; option errors."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

import benchkit
from benchkit import Benchmark, Condition, EvaluatorSpec, Suite, Task
from benchkit.errors import BenchkitError
from benchkit.evaluators._rag import context_precision, f1_from_counts
from benchkit.llm import cosine
from benchkit.memory import MemoryPipeline
from benchkit.model import Request, Response, RetrievedItem, SetupStep
from benchkit.registry import default_registries
from benchkit.results import JUDGE_ERROR, Score

from ._embeddings_server import FakeEmbeddings, letters

pytestmark = pytest.mark.anyio

RAG = ("context_recall", "context_precision", "faithfulness", "answer_correctness")


def build(name: str, **options: Any) -> Any:
    return default_registries().evaluators.build(name, options)


def judge(script: Mapping[str, list[str]], verdicts: Mapping[str, list[int]]) -> Any:
    """A fake judge: statements by a word of the text split (``script``), verdicts by a
    word of the instruction (``verdicts``), usefulness by whether a context names Paris."""

    def answer(body: Mapping[str, Any]) -> str:
        import json

        prompt = body["messages"][0]["content"]
        schema = body["response_format"]["json_schema"]["schema"]
        if "statements" in schema["properties"]:
            text = prompt.split("Answer: ", 1)[1]
            for key, statements in script.items():
                if key in text:
                    return json.dumps({"statements": statements})
            raise AssertionError(f"no statements scripted for {text!r}")
        if "useful in arriving" in prompt:
            context = prompt.split("Context: ", 1)[1]
            return json.dumps({"verdicts": [1 if "Paris" in context else 0]})
        for key, values in verdicts.items():
            if key in prompt:
                return json.dumps({"verdicts": values})
        raise AssertionError(f"no verdicts scripted for {prompt!r}")

    return answer


PARIS = "Paris is the capital of France."
CONTEXTS = (
    RetrievedItem("m1", "Paris is the capital of France"),
    RetrievedItem("m2", "Berlin is in Germany"),
    RetrievedItem("m3", "The capital of France, Paris, has two million people"),
)


def rag_options(server: FakeEmbeddings, **more: Any) -> dict[str, Any]:
    return {"base_url": server.url, "model": "judge", "cache": False, **more}


async def score(evaluator: Any, task: Task, response: Response) -> Score:
    try:
        result: Score = await evaluator.evaluate(task, response)
        return result
    finally:
        await evaluator.aclose()


def test_the_published_formulas() -> None:
    assert context_precision([1, 0, 1]) == pytest.approx((1 + 2 / 3) / 2)
    assert context_precision([0, 0, 1]) == pytest.approx(1 / 3)
    assert context_precision([]) == 0.0
    assert f1_from_counts(2, 1, 1) == pytest.approx(2 / 3)
    assert f1_from_counts(0, 3, 2) == 0.0


async def test_context_recall_is_the_share_of_reference_claims_supported() -> None:
    task = Task("t", input="What is the capital of France?", expected="REF Paris, 2M people")
    response = Response("Paris.", retrieved=CONTEXTS)
    with FakeEmbeddings() as server:
        server.chat = judge({"REF": ["a", "b", "c"]}, {"attributed": [1, 0, 1]})
        result = await score(build("context_recall", **rag_options(server)), task, response)
        prompts = [b["messages"][-1]["content"] for b in server.paths("chat/completions")]
    assert result.value == pytest.approx(2 / 3) and result.passed
    assert result.details["verdicts"] == [1, 0, 1] and result.details["contexts"] == 3
    assert all(c.content in prompts[1] for c in CONTEXTS)  # the judge saw every context


async def test_context_precision_averages_precision_at_the_relevant_ranks() -> None:
    task = Task("t", input="What is the capital of France?", expected=PARIS)
    response = Response("Paris.", retrieved=CONTEXTS)
    with FakeEmbeddings() as server:
        server.chat = judge({}, {})
        result = await score(build("context_precision", **rag_options(server)), task, response)
        asked = len(server.paths("chat/completions"))
    assert result.details["verdicts"] == [1, 0, 1] and asked == 3
    assert result.value == pytest.approx((1 / 1 + 2 / 3) / 2)


async def test_faithfulness_is_the_share_of_answer_claims_supported() -> None:
    task = Task("t", input="Tell me about Paris")
    response = Response("ANS Paris facts", retrieved=CONTEXTS)
    with FakeEmbeddings() as server:
        server.chat = judge({"ANS": ["w", "x", "y", "z"]}, {"inferred": [1, 1, 0, 1]})
        result = await score(build("faithfulness", **rag_options(server)), task, response)
    assert result.value == pytest.approx(0.75) and result.passed
    assert result.details["statements"] == ["w", "x", "y", "z"]


async def test_answer_correctness_weighs_claim_f1_and_similarity() -> None:
    answer, reference = "ANS Paris is big", "REF Paris is the capital"
    task = Task("t", input="Paris?", expected=reference)
    with FakeEmbeddings() as server:
        server.chat = judge(
            {"ANS": ["p", "q", "r"], "REF": ["s", "t"]},
            {"supported by the reference": [1, 1, 0], "stated by the answer": [1, 0]},
        )
        evaluator = build("answer_correctness", **rag_options(server, embedding_model="fake-embed"))
        result = await score(evaluator, task, Response(answer))
        embedded = server.paths("embeddings")
    # TP 2, FP 1 (one answer claim unsupported), FN 1 (one reference claim missing).
    f1 = 2 / (2 + 0.5 * (1 + 1))
    similarity = cosine(letters(answer), letters(reference))
    assert (result.details["tp"], result.details["fp"], result.details["fn"]) == (2, 1, 1)
    assert result.value == pytest.approx(0.75 * f1 + 0.25 * similarity)
    assert embedded == [{"model": "fake-embed", "input": [answer, reference]}]


async def test_weights_change_the_mix() -> None:
    task = Task("t", input="Paris?", expected="REF x")
    with FakeEmbeddings() as server:
        server.chat = judge(
            {"ANS": ["p"], "REF": ["s"]},
            {"supported by the reference": [1], "stated by the answer": [1]},
        )
        only_f1 = build("answer_correctness", **rag_options(server, weights=[1, 0]))
        result = await score(only_f1, task, Response("ANS y"))
        assert server.paths("embeddings") == []
    assert result.value == 1.0


async def test_semantic_similarity_is_the_best_cosine_over_references() -> None:
    task = Task("t", expected=["zzz", "hello world"])
    with FakeEmbeddings() as server:
        evaluator = build(
            "semantic_similarity", base_url=server.url, model="fake-embed", threshold=0.9
        )
        result = await score(evaluator, task, Response("hello word"))
    expected = cosine(letters("hello word"), letters("hello world"))
    assert result.value == pytest.approx(expected) and result.passed == (expected >= 0.9)
    assert result.details["model"] == "fake-embed" and "hello world" in (result.reason or "")


async def test_no_retrieved_contexts_scores_zero_without_asking() -> None:
    task = Task("t", input="q", expected=PARIS)
    with FakeEmbeddings() as server:
        for name in ("context_recall", "context_precision", "faithfulness"):
            result = await score(build(name, **rag_options(server)), task, Response("Paris."))
            assert result.value == 0.0 and "no contexts" in (result.reason or "")
        assert server.paths("chat/completions") == []


async def test_contexts_can_come_from_the_task() -> None:
    task = Task("t", input="q", context=["Paris is the capital"], expected="REF")
    with FakeEmbeddings() as server:
        server.chat = judge({"ANS": ["a"]}, {"inferred": [1]})
        evaluator = build("faithfulness", **rag_options(server, contexts="task"))
        result = await score(evaluator, task, Response("ANS"))
    assert result.value == 1.0 and result.details["contexts_from"] == "task"


async def test_a_wrong_count_of_verdicts_twice_is_a_judge_error() -> None:
    task = Task("t", input="q", expected="REF")
    with FakeEmbeddings() as server:
        server.chat = judge({"REF": ["a", "b"]}, {"attributed": [1]})  # one verdict for two
        result = await score(
            build("context_recall", **rag_options(server)), task, Response("x", retrieved=CONTEXTS)
        )
        asked = len(server.paths("chat/completions"))
    assert result.value is None and result.details[JUDGE_ERROR] == "schema_mismatch"
    assert asked == 3  # statements, verdicts, the verdicts' one retry
    assert len(result.details["replies"]) == 3


async def test_a_missing_reference_is_an_error_not_a_zero() -> None:
    with FakeEmbeddings() as server:
        result = await score(
            build("context_recall", **rag_options(server)),
            Task("t", input="q"),
            Response("x", retrieved=CONTEXTS),
        )
    assert result.value is None and "reference" in (result.error or "")


@pytest.mark.parametrize(
    ("name", "options", "field"),
    [
        ("context_recall", {"contexts": "nowhere"}, "contexts"),
        ("faithfulness", {"threshold": 2}, "threshold"),
        ("answer_correctness", {"weights": [1]}, "weights"),
        ("answer_correctness", {"weights": [0, 0]}, "weights"),
        ("context_precision", {"modle": "x"}, "modle"),
        ("semantic_similarity", {"references": []}, "references"),
        ("semantic_similarity", {"cache": "yes"}, "cache"),
    ],
)
def test_bad_options_name_the_field(name: str, options: dict[str, Any], field: str) -> None:
    with pytest.raises(BenchkitError, match=field):
        build(name, base_url="http://127.0.0.1:9/v1", **options)


async def test_on_native_cells_with_retrieved_contexts() -> None:
    """A native suite whose Python system returns retrieved items: every RAG metric
    scores its cells through the runner."""

    def system(request: Request) -> Response:
        return Response("ANS Paris.", retrieved=CONTEXTS[:2])

    with FakeEmbeddings() as server:
        server.chat = judge(
            {"ANS": ["x"], "REF": ["y"]},
            {"attributed": [1], "inferred": [1], "supported by": [1], "stated by": [1]},
        )
        options = rag_options(server, embedding_model="fake-embed")
        specs = [
            EvaluatorSpec(
                n,
                {
                    k: v
                    for k, v in options.items()
                    if n == "answer_correctness" or k != "embedding_model"
                },
            )
            for n in RAG
        ]
        suite = Suite(
            Benchmark(
                "rag", tasks=[Task("t", input="capital?", expected="REF Paris")], evaluators=specs
            ),
            [Condition("sys", benchkit.CallableProvider(system))],
        )
        result = await benchkit.arun(suite)
    (cell,) = result.cells
    values = {s.name: s.value for s in cell.scores}
    assert values["context_recall"] == 1.0 and values["faithfulness"] == 1.0
    assert values["context_precision"] == 1.0  # the one useful context is ranked first
    assert values["answer_correctness"] == pytest.approx(
        0.75 + 0.25 * cosine(letters("ANS Paris."), letters("REF Paris"))
    )


async def test_on_the_memory_pipelines_cells() -> None:
    """MemoryBench's shape: a memory store ingests, retrieves and answers; the RAG
    metrics read what it retrieved."""
    pipeline = MemoryPipeline(provider="LocalBaseline")
    task = Task(
        "case",
        input="capital of France",
        expected="REF Paris",
        setup=(
            SetupStep("add", content="Paris is the capital of France"),
            SetupStep("add", content="Berlin is the capital of Germany"),
        ),
    )
    response = await pipeline.invoke(Request(task, Condition("c", pipeline), run_id="run_rag"))
    await pipeline.aclose()
    assert response.retrieved and "Paris" in response.retrieved[0].content
    with FakeEmbeddings() as server:
        server.chat = judge({"REF": ["Paris is the capital"]}, {"attributed": [1]})
        recall = await score(build("context_recall", **rag_options(server)), task, response)
        precision = await score(build("context_precision", **rag_options(server)), task, response)
    assert recall.value == 1.0 and recall.details["contexts"] == len(response.retrieved)
    expected = context_precision([1 if "Paris" in r.content else 0 for r in response.retrieved])
    assert precision.value == pytest.approx(expected)


@pytest.mark.slow
def test_the_local_model_scores_every_cell_or_says_judge_error() -> None:
    """The real embedded model as judge and embedder on a tiny case: each metric gives a
    value in [0, 1] or a judge_error, never anything else."""
    from benchkit.llm._local import MissingExtra, local_model_info

    try:
        local_model_info()
    except MissingExtra as exc:
        pytest.skip(str(exc))
    task = Task(
        "t", input="What is the capital of France?", expected="Paris is the capital of France."
    )
    response = Response("The capital of France is Paris.", retrieved=CONTEXTS)

    async def all_metrics() -> list[Score]:
        scores = []
        for name in (*RAG, "semantic_similarity"):
            evaluator = build(name)
            await evaluator.prepare() if hasattr(evaluator, "prepare") else None
            scores.append(await score(evaluator, task, response))
        return scores

    for result in anyio.run(all_metrics):
        if result.value is None:
            assert result.details.get(JUDGE_ERROR), result.error
        else:
            assert 0.0 <= result.value <= 1.0 and not math.isnan(result.value)


def test_a_stored_memorybench_run_is_rescored_with_rag_metrics(tmp_path: Path) -> None:
    """`memory eval` stores what LocalBaseline retrieved; rescoring the run with
    context_recall and faithfulness reads those contexts, calling no store again."""
    from benchkit.cli import main
    from benchkit.store import Store

    store = str(tmp_path / "store.db")
    memory = ["memory", "eval", "--providers", "LocalBaseline", "--benchmarks", "rag-handbook"]
    assert main([*memory, "--store", store]) == 0
    with FakeEmbeddings() as server:
        server.chat = judge(
            {"": ["one claim", "another claim"]}, {"attributed": [1, 0], "inferred": [1, 1]}
        )
        specs = [EvaluatorSpec(n, rag_options(server)) for n in ("context_recall", "faithfulness")]
        with Store(store) as opened:
            parent = opened.load("latest")
            child = opened.rescore("latest", specs)
        judged = len(server.paths("chat/completions"))
    assert child.info.parent_run_id == parent.run_id and judged > 0
    retrieved = [c for c in child.cells if c.response is not None and c.response.retrieved]
    assert retrieved
    for cell in retrieved:
        values = {s.name: s.value for s in cell.scores}
        assert values["context_recall"] == 0.5 and values["faithfulness"] == 1.0
