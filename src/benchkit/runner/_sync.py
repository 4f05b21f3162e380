"""The sync bridge: :func:`sync_run` runs a suite from synchronous code, inside a running
event loop (Jupyter) too, without nest_asyncio."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterable
from typing import Any

import anyio
import attrs

from benchkit.model import Suite
from benchkit.results import CellResult, RunResult
from benchkit.runner._runner import Runner

__all__ = ["sync_run"]


def sync_run(
    suite: Suite,
    *,
    runner: Runner | None = None,
    backend: str = "asyncio",
    run_id: str | None = None,
    done: Iterable[CellResult] = (),
) -> RunResult:
    """Run ``suite`` from synchronous code; works inside a running event loop (Jupyter).

    With no loop running in this thread it calls :func:`anyio.run`; with one running (a
    notebook) it runs the suite on a fresh loop in a worker thread and waits. Ctrl-C stops
    the run gracefully and returns the partial result (``interrupted=True``). ``done`` as
    for :meth:`Runner.run` (cells of an earlier run that a resume keeps).
    """
    runner = runner or Runner()
    in_loop = _loop_running()

    async def main() -> RunResult:
        return await runner.run(suite, run_id=run_id, done=done)

    if not in_loop:
        # Ctrl-C surfaces as KeyboardInterrupt, or as the main task's CancelledError when
        # asyncio's runner cannot tell the interrupt's cancel from another one.
        try:
            return anyio.run(main, backend=backend)
        except (KeyboardInterrupt, asyncio.CancelledError):
            if runner.last_result is None:
                raise
            return attrs.evolve(runner.last_result, interrupted=True)

    box: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            box["result"] = anyio.run(main, backend=backend)
        except BaseException as exc:  # re-raised in the calling thread
            box["error"] = exc
        finally:
            finished.set()

    thread = threading.Thread(target=target, name=f"benchkit-run-{id(suite):x}", daemon=True)
    thread.start()
    # Wait on an Event, never Thread.join: on Python <= 3.12 a KeyboardInterrupt inside
    # join() can mark the still-running thread as stopped (CPython gh-90882), so a later
    # join() returned at once, before the run had stored its result (KeyError: 'result').
    interrupted = False
    try:
        while not finished.is_set():
            try:
                finished.wait(0.05)
            except KeyboardInterrupt:
                if interrupted:  # a second Ctrl-C: stop waiting for the graceful stop
                    raise
                interrupted = True
                runner.cancel_threadsafe("signal")
    finally:
        if finished.is_set():
            # A cancel that came after the run had finished must not stop the next one.
            runner._runs.cancel_pending = False
    if "error" in box:
        raise box["error"]
    result: RunResult = box["result"]
    return result


def _loop_running() -> bool:
    """True when this thread is inside a running asyncio or trio event loop."""
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        pass
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
            return True
        except RuntimeError:
            pass
    return False
