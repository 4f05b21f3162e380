"""LocalBaseline: BM25 as the original computes it, on real SQLite FTS5, scope by scope."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import benchkit
from benchkit import Benchmark, Condition, Suite, Task
from benchkit._js import math_log
from benchkit.errors import ConfigError
from benchkit.memory import LocalBaseline, MemoryPipeline, tokenize
from benchkit.model import Response, SetupStep
from benchkit.protocols import MemoryProvider, MemoryScope

pytestmark = pytest.mark.anyio

# --------------------------------------------------------------------------- reference
# A line-by-line port of MemoryBench's src/utils/bm25.ts and LocalBaseline.retrieve_memory.

_JS_WS = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def reference_tokenize(text: str) -> list[str]:
    text = re.sub(f"[^A-Za-z0-9_{_JS_WS}]", " ", text.lower())
    return [token for token in re.split(f"[{_JS_WS}]+", text) if len(token) > 1]


def reference_retrieve(documents: list[str], query: str, limit: int) -> list[tuple[int, float]]:
    k1, b = 1.5, 0.75
    all_tokens = [reference_tokenize(d) for d in documents]
    if not all_tokens:
        return []
    query_tokens = reference_tokenize(query)
    avg_dl = sum(len(t) for t in all_tokens) / len(all_tokens)

    def idf(term: str) -> float:
        n = len(all_tokens)
        df = sum(1 for tokens in all_tokens if term in tokens)
        return 0.0 if df == 0 else math_log((n - df + 0.5) / (df + 0.5) + 1)  # V8's Math.log

    scored = []
    for index, tokens in enumerate(all_tokens):
        score = 0.0
        for term in query_tokens:
            tf = tokens.count(term)
            if tf == 0:
                continue
            numerator = tf * (k1 + 1)
            denominator = tf + k1 * (1 - b + b * (len(tokens) / avg_dl))
            score += idf(term) * (numerator / denominator)
        scored.append((index, score))
    kept = [pair for pair in scored if pair[1] > 0]
    kept.sort(key=lambda pair: -pair[1])  # stable: ties keep insertion order
    return kept[:limit]


SCOPE = MemoryScope("user", "run", "case")


async def test_the_docstring_example_and_capabilities() -> None:
    store = LocalBaseline()
    assert isinstance(store, MemoryProvider)
    assert store.capabilities == {"add", "retrieve", "delete", "update", "list", "reset"}
    first = await store.add(SCOPE, "Paris is the capital of France.", {"k": [1, "x"]})
    await store.add(SCOPE, "Berlin is in Germany.")
    hits = await store.retrieve(SCOPE, "capital of France?")
    assert [(h.id, h.content, dict(h.metadata)) for h in hits] == [
        (first, "Paris is the capital of France.", {"k": [1, "x"]})
    ]
    assert hits[0].score is not None and hits[0].score > 0
    assert first == "mem_1"


def test_tokenizer_matches_the_original() -> None:
    text = "Café au lait — it's 9:30am, C3PO_x! \u00a0naïve İstanbul"
    assert tokenize(text) == reference_tokenize(text)
    assert tokenize("a I x2 __") == ["x2", "__"]


words = st.sampled_from(
    ["apple", "Apple", "banana", "cherry", "pie", "the", "a", "x9", "naïve", "tea-time", "b_c"]
)
documents = st.lists(st.lists(words, max_size=12).map(" ".join), min_size=1, max_size=8)


@given(documents, st.lists(words, min_size=1, max_size=5).map(" ".join), st.integers(1, 10))
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_ranking_and_scores_equal_the_reference(docs: list[str], query: str, limit: int) -> None:
    async def check() -> None:
        store = LocalBaseline()
        other = MemoryScope("user", "run", "another case")
        await store.add(other, "apple apple banana cherry pie")  # must not change the stats
        ids = [await store.add(SCOPE, doc) for doc in docs]
        hits = await store.retrieve(SCOPE, query, limit)
        expected = reference_retrieve(docs, query, limit)
        assert [(h.id, h.score) for h in hits] == [(ids[i], score) for i, score in expected]

    anyio.run(check)


async def test_a_score_equals_nodes_bit_for_bit() -> None:
    # MemoryBench's BM25 for these three documents and "apple", printed by `node -e` when
    # this test was written; Python's math.log in the idf gives ...924 instead.
    store = LocalBaseline()
    for doc in ["", "", "apple apple"]:
        await store.add(SCOPE, doc)
    (hit,) = await store.retrieve(SCOPE, "apple", 1)
    assert hit.score == 0.8528950026188925


async def test_delete_update_reset_and_list_stay_in_their_scope() -> None:
    store = LocalBaseline()
    other = MemoryScope("user", "run", "other")
    mine = await store.add(SCOPE, "red apple")
    theirs = await store.add(other, "red apple")
    assert mine == theirs == "mem_1"  # numbered per scope
    assert not await store.delete(MemoryScope("user", "run", "nobody"), mine)
    assert await store.update(SCOPE, mine, "green pear", {"v": 2})
    assert not await store.update(SCOPE, "mem_9", "x")
    assert [(i.content, dict(i.metadata)) for i in await store.list(SCOPE)] == [
        ("green pear", {"v": 2})
    ]
    assert [i.content for i in await store.retrieve(other, "apple")] == ["red apple"]
    assert await store.retrieve(SCOPE, "apple") == []
    assert await store.delete(SCOPE, mine)
    assert not await store.delete(SCOPE, mine)
    await store.add(SCOPE, "a b c")
    await store.reset(SCOPE)
    assert await store.list(SCOPE) == []
    assert [i.content for i in await store.list(other)] == ["red apple"]
    assert await store.add(SCOPE, "again") == "mem_1"


async def test_update_keeps_insertion_order_for_ties(tmp_path: Path) -> None:
    store = LocalBaseline(tmp_path / "mem.db")
    first = await store.add(SCOPE, "tea")
    await store.add(SCOPE, "tea")
    await store.update(SCOPE, first, "tea")
    hits = await store.retrieve(SCOPE, "tea")
    assert [h.id for h in hits] == ["mem_1", "mem_2"]
    assert hits[0].score == hits[1].score
    await store.aclose()
    reopened = LocalBaseline(tmp_path / "mem.db")
    assert len(await reopened.list(SCOPE)) == 2
    reopened.close()
    with pytest.raises(RuntimeError, match="closed"):
        await reopened.list(SCOPE)


async def test_nothing_to_match_returns_nothing() -> None:
    store = LocalBaseline()
    assert await store.retrieve(SCOPE, "anything") == []
    await store.add(SCOPE, "!!")  # no tokens at all: average length 0
    assert await store.retrieve(SCOPE, "x y") == []
    await store.add(SCOPE, "alpha")
    assert await store.retrieve(SCOPE, "beta") == []
    assert await store.retrieve(SCOPE, "alpha", limit=0) == []
    assert [h.content for h in await store.retrieve(SCOPE, "AND or NOT alpha")] == ["alpha"]


def test_bad_constants_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="b must be within"):
        LocalBaseline(b=2)
    with pytest.raises(ConfigError, match="k1 must be"):
        LocalBaseline(k1=-1)


class _Slow:
    """Sleeps between LocalBaseline calls so that concurrent cells interleave."""

    def __init__(self, inner: LocalBaseline) -> None:
        self.inner = inner
        self.capabilities = inner.capabilities

    async def add(self, scope: MemoryScope, content: str, metadata: object = None) -> str:
        found = await self.inner.add(scope, content)
        await anyio.sleep(0.005)
        return found

    async def retrieve(self, scope: MemoryScope, query: str, limit: int = 10) -> object:
        await anyio.sleep(0.005)
        return await self.inner.retrieve(scope, query, limit)

    async def delete(self, scope: MemoryScope, record_id: str) -> bool:
        return await self.inner.delete(scope, record_id)

    async def update(self, *args: object) -> bool:
        return await self.inner.update(*args)  # type: ignore[arg-type]

    async def reset(self, scope: MemoryScope) -> None:
        await self.inner.reset(scope)

    async def list(self, scope: MemoryScope, limit: int = 100, offset: int = 0) -> object:
        return await self.inner.list(scope, limit, offset)


async def test_concurrent_cases_never_see_each_others_memories(tmp_path: Path) -> None:
    database = tmp_path / "shared.db"
    store = LocalBaseline(database)
    tasks = [
        Task(
            f"case{i}",
            input="what is the secret code",
            setup=(
                SetupStep("add", content=f"the secret code is {1000 + i}"),
                SetupStep("add", content=f"filler about the secret garden {i}"),
            ),
        )
        for i in range(24)
    ]
    suite = Suite(
        Benchmark("isolation", tasks=tasks),
        conditions=[
            Condition("a", MemoryPipeline(_Slow(store))),
            Condition("b", MemoryPipeline(_Slow(store))),
        ],
    ).with_options(concurrency=16)
    seen_together = 0

    def check(cell: benchkit.CellResult) -> None:
        nonlocal seen_together
        assert cell.response is not None, cell.error
        codes = {h.content for h in cell.response.retrieved if "code is" in h.content}
        number = int(cell.task_id.removeprefix("case"))
        assert codes == {f"the secret code is {1000 + number}"}
        assert len(cell.response.retrieved) == 2
        seen_together += 1

    result = await benchkit.arun(suite)
    for cell in result.cells:
        check(cell)
    assert seen_together == 48
    with sqlite3.connect(database) as db:  # every scope was cleaned up
        assert db.execute("SELECT count(*) FROM records").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM terms").fetchone() == (0,)


async def test_a_pipeline_over_localbaseline_answers_from_its_memories() -> None:
    pipeline = MemoryPipeline(provider="LocalBaseline")
    request = benchkit.Request(
        Task(
            "t",
            input="capital of France",
            setup=(SetupStep("add", content="Paris is the capital of France"),),
        ),
        Condition("c", pipeline),
        run_id="run_x",
    )
    response = await pipeline.invoke(request)
    assert isinstance(response, Response)
    assert response.output == "Based on retrieved memories:\n\nParis is the capital of France"
    await pipeline.aclose()
