"""The memory pipeline, user stores (objects and HTTP services) and capability gating."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

import benchkit
from benchkit import Benchmark, Condition, EvaluatorSpec, Suite, Task
from benchkit.errors import ConfigError, InvocationError, ProviderError
from benchkit.memory import (
    HttpMemoryProvider,
    LocalBaseline,
    MemoryPipeline,
    as_memory_provider,
    missing_capabilities,
    skip_message,
)
from benchkit.memory._capabilities import from_original
from benchkit.memory._pipeline import NO_ANSWER, answer_generator
from benchkit.model import ProviderSpec, Request, RetrievedItem, SetupStep
from benchkit.protocols import MemoryScope
from benchkit.registry import default_registries

from ._support import FIXTURES

pytestmark = pytest.mark.anyio
SCOPE = MemoryScope("u", "r", "s")


class Notes:
    """A user's store: synchronous, MemoryBench method names, MemoryBench return shapes."""

    def __init__(self, *, leaky: bool = False, confirms: bool = True) -> None:
        self.rows: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[str] = []
        self.leaky = leaky
        self.confirms = confirms

    def add_memory(
        self, scope: dict[str, Any], content: str, metadata: Any = None
    ) -> dict[str, Any]:
        key = str(scope["session_id"])
        record_id = f"n{len(self.rows)}"
        self.rows[(key, record_id)] = {"id": record_id, "context": content, "metadata": metadata}
        self.calls.append(f"add {content}")
        return {"id": record_id}

    def retrieve_memory(self, scope: dict[str, Any], query: str, limit: int = 10) -> list[Any]:
        self.calls.append(f"retrieve {query}")
        words = set(query.lower().split())
        hits = [
            {"record": row, "score": 1.0}
            for (key, _), row in self.rows.items()
            if key == scope["session_id"] and words & set(row["context"].lower().split())
        ]
        return hits[:limit]

    def delete_memory(self, scope: dict[str, Any], record_id: str) -> bool:
        self.calls.append(f"delete {record_id}")
        if not self.leaky:
            self.rows.pop((str(scope["session_id"]), record_id), None)
        return self.confirms


def _request(task: Task, pipeline: MemoryPipeline, **extra: Any) -> Request:
    return Request(task, Condition("c", pipeline), run_id="run_t", **extra)


# --------------------------------------------------------------------------- adapter


async def test_adapter_takes_sync_methods_original_names_and_shapes() -> None:
    notes = Notes()
    store = as_memory_provider(notes, scope="dict")
    assert store.capabilities == {"add", "retrieve", "delete"}
    record_id = await store.add(SCOPE, "tea at five", {"k": 1})
    assert record_id == "n0"
    [hit] = await store.retrieve(SCOPE, "tea")
    assert (hit.id, hit.content, hit.score, dict(hit.metadata)) == (
        "n0",
        "tea at five",
        1.0,
        {"k": 1},
    )
    assert await store.delete(SCOPE, "n0")
    assert await store.retrieve(SCOPE, "tea") == []


async def test_adapter_takes_async_methods_and_runs_sync_ones_in_threads() -> None:
    seen: list[str] = []

    class Async:
        capabilities = ("add_memory", "retrieve")

        async def add(self, scope: MemoryScope, content: str, metadata: Any) -> str:
            return "a1"

        def retrieve(self, scope: MemoryScope, query: str, limit: int) -> list[Any]:
            seen.append(threading.current_thread().name)
            return ["plain text", RetrievedItem("x", "y"), {"id": 7, "text": "t", "score": True}]

    store = as_memory_provider(Async(), thread=True)
    assert store.capabilities == {"add", "retrieve"}
    assert await store.add(SCOPE, "c") == "a1"
    items = await store.retrieve(SCOPE, "q")
    assert [(i.id, i.content, i.score) for i in items] == [
        ("result_0", "plain text", None),
        ("x", "y", None),
        ("7", "t", None),
    ]
    assert seen and seen[0] != threading.current_thread().name


async def test_adapter_reads_memorybench_capabilities() -> None:
    class Original(Notes):
        def get_capabilities(self) -> dict[str, Any]:
            manifest = json.loads(
                (FIXTURES / "memorybench/providers/slow-index.manifest.json").read_text()
            )
            return dict(manifest["capabilities"])

    store = as_memory_provider(Original(), scope="dict")
    assert store.capabilities == {"add", "retrieve", "delete"}
    assert store.convergence_wait_ms == 750.0  # type: ignore[attr-defined]
    manifest = json.loads((FIXTURES / "memorybench/providers/full-crud.manifest.json").read_text())
    assert from_original(manifest["capabilities"]) == (
        frozenset({"add", "retrieve", "delete", "update", "list"}),
        0.0,
    )
    minimal = json.loads(
        (FIXTURES / "memorybench/providers/keyword-store.manifest.json").read_text()
    )
    assert from_original(minimal["capabilities"]) == (frozenset({"add", "retrieve"}), 0.0)


@pytest.mark.parametrize(
    ("obj", "options", "message"),
    [
        (object(), {}, "object is not a memory store: it has no add or retrieve method"),
        (
            Notes(),
            {"capabilities": ["add", "retrieve", "reset"]},
            "declares the capability 'reset'",
        ),
        (Notes(), {"capabilities": ["fly"]}, "unknown capability 'fly'"),
        (Notes(), {"scope": "tuple"}, "scope must be"),
    ],
)
def test_adapter_rejects_what_cannot_work(
    obj: object, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        as_memory_provider(obj, **options)


async def test_adapter_reports_bad_returns_as_final_invocation_errors() -> None:
    class Bad:
        def add(self, scope: Any, content: str, metadata: Any) -> object:
            return 3.5

        def retrieve(self, scope: Any, query: str, limit: int) -> object:
            return {"results": []}

    store = as_memory_provider(Bad())
    with pytest.raises(InvocationError, match=r"add returned 3\.5") as info:
        await store.add(SCOPE, "x")
    assert not info.value.retryable
    with pytest.raises(InvocationError, match="expected a list of results"):
        await store.retrieve(SCOPE, "x")
    assert as_memory_provider(store) is store
    local = LocalBaseline()
    assert as_memory_provider(local) is local


# --------------------------------------------------------------------------- pipeline


async def test_pipeline_replays_setup_and_cleans_up() -> None:
    notes = Notes(confirms=False)
    pipeline = MemoryPipeline(as_memory_provider(notes, scope="dict"))
    task = Task(
        "t1",
        input="tea",
        setup=(
            SetupStep("add", content="tea at five", target="t"),
            SetupStep("add", content={"json": 1.5}),
            SetupStep("add", content="green tea"),
            SetupStep("wait", delay_ms=1),
            SetupStep("delete", target="t"),
        ),
        metadata={"memory": {"limit": 3, "question": "When is tea?"}},
    )
    response = await pipeline.invoke(_request(task, pipeline, epoch=2, attempt=3))
    assert notes.calls[:5] == [
        "add tea at five",
        'add {"json":1.5}',
        "add green tea",
        "delete n0",
        "retrieve tea",
    ]
    # no reset capability: delete every record; n0's delete was not confirmed, so again
    assert notes.calls[5:] == ["delete n0", "delete n1", "delete n2"]
    assert response.output == "Based on retrieved memories:\n\ngreen tea"
    assert response.metadata["ingested_count"] == 3
    assert response.metadata["unconfirmed_deletes"] == ["t"]
    scope = pipeline.scope(_request(task, pipeline, epoch=2, attempt=3))
    assert scope.session_id is not None and scope.session_id.endswith(":c:t1:2:3")
    assert scope.user_id == "user_run_t" and scope.namespace == "runner_run_t"


async def test_pipeline_cleans_up_after_a_failure_and_a_cancellation() -> None:
    class Failing(Notes):
        def retrieve_memory(self, scope: Any, query: str, limit: int = 10) -> list[Any]:
            raise ConnectionError("store down")

    notes = Failing()
    pipeline = MemoryPipeline(as_memory_provider(notes, scope="dict"))
    task = Task("t", input="q", setup=(SetupStep("add", content="x"),))
    with pytest.raises(InvocationError, match="retrieve: ConnectionError: store down") as info:
        await pipeline.invoke(_request(task, pipeline))
    assert info.value.retryable
    assert notes.calls == ["add x", "delete n0"]

    class Slow(Notes):
        async def retrieve(self, scope: Any, query: str, limit: int = 10) -> list[Any]:
            await anyio.sleep(10)
            return []

    slow = Slow()
    pipeline = MemoryPipeline(as_memory_provider(slow, scope="dict"))
    with anyio.move_on_after(0.05):
        await pipeline.invoke(_request(task, pipeline))
    assert slow.calls == ["add x", "delete n0"]


async def test_pipeline_resets_when_the_store_can(tmp_path: Path) -> None:
    store = LocalBaseline(tmp_path / "m.db")
    pipeline = MemoryPipeline(store)
    task = Task(
        "t",
        input="apple",
        setup=(SetupStep("add", content="apple"), SetupStep("add", content="pear")),
    )
    response = await pipeline.invoke(_request(task, pipeline))
    assert [i.content for i in response.retrieved] == ["apple"]
    assert "cleanup_errors" not in response.metadata
    assert await store.list(pipeline.scope(_request(task, pipeline))) == []


@pytest.mark.parametrize(
    ("task", "message", "category"),
    [
        (
            Task(
                "t", input="q", metadata={"memory": {"setup_error": "No sessions found to ingest"}}
            ),
            "No sessions found to ingest",
            "ingestion_error",
        ),
        (Task("t", input=["q"]), "not text", "execution_error"),
        (
            Task("t", input="q", setup=(SetupStep("delete", target="ghost"),)),
            "names no record added earlier",
            "execution_error",
        ),
        (
            Task("t", input="q", setup=(SetupStep("update", target="x"),)),
            "names no record added earlier",
            "execution_error",
        ),
    ],
)
async def test_pipeline_errors_are_final_and_say_why(
    task: Task, message: str, category: str
) -> None:
    notes = Notes()
    pipeline = MemoryPipeline(as_memory_provider(notes, scope="dict"))
    with pytest.raises(InvocationError, match=message) as info:
        await pipeline.invoke(_request(task, pipeline))
    assert info.value.category == category and not info.value.retryable
    assert not notes.rows


async def test_pipeline_update_step() -> None:
    store = LocalBaseline()
    pipeline = MemoryPipeline(store)
    task = Task(
        "t",
        input="pear",
        setup=(
            SetupStep("add", content="apple", target="a"),
            SetupStep("update", content="pear", target="a", metadata={"v": 2}),
        ),
    )
    response = await pipeline.invoke(_request(task, pipeline))
    assert [(i.content, dict(i.metadata)) for i in response.retrieved] == [("pear", {"v": 2})]


async def test_nothing_retrieved_answers_that_it_does_not_know() -> None:
    pipeline = MemoryPipeline(LocalBaseline())
    response = await pipeline.invoke(_request(Task("t", input="anything"), pipeline))
    assert response.output == NO_ANSWER and response.retrieved == ()


def test_pipeline_options_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "MEMORYBENCH_JUDGE_BACKEND", "LLM_JUDGE_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match="exactly one store"):
        MemoryPipeline()
    with pytest.raises(ConfigError, match=r"exactly one store: .*\(got memory, provider\)"):
        MemoryPipeline(LocalBaseline(), provider="LocalBaseline")
    with pytest.raises(ConfigError, match="limit must be"):
        MemoryPipeline(LocalBaseline(), limit=0)
    with pytest.raises(ConfigError, match="answer model defaults to claude-sonnet-4"):
        MemoryPipeline(LocalBaseline(), answer="llm")
    with pytest.raises(ConfigError, match="unknown answer generator"):
        answer_generator("oracle")
    with pytest.raises(ConfigError, match="an AnswerGenerator"):
        answer_generator(42)  # type: ignore[arg-type]
    with pytest.raises(benchkit.RegistryError, match="unknown memory provider 'Nope'"):
        MemoryPipeline(provider="Nope")


async def test_the_memory_provider_type_builds_from_a_spec() -> None:
    built = default_registries().providers.build(
        "memory", {"provider": "LocalBaseline", "limit": 2}
    )
    assert isinstance(built, MemoryPipeline) and isinstance(built.memory, LocalBaseline)
    await built.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await built.memory.retrieve(SCOPE, "apple")
    spec = ProviderSpec("memory", {"provider": "LocalBaseline"})
    suite = Suite(
        Benchmark(
            "b", tasks=[Task("t", input="sun", setup=(SetupStep("add", content="sun hot"),))]
        ),
        conditions=[Condition("local", spec)],
    )
    result = await benchkit.arun(suite)
    assert result.cells[0].status == "pass"
    assert (
        result.cells[0].response is not None and result.cells[0].response.retrieved[0].id == "mem_1"
    )


async def test_a_copied_registries_isolates_its_memory_providers() -> None:
    """A run's own Registries copy holds its memory providers; the process-wide one never
    sees them, and a run with the defaults cannot name them."""

    class Notes:
        def __init__(self) -> None:
            self.items: list[str] = []

        def add(self, scope: MemoryScope, content: str, metadata: object = None) -> str:
            self.items.append(content)
            return f"n{len(self.items)}"

        def retrieve(self, scope: MemoryScope, query: str, limit: int) -> list[str]:
            return [i for i in self.items if query in i][:limit]

    mine = default_registries().copy()
    mine.memory_providers.add("notes", Notes)
    assert "notes" not in default_registries().memory_providers
    assert mine.memory_providers.is_builtin("LocalBaseline")
    assert not mine.memory_providers.is_builtin("notes")
    suite = Suite(
        Benchmark(
            "b",
            tasks=[Task("t", input="sun", setup=(SetupStep("add", content="sun hot"),))],
            evaluators=[benchkit.EvaluatorSpec("contains", {"keywords": ["sun"]})],
        ),
        conditions=[Condition("notes", ProviderSpec("memory", {"provider": "notes"}))],
    )
    result = await benchkit.Runner(registries=mine).run(suite)
    assert result.cells[0].error is None
    assert [i.content for i in result.cells[0].response.retrieved] == ["sun hot"]  # type: ignore[union-attr]
    with pytest.raises(benchkit.RegistryError, match="unknown memory provider 'notes'"):
        await benchkit.Runner().run(suite)


# --------------------------------------------------------------------------- gating


def test_gating_names_missing_capabilities_either_way() -> None:
    provided = frozenset({"add", "retrieve"})
    assert missing_capabilities(
        ["add_memory", "retrieve", "delete_memory", "teleport"], provided
    ) == [
        "delete_memory",
        "teleport",
    ]
    assert missing_capabilities(["add_memory", "add_memory"], frozenset()) == ["add_memory"]
    assert skip_message("mem0", ["update_memory", "reset_scope"]) == (
        "Provider 'mem0' lacks required capability: update_memory, reset_scope"
    )


# --------------------------------------------------------------------------- HTTP service


class Service(ThreadingHTTPServer):
    """A memory service on 127.0.0.1 speaking the contract in docs/memory-providers.md."""

    def __init__(self, *, leaky: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), ServiceHandler)
        self.rows: dict[tuple[str, str], dict[str, Any]] = {}
        self.leaky = leaky
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.fail_with: int | None = None
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/mem"


class ServiceHandler(BaseHTTPRequestHandler):
    server: Service

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/mem/capabilities":
            self.reply(
                200,
                {
                    "capabilities": ["add", "retrieve", "delete_memory", "reset"],
                    "convergence_wait_ms": 1,
                },
            )
        else:
            self.reply(404, {"error": "no such endpoint"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        srv = self.server
        route = self.path.removeprefix("/mem/")
        srv.seen.append((route, body))
        if srv.fail_with is not None:
            self.reply(srv.fail_with, {"error": "scripted"})
            return
        scope = json.dumps(body["scope"], sort_keys=True)
        with srv.lock:
            if route == "add":
                record_id = f"h{len(srv.rows)}"
                srv.rows[(scope, record_id)] = {
                    "id": record_id,
                    "content": body["content"],
                    "metadata": body["metadata"],
                }
                self.reply(200, {"id": record_id})
            elif route == "retrieve":
                words = set(body["query"].lower().split())
                results = [
                    {**row, "score": 1.0}
                    for (key, _), row in srv.rows.items()
                    if key == scope and words & set(row["content"].lower().split())
                ]
                self.reply(200, {"results": results[: body["limit"]]})
            elif route == "delete":
                found = (scope, body["id"]) in srv.rows
                if not srv.leaky:
                    srv.rows.pop((scope, body["id"]), None)
                self.reply(200, {"deleted": found})
            elif route == "reset":
                if not srv.leaky:
                    for key in [k for k in srv.rows if k[0] == scope]:
                        del srv.rows[key]
                self.reply(200, {})
            else:
                self.reply(404, {"error": "no such endpoint"})


@pytest.fixture
def service() -> Iterator[Service]:
    srv = Service()
    thread = threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


async def test_http_provider_against_a_real_service(service: Service) -> None:
    store = await HttpMemoryProvider.discover(
        service.url, headers={"Authorization": "Bearer sk-secret"}
    )
    assert store.capabilities == {"add", "retrieve", "delete", "reset"}
    assert store.convergence_wait_ms == 1.0
    assert "sk-secret" not in repr(store)
    record_id = await store.add(SCOPE, "green tea", {"k": 1})
    [hit] = await store.retrieve(SCOPE, "tea", 5)
    assert (hit.id, hit.content, hit.score) == (record_id, "green tea", 1.0)
    assert await store.retrieve(MemoryScope("u", "r", "other"), "tea") == []
    assert await store.delete(SCOPE, record_id)
    assert not await store.delete(SCOPE, record_id)
    with pytest.raises(InvocationError, match="does not declare the capability 'update'"):
        await store.update(SCOPE, "x", "y")
    route, body = service.seen[0]
    assert route == "add" and body == {
        "scope": {"user_id": "u", "run_id": "r", "session_id": "s", "namespace": None},
        "content": "green tea",
        "metadata": {"k": 1},
    }
    await store.aclose()


async def test_http_errors_are_categorised(service: Service) -> None:
    store = HttpMemoryProvider(service.url)
    service.fail_with = 503
    with pytest.raises(InvocationError, match="HTTP 503") as info:
        await store.add(SCOPE, "x")
    assert info.value.retryable
    service.fail_with = 400
    with pytest.raises(InvocationError, match="HTTP 400") as info:
        await store.retrieve(SCOPE, "x")
    assert not info.value.retryable
    await store.aclose()
    closed = HttpMemoryProvider("http://127.0.0.1:9/mem", timeout=2)
    with pytest.raises(InvocationError, match="ConnectError"):
        await closed.add(SCOPE, "x")
    await closed.aclose()
    with pytest.raises(ProviderError, match="cannot read the capabilities"):
        await HttpMemoryProvider.discover("http://127.0.0.1:9/mem", timeout=2)


def test_http_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="not an http"):
        HttpMemoryProvider("ftp://x")
    with pytest.raises(ConfigError, match="must support add and retrieve"):
        HttpMemoryProvider("http://x", capabilities=["add"])
    with pytest.raises(ConfigError, match="unknown memory capability"):
        HttpMemoryProvider("http://x", capabilities=["add", "retrieve", "fly"])


def _deletion_suite(condition: Condition) -> Suite:
    tasks = [
        Task(
            "d1",
            input="locker code",
            setup=(
                SetupStep("add", content="The locker code is 4512", target="0"),
                SetupStep("add", content="The user likes tea", target="1"),
                SetupStep("delete", target="0"),
            ),
            metadata={"memory": {"deleted": ["locker code is 4512"]}},
        )
    ]
    return Suite(
        Benchmark("deletion", tasks=tasks, evaluators=[EvaluatorSpec("deletion_check")]),
        conditions=[condition],
    )


async def test_deletion_check_catches_a_service_that_does_not_delete(service: Service) -> None:
    honest = await benchkit.arun(
        _deletion_suite(Condition("honest", MemoryPipeline(url=service.url)))
    )
    assert honest.cells[0].status == "pass"
    service.leaky = True
    leaky = await benchkit.arun(
        _deletion_suite(Condition("leaky", MemoryPipeline(url=service.url)))
    )
    cell = leaky.cells[0]
    assert cell.status == "fail"
    assert cell.scores[0].details["deletion_success"] == 0.0
    assert cell.scores[0].details["leakage_rate"] == 1.0
    assert "came back in 1 of 1 results" in (cell.error or "")


async def test_deletion_check_catches_a_store_that_does_not_delete() -> None:
    leaky = as_memory_provider(Notes(leaky=True), scope="dict")
    result = await benchkit.arun(_deletion_suite(Condition("leaky", MemoryPipeline(leaky))))
    assert result.cells[0].status == "fail"
    unconfirmed = as_memory_provider(Notes(confirms=False), scope="dict")
    result = await benchkit.arun(_deletion_suite(Condition("quiet", MemoryPipeline(unconfirmed))))
    assert result.cells[0].status == "fail"
    assert "did not confirm deleting: 0" in (result.cells[0].error or "")
