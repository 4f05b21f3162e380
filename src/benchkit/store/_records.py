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
import gc
import json
import os
import socket
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn

from benchkit import model, results
from benchkit.errors import ConfigError, StoreError
from benchkit.results import BudgetStop, CellResult, CellStatus, RunInfo, RunResult
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
    "collection_paused",
    "decode_cell",
    "decode_cells",
    "effective_status",
    "now",
    "number",
    "outcome",
    "outcome_json",
    "outlined",
    "read_stop",
    "refuse_if_running",
    "stop_json",
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
    #: Why an interrupted run stopped (``budget``, ``signal``, ``cancelled``, ``error``;
    #: None when it is not interrupted or the store did not record why).
    #:
    #: .. versionadded:: 0.2.0
    stopped_by: str | None = None
    #: A budget's stop: the limit reached, the limits and what was spent.
    #:
    #: .. versionadded:: 0.2.0
    budget: BudgetStop | None = None

    @property
    def status_text(self) -> str:
        """The status as lists print it: ``interrupted: budget``, ``interrupted: signal``,
        else the status alone.

        .. versionadded:: 0.2.0
        """
        if self.status == "interrupted" and self.stopped_by:
            return f"interrupted: {self.stopped_by}"
        return self.status


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


@contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for the block (reference counting still
    frees everything that is not in a cycle), when it was running.

    Decoding a whole run creates several objects per cell, none in a cycle, all kept;
    with the collector running, each time the objects created outnumber those freed by
    its threshold it walks the young ones, and every time the heap has grown by a
    quarter it walks all of them: at 100,000 cells about a third of the decoding's time
    (perf/RESULTS.md). The collector is process-wide: another thread's cyclic garbage
    waits for the block's end (the first allocation after it collects the young
    generation), and a collector some other code turns off meanwhile is on again after
    it. The pause nests: an inner one, finding it off, leaves it to the outer one.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


_GENERIC_CELL = _READER.get_structure_hook(CellResult)
_GENERIC_SCORE = _READER.get_structure_hook(results.Score)
_GENERIC_RESPONSE = _READER.get_structure_hook(model.Response)
_GENERIC_USAGE = _READER.get_structure_hook(model.Usage)
#: The keys :func:`decode_cell` builds itself; a cell with any other (verdicts, or one a
#: newer benchkit wrote) goes through the reading converter whole.
_CELL_KEYS = frozenset(
    (
        "task_id",
        "condition_id",
        "epoch",
        "status",
        "index",
        "error_category",
        "error",
        "score",
        "scores",
        "response",
        "attempts",
        "started_at",
        "duration_ms",
        "weight",
        "tags",
        "domain",
        "difficulty",
        "cluster",
    )
)
_SCORE_KEYS = frozenset(("name", "value", "passed", "reason", "error"))  # details: generic
_RESPONSE_KEYS = frozenset(("output", "latency_ms", "usage"))
_CELL_STATUSES = frozenset(CellStatus.__args__)  # type: ignore[attr-defined]
_NO_DETAILS: Mapping[str, Any] = attrs.fields(results.Score).details.default  # type: ignore[assignment]
_NEW_CELL, _NEW_SCORE, _NEW_RESPONSE = CellResult, results.Score, model.Response


def _score(o: Any) -> results.Score:
    if not _SCORE_KEYS.issuperset(o):
        return _GENERIC_SCORE(o, results.Score)  # type: ignore[no-any-return]
    value, reason, error = o["value"], o.get("reason"), o.get("error")
    return _NEW_SCORE(
        str(o["name"]),
        None if value is None else float(value),
        bool(o["passed"]),
        None if reason is None else str(reason),
        _NO_DETAILS,
        None if error is None else str(error),
    )


def _response(o: Any) -> model.Response:
    if not _RESPONSE_KEYS.issuperset(o):
        return _GENERIC_RESPONSE(o, model.Response)  # type: ignore[no-any-return]
    get = o.get
    latency, usage = get("latency_ms"), get("usage")
    return _NEW_RESPONSE(
        get("output"),
        None if latency is None else float(latency),
        None if usage is None else _GENERIC_USAGE(usage, model.Usage),
    )


#: Scores already built while decoding one run, by what makes them (see :func:`_scores`).
_Memo = dict[tuple[Any, ...], tuple[results.Score, ...]]
#: At most this many distinct scores are remembered per decoding (a judge's reasons are
#: often all different: those are built one by one, as without a memo).
_MEMO_MOST = 4096


def _scores(found: Any, memo: _Memo | None) -> tuple[results.Score, ...]:
    """A cell's ``scores``. With a ``memo``, a cell's single plain score — a name, a float
    value or none, a bool, a reason and an error that are strings or none — is built once
    per distinct one and its tuple shared by every cell that has it: an evaluator usually
    gives a few distinct scores in a whole run (``exact``: two), and building one costs
    about what parsing it does. Shared is safe: a Score is frozen and holds only
    immutable values. ``-0.0`` (equal to ``0.0`` as a key) is never remembered."""
    if memo is None or type(found) is not list or len(found) != 1:
        return tuple([_score(item) for item in found])
    item = found[0]
    if type(item) is not dict or not _SCORE_KEYS.issuperset(item):
        return (_score(item),)
    get = item.get
    name, value, passed, reason, error = (
        get("name"),
        get("value"),
        get("passed"),
        get("reason"),
        get("error"),
    )
    if value == 0.0 and type(value) is float and str(value) != "0.0":
        return (_score(item),)  # -0.0: a key equal to 0.0's
    # Values equal as keys convert alike (float(1) is 1.0, bool(1) is True): a bent
    # score that finds a plain one's entry is the score it would have been built as.
    key = (name, value, passed, reason, error)
    try:
        shared = memo.get(key)
    except TypeError:  # a list or an object where a value goes: built as without a memo
        return (_score(item),)
    if shared is not None:
        return shared
    made = (_score(item),)
    if (
        type(name) is str
        and (value is None or type(value) is float)
        and type(passed) is bool
        and (reason is None or type(reason) is str)
        and (error is None or type(error) is str)
        and len(memo) < _MEMO_MOST
    ):
        memo[key] = made
    return made


def _cell(o: Any, memo: _Memo | None = None) -> CellResult:
    """A stored cell's record as the reading converter structures it, built directly:
    each field converted as its hook converts it (``str``, ``int``, ``float``, the status
    checked against :data:`CellStatus`), an absent one at its default. ``memo`` shares
    equal scores between the cells of one decoding (:func:`_scores`)."""
    if not _CELL_KEYS.issuperset(o) or o["status"] not in _CELL_STATUSES:
        return _GENERIC_CELL(o, CellResult)  # type: ignore[no-any-return]
    get = o.get
    error, score, response = get("error"), get("score"), get("response")
    domain, difficulty, cluster = get("domain"), get("difficulty"), get("cluster")
    return _NEW_CELL(
        str(o["task_id"]),
        str(o["condition_id"]),
        int(o["epoch"]),
        o["status"],
        int(get("index", 0)),
        str(get("error_category", "none")),
        None if error is None else str(error),
        None if score is None else float(score),
        _scores(get("scores", ()), memo),
        (),
        None if response is None else _response(response),
        int(get("attempts", 1)),
        float(get("started_at", 0.0)),
        float(get("duration_ms", 0.0)),
        float(get("weight", 1.0)),
        tuple([str(item) for item in get("tags", ())]),
        None if domain is None else str(domain),
        None if difficulty is None else str(difficulty),
        None if cluster is None else str(cluster),
    )


def decode_cell(data: Any, path: Path, run_id: str) -> CellResult:
    """``data`` (a stored cell's decoded JSON) as a :class:`CellResult`: exactly what
    ``structure(data, CellResult, path, run_id)`` gives (a hypothesis test holds them
    equal), in about half the time for the cells the store writes.

    Reading a whole run spends as long building its cells as parsing their JSON; most of
    cattrs' part is generic (a keyword dict per object, a hook call per field present).
    The store wrote these records, so their usual shape is known: it is built here by
    position. Anything else — a verdict, a score's details, a key this benchkit does not
    know, a value the direct build refuses — is structured by the reading converter,
    which also names what is wrong.
    """
    return _decode(data, path, run_id, None)


def _decode(data: Any, path: Path, run_id: str, memo: _Memo | None) -> CellResult:
    try:
        return _cell(data, memo)
    except Exception:  # the converter says what it is (or reads what this did not)
        found: CellResult = structure(data, CellResult, path, run_id)
        return found


#: The C scanner of a decoder with json.loads' own settings (an attribute typeshed omits).
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def decode_cells(texts: Iterable[str], path: Path, run_id: str) -> list[CellResult]:
    """Stored cells' JSON texts as cells: exactly ``[decode_cell(json.loads(text), path,
    run_id) for text in texts]`` (the same cells, the same errors), a tenth faster.

    ``json.loads`` spends a fifth of its time on a stored cell around the C scanner
    (keyword checks, two whitespace regexes, the end check); the scanner is called here
    directly. A text it does not read whole from its first character (leading or
    trailing whitespace, a byte-order mark, bad JSON, not a str) goes to ``json.loads``,
    which decodes it or raises its own error. Each cell is built as soon as its text is
    parsed, so its dict's memory is reused by the next (parsing them all first is slower).
    Equal plain scores are built once and shared (:func:`_scores`).
    """
    scan, loads, decode = _SCAN, json.loads, _decode
    memo: _Memo = {}
    out: list[CellResult] = []
    append = out.append
    for text in texts:
        try:
            data, end = scan(text, 0)
        except Exception:  # StopIteration, JSONDecodeError, TypeError...: json.loads says
            end = -1
        if end < 0 or end != len(text):
            data = loads(text)
        append(decode(data, path, run_id, memo))
    return out


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


def outcome_json(result: RunResult) -> str:
    """A finished run's outcome as the ``runs.outcome`` column holds it: the RunResult's
    JSON without ``info`` (the ``info`` column) and ``cells`` (the cells table)."""
    data = converter.unstructure(attrs.evolve(result, cells=()))
    del data["info"], data["cells"]
    return ENCODER.encode(data)


def stop_json(result: RunResult) -> str:
    """Why an interrupted run stopped, as the ``runs.stop`` column holds it (schema 7):
    ``{"reason": ...}`` with, for a budget's stop, the figures (:class:`BudgetStop`)."""
    reason = "budget" if result.budget is not None else (result.stopped_by or "cancelled")
    data: dict[str, Any] = {"reason": reason}
    if result.budget is not None:
        data["budget"] = converter.unstructure(result.budget)
    return ENCODER.encode(data)


def read_stop(text: str | None) -> tuple[str | None, BudgetStop | None]:
    """The reason and budget figures of a ``runs.stop`` column (None, None: not recorded,
    or a run stored before schema 7)."""
    if not text:
        return None, None
    data = json.loads(text)
    reason = data.get("reason")
    budget = data.get("budget")
    found = converter.structure(budget, BudgetStop) if isinstance(budget, dict) else None
    return (str(reason) if reason else None), found


def outcome(info: RunInfo, text: str, path: Path, run_id: str) -> RunResult:
    """The RunResult, without cells, of a stored outcome (see :func:`outcome_json`)."""
    data = json.loads(text)
    data["info"] = converter.unstructure(info)
    data["cells"] = []
    result: RunResult = structure(data, RunResult, path, run_id)
    return result
