"""The embedded run store: every finished cell in one SQLite file, for resume and history.

:class:`Store` is the file (``.benchkit/benchkit.db`` unless told otherwise) and the one
object through which a program — or the server — opens it. It answers from four jobs,
each a module of its own:

* history reads — :mod:`benchkit.store._queries`, the one read model the server shares
  (:attr:`Store.reader`): runs, summaries, loads, pages of cells, comparisons, a cell's
  story;
* the writer — :mod:`benchkit.store._writer`: a :class:`StoreSink` hands each finished
  cell to a writer thread that commits them in small batches, so the event loop never
  waits on the disk;
* resume planning — :mod:`benchkit.store._resume`: what :meth:`Store.prepare` reuses;
* the LLM response cache — :mod:`benchkit.store._cache`.

Every method is a plain synchronous call, safe from any thread (each thread reads and
writes through a connection of its own).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TextIO

from benchkit._public import public
from benchkit.errors import ConfigError
from benchkit.model import EvaluatorSpec, Suite
from benchkit.registry import Registries, default_registries
from benchkit.results import CellResult, RunResult
from benchkit.serde import converter
from benchkit.store._cache import cache_get, cache_put
from benchkit.store._keys import suite_keys
from benchkit.store._queries import RUN_ORDER, CellFilter, RunFilter, StoreReader, glob_literal
from benchkit.store._records import ENCODER as _ENCODER
from benchkit.store._records import (
    CellPage,
    RunSession,
    RunStatus,
    RunSummary,
    effective_status,
    refuse_if_running,
)
from benchkit.store._resume import PreparedRun, plan
from benchkit.store._schema import transaction
from benchkit.store._story import MAX_RATERS_PER_CELL, RUN_TABLES, Rating, drop_search_rows
from benchkit.store._writer import StoreSink
from benchkit.transcript import Transcript

if TYPE_CHECKING:
    from benchkit.store._compare import RunComparison

__all__ = [
    "DEFAULT_STORE",
    "CellPage",
    "PreparedRun",
    "RunSession",
    "RunStatus",
    "RunSummary",
    "Store",
    "StoreSink",
    "effective_status",
    "resolve_store_path",
]

#: Where the store lives when neither an argument nor ``BENCHKIT_STORE`` says otherwise.
DEFAULT_STORE = Path(".benchkit") / "benchkit.db"


def resolve_store_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The store file: ``path``, else ``$BENCHKIT_STORE``, else ``./.benchkit/benchkit.db``."""
    if path is None:
        path = os.environ.get("BENCHKIT_STORE") or DEFAULT_STORE
    return Path(path).expanduser().absolute()


@public("benchkit.store")
class Store:
    """The run store: an SQLite file holding runs, their cells, and the LLM response cache.

    ``path`` defaults to ``$BENCHKIT_STORE``, else ``.benchkit/benchkit.db`` under the
    working directory. ``timeout`` is how long (seconds) to wait for another process's
    write lock before giving up. Nothing is opened until first use; a store that does not
    exist yet is created by the first write (reading one lists no runs). Close it with
    :meth:`close` or use it as a context manager::

        with Store("results/benchkit.db") as store:
            result = benchkit.run(suite, store=store, resume=True)
            print([r.run_id for r in store.runs()])

    :attr:`reader` is the store's query layer (one connection per thread), through which
    every method below reads; the server answers from it too.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, timeout: float = 30.0):
        self.path = resolve_store_path(path)
        self.timeout = timeout
        self.reader = StoreReader(self.path, timeout=timeout)

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close this object's connections (a later call opens new ones)."""
        self.reader.close()

    def _write(self, doing: str) -> sqlite3.Connection:
        """This thread's connection, for a write (the store is created if needed)."""
        with self.reader.doing(doing):
            return self.reader._db()

    # -- history -----------------------------------------------------------------------

    def runs(self, *, benchmark: str | None = None, limit: int | None = None) -> list[RunSummary]:
        """The stored runs, newest first; only ``benchmark``'s when given, at most ``limit``."""
        found, _ = self.reader.runs(RunFilter(benchmark=benchmark), limit=limit, sessions=True)
        return found

    def summary(self, run_id: str) -> RunSummary:
        """One run's summary, with every session (start and resumes) in order.

        ``run_id`` may be a unique prefix of the id, ``latest``, or ``-1``, ``-2``... (newest first).
        """
        return self.reader.summary(self.reader.resolve(run_id, "read a run"))

    def load(self, run_id: str, *, cells: bool = True) -> RunResult:
        """The run as a :class:`RunResult`: its stored cells, with the aggregates a
        finished run stored when it finished (the same figures its cells give; recomputed
        from them for a run that stored none).

        ``run_id`` may be a unique prefix of the id, ``latest``, or ``-1``, ``-2``... (newest first). A run that did not finish loads with
        ``interrupted=True`` and ``not_run`` counting the cells it lacks.

        With ``cells=False`` the result has no cells (``cells == ()``) and the rest —
        aggregates, groups, comparisons — is what the run stored when it finished, so
        the read does not depend on the run's size (what ``runs show`` prints). A run that
        stored none (it did not finish, was resumed since, or was stored by a benchkit
        before schema 3) is loaded in full and its cells dropped: the same figures.
        """
        return self.reader.load(self.reader.resolve(run_id, "load a run"), cells=cells)

    def delete(self, run_id: str) -> int:
        """Delete a run and its cells; returns how many cells went with it.

        ``run_id`` may be a unique prefix (or ``latest``, ``-2``...). A run still running in a live process on this
        host is refused. SQLite keeps the freed pages for reuse; ``VACUUM`` shrinks the file.
        """
        rid = self.reader.resolve(run_id, "delete a run")
        with self.reader.doing("delete a run"):
            db = self.reader._db()
            with transaction(db):
                refuse_if_running(db, rid, "delete it")
                (count,) = db.execute(
                    "SELECT COUNT(*) FROM cells WHERE run_id = ?", (rid,)
                ).fetchone()
                for table in RUN_TABLES:
                    db.execute(f"DELETE FROM {table} WHERE run_id = ?", (rid,))
                drop_search_rows(db, rid)
            return int(count)

    def export(
        self, run_id: str, out: TextIO, *, format: Literal["json", "jsonl"] = "json"
    ) -> None:
        """Write a run to ``out``: ``json`` is the :class:`RunResult` (what ``run -o``
        writes); ``jsonl`` is the cells file :class:`~benchkit.store.JsonlSink` writes (a
        run line, a line per cell, an end line), readable by ``benchkit report``. People's
        ratings of the run's cells come along: a ``ratings`` list in the JSON, a
        ``{"rating": ...}`` line each in the JSONL (both only when there are some)."""
        result = self.load(run_id)
        rated = [r.to_dict() for r in self.ratings(result.run_id)]
        if format == "json":
            if not rated:
                out.write(result.to_json() + "\n")
                return
            data = json.loads(result.to_json())
            data["ratings"] = rated
            out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
            return
        if format != "jsonl":
            raise ConfigError(f"unknown export format {format!r}", fix="use json or jsonl.")
        encode = _ENCODER.encode
        out.write(encode({"run": converter.unstructure(result.info)}) + "\n")
        for cell in result.cells:
            out.write(encode({"cell": converter.unstructure(cell)}) + "\n")
        for rating in rated:
            out.write(encode({"rating": rating}) + "\n")
        end = {"interrupted": result.interrupted, "not_run": result.not_run}
        out.write(encode({"end": end}) + "\n")

    def cells(
        self,
        run_id: str,
        *,
        offset: int = 0,
        limit: int = 100,
        condition: str | None = None,
        status: str | Sequence[str] | None = None,
        task: str | None = None,
    ) -> CellPage:
        """One page of a run's cells, in run order (task position, then the run's condition
        order, then epoch), without reading the rest of the run.

        ``offset`` and ``limit`` pick the page among the cells that pass the filters:
        ``condition`` (a condition id), ``status`` (``pass``, ``fail``, ``error``,
        ``timeout``, or several) and ``task`` (a task id). ``CellPage.total`` counts the
        cells that pass the filters, for a pager. ``run_id`` may be a unique prefix. Reads
        walk the store's index of run order, so a page costs about the same in a run of a
        hundred cells as in one of a million (the offset is stepped over in the index)::

            page = store.cells(run_id, offset=0, limit=50, status=["fail", "error"])
            for cell in page.cells: ...
        """
        if offset < 0 or limit < 0:
            raise ConfigError(
                f"offset and limit must be >= 0, got offset={offset}, limit={limit}",
                fix="count pages from offset 0.",
            )
        where = CellFilter(
            conditions=() if condition is None else (condition,),
            statuses=()
            if status is None
            else (status,)
            if isinstance(status, str)
            else tuple(status),
            task=None if task is None else glob_literal(task),
        )
        page = self.reader.cells(
            self.reader.resolve(run_id, "read a run's cells"),
            where,
            sort=RUN_ORDER,
            limit=limit,
            offset=offset,
        )
        _ = page.cells  # decoded now, so a record benchkit cannot read fails here
        return page

    def compare(
        self, run_a: str, run_b: str, *, pairs: Sequence[tuple[str, str]] | None = None
    ) -> RunComparison:
        """Run ``run_b`` against run ``run_a`` (ids or unique prefixes), task by task: see
        :func:`~benchkit.store.compare_runs`.

        Only what a comparison reads is loaded: each cell's ids, status and score, straight
        from the store's columns (the score from its JSON inside SQLite), not whole cells
        nor the runs' aggregates.
        """
        resolve = self.reader.resolve
        found_a, found_b = resolve(run_a, "load a run"), resolve(run_b, "load a run")
        return self.reader.compare(found_a, found_b, pairs=pairs)

    # -- running -----------------------------------------------------------------------

    def prepare(
        self,
        suite: Suite,
        *,
        run_id: str | None = None,
        resume: bool = False,
        retry_errors: bool = False,
        replace: bool = False,
        registries: Registries | None = None,
        rerun: Sequence[tuple[str, str | None, int | None]] = (),
    ) -> PreparedRun:
        """Get a run of ``suite`` ready to go into this store.

        Without ``resume`` it is a new run (``run_id``, else a fresh id; an explicit id that
        is already stored is an error unless ``replace`` says to replace that run, and a
        deterministic run's derived id replaces the stored run of that id). With ``resume`` it continues run ``run_id``, else the latest run
        with the same suite key; its stored cells whose keys still match are reused, the
        others run again. ``retry_errors`` (which implies ``resume``) also runs the errored
        and timed-out cells again. With nothing to resume it starts a new run
        (``PreparedRun.resumed`` is false).

        ``rerun`` (which needs ``resume`` and a ``run_id``) runs the chosen cells again as
        new attempts, keeping the earlier ones (:meth:`cell_attempts`): each item is
        ``(task_id, condition_id or None for every condition, epoch or None for every
        epoch)``. Statistics use each cell's latest attempt.

        The run's tasks are stored as they are now (once per task), so the store alone
        shows them later (:meth:`task`), whatever the run's origin.

        ``registries`` must be the ones the run uses (evaluator versions are part of the
        keys). Then run it with the returned sink, id and done cells::

            prepared = store.prepare(suite, resume=True)
            runner = Runner(sinks=[prepared.sink])
            result = await runner.run(suite, run_id=prepared.run_id, done=prepared.done)
        """
        resume = resume or retry_errors or bool(rerun)
        if rerun and not run_id:
            raise ConfigError(
                "re-running cells needs the run's id", fix="pass run_id= the run to re-run in."
            )
        self._write("open the store")  # fail early (damaged, newer, not writable)
        keys = suite_keys(suite, registries or default_registries())
        with self.reader.doing("look up earlier runs"):
            return plan(
                self,
                self.reader,
                self.reader._db(),
                suite,
                keys,
                run_id=run_id,
                resume=resume,
                retry_errors=retry_errors,
                replace=replace,
                rerun=rerun,
            )

    def rescore(
        self,
        run: str,
        evaluators: Sequence[EvaluatorSpec | str],
        *,
        run_id: str | None = None,
        registries: Registries | None = None,
    ) -> RunResult:
        """Grade run ``run``'s stored outputs again with ``evaluators`` (specs or type
        names), as a new run in this store; returns it.

        The system under test is not called: each cell's stored response is graded by the
        new evaluators (LLM judges through this store's reply cache), the parent's
        verifiers' verdicts are carried over as they were, and a cell that errored before
        answering errors again. The tasks are the run's task snapshots, so any run can be
        rescored — of any format, started from the CLI, Python or the server — once it has
        finished. The new run records its parent (``info.parent_run_id``); ``compare``
        the two to see what the new scorer changed. ``run`` may be a unique prefix,
        ``latest``, ``-2``...; ``run_id`` names the new run.

        .. versionadded:: 0.2.0
        """
        from benchkit.runner import Runner, sync_run
        from benchkit.store._rescore import Parented, rescore_suite, snapshots, with_parent

        parent = self.load(run)
        own = (registries or default_registries()).copy()
        suite = rescore_suite(parent, snapshots(self.reader, parent.run_id), evaluators, own)
        prepared = self.prepare(suite, run_id=run_id, registries=own)
        sink = Parented(prepared.sink, parent.run_id)
        runner = Runner(sinks=[sink], response_cache=self, registries=own)
        result = sync_run(suite, runner=runner, run_id=prepared.run_id, done=prepared.done)
        return with_parent(result, parent.run_id)

    # -- a cell's story: tasks, transcripts, attempts, ratings, matrix, search ----------

    def task(self, run_id: str, task_id: str) -> dict[str, Any] | None:
        """What the run's task ``task_id`` was when the run was prepared (id, input,
        expected, tags, metadata...), or None for a run stored before schema 5 or a task
        the run does not have."""
        return self.reader.task_data(self.reader.resolve(run_id, "read a run's task"), task_id)

    def transcript(
        self,
        run_id: str,
        task_id: str,
        condition_id: str,
        epoch: int = 0,
        *,
        attempt: int | None = None,
    ) -> Transcript | None:
        """The transcript of a cell (its latest attempt unless ``attempt`` is given), or
        None when nothing was recorded."""
        key = (task_id, condition_id, int(epoch))
        rid = self.reader.resolve(run_id, "read a cell's transcript")
        return self.reader.transcript(rid, key, attempt)

    def cell_attempts(
        self, run_id: str, task_id: str, condition_id: str, epoch: int = 0
    ) -> list[CellResult]:
        """Every stored attempt of a cell, oldest first; the last is the latest (the one
        statistics use). Empty when the run has no such cell."""
        key = (task_id, condition_id, int(epoch))
        return self.reader.cell_attempts(self.reader.resolve(run_id, "read a cell's attempts"), key)

    def rate(
        self,
        run_id: str,
        task_id: str,
        condition_id: str,
        epoch: int = 0,
        *,
        rater: str,
        verdict: bool | None = None,
        score: float | None = None,
        comment: str = "",
        max_raters: int = MAX_RATERS_PER_CELL,
    ) -> Rating:
        """Store ``rater``'s rating of a cell (replacing their earlier one): a pass/fail
        ``verdict``, a ``score`` in [0, 1], or both, and a ``comment``. A cell keeps at
        most ``max_raters`` raters (a new one beyond is a ``TooManyRatings`` error)::

            store.rate(run_id, "t1", "baseline", 0, rater="ana", verdict=False,
                       comment="answers a different question")
        """
        from benchkit.store import _story

        rid = self.reader.resolve(run_id, "rate a cell")
        with self.reader.doing("rate a cell"):
            db = self.reader._db()
            with transaction(db):
                return _story.rate(
                    db,
                    rid,
                    task_id,
                    condition_id,
                    int(epoch),
                    rater=rater,
                    verdict=verdict,
                    score=score,
                    comment=comment,
                    max_raters=max_raters,
                )

    def unrate(self, run_id: str, task_id: str, condition_id: str, epoch: int, rater: str) -> bool:
        """Delete ``rater``'s rating of a cell; whether there was one."""
        rid = self.reader.resolve(run_id, "delete a rating")
        with self.reader.doing("delete a rating"):
            db = self.reader._db()
            with transaction(db):
                gone = db.execute(
                    "DELETE FROM ratings WHERE run_id = ? AND task_id = ? AND condition_id = ? "
                    "AND epoch = ? AND rater = ?",
                    (rid, task_id, condition_id, int(epoch), rater),
                ).rowcount
        return bool(gone)

    def ratings(self, run_id: str) -> list[Rating]:
        """A run's ratings (every rater's), in run order."""
        return self.reader.ratings(self.reader.resolve(run_id, "read a run's ratings"))

    def rating_labels(
        self, run_id: str, *, rater: str | None = None
    ) -> dict[tuple[str, str, int], bool | float]:
        """The run's ratings as ``(task_id, condition, epoch) -> verdict`` (a bool), or
        the score (a float) where a rating has no verdict — what agreement statistics
        between judges and people take. With several raters a cell's latest rating counts
        (only ``rater``'s when given)."""
        from benchkit.store._story import rating_labels

        return rating_labels(self.ratings(run_id), rater)

    def matrix(self, run_id: str, **filters: Any) -> dict[str, Any]:
        """One page of the outputs matrix (tasks × conditions or epochs), as the server's
        ``/matrix`` route answers it; ``filters`` are its query parameters (``by``,
        ``epoch``, ``condition``, ``offset``, ``limit``, ``only``, ``tag``, ``q``,
        ``rated``). See docs/explorer.md."""
        return self.reader.matrix(self.reader.resolve(run_id, "read a run's matrix"), **filters)

    def search(
        self, text: str, *, run_id: str | None = None, limit: int = 50
    ) -> tuple[list[dict[str, Any]], int]:
        """Cells whose input, expected output, output or reasons hold every word of
        ``text`` (the last one as a prefix), in one run or the whole store, best first:
        at most ``limit`` of them, and how many match. Uses SQLite's FTS5 index, built per
        run on first search and rebuilt when the run changes."""
        rid = None if run_id is None else self.reader.resolve(run_id, "search the store")
        return self.reader.search(text, run_id=rid, limit=limit)

    # -- the LLM response cache -----------------------------------------------------

    def cache_get(self, key: str) -> str | None:
        """The cached value (JSON text) under ``key``, or None; counts the hit."""
        with self.reader.doing("read the LLM cache"):
            db = self.reader._existing()
            return None if db is None else cache_get(db, key)

    def cache_put(self, key: str, value: str) -> None:
        """Store ``value`` (JSON text) under ``key``, replacing what was there."""
        with self.reader.doing("write the LLM cache"):
            cache_put(self.reader._db(), key, value)
