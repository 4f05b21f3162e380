"""Where results go as cells finish, and where runs are kept.

* :class:`Store` — the embedded run store (SQLite, ``.benchkit/benchkit.db`` by default;
  see docs/store.md): every run's cells as they finish, resume by key, run history
  (:meth:`Store.runs`, :meth:`Store.load`, :meth:`Store.cells` for one page of a run,
  :meth:`Store.delete`, :meth:`Store.export`),
  :func:`compare_runs` for two runs, and the LLM response cache. Beside each run it keeps
  what its tasks were, each cell's transcript and earlier attempts, and people's
  :class:`Rating` of cells (:meth:`Store.rate`, :meth:`Store.ratings`), with an outputs
  matrix and full-text search over them (:meth:`Store.matrix`, :meth:`Store.search`). ``benchkit.run`` and
  ``python -m benchkit run`` write to it by default.
* :class:`JsonlSink` appends one JSON line per finished cell (flushed at once, so a crash
  loses nothing that finished) and writes the final :class:`~benchkit.results.RunResult`
  beside it. :func:`read_jsonl` reads such a file back.

The SQLite parts are imported on first use, so ``from benchkit.store import JsonlSink``
stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr
from benchkit.errors import RunNotFoundError, StoreError
from benchkit.store._jsonl import JsonlSink, read_jsonl

if TYPE_CHECKING:
    from benchkit.store._compare import (
        ConditionComparison,
        RegressionCheck,
        RunComparison,
        check_regressions,
        compare_runs,
    )
    from benchkit.store._records import CellPage, RunSession, RunSummary
    from benchkit.store._resume import PreparedRun
    from benchkit.store._sqlite import Store
    from benchkit.store._story import Rating
    from benchkit.store._writer import StoreSink

__all__ = [
    "CellPage",
    "ConditionComparison",
    "JsonlSink",
    "PreparedRun",
    "Rating",
    "RegressionCheck",
    "RunComparison",
    "RunNotFoundError",
    "RunSession",
    "RunSummary",
    "Store",
    "StoreError",
    "StoreSink",
    "check_regressions",
    "compare_runs",
    "read_jsonl",
]

_LAZY = {
    "ConditionComparison": "benchkit.store._compare",
    "RunComparison": "benchkit.store._compare",
    "compare_runs": "benchkit.store._compare",
    "RegressionCheck": "benchkit.store._compare",
    "check_regressions": "benchkit.store._compare",
    "Rating": "benchkit.store._story",
    "CellPage": "benchkit.store._records",
    "PreparedRun": "benchkit.store._resume",
    "RunSession": "benchkit.store._records",
    "RunSummary": "benchkit.store._records",
    "Store": "benchkit.store._sqlite",
    "StoreSink": "benchkit.store._writer",
}


# Only at run time: a type checker sees the names declared under TYPE_CHECKING above and
# nothing else, so a typo such as `benchkit.Runer` is an error, not Any.
if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _LAZY)
