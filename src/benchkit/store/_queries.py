"""Read queries over the run store for servers: filtered, sorted, paged in SQL.

A run of 100,000 cells must page as fast as a run of 100, so nothing here loads a whole
run: filters and sorting are ``WHERE`` / ``ORDER BY`` clauses over indexed columns, a page
is ``LIMIT`` / ``OFFSET``, and a cell's JSON leaves SQLite as the text it was stored as
(a server splices it into its response without decoding it).

:class:`StoreReader` keeps one read connection per thread, so many requests read at
once (SQLite's WAL lets readers run beside the writer); :meth:`StoreReader.ensure_indexes`
adds the two indexes paging needs. They are plain indexes (``IF NOT EXISTS``), not a
schema change: a store that has them stays readable by every benchkit of the same schema.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

from benchkit.errors import BenchkitError, RunNotFoundError
from benchkit.store._schema import connect, store_error
from benchkit.store._sqlite import RunStatus, effective_status

__all__ = ["CELL_SORTS", "CellFilter", "CellPage", "RunFilter", "RunRow", "StoreReader"]

#: Sort keys for :meth:`StoreReader.cells` and the SQL each orders by (ties: benchmark order).
CELL_SORTS: dict[str, str] = {
    "position": "position",
    "task": "task_id",
    "condition": "condition_id",
    "status": "status",
    "epoch": "epoch",
    "score": "json_extract(data, '$.score')",
    "duration": "json_extract(data, '$.duration_ms')",
}
_TIEBREAK = "position, condition_id, epoch, task_id"

#: How many (run, filter) cell counts :class:`StoreReader` keeps for finished runs.
_COUNTS_KEPT = 4096
#: How many sort orders of finished runs it keeps (8 bytes a cell each).
_ORDERS_KEPT = 16

_INDEXES = (
    "CREATE INDEX IF NOT EXISTS cells_by_position ON cells (run_id, position, condition_id, epoch)",
    "CREATE INDEX IF NOT EXISTS cells_by_status ON cells "
    "(run_id, status, position, condition_id, epoch)",
)


@attrs.frozen
class RunFilter:
    """Which runs to list: by benchmark id, source format, status, start time (ISO text,
    ``since`` inclusive, ``until`` exclusive)."""

    benchmark: str | None = None
    format: str | None = None
    status: RunStatus | None = None
    since: str | None = None
    until: str | None = None


@attrs.frozen
class RunRow:
    """One run as a list shows it (no sessions, no cells)."""

    run_id: str
    benchmark_id: str
    benchmark_name: str | None
    source_format: str
    source_path: str | None
    conditions: tuple[str, ...]
    status: RunStatus
    started_at: str
    updated_at: str
    finished_at: str | None
    cells: int
    errors: int
    total_cells: int


@attrs.frozen
class CellFilter:
    """Which cells of a run: condition ids, statuses, a task id glob (``*``, ``?``,
    ``[...]``, case-sensitive), a tag."""

    conditions: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    task: str | None = None
    tag: str | None = None


@attrs.frozen
class CellPage:
    """One page of cells: each cell's stored JSON text, and how many cells match in all."""

    cells: tuple[str, ...]
    total: int


class StoreReader:
    """Read-only queries on the store at ``path``, one SQLite connection per thread."""

    def __init__(self, path: Path, *, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, CellFilter], tuple[str, int]] = {}
        self._orders: dict[tuple[str, CellFilter, str, str], tuple[str, array[int]]] = {}
        self._outlines: dict[Any, Any] = {}  # the outputs matrix's, see _story.matrix
        self._indexing = threading.Lock()  # one search-index build at a time
        self._outlining = threading.Lock()  # one matrix-outline build at a time
        self._warming: set[str] = set()

    def _db(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, timeout=self.timeout)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def close(self) -> None:
        """Close every thread's connection."""
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()

    def ensure_indexes(self) -> None:
        """Create the indexes paging uses, when the store lacks them."""
        try:
            db = self._db()
            for statement in _INDEXES:
                db.execute(statement)
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, "index the store for paging") from exc

    def _run_exists(self, db: sqlite3.Connection, run_id: str) -> None:
        if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
            raise RunNotFoundError(f"no run {run_id!r} in the store")

    # -- runs ----------------------------------------------------------------------------

    def runs(
        self, where: RunFilter = RunFilter(), *, limit: int = 50, offset: int = 0
    ) -> tuple[list[RunRow], int]:
        """The runs that match, newest first: one page, and how many match in all."""
        clauses: list[str] = []
        params: list[Any] = []
        if where.benchmark is not None:
            clauses.append("benchmark_id = ?")
            params.append(where.benchmark)
        if where.format is not None:
            clauses.append("json_extract(info, '$.source_format') = ?")
            params.append(where.format)
        if where.since is not None:
            clauses.append("started_at >= ?")
            params.append(where.since)
        if where.until is not None:
            clauses.append("started_at < ?")
            params.append(where.until)
        sql = "SELECT run_id, status, pid, host FROM runs"
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        sql += " ORDER BY started_at DESC, rowid DESC"
        try:
            db = self._db()
            ids = [
                run_id
                for run_id, status, pid, host in db.execute(sql, params)
                if where.status is None or effective_status(status, pid, host) == where.status
            ]
            return [self._row(db, run_id) for run_id in ids[offset : offset + limit]], len(ids)
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, "list runs") from exc

    def run(self, run_id: str) -> RunRow:
        """One run's row; :class:`RunNotFoundError` when it is not stored."""
        try:
            db = self._db()
            self._run_exists(db, run_id)
            return self._row(db, run_id)
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, "read a run") from exc

    def _row(self, db: sqlite3.Connection, run_id: str) -> RunRow:
        """A run as lists show it. A finished run's cell counts are the ones it stored when
        it finished (schema 3), so a list costs the same whatever the runs' sizes; only a
        run without them (running, interrupted before its end, resumed since) is counted."""
        row = db.execute(
            "SELECT benchmark_id, status, pid, host, started_at, updated_at, finished_at, "
            "total_cells, info, stored_cells, stored_errors FROM runs WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        info = json.loads(row[8])
        cells, errors = row[9], row[10]
        if cells is None or errors is None:
            cells, errors = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(status IN ('error', 'timeout')), 0) "
                "FROM cells WHERE run_id = ?",
                (run_id,),
            ).fetchone()
        return RunRow(
            run_id=run_id,
            benchmark_id=row[0],
            benchmark_name=info.get("benchmark_name"),
            source_format=str(info.get("source_format", "")),
            source_path=info.get("source_path"),
            conditions=tuple(c["id"] for c in info.get("conditions", ())),
            status=effective_status(row[1], row[2], row[3]),
            started_at=row[4],
            updated_at=row[5],
            finished_at=row[6],
            cells=int(cells),
            errors=int(errors),
            total_cells=int(row[7]),
        )

    # -- cells ---------------------------------------------------------------------------

    def cells(
        self,
        run_id: str,
        where: CellFilter = CellFilter(),
        *,
        sort: str = "position",
        order: Literal["asc", "desc"] = "asc",
        limit: int = 100,
        offset: int = 0,
    ) -> CellPage:
        """One page of a run's cells that match ``where``, sorted by ``sort`` (a key of
        :data:`CELL_SORTS`) in ``order``."""
        clauses = ["run_id = ?"]
        params: list[Any] = [run_id]
        for column, values in (("condition_id", where.conditions), ("status", where.statuses)):
            if values:
                clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        if where.task is not None:
            clauses.append("task_id GLOB ?")
            params.append(where.task)
        if where.tag is not None:
            clauses.append("EXISTS (SELECT 1 FROM json_each(data, '$.tags') WHERE value = ?)")
            params.append(where.tag)
        condition = " AND ".join(clauses)
        direction = "DESC" if order == "desc" else "ASC"
        key = CELL_SORTS[sort]
        ordering = (
            f"position {direction}, condition_id {direction}, epoch {direction}"
            if key == "position"
            else f"{key} {direction}, {_TIEBREAK}"
        )
        try:
            db = self._db()
            state = db.execute(
                "SELECT status, updated_at FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if state is None:
                raise RunNotFoundError(f"no run {run_id!r} in the store")
            # A finished run's cells do not change until it is resumed (which moves its
            # updated_at): its counts are cached, so a page costs only the page.
            count_key = (run_id, where)
            cached = self._counts.get(count_key)
            if state[0] == "finished" and cached is not None and cached[0] == state[1]:
                total = cached[1]
            else:
                (total,) = db.execute(
                    f"SELECT COUNT(*) FROM cells WHERE {condition}", params
                ).fetchone()
                if state[0] == "finished":
                    if len(self._counts) >= _COUNTS_KEPT:
                        self._counts.clear()
                    self._counts[count_key] = (state[1], int(total))
            if key == "position" or state[0] != "finished":
                rows = db.execute(
                    f"SELECT data FROM cells WHERE {condition} ORDER BY {ordering} "
                    "LIMIT ? OFFSET ?",
                    [*params, limit, offset],
                ).fetchall()
                return CellPage(tuple(row[0] for row in rows), int(total))
            # Sorting on a JSON field has no index: a finished run's order (row ids) is
            # computed once per filter and sort and kept, and each page reads its rows.
            order_key = (run_id, where, sort, order)
            kept = self._orders.get(order_key)
            if kept is None or kept[0] != state[1]:
                ids = array(
                    "q",
                    (
                        r
                        for (r,) in db.execute(
                            f"SELECT rowid FROM cells WHERE {condition} ORDER BY {ordering}", params
                        )
                    ),
                )
                if len(self._orders) >= _ORDERS_KEPT:
                    self._orders.pop(next(iter(self._orders)), None)
                kept = (state[1], ids)
                self._orders[order_key] = kept
            page = list(kept[1][offset : offset + limit])
            found = (
                dict(
                    db.execute(
                        f"SELECT rowid, data FROM cells WHERE rowid IN ({', '.join('?' * len(page))})",
                        page,
                    ).fetchall()
                )
                if page
                else {}
            )
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, "read a run's cells") from exc
        return CellPage(tuple(found[r] for r in page if r in found), int(total))

    def pass_counts(self, run_ids: Sequence[str]) -> dict[str, dict[str, tuple[int, int]]]:
        """Per run, per condition: ``(passed cells, stored cells)`` — the runs list's pass
        rates. A finished run's come from the outcome it stored when it finished (its
        aggregates count cells); only the others are counted, in one grouped query over the
        status index, so a page of finished runs reads no cell."""
        out: dict[str, dict[str, tuple[int, int]]] = {}
        if not run_ids:
            return out
        marks = ", ".join("?" for _ in run_ids)
        try:
            db = self._db()
            counted: list[str] = []
            for run_id, outcome in db.execute(
                f"SELECT run_id, outcome FROM runs WHERE run_id IN ({marks})", tuple(run_ids)
            ).fetchall():
                aggregates = json.loads(outcome).get("aggregates") if outcome else None
                if not isinstance(aggregates, list):
                    counted.append(str(run_id))
                    continue
                out[str(run_id)] = {
                    str(a["condition_id"]): (int(a["passed"]), int(a["n"]))
                    for a in aggregates
                    if int(a["n"])
                }
            if counted:
                rows = db.execute(
                    "SELECT run_id, condition_id, SUM(status = 'pass'), COUNT(*) FROM cells "
                    f"WHERE run_id IN ({', '.join('?' for _ in counted)}) "
                    "GROUP BY run_id, condition_id",
                    tuple(counted),
                ).fetchall()
                for run_id, condition, passed, count in rows:
                    out.setdefault(str(run_id), {})[str(condition)] = (int(passed or 0), int(count))
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, "count a page of runs' passes") from exc
        return out

    # -- a cell's story (issue #25): tasks, transcripts, attempts, ratings, matrix ---------

    def _known(self, run_id: str) -> sqlite3.Connection:
        db = self._db()
        self._run_exists(db, run_id)
        return db

    def task(self, run_id: str, task_id: str) -> dict[str, Any] | None:
        """The run's snapshot of task ``task_id`` (every field present), or None."""
        from benchkit.store._story import task_view

        try:
            row = (
                self._known(run_id)
                .execute(
                    "SELECT data FROM tasks WHERE run_id = ? AND task_id = ?", (run_id, task_id)
                )
                .fetchone()
            )
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, "read a run's task") from exc
        return None if row is None else task_view(json.loads(row[0]))

    def cell_story(
        self, run_id: str, task_id: str, condition_id: str, epoch: int, attempt: int | None
    ) -> tuple[str, int, int, dict[str, Any]] | None:
        """A cell attempt's JSON text (the latest unless ``attempt``), its attempt number,
        how many attempts the cell has, and its transcript; None when there is no such
        cell or attempt."""
        from benchkit.store._story import cell_attempt, transcript_json

        key = (task_id, condition_id, epoch)
        try:
            db = self._known(run_id)
            found = cell_attempt(db, run_id, key, attempt)
            if found is None:
                return None
            data, number, attempts = found
            return data, number, attempts, transcript_json(db, run_id, key, number)
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, "read a cell") from exc

    def cells_of(
        self, run_id: str, task_id: str, condition_id: str | None, epoch: int | None
    ) -> int:
        """How many stored cells of task ``task_id`` match (a re-run's selection)."""
        sql = "SELECT COUNT(*) FROM cells WHERE run_id = ? AND task_id = ?"
        params: list[Any] = [run_id, task_id]
        if condition_id is not None:
            sql += " AND condition_id = ?"
            params.append(condition_id)
        if epoch is not None:
            sql += " AND epoch = ?"
            params.append(epoch)
        try:
            (count,) = self._known(run_id).execute(sql, params).fetchone()
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, "read a run's cells") from exc
        return int(count)

    def ratings(self, run_id: str) -> list[Any]:
        """The run's ratings (:class:`~benchkit.store.Rating`), in run order."""
        from benchkit.store._story import ratings

        try:
            return list(ratings(self._known(run_id), run_id))
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, "read a run's ratings") from exc

    def matrix(self, run_id: str, **filters: Any) -> dict[str, Any]:
        """One page of the outputs matrix (see :func:`benchkit.store._story.matrix`)."""
        from benchkit.store._story import matrix

        try:
            if filters.get("q"):
                self._index(run_id)
            db = self._known(run_id)
            if not any(filters.get(k) for k in ("only", "tag", "q", "rated")):
                return matrix(db, run_id, cache=self._outlines, **filters)
            with self._outlining:  # one outline build at a time: the next one finds it kept
                return matrix(db, run_id, cache=self._outlines, **filters)
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, "read a run's matrix") from exc

    def search(
        self, text: str, *, run_id: str | None = None, limit: int = 50
    ) -> tuple[list[dict[str, Any]], int]:
        """Cells matching ``text`` in one run or every run, best first."""
        from benchkit.store._story import search

        try:
            db = self._db()
            if run_id is not None:
                self._run_exists(db, run_id)
                ids = [run_id]
            else:
                ids = [r[0] for r in db.execute("SELECT run_id FROM runs")]
            if not ids:
                return [], 0
            for one in ids:
                self._index(one)
            return search(db, text, run_ids=ids, limit=limit)
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, "search the store") from exc

    def _index(self, run_id: str) -> None:
        """Bring ``run_id``'s search index up to date (one build at a time)."""
        from benchkit.store._story import ensure_search_index, fts5_available

        db = self._db()
        if not fts5_available(db):
            return  # search() says why
        with self._indexing:
            ensure_search_index(db, run_id)

    def warm_search(self, run_id: str) -> None:
        """Build ``run_id``'s matrix outline and search index in a background thread, so
        the explorer's first filter or search on a large run does not wait for them (the
        matrix route calls this). Errors are left for the requests themselves to report."""
        with self._lock:
            if run_id in self._warming:
                return
            self._warming.add(run_id)

        def build() -> None:
            try:
                # The default view's outline first (the first filter then answers at
                # once), then the search index.
                self.matrix(run_id, only="failures", limit=0)
                self._index(run_id)
            except (sqlite3.Error, BenchkitError):
                pass  # the request that needs it reports it
            finally:
                with self._lock:
                    self._warming.discard(run_id)

        threading.Thread(target=build, name=f"benchkit-index-{run_id}", daemon=True).start()

    def agreement(self, run_id: str) -> dict[str, Any]:
        """How many ratings the run has and, per evaluator, how often its verdict agrees
        with people's on the cells both judged (a rating's verdict, else score >= 0.5,
        against the evaluator's ``passed``), and Cohen's kappa of the two (None where it is
        undefined: fewer than two cells, or one side always says the same)."""
        from benchkit.agreement import cohen_kappa
        from benchkit.store._story import rating_labels, ratings

        try:
            db = self._known(run_id)
            found = ratings(db, run_id)
            labels = rating_labels(found)
            pairs: dict[str, tuple[list[bool], list[bool]]] = {}
            for (task_id, condition_id, epoch), label in labels.items():
                row = db.execute(
                    "SELECT data FROM cells WHERE run_id = ? AND task_id = ? AND "
                    "condition_id = ? AND epoch = ?",
                    (run_id, task_id, condition_id, epoch),
                ).fetchone()
                if row is None:
                    continue
                human = label if isinstance(label, bool) else label >= 0.5
                for score in json.loads(row[0]).get("scores", ()):
                    if score.get("error") is not None:
                        continue
                    judged, rated = pairs.setdefault(str(score.get("name", "")), ([], []))
                    judged.append(bool(score.get("passed")))
                    rated.append(human)
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, "read a run's ratings") from exc
        return {
            "count": len(found),
            "agreement": [
                {
                    "evaluator": name,
                    "n": len(judged),
                    "agree": sum(j == r for j, r in zip(judged, rated, strict=True)),
                    "kappa": cohen_kappa(judged, rated) if len(judged) >= 2 else None,
                }
                for name, (judged, rated) in sorted(pairs.items())
            ],
        }
