"""The embedded run store: every finished cell in one SQLite file, for resume and history.

:class:`Store` is the file (``.benchkit/benchkit.db`` unless told otherwise). A run reaches
it through a :class:`StoreSink` that :meth:`Store.prepare` makes for the run: the sink
hands each finished cell to a writer thread that commits them in small batches, so the
event loop never waits on the disk. :meth:`Store.prepare` also decides what a resume
reuses. History (:meth:`Store.runs`, :meth:`Store.load`, :meth:`Store.delete`,
:meth:`Store.export`) and the LLM response cache (:meth:`Store.cache_get`,
:meth:`Store.cache_put`) are plain synchronous methods, safe to call from any thread.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import socket
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TextIO

import anyio
import anyio.to_thread
import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn

from benchkit import model, results
from benchkit._aggregate import aggregate_run, task_value
from benchkit._celljson import cell_json
from benchkit._public import public
from benchkit._version import __version__
from benchkit.errors import ConfigError, RunNotFoundError, StoreError
from benchkit.model import Benchmark, Suite
from benchkit.registry import Registries, default_registries
from benchkit.results import CellResult, CellStatus, RunInfo, RunResult
from benchkit.sequential import EarlyStop, replay
from benchkit.serde import converter
from benchkit.store._compare import OutlineCell
from benchkit.store._keys import SuiteKeys, suite_keys
from benchkit.store._schema import connect, store_error, transaction
from benchkit.store._story import (
    RUN_TABLES,
    Rating,
    drop_search_rows,
    encode_transcript,
    task_rows,
)
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

RunStatus = Literal["running", "finished", "interrupted", "crashed"]

#: The writer inserts at most this many cells per batch (one statement on SQLite >= 3.32).
#: A busy event loop holds the GIL, and the writer waits up to the 5 ms switch interval
#: to take it back after each statement: at 256 rows a statement that capped the writer
#: near the rate a no-op run makes cells, and the run kept pausing for it.
BATCH_MAX = 1024
#: ...and, woken by a cell, waits this long (seconds) for more to join it.
BATCH_WAIT = 0.002
#: A run pauses (without blocking the event loop) while more cells than this wait to be
#: written, so a slow disk bounds both memory and what a crash can lose.
MAX_PENDING = 8192

_ENCODER = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), check_circular=False, default=str
)
_ERRORED = ("error", "timeout")
#: A run's stored cells and errored cells (status error or timeout).
_COUNT_CELLS = (
    "SELECT COUNT(*), COALESCE(SUM(status IN ('error', 'timeout')), 0) FROM cells WHERE run_id = ?"
)
_STATUSES = frozenset(("pass", "fail", "error", "timeout"))
#: A cell whose JSON :meth:`Store._outline` must read: no score column (stored before
#: schema 2), or one that may hold a weight, a cluster or a grader's failure (the text
#: search finds every one, and now and then a cell that only quotes the word).
_ODD_CELL = (
    "score IS NULL OR instr(data, '\"weight\":') OR instr(data, '\"cluster\":') "
    "OR (status = 'error' AND instr(data, '\"evaluation_error\"'))"
)
_HOST = socket.gethostname()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _steps_back(ref: str) -> int | None:
    """``-N`` (N >= 1) as N, else None."""
    if len(ref) > 1 and ref[0] == "-" and ref[1:].isdigit() and int(ref[1:]) >= 1:
        return int(ref[1:])
    return None


def resolve_store_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The store file: ``path``, else ``$BENCHKIT_STORE``, else ``./.benchkit/benchkit.db``."""
    if path is None:
        path = os.environ.get("BENCHKIT_STORE") or DEFAULT_STORE
    return Path(path).expanduser().absolute()


@attrs.frozen
class RunSession:
    """One start or resume of a run: when, by which process, what it reused and wrote."""

    seq: int
    kind: Literal["start", "resume"]
    started_at: str
    ended_at: str | None
    status: str
    reused: int
    written: int
    pid: int | None
    host: str | None
    benchkit: str


@attrs.frozen
class RunSummary:
    """A run as :meth:`Store.runs` lists it, without its cells.

    ``status`` is ``finished``, ``interrupted`` (stopped gracefully: Ctrl-C, a failing
    sink), ``running``, or ``crashed`` (its process on this host ended without recording the
    end of the run: killed, out of memory, or the store became unwritable). ``cells``
    counts the stored cells, ``errors`` those with status error or timeout;
    ``total_cells`` is the size of the run's matrix (known for lazy benchmarks too).
    ``started_at`` is the wall-clock time of the first session, also in deterministic mode.
    """

    run_id: str
    benchmark_id: str
    benchmark_name: str | None
    benchmark_version: str
    conditions: tuple[str, ...]
    status: RunStatus
    started_at: str
    updated_at: str
    finished_at: str | None
    cells: int
    errors: int
    total_cells: int
    suite_key: str
    sessions: tuple[RunSession, ...] = ()


#: A queued cell: run id, task id, condition id, epoch, position, status, key, cell JSON,
#: score (the text of its JSON number, "null" for none).
_Row = tuple[str, str, str, int, int, str, str, str, str]

#: A batch goes in as one multi-row ``INSERT ... VALUES (...), (...)`` statement (which is
#: also one transaction). Every call into SQLite releases the GIL and must take it back,
#: and while the event loop is busy each take-back waits (up to the interpreter's 5 ms
#: switch interval): ``executemany`` pays that once per row, one statement per batch
#: once. Passing the batch as one JSON array (``json_each``) also takes one statement, but
#: SQLite then spends 12-15 µs a row parsing JSON where bound values cost it about 5 µs;
#: both were measured (perf/RESULTS.md). Statements come in power-of-two sizes up to
#: :data:`_ROWS_PER_STATEMENT` rows (a batch of 100 is 64 + 32 + 4): SQLite compiles and the
#: sqlite3 module caches one statement per size, and a compiled 256-row statement is
#: large — caching one for every batch size seen held 25 MB (the sizes up to 1,024 rows
#: add about 3 MB). A full batch of :data:`BATCH_MAX` rows is one statement on any SQLite
#: since 3.32 (32,766 bound values; 999 before).
_INSERT_HEAD = (
    "INSERT OR REPLACE INTO cells (run_id, task_id, condition_id, epoch, position, status, "
    "cell_key, data, score) VALUES "
)
_COLUMNS = 9
_ROWS_PER_STATEMENT = 1 << (
    ((32_766 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999) // _COLUMNS).bit_length() - 1
)


_flatten = itertools.chain.from_iterable


@functools.lru_cache(maxsize=16)
def _insert_sql(rows: int) -> str:
    """The INSERT statement for ``rows`` rows."""
    return _INSERT_HEAD + ",".join(["(?,?,?,?,?,?,?,?,?)"] * rows)


def _insert(conn: sqlite3.Connection, rows: Sequence[_Row]) -> None:
    """Insert ``rows`` in statements of power-of-two sizes, largest first."""
    start = 0
    while start < len(rows):
        size = min(_ROWS_PER_STATEMENT, 1 << ((len(rows) - start).bit_length() - 1))
        chunk = rows[start : start + size]
        conn.execute(_insert_sql(size), list(_flatten(chunk)))
        start += size


def _insert_transcripts(
    conn: sqlite3.Connection, queued: deque[tuple[str, str, str, int, int, str]]
) -> None:
    """Insert (replacing) the queued transcripts, taking them from the queue."""
    take = queued.popleft
    conn.executemany(
        "INSERT OR REPLACE INTO transcripts (run_id, task_id, condition_id, epoch, attempt, "
        "data) VALUES (?, ?, ?, ?, ?, ?)",
        [take() for _ in range(len(queued))],
    )


@attrs.frozen
class _Finish:
    """How the run ended, for the writer's last transaction: the run's final state and,
    when it finished, its result (whose outcome the writer stores)."""

    status: str
    result: RunResult | None = None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def effective_status(status: str, pid: int | None, host: str | None) -> RunStatus:
    """A run's status as readers report it: a ``running`` run whose process on this host
    is gone is ``crashed``. Shared by :class:`Store` and the server's reader."""
    if status == "running" and host == _HOST and pid is not None and not _pid_alive(pid):
        return "crashed"
    if status in ("finished", "interrupted", "running"):
        return status  # type: ignore[return-value]
    raise StoreError(f"unknown run status {status!r} in the store")


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
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, timeout: float = 30.0):
        self.path = resolve_store_path(path)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

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
        """Close this object's connection (a later call opens a new one)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- connections -------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path, timeout=self.timeout)

    @contextmanager
    def _db(self, doing: str, *, create: bool = True) -> Iterator[sqlite3.Connection | None]:
        """This object's connection under its lock, with SQLite errors made StoreErrors.

        Yields None when the store does not exist and ``create`` is false.
        """
        with self._lock:
            if self._conn is None:
                if not create and not self.path.exists():
                    yield None
                    return
                self._conn = self._connect()
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise store_error(exc, self.path, doing) from exc

    # -- history -----------------------------------------------------------------------

    def runs(self, *, benchmark: str | None = None, limit: int | None = None) -> list[RunSummary]:
        """The stored runs, newest first; only ``benchmark``'s when given, at most ``limit``."""
        where, params = ("WHERE benchmark_id = ?", [benchmark]) if benchmark else ("", [])
        sql = f"SELECT run_id FROM runs {where} ORDER BY started_at DESC, rowid DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._db("list runs", create=False) as db:
            if db is None:
                return []
            ids = [row[0] for row in db.execute(sql, params)]
            return [self._summary(db, run_id) for run_id in ids]

    def summary(self, run_id: str) -> RunSummary:
        """One run's summary, with every session (start and resumes) in order.

        ``run_id`` may be a unique prefix of the id, ``latest``, or ``-1``, ``-2``... (newest first).
        """
        with self._db("read a run", create=False) as db:
            return self._summary(db, self._resolve(db, run_id))

    def load(self, run_id: str, *, cells: bool = True) -> RunResult:
        """The run as a :class:`RunResult`, aggregates recomputed from its stored cells.

        ``run_id`` may be a unique prefix of the id, ``latest``, or ``-1``, ``-2``... (newest first). A run that did not finish loads with
        ``interrupted=True`` and ``not_run`` counting the cells it lacks.

        With ``cells=False`` the result has no cells (``cells == ()``) and the rest —
        aggregates, groups, comparisons — is what the run stored when it finished, so
        the read does not depend on the run's size (what ``runs show`` prints). A run that
        stored none (it did not finish, was resumed since, or was stored by a benchkit
        before schema 3) is loaded in full and its cells dropped: the same figures.
        """
        with self._db("load a run", create=False) as db:
            rid = self._resolve(db, run_id)
            assert db is not None
            row = db.execute(
                "SELECT info, status, total_cells, outcome FROM runs WHERE run_id = ?", (rid,)
            ).fetchone()
            info = _structure(json.loads(row[0]), RunInfo, self.path, rid)
            status, total, outcome = row[1], int(row[2]), row[3]
            if not cells and status == "finished" and outcome is not None:
                return _outcome(info, outcome, self.path, rid)
            stored = [
                _structure(json.loads(data), CellResult, self.path, rid)
                for (data,) in db.execute("SELECT data FROM cells WHERE run_id = ?", (rid,))
            ]
        order = {c.id: i for i, c in enumerate(info.conditions)}
        stored.sort(key=lambda c: (c.index, order.get(c.condition_id, len(order)), c.epoch))
        aggregates, groups, comparisons = aggregate_run(
            stored,
            [c.id for c in info.conditions],
            method=info.scoring_method,
            k=info.scoring_k,
            errors_as=info.options.errors_as,
            seed=info.options.seed,
        )
        interrupted = status != "finished"
        return RunResult(
            info=info,
            cells=tuple(stored) if cells else (),
            aggregates=aggregates,
            groups=groups,
            comparisons=comparisons,
            interrupted=interrupted,
            not_run=max(0, total - len(stored)) if interrupted else 0,
            early_stop=_early_stop(info, stored),
        )

    def delete(self, run_id: str) -> int:
        """Delete a run and its cells; returns how many cells went with it.

        ``run_id`` may be a unique prefix (or ``latest``, ``-2``...). A run still running in a live process on this
        host is refused. SQLite keeps the freed pages for reuse; ``VACUUM`` shrinks the file.
        """
        with self._db("delete a run", create=False) as db:
            rid = self._resolve(db, run_id)
            assert db is not None
            with transaction(db):
                self._refuse_if_running(db, rid, "delete it")
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
        with self._db("read a run's cells", create=False) as db:
            rid = self._resolve(db, run_id)
            assert db is not None
            (info_json,) = db.execute("SELECT info FROM runs WHERE run_id = ?", (rid,)).fetchone()
            order = [c["id"] for c in json.loads(info_json).get("conditions", ())]
            where = "run_id = ?"
            params: list[Any] = [rid]
            if condition is not None:
                where += " AND condition_id = ?"
                params.append(condition)
            if task is not None:
                where += " AND task_id = ?"
                params.append(task)
            if status is not None:
                statuses = [status] if isinstance(status, str) else list(status)
                where += f" AND status IN ({', '.join('?' * len(statuses))})"
                params += statuses
            (total,) = db.execute(f"SELECT COUNT(*) FROM cells WHERE {where}", params).fetchone()
            rank, ranks = "0", []  # the run's condition order, as an SQL expression
            if order:
                rank = "CASE condition_id " + "WHEN ? THEN ? " * len(order) + "ELSE ? END"
                ranks = [*(x for i, cid in enumerate(order) for x in (cid, i)), len(order)]
            rows = db.execute(
                f"SELECT data FROM cells WHERE {where} "
                f"ORDER BY position, {rank}, epoch LIMIT ? OFFSET ?",
                [*params, *ranks, limit, offset],
            ).fetchall()
            cells = tuple(
                _structure(json.loads(data), CellResult, self.path, rid) for (data,) in rows
            )
        return CellPage(run_id=rid, cells=cells, total=int(total), offset=offset, limit=limit)

    def compare(
        self, run_a: str, run_b: str, *, pairs: Sequence[tuple[str, str]] | None = None
    ) -> RunComparison:
        """Run ``run_b`` against run ``run_a`` (ids or unique prefixes), task by task: see
        :func:`~benchkit.store.compare_runs`.

        Only what a comparison reads is loaded: each cell's ids, status and score, straight
        from the store's columns (the score from its JSON inside SQLite), not whole cells
        nor the runs' aggregates.
        """
        from benchkit.store._compare import compare_cells

        info_a, cells_a = self._outline(run_a)
        info_b, cells_b = self._outline(run_b)
        return compare_cells(info_a, cells_a, info_b, cells_b, pairs=pairs)

    def _outline(self, run_id: str) -> tuple[RunInfo, list[OutlineCell]]:
        """The run's info and its cells as :class:`OutlineCell`: only what
        :func:`compare_runs` reads — ids, epoch, status, score, weight and cluster — in run
        order.

        Ids, status and score come from columns. A run whose cells are all plain (the
        ``plain_cells`` column: weight 1, no cluster, no grader's failure — what the writer
        records since schema 4) is read from them alone. Otherwise a cell whose JSON may
        hold a weight or a cluster (``"weight":`` or ``"cluster":`` occurs in it), an
        errored cell that may be a grader's failure (``evaluation_error``, left out of
        averages), or one that has no score column (stored before schema 2), is read from
        its JSON instead, so every value is exact.
        """
        with self._db("load a run", create=False) as db:
            rid = self._resolve(db, run_id)
            assert db is not None
            row = db.execute(
                "SELECT info, plain_cells FROM runs WHERE run_id = ?", (rid,)
            ).fetchone()
            info = _structure(json.loads(row[0]), RunInfo, self.path, rid)
            rows = db.execute(
                "SELECT task_id, condition_id, epoch, status, score, CASE WHEN "
                + ("score IS NULL" if row[1] == 1 else _ODD_CELL)
                + " THEN data END FROM cells WHERE run_id = ? "
                # the run-order index's own order, so SQLite sorts nothing: within one
                # condition (all a comparison looks at) it is position, then epoch
                "ORDER BY position, condition_id, epoch",
                (rid,),
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
                    f"run {rid!r} in {str(self.path)!r} holds a cell with an unknown status",
                    fix="upgrade benchkit if a newer one wrote it, or delete the run.",
                )
            if data is not None:
                append(_outlined(task_id, condition_id, epoch, status, data, self.path, rid))
            else:
                value = None if score == "null" else _number(score)
                append(
                    new(
                        OutlineCell,
                        (task_id, condition_id, epoch, status, value, 1.0, None, "none"),
                    )
                )
        return info, cells

    def _resolve(self, db: sqlite3.Connection | None, ref: str) -> str:
        if db is None:
            raise RunNotFoundError(
                f"no run {ref!r}: the store {str(self.path)!r} does not exist yet",
                fix="run a benchmark first, or point --store / BENCHKIT_STORE at your store.",
            )
        if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (ref,)).fetchone():
            return ref
        back = 1 if ref == "latest" else _steps_back(ref)
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

    def _summary(self, db: sqlite3.Connection | None, run_id: str) -> RunSummary:
        assert db is not None
        row = db.execute(
            "SELECT run_id, suite_key, benchmark_id, status, started_at, updated_at, "
            "finished_at, total_cells, pid, host, info, stored_cells, stored_errors "
            "FROM runs WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        info = json.loads(row[10])
        cells, errors = row[11], row[12]  # counted when the run finished
        if row[3] != "finished" or cells is None or errors is None:
            cells, errors = db.execute(_COUNT_CELLS, (run_id,)).fetchone()
        rows = db.execute(
            "SELECT seq, kind, started_at, ended_at, status, reused, written, pid, host, "
            "benchkit FROM sessions WHERE run_id = ? ORDER BY seq",
            (run_id,),
        ).fetchall()
        sessions = tuple(
            RunSession(
                seq=seq,
                kind=kind,
                started_at=started,
                ended_at=ended,
                # A session that is not the last one is over, whatever it recorded.
                status="crashed"
                if status == "running" and index < len(rows) - 1
                else effective_status(status, pid, host),
                reused=reused,
                written=written,
                pid=pid,
                host=host,
                benchkit=version,
            )
            for index, (
                seq,
                kind,
                started,
                ended,
                status,
                reused,
                written,
                pid,
                host,
                version,
            ) in enumerate(rows)
        )
        return RunSummary(
            run_id=row[0],
            benchmark_id=row[2],
            benchmark_name=info.get("benchmark_name"),
            benchmark_version=str(info.get("benchmark_version", "")),
            conditions=tuple(c["id"] for c in info.get("conditions", ())),
            status=effective_status(row[3], row[8], row[9]),
            started_at=row[4],
            updated_at=row[5],
            finished_at=row[6],
            cells=int(cells),
            errors=int(errors),
            total_cells=int(row[7]),
            suite_key=row[1],
            sessions=sessions,
        )

    def _refuse_if_running(self, db: sqlite3.Connection, run_id: str, action: str) -> None:
        row = db.execute(
            "SELECT status, pid, host FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        if row is None or row[0] != "running" or row[2] != _HOST or row[1] is None:
            return
        if row[1] != os.getpid() and _pid_alive(row[1]):
            raise ConfigError(
                f"run {run_id!r} is still running in process {row[1]} on this host ({row[2]})",
                fix=f"wait for it to finish or stop it (Ctrl-C) before you {action}.",
            )

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
        from benchkit.runner import new_run_id

        resume = resume or retry_errors or bool(rerun)
        if rerun and not run_id:
            raise ConfigError(
                "re-running cells needs the run's id", fix="pass run_id= the run to re-run in."
            )
        with self._db("open the store"):
            pass  # fail early (damaged, newer, not writable) before hashing the tasks
        keys = suite_keys(suite, registries or default_registries())
        with self._db("look up earlier runs") as db:
            assert db is not None
            found: str | None = None
            if resume and run_id is not None and run_id not in ("", None):
                # `--resume --run-id latest` (or -2, or a unique prefix) names a stored run.
                with contextlib.suppress(RunNotFoundError):
                    run_id = self._resolve(db, run_id)
                if run_id == "latest" or _steps_back(run_id) is not None:
                    run_id = None  # an empty store: nothing to resume, a fresh run
            if resume:
                sql, arg = (
                    ("SELECT run_id FROM runs WHERE run_id = ?", run_id)
                    if run_id is not None
                    else (
                        "SELECT run_id FROM runs WHERE suite_key = ? "
                        "ORDER BY started_at DESC, rowid DESC LIMIT 1",
                        keys.suite_key,
                    )
                )
                row = db.execute(sql, (arg,)).fetchone()
                found = None if row is None else row[0]
            elif (
                run_id is not None
                and not replace
                and db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            ):
                raise ConfigError(
                    f"run {run_id!r} is already in the store {str(self.path)!r}",
                    fix="resume it (--resume / resume=True), pick another id, or delete it "
                    f"(`python -m benchkit runs delete {run_id}`).",
                )
            if found is None:
                if rerun:
                    raise RunNotFoundError(
                        f"no run {run_id!r} in the store {str(self.path)!r} to re-run cells in",
                        fix="`python -m benchkit runs list` shows the stored runs.",
                    )
                rid = run_id or new_run_id(suite)
                existing = db.execute("SELECT 1 FROM runs WHERE run_id = ?", (rid,)).fetchone()
                if existing:
                    self._refuse_if_running(db, rid, "run it again")
                sink = StoreSink(
                    self, rid, keys, resume=False, replace=bool(existing), benchmark=suite.benchmark
                )
                return PreparedRun(rid, sink, (), resumed=False, replaced=bool(existing))
            self._refuse_if_running(db, found, "resume it")
            done, dropped, stale, again = self._reusable(db, found, keys, retry_errors, rerun)
            (seen,) = db.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM sessions WHERE run_id = ?", (found,)
            ).fetchone()
        sink = StoreSink(
            self,
            found,
            keys,
            resume=True,
            dropped=dropped,
            reused=len(done),
            seen_session=seen,
            benchmark=suite.benchmark,
            stale=stale,
            rerun=again,
        )
        return PreparedRun(
            found, sink, done, resumed=True, retried=len(stale), dropped=len(dropped)
        )

    def _reusable(
        self,
        db: sqlite3.Connection,
        run_id: str,
        keys: SuiteKeys,
        retry_errors: bool,
        rerun: Sequence[tuple[str, str | None, int | None]] = (),
    ) -> tuple[
        tuple[CellResult, ...],
        list[tuple[str, str, int]],
        list[tuple[str, str, int]],
        list[tuple[str, str, int]],
    ]:
        """The stored cells a resume keeps, the ones it drops, the errored ones it
        retries, and the ones it re-runs as new attempts (``rerun``)."""
        from benchkit.store._story import selected

        done: list[CellResult] = []
        dropped: list[tuple[str, str, int]] = []
        retried: list[tuple[str, str, int]] = []
        again: list[tuple[str, str, int]] = []
        rows = db.execute(
            "SELECT task_id, condition_id, epoch, cell_key, status, data FROM cells "
            "WHERE run_id = ?",
            (run_id,),
        )
        for task_id, condition_id, epoch, cell_key, status, data in rows:
            found = keys.task(task_id)
            if found is None or keys.cell_key(task_id, condition_id, epoch, found[0]) != cell_key:
                dropped.append((task_id, condition_id, epoch))
            elif rerun and selected((task_id, condition_id, epoch), rerun):
                again.append((task_id, condition_id, epoch))
            elif retry_errors and status in _ERRORED:
                retried.append((task_id, condition_id, epoch))
            else:
                cell = _structure(json.loads(data), CellResult, self.path, run_id)
                position = found[0]
                done.append(cell if cell.index == position else attrs.evolve(cell, index=position))
        return tuple(done), dropped, retried, again

    # -- a cell's story: tasks, transcripts, attempts, ratings, matrix, search ----------

    def task(self, run_id: str, task_id: str) -> dict[str, Any] | None:
        """What the run's task ``task_id`` was when the run was prepared (id, input,
        expected, tags, metadata...), or None for a run stored before schema 5 or a task
        the run does not have."""
        with self._db("read a run's task", create=False) as db:
            rid = self._resolve(db, run_id)
            assert db is not None
            row = db.execute(
                "SELECT data FROM tasks WHERE run_id = ? AND task_id = ?", (rid, task_id)
            ).fetchone()
        if row is None:
            return None
        found: dict[str, Any] = json.loads(row[0])
        return found

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
        from benchkit.store._story import attempt_of

        key = (task_id, condition_id, int(epoch))
        with self._db("read a cell's transcript", create=False) as db:
            rid = self._resolve(db, run_id)
            assert db is not None
            number = attempt_of(db, rid, key) if attempt is None else attempt
            row = db.execute(
                "SELECT data FROM transcripts WHERE run_id = ? AND task_id = ? "
                "AND condition_id = ? AND epoch = ? AND attempt = ?",
                (rid, *key, number),
            ).fetchone()
        return None if row is None else Transcript.from_dict(json.loads(row[0]))

    def cell_attempts(
        self, run_id: str, task_id: str, condition_id: str, epoch: int = 0
    ) -> list[CellResult]:
        """Every stored attempt of a cell, oldest first; the last is the latest (the one
        statistics use). Empty when the run has no such cell."""
        key = (task_id, condition_id, int(epoch))
        where = "run_id = ? AND task_id = ? AND condition_id = ? AND epoch = ?"
        with self._db("read a cell's attempts", create=False) as db:
            rid = self._resolve(db, run_id)
            assert db is not None
            rows = db.execute(
                f"SELECT data FROM cell_attempts WHERE {where} ORDER BY attempt", (rid, *key)
            ).fetchall()
            rows += db.execute(f"SELECT data FROM cells WHERE {where}", (rid, *key)).fetchall()
        return [_structure(json.loads(data), CellResult, self.path, rid) for (data,) in rows]

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
    ) -> Rating:
        """Store ``rater``'s rating of a cell (replacing their earlier one): a pass/fail
        ``verdict``, a ``score`` in [0, 1], or both, and a ``comment``::

            store.rate(run_id, "t1", "baseline", 0, rater="ana", verdict=False,
                       comment="answers a different question")
        """
        from benchkit.store import _story

        with self._db("rate a cell") as db:
            rid = self._resolve(db, run_id)
            assert db is not None
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
                )

    def unrate(self, run_id: str, task_id: str, condition_id: str, epoch: int, rater: str) -> bool:
        """Delete ``rater``'s rating of a cell; whether there was one."""
        with self._db("delete a rating") as db:
            rid = self._resolve(db, run_id)
            assert db is not None
            with transaction(db):
                gone = db.execute(
                    "DELETE FROM ratings WHERE run_id = ? AND task_id = ? AND condition_id = ? "
                    "AND epoch = ? AND rater = ?",
                    (rid, task_id, condition_id, int(epoch), rater),
                ).rowcount
        return bool(gone)

    def ratings(self, run_id: str) -> list[Rating]:
        """A run's ratings (every rater's), in run order."""
        from benchkit.store import _story

        with self._db("read a run's ratings", create=False) as db:
            rid = self._resolve(db, run_id)
            assert db is not None
            return _story.ratings(db, rid)

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
        from benchkit.store._story import matrix

        with self._db("read a run's matrix", create=False) as db:
            rid = self._resolve(db, run_id)
            assert db is not None
            return matrix(db, rid, **filters)

    def search(
        self, text: str, *, run_id: str | None = None, limit: int = 50
    ) -> tuple[list[dict[str, Any]], int]:
        """Cells whose input, expected output, output or reasons hold every word of
        ``text`` (the last one as a prefix), in one run or the whole store, best first:
        at most ``limit`` of them, and how many match. Uses SQLite's FTS5 index, built per
        run on first search and rebuilt when the run changes."""
        from benchkit.store._story import search

        with self._db("search the store", create=False) as db:
            if db is None and run_id is None:
                return [], 0
            if run_id is not None:
                ids = [self._resolve(db, run_id)]
            else:
                assert db is not None
                ids = [r[0] for r in db.execute("SELECT run_id FROM runs")]
            if not ids:
                return [], 0
            assert db is not None
            return search(db, text, run_ids=ids, limit=limit)

    # -- the LLM response cache -----------------------------------------------------

    def cache_get(self, key: str) -> str | None:
        """The cached value (JSON text) under ``key``, or None; counts the hit."""
        with self._db("read the LLM cache", create=False) as db:
            if db is None:
                return None
            row = db.execute("SELECT value FROM llm_cache WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            with transaction(db):
                db.execute("UPDATE llm_cache SET hits = hits + 1 WHERE key = ?", (key,))
            value: str = row[0]
            return value

    def cache_put(self, key: str, value: str) -> None:
        """Store ``value`` (JSON text) under ``key``, replacing what was there."""
        with self._db("write the LLM cache") as db:
            assert db is not None
            with transaction(db):
                db.execute(
                    "INSERT OR REPLACE INTO llm_cache (key, value, created_at, hits) "
                    "VALUES (?, ?, ?, 0)",
                    (key, value, _now()),
                )


def _is(hint: Any) -> Callable[[Any], bool]:
    return lambda other: bool(other == hint)


def _tuple_of(fn: Callable[[Any, Any], Any], cls: type[Any]) -> Callable[[Any, Any], Any]:
    return lambda value, _: tuple([fn(item, cls) for item in value])


def _optional_of(fn: Callable[[Any, Any], Any], cls: type[Any]) -> Callable[[Any, Any], Any]:
    return lambda value, _: None if value is None else fn(value, cls)


def _reading_converter() -> cattrs.Converter:
    """The shared converter, tuned for reading many cells: the same result for every valid
    record, about a third faster than the general one.

    The cell classes get structure functions without detailed validation (one error for a
    bad record instead of an exception group per field), and optional primitives, tuples
    of cell classes and tuples of strings get direct hooks instead of cattrs' generic
    union and tuple dispatch. Each hook converts as the general one does (``float(v)``,
    ``str(v)``, a tuple of structured items).
    """
    conv = converter.copy()

    def optional(convert: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
        return lambda value, _: None if value is None else convert(value)

    for primitive in (float, str, int):
        hint: Any = primitive | None
        conv.register_structure_hook_func(_is(hint), optional(primitive))
    strings: Any = tuple[str, ...]
    conv.register_structure_hook_func(
        _is(strings), lambda value, _: tuple([str(item) for item in value])
    )
    leaves_first = (
        model.ToolCall,
        model.RetrievedItem,
        model.Usage,
        model.Response,
        results.Score,
        results.Verdict,
        results.CellResult,
    )
    for cls in leaves_first:
        fn = make_dict_structure_fn(cls, conv, _cattrs_detailed_validation=False)
        conv.register_structure_hook(cls, fn)
        many: Any = tuple[cls, ...]  # type: ignore[valid-type]
        maybe: Any = cls | None
        conv.register_structure_hook_func(_is(many), _tuple_of(fn, cls))
        conv.register_structure_hook_func(_is(maybe), _optional_of(fn, cls))
    return conv


_READER = _reading_converter()


def _number(text: str) -> float:
    """A score column's text as a float (what the writer wrote with ``repr``)."""
    try:
        return float(text)
    except (ValueError, TypeError) as exc:
        raise StoreError(
            f"the store holds a cell score benchkit cannot read ({text!r})",
            fix="upgrade benchkit if a newer one wrote it, or delete the run.",
        ) from exc


def _outlined(
    task_id: str,
    condition_id: str,
    epoch: int,
    status: CellStatus,
    data: str,
    path: Path,
    run_id: str,
) -> OutlineCell:
    """An outline cell (see :meth:`Store._outline`) whose score, weight, cluster and error
    category are read from its JSON, converted as cattrs converts them."""
    try:
        found = json.loads(data)
        score, cluster = found.get("score"), found.get("cluster")
        return OutlineCell(
            task_id,
            condition_id,
            epoch,
            status,
            score=None if score is None else float(score),
            weight=float(found.get("weight", 1.0)),
            cluster=None if cluster is None else str(cluster),
            error_category=str(found.get("error_category", "none")),
        )
    except (ValueError, TypeError, AttributeError) as exc:
        raise StoreError(
            f"run {run_id!r} in {str(path)!r} holds a cell benchkit cannot read "
            f"({type(exc).__name__}: {exc})",
            fix="upgrade benchkit if a newer one wrote it, or delete the run.",
        ) from exc


def _early_stop(info: RunInfo, cells: Sequence[CellResult]) -> EarlyStop | None:
    """What ``until_decided`` decided in a stored run, replayed from its cells (None when
    the run did not ask for it)."""
    options = info.options
    if not options.until_decided or not info.total_cells:
        return None
    per_task = len(info.conditions) * options.epochs
    method, k, errors_as = info.scoring_method, info.scoring_k, options.errors_as

    def reduce(found: Sequence[CellResult]) -> float | None:
        return task_value(found, method, k, errors_as)

    return replay(
        cells,
        [c.id for c in info.conditions],
        options.epochs,
        info.total_cells // per_task,
        options.seed,
        reduce,
        options.margin,
    )


def _outcome_json(result: RunResult) -> str:
    """A finished run's outcome as the ``runs.outcome`` column holds it: the RunResult's
    JSON without ``info`` (the ``info`` column) and ``cells`` (the cells table)."""
    data = converter.unstructure(attrs.evolve(result, cells=()))
    del data["info"], data["cells"]
    return _ENCODER.encode(data)


def _outcome(info: RunInfo, text: str, path: Path, run_id: str) -> RunResult:
    """The RunResult, without cells, of a stored outcome (see :func:`_outcome_json`)."""
    data = json.loads(text)
    data["info"] = converter.unstructure(info)
    data["cells"] = []
    result: RunResult = _structure(data, RunResult, path, run_id)
    return result


def _structure(data: Any, cls: type[Any], path: Path, run_id: str) -> Any:
    try:
        return _READER.structure(data, cls)
    except Exception as exc:  # cattrs raises ClassValidationError / KeyError on bad shapes
        raise StoreError(
            f"run {run_id!r} in {str(path)!r} holds a record benchkit cannot read "
            f"({type(exc).__name__}: {exc})",
            fix="upgrade benchkit if a newer one wrote it, or delete the run.",
        ) from exc


@attrs.frozen
class CellPage:
    """One page of a run's cells, from :meth:`Store.cells`.

    ``total`` counts the cells that pass the page's filters; ``offset`` and ``limit`` are
    the ones asked for, so the next page starts at ``offset + len(cells)`` while that is
    below ``total``.
    """

    run_id: str
    cells: tuple[CellResult, ...]
    total: int
    offset: int
    limit: int


@attrs.frozen
class PreparedRun:
    """What :meth:`Store.prepare` decided: the run id, its sink, the cells already done.

    ``resumed`` is true when an earlier run is continued; ``done`` are its reused cells
    (pass them to ``Runner.run(done=...)``), ``retried`` counts errored cells run again
    (``retry_errors``) and ``dropped`` the stored cells whose keys no longer match (they
    run again). ``replaced`` is true when a deterministic run replaces the stored run
    with its id.
    """

    run_id: str
    sink: StoreSink
    done: tuple[CellResult, ...] = ()
    resumed: bool = False
    retried: int = 0
    dropped: int = 0
    replaced: bool = False


class StoreSink:
    """A :class:`~benchkit.protocols.ResultSink` that writes one run's cells to a store.

    Made by :meth:`Store.prepare`; one run only. ``open`` writes the run's row in a
    transaction (so a store that is not writable fails the run before any cell runs) and
    starts the writer thread. ``write`` encodes the cell to its JSON row and queues it; the
    writer thread inserts queued rows in batches (up to :data:`BATCH_MAX` rows; woken by a
    cell, it waits :data:`BATCH_WAIT` seconds for more), one statement per batch, so the event loop
    never waits on the disk. (Encoding in the writer instead was measured slower: under the
    GIL the thread does not make Python work free, and the hand-offs cost more.) When the
    writer fails (disk full, store deleted), the next ``write`` raises the
    :class:`StoreError`, which stops the run. ``close`` drains the queue and records how
    the run ended.
    """

    def __init__(
        self,
        store: Store,
        run_id: str,
        keys: SuiteKeys,
        *,
        resume: bool,
        replace: bool = False,
        dropped: Sequence[tuple[str, str, int]] = (),
        reused: int = 0,
        seen_session: int = 0,
        benchmark: Benchmark | None = None,
        stale: Sequence[tuple[str, str, int]] = (),
        rerun: Sequence[tuple[str, str, int]] = (),
    ) -> None:
        self.store = store
        self._benchmark = benchmark  # its tasks are snapshot when the run is registered
        self._stale = list(stale)  # cells run again: their old transcripts go
        self._rerun = list(rerun)  # cells re-run as new attempts: the old ones are kept
        #: The attempt number of each re-run cell's new attempt (0 for every other cell).
        self.attempts: dict[tuple[str, str, int], int] = {}
        # (run id, task id, condition id, epoch, attempt, transcript JSON) to write.
        self._transcripts: deque[tuple[str, str, str, int, int, str]] = deque()
        self._seen_session = seen_session  # the run's last session when prepare() read it
        self.run_id = run_id
        self.keys = keys
        self._resume = resume
        self._replace = replace
        self._dropped = list(dropped)
        self._reused = reused
        # Rows go from the event loop to the writer thread through a deque (appending is
        # atomic and takes no lock); the writer is woken only when it may be waiting, i.e.
        # when a row lands in an empty deque. A queue that wakes its reader for every row
        # cost the loop about 1 us a cell.
        self._pending: deque[_Row] = deque()
        self._wake = threading.Event()
        self._finish: _Finish | None = None  # how the run ended, set by close()
        # A cell that is not plain (see _outline) was queued; the writer has said so.
        self._odd = False
        self._odd_marked = False
        self._thread: threading.Thread | None = None
        self._conn: sqlite3.Connection | None = None
        self._seq = 1
        self._written = 0
        self._error: StoreError | None = None
        self._reported = False

    def __repr__(self) -> str:
        return f"StoreSink({str(self.store.path)!r}, run_id={self.run_id!r})"

    async def open(self, info: RunInfo) -> None:
        if self._thread is not None:
            raise ConfigError(
                "this StoreSink was already used for a run",
                fix="call Store.prepare() again for every run.",
            )
        if info.run_id != self.run_id:
            raise ConfigError(
                f"the store sink was prepared for run {self.run_id!r} but the runner "
                f"started run {info.run_id!r}",
                fix="pass run_id=prepared.run_id to Runner.run().",
            )
        await anyio.to_thread.run_sync(self._open, info)
        self._thread = threading.Thread(
            target=self._writer, name=f"benchkit-store-{self.run_id}", daemon=True
        )
        self._thread.start()

    async def write(self, cell: CellResult) -> None:
        if self._error is not None:
            self._reported = True
            raise self._error
        task_id, condition_id, epoch = cell.task_id, cell.condition_id, cell.epoch
        score = cell.score
        transcript = cell.transcript
        if transcript is not None:  # before the row: the writer takes both when woken
            attempt = self.attempts.get((task_id, condition_id, epoch), 0) if self.attempts else 0
            self._transcripts.append(
                (self.run_id, task_id, condition_id, epoch, attempt, encode_transcript(transcript))
            )
        if not self._odd and (
            cell.weight != 1.0
            or cell.cluster is not None
            or cell.error_category == "evaluation_error"
        ):
            self._odd = True  # before the row is queued: the writer marks the run first
        pending = self._pending
        pending.append(
            (
                self.run_id,
                task_id,
                condition_id,
                epoch,
                cell.index,
                cell.status,
                self.keys.cell_key(task_id, condition_id, epoch, cell.index) or "",
                cell_json(cell, _ENCODER),
                "null" if score is None else repr(float(score)),
            )
        )
        size = len(pending)
        if size == 1:  # the writer may be waiting for work: only then is it woken
            self._wake.set()
        elif size > MAX_PENDING:
            while (
                len(pending) > MAX_PENDING // 2
                and self._error is None
                and self._thread is not None
                and self._thread.is_alive()
            ):
                await anyio.sleep(BATCH_WAIT)

    async def close(self, result: RunResult) -> None:
        thread = self._thread
        if thread is None:
            return
        self._finish = _Finish("interrupted") if result.interrupted else _Finish("finished", result)
        self._wake.set()
        await anyio.to_thread.run_sync(thread.join)
        if self._error is not None and not self._reported:
            self._reported = True
            raise self._error

    # -- in a worker thread ------------------------------------------------------------

    def _open(self, info: RunInfo) -> None:
        path = self.store.path
        conn = connect(path, timeout=self.store.timeout)
        try:
            with transaction(conn):
                self._register(conn, info)
        except sqlite3.Error as exc:
            conn.close()
            raise store_error(exc, path, f"record run {self.run_id!r}") from exc
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def _register(self, conn: sqlite3.Connection, info: RunInfo) -> None:
        now = _now()
        pid = os.getpid()
        info_json = _ENCODER.encode(converter.unstructure(info))
        run_id = self.run_id
        if self._resume or self._replace:  # checked again, in the claiming transaction
            self.store._refuse_if_running(conn, run_id, "resume it")
        if self._resume:
            updated = conn.execute(
                "UPDATE runs SET status = 'running', suite_key = ?, updated_at = ?, "
                "finished_at = NULL, total_cells = ?, pid = ?, host = ?, "
                "info = ?, outcome = NULL, stored_cells = NULL, stored_errors = NULL "
                "WHERE run_id = ?",
                (self.keys.suite_key, now, self.keys.total_cells, pid, _HOST, info_json, run_id),
            ).rowcount
            if updated != 1:
                raise StoreError(
                    f"run {run_id!r} was deleted from {str(self.store.path)!r} before "
                    "it could be resumed",
                    fix="run again without --resume to start a new run.",
                )
            conn.executemany(
                "DELETE FROM cells WHERE run_id = ? AND task_id = ? AND condition_id = ? "
                "AND epoch = ?",
                [(run_id, *key) for key in self._dropped],
            )
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM sessions WHERE run_id = ?", (run_id,)
            ).fetchone()
            self._refuse_if_resumed_meanwhile(conn, int(last))
            self._seq = int(last) + 1
        else:
            if self._replace:
                for table in RUN_TABLES:
                    conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
                drop_search_rows(conn, run_id)
            try:
                conn.execute(
                    "INSERT INTO runs (run_id, suite_key, benchmark_id, status, started_at, "
                    "updated_at, total_cells, pid, host, info, plain_cells) "
                    "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, 1)",
                    (
                        run_id,
                        self.keys.suite_key,
                        info.benchmark_id,
                        now,
                        now,
                        self.keys.total_cells,
                        pid,
                        _HOST,
                        info_json,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise ConfigError(
                    f"run {run_id!r} was stored by another process meanwhile",
                    fix="resume it (--resume) or pick another run id.",
                ) from exc
        self._remember(conn, now)
        conn.execute(
            "INSERT INTO sessions (run_id, seq, kind, started_at, status, reused, pid, host, "
            "benchkit) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?)",
            (
                run_id,
                self._seq,
                "resume" if self._resume else "start",
                now,
                self._reused,
                pid,
                _HOST,
                __version__,
            ),
        )

    def _remember(self, conn: sqlite3.Connection, now: str) -> None:
        """Inside the claiming transaction: clear the run's task snapshot (the writer
        thread writes the new one), forget the transcripts of cells that run again, and
        keep the attempts that re-run cells replace."""
        run_id = self.run_id
        if self._benchmark is not None:  # the writer thread writes the new snapshot first
            conn.execute("DELETE FROM tasks WHERE run_id = ?", (run_id,))
        conn.executemany(
            "DELETE FROM transcripts WHERE run_id = ? AND task_id = ? AND condition_id = ? "
            "AND epoch = ?",
            [(run_id, *key) for key in (*self._stale, *self._dropped)],
        )
        for key in self._rerun:
            where = "run_id = ? AND task_id = ? AND condition_id = ? AND epoch = ?"
            (attempt,) = conn.execute(
                f"SELECT COUNT(*) FROM cell_attempts WHERE {where}", (run_id, *key)
            ).fetchone()
            moved = conn.execute(
                "INSERT INTO cell_attempts (run_id, task_id, condition_id, epoch, attempt, "
                f"status, stored_at, data) SELECT run_id, task_id, condition_id, epoch, ?, "
                f"status, ?, data FROM cells WHERE {where}",
                (attempt, now, run_id, *key),
            ).rowcount
            if moved:
                conn.execute(f"DELETE FROM cells WHERE {where}", (run_id, *key))
                self.attempts[key] = int(attempt) + 1

    def _refuse_if_resumed_meanwhile(self, conn: sqlite3.Connection, last: int) -> None:
        """Inside the claiming transaction: another process resumed the run after
        :meth:`Store.prepare` read it, so the cells it found missing may be done or doing."""
        if last == self._seen_session:
            return
        row = conn.execute(
            "SELECT pid, host FROM sessions WHERE run_id = ? AND seq = ?", (self.run_id, last)
        ).fetchone()
        pid, host = row if row is not None else (None, None)
        raise ConfigError(
            f"run {self.run_id!r} is being resumed by pid {pid} on host {host}",
            fix="wait for it to finish, then resume again to run whatever is still missing.",
        )

    def _writer(self) -> None:
        conn = self._conn
        assert conn is not None
        pending, wake = self._pending, self._wake
        take = pending.popleft
        run_id = self.run_id
        try:
            if self._benchmark is not None:
                # The run's tasks, once each, before its cells: here rather than in open(),
                # so the run starts at once and SQLite's share of the work runs beside it.
                with transaction(conn):
                    conn.executemany(
                        "INSERT OR REPLACE INTO tasks (run_id, task_id, position, data) "
                        "VALUES (?, ?, ?, ?)",
                        task_rows(run_id, self._benchmark),
                    )
            while True:
                wake.wait()
                wake.clear()  # before draining: a row queued from now on sets it again
                time.sleep(BATCH_WAIT)  # let a batch gather
                while True:
                    # Read before draining: close() sets it after the run's last row.
                    finish = self._finish
                    rows = [take() for _ in range(min(len(pending), BATCH_MAX))]
                    if self._odd and not self._odd_marked:  # before the rows that made it so
                        conn.execute("UPDATE runs SET plain_cells = 0 WHERE run_id = ?", (run_id,))
                        self._odd_marked = True
                    stories = self._transcripts
                    if finish is not None and not pending:
                        with transaction(conn):
                            if rows:
                                _insert(conn, rows)
                            if stories:
                                _insert_transcripts(conn, stories)
                            self._end(conn, finish, len(rows))
                        return
                    if stories:
                        with transaction(conn):
                            _insert_transcripts(conn, stories)
                    if rows:
                        _insert(conn, rows)
                        self._written += len(rows)
                    if not pending:
                        break
        except sqlite3.Error as exc:
            self._error = store_error(exc, self.store.path, f"store the cells of {run_id!r}")
        except Exception as exc:  # e.g. text that is not valid Unicode cannot be stored
            self._error = StoreError(
                f"cannot store the cells of {run_id!r}: {type(exc).__name__}: {exc}",
                fix="make the provider return valid text (JSON values).",
            )
        finally:
            conn.close()
            self._conn = None

    def _end(self, conn: sqlite3.Connection, finish: _Finish, pending: int) -> None:
        now = _now()
        outcome, counts = None, (None, None)
        if finish.result is not None:
            outcome = _outcome_json(finish.result)
            counts = conn.execute(_COUNT_CELLS, (self.run_id,)).fetchone()
        conn.execute(
            "UPDATE runs SET status = ?, updated_at = ?, finished_at = ?, outcome = ?, "
            "stored_cells = ?, stored_errors = ? WHERE run_id = ?",
            (finish.status, now, now, outcome, *counts, self.run_id),
        )
        conn.execute(
            "UPDATE sessions SET status = ?, ended_at = ?, written = ? "
            "WHERE run_id = ? AND seq = ?",
            (finish.status, now, self._written + pending, self.run_id, self._seq),
        )
