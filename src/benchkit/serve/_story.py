"""The explorer's routes for looking at, comparing and judging outputs (issue #25): the
outputs matrix, full-text search, people's ratings (with CSV / JSONL downloads) and
re-running a task or a cell as a new attempt. Shapes: docs/explorer.md.

Reads go through the server's :class:`~benchkit.store._queries.StoreReader` (paged in
SQL); ratings are written through the server's :class:`~benchkit.store.Store`.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import OrderedDict, deque
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from benchkit.errors import BenchkitError, ConfigError, RunNotFoundError, StoreError
from benchkit.serve._cache import cached
from benchkit.serve_toolkit import (
    ApiError,
    QueueFull,
    bad_input,
    json_response,
    query_int,
    read_json,
    state_of,
)
from benchkit.store._story import MAX_RATERS_PER_CELL, TooManyRatings

__all__ = [
    "RATE_SCHEMA",
    "RATINGS_PER_MINUTE",
    "RERUN_SCHEMA",
    "UNRATE_SCHEMA",
    "RatingGate",
    "routes",
]

#: Ratings one client may post a minute (a person rates far slower).
RATINGS_PER_MINUTE = 120
#: Clients whose recent ratings the gate remembers (the least recent are forgotten).
_CLIENTS_KEPT = 10_000


class RatingGate:
    """What ratings a server takes: at most ``max_raters`` raters per cell, and from each
    client — its address and the token it sends — at most ``per_minute`` ratings in any
    minute (then 429 with ``Retry-After``). One per app."""

    def __init__(self, max_raters: int, per_minute: int) -> None:
        if max_raters < 1 or per_minute < 1:
            raise ConfigError(
                "max_raters_per_cell and ratings_per_minute must be at least 1",
                fix="give create_app(max_raters_per_cell=100, ratings_per_minute=120).",
            )
        self.max_raters = max_raters
        self.per_minute = per_minute
        self._recent: OrderedDict[str, deque[float]] = OrderedDict()

    def admit(self, request: Request) -> None:
        """Count one rating of the request's client; 429 when it had its minute's worth."""
        token = request.headers.get("authorization", "")
        host = request.client.host if request.client is not None else ""
        client = f"{host}|{hashlib.sha256(token.encode()).hexdigest()[:16]}"
        now = time.monotonic()
        recent = self._recent.pop(client, None) or deque()
        self._recent[client] = recent
        while recent and now - recent[0] >= 60.0:
            recent.popleft()
        if len(self._recent) > _CLIENTS_KEPT:
            self._recent.popitem(last=False)
        if len(recent) >= self.per_minute:
            wait = max(1, math.ceil(60.0 - (now - recent[0])))
            raise ApiError(
                429,
                {
                    "code": "RATE_LIMITED",
                    "error": f"at most {self.per_minute} ratings a minute from one client; "
                    f"try again in {wait} s",
                    "details": {"retry_after": wait},
                },
                headers={"Retry-After": str(wait)},
            )
        recent.append(now)


def _gate(state: Any) -> RatingGate:
    gate = state.extra.get("benchkit.ratings")
    if gate is None:
        gate = state.extra["benchkit.ratings"] = RatingGate(MAX_RATERS_PER_CELL, RATINGS_PER_MINUTE)
    assert isinstance(gate, RatingGate)
    return gate


_CELL_REF = {
    "task": {"type": "string", "minLength": 1, "maxLength": 1000},
    "condition": {"type": "string", "minLength": 1, "maxLength": 1000},
    "epoch": {"type": "integer", "minimum": 0, "maximum": 1_000_000},
}
#: The body of ``POST /api/runs/{id}/ratings``.
RATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["task", "condition", "rater"],
    "properties": {
        **_CELL_REF,
        "verdict": {"type": ["boolean", "null"]},
        "score": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "comment": {"type": "string", "maxLength": 10_000},
        "rater": {"type": "string", "minLength": 1, "maxLength": 200},
    },
}
#: The body of ``DELETE /api/runs/{id}/ratings``.
UNRATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["task", "condition", "rater"],
    "properties": {**_CELL_REF, "rater": {"type": "string", "minLength": 1, "maxLength": 200}},
}
#: The body of ``POST /api/runs/{id}/rerun``.
RERUN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["task"],
    "properties": {
        "task": _CELL_REF["task"],
        "condition": {"type": ["string", "null"], "minLength": 1},
        "epoch": {"type": ["integer", "null"], "minimum": 0, "maximum": 1_000_000},
    },
}


def _choice(request: Request, name: str, allowed: tuple[str, ...]) -> str | None:
    value = request.query_params.get(name) or None
    if value is not None and value not in allowed:
        raise ApiError.bk(
            400, "INVALID_QUERY", f"{name} must be one of {', '.join(allowed)}", field=name
        )
    return value


def _not_found(run_id: str) -> ApiError:
    return ApiError.bk(404, "RUN_NOT_FOUND", f"no run {run_id!r}", run_id=run_id)


def _store_problem(exc: StoreError) -> ApiError:
    return ApiError.bk(501, "SEARCH_UNAVAILABLE", exc.message, fix=exc.fix or "")


async def matrix(request: Request) -> Response:
    """``GET /api/runs/{id}/matrix``: one page of tasks × conditions (or epochs)."""
    state = state_of(request)
    run_id = request.path_params["run_id"]
    params = request.query_params
    by = _choice(request, "by", ("condition", "epoch")) or "condition"
    filters: dict[str, Any] = {
        "by": by,
        "epoch": query_int(params, "epoch", 0, low=0, high=1_000_000),
        "condition": params.get("condition") or None,
        "offset": query_int(params, "offset", 0, low=0, high=10**9),
        "limit": query_int(params, "limit", 50, low=1, high=500),
        "only": _choice(request, "only", ("failures", "disagree")),
        "tag": params.get("tag") or None,
        "q": (params.get("q") or "").strip() or None,
        "rated": _choice(request, "rated", ("yes", "no")),
    }
    if filters["q"] is not None and len(filters["q"]) > 1000:
        raise ApiError.bk(400, "INVALID_QUERY", "q must be at most 1000 characters", field="q")
    try:
        page = await state.in_thread(lambda: state.reader.matrix(run_id, **filters))
        if filters["q"] is None:  # the search box is on this screen: index in the background
            state.reader.warm_search(run_id)
    except RunNotFoundError:
        raise _not_found(run_id) from None
    except StoreError as exc:
        raise _store_problem(exc) from None
    except ConfigError as exc:
        raise ApiError.bk(400, "INVALID_QUERY", exc.message, field="condition") from None
    return json_response(page)


async def search(request: Request) -> Response:
    """``GET /api/search?q=TEXT[&run=ID]``: cells matching every word, best first."""
    state = state_of(request)
    params = request.query_params
    text = (params.get("q") or "").strip()
    if not text or len(text) > 1000:
        raise ApiError.bk(400, "INVALID_QUERY", "q must be 1 to 1000 characters", field="q")
    limit = query_int(params, "limit", 50, low=1, high=500)
    run_id = params.get("run") or None
    try:
        results, total = await state.in_thread(
            lambda: state.reader.search(text, run_id=run_id, limit=limit)
        )
    except RunNotFoundError:
        raise _not_found(str(run_id)) from None
    except StoreError as exc:
        raise _store_problem(exc) from None
    return json_response({"results": results, "total": total})


async def list_ratings(request: Request) -> Response:
    """``GET /api/runs/{id}/ratings[?format=csv|jsonl]``."""
    from benchkit.store._story import ratings_csv

    state = state_of(request)
    run_id = request.path_params["run_id"]
    kind = _choice(request, "format", ("json", "csv", "jsonl")) or "json"
    try:
        found = await state.in_thread(state.reader.ratings, run_id)
    except RunNotFoundError:
        raise _not_found(run_id) from None
    if kind == "json":
        return json_response({"ratings": [r.to_dict() for r in found]})
    if kind == "csv":
        body, media = ratings_csv(found), "text/csv; charset=utf-8"
    else:
        body = "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in found)
        media = "application/x-ndjson; charset=utf-8"
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in run_id)[:100]
    return Response(
        body,
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="{safe}-ratings.{kind}"'},
    )


async def add_rating(request: Request) -> Response:
    """``POST /api/runs/{id}/ratings``: one rating per rater per cell (replaces)."""
    state = state_of(request)
    run_id = request.path_params["run_id"]
    body = await read_json(request, RATE_SCHEMA, max_bytes=state.max_body)
    await _exists(state, run_id)
    gate = _gate(state)
    gate.admit(request)

    def rate() -> Any:
        return state.store.rate(
            run_id,
            body["task"],
            body["condition"],
            int(body.get("epoch") or 0),
            rater=body["rater"],
            verdict=body.get("verdict"),
            score=body.get("score"),
            comment=body.get("comment") or "",
            max_raters=gate.max_raters,
        )

    try:
        rating = await state.in_thread(rate)
    except TooManyRatings as exc:
        raise ApiError.bk(409, "TOO_MANY_RATINGS", exc.message, field="rater") from None
    except ConfigError as exc:
        field = "task" if "has no cell" in exc.message else _field_of(exc.message)
        status = 404 if "has no cell" in exc.message else 400
        code = "CELL_NOT_FOUND" if status == 404 else "INVALID_BODY"
        raise ApiError.bk(status, code, exc.message, field=field) from None
    return json_response({"rating": rating.to_dict()}, 201)


def _field_of(message: str) -> str:
    for name in ("verdict", "score", "rater", "comment"):
        if message.startswith(name) or f" {name} " in message:
            return name
    return "verdict"


async def delete_rating(request: Request) -> Response:
    """``DELETE /api/runs/{id}/ratings``: remove one rater's rating of a cell."""
    state = state_of(request)
    run_id = request.path_params["run_id"]
    body = await read_json(request, UNRATE_SCHEMA, max_bytes=state.max_body)
    await _exists(state, run_id)
    gone = await state.in_thread(
        lambda: state.store.unrate(
            run_id, body["task"], body["condition"], int(body.get("epoch") or 0), body["rater"]
        )
    )
    if not gone:
        raise ApiError.bk(404, "RATING_NOT_FOUND", "no such rating", field="rater")
    return Response(status_code=204)


async def rerun(request: Request) -> Response:
    """``POST /api/runs/{id}/rerun``: run a task (every condition) or one cell again into
    the same run, as new attempts; answered like ``/resume`` (202 and the job)."""
    from benchkit.serve._api import row_of, spec_for_resume

    state = state_of(request)
    run_id = request.path_params["run_id"]
    body = await read_json(request, RERUN_SCHEMA, max_bytes=state.max_body)
    if state.jobs.live(run_id) is not None:
        raise ApiError.bk(409, "RUN_ACTIVE", f"run {run_id!r} is already running")
    row = await row_of(state, run_id)
    if row.status == "running":
        raise ApiError.bk(409, "RUN_ACTIVE", f"run {run_id!r} is running in another process")
    task, condition, epoch = body["task"], body.get("condition"), body.get("epoch")
    if condition is not None and condition not in row.conditions:
        raise ApiError.bk(
            400, "INVALID_BODY", f"run {run_id!r} has no condition {condition!r}", field="condition"
        )
    found = await state.in_thread(lambda: state.reader.cells_of(run_id, task, condition, epoch))
    if not found:
        raise ApiError.bk(
            404,
            "CELL_NOT_FOUND",
            f"run {run_id!r} has no cell of task {task!r} to re-run",
            field="task",
        )
    spec = spec_for_resume(state, row)
    if state.jobs.builder(spec) is None:
        raise ApiError.bk(409, "RUN_NOT_RESUMABLE", f"run {run_id!r} cannot be re-run here")
    try:
        await state.in_thread(state.jobs.suite, spec)
    except BenchkitError as exc:
        raise bad_input(state, exc) from None
    try:
        job = state.jobs.submit(run_id, "rerun", spec, rerun=((task, condition, epoch),))
    except QueueFull as exc:
        raise ApiError.bk(503, "QUEUE_FULL", f"{exc}; try again later") from None
    return json_response({"run_id": run_id, "job": job.to_json()}, 202)


async def _exists(state: Any, run_id: str) -> None:
    try:
        await state.in_thread(state.reader.run, run_id)
    except RunNotFoundError:
        raise _not_found(run_id) from None


def routes() -> list[Route]:
    return [
        Route("/api/runs/{run_id}/matrix", cached(matrix), methods=["GET"]),
        Route("/api/runs/{run_id}/ratings", cached(list_ratings), methods=["GET"]),
        Route("/api/runs/{run_id}/ratings", add_rating, methods=["POST"]),
        Route("/api/runs/{run_id}/ratings", delete_rating, methods=["DELETE"]),
        Route("/api/runs/{run_id}/rerun", rerun, methods=["POST"]),
        Route("/api/search", cached(search), methods=["GET"]),
    ]
