"""The client's second protocol, Anthropic's Messages API (#44), against a server on
127.0.0.1 that checks headers and bodies as the real API does (tests/_anthropic_server.py):
the request and reply mapping, usage and cost, errors and retries, the cache, judges'
structured verdicts, the agent's tool calls, and a CLI run whose key is found nowhere."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchkit import Benchmark, Condition, EvaluatorSpec, Suite, Task
from benchkit import run as run_suite
from benchkit.cli import main
from benchkit.errors import ConfigError, LLMError
from benchkit.llm import LLMClient, LoglikelihoodRequest, MemoryCache, builtin_prices
from benchkit.llm._anthropic import request as messages_request
from benchkit.llm._provider import ChatProvider
from benchkit.model import Usage
from benchkit.providers import AgentProvider
from benchkit.store import Store
from benchkit.trajectory import Trajectory

from ._anthropic_server import KEY, AReply, FakeAnthropic, invalid, message

SONNET = "claude-sonnet-4-20250514"


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeAnthropic() as server:
        yield server


def client(api: FakeAnthropic, **options: Any) -> LLMClient:
    options = {"max_retries": 2, "backoff_base": 0.01, **options}
    return LLMClient(base_url=api.url, model=f"anthropic:{SONNET}", **options)


def test_a_chat_is_a_messages_request_and_its_reply_is_priced(api: FakeAnthropic) -> None:
    api.queue(AReply.of(message("Paris", input_tokens=100, output_tokens=20, cache_read=1000)))
    chat = client(api)
    assert chat.protocol == "anthropic" and chat.model == SONNET
    result = anyio.run(
        lambda: chat.chat(
            [
                {"role": "system", "content": "Answer briefly."},
                {"role": "user", "content": "The capital of France?"},
            ]
        )
    )
    body, headers = api.requests[0]
    assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers
    assert body["system"] == "Answer briefly." and body["max_tokens"] == 4096
    assert body["messages"] == [{"role": "user", "content": "The capital of France?"}]
    assert (result.text, result.finish_reason, result.model) == ("Paris", "stop", SONNET)
    assert result.usage.prompt_tokens == 1100 and result.usage.completion_tokens == 20
    price = builtin_prices().find(SONNET)
    assert price is not None and price.cached_per_million is not None
    expected = (100 * 3.0 + 1000 * price.cached_per_million + 20 * 15.0) / 1e6
    assert result.usage.cost_usd == pytest.approx(expected)
    assert chat.usage.total().cost_usd == pytest.approx(expected)


def test_cache_writes_cost_a_quarter_more_than_input() -> None:
    from benchkit.llm._anthropic import parse

    reply = parse(message("x", input_tokens=10, output_tokens=0, cache_write=1000), {})
    price = builtin_prices().find("claude-sonnet-4")
    assert price is not None
    assert reply.usage == Usage(1010, 0)
    assert reply.cost(price) == pytest.approx((10 * 3.0 + 1000 * 3.75) / 1e6)


@pytest.mark.parametrize(
    "first",
    [
        AReply.error(429, "rate_limit_error", headers={"retry-after": "0.1"}),
        AReply.error(529, "overloaded_error", "Overloaded", headers={"retry-after": "0"}),
        AReply.error(500, "api_error"),
    ],
)
def test_rate_limits_and_overload_are_retried_honouring_retry_after(
    api: FakeAnthropic, first: AReply
) -> None:
    api.queue(first, AReply.of(message("ok")))
    result = anyio.run(lambda: client(api).chat("hi"))
    assert result.text == "ok" and len(api.requests) == 2


def test_retry_after_beyond_the_limit_gives_up_with_the_servers_words(api: FakeAnthropic) -> None:
    api.queue(AReply.error(529, "overloaded_error", "Overloaded", headers={"retry-after": "600"}))
    with pytest.raises(LLMError) as caught:
        anyio.run(lambda: client(api, max_retry_after=5).chat("hi"))
    assert caught.value.kind == "rate_limited" and caught.value.status == 529
    assert "overloaded_error: Overloaded" in caught.value.message
    assert len(api.requests) == 1


def test_a_wrong_key_is_an_auth_error_not_retried_and_never_shown(api: FakeAnthropic) -> None:
    wrong = "sk-ant-api03-wrong-key-0123456789abcdefghij"
    api.key = "another"
    with pytest.raises(LLMError) as caught:
        anyio.run(lambda: client(api, api_key=wrong).chat("hi"))
    assert caught.value.kind == "auth_error" and caught.value.status == 401
    assert "authentication_error: invalid x-api-key" in caught.value.message
    assert wrong not in str(caught.value) and len(api.requests) == 1


def test_a_refused_body_is_a_bad_request_naming_the_field(api: FakeAnthropic) -> None:
    with pytest.raises(LLMError) as caught:
        anyio.run(lambda: client(api).chat("hi", extra={"logit_bias": {}}))
    assert caught.value.kind == "bad_request"
    assert "logit_bias: Extra inputs are not permitted" in caught.value.message


def test_temperature_zero_replies_come_from_the_cache(api: FakeAnthropic) -> None:
    cached = client(api, cache=MemoryCache())

    async def twice() -> tuple[bool, bool]:
        first = await cached.chat("same question")
        second = await cached.chat("same question")
        return first.cached, second.cached

    assert anyio.run(twice) == (False, True)
    assert len(api.requests) == 1
    assert cached.usage.summary()[SONNET]["cached"] == 1


def test_the_environment_names_anthropics_variables(
    api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    chat = LLMClient(protocol="anthropic", model=SONNET)
    assert chat.endpoint.base_url == api.url and chat.endpoint.key_source == "ANTHROPIC_API_KEY"
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    assert LLMClient(model=f"anthropic:{SONNET}").endpoint.base_url == (
        "https://api.anthropic.com/v1"
    )
    with pytest.raises(ConfigError, match="protocol 'gemini' is unknown"):
        LLMClient(protocol="gemini", model="x", base_url=api.url)
    with pytest.raises(ConfigError, match="names the anthropic protocol"):
        LLMClient(protocol="openai", model=f"anthropic:{SONNET}", base_url=api.url)


def test_log_likelihoods_are_refused_naming_why(api: FakeAnthropic) -> None:
    with pytest.raises(LLMError, match="anthropic protocol has no log-likelihoods"):
        anyio.run(lambda: client(api).loglikelihood([LoglikelihoodRequest("a", " b")]))
    assert api.requests == []


def test_embeddings_are_refused_naming_why(api: FakeAnthropic) -> None:
    with pytest.raises(LLMError, match="anthropic protocol has no embeddings"):
        anyio.run(lambda: client(api).embed(["a"]))
    assert api.requests == []


def test_every_translated_request_is_one_the_api_accepts() -> None:
    body = {
        "model": SONNET,
        "seed": 3,
        "temperature": 0.0,
        "messages": [
            {"role": "system", "content": "s1"},
            {"role": "user", "content": [{"type": "text", "text": "look"}]},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "1"},
            {"role": "tool", "tool_call_id": "c2", "content": "2"},
        ],
        "tools": [
            {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
        ],
        "tool_choice": "required",
    }
    sent = messages_request(body)
    assert invalid(sent) is None, sent
    assert sent["tool_choice"] == {"type": "any"} and "seed" not in sent
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert len(sent["messages"][2]["content"]) == 2  # both results in one user message
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "[1]"}}
    asked = {"role": "assistant", "content": "", "tool_calls": [call]}
    with pytest.raises(LLMError, match="arguments are not a JSON object"):
        messages_request({"model": "m", "messages": [{"role": "user", "content": "x"}, asked]})
    with pytest.raises(LLMError, match="cannot send a content part of type 'audio'"):
        messages_request(
            {"model": "m", "messages": [{"role": "user", "content": [{"type": "audio"}]}]}
        )


def verdicts(body: Mapping[str, Any]) -> str | AReply:
    """The model: a judge's forced tool gets a verdict, anything else an answer."""
    choice = body.get("tool_choice") or {}
    if choice.get("type") == "tool":
        prompt = json.dumps(body["messages"])
        verdict = {"score": 9 if "Paris" in prompt else 1, "reason": "checked"}
        return AReply.of(message(tool_uses=[("toolu_1", choice["name"], verdict)]))
    question = body["messages"][-1]["content"]
    return "Paris" if "France" in question else "Lyon"


def test_a_judge_gets_its_verdict_through_a_forced_tool(api: FakeAnthropic) -> None:
    api.respond = verdicts
    suite = Suite(
        Benchmark(
            "capitals",
            tasks=[Task("fr", input="Capital of France?"), Task("it", input="Capital of Italy?")],
            evaluators=[
                EvaluatorSpec(
                    "llm_rubric",
                    {
                        "model": "anthropic:claude-3-5-haiku-20241022",
                        "base_url": api.url,
                        "prompt": "Q: {input}\nA: {output}\nScore 0-10.",
                    },
                )
            ],
        ),
        conditions=[
            Condition("m", ChatProvider(protocol="anthropic", model=SONNET, base_url=api.url))
        ],
    )
    result = run_suite(suite, store=False)
    scores = {c.task_id: c.scores[0] for c in result.cells}
    assert scores["fr"].value == pytest.approx(0.9) and scores["it"].value == pytest.approx(0.1)
    judged = [b for b, _ in api.requests if b.get("tool_choice")]
    assert len(judged) == 2 and judged[0]["tools"][0]["input_schema"]["type"] == "object"
    assert "response_format" not in judged[0]
    usage = scores["fr"].details["usage"]
    assert usage["prompt_tokens"] == 10 and usage["cost_usd"] > 0


def test_an_agent_calls_tools_through_tool_use_blocks(api: FakeAnthropic) -> None:
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    def model(body: Mapping[str, Any]) -> AReply:
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and last[0].get("type") == "tool_result":
            return AReply.of(message(f"The sum is {last[0]['content']}"))
        return AReply.of(message("Let me add.", tool_uses=[("toolu_9", "add", {"a": 2, "b": 3})]))

    api.respond = model
    agent = AgentProvider(model=f"anthropic:{SONNET}", base_url=api.url, tools=[add], cache=False)
    suite = Suite(
        Benchmark(
            "sum",
            tasks=[Task("t", input="2+3?", expected="5")],
            evaluators=[EvaluatorSpec("contains")],
        ),
        conditions=[Condition("agent", agent)],
    )
    cell = run_suite(suite, store=False).cells[0]
    assert cell.status == "pass", cell.error
    assert cell.response is not None and cell.response.output == "The sum is 5"
    turns = Trajectory.of(cell.response).turns
    assert [t.finish_reason for t in turns] == ["tool_calls", "stop"]
    assert turns[0].tools[0].name == "add" and turns[0].tools[0].result == "5"
    second = api.requests[1][0]
    assert second["tools"][0]["input_schema"]["properties"].keys() == {"a", "b"}
    assert second["messages"][1]["content"][1]["type"] == "tool_use"


def test_the_cli_runs_a_native_benchmark_and_its_judge_and_the_key_is_nowhere(
    api: FakeAnthropic,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    api.respond = verdicts
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    bench = tmp_path / "capitals.yaml"
    bench.write_text(
        "benchkit: 1\nid: capitals\n"
        "evaluators:\n  - {type: llm_rubric, model: 'anthropic:claude-3-5-haiku',\n"
        "     prompt: 'Q: {input} A: {output} Score 0-10.'}\n"
        "conditions:\n"
        f"  - id: claude\n    provider: {{type: chat, protocol: anthropic, model: {SONNET}}}\n"
        "tasks:\n  - {id: fr, input: Capital of France?}\n  - {id: it, input: Capital of Italy?}\n",
        encoding="utf-8",
    )
    store = tmp_path / "s.db"
    argv = ["run", str(bench), "--store", str(store), "--no-progress", "--run-id", "r"]
    with caplog.at_level(logging.DEBUG):
        assert main([*argv, "-f", "json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["aggregates"][0]["pass_rate"] == pytest.approx(0.5)
    assert {h["x-api-key"] for _, h in api.requests} == {KEY}
    judged = [b["model"] for b, _ in api.requests if b.get("tool_choice")]
    assert judged == ["claude-3-5-haiku"] * 2
    with Store(store) as opened:
        result = opened.load("r")
        transcripts = [opened.transcript("r", *c.key) for c in result.cells]
    assert all(t is not None and t.events for t in transcripts)
    # The key is in none of what benchkit wrote or said: results, store, transcripts, logs.
    seen = [out, err, caplog.text, json.dumps([t.to_dict() for t in transcripts if t])]
    seen += [p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file()]
    assert not [text for text in seen if KEY in text]
    # --model and --judge name a model of the protocol the same way.
    opus, sonnet = "claude-opus-4-20250514", "claude-sonnet-4-20250514"
    argv = [*argv[:-2], "--run-id", "r2", "--model", f"anthropic:{opus}"]
    assert main([*argv, "--judge", f"anthropic:{sonnet}"]) == 0, capsys.readouterr().err
    models = [(b["model"], "tool_choice" in b) for b, _ in api.requests[-4:]]
    assert sorted(models) == [(opus, False), (opus, False), (sonnet, True), (sonnet, True)]


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """OpenAI-shaped conversations as benchkit builds them: system prompts, user turns,
    assistant turns (text, maybe empty, maybe with tool calls, each answered by a tool
    message), in any order the chat API accepts."""
    text = st.text(min_size=1, max_size=8)
    out: list[dict[str, Any]] = (
        [{"role": "system", "content": draw(text)}] if draw(st.booleans()) else []
    )
    out.append({"role": "user", "content": draw(text)})
    for turn in range(draw(st.integers(0, 4))):
        calls = draw(st.integers(0, 3))
        said = draw(st.sampled_from(["", "thinking"]))
        assistant: dict[str, Any] = {"role": "assistant", "content": said}
        if calls:
            assistant["tool_calls"] = [
                {
                    "id": f"c{turn}_{i}",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}"},
                }
                for i in range(calls)
            ]
        out.append(assistant)
        out.extend(
            {"role": "tool", "tool_call_id": f"c{turn}_{i}", "content": draw(st.text(max_size=5))}
            for i in range(calls)
        )
        if not calls or draw(st.booleans()):
            out.append({"role": "user", "content": draw(text)})
    return out


@given(conversations(), st.sampled_from([None, "auto", "required", "none"]))
def test_any_conversation_translates_to_a_request_the_api_accepts(
    messages: list[dict[str, Any]], choice: str | None
) -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    body = {"model": SONNET, "messages": messages, "tools": [tool], "tool_choice": choice}
    sent = messages_request(body)
    assert invalid(sent) is None, (sent, invalid(sent))
    calls = sum(len(m.get("tool_calls", ())) for m in messages)
    results = [
        b
        for m in sent["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert len(results) == calls


@pytest.mark.slow
def test_a_server_endpoint_speaks_the_protocol_when_the_model_names_it(
    api: FakeAnthropic, tmp_path: Path
) -> None:
    import httpx

    from ._serve import serve, wait_for, write_benchmark

    root = tmp_path / "root"
    write_benchmark(root / "quick", tasks=2)
    endpoint = f"claude={api.url},key-env=ANTHROPIC_API_KEY"
    with (
        serve(root, tmp_path / "s.db", "--endpoint", endpoint, env={"ANTHROPIC_API_KEY": KEY}) as (
            _,
            url,
        ),
        httpx.Client(base_url=url, timeout=60) as site,
    ):
        options = {"model": f"anthropic:{SONNET}", "endpoint": "claude"}
        body = {
            "benchmark": "quick/benchmark.yaml",
            "conditions": [{"id": "m", "provider": {"type": "chat", "options": options}}],
        }
        started = site.post("/api/runs", json=body)
        assert started.status_code == 202, started.text
        run = started.json()["run_id"]
        done = wait_for(site, f"/api/runs/{run}", lambda b: b["run"]["status"] != "running")
        assert done["run"]["status"] == "finished", done
        shown = site.get(f"/api/runs/{run}").text
    assert len(api.requests) == 2
    assert {(b["model"], h["x-api-key"]) for b, h in api.requests} == {(SONNET, KEY)}
    assert KEY not in shown
