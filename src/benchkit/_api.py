"""``benchkit.run`` / ``benchkit.arun``: open the run store, prepare (or resume), run, close.

This sits above both the :class:`~benchkit.runner.Runner` and the store: the Runner knows
nothing of the store (the store is a sink and a history), and the store knows nothing of
running. The opened store is also the run's LLM reply cache (``response_cache``), so
``store=`` decides where replies are cached and ``store=False`` caches nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Union

import anyio.to_thread

from benchkit.errors import ConfigError
from benchkit.protocols import ResultSink
from benchkit.registry import default_registries
from benchkit.results import RunResult
from benchkit.runner import Runner, sync_run
from benchkit.store import PreparedRun, Store

if TYPE_CHECKING:
    from benchkit.executors import Executor
    from benchkit.model import Suite
    from benchkit.runner import ProgressCallback

__all__ = ["StoreArg", "arun_stored", "run_stored"]

#: What ``benchkit.run(store=...)`` accepts: a Store or a path (that store), None or True
#: (the default store: ``$BENCHKIT_STORE``, else ``.benchkit/benchkit.db``), False (none).
StoreArg = Union[Store, str, "os.PathLike[str]", bool, None]


def _open(store: StoreArg, resume: bool, retry_errors: bool) -> tuple[Store | None, bool]:
    """The store to use (None for none) and whether this call owns (and closes) it."""
    if store is False:
        if resume or retry_errors:
            raise ConfigError(
                "resume=True and retry_errors=True need the run store, and store=False "
                "turns it off",
                fix="drop store=False (or pass a Store or a path).",
            )
        return None, False
    if isinstance(store, Store):
        return store, False
    return Store(None if store is None or store is True else store), True


def _check(executor: Executor | None, suite: Suite) -> None:
    """Refuse what the executor cannot run before the store records a run of it."""
    if executor is not None:
        executor.check(suite, default_registries())


def _prepare(
    store: Store, suite: Suite, run_id: str | None, resume: bool, retry: bool
) -> PreparedRun:
    return store.prepare(suite, run_id=run_id, resume=resume, retry_errors=retry)


async def arun_stored(
    suite: Suite,
    *,
    sinks: Sequence[ResultSink],
    progress: ProgressCallback | None,
    run_id: str | None,
    store: StoreArg,
    resume: bool,
    retry_errors: bool,
    executor: Executor | None = None,
) -> RunResult:
    """Run ``suite`` with the store (unless ``store=False``), resuming when asked."""
    _check(executor, suite)
    chosen, owned = _open(store, resume, retry_errors)
    if chosen is None:
        runner = Runner(sinks=sinks, progress=progress, executor=executor)
        return await runner.run(suite, run_id=run_id)
    try:
        prepared = await anyio.to_thread.run_sync(
            _prepare, chosen, suite, run_id, resume, retry_errors
        )
        runner = Runner(
            sinks=[prepared.sink, *sinks],
            progress=progress,
            response_cache=chosen,
            executor=executor,
        )
        return await runner.run(suite, run_id=prepared.run_id, done=prepared.done)
    finally:
        if owned:
            chosen.close()


def run_stored(
    suite: Suite,
    *,
    sinks: Sequence[ResultSink],
    progress: ProgressCallback | None,
    run_id: str | None,
    store: StoreArg,
    resume: bool,
    retry_errors: bool,
    backend: str,
    executor: Executor | None = None,
) -> RunResult:
    """The synchronous twin of :func:`arun_stored` (works inside a running loop too)."""
    _check(executor, suite)
    chosen, owned = _open(store, resume, retry_errors)
    if chosen is None:
        runner = Runner(sinks=sinks, progress=progress, executor=executor)
        return sync_run(suite, runner=runner, backend=backend, run_id=run_id)
    try:
        prepared = _prepare(chosen, suite, run_id, resume, retry_errors)
        runner = Runner(
            sinks=[prepared.sink, *sinks],
            progress=progress,
            response_cache=chosen,
            executor=executor,
        )
        return sync_run(
            suite, runner=runner, backend=backend, run_id=prepared.run_id, done=prepared.done
        )
    finally:
        if owned:
            chosen.close()
