"""What the store keeps of a cell's story beside the cell (schema 5, issue #25): the run's
task snapshot, cell transcripts, earlier attempts of re-run cells, people's ratings, and
the full-text search index over inputs, expected outputs, outputs and reasons.

Everything here is a function of an open SQLite connection, so :class:`~benchkit.store.Store`
(Python) and the server's :class:`~benchkit.store._queries.StoreReader` answer the same
questions the same way.
"""

from __future__ import annotations

import csv
import io
import json
import json.encoder
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal

import attrs

from benchkit._limits import MAX_SEED
from benchkit._public import public
from benchkit._secrets import known
from benchkit.errors import ConfigError, StoreError
from benchkit.model import Task

__all__ = [
    "MAX_RATERS_PER_CELL",
    "RUN_TABLES",
    "TASK_FIELDS",
    "Rating",
    "TooManyRatings",
    "attempt_of",
    "matrix",
    "rate",
    "ratings",
    "ratings_csv",
    "search",
    "task_rows",
    "task_snapshot",
]

#: Every table holding rows of one run, children first (what deleting a run clears).
RUN_TABLES = ("cells", "tasks", "transcripts", "cell_attempts", "ratings", "sessions", "runs")

#: Fields of a task the snapshot keeps (what people look at; not how it is judged).
TASK_FIELDS = (
    "id",
    "input",
    "expected",
    "tags",
    "domain",
    "difficulty",
    "description",
    "context",
    "expected_tool_calls",
    "relevant_ids",
    "metadata",
)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)
#: The matrix shows this much of an input and of an output.
INPUT_SHOWN = 500
OUTPUT_SHOWN = 2000


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- the task snapshot ---------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """What the snapshot's encoder writes for a value JSON has no form for: an attrs
    object (typed metadata such as MemoryBench's cases) as cattrs unstructures it, a
    mapping as a dict, a set or tuple as a list, anything else as its text."""
    if attrs.has(type(value)):
        from benchkit.serde import unstructure

        return unstructure(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


_SNAPSHOT_ENCODER = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), default=_jsonable, check_circular=False
)


def task_snapshot(task: Task) -> dict[str, Any]:
    """What the store keeps of a task: what people look at, not how it is judged. Fields
    at their default are left out (readers fill them in: :func:`task_view`). Built from
    the attributes directly: this runs once per task of every stored run."""
    data: dict[str, Any] = {"id": task.id}
    if task.input is not None:
        data["input"] = task.input
    if task.expected is not None:
        data["expected"] = task.expected
    if task.tags:
        data["tags"] = task.tags
    for name in ("domain", "difficulty", "description"):
        value = getattr(task, name)
        if value is not None:
            data[name] = value
    if task.context:
        data["context"] = task.context
    if task.expected_tool_calls:
        data["expected_tool_calls"] = task.expected_tool_calls
    if task.relevant_ids:
        data["relevant_ids"] = task.relevant_ids
    if task.metadata:
        data["metadata"] = task.metadata
    return data


def task_view(data: Mapping[str, Any]) -> dict[str, Any]:
    """A stored snapshot with every field present (defaults filled in)."""
    out: dict[str, Any] = {}
    for key in TASK_FIELDS:
        value = data.get(key)
        if value is None and key in ("tags", "context", "expected_tool_calls", "relevant_ids"):
            value = []
        elif value is None and key == "metadata":
            value = {}
        out[key] = value
    return out


#: The C encoder that ``_SNAPSHOT_ENCODER.encode`` builds afresh for every value (about a
#: third of a small task's encoding time), built once with the same settings, so it
#: writes the same text; called with a value and 0, it returns the text's pieces. None
#: where ``json`` has no C speedups (then ``_SNAPSHOT_ENCODER.encode`` is used).
_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)  # not in typeshed
_SNAPSHOT_PIECES: Callable[[Any, int], Sequence[str]] | None = (
    None
    if _make_encoder is None
    else _make_encoder(
        None, _jsonable, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
)


def task_rows(
    run_id: str, tasks: Iterable[tuple[int, Task]]
) -> Iterator[tuple[str, str, int, str]]:
    """The ``tasks`` rows of ``(position, task)`` pairs, in their order."""
    pieces, join = _SNAPSHOT_PIECES, "".join
    if pieces is None:
        encode = _SNAPSHOT_ENCODER.encode
        for position, task in tasks:
            yield run_id, task.id, position, encode(task_snapshot(task))
        return
    for position, task in tasks:
        yield run_id, task.id, position, join(pieces(task_snapshot(task), 0))


# -- attempts ------------------------------------------------------------------------------


def attempt_of(db: sqlite3.Connection, run_id: str, key: tuple[str, str, int]) -> int:
    """The attempt number of a cell's stored (latest) attempt: how many earlier ones are kept."""
    (count,) = db.execute(
        "SELECT COUNT(*) FROM cell_attempts WHERE run_id = ? AND task_id = ? "
        "AND condition_id = ? AND epoch = ?",
        (run_id, *key),
    ).fetchone()
    return int(count)


# -- ratings -------------------------------------------------------------------------------


@public("benchkit")
@attrs.frozen
class Rating:
    """A person's rating of one cell: ``verdict`` (pass true / fail false, or None) and/or
    a ``score`` in [0, 1], a ``comment``, who (``rater``) and when (``created``, ISO-8601
    UTC). ``attempt`` is the cell's attempt the rating was given on (0 unless re-run).
    One rating per rater per cell: rating again replaces it."""

    task: str
    condition: str
    epoch: int
    rater: str
    verdict: bool | None = None
    score: float | None = None
    comment: str = ""
    attempt: int = 0
    created: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of the server's routes and the exports."""
        return {
            "task": self.task,
            "condition": self.condition,
            "epoch": self.epoch,
            "attempt": self.attempt,
            "verdict": self.verdict,
            "score": self.score,
            "comment": self.comment,
            "rater": self.rater,
            "created": self.created,
        }


_RATING_COLUMNS = "task_id, condition_id, epoch, rater, verdict, score, comment, attempt, created"
#: Raters one cell keeps (one rating each): a bound on what ratings may add to a store.
MAX_RATERS_PER_CELL = 100
#: Characters a rater's name may not hold (control characters: a name is one line).
_CONTROL = {chr(c) for c in range(32)} | {"\x7f"}


class TooManyRatings(ConfigError):
    """A cell already has the most raters it keeps (:data:`MAX_RATERS_PER_CELL`)."""


def _text_field(name: str, value: str, *, one_line: bool) -> None:
    """Refuse text SQLite cannot store (a lone surrogate is no UTF-8) or, for a name,
    a control character."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(
            f"{name} must be valid Unicode text (it holds a lone surrogate)",
            fix=f"send {name} as UTF-8 text.",
        ) from None
    if one_line and not _CONTROL.isdisjoint(value):
        raise ConfigError(
            f"{name} must be one line of text, without control characters",
            fix=f"send {name} without NUL, tabs or line breaks.",
        )


def _rating(row: Sequence[Any]) -> Rating:
    return Rating(
        task=row[0],
        condition=row[1],
        epoch=int(row[2]),
        rater=row[3],
        verdict=None if row[4] is None else bool(row[4]),
        score=None if row[5] is None else float(row[5]),
        comment=row[6],
        attempt=int(row[7]),
        created=row[8],
    )


def check_rating(
    verdict: bool | None, score: float | None, rater: str, comment: str
) -> tuple[bool | None, float | None]:
    """The rating's values, checked: raises ConfigError naming the bad field."""
    if verdict is not None and not isinstance(verdict, bool):
        raise ConfigError("verdict must be true, false or null", fix="send a JSON boolean.")
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise ConfigError("score must be a number in [0, 1] or null", fix="send 0..1.")
        score = float(score)
        if not 0.0 <= score <= 1.0:
            raise ConfigError(f"score must be in [0, 1], got {score}", fix="send 0..1.")
    if verdict is None and score is None:
        raise ConfigError(
            "a rating needs a verdict (pass/fail) or a score", fix="give verdict or score."
        )
    if not rater or not rater.strip() or len(rater) > 200:
        raise ConfigError(
            "rater must be a non-empty name (at most 200 characters)", fix="say who rates."
        )
    _text_field("rater", rater, one_line=True)
    if len(comment) > 10_000:
        raise ConfigError("comment must be at most 10,000 characters", fix="shorten it.")
    _text_field("comment", comment, one_line=False)
    return verdict, score


def rate(
    db: sqlite3.Connection,
    run_id: str,
    task: str,
    condition: str,
    epoch: int,
    *,
    rater: str,
    verdict: bool | None = None,
    score: float | None = None,
    comment: str = "",
    max_raters: int = MAX_RATERS_PER_CELL,
) -> Rating:
    """Store (or replace) ``rater``'s rating of a stored cell; inside the caller's
    transaction. Raises ConfigError for a cell the run does not have or bad values, and
    :class:`TooManyRatings` for a new rater of a cell that has ``max_raters`` already."""
    verdict, score = check_rating(verdict, score, rater, comment)
    secrets = known()
    rater, comment = secrets.scrub(rater), secrets.scrub(comment)
    key = (task, condition, int(epoch))
    found = db.execute(
        "SELECT 1 FROM cells WHERE run_id = ? AND task_id = ? AND condition_id = ? AND epoch = ?",
        (run_id, *key),
    ).fetchone()
    if found is None:
        raise ConfigError(
            f"run {run_id!r} has no cell ({task!r}, {condition!r}, epoch {epoch})",
            fix="rate a cell the run has (task, condition, epoch).",
        )
    (others,) = db.execute(
        "SELECT COUNT(*) FROM ratings WHERE run_id = ? AND task_id = ? AND condition_id = ? "
        "AND epoch = ? AND rater != ?",
        (run_id, *key, rater.strip()),
    ).fetchone()
    if others >= max_raters:
        raise TooManyRatings(
            f"cell ({task!r}, {condition!r}, epoch {epoch}) has {others} ratings already, "
            f"the most a cell keeps",
            fix="replace one of them (rate as the same rater) or delete one.",
        )
    rating = Rating(
        task=task,
        condition=condition,
        epoch=int(epoch),
        rater=rater.strip(),
        verdict=verdict,
        score=score,
        comment=comment,
        attempt=attempt_of(db, run_id, key),
        created=_now(),
    )
    db.execute(
        f"INSERT OR REPLACE INTO ratings (run_id, {_RATING_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            run_id,
            rating.task,
            rating.condition,
            rating.epoch,
            rating.rater,
            None if verdict is None else int(verdict),
            score,
            comment,
            rating.attempt,
            rating.created,
        ),
    )
    return rating


def ratings(db: sqlite3.Connection, run_id: str) -> list[Rating]:
    """A run's ratings, by task position, condition, epoch, rater."""
    rows = db.execute(
        f"SELECT {', '.join('r.' + c.strip() for c in _RATING_COLUMNS.split(','))} "
        "FROM ratings r LEFT JOIN tasks t ON t.run_id = r.run_id AND t.task_id = r.task_id "
        "WHERE r.run_id = ? ORDER BY t.position, r.task_id, r.condition_id, r.epoch, r.rater",
        (run_id,),
    ).fetchall()
    return [_rating(row) for row in rows]


def _cell(value: Any) -> Any:
    """A CSV field a spreadsheet shows as text: one that begins with ``=``, ``+``, ``-``,
    ``@``, a tab or a carriage return would be read as a formula (OWASP's "CSV injection"),
    so it gets a leading ``'``, which spreadsheets take as "text" and do not show."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def ratings_csv(found: Iterable[Rating]) -> str:
    """Ratings as CSV text (a header line, then one line per rating); text fields that a
    spreadsheet would run as a formula are neutralised (:func:`_cell`)."""
    out = io.StringIO()
    fields = ["task", "condition", "epoch", "attempt", "verdict", "score", "comment", "rater"]
    # CRLF between records (RFC 4180): a carriage return inside a field is then quoted too.
    writer = csv.DictWriter(out, fieldnames=[*fields, "created"], lineterminator="\r\n")
    writer.writeheader()
    for rating in found:
        row = rating.to_dict()
        row["verdict"] = "" if rating.verdict is None else ("pass" if rating.verdict else "fail")
        row["score"] = "" if rating.score is None else repr(rating.score)
        writer.writerow({key: _cell(value) for key, value in row.items()})
    return out.getvalue()


# -- search --------------------------------------------------------------------------------

_FTS_TABLES = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS cell_search USING fts5("
    "run_id UNINDEXED, task_id UNINDEXED, condition_id UNINDEXED, epoch UNINDEXED, "
    "input, expected, output, reasons, tokenize = 'unicode61')",
    "CREATE TABLE IF NOT EXISTS cell_search_runs (run_id TEXT PRIMARY KEY, updated_at TEXT "
    "NOT NULL)",
)


def fts5_available(db: sqlite3.Connection) -> bool:
    """Whether this SQLite has FTS5 (the search index)."""
    try:
        db.execute("SELECT fts5(?1)", (None,)).fetchone()
    except sqlite3.OperationalError as exc:
        return "wrong number" in str(exc) or "unable to use function" in str(exc)
    return True


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else _ENCODER.encode(value)


_CELL_TEXT = (
    "SELECT c.task_id, c.condition_id, c.epoch, "
    "COALESCE(json_extract(t.data, '$.input'), ''), "
    "COALESCE(json_extract(t.data, '$.expected'), ''), "
    "COALESCE(json_extract(c.data, '$.response.output'), ''), "
    "COALESCE(json_extract(c.data, '$.error'), '') || ' ' || COALESCE(("
    " SELECT group_concat(json_extract(s.value, '$.reason'), ' ') "
    " FROM json_each(c.data, '$.scores') s), '') "
    "FROM cells c LEFT JOIN tasks t ON t.run_id = c.run_id AND t.task_id = c.task_id "
    "WHERE c.run_id = ?"
)


def stale_search_runs(db: sqlite3.Connection, run_ids: Sequence[str] | None) -> list[str]:
    """The runs of ``run_ids`` (None: every run) whose search index may be missing or out
    of date, found in one query that returns only those: a finished run indexed under the
    stamp it finished with is up to date (a search over every run of a large store then
    reads nothing per run)."""
    chosen = "" if run_ids is None else f"r.run_id IN ({', '.join('?' * len(run_ids))}) AND "
    try:
        rows = db.execute(
            "SELECT r.run_id FROM runs r LEFT JOIN cell_search_runs s ON s.run_id = r.run_id "
            f"WHERE {chosen}(r.status != 'finished' OR r.stored_cells IS NULL "
            "OR s.updated_at IS NULL OR s.updated_at != r.updated_at || '|' || r.stored_cells)",
            list(run_ids or ()),
        ).fetchall()
    except sqlite3.OperationalError:  # no index yet
        if run_ids is None:
            return [r[0] for r in db.execute("SELECT run_id FROM runs")]
        return list(run_ids)
    stale = {r[0] for r in rows}
    if run_ids is None:
        return sorted(stale)
    return [run_id for run_id in run_ids if run_id in stale]


def ensure_search_index(db: sqlite3.Connection, run_id: str) -> None:
    """Build (or rebuild) ``run_id``'s rows of the search index when its cells changed
    since it was indexed (the run's ``updated_at`` moves whenever cells are written)."""
    updated, status, stored = db.execute(
        "SELECT updated_at, status, stored_cells FROM runs WHERE run_id = ?", (run_id,)
    ).fetchone()
    try:
        row = db.execute(
            "SELECT updated_at FROM cell_search_runs WHERE run_id = ?", (run_id,)
        ).fetchone()
    except sqlite3.OperationalError:
        row = None
    if status == "finished" and stored is not None:
        counted = stored  # what the run counted when it finished: no cell is read
    else:
        counted = db.execute("SELECT COUNT(*) FROM cells WHERE run_id = ?", (run_id,)).fetchone()[0]
    stamp = f"{updated}|{counted}"
    if row is not None and row[0] == stamp:
        return
    # In short transactions of a few thousand tasks each, so a run being written to the
    # same store (its writer) never waits long for the lock. The run's stamp says
    # "building" meanwhile: every run with rows in the index has a stamp, so a search over
    # every run knows from the stamps alone that the index holds no run the store lost.
    with _write(db):
        for statement in _FTS_TABLES:
            db.execute(statement)
        db.execute("DELETE FROM cell_search WHERE run_id = ?", (run_id,))
        db.execute(
            "INSERT OR REPLACE INTO cell_search_runs (run_id, updated_at) VALUES (?, ?)",
            (run_id, _BUILDING),
        )
    (last,) = db.execute(
        "SELECT COALESCE(MAX(position), -1) FROM cells WHERE run_id = ?", (run_id,)
    ).fetchone()
    for low in range(0, int(last) + 1, _INDEX_TASKS):
        with _write(db):
            db.execute(
                "INSERT INTO cell_search (run_id, task_id, condition_id, epoch, input, "
                f"expected, output, reasons) SELECT ?, * FROM ({_CELL_TEXT} "
                "AND c.position >= ? AND c.position < ?)",
                (run_id, run_id, low, low + _INDEX_TASKS),
            )
    with _write(db):
        db.execute(
            "INSERT OR REPLACE INTO cell_search_runs (run_id, updated_at) VALUES (?, ?)",
            (run_id, stamp),
        )


#: Tasks indexed per transaction when a run's search index is built.
_INDEX_TASKS = 2000
#: The stamp of a run whose index is being built (never a run's up-to-date stamp).
_BUILDING = "building"


@contextmanager
def _write(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def drop_search_rows(db: sqlite3.Connection, run_id: str) -> None:
    """Forget ``run_id`` in the search index (when the run is deleted or replaced)."""
    tables = {
        r[0]
        for r in db.execute(
            "SELECT name FROM sqlite_master WHERE name IN ('cell_search', 'cell_search_runs')"
        )
    }
    if "cell_search" in tables:
        db.execute("DELETE FROM cell_search WHERE run_id = ?", (run_id,))
    if "cell_search_runs" in tables:
        db.execute("DELETE FROM cell_search_runs WHERE run_id = ?", (run_id,))


def fts_query(text: str) -> str:
    """A user's search text as an FTS5 query: every word must occur (prefix match on the
    last one), quoted so that FTS5's operators in the text are plain words."""
    # Quotes and control characters (a NUL ends FTS5's string early) separate words.
    words = "".join(" " if ch == '"' or ch < " " or ch == "\x7f" else ch for ch in text).split()
    if not words:
        raise ConfigError("the search text is empty", fix="give one or more words.")
    quoted = [f'"{w}"' for w in words[:32]]
    quoted[-1] += "*"
    return " ".join(quoted)


def _require_fts(db: sqlite3.Connection) -> None:
    if not fts5_available(db):
        raise StoreError(
            f"this Python's SQLite {sqlite3.sqlite_version} has no FTS5 full-text index, "
            "which search needs",
            fix="use a Python whose SQLite has FTS5 (python.org builds, Debian, Homebrew do); "
            "the matrix's other filters work without it.",
        )


def search_keys(db: sqlite3.Connection, run_id: str, text: str) -> set[str]:
    """Task ids of ``run_id`` with a cell matching ``text``."""
    _require_fts(db)
    ensure_search_index(db, run_id)
    return {
        r[0]
        for r in db.execute(
            "SELECT DISTINCT task_id FROM cell_search WHERE cell_search MATCH ? AND run_id = ?",
            (fts_query(text), run_id),
        )
    }


def lost_runs_indexed(db: sqlite3.Connection) -> bool:
    """Whether the index may hold rows of a run the store no longer has (a run deleted
    by other means than :func:`drop_search_rows`)."""
    try:
        found = db.execute(
            "SELECT 1 FROM cell_search_runs WHERE run_id NOT IN (SELECT run_id FROM runs) LIMIT 1"
        ).fetchone()
    except sqlite3.OperationalError:  # no index at all
        return False
    return found is not None


def search(
    db: sqlite3.Connection, text: str, *, run_ids: Sequence[str] | None, limit: int = 50
) -> tuple[list[dict[str, Any]], int]:
    """Cells of ``run_ids`` matching ``text``, best first: one page, and how many match.
    Reads the index as it is: the caller brings the runs' indexes up to date first
    (:func:`stale_search_runs`, :func:`ensure_search_index`). ``run_ids`` None is every
    run, when the index holds no run the store lost (:func:`lost_runs_indexed` is false):
    the run of each match is then not checked, which costs more than the rest of the
    count."""
    _require_fts(db)
    query = fts_query(text)
    where, params = "cell_search MATCH ?", [query]
    if run_ids is not None:
        where += f" AND run_id IN ({', '.join('?' * len(run_ids))})"
        params += run_ids
    (total,) = db.execute(f"SELECT COUNT(*) FROM cell_search WHERE {where}", params).fetchone()
    rows = db.execute(
        "SELECT s.run_id, s.task_id, s.condition_id, s.epoch, "
        "snippet(cell_search, -1, '[', ']', '…', 12), c.status "
        f"FROM cell_search s LEFT JOIN cells c ON c.run_id = s.run_id AND c.task_id = s.task_id "
        "AND c.condition_id = s.condition_id AND c.epoch = s.epoch "
        f"WHERE {where.replace('run_id IN', 's.run_id IN')} ORDER BY rank LIMIT ?",
        [*params, limit],
    ).fetchall()
    results = [
        {
            "run_id": r[0],
            "task_id": r[1],
            "condition": r[2],
            "epoch": int(r[3]),
            "status": r[5],
            "snippet": r[4],
        }
        for r in rows
    ]
    return results, int(total)


# -- the outputs matrix --------------------------------------------------------------------


def _shown(value: Any, limit: int) -> tuple[str, bool]:
    text = _text(value)
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def matrix(
    db: sqlite3.Connection,
    run_id: str,
    *,
    by: Literal["condition", "epoch"] = "condition",
    epoch: int = 0,
    condition: str | None = None,
    offset: int = 0,
    limit: int = 50,
    only: Literal["failures", "disagree"] | None = None,
    tag: str | None = None,
    q: str | None = None,
    rated: Literal["yes", "no"] | None = None,
    cache: dict[Any, tuple[str, Outline]] | None = None,
) -> dict[str, Any]:
    """One page of the outputs matrix: tasks as rows, conditions (or epochs of one
    condition) as columns. Without filters a page is read through the task snapshot's
    index of positions; filters run over the view's outline (one pass over the cells'
    status column, kept in ``cache`` until the run changes); only the page's cells are
    read whole. See docs/explorer.md for the shape."""
    (info_json,) = db.execute("SELECT info FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    info = json.loads(info_json)
    conditions = [c["id"] for c in info.get("conditions", ())]
    epochs = int(info.get("options", {}).get("epochs", 1) or 1)
    cell_params: list[Any]
    if by == "condition":
        columns = conditions
        cell_where, cell_params = "c.epoch = ?", [epoch]
    else:
        chosen = condition or (conditions[0] if conditions else "")
        if condition is not None and condition not in conditions:
            raise ConfigError(
                f"run {run_id!r} has no condition {condition!r}",
                fix=f"pick one of {', '.join(conditions)}.",
            )
        columns = [f"epoch {e}" for e in range(epochs)]
        cell_where, cell_params = "c.condition_id = ?", [chosen]
    snapshot = (
        db.execute("SELECT 1 FROM tasks WHERE run_id = ? LIMIT 1", (run_id,)).fetchone() is not None
    )
    if snapshot and only is None and tag is None and not q and rated is None:
        # No filter: the page is the run's tasks in benchmark order, read from the
        # snapshot's index of positions (a page costs the same at any run size).
        (total,) = db.execute("SELECT COUNT(*) FROM tasks WHERE run_id = ?", (run_id,)).fetchone()
        ids = [
            r[0]
            for r in db.execute(
                "SELECT task_id FROM tasks WHERE run_id = ? ORDER BY position LIMIT ? OFFSET ?",
                (run_id, limit, offset),
            )
        ]
    else:
        outline = _outline(db, run_id, cell_where, cell_params, snapshot, cache)
        keep: set[str] | None = None
        if q:
            keep = search_keys(db, run_id, q)
        if rated is not None:
            rated_ids = {
                r[0]
                for r in db.execute(
                    "SELECT DISTINCT task_id FROM ratings WHERE run_id = ?", (run_id,)
                )
            }
        chosen_ids: list[str] = []
        for task_id, tags, failing, disagrees in outline:
            if keep is not None and task_id not in keep:
                continue
            if only == "failures" and not failing:
                continue
            if only == "disagree" and not disagrees:
                continue
            if tag is not None and tag not in tags:
                continue
            if rated is not None and (task_id in rated_ids) != (rated == "yes"):
                continue
            chosen_ids.append(task_id)
        total, ids = len(chosen_ids), chosen_ids[offset : offset + limit]
    rows = [_matrix_row(db, run_id, t, by, cell_where, cell_params) for t in ids]
    return {
        "columns": columns,
        "by": by,
        "total": int(total),
        "offset": offset,
        "limit": limit,
        "rows": rows,
    }


#: A matrix view's outline: per task in benchmark order, its id, tags, whether a column
#: did not pass and whether its columns disagree.
Outline = list[tuple[str, frozenset[str], bool, bool]]
#: Outlines a cache given to :func:`matrix` keeps.
OUTLINES_KEPT = 8


def _outline(
    db: sqlite3.Connection,
    run_id: str,
    cell_where: str,
    cell_params: list[Any],
    snapshot: bool,
    cache: dict[Any, tuple[str, Outline]] | None,
) -> Outline:
    """Every task of a matrix view in benchmark order, with its tags, whether a column
    did not pass, and whether its columns disagree: one pass over the view's cells
    (statuses from their column, tags from the task snapshot), kept per store file, run
    and view until the run's cells change, so each filtered page of a large run costs a
    scan of this list, not of the store (with a ``cache``: the server's reader keeps one;
    a thread-safe dict, entries replaced whole)."""
    (updated,) = db.execute("SELECT updated_at FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    (count,) = db.execute("SELECT COUNT(*) FROM cells WHERE run_id = ?", (run_id,)).fetchone()
    (attempts,) = db.execute(
        "SELECT COUNT(*) FROM cell_attempts WHERE run_id = ?", (run_id,)
    ).fetchone()
    files = [str(r[2]) for r in db.execute("PRAGMA database_list") if r[1] == "main"]
    key = (tuple(files), run_id, cell_where, tuple(cell_params))
    stamp = f"{updated}|{count}|{attempts}"
    kept = None if cache is None else cache.get(key)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    tags: dict[str, frozenset[str]] = {}
    parsed: dict[str, frozenset[str]] = {}  # tasks mostly share a few tag lists
    sql = (
        "SELECT task_id, json_extract(data, '$.tags') FROM tasks WHERE run_id = ?"
        if snapshot
        else "SELECT c.task_id, json_extract(c.data, '$.tags') FROM cells c "
        f"WHERE c.run_id = ? AND {cell_where}"
    )
    for task_id, found in db.execute(sql, [run_id] if snapshot else [run_id, *cell_params]):
        if found:
            known = parsed.get(found)
            if known is None:
                known = parsed[found] = frozenset(json.loads(found))
            tags[task_id] = known
    order: dict[str, int] = {}
    passes: dict[str, set[bool]] = {}
    failing: set[str] = set()
    for task_id, position, status in db.execute(
        f"SELECT c.task_id, c.position, c.status FROM cells c WHERE c.run_id = ? AND {cell_where}",
        [run_id, *cell_params],
    ):
        order.setdefault(task_id, position)
        if status != "pass":
            failing.add(task_id)
        if status in ("pass", "fail"):
            passes.setdefault(task_id, set()).add(status == "pass")
        else:
            passes.setdefault(task_id, set()).add(False)
    none: frozenset[str] = frozenset()
    outline = [
        (task_id, tags.get(task_id, none), task_id in failing, len(passes[task_id]) > 1)
        for task_id in sorted(order, key=lambda t: (order[t], t))
    ]
    if cache is not None:
        if len(cache) >= OUTLINES_KEPT:
            cache.clear()
        cache[key] = (stamp, outline)
    return outline


def _matrix_row(
    db: sqlite3.Connection,
    run_id: str,
    task_id: str,
    by: str,
    cell_where: str,
    cell_params: list[Any],
) -> dict[str, Any]:
    snapshot = db.execute(
        "SELECT data FROM tasks WHERE run_id = ? AND task_id = ?", (run_id, task_id)
    ).fetchone()
    task = json.loads(snapshot[0]) if snapshot else {}
    rated: dict[tuple[str, int], dict[str, Any]] = {}
    for row in db.execute(
        f"SELECT {_RATING_COLUMNS} FROM ratings WHERE run_id = ? AND task_id = ? "
        "ORDER BY created DESC",
        (run_id, task_id),
    ):
        rating = _rating(row)
        rated.setdefault((rating.condition, rating.epoch), rating.to_dict())
    cells: dict[str, Any] = {}
    statuses: set[bool] = set()
    tags: list[str] = list(task.get("tags") or ())
    for condition_id, epoch, status, data, attempts in db.execute(
        "SELECT c.condition_id, c.epoch, c.status, c.data, (SELECT COUNT(*) FROM cell_attempts a "
        "WHERE a.run_id = c.run_id AND a.task_id = c.task_id AND a.condition_id = c.condition_id "
        f"AND a.epoch = c.epoch) FROM cells c WHERE c.run_id = ? AND c.task_id = ? AND {cell_where}",
        [run_id, task_id, *cell_params],
    ):
        cell = json.loads(data)
        if not tags:
            tags = list(cell.get("tags") or ())
        response = cell.get("response") or {}
        output, cut = _shown(response.get("output"), OUTPUT_SHOWN)
        reason = cell.get("error")
        if reason is None:
            reasons = [s.get("reason") for s in cell.get("scores", ()) if s.get("reason")]
            reason = "; ".join(reasons) or None
        shown_status = "error" if status in ("error", "timeout") else status
        passed = None if shown_status == "error" else status == "pass"
        if passed is not None:
            statuses.add(passed)
        column = condition_id if by == "condition" else f"epoch {epoch}"
        cells[column] = {
            "condition": condition_id,
            "epoch": int(epoch),
            "attempt": int(attempts),
            "status": shown_status,
            "passed": passed,
            "score": cell.get("score"),
            "reason": reason,
            "output": output,
            "output_truncated": cut,
            "rating": rated.get((condition_id, int(epoch))),
        }
    shown_input, _ = _shown(task.get("input"), INPUT_SHOWN)
    expected = task.get("expected")
    return {
        "task_id": task_id,
        "input": shown_input,
        "expected": None if expected is None else _shown(expected, INPUT_SHOWN)[0],
        "tags": tags,
        "disagree": len(statuses) > 1,
        "cells": cells,
    }


def rating_labels(
    found: Iterable[Rating], rater: str | None = None
) -> dict[tuple[str, str, int], bool | float]:
    """Ratings as ``(task_id, condition, epoch) -> bool | float`` (the verdict when given,
    else the score); with several raters, the latest rating of each cell (or ``rater``'s)."""
    out: dict[tuple[str, str, int], tuple[str, bool | float]] = {}
    for rating in found:
        if rater is not None and rating.rater != rater:
            continue
        value: bool | float | None = rating.verdict if rating.verdict is not None else rating.score
        if value is None:
            continue
        key = (rating.task, rating.condition, rating.epoch)
        if key not in out or out[key][0] <= rating.created:
            out[key] = (rating.created, value)
    return {key: value for key, (_, value) in out.items()}


def transcript_json(
    db: sqlite3.Connection, run_id: str, key: tuple[str, str, int], attempt: int
) -> dict[str, Any]:
    """A cell attempt's transcript in the API's shape (no events when none was recorded)."""
    row = db.execute(
        "SELECT data FROM transcripts WHERE run_id = ? AND task_id = ? AND condition_id = ? "
        "AND epoch = ? AND attempt = ?",
        (run_id, *key, attempt),
    ).fetchone()
    if row is None:
        return {"events": [], "truncated": False, "bytes": 0}
    found: dict[str, Any] = json.loads(row[0])
    return found


def cell_attempt(
    db: sqlite3.Connection, run_id: str, key: tuple[str, str, int], attempt: int | None
) -> tuple[str, int, int] | None:
    """A cell's JSON at ``attempt`` (None: the latest), its attempt number and how many
    attempts it has; None when the run has no such cell or attempt."""
    attempts = attempt_of(db, run_id, key)
    if attempt is None or attempt == attempts:
        row = db.execute(
            "SELECT data FROM cells WHERE run_id = ? AND task_id = ? AND condition_id = ? "
            "AND epoch = ?",
            (run_id, *key),
        ).fetchone()
        return None if row is None else (str(row[0]), attempts, attempts + 1)
    row = db.execute(
        "SELECT data FROM cell_attempts WHERE run_id = ? AND task_id = ? AND condition_id = ? "
        "AND epoch = ? AND attempt = ?",
        (run_id, *key, attempt),
    ).fetchone()
    return None if row is None else (str(row[0]), attempt, attempts + 1)


def encode_transcript(transcript: Any) -> str:
    """A :class:`~benchkit.transcript.Transcript` as the ``transcripts`` table keeps it."""
    return _ENCODER.encode(transcript.to_dict())


def parse_cell_ref(ref: str) -> tuple[str, str, int]:
    """``task/condition/epoch`` (epoch optional, 0) as a cell key; the task id may hold
    slashes (the last one or two parts are the condition and epoch)."""
    parts = ref.rsplit("/", 2)
    if len(parts) == 3 and parts[0] and parts[1] and parts[2].isascii() and parts[2].isdigit():
        epoch = int(parts[2])
        if epoch > MAX_SEED:  # the store keeps integers as signed 64-bit
            raise ConfigError(
                f"--cell {ref[:200]!r}: epoch {parts[2][:30]}... is out of range",
                fix="name a cell as task/condition/epoch, e.g. --cell t1/baseline/0.",
            )
        return parts[0], parts[1], epoch
    parts = ref.rsplit("/", 1)
    if len(parts) == 2 and parts[0] and parts[1]:
        return parts[0], parts[1], 0
    raise ConfigError(
        f"--cell {ref!r} is not TASK/CONDITION[/EPOCH]",
        fix="name a cell as task/condition/epoch, e.g. --cell t1/baseline/0.",
    )


def selected(
    key: tuple[str, str, int], rerun: Sequence[tuple[str, str | None, int | None]]
) -> bool:
    """Whether a re-run selector (task, condition or None, epoch or None) picks ``key``."""
    task_id, condition_id, epoch = key
    return any(
        t == task_id and (c is None or c == condition_id) and (e is None or e == epoch)
        for t, c, e in rerun
    )
