"""Where cells run: the seam between the Runner and the machines that run cells.

The :class:`~benchkit.Runner` decides *what* runs — the cells of a suite, their order, the
retries, what a finished cell becomes — and writes every finished cell to its sinks. An
executor decides *where* each cell runs: :class:`LocalExecutor` (the default) runs them on
the Runner's own event loop; :class:`RayExecutor` (extra ``benchkit[ray]``, imported on
first use) runs them on Ray actors and streams each result back to the driver, which stays
the single writer of the store and the sinks. See docs/scale-out.md.

An executor is any object shaped like :class:`Executor`; it is handed a :class:`CellWork`
for each run, whose :meth:`~CellWork.remote` is what another process needs to run the
cells (:class:`RemoteCells`, which pickles).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr
from benchkit.executors._base import CellItem, CellsHere, CellWork, Executor, RemoteCells
from benchkit.executors._local import LocalExecutor

if TYPE_CHECKING:
    from benchkit.executors._ray import RayExecutor

__all__ = [
    "CellItem",
    "CellWork",
    "CellsHere",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "RemoteCells",
]

__getattr__ = lazy_getattr(__name__, {"RayExecutor": "benchkit.executors._ray"})
