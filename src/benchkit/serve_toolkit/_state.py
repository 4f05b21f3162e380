"""The server's state, shared by every route: root, store, readers, jobs, limits."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import attrs
from starlette.requests import Request

from benchkit.llm._endpoints import EndpointRegistry
from benchkit.results import RunResult
from benchkit.serve_toolkit._http import DEFAULT_MAX_BODY, Scrubber
from benchkit.serve_toolkit._jobs import JobManager
from benchkit.store import Store
from benchkit.store._queries import StoreReader

__all__ = ["ServeState", "query_int", "state_of"]

T = TypeVar("T")

#: Finished runs :meth:`ServeState.load` keeps loaded.
_LOADED_KEPT = 8


@attrs.define(eq=False)
class ServeState:
    """Everything a request handler needs; one per app."""

    root: Path
    #: The store, opened once: every read and write of every request goes through it.
    store: Store
    jobs: JobManager
    scrub: Scrubber
    max_body: int = DEFAULT_MAX_BODY
    #: The tools' server settings (``create_app(**settings)``), checked and resolved: what
    #: each tool declares in ``Tool.server_settings`` and was given.
    settings: dict[str, Any] = attrs.field(factory=dict)
    #: The endpoints requests may name (the server's configuration; docs/server.md).
    endpoints: EndpointRegistry = attrs.field(factory=EndpointRegistry)
    #: Read queries run in threads; this bounds how many at once (SQLite readers are cheap,
    #: but each holds a thread).
    limiter: anyio.CapacityLimiter = attrs.field(factory=lambda: anyio.CapacityLimiter(8))
    #: How long a request waits for its work in a thread (seconds): then it is answered 503
    #: and the thread is left to finish on its own, so no request waits without end.
    thread_deadline: float = 300.0
    #: What routes keep between requests, by key (a tool's keys start with its name).
    extra: dict[str, Any] = attrs.field(factory=dict)
    #: The run a server was started on (``create_explorer_app(run_id=...)``), if any.
    run_id: str | None = None
    loaded: dict[str, tuple[tuple[str, str, int], RunResult]] = attrs.field(factory=dict)

    @property
    def reader(self) -> StoreReader:
        """The store's query layer (one connection per thread, so a long load of a large
        run holds up no other request)."""
        return self.store.reader

    def load(self, run_id: str) -> RunResult:
        """The stored run; a finished run is kept (until it changes) so the run page of a
        large run loads once."""
        row = self.reader.run(run_id)
        kept = self.loaded.get(run_id)
        if kept is not None and kept[0] == (row.updated_at, row.status, row.cells):
            return kept[1]
        result = self.reader.load(run_id)
        if row.status == "finished":
            if len(self.loaded) >= _LOADED_KEPT:
                self.loaded.pop(next(iter(self.loaded)), None)
            self.loaded[run_id] = ((row.updated_at, row.status, row.cells), result)
        return result

    def outcome(self, run_id: str) -> RunResult:
        """The stored run without its cells: what a finished run stored when it ended
        (aggregates, groups, comparisons), so the read does not depend on the run's size;
        a run that stored none is loaded whole (see ``Store.load(cells=False)``)."""
        return self.reader.load(run_id, cells=False)

    async def in_thread(self, func: Callable[..., T], *args: Any) -> T:
        """Run blocking store work in a worker thread, bounded by :attr:`limiter` and by
        :attr:`thread_deadline` (then 503; the thread's slot in the limiter is freed)."""
        from benchkit.serve_toolkit._http import ApiError

        with anyio.move_on_after(self.thread_deadline) as scope:
            return await anyio.to_thread.run_sync(
                func, *args, limiter=self.limiter, abandon_on_cancel=True
            )
        assert scope.cancelled_caught
        raise ApiError.bk(
            503,
            "TIMEOUT",
            f"the request's work took longer than {self.thread_deadline:g} s; try again later",
        )


def state_of(request: Request) -> ServeState:
    """The server's state, from any request to it."""
    state: ServeState = request.app.state.benchkit
    return state


def query_int(params: Mapping[str, str], name: str, default: int, *, low: int, high: int) -> int:
    """An integer query parameter within ``[low, high]``; 400 naming it otherwise."""
    from benchkit.serve_toolkit._http import ApiError

    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError.bk(400, "INVALID_QUERY", f"{name} must be an integer", field=name) from None
    if not low <= value <= high:
        raise ApiError.bk(
            400, "INVALID_QUERY", f"{name} must be between {low} and {high}", field=name
        )
    return value
