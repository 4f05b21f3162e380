"""The MCP provider's bounds, against real MCP servers written with the SDK
(tests/mcp_servers/unruly_server.py) started as subprocesses: a server that crashes in the
middle of a run is restarted (a bounded number of times) for the cells after it, one that
never answers ``initialize`` is given up on, and a huge reply is refused at the cap."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import benchkit
from benchkit import Benchmark, Condition, RunOptions, Suite, Task
from benchkit.errors import ConfigError, InvocationError
from benchkit.model import ProviderSpec, Request
from benchkit.providers import McpProvider
from benchkit.results import CellResult

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).parent / "mcp_servers" / "unruly_server.py"
PY = sys.executable


def unruly(tool: str, *args: str, **options: Any) -> McpProvider:
    return McpProvider(command=[PY, str(SERVER), *args], tool=tool, **options)


def request_for(value: Any) -> Request:
    return Request(task=Task("t1", input=value), condition=Condition("c", ProviderSpec("mcp")))


def run_texts(provider: McpProvider, texts: list[str]) -> list[CellResult]:
    tasks = [Task(f"t{i}", input={"text": text}) for i, text in enumerate(texts)]
    suite = Suite(
        Benchmark("unruly", tasks=tasks),
        conditions=(Condition("c", provider),),
        options=RunOptions(concurrency=1),
    )
    return sorted(benchkit.run(suite).cells, key=lambda cell: cell.index)


def test_cells_after_each_crash_run_against_a_fresh_server() -> None:
    texts = ["a", "crash", "b", "crash", "c", "crash", "d"]
    cells = run_texts(unruly("answer", output="text", reconnect_backoff=0.01), texts)
    crashed = [cell for cell, text in zip(cells, texts, strict=True) if text == "crash"]
    answered = [cell for cell, text in zip(cells, texts, strict=True) if text != "crash"]
    for cell in crashed:
        assert (cell.status, cell.error_category) == ("error", "execution_error")
        assert cell.error is not None and "exited with code 3" in cell.error
    outputs = [cell.response.output for cell in answered if cell.response is not None]
    assert [out.split("@")[0] for out in outputs] == ["a", "b", "c", "d"]
    assert len({out.split("@")[1] for out in outputs}) == 4  # a new server after each crash


def test_restarts_are_bounded_per_condition() -> None:
    texts = ["crash", "crash", "a", "b"]
    cells = run_texts(unruly("answer", reconnects=1, reconnect_backoff=0.01), texts)
    assert [cell.status for cell in cells] == ["error"] * 4
    assert cells[2].error is not None and "not reconnecting" in cells[2].error
    assert "reconnects=1" in cells[3].error  # type: ignore[operator]


async def test_a_restart_waits_longer_after_each_failure_in_a_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider = unruly("answer", reconnect_backoff=0.05)
    waits: list[float] = []
    real_sleep = anyio.sleep

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await real_sleep(seconds)

    monkeypatch.setattr(anyio, "sleep", sleep)
    with anyio.fail_after(60):
        async with provider:
            for text in ("crash", "crash", "ok", "crash", "ok"):
                with contextlib.suppress(InvocationError):
                    await provider.invoke(request_for({"text": text}))
    # Two failures in a row: 0.05 then 0.1; an answer resets it: 0.05 again.
    assert [w for w in waits if w in (0.05, 0.1)] == [0.05, 0.1, 0.05]


async def test_a_server_that_never_answers_initialize_is_given_up_on() -> None:
    provider = unruly("pid", "mute", connect_timeout=0.5, reconnects=0, kill_grace=0.1)
    with anyio.fail_after(30):
        async with provider:
            with pytest.raises(
                InvocationError, match=r"no answer to initialize within 0\.5s"
            ) as first:
                await provider.invoke(request_for({}))
            with pytest.raises(InvocationError, match="not reconnecting") as second:
                await provider.invoke(request_for({}))
    assert first.value.category == "execution_error"
    assert not second.value.retryable


async def test_a_call_past_call_timeout_is_a_timeout_and_the_server_is_replaced() -> None:
    # No cell timeout here: before call_timeout, this call waited for an hour.
    provider = unruly("pid", output="text", call_timeout=0.5, reconnects=0, kill_grace=0.1)
    with anyio.fail_after(60):
        async with provider:
            before = await provider.invoke(request_for({}))
            provider.tool = "stall"
            with pytest.raises(InvocationError, match=r"within 0\.5s \(call_timeout\)") as info:
                await provider.invoke(request_for({}))
            provider.tool = "pid"
            after = await provider.invoke(request_for({}))
    assert info.value.category == "timeout"
    assert before.output != after.output  # a new server; reconnects=0 was not used up


@pytest.mark.parametrize("transport", ["auto", "sse"])
async def test_an_http_server_that_never_answers_is_given_up_on(transport: str) -> None:
    # Before the fix, SSE waited for the server's endpoint event with no deadline at all.
    process = subprocess.Popen(
        [PY, str(SERVER), "mute-http"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        provider = McpProvider(
            url=f"http://127.0.0.1:{port}/mcp",
            tool="pid",
            transport=transport,
            connect_timeout=0.5,
            reconnects=0,
        )
        with anyio.fail_after(30):
            async with provider:
                with pytest.raises(InvocationError, match="cannot connect") as info:
                    await provider.invoke(request_for({}))
    finally:
        process.kill()
        process.wait(10)
    assert "sse: no answer to initialize within 0.5s" in info.value.message


async def test_a_reply_over_the_cap_is_refused_and_the_server_replaced() -> None:
    provider = unruly("huge", output="text", max_response_bytes=200_000, reconnects=0)
    with anyio.fail_after(60):
        async with provider:
            small = await provider.invoke(request_for({"size": 1_000}))
            provider.tool = "pid"
            before = await provider.invoke(request_for({}))
            provider.tool = "huge"
            with pytest.raises(InvocationError, match="max_response_bytes=200000") as info:
                await provider.invoke(request_for({"size": 5_000_000}))
            provider.tool = "pid"
            after = await provider.invoke(request_for({}))
    assert small.output == "x" * 1_000
    assert info.value.category == "execution_error" and not info.value.retryable
    # A new server answers, though reconnects=0: the cap stopped it, not a failure of its own.
    assert before.output != after.output


@pytest.mark.parametrize("mode", ["http", "http-json"])
async def test_a_streamable_http_reply_over_the_cap_is_refused(mode: str) -> None:
    process = subprocess.Popen(
        [PY, str(SERVER), mode], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        provider = McpProvider(
            url=f"http://127.0.0.1:{port}/mcp",
            tool="huge",
            transport="streamable-http",
            output="text",
            max_response_bytes=200_000,
            reconnects=0,
        )
        with anyio.fail_after(60):
            async with provider:
                small = await provider.invoke(request_for({"size": 1_000}))
                with pytest.raises(InvocationError, match="max_response_bytes=200000") as info:
                    await provider.invoke(request_for({"size": 3_000_000}))
                again = await provider.invoke(request_for({"size": 10}))  # the session stays
    finally:
        process.kill()
        process.wait(10)
    assert small.output == "x" * 1_000 and again.output == "x" * 10
    assert info.value.category == "execution_error" and not info.value.retryable


def test_bounds_options_are_checked() -> None:
    for options, message in (
        ({"max_response_bytes": 0}, "max_response_bytes"),
        ({"reconnect_backoff": -1}, "reconnect_backoff"),
        ({"reconnect_backoff": float("nan")}, "reconnect_backoff"),
        ({"call_timeout": 0}, "call_timeout"),
        ({"call_timeout": float("inf")}, "call_timeout"),
    ):
        with pytest.raises(ConfigError, match=message):
            unruly("pid", **options)
