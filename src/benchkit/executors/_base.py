"""The executor protocol and the view of a run that the Runner hands an executor."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

import anyio

from benchkit.model import Condition, Suite, Task
from benchkit.registry import Registries
from benchkit.results import CellResult

__all__ = ["CellItem", "CellWork", "CellsHere", "Executor", "RemoteCells", "start_workers"]

#: One cell to run: (task index, task, condition index, condition, epoch).
CellItem = tuple[int, Task, int, Condition, int]


class CellsHere(Protocol):
    """A run's cells made runnable in the process that opened them (see :class:`RemoteCells`)."""

    async def run(self, index: int, task: Task, cond_index: int, epoch: int) -> CellResult:
        """Run one cell here; the same result the Runner would produce in-process."""
        ...


class RemoteCells(Protocol):
    """What another process needs to run any cell of a run; it pickles.

    It holds the suite without its tasks (each cell is sent with its task), the run id,
    the registries and ``keep_raw``. :meth:`open`, called where the cells will run, builds
    the providers and plug-ins there: the Runner's own is
    :func:`benchkit.runner.open_cells`, which an executor of another kind may call too.
    """

    @property
    def suite(self) -> Suite: ...

    def with_suite(self, suite: Suite) -> RemoteCells:
        """A copy for a changed suite (an executor moving paths, say)."""
        ...

    def open(self) -> AbstractAsyncContextManager[CellsHere]:
        """Build the providers and plug-ins in this process (raising what a bad spec
        raises) and enter those that keep a session; leaving the block closes them. Enter
        and leave it in one task."""
        ...


class CellWork(Protocol):
    """One run as an executor sees it: the cells to run and where finished ones go.

    ``todo`` is one iterator shared by every worker of the executor (each cell is taken
    once); ``record`` hands a finished cell back to the Runner (sinks, stream, progress)
    and returns False when the run should stop taking cells.
    """

    @property
    def suite(self) -> Suite: ...

    @property
    def todo(self) -> Iterator[CellItem]: ...

    async def run_cell(self, item: CellItem) -> CellResult:
        """Run one cell here, in this process (honouring its condition's cap)."""
        ...

    def limiter(self, cond_index: int) -> anyio.CapacityLimiter | None:
        """The cap on cells of this condition in flight at once (None: no cap)."""
        ...

    async def record(self, cell: CellResult) -> bool:
        """Hand a finished cell to the Runner; False means stop taking cells."""
        ...

    def remote(self) -> RemoteCells:
        """What to send to another process so it can run this run's cells."""
        ...

    def lost_cell(self, item: CellItem, message: str, attempts: int) -> CellResult:
        """The errored cell to record for a cell that could not be run to the end."""
        ...

    def fail(self, exc: Exception) -> None:
        """Stop the run because of ``exc`` (the Runner re-raises it when all is closed)."""
        ...


@runtime_checkable
class Executor(Protocol):
    """Decides where a run's cells run.

    ``check`` is called before the run starts (before the store or any sink opens) and
    raises a :class:`~benchkit.errors.BenchkitError` when the suite cannot run on this
    executor, saying why and what to do instead. ``execute`` runs every cell of ``work``
    and returns when the cells are exhausted or the run is stopped.
    """

    @property
    def in_process(self) -> bool:
        """True when cells run in the Runner's process, which then builds the providers;
        False when they run elsewhere (the executor has them built there)."""
        ...

    def check(self, suite: Suite, registries: Registries) -> None: ...

    async def execute(self, work: CellWork) -> None: ...


def start_workers(
    tg: anyio.abc.TaskGroup,
    count: int,
    todo: Iterator[CellItem],
    worker: Callable[[int, Iterator[CellItem]], Coroutine[Any, Any, None]],
) -> None:
    """Start at most ``count`` workers in ``tg``, and never more than there are cells.

    A worker is started only with a cell in hand: worker 0 with the first cell, and each
    worker, as it begins, takes the next cell from ``todo`` for the next worker while
    fewer than ``count`` run. So ``concurrency: 1000`` on a 4-cell run starts 4 workers,
    not 1,000 (each holding memory for nothing). ``worker(number, cells)`` gets its number
    (0, 1, ...) and the cells it runs: its first one, then whatever it takes from ``todo``.
    """
    first = next(todo, None)
    if first is None or count < 1:
        return

    def start(number: int, item: CellItem) -> None:
        tg.start_soon(worker, number, _cells(number, item, todo, count, start))

    start(0, first)


def _cells(
    number: int,
    first: CellItem,
    todo: Iterator[CellItem],
    count: int,
    start: Callable[[int, CellItem], None],
) -> Iterator[CellItem]:
    if number + 1 < count:
        following = next(todo, None)
        if following is not None:
            start(number + 1, following)
    yield first
    # Not `yield from`: closing this worker's generator (a cancelled worker) must not close
    # the shared iterator, which the Runner still reads to count the cells not run.
    for item in todo:  # noqa: UP028
        yield item
