"""The run store's one read model: every query the public :class:`~benchkit.store.Store`
and the server answer, over one set of connections.

A run of 100,000 cells must page as fast as a run of 100, so nothing here loads a whole
run unless asked to (:meth:`StoreReader.load`, :meth:`StoreReader.outline`): filters and
sorting are ``WHERE`` / ``ORDER BY`` clauses over indexed columns, a page is ``LIMIT`` /
``OFFSET``, a cell's JSON leaves SQLite as the text it was stored as (a server splices it
into its response without decoding it; :attr:`CellPage.cells` decodes it on demand), and
a finished run's counts and aggregates are the ones it stored when it finished, so lists,
summaries and a run's page read no cell.

:class:`StoreReader` keeps one connection per thread, so many requests read at once
(SQLite's WAL lets readers run beside the writer); :class:`~benchkit.store.Store` makes
one and writes (deletes, ratings, the LLM cache) through the same connections.
:meth:`StoreReader.ensure_indexes` adds the two indexes paging needs. They are plain
indexes (``IF NOT EXISTS``), not a schema change: a store that has them stays readable by
every benchkit of the same schema.

Methods take a run's exact id; :meth:`StoreReader.resolve` turns what a person typed (a
unique prefix, ``latest``, ``-2``) into one.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs

from benchkit._aggregate import aggregate_run, replayed_stop
from benchkit.errors import BenchkitError, RunNotFoundError, StoreError
from benchkit.judges import judge_warnings
from benchkit.results import CellResult, RunInfo, RunResult
from benchkit.store._compare import OutlineCell, PlainPair
from benchkit.store._records import (
    COUNT_CELLS,
    CellPage,
    RunSession,
    RunStatus,
    RunSummary,
    collection_paused,
    decode_cells,
    effective_status,
    number,
    outcome,
    outlined,
    read_stop,
    structure,
)
from benchkit.store._schema import connect, store_error

if TYPE_CHECKING:
    from benchkit.store._compare import RunComparison
    from benchkit.store._story import Rating
    from benchkit.transcript import Transcript

__all__ = [
    "CELL_SORTS",
    "RUN_ORDER",
    "CellFilter",
    "RunFilter",
    "StoreReader",
    "glob_literal",
    "steps_back",
]

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
#: The sort of :meth:`Store.cells`: task position, then the run's own condition order,
#: then epoch (``position`` orders conditions by id).
RUN_ORDER = "run"
_TIEBREAK = "position, condition_id, epoch, task_id"

#: How many (run, filter) cell counts :class:`StoreReader` keeps for finished runs.
_COUNTS_KEPT = 4096
#: How many sort orders of finished runs it keeps (8 bytes a cell each).
_ORDERS_KEPT = 16
#: A page of a finished run in index order that starts this deep is read through the
#: run's kept order: SQLite's OFFSET walks every skipped index entry (~4 ms at 50,000
#: cells), the kept order finds the page's row ids at once. Shallower pages (and small
#: runs) read the index directly and keep nothing.
_KEPT_FROM_OFFSET = 1000

_INDEXES = (
    "CREATE INDEX IF NOT EXISTS cells_by_position ON cells (run_id, position, condition_id, epoch)",
    "CREATE INDEX IF NOT EXISTS cells_by_status ON cells "
    "(run_id, status, position, condition_id, epoch)",
)
_STATUSES = frozenset(("pass", "fail", "error", "timeout"))
#: A cell whose JSON :meth:`StoreReader.outline` must read: no score column (stored before
#: schema 2), or one that may hold a weight, a cluster or a grader's failure (the text
#: search finds every one, and now and then a cell that only quotes the word).
_ODD_CELL = (
    "score IS NULL OR instr(data, '\"weight\":') OR instr(data, '\"cluster\":') "
    "OR (status = 'error' AND (instr(data, '\"evaluation_error\"') "
    "OR instr(data, '\"judge_error\"')))"
)
#: The cells of condition ?2 of run ?1 joined with those of condition ?4 of run ?3 that
#: share their task and epoch, in ?1's run order (``cells_by_position``: no sort), each
#: found in ?3 by primary key: what :func:`~benchkit.store._compare.compare_plain` reads.
_JOINED = (
    "SELECT b.task_id, a.status, a.score, b.status, b.score "
    "FROM cells AS b CROSS JOIN cells AS a "
    "WHERE b.run_id = ?1 AND +b.condition_id = ?2 AND a.run_id = ?3 AND a.task_id = b.task_id "
    "AND a.condition_id = ?4 AND a.epoch = b.epoch "
    "ORDER BY b.position, b.condition_id, b.epoch"
)
_CONDITION_CELLS = "SELECT COUNT(*) FROM cells WHERE run_id = ? AND condition_id = ?"
_SUMMARY_COLUMNS = (
    "run_id, suite_key, benchmark_id, status, started_at, updated_at, finished_at, "
    "total_cells, pid, host, info, stored_cells, stored_errors, stop"
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
class CellFilter:
    """Which cells of a run: condition ids, statuses, a task id glob (``*``, ``?``,
    ``[...]``, case-sensitive), a tag."""

    conditions: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    task: str | None = None
    tag: str | None = None


def glob_literal(text: str) -> str:
    """``text`` as a GLOB pattern that matches only itself."""
    return "".join(f"[{ch}]" if ch in "*?[" else ch for ch in text)


def steps_back(ref: str) -> int | None:
    """``-N`` (N >= 1) as N, else None."""
    if len(ref) > 1 and ref[0] == "-" and ref[1:].isdigit() and int(ref[1:]) >= 1:
        return int(ref[1:])
    return None


class StoreReader:
    """Queries on the store at ``path``, one SQLite connection per thread."""

    def __init__(self, path: Path, *, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self._local = threading.local()
        self._all: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, CellFilter], tuple[str, int]] = {}
        self._orders: dict[tuple[str, CellFilter, str, str], tuple[str, array[int]]] = {}
        self._outlines: dict[Any, Any] = {}  # the outputs matrix's, see _story.matrix
        self._indexing = threading.Lock()  # one search-index build at a time
        self._outlining = threading.Lock()  # one matrix-outline build at a time
        self._warming: set[str] = set()

    # -- connections ---------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        """This thread's connection, opened (and the store created) on first use. The
        connections of threads that have ended are closed then, so a program that calls
        from short-lived threads does not keep a connection for each."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, timeout=self.timeout)
            self._local.conn = conn
            with self._lock:
                for thread, old in [item for item in self._all if not item[0].is_alive()]:
                    old.close()
                    self._all.remove((thread, old))
                self._all.append((threading.current_thread(), conn))
        return conn

    def _existing(self) -> sqlite3.Connection | None:
        """This thread's connection, or None when the store does not exist yet (a read
        never creates it)."""
        if getattr(self._local, "conn", None) is None and not self.path.exists():
            return None
        return self._db()

    @contextmanager
    def doing(self, what: str) -> Iterator[None]:
        """SQLite errors inside become a :class:`StoreError` saying what was being done."""
        try:
            yield
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, what) from exc

    def close(self) -> None:
        """Close every thread's connection (a later call opens new ones)."""
        with self._lock:
            for _, conn in self._all:
                conn.close()
            self._all.clear()
            self._local = threading.local()

    def ensure_indexes(self) -> None:
        """Create the indexes paging uses, when the store lacks them."""
        with self.doing("index the store for paging"):
            db = self._db()
            for statement in _INDEXES:
                db.execute(statement)

    def _run_exists(self, db: sqlite3.Connection, run_id: str) -> None:
        if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
            raise RunNotFoundError(f"no run {run_id!r} in the store")

    def _known(self, run_id: str) -> sqlite3.Connection:
        db = self._db()
        self._run_exists(db, run_id)
        return db

    def resolve(self, ref: str, doing: str = "find a run") -> str:
        """The id of the run ``ref`` names: an id, a unique prefix of one, ``latest`` or
        ``-1``, ``-2``... (newest first); :class:`RunNotFoundError` saying why otherwise.
        ``doing`` is what a :class:`StoreError` says was being done."""
        with self.doing(doing):
            db = self._existing()
            if db is None:
                raise RunNotFoundError(
                    f"no run {ref!r}: the store {str(self.path)!r} does not exist yet",
                    fix="run a benchmark first, or point --store / BENCHKIT_STORE at your store.",
                )
            return self._resolve(db, ref)

    def _resolve(self, db: sqlite3.Connection, ref: str) -> str:
        if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (ref,)).fetchone():
            return ref
        back = 1 if ref == "latest" else steps_back(ref)
        if back is not None:  # `latest`, `-1` (the same), `-2` (the one before), ...
            row = db.execute(
                "SELECT run_id FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1 OFFSET ?",
                (back - 1,),
            ).fetchone()
            if row is None:
                count = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
                raise RunNotFoundError(
                    f"no run {ref!r}: the store {str(self.path)!r} holds {count} run(s)",
                    fix="`python -m benchkit runs list` shows the stored runs.",
                )
            found_id: str = row[0]
            return found_id
        escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        found: list[str] = [
            row[0]
            for row in db.execute(
                "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\' "
                "ORDER BY started_at DESC LIMIT 6",
                (escaped + "%",),
            )
        ]
        if len(found) == 1:
            return found[0]
        if found:
            listed = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
            raise RunNotFoundError(
                f"{ref!r} matches several runs in {str(self.path)!r}: {listed}",
                fix="give more of the run id.",
            )
        raise RunNotFoundError(
            f"no run {ref!r} in the store {str(self.path)!r}",
            fix="`python -m benchkit runs list` shows the stored runs.",
        )

    # -- runs ----------------------------------------------------------------------------

    def runs(
        self,
        where: RunFilter = RunFilter(),
        *,
        limit: int | None = 50,
        offset: int = 0,
        sessions: bool = False,
    ) -> tuple[list[RunSummary], int]:
        """The runs that match, newest first: one page, and how many match in all (with
        each run's sessions when ``sessions``). An absent store lists none."""
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
        with self.doing("list runs"):
            db = self._existing()
            if db is None:
                return [], 0
            ids = [
                run_id
                for run_id, status, pid, host in db.execute(sql, params)
                if where.status is None or effective_status(status, pid, host) == where.status
            ]
            end = None if limit is None else offset + limit
            return [self._summary(db, run_id, sessions) for run_id in ids[offset:end]], len(ids)

    def run(self, run_id: str) -> RunSummary:
        """One run's summary without its sessions; :class:`RunNotFoundError` when it is
        not stored."""
        with self.doing("read a run"):
            db = self._db()
            self._run_exists(db, run_id)
            return self._summary(db, run_id, False)

    def summary(self, run_id: str) -> RunSummary:
        """One run's summary, with every session (start and resumes) in order."""
        with self.doing("read a run"):
            return self._summary(self._known(run_id), run_id, True)

    def _summary(self, db: sqlite3.Connection, run_id: str, sessions: bool) -> RunSummary:
        """A run as lists show it. A finished run's cell counts are the ones it stored when
        it finished (schema 3), so a list costs the same whatever the runs' sizes; only a
        run without them (running, interrupted before its end, resumed since) is counted."""
        row = db.execute(
            f"SELECT {_SUMMARY_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        info = json.loads(row[10])
        cells, errors = row[11], row[12]  # counted when the run finished
        if row[3] != "finished" or cells is None or errors is None:
            cells, errors = db.execute(COUNT_CELLS, (run_id,)).fetchone()
        status = effective_status(row[3], row[8], row[9])
        stopped_by, budget = read_stop(row[13]) if status == "interrupted" else (None, None)
        return RunSummary(
            run_id=row[0],
            benchmark_id=row[2],
            benchmark_name=info.get("benchmark_name"),
            benchmark_version=str(info.get("benchmark_version", "")),
            conditions=tuple(c["id"] for c in info.get("conditions", ())),
            status=status,
            started_at=row[4],
            updated_at=row[5],
            finished_at=row[6],
            cells=int(cells),
            errors=int(errors),
            total_cells=int(row[7]),
            suite_key=row[1],
            sessions=self._sessions(db, run_id) if sessions else (),
            source_format=str(info.get("source_format") or ""),  # "": built in code
            source_path=info.get("source_path"),
            stopped_by=stopped_by,
            budget=budget,
        )

    def _sessions(self, db: sqlite3.Connection, run_id: str) -> tuple[RunSession, ...]:
        rows = db.execute(
            "SELECT seq, kind, started_at, ended_at, status, reused, written, pid, host, "
            "benchkit FROM sessions WHERE run_id = ? ORDER BY seq",
            (run_id,),
        ).fetchall()
        last = len(rows) - 1
        return tuple(
            RunSession(
                seq=seq,
                kind=kind,
                started_at=started,
                ended_at=ended,
                # A session that is not the last one is over, whatever it recorded.
                status="crashed"
                if status == "running" and index < last
                else effective_status(status, pid, host),
                reused=reused,
                written=written,
                pid=pid,
                host=host,
                benchkit=version,
            )
            for index, (seq, kind, started, ended, status, reused, written, pid, host, version) in (
                enumerate(rows)
            )
        )

    def pass_counts(self, run_ids: Sequence[str]) -> dict[str, dict[str, tuple[int, int]]]:
        """Per run, per condition: ``(passed cells, stored cells)`` — the runs list's pass
        rates. A finished run's come from the outcome it stored when it finished (its
        aggregates count cells); only the others are counted, in one grouped query over the
        status index, so a page of finished runs reads no cell."""
        out: dict[str, dict[str, tuple[int, int]]] = {}
        if not run_ids:
            return out
        marks = ", ".join("?" for _ in run_ids)
        with self.doing("count a page of runs' passes"):
            db = self._db()
            counted: list[str] = []
            for run_id, stored in db.execute(
                f"SELECT run_id, outcome FROM runs WHERE run_id IN ({marks})", tuple(run_ids)
            ).fetchall():
                aggregates = json.loads(stored).get("aggregates") if stored else None
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
        return out

    # -- whole runs ------------------------------------------------------------------------

    def load(self, run_id: str, *, cells: bool = True) -> RunResult:
        """The run as a :class:`RunResult` (see :meth:`Store.load`): its stored cells, and
        the aggregates a finished run stored when it finished (with ``cells=False``, those
        alone); a run without them has them recomputed from its cells.

        The cells are decoded with the cyclic garbage collector paused
        (:func:`collection_paused`)."""
        with self.doing("load a run"):
            db = self._known(run_id)
            row = db.execute(
                "SELECT info, status, total_cells, outcome, stop FROM runs WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            info = structure(json.loads(row[0]), RunInfo, self.path, run_id)
            status, total, stored_outcome = row[1], int(row[2]), row[3]
            finished = None
            if status == "finished" and stored_outcome is not None:
                finished = outcome(info, stored_outcome, self.path, run_id)
                if not cells:
                    return finished
            rows = db.execute(
                # the run-order index's own order (SQLite sorts nothing)
                "SELECT data FROM cells WHERE run_id = ? ORDER BY position, condition_id, epoch",
                (run_id,),
            )
            with collection_paused():
                stored = decode_cells((text for (text,) in rows), self.path, run_id)
        ids = [c.id for c in info.conditions]
        if ids != sorted(ids) or not set(ids).issuperset({c.condition_id for c in stored}):
            # run order is the run's own order of conditions, not their ids' (position
            # is the task's index: the same order otherwise)
            order = {cid: i for i, cid in enumerate(ids)}
            stored.sort(key=lambda c: (c.index, order.get(c.condition_id, len(order)), c.epoch))
        if finished is not None:  # what it stored when it finished: the cells' own figures
            return attrs.evolve(finished, cells=tuple(stored))
        stop = replayed_stop(info, stored)
        aggregates, groups, comparisons = aggregate_run(
            stored,
            ids,
            method=info.scoring_method,
            k=info.scoring_k,
            errors_as=info.options.errors_as,
            seed=info.options.seed,
            early_stop=stop,
        )
        interrupted = status != "finished"
        stopped_by, budget = read_stop(row[4]) if status == "interrupted" else (None, None)
        return RunResult(
            info=info,
            cells=tuple(stored) if cells else (),
            aggregates=aggregates,
            groups=groups,
            comparisons=comparisons,
            interrupted=interrupted,
            not_run=max(0, total - len(stored)) if interrupted else 0,
            early_stop=stop,
            warnings=judge_warnings(stored, seed=info.options.seed),
            budget=budget,
            stopped_by=stopped_by,
        )

    def compare(
        self, run_a: str, run_b: str, *, pairs: Sequence[tuple[str, str]] | None = None
    ) -> RunComparison:
        """Run ``run_b`` against run ``run_a``, task by task.

        Two runs whose cells are all plain (the ``plain_cells`` column) are compared from
        their columns, each pair of conditions one join of the two runs' cells on task and
        epoch (:func:`~benchkit.store._compare.compare_plain`: no object per cell); any
        other pair of runs from their outlines (:meth:`outline`). Both give the same
        comparison.
        """
        from benchkit.store._compare import NotPlain, compare_cells, compare_plain

        with self.doing("load a run"):
            db = self._known(run_a)
            self._run_exists(db, run_b)
            heads = [
                db.execute("SELECT info, plain_cells FROM runs WHERE run_id = ?", (r,)).fetchone()
                for r in (run_a, run_b)
            ]
            if heads[0][1] == 1 and heads[1][1] == 1:
                info_a, info_b = (
                    structure(json.loads(head[0]), RunInfo, self.path, run)
                    for head, run in zip(heads, (run_a, run_b), strict=True)
                )

                def fetch(cond_a: str, cond_b: str) -> PlainPair:
                    rows = db.execute(_JOINED, (run_b, cond_b, run_a, cond_a)).fetchall()
                    count_a, count_b = (
                        int(db.execute(_CONDITION_CELLS, (run, cond)).fetchone()[0])
                        for run, cond in ((run_a, cond_a), (run_b, cond_b))
                    )
                    return PlainPair(rows, count_a, count_b)

                try:
                    return compare_plain(info_a, info_b, pairs, fetch)
                except NotPlain:
                    pass  # read them as outlines: the same figures, or the store's error
        info_a, cells_a = self.outline(run_a)
        info_b, cells_b = self.outline(run_b)
        return compare_cells(info_a, cells_a, info_b, cells_b, pairs=pairs)

    def outline(self, run_id: str) -> tuple[RunInfo, list[OutlineCell]]:
        """The run's info and its cells as :class:`OutlineCell`: only what
        :func:`compare_runs` reads — ids, epoch, status, score, weight and cluster — in run
        order.

        Ids, status and score come from columns. A run whose cells are all plain (the
        ``plain_cells`` column: weight 1, no cluster, no grader's failure — what the writer
        records since schema 4) is read from them alone. Otherwise a cell whose JSON may
        hold a weight or a cluster (``"weight":`` or ``"cluster":`` occurs in it), an
        errored cell that may be a grader's failure (``judge_error``, ``evaluation_error``, left out of
        averages), or one that has no score column (stored before schema 2), is read from
        its JSON instead, so every value is exact.
        """
        with self.doing("load a run"):
            db = self._known(run_id)
            row = db.execute(
                "SELECT info, plain_cells FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            info = structure(json.loads(row[0]), RunInfo, self.path, run_id)
            rows = db.execute(
                "SELECT task_id, condition_id, epoch, status, score, CASE WHEN "
                + ("score IS NULL" if row[1] == 1 else _ODD_CELL)
                + " THEN data END FROM cells WHERE run_id = ? "
                # the run-order index's own order, so SQLite sorts nothing: within one
                # condition (all a comparison looks at) it is position, then epoch
                "ORDER BY position, condition_id, epoch",
                (run_id,),
            ).fetchall()
        # A plain cell is built as the tuple it is (score, then weight, cluster and error
        # category at their defaults): NamedTuple's own __new__ is a Python call, ~40 %
        # of building 200,000 outline cells.
        new, statuses = tuple.__new__, _STATUSES
        cells: list[OutlineCell] = []
        append = cells.append
        for task_id, condition_id, epoch, status, score, data in rows:
            if status not in statuses:
                raise StoreError(
                    f"run {run_id!r} in {str(self.path)!r} holds a cell with an unknown status",
                    fix="upgrade benchkit if a newer one wrote it, or delete the run.",
                )
            if data is not None:
                append(outlined(task_id, condition_id, epoch, status, data, self.path, run_id))
            else:
                try:
                    value = None if score == "null" else float(score)
                except (ValueError, TypeError):
                    value = number(score)  # raises the store's error
                append(
                    new(
                        OutlineCell,
                        (task_id, condition_id, epoch, status, value, 1.0, None, "none"),
                    )
                )
        return info, cells

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
        :data:`CELL_SORTS`, or :data:`RUN_ORDER`) in ``order``."""
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
        key = "position" if sort == RUN_ORDER else CELL_SORTS[sort]
        ordering = (
            f"position {direction}, condition_id {direction}, epoch {direction}"
            if key == "position"
            else f"{key} {direction}, {_TIEBREAK}"
        )
        with self.doing("read a run's cells"):
            db = self._db()
            state = db.execute(
                "SELECT status, updated_at, info FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if state is None:
                raise RunNotFoundError(f"no run {run_id!r} in the store")
            total = self._count(db, run_id, where, condition, params, state)
            if sort == RUN_ORDER:  # the run's condition order, as an SQL expression
                ids = [c["id"] for c in json.loads(state[2]).get("conditions", ())]
                rank, ranks = "0", []
                if ids:
                    rank = "CASE condition_id " + "WHEN ? THEN ? " * len(ids) + "ELSE ? END"
                    ranks = [*(x for i, cid in enumerate(ids) for x in (cid, i)), len(ids)]
                rows = db.execute(
                    f"SELECT data FROM cells WHERE {condition} "
                    f"ORDER BY position, {rank}, epoch LIMIT ? OFFSET ?",
                    [*params, *ranks, limit, offset],
                ).fetchall()
                texts = tuple(row[0] for row in rows)
            elif state[0] != "finished" or (key == "position" and offset < _KEPT_FROM_OFFSET):
                rows = db.execute(
                    f"SELECT data FROM cells WHERE {condition} ORDER BY {ordering} "
                    "LIMIT ? OFFSET ?",
                    [*params, limit, offset],
                ).fetchall()
                texts = tuple(row[0] for row in rows)
            else:
                order_ids = self._order(
                    db, (run_id, where, sort, order), state[1], condition, ordering, params
                )
                page = list(order_ids[offset : offset + limit])
                found = (
                    dict(
                        db.execute(
                            "SELECT rowid, data FROM cells "
                            f"WHERE rowid IN ({', '.join('?' * len(page))})",
                            page,
                        ).fetchall()
                    )
                    if page
                    else {}
                )
                texts = tuple(found[r] for r in page if r in found)
        return CellPage(run_id, texts, total, offset, limit, self.path)

    def _count(
        self,
        db: sqlite3.Connection,
        run_id: str,
        where: CellFilter,
        condition: str,
        params: list[Any],
        state: tuple[str, str, str],
    ) -> int:
        """How many cells match. A finished run's cells do not change until it is resumed
        (which moves its updated_at): its counts are kept, so a page costs only the page."""
        count_key = (run_id, where)
        cached = self._counts.get(count_key)
        if state[0] == "finished" and cached is not None and cached[0] == state[1]:
            return cached[1]
        (total,) = db.execute(f"SELECT COUNT(*) FROM cells WHERE {condition}", params).fetchone()
        if state[0] == "finished":
            if len(self._counts) >= _COUNTS_KEPT:
                self._counts.clear()
            self._counts[count_key] = (state[1], int(total))
        return int(total)

    def _order(
        self,
        db: sqlite3.Connection,
        order_key: tuple[str, CellFilter, str, str],
        updated_at: str,
        condition: str,
        ordering: str,
        params: list[Any],
    ) -> array[int]:
        """Sorting on a JSON field has no index, and a deep page in index order costs
        its offset: a finished run's order (row ids) is computed once per filter and sort
        and kept, and each page reads its rows."""
        kept = self._orders.get(order_key)
        if kept is None or kept[0] != updated_at:
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
            kept = (updated_at, ids)
            self._orders[order_key] = kept
        return kept[1]

    # -- a cell's story (issue #25): tasks, transcripts, attempts, ratings, matrix ---------

    def task_data(self, run_id: str, task_id: str) -> dict[str, Any] | None:
        """The run's snapshot of task ``task_id`` as stored, or None."""
        with self.doing("read a run's task"):
            row = (
                self._known(run_id)
                .execute(
                    "SELECT data FROM tasks WHERE run_id = ? AND task_id = ?", (run_id, task_id)
                )
                .fetchone()
            )
        if row is None:
            return None
        found: dict[str, Any] = json.loads(row[0])
        return found

    def task(self, run_id: str, task_id: str) -> dict[str, Any] | None:
        """The run's snapshot of task ``task_id`` (every field present), or None."""
        from benchkit.store._story import task_view

        found = self.task_data(run_id, task_id)
        return None if found is None else task_view(found)

    def transcript(
        self, run_id: str, key: tuple[str, str, int], attempt: int | None
    ) -> Transcript | None:
        """The transcript of a cell attempt (the latest unless ``attempt``), or None."""
        from benchkit.store._story import attempt_of
        from benchkit.transcript import Transcript

        with self.doing("read a cell's transcript"):
            db = self._known(run_id)
            number_ = attempt_of(db, run_id, key) if attempt is None else attempt
            row = db.execute(
                "SELECT data FROM transcripts WHERE run_id = ? AND task_id = ? "
                "AND condition_id = ? AND epoch = ? AND attempt = ?",
                (run_id, *key, number_),
            ).fetchone()
        return None if row is None else Transcript.from_dict(json.loads(row[0]))

    def cell_attempts(self, run_id: str, key: tuple[str, str, int]) -> list[CellResult]:
        """Every stored attempt of a cell, oldest first (the last is the latest)."""
        where = "run_id = ? AND task_id = ? AND condition_id = ? AND epoch = ?"
        with self.doing("read a cell's attempts"):
            db = self._known(run_id)
            rows = db.execute(
                f"SELECT data FROM cell_attempts WHERE {where} ORDER BY attempt", (run_id, *key)
            ).fetchall()
            rows += db.execute(f"SELECT data FROM cells WHERE {where}", (run_id, *key)).fetchall()
        return [structure(json.loads(data), CellResult, self.path, run_id) for (data,) in rows]

    def cell_story(
        self, run_id: str, task_id: str, condition_id: str, epoch: int, attempt: int | None
    ) -> tuple[str, int, int, dict[str, Any]] | None:
        """A cell attempt's JSON text (the latest unless ``attempt``), its attempt number,
        how many attempts the cell has, and its transcript; None when there is no such
        cell or attempt."""
        from benchkit.store._story import cell_attempt, transcript_json

        key = (task_id, condition_id, epoch)
        with self.doing("read a cell"):
            db = self._known(run_id)
            found = cell_attempt(db, run_id, key, attempt)
            if found is None:
                return None
            data, number_, attempts = found
            return data, number_, attempts, transcript_json(db, run_id, key, number_)

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
        with self.doing("read a run's cells"):
            (count,) = self._known(run_id).execute(sql, params).fetchone()
        return int(count)

    def ratings(self, run_id: str) -> list[Rating]:
        """The run's ratings (every rater's), in run order."""
        from benchkit.store._story import ratings

        with self.doing("read a run's ratings"):
            return list(ratings(self._known(run_id), run_id))

    def matrix(self, run_id: str, **filters: Any) -> dict[str, Any]:
        """One page of the outputs matrix (see :func:`benchkit.store._story.matrix`)."""
        from benchkit.store._story import matrix

        with self.doing("read a run's matrix"):
            if filters.get("q"):
                self._index(run_id)
            db = self._known(run_id)
            if not any(filters.get(k) for k in ("only", "tag", "q", "rated")):
                return matrix(db, run_id, cache=self._outlines, **filters)
            with self._outlining:  # one outline build at a time: the next one finds it kept
                return matrix(db, run_id, cache=self._outlines, **filters)

    def search(
        self, text: str, *, run_id: str | None = None, limit: int = 50
    ) -> tuple[list[dict[str, Any]], int]:
        """Cells matching ``text`` in one run or every run, best first; none in a store
        that does not exist."""
        from benchkit.store._story import lost_runs_indexed, search, stale_search_runs

        with self.doing("search the store"):
            db = self._existing()
            if db is None:
                return [], 0
            if run_id is not None:
                self._run_exists(db, run_id)
                for one in stale_search_runs(db, [run_id]):
                    self._index(one)
                return search(db, text, run_ids=[run_id], limit=limit)
            (version,) = db.execute("PRAGMA data_version").fetchone()
            ready = getattr(self._local, "search_ready", None)
            if ready != (db, version, db.total_changes):
                # Checked again only when something was committed since the last check
                # (by another connection: the data version; by this one: its changes).
                if db.execute("SELECT 1 FROM runs LIMIT 1").fetchone() is None:
                    return [], 0
                for one in stale_search_runs(db, None):
                    self._index(one)
                if lost_runs_indexed(db):
                    ids = [r[0] for r in db.execute("SELECT run_id FROM runs")]
                    return search(db, text, run_ids=ids, limit=limit)
                self._local.search_ready = (db, version, db.total_changes)
            return search(db, text, run_ids=None, limit=limit)

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
        undefined: fewer than two cells, or one side always says the same). Reads the
        rated cells only, so it costs what the ratings cost, whatever the run's size."""
        from benchkit.agreement import cohen_kappa
        from benchkit.store._story import rating_labels, ratings

        with self.doing("read a run's ratings"):
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
