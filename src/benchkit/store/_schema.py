"""The SQLite side of the run store: opening a file safely, the schema and its migrations.

Every connection runs in WAL mode with ``synchronous=NORMAL`` (readers never block the
writer; a commit survives a crash of the process), a busy timeout (two processes share one
store by taking turns on short write transactions) and foreign keys on. Write transactions
start with ``BEGIN IMMEDIATE`` so a writer waits for the lock up front instead of failing
half-way through.

The schema has a version in the ``meta`` table. :data:`MIGRATIONS` lists the SQL steps that
bring a store from each version to the next; opening an older store applies the missing
steps in one transaction. A store from a newer benchkit, a file that is not SQLite, or a
damaged file is a :class:`~benchkit.store.StoreError` — never a silent reset.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from benchkit._secrets import known
from benchkit.errors import StoreError

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "TEXT_COLUMNS",
    "connect",
    "is_locked",
    "scrub_secrets",
    "store_error",
    "transaction",
]

#: The columns that hold text benchkit wrote — JSON, but for the ratings' comments — with
#: the columns that find their row, and whether the JSON is configuration (whose values
#: under keys naming credentials are redacted too).
TEXT_COLUMNS: tuple[tuple[str, tuple[str, ...], str, bool], ...] = (
    ("runs", ("run_id",), "info", True),
    ("runs", ("run_id",), "outcome", False),
    ("cells", ("run_id", "task_id", "condition_id", "epoch"), "data", False),
    ("cell_attempts", ("run_id", "task_id", "condition_id", "epoch", "attempt"), "data", False),
    ("tasks", ("run_id", "task_id"), "data", False),
    ("transcripts", ("run_id", "task_id", "condition_id", "epoch", "attempt"), "data", False),
    ("llm_cache", ("key",), "value", False),
)


def scrub_secrets(conn: sqlite3.Connection) -> None:
    """Apply the one redaction (:mod:`benchkit._secrets`: the secret values this process
    knows — its environment's —, and every key shape) to every text the store holds, and
    drop the search index (rebuilt from the clean texts when next searched). Rows are
    rewritten only where something was redacted."""
    secrets = known()
    for table, keys, column, config in TEXT_COLUMNS:
        where = " AND ".join(f"{key} = ?" for key in keys)
        changed = []
        for *found, text in conn.execute(
            f"SELECT {', '.join(keys)}, {column} FROM {table} WHERE {column} IS NOT NULL"
        ):
            clean = secrets.scrub_json(text, keys=config)
            if clean != text:
                changed.append((clean, *found))
        conn.executemany(f"UPDATE {table} SET {column} = ? WHERE {where}", changed)
    changed = [
        (clean, rowid)
        for rowid, comment in conn.execute("SELECT rowid, comment FROM ratings")
        if (clean := secrets.scrub(comment)) != comment
    ]
    conn.executemany("UPDATE ratings SET comment = ? WHERE rowid = ?", changed)
    for table in ("cell_search", "cell_search_runs"):
        # An FTS5 table cannot be dropped where this SQLite has no FTS5 (nor searched).
        with suppress(sqlite3.OperationalError):
            conn.execute(f"DROP TABLE IF EXISTS {table}")


def _add_column(conn: sqlite3.Connection, table: str, column: str, kind: str) -> None:
    """``ALTER TABLE table ADD COLUMN column kind``, unless the table has that column."""
    if not any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})")):
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


#: SQL steps per schema version: ``MIGRATIONS[i]`` brings a store from version i to i + 1;
#: a step is an SQL statement or a function of the connection.
MIGRATIONS: tuple[tuple[str | Callable[[sqlite3.Connection], None], ...], ...] = (
    (
        """CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        )""",
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            suite_key TEXT NOT NULL,
            benchmark_id TEXT NOT NULL,
            status TEXT NOT NULL,
            started_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            finished_at TEXT,
            total_cells INTEGER NOT NULL,
            pid INTEGER,
            host TEXT,
            info TEXT NOT NULL
        )""",
        "CREATE INDEX runs_by_suite ON runs (suite_key, started_at)",
        "CREATE INDEX runs_by_start ON runs (started_at)",
        """CREATE TABLE sessions (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            status TEXT NOT NULL,
            reused INTEGER NOT NULL DEFAULT 0,
            written INTEGER NOT NULL DEFAULT 0,
            pid INTEGER,
            host TEXT,
            benchkit TEXT NOT NULL,
            PRIMARY KEY (run_id, seq)
        )""",
        """CREATE TABLE cells (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            task_id TEXT NOT NULL,
            condition_id TEXT NOT NULL,
            epoch INTEGER NOT NULL,
            position INTEGER NOT NULL,
            status TEXT NOT NULL,
            cell_key TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, task_id, condition_id, epoch)
        )""",
        """CREATE TABLE llm_cache (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            created_at TEXT NOT NULL,
            hits INTEGER NOT NULL DEFAULT 0
        )""",
    ),
    # 1 -> 2: pages of a run's cells in run order (Store.cells) without sorting the run —
    # the index the server's reader adds to schema-1 stores (store/_queries.py), hence IF
    # NOT EXISTS and its exact columns; each cell's score as the text of its JSON number
    # ("null" for none), so a comparison reads it exactly without parsing the cell (NULL
    # in cells stored before: read the JSON).
    (
        "CREATE INDEX IF NOT EXISTS cells_by_position "
        "ON cells (run_id, position, condition_id, epoch)",
        "ALTER TABLE cells ADD COLUMN score TEXT",
    ),
    # 2 -> 3: a finished run's outcome — its RunResult as JSON without info and cells
    # (aggregates, groups, comparisons) — and its counts of stored and errored cells,
    # written when the run finishes, so `runs show` and `runs list` print a run without
    # reading its cells. NULL for runs stored before, unfinished or resumed since:
    # readers recompute them from the cells.
    (
        "ALTER TABLE runs ADD COLUMN outcome TEXT",
        "ALTER TABLE runs ADD COLUMN stored_cells INTEGER",
        "ALTER TABLE runs ADD COLUMN stored_errors INTEGER",
    ),
    # 3 -> 4: whether every stored cell of the run is plain — weight 1, no cluster, not a
    # grader's failure — so a comparison reads ids, status and score from the columns
    # without searching each cell's JSON for the rare ones. 1 for a run created since;
    # set to 0 before the first other cell is written; NULL for runs stored before:
    # readers search the JSON.
    ("ALTER TABLE runs ADD COLUMN plain_cells INTEGER",),
    # 4 -> 5 (issue #25): what a cell's story needs beside the cell.
    # * tasks: each run's tasks as they were when the run was prepared (once per task, the
    #   JSON the explorer shows: input, expected, tags, metadata...), so the store alone
    #   shows them whatever the run's origin (Python, any format, Ray, a moved file).
    # * transcripts: a cell's recorded events (benchkit.transcript), one row per cell
    #   attempt that recorded any, kept out of the cells' JSON so pages, loads and
    #   comparisons never read them.
    # * cell_attempts: the earlier attempts of re-run cells (the cells table keeps the
    #   latest, which statistics use); a cell's attempt number is how many are kept here.
    # * ratings: people's ratings of cells, one per rater per cell.
    # The tables are created IF NOT EXISTS: a store taken back to an older version by hand
    # (tests do) keeps them. tasks is WITHOUT ROWID (one b-tree fewer: its rows go in as a
    # run starts, ~20 % faster so).
    (
        """CREATE TABLE IF NOT EXISTS tasks (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            task_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, task_id)
        ) WITHOUT ROWID""",
        "CREATE INDEX IF NOT EXISTS tasks_by_position ON tasks (run_id, position)",
        """CREATE TABLE IF NOT EXISTS transcripts (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            task_id TEXT NOT NULL,
            condition_id TEXT NOT NULL,
            epoch INTEGER NOT NULL,
            attempt INTEGER NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, task_id, condition_id, epoch, attempt)
        )""",
        """CREATE TABLE IF NOT EXISTS cell_attempts (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            task_id TEXT NOT NULL,
            condition_id TEXT NOT NULL,
            epoch INTEGER NOT NULL,
            attempt INTEGER NOT NULL,
            status TEXT NOT NULL,
            stored_at TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, task_id, condition_id, epoch, attempt)
        )""",
        """CREATE TABLE IF NOT EXISTS ratings (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            task_id TEXT NOT NULL,
            condition_id TEXT NOT NULL,
            epoch INTEGER NOT NULL,
            rater TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            verdict INTEGER,
            score REAL,
            comment TEXT NOT NULL,
            created TEXT NOT NULL,
            PRIMARY KEY (run_id, task_id, condition_id, epoch, rater)
        )""",
    ),
    # 5 -> 6 (issue #42): no secret is stored. Texts written before were redacted only in
    # transcripts, and a key an upstream echoed back (a 401 quoting the request's header)
    # was kept in error texts, outputs, outcomes and the search index: every text column
    # passes through the one redaction, and the search index is rebuilt.
    (scrub_secrets,),
    # 6 -> 7 (issue #44): why an interrupted run stopped, as JSON: ``{"reason": "budget",
    # "budget": {...}}`` (the limit reached, the limits and what was spent), ``{"reason":
    # "signal"}`` (Ctrl-C, SIGTERM), ``cancelled``, ``error``. NULL for finished and
    # running runs, and for runs stopped before: readers say `interrupted` alone. Added
    # only where missing: a store taken back to an older version by hand (tests do) has it.
    (lambda conn: _add_column(conn, "runs", "stop", "TEXT"),),
)

#: The schema version this benchkit writes.
SCHEMA_VERSION = len(MIGRATIONS)

_FIX_ELSEWHERE = "point --store / BENCHKIT_STORE at another file"


def is_locked(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite saying another connection holds a lock it needed
    (``SQLITE_BUSY`` / ``SQLITE_LOCKED``: "database is locked", "database table is
    locked", "database is busy"): the one test every wait for the store's lock uses."""
    name = str(getattr(exc, "sqlite_errorname", ""))
    lowered = str(exc).lower()
    return (
        name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
        or "locked" in lowered
        or "busy" in lowered
    )


def store_error(exc: BaseException, path: Path, doing: str) -> StoreError:
    """A StoreError that says what went wrong with the store at ``path`` and what to do."""
    name = str(getattr(exc, "sqlite_errorname", ""))
    text = str(exc)
    lowered = text.lower()
    where = str(path)
    if name.startswith("SQLITE_FULL") or "disk is full" in lowered:
        return StoreError(
            f"cannot {doing}: the disk holding the store {where!r} is full ({text})",
            fix=f"free disk space, or {_FIX_ELSEWHERE}; finished cells are kept and "
            "`--resume` continues the run.",
        )
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM")) or (
        "readonly" in lowered or "read-only" in lowered or "unable to open" in lowered
    ):
        return StoreError(
            f"cannot {doing}: the store {where!r} is not writable ({text})",
            fix=f"make the file and its directory writable, or {_FIX_ELSEWHERE} "
            "(or run with --no-store).",
        )
    if is_locked(exc):
        return StoreError(
            f"cannot {doing}: the store {where!r} stayed locked by another process ({text})",
            fix="wait for the other process, or raise the timeout (Store(path, timeout=...)).",
        )
    if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")) or (
        "not a database" in lowered or "malformed" in lowered
    ):
        return StoreError(
            f"cannot {doing}: {where!r} is damaged or is not a benchkit store ({text})",
            fix="restore it from a backup, or move it aside and "
            f"{_FIX_ELSEWHERE}; benchkit never resets a store.",
        )
    if isinstance(exc, OSError):
        return StoreError(
            f"cannot {doing}: {exc.strerror or exc} ({where!r})",
            fix=f"check the path and its permissions, or {_FIX_ELSEWHERE}.",
        )
    return StoreError(f"cannot {doing}: {type(exc).__name__}: {text} ({where!r})")


def connect(path: Path, *, timeout: float) -> sqlite3.Connection:
    """Open (creating if needed) the store at ``path`` and bring its schema up to date.

    Raises :class:`StoreError` for a file that is not a benchkit store, is damaged, comes
    from a newer benchkit, or cannot be opened.
    """
    if path.is_dir():
        raise StoreError(
            f"the store {str(path)!r} is a directory",
            fix="name a file: --store path/to/benchkit.db (or BENCHKIT_STORE).",
        )
    readonly = _read_only(path)
    if readonly is None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise store_error(exc, path, "create the store's directory") from exc
    try:
        if readonly is None:
            conn = sqlite3.connect(
                str(path), timeout=timeout, isolation_level=None, check_same_thread=False
            )
        else:
            conn = sqlite3.connect(
                f"{path.resolve().as_uri()}?{readonly}",
                uri=True,
                timeout=timeout,
                isolation_level=None,
                check_same_thread=False,
            )
    except sqlite3.Error as exc:
        raise store_error(exc, path, "open the store") from exc
    try:
        if readonly is not None:
            _check_readable(conn, path)
            return conn
        _prepare(conn, path, timeout)
    except StoreError:
        conn.close()
        raise
    except sqlite3.Error as exc:
        conn.close()
        raise store_error(exc, path, "open the store") from exc
    return conn


def _read_only(path: Path) -> str | None:
    """How to open an existing store that cannot be written, as SQLite URI parameters
    (None: open it for writing). A store on a read-only file system, or one whose file or
    directory is not writable (an immutable file, a read-only bind mount), can still be
    read: ``mode=ro`` when only the file is read-only (SQLite can still create its shared
    memory file beside it); ``immutable=1`` when the directory cannot be written either,
    so SQLite takes no lock and creates nothing (nothing can change the file meanwhile)."""
    if not path.is_file() or os.access(path, os.W_OK):
        return None
    if os.access(path.parent, os.W_OK):
        return "mode=ro"
    return "mode=ro&immutable=1"


def _check_readable(conn: sqlite3.Connection, path: Path) -> None:
    """A store opened read-only is read as it is: it cannot be migrated."""
    version = _version(conn, path)
    if version != SCHEMA_VERSION:
        newer = version > SCHEMA_VERSION
        raise StoreError(
            f"the store {str(path)!r} is read-only and has schema version {version} "
            f"(this benchkit reads {SCHEMA_VERSION})",
            fix="upgrade benchkit (pip install -U benchkit)"
            if newer
            else "open it once where it is writable (any benchkit command upgrades it), "
            f"or {_FIX_ELSEWHERE}.",
        )
    conn.execute("PRAGMA query_only=ON")


def _prepare(conn: sqlite3.Connection, path: Path, timeout: float) -> None:
    version = _version(conn, path)  # the first read: a file that is not SQLite fails here
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the store {str(path)!r} was written by a newer benchkit (schema version "
            f"{version}; this benchkit reads up to {SCHEMA_VERSION})",
            fix=f"upgrade benchkit (pip install -U benchkit), or {_FIX_ELSEWHERE}.",
        )
    try:
        conn.execute("SELECT json_extract('[1]', '$[0]')")
    except sqlite3.OperationalError as exc:
        raise StoreError(
            f"this Python's SQLite {sqlite3.sqlite_version} has no JSON functions, which "
            "the run store needs",
            fix="use a Python built with SQLite 3.38 or later (or with its JSON1 "
            "extension), or run with --no-store (store=False).",
        ) from exc
    _use_wal(conn, timeout)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    if version < SCHEMA_VERSION:
        _migrate(conn, path)


def _use_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Put the file in WAL mode, waiting up to ``timeout`` seconds for the lock it needs.

    Switching a file to WAL takes an exclusive lock, and SQLite answers "database is
    locked" at once, without its busy handler, while another connection holds any lock:
    two processes that create one store at the same moment (the second one reads the
    schema while the first switches) would see one fail. The switch is retried instead;
    once another process has made the switch there is nothing left to do.
    """
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if not is_locked(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _version(conn: sqlite3.Connection, path: Path) -> int:
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "meta" not in tables:
        if tables:
            raise StoreError(
                f"{str(path)!r} is an SQLite database but not a benchkit store "
                f"(it has the tables {', '.join(sorted(tables))} and no benchkit metadata)",
                fix=f"{_FIX_ELSEWHERE}; benchkit never writes into another program's database.",
            )
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    if row is None or not str(row[0]).isdigit():
        raise StoreError(
            f"{str(path)!r} has a meta table but no valid benchkit schema version",
            fix=f"restore the store from a backup, or {_FIX_ELSEWHERE}.",
        )
    return int(row[0])


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    from benchkit._version import __version__

    # Rows rewritten and tables dropped by a migration leave no copy of what they held
    # in free pages (the secrets step's reason), nor in the log once it is checkpointed.
    conn.execute("PRAGMA secure_delete=ON")
    try:
        _migrate_steps(conn, path, __version__)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.execute("PRAGMA secure_delete=OFF")


def _migrate_steps(conn: sqlite3.Connection, path: Path, written_by: str) -> None:
    with transaction(conn):
        version = _version(conn, path)  # another process may have migrated meanwhile
        for steps in MIGRATIONS[version:]:
            for statement in steps:
                if isinstance(statement, str):
                    conn.execute(statement)
                else:
                    statement(conn)
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('written_by', ?)",
            (f"benchkit {written_by}",),
        )


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """A write transaction: ``BEGIN IMMEDIATE`` (wait for the lock up front), then commit,
    or roll back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
