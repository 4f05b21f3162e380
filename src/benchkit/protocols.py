"""The plug-in protocols: what a provider, evaluator, verifier, memory store and sink are.

They are :class:`typing.Protocol` classes, so any object with the right methods fits —
no base class to inherit. Each is ``runtime_checkable`` for a cheap ``isinstance`` check.
:class:`Provider` and :class:`ResponseCache` are defined in :mod:`benchkit.model`, with
the Condition and Request they go with, and are imported from here as before.

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

# The provider and the reply cache are defined with the model they are handed (a Condition
# holds its Provider, which takes a Request that holds the Condition); they are re-exported
# here, with the other plug-in protocols.
from benchkit.model import Condition, Provider, Response, ResponseCache, RetrievedItem, Task

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
