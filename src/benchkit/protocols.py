"""The plug-in protocols: what a provider, evaluator, verifier, memory store and sink are.

They are :class:`typing.Protocol` classes, so any object with the right methods fits —
no base class to inherit. Each is ``runtime_checkable`` for a cheap ``isinstance`` check.

A provider in five lines::

    >>> from benchkit.model import Request, Response
    >>> class Echo:
    ...     async def invoke(self, request: Request) -> Response:
    ...         return Response(output=request.task.input)
    >>> isinstance(Echo(), Provider)
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from benchkit.model import Condition, Request, Response, RetrievedItem, Task

if TYPE_CHECKING:
    from benchkit.results import CellResult, RunInfo, RunResult, Score, Verdict

__all__ = [
    "Evaluator",
    "MemoryProvider",
    "MemoryScope",
    "Provider",
    "ResponseCache",
    "ResultSink",
    "Verifier",
    "VerifyContext",
]


@runtime_checkable
class Provider(Protocol):
    """The system under test. Raise :class:`benchkit.errors.InvocationError` on failure.

    A provider may also define ``async aclose()``; the Runner calls it after the run for
    providers it built from a :class:`~benchkit.model.ProviderSpec`. A provider that is an
    async context manager (``__aenter__``/``__aexit__``) is entered for the whole run, in
    the run's task, so it can keep a session and background tasks alive across cells
    (:class:`~benchkit.providers.McpProvider` does); it must accept nested entries.
    """

    async def invoke(self, request: Request) -> Response: ...


@runtime_checkable
class Evaluator(Protocol):
    """Scores a response against the task's expectation. Returns a Score, never raises
    for a wrong answer (an exception means the evaluator itself is broken)."""

    async def evaluate(self, task: Task, response: Response) -> Score: ...


@attrs.frozen
class VerifyContext:
    """What a verifier may need beyond the task and response.

    ``base_dir`` is the directory the benchmark file lives in (commands run there);
    ``bundle`` is the condition's bundle directory, if any.
    """

    condition: Condition
    epoch: int = 0
    attempt: int = 1
    seed: int = 0
    deterministic: bool = False
    base_dir: Path | None = None
    timeout: float | None = None

    @property
    def bundle(self) -> Path | None:
        return self.condition.bundle


@runtime_checkable
class Verifier(Protocol):
    """Checks a side effect of the provider (a file in the bundle, a command's exit code)."""

    async def verify(self, task: Task, response: Response, context: VerifyContext) -> Verdict: ...


@attrs.frozen
class MemoryScope:
    """Where a memory operation applies: records in one scope never see another's."""

    user_id: str
    run_id: str
    session_id: str | None = None
    namespace: str | None = None


@runtime_checkable
class MemoryProvider(Protocol):
    """A memory or RAG store under test.

    ``capabilities`` names what it supports, from ``add``, ``retrieve``, ``delete``,
    ``update``, ``list`` and ``reset``; benchmarks that need a missing one are skipped with
    a reason instead of failing.
    """

    @property
    def capabilities(self) -> frozenset[str]: ...

    async def add(
        self, scope: MemoryScope, content: str, metadata: Mapping[str, Any] | None = None
    ) -> str: ...

    async def retrieve(
        self, scope: MemoryScope, query: str, limit: int = 10
    ) -> Sequence[RetrievedItem]: ...

    async def delete(self, scope: MemoryScope, record_id: str) -> bool: ...

    async def update(
        self,
        scope: MemoryScope,
        record_id: str,
        content: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> bool: ...

    async def reset(self, scope: MemoryScope) -> None: ...


@runtime_checkable
class ResultSink(Protocol):
    """Receives every finished cell at once, so nothing finished is lost to a later crash.

    ``open`` is called before the first cell, ``write`` once per finished cell (in
    completion order), ``close`` with the final (possibly interrupted) result.

    A sink may also define a plain method ``see_task(position, task)``: the runner calls it
    once for each task of the benchmark as the run reaches it, in order of position (all
    of them after ``open``, before the first cell, when ``until_decided`` picks tasks in a
    random order), so a sink that keeps the tasks need not read the benchmark again (a
    generator's tasks are made once). Tasks the run never reached (it was interrupted)
    are not seen. The run store's sink keeps its task snapshot this way.
    """

    async def open(self, info: RunInfo) -> None: ...

    async def write(self, cell: CellResult) -> None: ...

    async def close(self, result: RunResult) -> None: ...


@runtime_checkable
class ResponseCache(Protocol):
    """A cache of LLM replies: ``cache_get`` / ``cache_put`` over JSON text.

    The run store is one (its ``llm_cache`` table). Whoever opens the store hands it to the
    :class:`~benchkit.runner.Runner` (``response_cache=``), which passes it to every plug-in
    factory that takes a ``response_cache`` argument; an LLM client never opens a store
    itself, so ``--store PATH`` and ``--no-store`` decide where replies are cached.
    """

    def cache_get(self, key: str) -> str | None: ...

    def cache_put(self, key: str, value: str) -> None: ...
