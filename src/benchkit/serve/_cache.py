"""Read responses kept until the store changes: the explorer's reads answer from memory.

Fifty clients polling the runs list or a run's page ask the same questions again and
again, and between two commits to the store every answer is the same bytes. A
:class:`ResponseCache` keeps the body of each successful read (by path and query) with the
store's *data version* — SQLite's ``PRAGMA data_version`` on a connection of the cache's
own, which changes whenever any other connection (a job of this server, a ``benchkit run``
in another process) commits. A read whose version still matches is answered without a
thread, a query or JSON encoding; any commit makes every kept answer stale at once.

While a job of this server is running, answers also carry its live progress (not in the
store until it is written), so nothing is kept or answered from memory then.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from benchkit.serve_toolkit._state import ServeState, state_of

__all__ = ["ResponseCache", "cached", "close_cache"]

#: Answers kept at most, and their bytes at most: the least recently used go first.
MAX_ENTRIES = 512
MAX_BYTES = 64 * 1024 * 1024
#: An answer larger than this is never kept (a page of cells is ~25 KB; a run page ~3 KB).
MAX_ENTRY_BYTES = 4 * 1024 * 1024

_KEY = "benchkit.response_cache"

Handler = Callable[[Request], Awaitable[Response]]


class ResponseCache:
    """Bodies of read responses by request key, valid while the store's version holds."""

    def __init__(
        self, path: Path, *, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES
    ) -> None:
        self.path = path
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, tuple[int, bytes, str]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0

    def version(self) -> int | None:
        """The store's data version now; None when it cannot be read (then nothing is
        kept or answered from memory)."""
        with self._lock:
            try:
                if self._conn is None:
                    if not self.path.exists():
                        return None
                    uri = f"{self.path.resolve().as_uri()}?mode=ro"
                    self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
                row = self._conn.execute("PRAGMA data_version").fetchone()
            except sqlite3.Error:
                return None
            return int(row[0])

    def get(self, key: str, version: int) -> tuple[bytes, str] | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] != version:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found[1], found[2]

    def put(self, key: str, version: int, body: bytes, media_type: str) -> None:
        if len(body) > MAX_ENTRY_BYTES:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= len(old[1])
            self._entries[key] = (version, body, media_type)
            self._bytes += len(body)
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, dropped, _) = self._entries.popitem(last=False)
                self._bytes -= len(dropped)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _cache_of(state: ServeState) -> ResponseCache:
    found = state.extra.get(_KEY)
    if not isinstance(found, ResponseCache):
        found = state.extra[_KEY] = ResponseCache(state.store.path)
    return found


def close_cache(state: ServeState) -> None:
    """Close the cache's connection to the store (when the app shuts down)."""
    found = state.extra.pop(_KEY, None)
    if isinstance(found, ResponseCache):
        found.close()


def cached(handler: Handler) -> Handler:
    """Answer a read route from :class:`ResponseCache` while the store is unchanged (and
    no job of this server runs); keep its successful answers."""

    @functools.wraps(handler)
    async def answer(request: Request) -> Response:
        state = state_of(request)
        if state.jobs.busy():
            return await handler(request)
        cache = _cache_of(state)
        version = cache.version()
        if version is None:
            return await handler(request)
        key = request.url.path + "?" + request.url.query
        found = cache.get(key, version)
        if found is not None:
            return Response(found[0], 200, media_type=found[1])
        response = await handler(request)
        if response.status_code == 200 and type(response) is Response and response.media_type:
            # Kept under the version read *before* the answer was made: a commit meanwhile
            # makes it stale at once, never the other way round.
            cache.put(key, version, bytes(response.body), response.media_type)
        return response

    return answer
