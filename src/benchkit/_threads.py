"""Blocking calls off the event loop: how sync providers, evaluators and verifiers run.

Why not ``anyio.to_thread.run_sync``: a call that is abandoned (its cell timed out, or
the run was interrupted) keeps running in its thread, and anyio's worker threads are not
daemon threads, so one hung ``def system(x)`` would keep the interpreter from exiting after
the run was over. The threads here are daemon threads from a small idle pool (an idle thread
exits after :data:`IDLE_SECONDS`), so abandoning a call costs a thread until the call
returns, never the process's exit.

How many calls run at once is bounded by a :class:`anyio.CapacityLimiter`: the one the
Runner sets for the current run (:func:`run_limiter`, sized by the run's concurrency), or
anyio's default thread limiter outside a run. The token is held while the caller waits;
an abandoned call gives its token back at once, so a hung function never starves the run.
"""

from __future__ import annotations

import asyncio
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar, copy_context
from typing import Any, TypeVar

import anyio
import anyio.to_thread

__all__ = ["IDLE_SECONDS", "run_limiter", "run_sync", "threadsafe_caller"]

T = TypeVar("T")

#: How long an idle pool thread waits for work before it exits.
IDLE_SECONDS = 10.0

_LIMITER: ContextVar[anyio.CapacityLimiter | None] = ContextVar(
    "benchkit_thread_limiter", default=None
)


@contextmanager
def run_limiter(limiter: anyio.CapacityLimiter) -> Iterator[None]:
    """Bound the blocking calls made in this context (and tasks started from it)."""
    token = _LIMITER.set(limiter)
    try:
        yield
    finally:
        _LIMITER.reset(token)


def threadsafe_caller() -> Callable[[Callable[[], object]], None]:
    """A function that schedules a callback on the current event loop from any thread,
    including a signal handler in the loop's own thread; a finished loop drops the call."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        running = loop

        def call_asyncio(fn: Callable[[], object]) -> None:
            with suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
                running.call_soon_threadsafe(fn)

        return call_asyncio
    trio = sys.modules["trio"]
    trio_token = trio.lowlevel.current_trio_token()

    def call_trio(fn: Callable[[], object]) -> None:
        with suppress(trio.RunFinishedError):
            trio_token.run_sync_soon(fn)

    return call_trio


class _Worker(threading.Thread):
    def __init__(self, pool: _Pool) -> None:
        super().__init__(name="benchkit-sync-call", daemon=True)
        self.pool = pool
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()

    def run(self) -> None:
        pool = self.pool
        while True:
            try:
                job = self.jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with pool.lock:
                    if self in pool.idle:  # nobody handed this thread a job meanwhile
                        pool.idle.remove(self)
                        return
                continue
            job()
            del job
            with pool.lock:
                pool.idle.append(self)


class _Pool:
    """Idle daemon threads, reused across runs and event loops (no per-run state)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[_Worker] = []

    def submit(self, job: Callable[[], None]) -> None:
        with self.lock:
            worker = self.idle.pop() if self.idle else None
        if worker is None:
            worker = _Worker(self)
            worker.start()
        worker.jobs.put(job)


_POOL = _Pool()


async def run_sync(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a worker thread; cancellable (a timeout, Ctrl-C) at any moment.

    On cancellation the caller returns at once and the call is abandoned: it finishes in
    its thread and its result is dropped.
    """
    limiter = _LIMITER.get() or anyio.to_thread.current_default_thread_limiter()
    async with limiter:
        done = anyio.Event()
        call_soon = threadsafe_caller()
        outcome: list[tuple[bool, Any]] = []
        context = copy_context()  # the call sees the caller's context variables

        def job() -> None:
            try:
                outcome.append((True, context.run(fn, *args)))
            except BaseException as exc:  # handed to the caller, who re-raises it
                outcome.append((False, exc))
            call_soon(done.set)

        _POOL.submit(job)
        await done.wait()
    ok, value = outcome[0]
    if not ok:
        raise value
    result: T = value
    return result
