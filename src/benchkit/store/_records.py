"""What the run store's rows mean: the types its reads return, and how a stored record
becomes a Python value again (and a finished run's outcome becomes a row).

Shared by the query layer (:mod:`benchkit.store._queries`), the writer
(:mod:`benchkit.store._writer`) and resume planning (:mod:`benchkit.store._resume`):
:class:`RunSummary` (a run without its cells, as lists and pages show it),
:class:`CellPage` (one page of a run's cells), :class:`RunSession`, a run's status as
readers report it (:func:`effective_status`), and the reading converter that turns a
cell's JSON into a :class:`~benchkit.results.CellResult` about a third faster than the
general one.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn

from benchkit import model, results
from benchkit._aggregate import task_value
from benchkit.errors import ConfigError, StoreError
from benchkit.results import CellResult, CellStatus, RunInfo, RunResult
from benchkit.sequential import EarlyStop, replay
from benchkit.serde import converter
from benchkit.store._compare import OutlineCell

__all__ = [
    "COUNT_CELLS",
    "ENCODER",
    "HOST",
    "CellPage",
    "RunSession",
    "RunStatus",
    "RunSummary",
    "StoreFile",
    "early_stop",
    "effective_status",
    "now",
    "number",
    "outcome",
    "outcome_json",
    "outlined",
    "refuse_if_running",
    "structure",
]

RunStatus = Literal["running", "finished", "interrupted", "crashed"]

#: The JSON encoder of everything the store writes (compact, Unicode kept as it is).
ENCODER = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), check_circular=False, default=str
)
#: A run's stored cells and errored cells (status error or timeout).
COUNT_CELLS = (
    "SELECT COUNT(*), COALESCE(SUM(status IN ('error', 'timeout')), 0) FROM cells WHERE run_id = ?"
)
HOST = socket.gethostname()


class StoreFile(Protocol):
    """What the writer and resume planning know of a :class:`~benchkit.store.Store`: its
    file, and how long to wait for another process's lock."""

    @property
    def path(self) -> Path: ...

    @property
    def timeout(self) -> float: ...


def now() -> str:
    """The wall-clock time as the store writes it (UTC, milliseconds, ``Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
    """A run without its cells, as :meth:`Store.runs` and the server's lists show it.

    ``status`` is ``finished``, ``interrupted`` (stopped gracefully: Ctrl-C, a failing
    sink), ``running``, or ``crashed`` (its process on this host ended without recording the
    end of the run: killed, out of memory, or the store became unwritable). ``cells``
    counts the stored cells, ``errors`` those with status error or timeout;
    ``total_cells`` is the size of the run's matrix (known for lazy benchmarks too).
    ``started_at`` is the wall-clock time of the first session, also in deterministic mode.
    ``sessions`` are the run's starts and resumes, in order (empty where a list leaves them
    out); ``source_format`` and ``source_path`` say what file the run's benchmark came from
    (``""`` and None for a suite built in Python).
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
    source_format: str = ""
    source_path: str | None = None


@attrs.frozen
class CellPage:
    """One page of a run's cells, from :meth:`Store.cells` (and the server's cells route).

    ``data`` holds each cell's JSON text as it was stored (what the server sends without
    decoding it); ``cells`` the same cells as :class:`~benchkit.results.CellResult`.
    ``total`` counts the cells that pass the page's filters; ``offset`` and ``limit`` are
    the ones asked for, so the next page starts at ``offset + len(cells)`` while that is
    below ``total``.
    """

    run_id: str
    data: tuple[str, ...]
    total: int
    offset: int
    limit: int
    path: Path = attrs.field(default=Path(), eq=False, repr=False)

    @functools.cached_property
    def cells(self) -> tuple[CellResult, ...]:
        """The page's cells, decoded (once) from :attr:`data`."""
        return tuple(
            structure(json.loads(text), CellResult, self.path, self.run_id) for text in self.data
        )


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
    is gone is ``crashed``."""
    if status == "running" and host == HOST and pid is not None and not _pid_alive(pid):
        return "crashed"
    if status in ("finished", "interrupted", "running"):
        return status  # type: ignore[return-value]
    raise StoreError(f"unknown run status {status!r} in the store")


def refuse_if_running(db: sqlite3.Connection, run_id: str, action: str) -> None:
    """A :class:`ConfigError` when run ``run_id`` is still running in a live process on
    this host (other than this one): it cannot be deleted, resumed or replaced."""
    row = db.execute("SELECT status, pid, host FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None or row[0] != "running" or row[2] != HOST or row[1] is None:
        return
    if row[1] != os.getpid() and _pid_alive(row[1]):
        raise ConfigError(
            f"run {run_id!r} is still running in process {row[1]} on this host ({row[2]})",
            fix=f"wait for it to finish or stop it (Ctrl-C) before you {action}.",
        )


# -- reading records --------------------------------------------------------------------


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


def structure(data: Any, cls: type[Any], path: Path, run_id: str) -> Any:
    """``data`` (a decoded stored record) as ``cls``; a :class:`StoreError` naming the
    run and the store when it does not fit."""
    try:
        return _READER.structure(data, cls)
    except Exception as exc:  # cattrs raises ClassValidationError / KeyError on bad shapes
        raise StoreError(
            f"run {run_id!r} in {str(path)!r} holds a record benchkit cannot read "
            f"({type(exc).__name__}: {exc})",
            fix="upgrade benchkit if a newer one wrote it, or delete the run.",
        ) from exc


def number(text: str) -> float:
    """A score column's text as a float (what the writer wrote with ``repr``)."""
    try:
        return float(text)
    except (ValueError, TypeError) as exc:
        raise StoreError(
            f"the store holds a cell score benchkit cannot read ({text!r})",
            fix="upgrade benchkit if a newer one wrote it, or delete the run.",
        ) from exc


def outlined(
    task_id: str,
    condition_id: str,
    epoch: int,
    status: CellStatus,
    data: str,
    path: Path,
    run_id: str,
) -> OutlineCell:
    """An outline cell (see :meth:`StoreReader.outline`) whose score, weight, cluster and
    error category are read from its JSON, converted as cattrs converts them."""
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


def early_stop(info: RunInfo, cells: Sequence[CellResult]) -> EarlyStop | None:
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


def outcome_json(result: RunResult) -> str:
    """A finished run's outcome as the ``runs.outcome`` column holds it: the RunResult's
    JSON without ``info`` (the ``info`` column) and ``cells`` (the cells table)."""
    data = converter.unstructure(attrs.evolve(result, cells=()))
    del data["info"], data["cells"]
    return ENCODER.encode(data)


def outcome(info: RunInfo, text: str, path: Path, run_id: str) -> RunResult:
    """The RunResult, without cells, of a stored outcome (see :func:`outcome_json`)."""
    data = json.loads(text)
    data["info"] = converter.unstructure(info)
    data["cells"] = []
    result: RunResult = structure(data, RunResult, path, run_id)
    return result
