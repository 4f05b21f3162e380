"""The Supermemory and Mem0 memory providers, against local servers that implement the
services' documented REST contract (tests/_memory_services.py): the calls MemoryBench's own
adapters make, with the keys from the variables those adapters read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchkit.errors import ConfigError, InvocationError
from benchkit.memory import Mem0Provider, SupermemoryProvider, build_memory_provider
from benchkit.protocols import MemoryScope

from ._memory_services import MEM0_KEY, SUPERMEMORY_KEY, Services
from ._serve import running

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.anyio


@pytest.fixture
def services() -> Iterator[tuple[Services, str]]:
    state = Services()
    with running(state.app()) as url:
        yield state, url


def _scope(session: str) -> MemoryScope:
    return MemoryScope(user_id="user_r1", run_id="r1", session_id=session)


@pytest.mark.parametrize("kind", ["supermemory", "mem0"])
async def test_a_store_adds_retrieves_updates_and_deletes_in_its_own_scope(
    services: tuple[Services, str], kind: str
) -> None:
    state, url = services
    store: SupermemoryProvider | Mem0Provider = (
        SupermemoryProvider(f"{url}/v3", api_key=SUPERMEMORY_KEY, convergence_wait_ms=0)
        if kind == "supermemory"
        else Mem0Provider(url, api_key=MEM0_KEY, convergence_wait_ms=0)
    )
    try:
        first = await store.add(_scope("a"), "The office opens at nine.", {"source": "hb"})
        await store.add(_scope("a"), "Lunch is served at noon.")
        await store.add(_scope("b"), "The office opens at ten in scope b.")
        found = await store.retrieve(_scope("a"), "when does the office open", limit=5)
        assert found[0].id == first
        assert found[0].content == "The office opens at nine."
        assert all("scope b" not in item.content for item in found)  # scopes never mix
        assert await store.update(_scope("a"), first, "The office opens at eight.")
        again = await store.retrieve(_scope("a"), "office opens", limit=1)
        assert [item.content for item in again] == ["The office opens at eight."]
        assert await store.delete(_scope("a"), first) is True
        assert await store.delete(_scope("a"), first) is False  # already gone: a 404
        left = await store.retrieve(_scope("a"), "office opens", limit=5)
        assert first not in [item.id for item in left]
    finally:
        await store.aclose()
    service = state.requests[0][0]
    assert {r[0] for r in state.requests} == {service}


async def test_supermemory_sends_the_originals_requests(services: tuple[Services, str]) -> None:
    state, url = services
    store = SupermemoryProvider(f"{url}/v3", api_key=SUPERMEMORY_KEY, convergence_wait_ms=0)
    try:
        await store.add(_scope("a"), "fact", {"k": 1})
        await store.retrieve(_scope("a"), "fact", limit=500)
    finally:
        await store.aclose()
    (_, _, path, added), (_, _, searched_path, searched) = state.requests
    assert path == "/v3/documents"
    assert set(added) == {"content", "containerTag", "customId", "metadata"}
    assert added["metadata"] == {"k": 1, "scope_user_id": "user_r1", "scope_run_id": "r1"}
    assert searched_path == "/v3/search"
    assert searched["containerTags"] == [added["containerTag"]]
    assert searched["limit"] == 100  # the original caps a search at 100
    assert searched["onlyMatchingChunks"] is False


async def test_a_wrong_key_is_a_final_error_that_never_shows_the_key(
    services: tuple[Services, str],
) -> None:
    _, url = services
    store = Mem0Provider(url, api_key="wrong-secret-key", convergence_wait_ms=0)
    try:
        with pytest.raises(InvocationError) as caught:
            await store.add(_scope("a"), "fact")
    finally:
        await store.aclose()
    assert caught.value.retryable is False
    assert "HTTP 401" in caught.value.message
    assert "wrong-secret-key" not in caught.value.message
    assert "wrong-secret-key" not in repr(store)


def test_a_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUPERMEMORY_API_KEY", raising=False)
    monkeypatch.delenv("MEM0_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"\$SUPERMEMORY_API_KEY is not set"):
        build_memory_provider("supermemory")
    with pytest.raises(ConfigError, match=r"\$MEM0_API_KEY is not set"):
        build_memory_provider("mem0")
    monkeypatch.setenv("MEM0_API_KEY", "k")
    monkeypatch.setenv("MEM0_CONVERGENCE_WAIT_MS", "soon")
    with pytest.raises(ConfigError, match="MEM0_CONVERGENCE_WAIT_MS"):
        build_memory_provider("mem0")


def test_memory_eval_runs_both_services_end_to_end(
    services: tuple[Services, str], tmp_path: Path
) -> None:
    """`memory eval -p supermemory mem0`, the keys and URLs from the environment."""
    state, url = services
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO / "src"),
        SUPERMEMORY_API_KEY=SUPERMEMORY_KEY,
        SUPERMEMORY_API_URL=f"{url}/v3",
        SUPERMEMORY_CONVERGENCE_WAIT_MS="0",
        MEM0_API_KEY=MEM0_KEY,
        MEM0_API_URL=url,
        MEM0_CONVERGENCE_WAIT_MS="0",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchkit",
            "memory",
            "eval",
            "-p",
            "supermemory",
            "mem0",
            "-b",
            "rag-handbook",
            "--benchmarks-dir",
            str(REPO / "benchmarks" / "memorybench"),
            "-o",
            str(tmp_path / "out"),
            "--no-store",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert SUPERMEMORY_KEY not in done.stdout + done.stderr
    lines = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert {r["provider_name"] for r in records} == {"supermemory", "mem0"}
    assert all(r["status"] in ("pass", "fail") for r in records), records
    assert all(r["artifacts"]["retrievedCount"] > 0 for r in records)
    assert sum(r["status"] == "pass" for r in records) >= len(records) // 2
    # Each case in a scope of its own: as many container tags as Supermemory cases.
    tags = {b["containerTag"] for s, m, p, b in state.requests if p == "/v3/documents"}
    assert len(tags) == sum(r["provider_name"] == "supermemory" for r in records)
    assert not state.docs  # every ingested record was deleted after its case
