"""Resume planning: what a run about to go into the store is — new, a replacement, or the
continuation of a stored run — and, for a continuation, which stored cells it keeps.

:func:`plan` is :meth:`Store.prepare <benchkit.store.Store.prepare>`'s decision; it reads
the store and makes the run's :class:`~benchkit.store.StoreSink`, which claims the run in
its own transaction when the run opens (and checks again that nobody claimed it since).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Sequence

import attrs

from benchkit.errors import ConfigError, RunNotFoundError
from benchkit.model import Suite
from benchkit.results import CellResult
from benchkit.store._keys import SuiteKeys
from benchkit.store._queries import StoreReader, steps_back
from benchkit.store._records import StoreFile, refuse_if_running, structure
from benchkit.store._writer import StoreSink

__all__ = ["PreparedRun", "plan"]

_ERRORED = ("error", "timeout")


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


def plan(
    store: StoreFile,
    reader: StoreReader,
    db: sqlite3.Connection,
    suite: Suite,
    keys: SuiteKeys,
    *,
    run_id: str | None,
    resume: bool,
    retry_errors: bool,
    replace: bool,
    rerun: Sequence[tuple[str, str | None, int | None]],
) -> PreparedRun:
    """The run :meth:`Store.prepare` gets ready (see there), read through ``db`` (the
    connection of ``reader`` in this thread)."""
    from benchkit.runner import new_run_id

    found: str | None = None
    if resume and run_id is not None and run_id not in ("", None):
        # `--resume --run-id latest` (or -2, or a unique prefix) names a stored run.
        with contextlib.suppress(RunNotFoundError):
            run_id = reader.resolve(run_id)
        if run_id == "latest" or steps_back(run_id) is not None:
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
            f"run {run_id!r} is already in the store {str(store.path)!r}",
            fix="resume it (--resume / resume=True), pick another id, or delete it "
            f"(`python -m benchkit runs delete {run_id}`).",
        )
    if found is None:
        if rerun:
            raise RunNotFoundError(
                f"no run {run_id!r} in the store {str(store.path)!r} to re-run cells in",
                fix="`python -m benchkit runs list` shows the stored runs.",
            )
        rid = run_id or new_run_id(suite)
        existing = db.execute("SELECT 1 FROM runs WHERE run_id = ?", (rid,)).fetchone()
        if existing:
            refuse_if_running(db, rid, "run it again")
        sink = StoreSink(
            store, rid, keys, resume=False, replace=bool(existing), benchmark=suite.benchmark
        )
        return PreparedRun(rid, sink, (), resumed=False, replaced=bool(existing))
    refuse_if_running(db, found, "resume it")
    done, dropped, stale, again = _reusable(store, db, found, keys, retry_errors, rerun)
    (seen,) = db.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM sessions WHERE run_id = ?", (found,)
    ).fetchone()
    sink = StoreSink(
        store,
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
    return PreparedRun(found, sink, done, resumed=True, retried=len(stale), dropped=len(dropped))


def _reusable(
    store: StoreFile,
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
        "SELECT task_id, condition_id, epoch, cell_key, status, data FROM cells WHERE run_id = ?",
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
            cell = structure(json.loads(data), CellResult, store.path, run_id)
            position = found[0]
            done.append(cell if cell.index == position else attrs.evolve(cell, index=position))
    return tuple(done), dropped, retried, again
