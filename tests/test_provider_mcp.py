"""Tests for McpProvider against real MCP servers written with the SDK (tests/mcp_servers).

stdio servers are subprocesses started by the provider; HTTP servers (streamable HTTP and
SSE) are subprocesses started by the test on 127.0.0.1 at an ephemeral port.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import benchkit
from benchkit import Benchmark, Condition, EvaluatorSpec, RunOptions, Suite, Task
from benchkit.errors import ConfigError, InvocationError, ProviderError
from benchkit.formats.eval_skills.skills import mcp_command
from benchkit.model import ProviderSpec, Request, ToolCall
from benchkit.providers import McpProvider
from benchkit.providers._mcp import _parse_json
from benchkit.registry import default_registries
from benchkit.results import CellResult, RunResult

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).parent / "mcp_servers" / "tools_server.py"
PY = sys.executable


def stdio(tool: str, **options: Any) -> McpProvider:
    return McpProvider(command=[PY, str(SERVER)], tool=tool, **options)


def run(provider: Any, *tasks: Task, concurrency: int = 1) -> RunResult:
    suite = Suite(
        Benchmark("mcp", tasks=tasks),
        conditions=(Condition("c", provider),),
        options=RunOptions(concurrency=concurrency),
    )
    return benchkit.run(suite)


def by_id(result: RunResult) -> dict[str, CellResult]:
    return {cell.task_id: cell for cell in result.cells}


def request_for(value: Any) -> Request:
    return Request(task=Task("t1", input=value), condition=Condition("c", ProviderSpec("mcp")))


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie awaiting an uninterested reaper counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


async def wait_dead(*pids: int) -> list[int]:
    """The pids still alive after up to 5 s of polling."""
    with anyio.move_on_after(5):
        while any(alive(pid) for pid in pids):
            await anyio.sleep(0.02)
    return [pid for pid in pids if alive(pid)]


class HttpServer:
    """tools_server.py serving ``kind`` ("http" or "sse") on 127.0.0.1:<ephemeral>."""

    def __init__(self, kind: str) -> None:
        self.process = subprocess.Popen(
            [PY, str(SERVER), kind], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    server = HttpServer("http")
    yield server
    server.stop()


@pytest.fixture
def sse_server() -> Iterator[HttpServer]:
    server = HttpServer("sse")
    yield server
    server.stop()


# -- stdio -------------------------------------------------------------------------------


def test_stdio_tool_success_returns_structured_content_and_the_tool_call() -> None:
    result = run(stdio("add"), Task("t1", input={"a": 2, "b": 3}, expected={"sum": 5}))
    cell = result.cells[0]
    assert cell.status == "pass"
    assert cell.response is not None
    assert cell.response.output == {"sum": 5}
    assert cell.response.tool_calls == (ToolCall("add", {"a": 2, "b": 3}),)
    assert cell.response.metadata["transport"] == "stdio"
    assert cell.response.metadata["structured_content"] == {"sum": 5}
    assert cell.response.metadata["content_types"] == ["text"]


def test_one_session_serves_every_cell_of_a_condition() -> None:
    tasks = [Task(f"t{i}", input={}) for i in range(4)]
    result = run(stdio("pid", output="json"), *tasks, concurrency=2)
    pids = {cell.response.output for cell in result.cells if cell.response is not None}
    assert len(result.cells) == 4
    assert len(pids) == 1
    (pid,) = pids
    assert isinstance(pid, int)
    assert pid != os.getpid()


def test_calls_in_flight_are_bounded_by_max_in_flight() -> None:
    tasks = [Task(f"t{i}", input={}) for i in range(6)]
    bounded = run(stdio("overlap", output="json", max_in_flight=2), *tasks, concurrency=6)
    wide = run(stdio("overlap", output="json", max_in_flight=6), *tasks, concurrency=6)
    assert max(c.response.output for c in bounded.cells if c.response) == 2
    assert max(c.response.output for c in wide.cells if c.response) > 2


async def test_not_entered_each_call_has_a_session_of_its_own() -> None:
    provider = stdio("pid", output="json")
    with anyio.fail_after(30):
        first = await provider.invoke(request_for({}))
        second = await provider.invoke(request_for({}))
    assert isinstance(first.output, int)
    assert first.output != second.output
    assert await wait_dead(first.output, second.output) == []


def test_argument_mapping_reads_task_fields() -> None:
    provider = stdio("echo", arguments={"text": "input.message"}, output="text")
    tasks = [Task("t1", input={"message": "hello", "other": 1}), Task("t2", input={"x": 1})]
    cells = by_id(run(provider, *tasks))
    assert cells["t1"].response is not None
    assert cells["t1"].response.output == "hello"
    assert cells["t1"].response.tool_calls[0].arguments == {"text": "hello"}
    assert cells["t2"].status == "error"
    assert "input.message" in (cells["t2"].error or "")


def test_a_non_object_input_without_mapping_is_a_clear_cell_error() -> None:
    cell = run(stdio("echo"), Task("t1", input="plain")).cells[0]
    assert cell.status == "error"
    assert "arguments" in (cell.error or "")


def test_tool_error_is_categorised_and_not_retried() -> None:
    suite = Suite(
        Benchmark("mcp", tasks=(Task("t1", input={"message": "no"}),)),
        conditions=(Condition("c", stdio("fail")),),
        options=RunOptions(retries=2, retry_on=frozenset({"any"})),
    )
    cell = benchkit.run(suite).cells[0]
    assert cell.status == "error"
    assert cell.error_category == "tool_error"
    assert "refused: no" in (cell.error or "")
    assert cell.attempts == 1


def test_protocol_error_is_categorised() -> None:
    tasks = [Task("t1", input={}), Task("generic", input={"code": -32000})]
    cells = by_id(run(stdio("protocol_error"), *tasks))
    assert cells["t1"].status == "error"
    assert cells["t1"].error_category == "protocol_error"
    assert "-32602" in (cells["t1"].error or "")
    assert "no such thing" in (cells["t1"].error or "")
    # -32000 is also the SDK's "Connection closed"; a server's own -32000 is still an answer
    assert cells["generic"].error_category == "protocol_error"
    assert "-32000: no such thing" in (cells["generic"].error or "")


def test_non_text_content_is_kept() -> None:
    auto = run(stdio("picture"), Task("t1", input={})).cells[0].response
    blocks = run(stdio("picture", output="content"), Task("t1", input={})).cells[0].response
    assert auto is not None
    assert blocks is not None
    assert auto.output == "a single pixel"
    assert auto.metadata["content_types"] == ["text", "image"]
    assert [b["type"] for b in blocks.output] == ["text", "image"]
    image = blocks.output[1]
    assert image["mimeType"] == "image/png"
    assert image["data"].startswith("iVBOR")


def test_tool_calls_are_scored_by_tool_correctness() -> None:
    expected = (ToolCall("echo", {"text": "hi"}),)
    suite = Suite(
        Benchmark(
            "mcp",
            tasks=(
                Task("right", input={"text": "hi"}, expected_tool_calls=expected),
                Task("wrong", input={"text": "bye"}, expected_tool_calls=expected),
            ),
            evaluators=(EvaluatorSpec("codeforge_tool_correctness"),),
        ),
        conditions=(Condition("c", stdio("echo")),),
    )
    cells = by_id(benchkit.run(suite))
    assert cells["right"].status == "pass"
    assert cells["wrong"].status == "fail"


async def test_hanging_server_times_out_and_its_process_group_is_killed() -> None:
    provider = stdio("pid", arguments={}, output="json")
    tasks = (
        Task("pid", input={}),
        Task("child", input={}),
        Task("hang", input={}, timeout=1.0),
        Task("after", input={}),
    )
    outputs: dict[str, Any] = {}

    async def call(task: Task, tool: str) -> Any:
        provider.tool = tool
        response = await provider.invoke(Request(task, Condition("c", provider)))
        outputs[task.id] = response.output
        return response.output

    async with provider:
        with anyio.fail_after(30):
            server = await call(tasks[0], "pid")
            child = await call(tasks[1], "spawn_child")
            with pytest.raises(TimeoutError), anyio.fail_after(1.0):
                await call(tasks[2], "hang")
            assert await wait_dead(server, child) == []
            restarted = await call(tasks[3], "pid")
    assert restarted != server
    assert await wait_dead(restarted) == []


def test_hanging_server_in_a_run_is_a_timeout_and_later_cells_still_run() -> None:
    # One condition per tool would need several servers; a task field picks the tool here.
    class ByTask(McpProvider):
        async def invoke(self, request: Request) -> Any:
            self.tool = str(request.task.metadata["tool"])
            return await super().invoke(request)

    provider = ByTask(command=[PY, str(SERVER)], tool="pid", output="json")
    tasks = [
        Task("pid", input={}, metadata={"tool": "pid"}),
        Task("hang", input={}, metadata={"tool": "hang"}, timeout=1.0),
        Task("after", input={}, metadata={"tool": "pid"}),
    ]
    cells = by_id(run(provider, *tasks))
    assert cells["hang"].status == "timeout"
    assert cells["pid"].response is not None
    assert cells["after"].response is not None
    first, second = cells["pid"].response.output, cells["after"].response.output
    assert first != second
    assert not alive(first)


async def test_server_that_exits_reconnects_once_then_errors_are_categorised() -> None:
    provider = stdio("pid", output="json", reconnects=1, reconnect_backoff=0.01)
    outcomes: list[Any] = []
    with anyio.fail_after(60):
        async with provider:
            for tool in ("pid", "crash", "pid", "crash", "pid"):
                provider.tool = tool
                try:
                    outcomes.append((await provider.invoke(request_for({}))).output)
                except InvocationError as exc:
                    outcomes.append(exc)
    first, crash1, second, crash2, gave_up = outcomes
    assert isinstance(first, int)
    assert isinstance(second, int)
    assert first != second
    assert isinstance(crash1, InvocationError)
    assert crash1.category == "execution_error"
    assert crash1.retryable
    assert "exited with code 3" in crash1.message
    assert isinstance(crash2, InvocationError)
    assert isinstance(gave_up, InvocationError)
    assert gave_up.category == "execution_error"
    assert not gave_up.retryable
    assert "not reconnecting" in gave_up.message


async def test_a_server_that_cannot_start_fails_clearly() -> None:
    provider = McpProvider(
        command=[PY, "-c", "import sys; sys.exit('no server here')"],
        tool="x",
        reconnects=1,
        reconnect_backoff=0.01,
    )
    with anyio.fail_after(30):
        async with provider:
            with pytest.raises(InvocationError) as first:
                await provider.invoke(request_for({}))
            with pytest.raises(InvocationError):
                await provider.invoke(request_for({}))
            with pytest.raises(InvocationError) as third:
                await provider.invoke(request_for({}))
    assert "cannot connect" in first.value.message
    assert "no server here" in first.value.message
    assert "not reconnecting" in third.value.message


async def test_the_server_gets_a_scrubbed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHKIT_TEST_SECRET", "s3cret")
    provider = stdio("environment", output="text", env={"EXTRA": "1"})
    with anyio.fail_after(30):
        response = await provider.invoke(request_for({}))
    names = response.output.split(",")
    assert "BENCHKIT_TEST_SECRET" not in names
    assert "BENCHKIT_SANDBOX" in names
    assert "EXTRA" in names


# -- HTTP --------------------------------------------------------------------------------


def test_streamable_http_success_and_tool_error(http_server: HttpServer) -> None:
    url = f"{http_server.base}/mcp"
    ok = run(McpProvider(url=url, tool="add"), Task("t1", input={"a": 1, "b": 1})).cells[0]
    bad = run(McpProvider(url=url, tool="fail"), Task("t1", input={"message": "x"})).cells[0]
    assert ok.response is not None
    assert ok.response.output == {"sum": 2}
    assert ok.response.metadata["transport"] == "streamable-http"
    assert bad.error_category == "tool_error"


def test_sse_server_is_reached_by_falling_back_from_streamable_http(
    sse_server: HttpServer,
) -> None:
    provider = McpProvider(url=f"{sse_server.base}/sse", tool="echo", output="text")
    cell = run(provider, Task("t1", input={"text": "over sse"})).cells[0]
    assert cell.response is not None
    assert cell.response.output == "over sse"
    assert cell.response.metadata["transport"] == "sse"
    assert provider._transports[0] == "sse"  # a reconnect goes straight to what worked


async def test_http_server_that_goes_away_gives_categorised_errors(
    http_server: HttpServer,
) -> None:
    provider = McpProvider(
        url=f"{http_server.base}/mcp",
        tool="echo",
        output="text",
        connect_timeout=5,
        reconnects=1,
        reconnect_backoff=0.01,
    )
    errors: list[InvocationError] = []
    with anyio.fail_after(60):
        async with provider:
            first = await provider.invoke(request_for({"text": "a"}))
            http_server.stop()
            for _ in range(3):
                with pytest.raises(InvocationError) as info:
                    await provider.invoke(request_for({"text": "b"}))
                errors.append(info.value)
    assert first.output == "a"
    assert all(e.category == "execution_error" for e in errors), errors
    assert "not reconnecting" in errors[-1].message, errors


async def test_a_timed_out_http_call_closes_the_session_and_the_next_opens_one(
    http_server: HttpServer,
) -> None:
    provider = McpProvider(url=f"{http_server.base}/mcp", tool="slow", output="text")
    with anyio.fail_after(60):
        async with provider:
            with pytest.raises(TimeoutError), anyio.fail_after(0.5):
                await provider.invoke(request_for({"seconds": 30}))
            stopped = provider._conn
            assert stopped is not None
            assert stopped.stopped_because is not None
            answer = await provider.invoke(request_for({"seconds": 0}))
            assert provider._conn is not stopped
    assert answer.output == "slept"


# -- configuration -----------------------------------------------------------------------


def test_registered_as_mcp_and_built_from_options(tmp_path: Path) -> None:
    built = default_registries().providers.build(
        "mcp", {"command": [PY, str(SERVER)], "tool": "echo"}, base_dir=tmp_path
    )
    assert isinstance(built, McpProvider)
    assert built.cwd == tmp_path
    assert "echo" in repr(built)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"tool": "x"}, "exactly one of"),
        ({"tool": "x", "command": "a", "url": "http://h"}, "exactly one of"),
        ({"tool": "", "command": [PY]}, "tool"),
        ({"tool": "x", "url": "ftp://h"}, "http(s)"),
        ({"tool": "x", "command": [PY], "arguments": {"a": "nowhere.x"}}, "task path"),
        ({"tool": "x", "command": [PY], "output": "html"}, "output"),
        ({"tool": "x", "url": "http://h", "transport": "ws"}, "transport"),
        ({"tool": "x", "command": ["no-such-binary-here"]}, "not found"),
        ({"tool": "x", "command": [PY], "headers": {"A": "b"}}, "headers"),
    ],
)
def test_bad_options_are_config_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        McpProvider(**options)


def test_headers_never_show_in_the_repr() -> None:
    provider = McpProvider(
        url="http://user:pw@127.0.0.1:1/mcp?key=abc", tool="x", headers={"Authorization": "k"}
    )
    shown = repr(provider)
    assert "pw" not in shown
    assert "abc" not in shown
    assert "Authorization" not in shown


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(ProviderError, match=r"benchkit\[mcp\]"):
        McpProvider(command=[PY], tool="x")


def test_import_benchkit_does_not_import_mcp() -> None:
    code = (
        "import sys, benchkit, benchkit.providers, benchkit.registry; "
        "print(any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules))"
    )
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# -- parsers (property tests) ------------------------------------------------------------

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(_JSON)
def test_json_text_is_parsed_back_to_its_value(value: Any) -> None:
    assert _parse_json(json.dumps(value)) == value


@given(st.text())
def test_text_that_is_not_strict_json_stays_text(text: str) -> None:
    try:
        json.loads(text, parse_constant=lambda name: 1 / 0)
    except (ValueError, ZeroDivisionError):
        assert _parse_json(text) == text  # as JavaScript's JSON.parse rejects it
    else:
        assert _parse_json(text) == json.loads(text)


@given(
    st.lists(st.text(alphabet=st.characters(blacklist_characters="\x00"), min_size=1), min_size=1)
)
def test_a_stdio_entrypoint_splits_back_into_its_arguments(args: list[str]) -> None:
    if args[0] in ("python", "python3", f"python3.{sys.version_info.minor}"):
        args[0] = "x" + args[0]
    assume(re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", shlex.join(args)) is None)  # a URL
    assert mcp_command(shlex.join(args)) == tuple(args)


@settings(deadline=None)  # the first example imports the SDK
@given(
    st.dictionaries(st.text(min_size=1), st.integers(), max_size=4),
    st.text(min_size=1).filter(lambda key: "." not in key),
)
def test_argument_paths_read_what_they_name(data: dict[str, int], key: str) -> None:
    provider = stdio("echo", arguments={"value": f"input.{key}"})
    task = Task("t", input=data)
    if key in data:
        assert provider.arguments_for(task) == {"value": data[key]}
    else:
        with pytest.raises(InvocationError, match="is not in task"):
            provider.arguments_for(task)
