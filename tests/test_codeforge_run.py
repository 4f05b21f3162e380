"""CodeForge runs end to end against the local OpenAI-compatible server: the suite builder's
checks, a chat model with tools, the judges, the summary and the result export."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from benchkit import Runner
from benchkit.cli import EXIT_BAD_INPUT, console, main
from benchkit.errors import ConfigError, FormatError
from benchkit.formats import codeforge
from benchkit.formats.codeforge import codeforge_suite, export_results, summary, write_results
from benchkit.formats.codeforge._cli import summary_table
from benchkit.model import ProviderSpec
from benchkit.results import RunResult

from ._llm_server import FakeOpenAI, Reply

pytestmark = pytest.mark.anyio

RAG = Path(__file__).parent / "fixtures" / "codeforge" / "rag-mini.yaml"
SHIPPED = Path(__file__).parent.parent / "benchmarks" / "codeforge"
E2E = SHIPPED / "e2e-quick.yaml"
TOOLS = SHIPPED / "tool-use-basic.yaml"
ALL = ["correctness", "faithfulness", "answer_relevancy", "contextual_precision"]


def last_user(body: Mapping[str, Any]) -> str:
    content: str = body["messages"][-1]["content"]
    return content


def router(
    model: Callable[[Mapping[str, Any]], str | Reply], judge: Callable[[str, str], Any]
) -> Callable[[Mapping[str, Any]], str | Reply]:
    """Model requests (no response_format) go to ``model``; judge requests to
    ``judge(schema name, prompt)``, whose value is sent as JSON (or as is, if a str)."""

    def respond(body: Mapping[str, Any]) -> str | Reply:
        if "response_format" not in body:
            return model(body)
        prompt = body["messages"][0]["content"]  # the judge's prompt, also on a retry
        answer = judge(body["response_format"]["json_schema"]["name"], prompt)
        return answer if isinstance(answer, str) else json.dumps(answer)

    return respond


def rag_model(body: Mapping[str, Any]) -> str:
    question = last_user(body)
    if "capital" in question:
        return "Paris."
    if "river" in question:
        return ""  # an empty answer
    return "It is 330 m tall."


def rag_judge(schema: str, prompt: str) -> Any:
    capital, tower = "Paris is the capital" in prompt, "330" in prompt
    if schema == "codeforge_steps":
        return {"steps": ["Compare the facts"]}
    if schema == "codeforge_score":
        return {"score": 9 if capital else 6, "reason": "judged"}
    if schema == "codeforge_claims":
        return {"claims": ["Paris is the capital"] if "Paris." in prompt else ["a", "b"]}
    if schema == "codeforge_truths":
        return {"truths": ["a fact"]}
    if schema == "codeforge_statements":
        return {"statements": ["one statement"]}
    if schema == "codeforge_verdicts":
        if "Claims, as a JSON list" in prompt and '"a"' in prompt:
            return {"verdicts": [{"verdict": "yes"}, {"verdict": "no", "reason": "r"}]}
        return {"verdicts": [{"verdict": "yes"}]}
    assert schema == "codeforge_relevance"
    if tower:
        return "I cannot decide."  # malformed: a judge error for this metric only
    if capital:
        return {"verdicts": [{"verdict": "yes"}, {"verdict": "no"}]}
    return {"verdicts": [{"verdict": "no"}, {"verdict": "yes"}]}


def suite_for(server: FakeOpenAI, dataset: Path | str, metrics: Any, **kwargs: Any) -> Any:
    return codeforge_suite(
        dataset,
        model="model-under-test",
        base_url=server.url,
        metrics=metrics,
        judge_model="judge",
        judge_base_url=server.url,
        cache=False,
        **kwargs,
    )


@pytest.fixture
async def rag_run(llm_server: FakeOpenAI) -> RunResult:
    llm_server.respond = router(rag_model, rag_judge)
    return await Runner().run(suite_for(llm_server, RAG, ALL))


async def test_a_run_scores_every_metric(llm_server: FakeOpenAI, rag_run: RunResult) -> None:
    cells = {c.task_id: c for c in rag_run.cells}
    values = {tid: {s.name: s.value for s in c.scores} for tid, c in cells.items()}
    assert values["rag-001"] == {
        "correctness": 0.9,
        "faithfulness": 1.0,
        "answer_relevancy": 1.0,
        "contextual_precision": 1.0,
    }
    # the empty answer: 0 for what reads the output, contextual precision judged as usual
    assert values["rag-002"] == {
        "correctness": 0.0,
        "faithfulness": 0.0,
        "answer_relevancy": 0.0,
        "contextual_precision": 0.5,
    }
    assert values["rag-003"]["faithfulness"] == 0.5
    assert values["rag-003"]["contextual_precision"] is None
    assert [cells[t].status for t in ("rag-001", "rag-002", "rag-003")] == ["pass", "fail", "error"]
    assert cells["rag-003"].error_category == "judge_error"
    assert cells["rag-003"].error is not None and "I cannot decide." in cells["rag-003"].error
    first = cells["rag-001"].response
    assert first is not None and first.output == "Paris." and first.usage is not None
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (10, 5)
    schemas = [
        r.body["response_format"]["json_schema"]["name"]
        for r in llm_server.requests
        if "response_format" in r.body
    ]
    assert schemas.count("codeforge_steps") == 1  # once for the run, not once per task
    assert sum(r.body["model"] == "model-under-test" for r in llm_server.requests) == 3


async def test_summary_gives_per_metric_means_and_difficulty(rag_run: RunResult) -> None:
    result = summary(rag_run)
    by_name = {m.metric: m for m in result.metrics}
    assert list(by_name) == ALL
    assert by_name["correctness"].mean == pytest.approx(0.5)
    assert by_name["faithfulness"].mean == pytest.approx(0.5)
    cp = by_name["contextual_precision"]
    assert (cp.mean, cp.n, cp.errors, cp.cell_errors) == (0.75, 2, 1, 0)  # the error left out
    for metric in result.metrics:
        assert metric.interval is not None and metric.condition_id == "model-under-test"
        assert metric.interval.low <= (metric.mean or 0) <= metric.interval.high
    assert result.summary_scores() == {
        "correctness": pytest.approx(0.5),
        "faithfulness": pytest.approx(0.5),
        "answer_relevancy": pytest.approx(2 / 3),
        "contextual_precision": 0.75,
    }
    correctness = [
        (m.difficulty, m.mean, m.n) for m in result.by_difficulty if m.metric == "correctness"
    ]
    assert correctness == [("easy", 0.9, 1), ("medium", 0.6, 1), ("hard", 0.0, 1)]
    hard_cp = [m for m in result.by_difficulty if m.metric == "contextual_precision"][2]
    assert (hard_cp.difficulty, hard_cp.mean) == ("hard", 0.5)
    assert (result.cells, result.errored_cells) == (3, 1)
    assert (result.tokens_in, result.tokens_out, result.cost_usd) == (30, 15, None)
    assert result.judge_tokens_in > 0 and result.judge_tokens_in == 2 * result.judge_tokens_out
    assert result.to_dict()["metrics"][0]["metric"] == "correctness"


async def test_summary_table_shows_means_counts_and_difficulties(rag_run: RunResult) -> None:
    out = io.StringIO()
    console(out).print(summary_table(summary(rag_run)))
    lines = out.getvalue().splitlines()
    header = next(line for line in lines if "condition" in line)
    assert header.index("easy") < header.index("medium") < header.index("hard")
    row = next(line for line in lines if "contextual_precision" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[1:] == ["contextual_precision", cells[2], "2", "1", "0", "1.000", "–", "0.500"]
    assert cells[2].startswith("0.750 [")
    assert "model tokens 30 in / 15 out, cost unknown" in out.getvalue()


async def test_export_has_codeforge_result_shape(rag_run: RunResult, tmp_path: Path) -> None:
    records = export_results(rag_run)  # the dataset is loaded again from the result
    assert [r["task_id"] for r in records] == ["rag-001", "rag-002", "rag-003"]
    first = records[0]
    assert list(first)[:10] == [
        "task_id",
        "task_name",
        "scores",
        "actual_output",
        "expected_output",
        "tool_calls",
        "cost_usd",
        "tokens_in",
        "tokens_out",
        "duration_ms",
    ]
    assert first["task_name"] == "Capital"
    assert first["scores"] == {
        "correctness": 0.9,
        "faithfulness": 1.0,
        "answer_relevancy": 1.0,
        "contextual_precision": 1.0,
    }
    assert (first["actual_output"], first["expected_output"]) == (
        "Paris.",
        "Paris is the capital of France.",
    )
    assert (first["tool_calls"], first["cost_usd"], first["tokens_in"], first["tokens_out"]) == (
        [],
        None,
        10,
        5,
    )
    assert isinstance(first["duration_ms"], int)
    assert records[2]["scores"]["contextual_precision"] is None
    assert (records[2]["status"], records[2]["condition_id"]) == ("error", "model-under-test")
    path = write_results(rag_run, tmp_path / "out" / "results.json")
    assert json.loads(path.read_text(encoding="utf-8")) == records


def tool_model(body: Mapping[str, Any]) -> Reply:
    """A model that answers each tool-use task with a tool call (the last one half right)."""
    question = last_user(body)
    if "httpx" in question:
        return Reply.tools({"name": "lookup_package", "arguments": {"name": "httpx"}})
    if "yen" in question:
        arguments = {"amount": 250, "from": "EUR", "to": "JPY", "rounding": 2}
        return Reply.tools({"name": "convert_currency", "arguments": arguments})
    return Reply.tools({"name": "list_files", "arguments": {"directory": "build"}})


def failing_even_model(body: Mapping[str, Any]) -> str | Reply:
    """A model whose call fails (HTTP 400) on the is_even(n) task."""
    return Reply.error(400) if "is_even(n)" in last_user(body) else "def greet(name): ..."


async def test_tool_calls_are_offered_captured_and_scored(llm_server: FakeOpenAI) -> None:
    llm_server.respond = router(tool_model, lambda schema, prompt: {})
    suite = suite_for(
        llm_server,
        TOOLS,
        "tool_correctness",
        metric_options={"tool_correctness": {"mode": "f1", "arguments": "subset"}},
    )
    result = await Runner().run(suite)
    scores = {c.task_id: c.scores[0].value for c in result.cells}
    assert scores == {"tu-001": 1.0, "tu-002": 1.0, "tu-003": pytest.approx(2 / 3)}
    offered = {
        last_user(r.body)[:20]: [t["function"]["name"] for t in r.body["tools"]]
        for r in llm_server.requests
    }
    assert sorted(offered.values()) == [
        ["convert_currency"],
        ["list_files", "delete_file"],
        ["lookup_package"],
    ]
    records = export_results(result, suite)
    assert records[1]["tool_calls"] == [
        {
            "name": "convert_currency",
            "args": {"amount": 250, "from": "EUR", "to": "JPY", "rounding": 2},
        }
    ]
    assert records[2]["scores"] == {"tool_correctness": pytest.approx(2 / 3)}
    assert records[0]["actual_output"] == ""  # a tool call and no text


async def test_a_failed_model_call_counts_per_errors_as(llm_server: FakeOpenAI) -> None:
    judge = {"codeforge_steps": {"steps": ["s"]}, "codeforge_score": {"score": 8, "reason": "r"}}
    llm_server.respond = router(failing_even_model, lambda schema, prompt: judge[schema])
    result = await Runner().run(suite_for(llm_server, E2E, ["correctness"]))
    failed = result.cells[1]
    assert (failed.status, failed.error_category, failed.scores) == ("error", "execution_error", ())
    zero = summary(result).metrics[0]
    assert (zero.mean, zero.n, zero.errors, zero.cell_errors, zero.errors_as) == (
        0.4,
        2,
        0,
        1,
        "zero",
    )
    excluded = await Runner().run(suite_for(llm_server, E2E, ["correctness"], errors_as="exclude"))
    left_out = summary(excluded).metrics[0]
    assert (left_out.mean, left_out.n, left_out.cell_errors) == (0.8, 1, 1)
    record = export_results(result)[1]
    assert record["scores"] == {"correctness": None} and record["actual_output"] == ""
    assert record["status"] == "error" and "HTTP 400" in record["error"]
    assert (record["tokens_in"], record["cost_usd"]) == (0, None)


async def test_codeforge_variables_reach_model_and_judge(
    llm_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_BASE_URL", llm_server.url)
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-forge-secret")
    monkeypatch.setenv("CODEFORGE_JUDGE_MODEL", "judge-from-env")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    judge = {"codeforge_steps": {"steps": ["s"]}, "codeforge_score": {"score": 5, "reason": "r"}}
    llm_server.respond = router(lambda body: "code", lambda schema, prompt: judge[schema])
    suite = codeforge_suite(E2E, model="m", metrics=["correctness"], cache=False)
    result = await Runner().run(suite)
    assert [c.scores[0].value for c in result.cells] == [0.5, 0.5]
    models = sorted({r.body["model"] for r in llm_server.requests})
    assert models == ["judge-from-env", "m"]
    assert {r.headers["Authorization"] for r in llm_server.requests} == {"Bearer sk-forge-secret"}
    assert "sk-forge-secret" not in result.to_json()
    assert "sk-forge-secret" not in json.dumps(export_results(result))


# --------------------------------------------------------------------------- the suite builder


def test_an_unknown_metric_is_refused_before_anything(llm_server: FakeOpenAI) -> None:
    with pytest.raises(ConfigError) as info:
        suite_for(llm_server, "no-such-dataset", "correctness,corectness")
    message = str(info.value)
    assert "unknown metric 'corectness'" in message and "did you mean `correctness`?" in message
    assert (
        "known metrics: correctness, tool_correctness, faithfulness, answer_relevancy, "
        "contextual_precision" in message
    )
    for bad, text in (
        ([], "at least one metric is required"),
        (" , ", "at least one metric is required"),
        (["correctness", "correctness"], "listed twice"),
    ):
        with pytest.raises(ConfigError, match=text):
            suite_for(llm_server, E2E, bad)
    assert llm_server.requests == []


def test_metrics_no_task_can_feed_are_refused() -> None:
    for metric, what in (
        ("faithfulness", "`context` passages"),
        ("contextual_precision", "`context` passages"),
        ("tool_correctness", "`expected_tools`"),
    ):
        with pytest.raises(ConfigError) as info:
            codeforge_suite(E2E, model="m", metrics=[metric])
        assert f"metric {metric!r} needs {what}" in str(info.value)
        assert "dataset 'e2e-quick'" in str(info.value)


def test_the_suite_has_one_chat_condition_and_one_evaluator_per_metric(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LITELLM_BASE_URL", raising=False)
    suite = codeforge_suite(
        RAG,
        model="openai/gpt-4o",
        metrics="faithfulness, correctness",
        judge_model="judge",
        metric_options={"correctness": {"threshold": 0.7}},
        concurrency=2,
        epochs=3,
    )
    (condition,) = suite.conditions
    assert (condition.id, condition.label) == ("openai/gpt-4o", "openai/gpt-4o")
    assert condition.provider == ProviderSpec(
        "chat",
        {"model": "openai/gpt-4o", "api_key_env": ["LITELLM_MASTER_KEY", "OPENAI_API_KEY"]},
    )
    assert [(s.type, s.name, dict(s.options)) for s in suite.benchmark.evaluators] == [
        ("codeforge_faithfulness", "faithfulness", {"model": "judge"}),
        ("codeforge_correctness", "correctness", {"model": "judge", "threshold": 0.7}),
    ]
    assert (suite.options.concurrency, suite.options.epochs) == (2, 3)
    assert suite.benchmark.source.format == "codeforge" and suite.benchmark.task_count == 3
    with pytest.raises(ConfigError, match="unknown run options \\['speed'\\]"):
        codeforge_suite(RAG, model="m", metrics="correctness", speed=3)
    with pytest.raises(ConfigError, match="invalid run option"):
        codeforge_suite(RAG, model="m", metrics="correctness", concurrency=0)
    with pytest.raises(ConfigError, match="not among the metrics"):
        codeforge_suite(RAG, model="m", metrics="correctness", metric_options={"faithfulness": {}})
    with pytest.raises(ConfigError, match="model is required"):
        codeforge_suite(RAG, model=" ", metrics="correctness")


def test_datasets_are_addressed_by_stem_or_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(E2E, tmp_path / "e2e-quick.yaml")
    shutil.copy(RAG, tmp_path / "rag-mini.yml")
    by_stem = codeforge_suite("e2e-quick", model="m", metrics="correctness", datasets_dir=tmp_path)
    assert by_stem.benchmark.id == "e2e-quick"
    monkeypatch.setenv("CODEFORGE_BENCHMARK_DATASETS_DIR", str(tmp_path))
    assert codeforge_suite("RAG Mini", model="m", metrics="correctness").benchmark.id == "rag-mini"
    with pytest.raises(ConfigError, match="no dataset 'missing'"):
        codeforge_suite("missing", model="m", metrics="correctness")
    with pytest.raises(ConfigError, match=r"datasets directory '.*nope' does not exist"):
        codeforge_suite("x", model="m", metrics="correctness", datasets_dir=tmp_path / "nope")
    with pytest.raises(ConfigError, match="is a directory, not a dataset"):
        codeforge_suite(tmp_path, model="m", metrics="correctness")


def test_the_shipped_datasets_are_the_default_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEFORGE_BENCHMARK_DATASETS_DIR", raising=False)
    monkeypatch.chdir(Path(__file__).parent.parent)
    suite = codeforge_suite("Python Basics", model="m", metrics="correctness")
    assert suite.benchmark.id == "basic-coding"
    assert Path(suite.benchmark.source.path or "").parent.name == "codeforge"
    assert codeforge.resolve_datasets_dir() == Path("benchmarks/codeforge")


def test_the_datasets_directory_comes_from_codeforge_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``benchmark.datasets_dir`` in ./codeforge.yaml (the spec's discovery key), below
    $CODEFORGE_BENCHMARK_DATASETS_DIR as in CodeForge's config loader."""
    monkeypatch.delenv("CODEFORGE_BENCHMARK_DATASETS_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert codeforge.configured_datasets_dir(tmp_path) is None
    (tmp_path / "codeforge.yaml").write_text("server:\n  port: '8080'\n")
    assert codeforge.configured_datasets_dir(tmp_path) is None
    (tmp_path / "codeforge.yaml").write_text("benchmark:\n  datasets_dir: configs/benchmarks\n")
    assert codeforge.resolve_datasets_dir() == tmp_path / "configs/benchmarks"
    monkeypatch.setenv("CODEFORGE_BENCHMARK_DATASETS_DIR", "elsewhere")
    assert codeforge.resolve_datasets_dir() == tmp_path / "elsewhere"
    monkeypatch.delenv("CODEFORGE_BENCHMARK_DATASETS_DIR")
    (tmp_path / "codeforge.yaml").write_text("benchmark:\n  datasets_dir: [a]\n")
    with pytest.raises(FormatError, match=r"benchmark\.datasets_dir must be a string") as caught:
        codeforge.resolve_datasets_dir()
    assert caught.value.line == 2


def test_cli_runs_a_dataset_against_a_model(
    llm_server: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.respond = router(rag_model, rag_judge)
    export = tmp_path / "codeforge.json"
    argv = [
        "run",
        str(RAG),
        "--model",
        "small-model",
        "--base-url",
        llm_server.url,
        "--judge-base-url",
        llm_server.url,
        "--metrics",
        "correctness,answer_relevancy",
        "--export",
        str(export),
        "--no-store",
    ]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "small-model" in out.out and "correctness" in out.out
    records = json.loads(export.read_text())
    assert {r["task_name"] for r in records} and set(records[0]["scores"]) == {
        "correctness",
        "answer_relevancy",
    }
    assert {r.body["model"] for r in llm_server.requests} >= {"small-model"}


def test_cli_refuses_a_dataset_without_a_model_or_with_an_unknown_metric(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", str(RAG), "--no-store"]) == EXIT_BAD_INPUT
    assert "needs --model and --metrics" in capsys.readouterr().err
    argv = [
        "run",
        str(RAG),
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--metrics",
        "correctnes",
        "--no-store",
    ]
    assert main(argv) == EXIT_BAD_INPUT
    assert "correctness" in capsys.readouterr().err


def test_store_options_decide_where_replies_are_cached(
    llm_server: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run store is the reply cache: ``--store PATH`` caches there (a re-run makes no
    call), ``--no-store`` caches nowhere (every run calls), and the default store is never
    opened behind the user's back."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCHKIT_STORE", raising=False)
    llm_server.respond = router(rag_model, rag_judge)
    base = ["run", str(RAG), "--model", "m", "--base-url", llm_server.url]
    base += ["--judge-base-url", llm_server.url, "--metrics", "correctness", "-f", "json"]
    store = tmp_path / "elsewhere.db"
    assert main([*base, "--store", str(store)]) == 0
    first = len(llm_server.requests)
    assert first > 0 and store.is_file()
    assert main([*base, "--store", str(store)]) == 0
    assert len(llm_server.requests) == first, "the re-run is served from --store's cache"
    assert main([*base, "--no-store"]) == 0
    assert main([*base, "--no-store"]) == 0
    assert len(llm_server.requests) == 3 * first, "--no-store: no cache, every call made"
    assert not (tmp_path / ".benchkit" / "benchkit.db").exists()
