"""The memory pipeline: a :class:`~benchkit.protocols.Provider` over any memory store.

For each cell it opens a fresh :class:`~benchkit.protocols.MemoryScope`, replays the task's
set-up steps (add / delete / update / wait), waits for the store to converge, retrieves
with the task's query, builds an answer, and — whatever happened — cleans the scope up
(``reset`` when the store can, else a delete of every record it added)::

    Task(input=query, setup=(SetupStep("add", ...), ...), metadata={"memory": MemoryQuery(...)})
      │  add … delete … wait            (MemoryProvider, in a scope of its own)
      │  retrieve(query, limit)  ──►  Response.retrieved
      │  AnswerGenerator         ──►  Response.output
      └─ cleanup (finally)

A scope is unique per run, condition, task, epoch and attempt, so concurrent cells — and
a retry of a cell whose clean-up failed — never see each other's memories.

The task tells the pipeline more through ``task.metadata["memory"]``, a
:class:`MemoryQuery` (a loader's typed data; a mapping with the same keys, as a benchmark
file writes it, is read the same way), all optional: ``limit`` (how many memories to
retrieve), ``question`` (what the answer generator is asked, when it differs from the
retrieval query), ``setup_error`` (the case cannot be ingested: the cell fails with that
message, category ``ingestion_error``, before the store is touched).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio
import attrs

from benchkit import transcript
from benchkit._limits import MAX_RETRIEVAL_LIMIT, MAX_WAIT_S, out_of_bounds
from benchkit.errors import ConfigError, InvocationError
from benchkit.memory._adapter import as_memory_provider
from benchkit.memory._http import HttpMemoryProvider
from benchkit.memory._registry import build_memory_provider
from benchkit.model import Request, Response, RetrievedItem, SetupStep, Task, Usage
from benchkit.protocols import MemoryProvider, MemoryScope, ResponseCache
from benchkit.registry import Registries

_log = logging.getLogger("benchkit.memory")

__all__ = [
    "NO_ANSWER",
    "Answer",
    "AnswerGenerator",
    "MemoryPipeline",
    "TemplateAnswer",
    "answer_generator",
]

NO_ANSWER = "I don't have enough information to answer this question."
"""The original's answer when nothing was retrieved."""

TEMPLATE_CONTEXTS = 3


@attrs.frozen
class Answer:
    """What an answer generator produced: the text, and the tokens it cost (if any)."""

    text: str
    usage: Usage | None = None


@runtime_checkable
class AnswerGenerator(Protocol):
    """Turns a question and the retrieved memories (best first) into an answer."""

    async def generate(self, question: str, contexts: Sequence[str], task: Task) -> Answer: ...


class TemplateAnswer:
    """The original's answer without an LLM: the top three memories under a heading.

    >>> import anyio
    >>> anyio.run(TemplateAnswer().generate, "Q?", ["a", "b"], Task("t")).text
    'Based on retrieved memories:\\n\\na\\n\\n---\\n\\nb'
    """

    async def generate(self, question: str, contexts: Sequence[str], task: Task) -> Answer:
        if not contexts:
            return Answer(NO_ANSWER)
        return Answer(
            "Based on retrieved memories:\n\n" + "\n\n---\n\n".join(contexts[:TEMPLATE_CONTEXTS])
        )


def answer_generator(
    kind: str | AnswerGenerator,
    options: Mapping[str, Any] | None = None,
    *,
    response_cache: ResponseCache | None = None,
    registries: Registries | None = None,
) -> AnswerGenerator:
    """The answer generator named ``kind``, or ``kind`` itself.

    ``template`` is benchkit's own (:class:`TemplateAnswer`); the others come from the
    tools (``Tool.answer_generators``, such as the ``llm`` generator that llm-as-judge
    memory benchmarks use), looked up in ``registries`` (default: the default ones) and built
    with ``options`` and the run's ``response_cache`` — an LLM one checks its endpoint and
    key then, so a run without them fails before its first cell.

    .. versionchanged:: 0.2.0
       Generators other than ``template`` come from the tools' registry.
    """
    if not isinstance(kind, str):
        if not isinstance(kind, AnswerGenerator):
            raise ConfigError(
                f"answer must be an answer generator's name or an AnswerGenerator, got {kind!r}",
                fix="give an object with `async generate(question, contexts, task) -> Answer`.",
            )
        return kind
    from benchkit.registry import default_registries

    generators = (registries or default_registries()).answer_generators
    if kind not in generators:
        raise ConfigError(
            f"unknown answer generator {kind!r}",
            fix=f"use one of: {', '.join(generators.names())} (a tool adds more).",
        )
    answer: AnswerGenerator = generators.build(
        kind, dict(options or {}), response_cache=response_cache, registries=registries
    )
    return answer


@attrs.frozen
class MemoryQuery:
    """What a task tells the memory pipeline beyond its input: ``task.metadata["memory"]``.

    ``question`` is what the answer generator is asked (default: the retrieval query,
    ``task.input``); ``limit`` how many memories to retrieve (default: the pipeline's);
    ``setup_error`` says the case cannot be ingested — the cell fails with it, category
    ``ingestion_error``, before the store is touched. Loaders store an instance (or a
    subclass carrying their own per-task data: MemoryBench's ``MemoryCase``).
    """

    question: str | None = None
    limit: int | None = None
    setup_error: str | None = None

    @classmethod
    def of(cls, task: Task) -> MemoryQuery:
        """The task's memory data: the typed object, or one read from a mapping with the
        same keys (a benchmark file's ``metadata: {memory: {...}}``)."""
        found = task.metadata.get("memory")
        if isinstance(found, MemoryQuery):
            return found
        if isinstance(found, Mapping):
            return cls(**_known_fields(cls, found, task))
        return _NO_QUERY


def _known_fields(cls: type, found: Mapping[str, Any], task: Task) -> dict[str, Any]:
    """The entries of ``found`` that are fields of ``cls``, checked against their types."""
    fields = {f.name: f for f in attrs.fields(cls)}
    out: dict[str, Any] = {}
    for name, value in found.items():
        if name not in fields or value is None:
            continue
        if name == "limit" and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError(
                f"task {task.id!r}: metadata.memory.limit must be an integer, got {value!r}"
            )
        if name == "limit" and value > MAX_RETRIEVAL_LIMIT:
            raise ConfigError(
                f"task {task.id!r}: metadata.memory.limit must be <= "
                f"{MAX_RETRIEVAL_LIMIT:,}, got {value!r}",
                fix="ask for fewer memories per query (docs/limits.md lists the bounds).",
            )
        if name in ("question", "setup_error") and not isinstance(value, str):
            value = str(value)
        out[name] = value
    return out


_NO_QUERY = MemoryQuery()


@attrs.define
class _Ingested:
    """What one cell put into the store: record ids in order, and refs to them."""

    ids: list[str] = attrs.Factory(list)
    refs: dict[str, str] = attrs.Factory(dict)
    added: int = 0
    deleted: int = 0
    unconfirmed: list[str] = attrs.Factory(list)


def _phase_error(phase: str, exc: Exception) -> InvocationError:
    if isinstance(exc, InvocationError):
        return InvocationError(
            f"{phase}: {exc.message}",
            category=exc.category,
            retryable=exc.retryable,
            exit_code=exc.exit_code,
            stderr=exc.stderr,
        )
    return InvocationError(f"{phase}: {type(exc).__name__}: {exc}")


class MemoryPipeline:
    """Ingest → retrieve → answer → clean up, per cell, over one memory store.

    Give the store as ``memory`` (any object :func:`~benchkit.memory.as_memory_provider`
    accepts), or by name: ``provider`` (a registered memory provider such as
    ``"LocalBaseline"``) or ``url`` (an :class:`~benchkit.memory.HttpMemoryProvider`, with
    ``capabilities`` and ``headers``). A store built from a name or URL belongs to the
    pipeline and is closed by :meth:`aclose`.

    ``answer`` is ``"template"`` (the original's non-LLM answer), ``"llm"`` (configured by
    ``answer_options``), or an :class:`AnswerGenerator`. ``limit`` is the retrieval limit when the task names none.
    ``cleanup_timeout`` bounds the clean-up, which runs even when the cell is cancelled.

    In a benchmark file: ``provider: {type: memory, provider: LocalBaseline}``.
    """

    def __init__(
        self,
        memory: Any = None,
        *,
        provider: str | None = None,
        url: str | None = None,
        capabilities: Sequence[str] | None = None,
        headers: Mapping[str, str] | None = None,
        answer: str | AnswerGenerator = "template",
        answer_options: Mapping[str, Any] | None = None,
        limit: int = 10,
        cleanup_timeout: float = 30.0,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
        registries: Registries | None = None,
    ) -> None:
        given = [n for n, v in (("memory", memory), ("provider", provider), ("url", url)) if v]
        if len(given) != 1:
            raise ConfigError(
                "a memory pipeline needs exactly one store: memory, provider or url"
                + (f" (got {', '.join(given)})" if given else ""),
                fix="e.g. provider: LocalBaseline, or url: http://127.0.0.1:8080",
            )
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"limit must be an integer >= 1, got {limit!r}")
        for name, value, high in (
            ("limit", limit, MAX_RETRIEVAL_LIMIT),
            ("cleanup_timeout", cleanup_timeout, MAX_WAIT_S),
        ):
            problem = out_of_bounds(value, 0, high)
            if problem is not None:
                raise ConfigError(
                    f"{name} {problem}",
                    fix=f"give {name} a value <= {high:,} (docs/limits.md lists the bounds).",
                )
        self.answer = answer_generator(
            answer, answer_options, response_cache=response_cache, registries=registries
        )
        self.limit = limit
        self.cleanup_timeout = float(cleanup_timeout)
        self._owned = memory is None
        store: MemoryProvider
        if provider is not None:
            names = registries.memory_providers if registries is not None else None
            store = build_memory_provider(provider, names)
        elif url is not None:
            store = HttpMemoryProvider(url, capabilities=capabilities, headers=headers)
        else:
            store = as_memory_provider(memory)
        self.memory = store
        self._token = uuid.uuid4().hex[:8]

    def __repr__(self) -> str:
        return f"MemoryPipeline({self.memory!r})"

    @property
    def capabilities(self) -> frozenset[str]:
        """The store's capabilities (what the plan gates benchmarks on)."""
        return self.memory.capabilities

    @property
    def versions(self) -> dict[str, str]:
        """What the answer model says about itself (the local model's file hash, ...),
        for the run's versions; empty for other answer generators."""
        versions = getattr(getattr(self.answer, "client", None), "versions", None)
        return dict(versions) if isinstance(versions, Mapping) else {}

    def scope(self, request: Request) -> MemoryScope:
        """The scope of one cell attempt: nothing else ever uses it."""
        return MemoryScope(
            user_id=f"user_{request.run_id}",
            run_id=request.run_id,
            session_id=(
                f"{self._token}:{request.condition.id}:{request.task.id}:"
                f"{request.epoch}:{request.attempt}"
            ),
            namespace=f"runner_{request.run_id}",
        )

    async def invoke(self, request: Request) -> Response:
        task = request.task
        spec = MemoryQuery.of(task)
        if spec.setup_error:
            raise InvocationError(spec.setup_error, category="ingestion_error", retryable=False)
        if not isinstance(task.input, str):
            raise InvocationError(
                f"the memory pipeline queries with task.input, which is not text: {task.input!r}",
                retryable=False,
            )
        scope = self.scope(request)
        done = _Ingested()
        try:
            response = await self._run(request, scope, spec, done)
        except BaseException:
            await self._cleanup(scope, done)
            raise
        problems = await self._cleanup(scope, done)
        if problems:
            metadata = {**response.metadata, "cleanup_errors": problems}
            response = attrs.evolve(response, metadata=metadata)
        return response

    async def _run(
        self, request: Request, scope: MemoryScope, spec: MemoryQuery, done: _Ingested
    ) -> Response:
        task = request.task
        clock = time.perf_counter
        t0 = clock()
        for number, step in enumerate(task.setup, 1):
            await self._step(scope, step, number, done)
        if task.setup:
            wait = getattr(self.memory, "convergence_wait_ms", 0) or 0
            if wait > 0:
                await anyio.sleep(wait / 1000.0)
        t1 = clock()
        limit = self.limit if spec.limit is None else spec.limit
        query = task.input
        try:
            items: tuple[RetrievedItem, ...] = tuple(
                await self.memory.retrieve(scope, query, limit)
            )
        except Exception as exc:
            raise _phase_error("retrieve", exc) from exc
        _log.info("retrieve_memory %s: %d items for %r", scope.user_id, len(items), query)
        t2 = clock()
        if transcript.active():
            transcript.record(
                "memory_retrieve",
                f"retrieve {len(items)} item(s) (limit {limit})",
                {
                    "query": query,
                    "items": [{"id": i.id, "content": i.content, "score": i.score} for i in items],
                },
                duration=t2 - t1,
            )
        question = spec.question
        try:
            answer = await self.answer.generate(
                question if question is not None else query,
                [item.content for item in items],
                task,
            )
        except Exception as exc:
            raise _phase_error("answer", exc) from exc
        t3 = clock()
        timed = not request.deterministic
        metadata: dict[str, Any] = {
            "ingested_count": done.added,
            "deleted_count": done.deleted,
            "retrieved_count": len(items),
            "ingest_ms": (t1 - t0) * 1000.0 if timed else 0.0,
            "retrieve_ms": (t2 - t1) * 1000.0 if timed else 0.0,
            "answer_ms": (t3 - t2) * 1000.0 if timed else 0.0,
        }
        if done.unconfirmed:
            metadata["unconfirmed_deletes"] = list(done.unconfirmed)
        return Response(output=answer.text, usage=answer.usage, retrieved=items, metadata=metadata)

    async def _step(
        self, scope: MemoryScope, step: SetupStep, number: int, done: _Ingested
    ) -> None:
        phase = f"set-up step {number} ({step.action})"
        try:
            if step.action == "add":
                content = step.content if isinstance(step.content, str) else _json(step.content)
                record_id = await self.memory.add(scope, content, step.metadata)
                transcript.record(
                    "memory_add",
                    f"add record {record_id}",
                    {"content": content, "metadata": step.metadata or None},
                )
                _log.info(
                    "add_memory %s (session %s): record %s",
                    scope.user_id,
                    scope.session_id,
                    record_id,
                )
                done.ids.append(record_id)
                done.added += 1
                if step.target is not None:
                    done.refs[step.target] = record_id
            elif step.action == "delete":
                record_id = self._resolve(step, done)
                _log.info("delete_memory %s: record %s", scope.user_id, record_id)
                deleted = await self.memory.delete(scope, record_id)
                transcript.record(
                    "memory_delete",
                    f"delete record {record_id}{'' if deleted else ' (not confirmed)'}",
                    {"target": step.target, "deleted": bool(deleted)},
                )
                if deleted:
                    if record_id in done.ids:
                        done.ids.remove(record_id)
                        done.deleted += 1
                else:
                    done.unconfirmed.append(step.target or record_id)
            elif step.action == "update":
                record_id = self._resolve(step, done)
                content = step.content if isinstance(step.content, str) else _json(step.content)
                metadata = step.metadata or None
                _log.info("update_memory %s: record %s", scope.user_id, record_id)
                updated = await self.memory.update(scope, record_id, content, metadata)
                transcript.record(
                    "memory_update",
                    f"update record {record_id}",
                    {"content": content, "metadata": metadata, "updated": bool(updated)},
                )
                if not updated:
                    raise InvocationError(
                        f"the store did not update record {record_id!r}", retryable=False
                    )
        except Exception as exc:
            raise _phase_error(phase, exc) from exc
        if step.delay_ms > 0:
            await anyio.sleep(step.delay_ms / 1000.0)

    @staticmethod
    def _resolve(step: SetupStep, done: _Ingested) -> str:
        found = done.refs.get(step.target) if step.target is not None else None
        if found is None:
            raise InvocationError(
                f"target {step.target!r} names no record added earlier in this case",
                retryable=False,
            )
        return found

    async def _cleanup(self, scope: MemoryScope, done: _Ingested) -> list[str]:
        """Empty the scope; returns what went wrong (clean-up never fails the cell)."""
        problems: list[str] = []
        if not done.added:
            return problems
        with anyio.move_on_after(self.cleanup_timeout, shield=True) as deadline:
            if "reset" in self.memory.capabilities:
                try:
                    await self.memory.reset(scope)
                    return problems
                except Exception as exc:
                    problems.append(f"reset: {type(exc).__name__}: {exc}")
            for record_id in done.ids:
                try:
                    await self.memory.delete(scope, record_id)
                except Exception as exc:
                    problems.append(f"delete {record_id}: {type(exc).__name__}: {exc}")
        if deadline.cancelled_caught:
            problems.append(f"clean-up did not finish within {self.cleanup_timeout:g}s")
        return problems

    async def aclose(self) -> None:
        """Close the answer generator's client, and the store when the pipeline built it
        (from a name or URL)."""
        close_answer = getattr(self.answer, "aclose", None)
        if close_answer is not None:
            await close_answer()
        if self._owned:
            closer = getattr(self.memory, "aclose", None)
            if closer is not None:
                await closer()


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
