"""The default executor: every cell on the Runner's own event loop, as before the seam."""

from __future__ import annotations

from collections.abc import Iterator

import anyio

from benchkit.executors._base import CellItem, CellWork, start_workers
from benchkit.model import Suite
from benchkit.registry import Registries

__all__ = ["LocalExecutor"]


class LocalExecutor:
    """Runs cells in this process: ``RunOptions.concurrency`` workers pull from one iterator.

    There is no task per cell, so a 200,000-cell run costs 200,000 loop iterations, and
    no more workers than cells (:func:`~benchkit.executors._base.start_workers`).
    """

    in_process = True

    def __repr__(self) -> str:
        return "LocalExecutor()"

    def check(self, suite: Suite, registries: Registries) -> None:
        """Everything that loads runs in-process; nothing to refuse."""

    async def execute(self, work: CellWork) -> None:
        async def worker(_number: int, cells: Iterator[CellItem]) -> None:
            await _worker(work, cells)

        async with anyio.create_task_group() as tg:
            try:
                start_workers(tg, work.suite.options.concurrency, work.todo, worker)
            except Exception as exc:  # taking the first cell failed (a bad streamed task)
                work.fail(exc)


async def _worker(work: CellWork, cells: Iterator[CellItem]) -> None:
    run_cell = work.run_cell
    record = work.record
    try:
        for item in cells:
            if not await record(await run_cell(item)):
                return
    except Exception as exc:
        # A broken evaluator spec or a failing sink stops the whole run; the Runner keeps
        # the first such error and re-raises it unwrapped once the workers are done.
        work.fail(exc)
