"""The Runner (configuration and the runs it has in progress) and a run's cell stream."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterable, Sequence
from types import TracebackType

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from benchkit._public import public
from benchkit.executors import Executor, LocalExecutor
from benchkit.model import Suite
from benchkit.protocols import ResponseCache, ResultSink
from benchkit.registry import Registries, default_registries
from benchkit.results import CellResult, RunResult
from benchkit.runner._cells import Cells
from benchkit.runner._state import (
    ActiveRuns,
    ProgressCallback,
    RunState,
    check_suite_options,
    new_run_id,
)

__all__ = ["RunStream", "Runner", "check_suite"]


@public("benchkit.runner")
class Runner:
    """Runs suites. Holds configuration only; each run keeps its own state.

    ``sinks`` receive every finished cell at once. ``progress`` is called after each cell
    (keep it cheap — throttle expensive rendering yourself). ``keep_raw`` keeps providers'
    raw payloads in results (off by default: they can be large). ``response_cache`` (the
    run store, say) goes to every provider, evaluator and verifier built from a spec whose
    factory takes a ``response_cache`` argument — the LLM clients cache their replies there;
    without one they cache nothing. ``executor`` decides where cells run (default
    :class:`~benchkit.executors.LocalExecutor`: in this process; see
    :class:`benchkit.RayExecutor`); the sinks always receive the cells here.
    """

    def __init__(
        self,
        *,
        sinks: Sequence[ResultSink] = (),
        progress: ProgressCallback | None = None,
        registries: Registries | None = None,
        keep_raw: bool = False,
        response_cache: ResponseCache | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.sinks = tuple(sinks)
        self.progress = progress
        self.registries = registries or default_registries()
        self.keep_raw = keep_raw
        self.response_cache = response_cache
        self.executor: Executor = executor if executor is not None else LocalExecutor()
        self._runs = ActiveRuns()

    @property
    def last_result(self) -> RunResult | None:
        """The result of the run that finished or stopped last (None before any has)."""
        return self._runs.last_result

    async def run(
        self, suite: Suite, *, run_id: str | None = None, done: Iterable[CellResult] = ()
    ) -> RunResult:
        """Run every cell of ``suite`` and return the result.

        ``done`` are cells already finished by an earlier, interrupted run (a resume): their
        (task, condition, epoch) keys are not run again, and they are part of the result
        but are not written to the sinks a second time.

        If the run is cancelled from outside (a cancel scope, Ctrl-C) the cancellation
        propagates as anyio requires, after every finished cell has reached the sinks;
        the partial result is then in :attr:`last_result`. :meth:`cancel` instead stops
        the run gracefully and ``run`` returns the partial result.
        """
        state = RunState(self, self._runs, suite, run_id, done)
        return await state.execute(None)

    def stream(
        self, suite: Suite, *, run_id: str | None = None, done: Iterable[CellResult] = ()
    ) -> RunStream:
        """Cells as they finish: ``async with runner.stream(s) as cells: async for c in cells``.

        After the block, ``cells.result`` holds the :class:`RunResult`. ``done`` as for
        :meth:`run` (those cells are not streamed again).
        """
        return RunStream(RunState(self, self._runs, suite, run_id, done))

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop every active run of this runner gracefully (call from the event loop).

        ``reason`` is what the result's :attr:`~benchkit.results.RunResult.stopped_by`
        and the run store record (``interrupted: cancelled``).

        .. versionchanged:: 0.2.0
           ``reason``.
        """
        self._runs.cancel(reason)

    def cancel_threadsafe(self, reason: str = "cancelled") -> None:
        """Like :meth:`cancel`, callable from any thread or a signal handler (Ctrl-C:
        the CLI gives ``reason="signal"``).

        A cancel that comes before the run has started stops it as soon as it starts, so
        a signal can never slip between "not started yet" and "running" unseen.

        .. versionchanged:: 0.2.0
           ``reason``.
        """
        self._runs.cancel_threadsafe(reason)


@public("benchkit.runner")
class RunStream:
    """Async context manager and iterator over a run's cells in completion order."""

    def __init__(self, state: RunState) -> None:
        self._state = state
        self._tg: anyio.abc.TaskGroup | None = None
        self._receive: MemoryObjectReceiveStream[CellResult] | None = None
        self._exhausted = False
        self.result: RunResult | None = None

    async def __aenter__(self) -> RunStream:
        send: MemoryObjectSendStream[CellResult]
        send, self._receive = anyio.create_memory_object_stream[CellResult](
            max_buffer_size=math.inf
        )
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._produce, send)
        return self

    async def _produce(self, send: MemoryObjectSendStream[CellResult]) -> None:
        async with send:
            self.result = await self._state.execute(send)

    def __aiter__(self) -> AsyncIterator[CellResult]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[CellResult]:
        assert self._receive is not None, "use `async with runner.stream(suite) as cells`"
        async for cell in self._receive:
            yield cell
        self._exhausted = True

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None and self._receive is not None
        if not self._exhausted:
            self._state.cancel()
        self._receive.close()
        return await self._tg.__aexit__(exc_type, exc, tb)


def check_suite(suite: Suite, *, registries: Registries | None = None) -> None:
    """Build every provider, evaluator and verifier of ``suite`` as a run would, then close
    them: raises whatever a run would raise before its first cell (``validate`` uses it)."""
    registries = registries or default_registries()
    check_suite_options(suite, LocalExecutor(), registries)
    cells = Cells(suite, new_run_id(suite), registries=registries)
    try:
        cells.build_plugins()
        cells.build_providers()
    finally:
        anyio.run(cells.close)
