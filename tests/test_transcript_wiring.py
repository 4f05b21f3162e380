"""What each part records into a cell's transcript (benchkit.transcript), against real
parts: the LLM client on a real OpenAI-compatible server, the HTTP provider on a real
server, a real JSON-RPC subprocess, the memory pipeline over the SQLite baseline, the
skillvault command verifier running a real shell command."""

from __future__ import annotations

import json
import shlex
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from benchkit import Condition, ProviderSpec, Request, Response, SetupStep, Task, transcript
from benchkit.formats.skillvault.verifiers._command import CommandVerifier
from benchkit.llm import LLMClient, RateLimiter, RateLimits
from benchkit.memory import LocalBaseline, MemoryPipeline
from benchkit.protocols import VerifyContext
from benchkit.providers import HttpProvider, SubprocessProvider

from ._llm_server import FakeOpenAI, Reply

pytestmark = pytest.mark.anyio

SECRET = "sk-test-SECRET-0123456789"
SKILLS = Path(__file__).parent / "fixtures" / "skills"


def _kinds(recorder: transcript.Recorder) -> list[str]:
    found = recorder.transcript()
    return [] if found is None else [e.kind for e in found.events]


def _client(server: FakeOpenAI, **options: Any) -> LLMClient:
    return LLMClient(
        base_url=server.url,
        api_key=SECRET,
        model="fake-model",
        cache=None,
        backoff_base=0.01,
        **options,
    )


async def test_the_llm_client_records_request_retry_rate_limit_and_reply(
    llm_server: FakeOpenAI,
) -> None:
    llm_server.queue(
        Reply.error(500), Reply.error(429, headers={"Retry-After": "0.05"}), Reply.text("42")
    )
    client = _client(llm_server)
    try:
        with transcript.recording() as recorder:
            result = await client.chat("What is six times seven?")
    finally:
        await client.aclose()
    assert result.text == "42"
    found = recorder.transcript()
    assert found is not None
    assert [e.kind for e in found.events] == ["request", "retry", "rate_limit", "response"]
    request, retry, wait, reply = found.events
    assert request.data["messages"][0]["content"] == "What is six times seven?"
    assert retry.data["status"] == 500 and wait.data["retry_after"] == "0.05"
    assert wait.duration is not None and wait.duration >= 0.05
    assert reply.data["text"] == "42" and reply.data["usage"] == {"prompt": 10, "completion": 5}
    assert SECRET not in json.dumps(found.to_dict())


async def test_judge_calls_are_judge_prompts_and_replies(llm_server: FakeOpenAI) -> None:
    llm_server.respond = lambda body: "8"
    client = _client(llm_server)
    try:
        with transcript.recording() as recorder:
            with transcript.judging("llm_judge"):
                await client.chat("Rate this answer")
            await client.chat("not a judge")
    finally:
        await client.aclose()
    found = recorder.transcript()
    assert found is not None
    assert [(e.kind, e.title.split(":")[0]) for e in found.events[:2]] == [
        ("judge_prompt", "llm_judge"),
        ("judge_reply", "llm_judge"),
    ]
    assert found.events[1].data["text"] == "8"
    assert [e.kind for e in found.events[2:]] == ["request", "response"]


async def test_the_client_s_own_rate_limiter_waits_are_recorded(llm_server: FakeOpenAI) -> None:
    limiter = RateLimiter(RateLimits(requests_per_minute=600, max_concurrency=None))
    client = _client(llm_server, limits=limiter)
    try:
        with transcript.recording() as recorder:
            for i in range(4):
                await client.chat(f"q{i}")
    finally:
        await client.aclose()
    assert "rate_limit" in _kinds(recorder)


class _Echo(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        reply = json.dumps({"answer": json.loads(body)["input"].upper()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def echo_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/solve?key={SECRET}"
    server.shutdown()
    server.server_close()
    thread.join(5)


def _request(value: Any, provider: str = "http", **task: Any) -> Request:
    return Request(Task("t1", input=value, **task), Condition("c", ProviderSpec(provider)))


async def test_the_http_provider_records_its_request_and_response(echo_url: str) -> None:
    provider = HttpProvider(echo_url, output_field="answer")
    try:
        with transcript.recording() as recorder:
            response = await provider.invoke(_request("hello"))
    finally:
        await provider.aclose()
    assert response.output == "HELLO"
    found = recorder.transcript()
    assert found is not None
    request, reply = found.events
    assert (request.kind, reply.kind) == ("request", "response")
    assert request.data["input"] == "hello" and SECRET not in request.title
    assert reply.title == "HTTP 200 OK" and json.loads(reply.data) == {"answer": "HELLO"}


async def test_the_subprocess_provider_records_its_call_and_reply() -> None:
    provider = SubprocessProvider(command=[sys.executable, str(SKILLS / "echo.py")])
    with transcript.recording() as recorder:
        response = await provider.invoke(_request({"text": "hi"}, "subprocess"))
    found = recorder.transcript()
    assert found is not None
    assert [e.kind for e in found.events] == ["request", "response"]
    assert found.events[0].data == {"text": "hi"}
    assert found.events[1].data["result"] == response.output


async def test_the_memory_pipeline_records_adds_retrievals_and_deletes(tmp_path: Path) -> None:
    pipeline = MemoryPipeline(LocalBaseline(tmp_path / "m.db"))
    task_setup = (
        SetupStep("add", content="apples are red", target="a"),
        SetupStep("add", content="pears are green", target="p"),
        SetupStep("delete", target="p"),
    )
    request = Request(
        Task("t1", input="apples", setup=task_setup), Condition("m", ProviderSpec("memory"))
    )
    try:
        with transcript.recording() as recorder:
            response = await pipeline.invoke(request)
    finally:
        await pipeline.aclose()
    found = recorder.transcript()
    assert found is not None
    assert [e.kind for e in found.events] == [
        "memory_add",
        "memory_add",
        "memory_delete",
        "memory_retrieve",
    ]
    assert found.events[0].data["content"] == "apples are red"
    assert found.events[2].data == {"target": "p", "deleted": True}
    retrieved = found.events[3].data
    assert retrieved["query"] == "apples"
    assert [i["content"] for i in retrieved["items"]] == [i.content for i in response.retrieved]


async def test_the_command_verifier_records_its_command_and_output(tmp_path: Path) -> None:
    command = f"{shlex.quote(sys.executable)} -c \"print('checked'); import sys; sys.exit(3)\""
    verifier = CommandVerifier(command=command, timeout_ms=20_000)
    context = VerifyContext(
        condition=Condition("c", ProviderSpec("bundle")),
        attempt=1,
        seed=1,
        deterministic=True,
        base_dir=tmp_path,
    )
    with transcript.recording() as recorder:
        verdict = await verifier.verify(Task("t1"), Response(), context)
    assert not verdict.passed
    found = recorder.transcript()
    assert found is not None
    (event,) = found.events
    assert event.kind == "verifier" and event.data["exit_code"] == 3
    assert event.data["stdout"].strip() == "checked" and event.data["command"] == command


async def test_the_mcp_provider_records_each_tool_call_and_result() -> None:
    pytest.importorskip("mcp")
    from benchkit.providers import McpProvider

    server = Path(__file__).parent / "mcp_servers" / "tools_server.py"
    provider = McpProvider(command=[sys.executable, str(server)], tool="add")
    with transcript.recording() as recorder:
        response = await provider.invoke(_request({"a": 2, "b": 3}, "mcp"))
    assert response.output == {"sum": 5}
    found = recorder.transcript()
    assert found is not None
    call, result = found.events
    assert (call.kind, call.title, call.data) == ("tool_call", "MCP add", {"a": 2, "b": 3})
    assert result.kind == "tool_result" and result.data["structuredContent"] == {"sum": 5}
    assert result.duration is not None and result.duration > 0
