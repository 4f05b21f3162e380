"""The run store's writer: a :class:`StoreSink` takes one run's finished cells and a
thread of its own commits them in batches, so the event loop never waits on the disk.

:meth:`Store.prepare <benchkit.store.Store.prepare>` makes the sink (see
:mod:`benchkit.store._resume`); the sink registers the run (or claims it again, for a
resume) when the run opens, snapshots its tasks, writes its cells and transcripts, and
records how the run ended — with, for a finished run, its outcome and counts, so lists
and summaries never count its cells again.
"""

from __future__ import annotations

import functools
import itertools
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import anyio.to_thread
import attrs

from benchkit._celljson import cell_json
from benchkit._secrets import known
from benchkit._version import __version__
from benchkit.errors import ConfigError, StoreError
from benchkit.model import Benchmark, Task
from benchkit.results import UNJUDGED, CellResult, RunInfo, RunResult
from benchkit.serde import converter
from benchkit.store._keys import SuiteKeys
from benchkit.store._records import (
    COUNT_CELLS,
    ENCODER,
    HOST,
    StoreFile,
    outcome_json,
    refuse_if_running,
    stop_json,
)
from benchkit.store._records import now as _now
from benchkit.store._schema import connect, is_locked, store_error, transaction
from benchkit.store._story import RUN_TABLES, drop_search_rows, encode_transcript, task_rows

__all__ = ["BATCH_MAX", "BATCH_WAIT", "MAX_PENDING", "StoreSink"]

#: The writer inserts at most this many cells per batch (one statement on SQLite >= 3.32).
#: A busy event loop holds the GIL, and the writer waits up to the 5 ms switch interval
#: to take it back after each statement: at 256 rows a statement that capped the writer
#: near the rate a no-op run makes cells, and the run kept pausing for it.
BATCH_MAX = 1024
#: ...and, woken by a cell, lets a batch gather for this long (seconds) or until
#: :data:`BATCH_MAX` rows wait. Each wake writes one statement of cells (the largest
#: power of two of those waiting; the rest join the next batch), so a finished cell is
#: committed within about twice this long. Every wake hands the GIL from the busy event
#: loop to the writer and back; at 2 ms a fast run woke the writer for every few dozen
#: cells and wrote each batch in several statements (perf/RESULTS.md).
BATCH_WAIT = 0.02
#: A run pauses (without blocking the event loop) while more cells than this wait to be
#: written, so a slow disk bounds both memory and what a crash can lose.
MAX_PENDING = 8192

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
#: what SQLite binds in one statement (a batch of 100 is 64 + 32 + 4): SQLite compiles and
#: the sqlite3 module caches one statement per size, and a compiled 256-row statement is
#: large — caching one for every batch size seen held 25 MB (the sizes up to 1,024 rows
#: add about 3 MB). A full batch of :data:`BATCH_MAX` cells is one statement on any SQLite
#: since 3.32 (32,766 bound values; 999 before). The task snapshot and the transcripts go
#: in the same way: the snapshot as ``executemany`` (a statement a task) cost a run of
#: one-cell tasks ~30 µs a cell, most of it the GIL changing hands.
_MAX_VALUES = 32_766 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999
_CELLS = (
    "INSERT OR REPLACE INTO cells (run_id, task_id, condition_id, epoch, position, status, "
    "cell_key, data, score) VALUES ",
    9,
)
_TASKS = ("INSERT OR REPLACE INTO tasks (run_id, task_id, position, data) VALUES ", 4)
_TRANSCRIPTS = (
    "INSERT OR REPLACE INTO transcripts (run_id, task_id, condition_id, epoch, attempt, "
    "data) VALUES ",
    6,
)
#: Tasks snapshot per statement when the writer reads them from the benchmark at the run's
#: end (those the run did not reach).
_TASKS_PER_STATEMENT = 512

_flatten = itertools.chain.from_iterable


@functools.lru_cache(maxsize=32)
def _insert_sql(table: tuple[str, int], rows: int) -> str:
    """The INSERT statement of ``table`` (its head and column count) for ``rows`` rows."""
    head, columns = table
    return head + ",".join(["(" + ",".join("?" * columns) + ")"] * rows)


def _insert(
    conn: sqlite3.Connection, table: tuple[str, int], rows: Sequence[tuple[Any, ...]]
) -> None:
    """Insert ``rows`` in statements of power-of-two sizes, largest first."""
    most = 1 << ((_MAX_VALUES // table[1]).bit_length() - 1)
    start = 0
    while start < len(rows):
        size = min(most, 1 << ((len(rows) - start).bit_length() - 1))
        chunk = rows[start : start + size]
        conn.execute(_insert_sql(table, size), list(_flatten(chunk)))
        start += size


def _insert_tasks(conn: sqlite3.Connection, rows: Iterator[tuple[str, str, int, str]]) -> None:
    """Insert the task snapshot's rows, :data:`_TASKS_PER_STATEMENT` a statement."""
    while chunk := list(itertools.islice(rows, _TASKS_PER_STATEMENT)):
        _insert(conn, _TASKS, chunk)


@attrs.frozen
class _Finish:
    """How the run ended, for the writer's last transaction: the run's final state and,
    when it finished, its result (whose outcome the writer stores)."""

    status: str
    result: RunResult | None = None
    stop: str | None = None  # an interrupted run's stop JSON (the runs.stop column)


class StoreSink:
    """A :class:`~benchkit.protocols.ResultSink` that writes one run's cells to a store.

    Made by :meth:`Store.prepare`; one run only. ``open`` writes the run's row in a
    transaction (so a store that is not writable fails the run before any cell runs) — on
    the calling thread, or in a worker thread when it must wait for another process's
    write lock — and starts the writer thread. ``write`` encodes the cell to its JSON row
    and queues it; the writer thread inserts queued rows in batches (woken by a cell, it
    lets up to :data:`BATCH_WAIT` seconds' worth gather, or :data:`BATCH_MAX` rows), one
    statement per batch, so the event loop never waits on the disk. (Encoding in the
    writer instead was measured slower: under the
    GIL the thread does not make Python work free, and the hand-offs cost more.) When the
    writer fails (disk full, store deleted), the next ``write`` raises the
    :class:`StoreError`, which stops the run. ``close`` drains the queue and records how
    the run ended.
    """

    def __init__(
        self,
        store: StoreFile,
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
        self._benchmark = benchmark  # its tasks are snapshot as the run reaches them
        # The tasks the runner reached (see_task) and the writer has not written yet, and
        # how many it reached in all: the writer snapshots the rest from the benchmark
        # when the run ends.
        self._reached: deque[tuple[int, Task]] = deque()
        self._seen = 0
        # Tasks at positions below this are in the snapshot (the writer's count): a batch
        # of cells goes in with the snapshot of every task it names, in one transaction,
        # so a run killed at any moment has no stored cell without its task.
        self._snapped = 0
        # The benchmark's tasks from position ``_snapped`` on, read by the writer when a
        # cell comes whose task the runner did not pass to see_task (a sink wrapped by
        # another, say): (next position, iterator), made on first need.
        self._source: tuple[int, Iterator[tuple[int, Task]]] | None = None
        self._stale = list(stale)  # cells run again: their old transcripts go
        self._rerun = list(rerun)  # cells re-run as new attempts: the old ones are kept
        #: The attempt number of each re-run cell's new attempt (0 for every other cell).
        self.attempts: dict[tuple[str, str, int], int] = {}
        # (run id, task id, condition id, epoch, attempt, transcript JSON) to write, by
        # cell: each goes in with its cell, in the same transaction.
        self._transcripts: dict[tuple[str, str, int], tuple[str, str, str, int, int, str]] = {}
        self._seen_session = seen_session  # the run's last session when prepare() read it
        # Every text the sink writes passes through the one redaction (benchkit._secrets):
        # whole for the run's record and its tasks; for cells and transcripts, which the
        # runner and the recorder redacted whole, a check for every known secret value.
        self._secrets = known()
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
        # What open() and the run's end encode, prepared now, with the store's other
        # preparations before the run: cattrs builds each on first use, 2-4 ms that held
        # up the run's start and 10-20 ms that the writer held the GIL for mid-run.
        converter.get_unstructure_hook(RunInfo)
        converter.get_unstructure_hook(RunResult)

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
        # Registering the run is a few milliseconds of blocking work before any cell
        # runs, done here rather than in a worker thread: the hops to a worker and back
        # cost a run 15-60 ms of wall time on a busy machine (perf/RESULTS.md). Only when
        # another process holds the store's write lock does the claim wait, in a worker
        # thread, so the event loop never waits on a lock.
        path = self.store.path
        conn = connect(path, timeout=self.store.timeout)
        try:
            if not self._claim_at_once(conn, info):
                await anyio.to_thread.run_sync(self._claim, conn, info)
        except sqlite3.Error as exc:
            conn.close()
            raise store_error(exc, path, f"record run {self.run_id!r}") from exc
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._thread = threading.Thread(
            target=self._writer, name=f"benchkit-store-{self.run_id}", daemon=True
        )
        self._thread.start()

    def see_task(self, position: int, task: Task) -> None:
        """Keep ``task`` for the run's task snapshot (the runner calls this as the run
        reaches each task, in order, so the snapshot is taken from the tasks the run
        made: a generator's tasks are not made a second time, nor a file read twice).
        The writer thread encodes and inserts them with the next batch of cells."""
        if self._benchmark is not None and position == self._seen:
            self._seen = position + 1
            self._reached.append((position, task))

    async def write(self, cell: CellResult) -> None:
        if self._error is not None:
            self._reported = True
            raise self._error
        task_id, condition_id, epoch = cell.task_id, cell.condition_id, cell.epoch
        score = cell.score
        transcript = cell.transcript
        secrets = self._secrets = self._secrets.current()
        if transcript is not None:  # before the row: the writer takes both when woken
            attempt = self.attempts.get((task_id, condition_id, epoch), 0) if self.attempts else 0
            self._transcripts[task_id, condition_id, epoch] = (
                self.run_id,
                task_id,
                condition_id,
                epoch,
                attempt,
                secrets.scrub_known(encode_transcript(transcript)),
            )
        if not self._odd and (
            cell.weight != 1.0 or cell.cluster is not None or cell.error_category in UNJUDGED
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
                secrets.scrub_known(cell_json(cell, ENCODER)),
                "null" if score is None else repr(float(score)),
            )
        )
        size = len(pending)
        # The writer is woken only when it may be waiting for work (the first row), and
        # when a full batch has gathered: a batch a wake, however fast cells come.
        if size == 1 or size == BATCH_MAX:
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
        self._finish = (
            _Finish("interrupted", stop=stop_json(result))
            if result.interrupted
            else _Finish("finished", result)
        )
        self._wake.set()
        # Waited for without a worker thread (a hop there and back costs more than the
        # writer's last transaction): the writer needs the GIL, which sleeping lets go.
        # Shielded, as joining it in a worker thread was: the run's end is not skipped.
        pause = 0.0005
        with anyio.CancelScope(shield=True):
            while thread.is_alive():
                await anyio.sleep(pause)
                pause = min(pause * 2, 0.001)
        thread.join()
        if self._error is not None and not self._reported:
            self._reported = True
            raise self._error

    # -- opening ---------------------------------------------------------------------

    def _claim_at_once(self, conn: sqlite3.Connection, info: RunInfo) -> bool:
        """Register the run if the store's write lock is free right now (False, having
        done nothing, when another connection holds it)."""
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if is_locked(exc):
                return False
            raise
        finally:
            conn.execute(f"PRAGMA busy_timeout = {round(self.store.timeout * 1000)}")
        try:
            self._register(conn, info)
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return True

    def _claim(self, conn: sqlite3.Connection, info: RunInfo) -> None:
        """Register the run, waiting (up to the store's timeout) for the write lock."""
        with transaction(conn):
            self._register(conn, info)

    def _register(self, conn: sqlite3.Connection, info: RunInfo) -> None:
        now = _now()
        pid = os.getpid()
        info_json = ENCODER.encode(self._secrets.redact(converter.unstructure(info)))
        run_id = self.run_id
        if self._resume or self._replace:  # checked again, in the claiming transaction
            refuse_if_running(conn, run_id, "resume it")
        if self._resume:
            updated = conn.execute(
                "UPDATE runs SET status = 'running', suite_key = ?, updated_at = ?, "
                "finished_at = NULL, total_cells = ?, pid = ?, host = ?, "
                "info = ?, outcome = NULL, stored_cells = NULL, stored_errors = NULL, stop = NULL "
                "WHERE run_id = ?",
                (self.keys.suite_key, now, self.keys.total_cells, pid, HOST, info_json, run_id),
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
                        HOST,
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
                HOST,
                __version__,
            ),
        )

    def _remember(self, conn: sqlite3.Connection, now: str) -> None:
        """Inside the claiming transaction: drop the task snapshot's rows of tasks the
        benchmark no longer has where they were, forget the transcripts of cells that run
        again, and keep the attempts that re-run cells replace."""
        run_id = self.run_id
        if self._resume and self._benchmark is not None:
            # The other rows stay, so the explorer shows every task throughout a resume;
            # the writer replaces each as the run reaches it (the rest when it ends).
            keys = self.keys
            conn.executemany(
                "DELETE FROM tasks WHERE run_id = ? AND task_id = ?",
                [
                    (run_id, task_id)
                    for task_id, position in conn.execute(
                        "SELECT task_id, position FROM tasks WHERE run_id = ?", (run_id,)
                    )
                    if not keys.holds_at(task_id, position)
                ],
            )
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

    # -- in the writer thread ----------------------------------------------------------

    def _writer(self) -> None:
        conn = self._conn
        assert conn is not None
        pending, wake = self._pending, self._wake
        take = pending.popleft
        run_id = self.run_id
        reached = self._reached
        try:
            while True:
                if not pending and not reached:
                    wake.wait()  # until a row is queued or the run ends
                wake.clear()  # before draining: a row queued from now on sets it again
                self._gather()
                while True:
                    # Read before draining: close() sets it after the run's last row.
                    finish = self._finish
                    size = min(len(pending), BATCH_MAX)
                    last = finish is not None and len(pending) == size
                    if size and not last:
                        # One statement a wake (each hands the GIL over and back): the
                        # largest power of two; the rest joins the next batch.
                        size = 1 << (size.bit_length() - 1)
                    rows = [take() for _ in range(size)]
                    tasks = self._tasks_for(rows, last)
                    stories = self._stories_of(rows) if self._transcripts else []
                    odd = self._odd and not self._odd_marked
                    if stories or odd or last or (tasks and rows):
                        with transaction(conn):
                            if odd:  # before the rows that made it so
                                conn.execute(
                                    "UPDATE runs SET plain_cells = 0 WHERE run_id = ?", (run_id,)
                                )
                                self._odd_marked = True
                            if tasks:
                                _insert(conn, _TASKS, tasks)
                            if last:
                                self._snapshot_rest(conn)
                            if stories:
                                _insert(conn, _TRANSCRIPTS, stories)
                            if rows:
                                _insert(conn, _CELLS, rows)
                            if last and finish is not None:
                                self._end(conn, finish, len(rows))
                        if last:
                            return
                    elif rows:
                        _insert(conn, _CELLS, rows)  # one statement, its own transaction
                    elif tasks:
                        _insert(conn, _TASKS, tasks)
                    self._written += len(rows)
                    if len(pending) < BATCH_MAX and len(reached) < BATCH_MAX:
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

    def _tasks_for(self, rows: Sequence[_Row], last: bool) -> list[tuple[str, str, int, str]]:
        """The snapshot rows to write with ``rows``: the tasks the runner reached meanwhile,
        in order (a power of two of them, as for the cells; all at the end), and at least
        every task up to the furthest one ``rows`` name — read from the benchmark when
        the runner did not pass them on."""
        reached = self._reached
        most = len(reached)
        if most and not last:
            most = 1 << (min(most, BATCH_MAX).bit_length() - 1)
        need = max(row[4] for row in rows) + 1 if rows and self._benchmark is not None else 0
        chosen: list[tuple[int, Task]] = []
        while reached and (most > 0 or self._snapped < need):
            position, task = reached.popleft()
            most -= 1
            if position >= self._snapped:
                chosen.append((position, task))
                self._snapped = position + 1
        if self._snapped < need:
            chosen += self._read_tasks(need)
        return self._scrubbed(task_rows(self.run_id, chosen))

    def _scrubbed(
        self, rows: Iterator[tuple[str, str, int, str]]
    ) -> list[tuple[str, str, int, str]]:
        """Snapshot rows with the one redaction applied to each task's JSON."""
        scrub = self._secrets.scrub_json
        return [
            (run_id, task_id, position, scrub(data)) for run_id, task_id, position, data in rows
        ]

    def _read_tasks(self, need: int) -> list[tuple[int, Task]]:
        """The benchmark's tasks from the snapshot's end up to position ``need``."""
        assert self._benchmark is not None
        if self._source is None or self._source[0] != self._snapped:
            tasks = enumerate(self._benchmark.iter_tasks())
            self._source = (self._snapped, itertools.islice(tasks, self._snapped, None))
        _, source = self._source
        read = list(itertools.islice(source, need - self._snapped))
        if read:
            self._snapped = read[-1][0] + 1
        self._source = (self._snapped, source)
        return read

    def _stories_of(self, rows: Sequence[_Row]) -> list[tuple[str, str, str, int, int, str]]:
        """The transcripts of the cells in ``rows`` (taken from those waiting)."""
        waiting = self._transcripts
        found = []
        for row in rows:
            story = waiting.pop((row[1], row[2], row[3]), None)
            if story is not None:
                found.append(story)
        return found

    def _snapshot_rest(self, conn: sqlite3.Connection) -> None:
        """At the run's end: snapshot the tasks the runner did not reach (all of them when
        the sink was driven without a runner), read from the benchmark."""
        if self._benchmark is None or self._snapped >= self.keys.task_count:
            return  # the keys pass counted the tasks
        rest = itertools.islice(enumerate(self._benchmark.iter_tasks()), self._snapped, None)
        scrub = self._secrets.scrub_json
        _insert_tasks(
            conn,
            ((run, task, at, scrub(data)) for run, task, at, data in task_rows(self.run_id, rest)),
        )

    def _gather(self) -> None:
        """Let a batch gather: wait until :data:`BATCH_WAIT` seconds have passed,
        :data:`BATCH_MAX` rows wait, or the run ends — whichever comes first."""
        deadline = time.monotonic() + BATCH_WAIT
        pending, wake = self._pending, self._wake
        while self._finish is None and len(pending) < BATCH_MAX:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            wake.wait(left)
            wake.clear()

    def _end(self, conn: sqlite3.Connection, finish: _Finish, pending: int) -> None:
        now = _now()
        outcome, counts = None, (None, None)
        if finish.result is not None:
            outcome = self._secrets.scrub_json(outcome_json(finish.result))
            counts = conn.execute(COUNT_CELLS, (self.run_id,)).fetchone()
        conn.execute(
            "UPDATE runs SET status = ?, updated_at = ?, finished_at = ?, outcome = ?, "
            "stored_cells = ?, stored_errors = ?, stop = ? WHERE run_id = ?",
            (finish.status, now, now, outcome, *counts, finish.stop, self.run_id),
        )
        conn.execute(
            "UPDATE sessions SET status = ?, ended_at = ?, written = ? "
            "WHERE run_id = ? AND seq = ?",
            (finish.status, now, self._written + pending, self.run_id, self._seq),
        )
