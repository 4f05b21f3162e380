"""One LLM client used from several event loops in turn (a notebook runs ``anyio.run``
again and again). Apart from tests/test_llm_client.py, whose clients are closed by an
async fixture inside the test's own event loop."""

from __future__ import annotations

import anyio

from benchkit.llm import LLMClient, RateLimits

from ._llm_server import FakeOpenAI


async def _ask_again(client: LLMClient) -> str | None:
    try:
        return (await client.chat("again?", cache=False)).text
    finally:
        await client.aclose()  # this loop's connections; the next loop opens its own


def test_one_client_serves_several_event_loops(llm_server: FakeOpenAI) -> None:
    client = LLMClient(
        base_url=llm_server.url,
        api_key="sk-test-0123456789",
        model="fake-model",
        cache=None,
        limits=RateLimits(max_concurrency=2),
    )
    assert anyio.run(_ask_again, client) == "again?"
    assert anyio.run(_ask_again, client, backend="trio") == "again?"
    assert anyio.run(_ask_again, client) == "again?"
