"""``benchkit.run`` / ``benchkit.arun``: a run into the store, through :class:`StoredRun`.

The opened store is also the run's LLM reply cache (``response_cache``), so ``store=``
decides where replies are cached and ``store=False`` caches nothing (``_stored.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from benchkit._stored import StoreArg, StoredRun

if TYPE_CHECKING:
    from benchkit.executors import Executor
    from benchkit.model import Suite
    from benchkit.protocols import ResultSink
    from benchkit.results import RunResult
    from benchkit.runner import ProgressCallback

__all__ = ["StoreArg", "arun_stored", "run_stored"]


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
    stored = StoredRun(
        suite,
        store=store,
        run_id=run_id,
        resume=resume,
        retry_errors=retry_errors,
        sinks=sinks,
        progress=progress,
        executor=executor,
    )
    try:
        return await stored.arun()  # prepared in a worker thread
    finally:
        stored.close()


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
    with StoredRun(
        suite,
        store=store,
        run_id=run_id,
        resume=resume,
        retry_errors=retry_errors,
        sinks=sinks,
        progress=progress,
        executor=executor,
    ) as stored:
        return stored.run(backend)
