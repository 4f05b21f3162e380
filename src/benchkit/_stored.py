"""One run of a suite into the run store: the one pipeline every way of running goes through.

Open the store (or take the one given) → prepare the run in it (start, resume, retry the
errored cells, re-run chosen cells, replace a deterministic run) → run the
:class:`~benchkit.runner.Runner` with the store's sink and the store as the LLM reply cache
→ close the store when this object opened it. ``benchkit.run`` / ``arun`` (``_api.py``),
the CLI's ``run``, every tool's command (through :func:`benchkit.cli_toolkit.stored_run`)
and the server's jobs (``serve_toolkit/_jobs.py``) all run through :class:`StoredRun`, so
they agree on what a run is: the same reply cache (a run started over HTTP hits the
replies a CLI run stored), the same resume rules, the same announcements.

It sits above both the Runner and the store: the Runner knows nothing of the store (the
store is a sink and a history), and the store knows nothing of running.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Union

import anyio.to_thread

from benchkit.errors import ConfigError
from benchkit.runner import Runner, new_run_id, sync_run
from benchkit.store import PreparedRun, Store

if TYPE_CHECKING:
    from types import TracebackType

    from benchkit.executors import Executor
    from benchkit.model import Suite
    from benchkit.protocols import ResultSink
    from benchkit.registry import Registries
    from benchkit.results import CellResult, RunInfo, RunResult
    from benchkit.runner import ProgressCallback

__all__ = ["StoreArg", "StoredRun"]

#: What a run's ``store`` may be: a Store or a path (that store), None or True (the default
#: store: ``$BENCHKIT_STORE``, else ``.benchkit/benchkit.db``), False (none).
StoreArg = Union[Store, str, "os.PathLike[str]", bool, None]

#: What a resume, a retry or a re-run needs and ``store=False`` turns off.
_NEEDS_STORE = ConfigError(
    "--resume and --retry-errors (resume=True, retry_errors=True, re-running cells) need "
    "the run store, and --no-store (store=False) turns it off",
    fix="drop --no-store (store=False), or pass a store.",
)


class StoredRun:
    """One run of ``suite`` into the run store (see the module's docstring).

    :meth:`prepare` (blocking) opens the store and prepares the run in it; then
    :attr:`run_id`, :attr:`done` (the cells a resume keeps), :attr:`prepared` and
    :attr:`runner` (to cancel it) are known. :meth:`arun` / :meth:`run` prepare if that has
    not happened yet and run; :meth:`close` (or leaving ``with``) closes a store this object
    opened — one it was given stays open. ``announce`` is called with the prepared run once
    the store's sink has opened it (a second process resuming the same run at the same
    moment is refused there, before anything claims to resume).

    With ``store=False`` nothing is stored and no reply is cached: the Runner runs with
    ``sinks`` alone.
    """

    def __init__(
        self,
        suite: Suite,
        *,
        store: StoreArg = None,
        run_id: str | None = None,
        resume: bool = False,
        retry_errors: bool = False,
        rerun: Sequence[tuple[str, str | None, int | None]] = (),
        replace: bool = False,
        sinks: Sequence[ResultSink] = (),
        progress: ProgressCallback | None = None,
        executor: Executor | None = None,
        registries: Registries | None = None,
        announce: Callable[[PreparedRun, Store], None] | None = None,
    ) -> None:
        if store is False and (resume or retry_errors or rerun):
            raise _NEEDS_STORE
        self.suite = suite
        self._store_arg = store
        self._run_id = run_id
        self._resume = resume
        self._retry_errors = retry_errors
        self._rerun = tuple(rerun)
        self._replace = replace
        self._sinks = tuple(sinks)
        self._progress = progress
        self._executor = executor
        self._registries = registries
        self._announce = announce
        self.store: Store | None = None
        self.owned = False
        self.prepared: PreparedRun | None = None
        self._runner: Runner | None = None

    # -- preparing ---------------------------------------------------------------------------

    def prepare(self) -> StoredRun:
        """Open the store and prepare the run (blocking; once). The executor refuses what
        it cannot run first, before the store records anything."""
        if self._runner is not None:
            return self
        if self._executor is not None:
            from benchkit.registry import default_registries

            self._executor.check(self.suite, self._registries or default_registries())
        sinks = list(self._sinks)
        if self._store_arg is not False:
            self.store, self.owned = self._open(self._store_arg)
            try:
                self.prepared = self.store.prepare(
                    self.suite,
                    run_id=self._run_id,
                    resume=self._resume,
                    retry_errors=self._retry_errors,
                    rerun=self._rerun,
                    replace=self._replace,
                    registries=self._registries,
                )
            except BaseException:
                self.close()
                raise
            sink: ResultSink = self.prepared.sink
            if self._announce is not None:
                sink = _Announced(sink, self._announce, self.prepared, self.store)
            sinks.insert(0, sink)
        self._runner = Runner(
            sinks=sinks,
            progress=self._progress,
            response_cache=self.store,
            executor=self._executor,
            registries=self._registries,
        )
        return self

    @staticmethod
    def _open(store: StoreArg) -> tuple[Store, bool]:
        if isinstance(store, Store):
            return store, False
        return Store(None if isinstance(store, bool) or store is None else store), True

    @property
    def runner(self) -> Runner:
        """The Runner of this run (prepared first when it is not yet): cancel it to stop."""
        return self.prepare()._runner  # type: ignore[return-value]

    @property
    def run_id(self) -> str:
        """The run's id: the store's choice (a resume's, a fresh one), else ``run_id`` or a
        fresh one when nothing is stored."""
        self.prepare()
        if self.prepared is not None:
            return self.prepared.run_id
        if self._run_id is None:
            self._run_id = new_run_id(self.suite)
        return self._run_id

    @property
    def done(self) -> tuple[CellResult, ...]:
        """The cells a resume keeps (they do not run again)."""
        self.prepare()
        return self.prepared.done if self.prepared is not None else ()

    # -- running -----------------------------------------------------------------------------

    async def arun(self) -> RunResult:
        """Run it (preparing it first, in a worker thread, when that has not happened)."""
        if self._runner is None:
            await anyio.to_thread.run_sync(self.prepare)
        return await self.runner.run(self.suite, run_id=self.run_id, done=self.done)

    def run(self, backend: str = "asyncio") -> RunResult:
        """The synchronous twin of :meth:`arun` (works inside a running loop too)."""
        self.prepare()
        return sync_run(
            self.suite, runner=self.runner, backend=backend, run_id=self.run_id, done=self.done
        )

    # -- closing -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the store if this object opened it (idempotent)."""
        if self.owned and self.store is not None:
            self.store.close()
        self.owned = False

    def __enter__(self) -> StoredRun:
        return self.prepare()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class _Announced:
    """The store's sink, calling ``announce`` once it has opened the run."""

    def __init__(
        self,
        sink: ResultSink,
        announce: Callable[[PreparedRun, Store], None],
        prepared: PreparedRun,
        store: Store,
    ) -> None:
        self.sink = sink
        self.announce = announce
        self.prepared = prepared
        self.store = store

    async def open(self, info: RunInfo) -> None:
        await self.sink.open(info)
        self.announce(self.prepared, self.store)

    async def write(self, cell: CellResult) -> None:
        await self.sink.write(cell)

    async def close(self, result: RunResult) -> None:
        await self.sink.close(result)
