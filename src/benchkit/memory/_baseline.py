"""LocalBaseline: a real memory store on embedded SQLite — FTS5 matching, BM25 ranking.

It is the floor every memory provider is compared with, and it needs nothing but Python's
``sqlite3`` (built with FTS5). Ranking reproduces MemoryBench's LocalBaseline exactly —
its tokenizer, its BM25 (k1 = 1.5, b = 0.75, ``idf = ln((N - df + 0.5) / (df + 0.5) + 1)``,
query tokens counted with repeats; ``ln`` is V8's ``Math.log``, :func:`benchkit._js.math_log`,
so scores are bit-equal to Node's), its tie order (insertion order) and its cut-off of
results that score 0 — while FTS5 finds the candidate records, so a query reads only the
records that share a term with it instead of re-tokenising the whole scope as the
original does.

Every operation is scoped: a record added in one :class:`~benchkit.protocols.MemoryScope`
is invisible to every other scope (the original shares one scope per run). Statistics
(N, average length, document frequencies) are per scope too.

    >>> import anyio
    >>> from benchkit.protocols import MemoryScope
    >>> async def demo():
    ...     store = LocalBaseline()
    ...     scope = MemoryScope("user", "run", "case-1")
    ...     await store.add(scope, "Paris is the capital of France.")
    ...     await store.add(scope, "Berlin is in Germany.")
    ...     hits = await store.retrieve(scope, "capital of France?")
    ...     return [item.content for item in hits]
    >>> anyio.run(demo)
    ['Paris is the capital of France.']

Each call runs in a worker thread (``anyio.to_thread``) under one lock: a retrieval over a
large scope never stalls the event loop, and concurrent cells share one connection safely
(``docs/memory-providers.md`` has the measured costs).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

from benchkit import _js
from benchkit._js import WHITESPACE
from benchkit.errors import ConfigError
from benchkit.model import RetrievedItem
from benchkit.protocols import MemoryScope

__all__ = ["LocalBaseline", "tokenize"]

T = TypeVar("T")

K1 = 1.5
B = 0.75

_NOT_WORD = re.compile("[^A-Za-z0-9_" + re.escape(WHITESPACE) + "]")
_SPLIT = re.compile("[" + re.escape(WHITESPACE) + "]+")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS scopes (
    key TEXT PRIMARY KEY,
    docs INTEGER NOT NULL DEFAULT 0,
    tokens INTEGER NOT NULL DEFAULT 0,
    next_id INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS records (
    rowid INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    id TEXT NOT NULL,
    content TEXT NOT NULL,
    metadata TEXT NOT NULL,
    length INTEGER NOT NULL,
    tf TEXT NOT NULL,
    UNIQUE (scope, id)
);
CREATE VIRTUAL TABLE IF NOT EXISTS terms USING fts5(
    scope, tokens, tokenize = "ascii tokenchars '_'"
);
"""


def tokenize(text: str) -> list[str]:
    """MemoryBench's tokenizer: lower-case, every non-``[A-Za-z0-9_]`` character a space,
    split on whitespace, drop tokens of one character (JavaScript ``\\w`` is ASCII-only).

        >>> tokenize("Café au lait, s'il vous plaît — x2!")
        ['caf', 'au', 'lait', 'il', 'vous', 'pla', 'x2']
    """
    return [t for t in _SPLIT.split(_NOT_WORD.sub(" ", text.lower())) if len(t) > 1]


def _bm25(
    query: Sequence[str],
    tf: Mapping[str, int],
    length: int,
    n: int,
    avgdl: float,
    df: Mapping[str, int],
    k1: float,
    b: float,
) -> float:
    """One document's BM25 score: the sum over query tokens, repeats included, in query
    order (the original's summation order, so equal inputs give bit-equal scores)."""
    score = 0.0
    norm = k1 * (1 - b + b * (length / avgdl))
    for term in query:
        freq = tf.get(term, 0)
        if freq == 0:
            continue
        count = df[term]
        idf = _js.math_log((n - count + 0.5) / (count + 0.5) + 1)
        score += idf * (freq * (k1 + 1) / (freq + norm))
    return score


async def _in_thread(function: Callable[..., T], *args: Any) -> T:
    """Run one store call in a worker thread, so a large scope never stalls the loop."""
    return await anyio.to_thread.run_sync(functools.partial(function, *args))


def _scope_key(scope: MemoryScope) -> str:
    return json.dumps([scope.user_id, scope.run_id, scope.session_id, scope.namespace])


def _scope_token(key: str) -> str:
    """A one-token name for a scope inside the FTS index (letters and digits only)."""
    return "s" + hashlib.blake2b(key.encode(), digest_size=12).hexdigest()


class LocalBaseline:
    """The built-in memory store: SQLite FTS5 candidates, MemoryBench's BM25 ranking.

    ``path`` is a database file (created if missing; kept after :meth:`close`) or None for
    a private in-memory database. ``k1`` and ``b`` are the BM25 constants (the original's
    by default). Supports every capability: add, retrieve, delete, update, list, reset.
    Record ids are ``mem_<n>``, numbered per scope, so a deterministic run gets the same
    ids every time.
    """

    name = "LocalBaseline"
    capabilities = frozenset({"add", "retrieve", "delete", "update", "list", "reset"})
    convergence_wait_ms = 0.0

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        k1: float = K1,
        b: float = B,
    ) -> None:
        if not (isinstance(k1, (int, float)) and k1 >= 0 and isinstance(b, (int, float))):
            raise ConfigError(f"k1 must be >= 0 and b a number, got k1={k1!r}, b={b!r}")
        if not 0 <= b <= 1:
            raise ConfigError(f"b must be within [0, 1], got {b!r}", fix="the original uses 0.75.")
        self.path = Path(path) if path is not None else None
        self.k1 = float(k1)
        self.b = float(b)
        self._lock = threading.Lock()
        try:
            self._db: sqlite3.Connection | None = sqlite3.connect(
                ":memory:" if path is None else os.fspath(path),
                check_same_thread=False,
                isolation_level=None,
            )
            if path is not None:
                # A benchmark store needs no fsync per commit: WAL + NORMAL keeps each call
                # short (a crash may lose the last records; the run re-ingests them).
                self._db.execute("PRAGMA journal_mode = WAL")
                self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.OperationalError as exc:
            raise ConfigError(
                f"LocalBaseline cannot open its SQLite database: {exc}",
                fix="check the path is writable; Python's sqlite3 must be built with FTS5.",
            ) from exc

    def __repr__(self) -> str:
        where = str(self.path) if self.path is not None else ":memory:"
        return f"LocalBaseline({where!r})"

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError("LocalBaseline is closed")
        return self._db

    # -- writing --------------------------------------------------------------------

    def _add(
        self, scope: MemoryScope, content: str, metadata: Mapping[str, Any] | None = None
    ) -> str:
        tokens = tokenize(content)
        meta = json.dumps(dict(metadata or {}), ensure_ascii=False, default=str)
        tf = json.dumps(Counter(tokens), ensure_ascii=False)
        key = _scope_key(scope)
        with self._lock:
            db = self._conn()
            db.execute("BEGIN")
            try:
                db.execute("INSERT OR IGNORE INTO scopes (key) VALUES (?)", (key,))
                (number,) = db.execute(
                    "SELECT next_id FROM scopes WHERE key = ?", (key,)
                ).fetchone()
                db.execute(
                    "UPDATE scopes SET docs = docs + 1, tokens = tokens + ?, "
                    "next_id = next_id + 1 WHERE key = ?",
                    (len(tokens), key),
                )
                record_id = f"mem_{number}"
                cursor = db.execute(
                    "INSERT INTO records (scope, id, content, metadata, length, tf) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (key, record_id, content, meta, len(tokens), tf),
                )
                db.execute(
                    "INSERT INTO terms (rowid, scope, tokens) VALUES (?, ?, ?)",
                    (cursor.lastrowid, _scope_token(key), " ".join(tokens)),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return record_id

    def _update(
        self,
        scope: MemoryScope,
        record_id: str,
        content: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> bool:
        tokens = tokenize(content)
        key = _scope_key(scope)
        with self._lock:
            db = self._conn()
            db.execute("BEGIN")
            try:
                row = db.execute(
                    "SELECT rowid, length, metadata FROM records WHERE scope = ? AND id = ?",
                    (key, record_id),
                ).fetchone()
                if row is None:
                    db.execute("ROLLBACK")
                    return False
                rowid, old_length, old_meta = row
                meta = (
                    old_meta
                    if metadata is None
                    else json.dumps(dict(metadata), ensure_ascii=False, default=str)
                )
                db.execute(
                    "UPDATE records SET content = ?, metadata = ?, length = ?, tf = ? "
                    "WHERE rowid = ?",
                    (content, meta, len(tokens), json.dumps(Counter(tokens)), rowid),
                )
                db.execute("UPDATE terms SET tokens = ? WHERE rowid = ?", (" ".join(tokens), rowid))
                db.execute(
                    "UPDATE scopes SET tokens = tokens + ? WHERE key = ?",
                    (len(tokens) - old_length, key),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return True

    def _delete(self, scope: MemoryScope, record_id: str) -> bool:
        key = _scope_key(scope)
        with self._lock:
            db = self._conn()
            db.execute("BEGIN")
            try:
                row = db.execute(
                    "SELECT rowid, length FROM records WHERE scope = ? AND id = ?",
                    (key, record_id),
                ).fetchone()
                if row is not None:
                    db.execute("DELETE FROM records WHERE rowid = ?", (row[0],))
                    db.execute("DELETE FROM terms WHERE rowid = ?", (row[0],))
                    db.execute(
                        "UPDATE scopes SET docs = docs - 1, tokens = tokens - ? WHERE key = ?",
                        (row[1], key),
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return row is not None

    def _reset(self, scope: MemoryScope) -> None:
        key = _scope_key(scope)
        with self._lock:
            db = self._conn()
            db.execute("BEGIN")
            try:
                db.execute(
                    "DELETE FROM terms WHERE rowid IN (SELECT rowid FROM records WHERE scope = ?)",
                    (key,),
                )
                db.execute("DELETE FROM records WHERE scope = ?", (key,))
                db.execute("DELETE FROM scopes WHERE key = ?", (key,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    # -- reading --------------------------------------------------------------------

    def _retrieve(self, scope: MemoryScope, query: str, limit: int = 10) -> Sequence[RetrievedItem]:
        terms = tokenize(query)
        if not terms or limit <= 0:
            return []
        key = _scope_key(scope)
        unique = list(dict.fromkeys(terms))
        match = (
            f'scope : "{_scope_token(key)}" AND tokens : ('
            + " OR ".join(f'"{t}"' for t in unique)
            + ")"
        )
        with self._lock:
            db = self._conn()
            stats = db.execute("SELECT docs, tokens FROM scopes WHERE key = ?", (key,)).fetchone()
            if stats is None or stats[0] == 0 or stats[1] == 0:
                return []
            rows = db.execute(
                "SELECT r.id, r.content, r.metadata, r.length, r.tf FROM terms "
                "JOIN records AS r ON r.rowid = terms.rowid "
                "WHERE terms MATCH ? ORDER BY r.rowid",
                (match,),
            ).fetchall()
        n, total = stats
        avgdl = total / n
        candidates = []
        df: Counter[str] = Counter()
        for record_id, content, meta, length, tf_json in rows:
            tf = json.loads(tf_json)
            present = {t: tf[t] for t in unique if t in tf}
            df.update(present.keys())
            candidates.append((record_id, content, meta, length, present))
        scored = []
        for record_id, content, meta, length, present in candidates:
            score = _bm25(terms, present, length, n, avgdl, df, self.k1, self.b)
            if score > 0:
                scored.append((score, record_id, content, meta))
        scored.sort(key=lambda row: row[0], reverse=True)
        return [
            RetrievedItem(id=record_id, content=content, score=score, metadata=json.loads(meta))
            for score, record_id, content, meta in scored[:limit]
        ]

    def _list(
        self, scope: MemoryScope, limit: int = 100, offset: int = 0
    ) -> Sequence[RetrievedItem]:
        key = _scope_key(scope)
        with self._lock:
            rows = (
                self._conn()
                .execute(
                    "SELECT id, content, metadata FROM records WHERE scope = ? "
                    "ORDER BY rowid LIMIT ? OFFSET ?",
                    (key, limit, offset),
                )
                .fetchall()
            )
        return [RetrievedItem(id=i, content=c, metadata=json.loads(m)) for i, c, m in rows]

    # -- the MemoryProvider methods: each call runs in a worker thread -----------------

    async def add(
        self, scope: MemoryScope, content: str, metadata: Mapping[str, Any] | None = None
    ) -> str:
        """Store ``content`` in ``scope``; returns its new record id."""
        return await _in_thread(self._add, scope, content, metadata)

    async def update(
        self,
        scope: MemoryScope,
        record_id: str,
        content: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> bool:
        """Replace a record's content (and metadata, when given); False if it is not here.

        The record keeps its place in insertion order, as a JavaScript ``Map.set`` does.
        """
        return await _in_thread(self._update, scope, record_id, content, metadata)

    async def delete(self, scope: MemoryScope, record_id: str) -> bool:
        """Remove one record of ``scope``; False when there is no such record in it."""
        return await _in_thread(self._delete, scope, record_id)

    async def reset(self, scope: MemoryScope) -> None:
        """Remove every record of ``scope`` (other scopes keep theirs)."""
        await _in_thread(self._reset, scope)

    async def retrieve(
        self, scope: MemoryScope, query: str, limit: int = 10
    ) -> Sequence[RetrievedItem]:
        """The ``limit`` best records of ``scope`` for ``query``, best first.

        ``score`` is the raw BM25 score (not normalised, as in the original); records that
        share no token with the query are not returned.
        """
        return await _in_thread(self._retrieve, scope, query, limit)

    async def list(
        self, scope: MemoryScope, limit: int = 100, offset: int = 0
    ) -> Sequence[RetrievedItem]:
        """The records of ``scope`` in insertion order (``limit`` of them from ``offset``)."""
        return await _in_thread(self._list, scope, limit, offset)

    # -- lifecycle ------------------------------------------------------------------

    def close(self) -> None:
        """Close the database (an in-memory one is gone; a file stays on disk)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    async def aclose(self) -> None:
        """:meth:`close`, for the Runner and ``async with``-style owners."""
        self.close()
