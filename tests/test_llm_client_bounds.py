"""The LLM client's bounds on one call, against a real misbehaving server on 127.0.0.1:
a whole-call deadline (a drip of bytes cannot stretch it) and a cap on the reply's size
(an endless body is cut off, never buffered whole)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from benchkit import ConfigError
from benchkit.llm import LLMClient, LLMError

from ._llm_server import FakeOpenAI, Reply

pytestmark = pytest.mark.anyio

_MADE: list[LLMClient] = []


def client_for(server: FakeOpenAI, **kwargs: object) -> LLMClient:
    options: dict[str, object] = {
        "base_url": server.url,
        "api_key": "sk-test",
        "model": "fake-model",
        "cache": None,
        "max_retries": 0,
    }
    options.update(kwargs)
    client = LLMClient(**options)  # type: ignore[arg-type]
    _MADE.append(client)
    return client


@pytest.fixture(autouse=True)
async def _close_clients(anyio_backend: object) -> AsyncIterator[None]:
    yield
    while _MADE:
        await _MADE.pop().aclose()


async def test_an_endless_reply_stops_at_the_size_cap(llm_server: FakeOpenAI) -> None:
    # Unbounded, the client would buffer the whole 64 MB ceiling and then fail to parse it.
    llm_server.queue(Reply.endless())
    client = client_for(llm_server, max_response_bytes=1_000_000, timeout=30)
    with pytest.raises(LLMError, match="max_response_bytes=1000000") as info:
        await client.chat("hi")
    assert info.value.kind == "response_too_large"
    assert info.value.category == "execution_error"
    assert llm_server.bytes_sent < 32_000_000  # it hung up long before the ceiling


async def test_a_reply_too_large_is_not_retried(llm_server: FakeOpenAI) -> None:
    llm_server.queue(Reply.endless(ceiling=2_000_000), Reply.text("fine"))
    client = client_for(llm_server, max_response_bytes=100_000, max_retries=3)
    with pytest.raises(LLMError) as info:
        await client.chat("hi")
    assert info.value.kind == "response_too_large" and info.value.attempts == 1
    assert len(llm_server.requests) == 1


async def test_a_declared_length_over_the_cap_is_refused_unread(llm_server: FakeOpenAI) -> None:
    llm_server.queue(Reply.text("x" * 5_000))
    client = client_for(llm_server, max_response_bytes=1_000)
    with pytest.raises(LLMError, match="Content-Length") as info:
        await client.chat("hi")
    assert info.value.kind == "response_too_large"


async def test_a_reply_under_the_cap_is_read_whole(llm_server: FakeOpenAI) -> None:
    llm_server.queue(Reply.text("y" * 5_000))
    result = await client_for(llm_server, max_response_bytes=10_000).chat("hi")
    assert result.text == "y" * 5_000


async def test_a_drip_feed_cannot_stretch_the_timeout(llm_server: FakeOpenAI) -> None:
    # ~250 bytes at one every 20 ms: 5 s in all, though no single read waits 0.5 s.
    llm_server.queue(Reply.drip("slow", every=0.02))
    client = client_for(llm_server, timeout=0.5)
    with pytest.raises(LLMError, match=r"timed out after 0\.5s") as info:
        await client.chat("hi")
    assert info.value.kind == "timeout" and info.value.category == "timeout"


async def test_a_drip_within_the_timeout_is_an_answer(llm_server: FakeOpenAI) -> None:
    llm_server.queue(Reply.drip("ok", every=0.001))
    result = await client_for(llm_server, timeout=30).chat("hi")
    assert result.text == "ok"


async def test_a_slow_error_body_is_bounded_too(llm_server: FakeOpenAI) -> None:
    llm_server.queue(Reply(status=500, chunks=Reply.endless().chunks))
    client = client_for(llm_server, max_response_bytes=200_000, timeout=30)
    with pytest.raises(LLMError) as info:
        await client.chat("hi")
    assert info.value.kind == "server_error" and info.value.status == 500
    assert len(info.value.message) < 1_000


def test_max_response_bytes_is_validated() -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="max_response_bytes"):
            LLMClient(base_url="http://127.0.0.1:9/v1", model="m", max_response_bytes=bad)  # type: ignore[arg-type]
