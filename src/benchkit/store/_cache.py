"""The LLM response cache in the run store: JSON text by key, with a hit count."""

from __future__ import annotations

import sqlite3

from benchkit._secrets import known
from benchkit.store._records import now
from benchkit.store._schema import transaction

__all__ = ["cache_get", "cache_put"]


def cache_get(db: sqlite3.Connection, key: str) -> str | None:
    """The cached value (JSON text) under ``key``, or None; counts the hit."""
    row = db.execute("SELECT value FROM llm_cache WHERE key = ?", (key,)).fetchone()
    if row is None:
        return None
    with transaction(db):
        db.execute("UPDATE llm_cache SET hits = hits + 1 WHERE key = ?", (key,))
    value: str = row[0]
    return value


def cache_put(db: sqlite3.Connection, key: str, value: str) -> None:
    """Store ``value`` (JSON text) under ``key``, replacing what was there (secrets in
    it redacted: a reply may quote a key)."""
    value = known().scrub_json(value)
    with transaction(db):
        db.execute(
            "INSERT OR REPLACE INTO llm_cache (key, value, created_at, hits) VALUES (?, ?, ?, 0)",
            (key, value, now()),
        )
