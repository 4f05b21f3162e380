"""benchkit's own API over the store, under ``/api``: runs of every format, their cells,
comparisons, and jobs (start, cancel, resume) with live progress as server-sent events.

The routes only: what they answer is shaped in :mod:`benchkit.serve._shapes`, the jobs
``POST /api/runs`` starts are :mod:`benchkit.serve._runs`'s. Shapes are documented in
docs/server.md and served as OpenAPI at ``/openapi.json``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal

import anyio
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from benchkit.errors import BenchkitError, RunNotFoundError
from benchkit.serde import converter
from benchkit.serve._cache import cached
from benchkit.serve._runs import JobKinds
from benchkit.serve._shapes import (
    benchmarks_json,
    cell_json,
    cells_page_json,
    endpoints_json,
    pass_rates_json,
    queued_detail,
    relative_source,
    run_detail,
    run_json,
    sse,
)
from benchkit.serve_toolkit import (
    ApiError,
    QueueFull,
    ServeState,
    check_spec,
    json_response,
    query_int,
    read_json,
    start_job,
    state_of,
)
from benchkit.store import RunSummary
from benchkit.store._compare import RunComparison
from benchkit.store._queries import CELL_SORTS, CellFilter, RunFilter

__all__ = ["row_of", "routes", "spec_for_resume"]

_RUN_STATUSES = ("running", "finished", "interrupted", "crashed")


async def row_of(state: ServeState, run_id: str) -> RunSummary:
    """The run's row (its source relative to the root); 404 ``RUN_NOT_FOUND`` if none."""
    try:
        row = await state.in_thread(state.reader.run, run_id)
    except RunNotFoundError:
        raise _not_found(run_id) from None
    return relative_source(row, state.root)


def _not_found(run_id: str) -> ApiError:
    return ApiError.bk(404, "RUN_NOT_FOUND", f"no run {run_id!r}", run_id=run_id)


# -- routes -------------------------------------------------------------------------------


async def list_runs(request: Request) -> Response:
    state = state_of(request)
    params = request.query_params
    status = params.get("status") or None
    if status is not None and status not in _RUN_STATUSES:
        raise ApiError.bk(
            400,
            "INVALID_QUERY",
            f"status must be one of {', '.join(_RUN_STATUSES)}",
            field="status",
        )
    where = RunFilter(
        benchmark=params.get("benchmark") or None,
        format=params.get("format") or None,
        status=status,  # type: ignore[arg-type]
        since=params.get("since") or None,
        until=params.get("until") or None,
    )
    limit = query_int(params, "limit", 50, low=1, high=1000)
    offset = query_int(params, "offset", 0, low=0, high=10**9)
    rows, total = await state.in_thread(
        lambda: state.reader.runs(where, limit=limit, offset=offset)
    )
    runs = [run_json(relative_source(r, state.root), state.jobs.live(r.run_id)) for r in rows]
    counts = await state.in_thread(state.reader.pass_counts, [r.run_id for r in rows])
    for run in runs:
        run["pass_rates"] = pass_rates_json(counts.get(run["run_id"], {}))
    return json_response({"runs": runs, "total": total, "limit": limit, "offset": offset})


async def start_run(request: Request) -> Response:
    """``POST /api/runs``: ``{"kind": KIND, ...}`` checked against the kind's schema, its
    spec built into a suite (400 when it cannot be), then queued (202)."""
    state = state_of(request)
    kinds: JobKinds = request.app.state.job_kinds
    body = await read_json(request, {"type": "object"}, max_bytes=state.max_body)
    job, _ = await start_job(state, kinds.spec_from_request(body, state))
    return json_response({"run_id": job.run_id, "job": job.to_json()}, 202)


async def get_run(request: Request) -> Response:
    state = state_of(request)
    run_id = request.path_params["run_id"]
    job = state.jobs.live(run_id)
    try:
        row = await row_of(state, run_id)
    except ApiError:
        job = state.jobs.jobs.get(run_id)  # queued, or failed before its first cell
        if job is None:
            raise
        return json_response(queued_detail(job))
    result = await state.in_thread(state.outcome, run_id)

    summary = await state.in_thread(state.reader.summary, run_id)
    ratings = await state.in_thread(state.reader.agreement, run_id)
    return json_response(run_detail(row, job, result, summary.sessions, ratings))


def _many(request: Request, name: str) -> tuple[str, ...]:
    values: list[str] = []
    for raw in request.query_params.getlist(name):
        values.extend(v for v in raw.split(",") if v)
    return tuple(values)


async def list_cells(request: Request) -> Response:
    state = state_of(request)
    run_id = request.path_params["run_id"]
    params = request.query_params
    sort = params.get("sort") or "position"
    if sort not in CELL_SORTS:
        raise ApiError.bk(
            400, "INVALID_QUERY", f"sort must be one of {', '.join(CELL_SORTS)}", field="sort"
        )
    order: Literal["asc", "desc"] = "desc" if params.get("order") == "desc" else "asc"
    if params.get("order") not in (None, "", "asc", "desc"):
        raise ApiError.bk(400, "INVALID_QUERY", "order must be asc or desc", field="order")
    limit = query_int(params, "limit", 100, low=1, high=1000)
    offset = query_int(params, "offset", 0, low=0, high=10**9)
    where = CellFilter(
        conditions=_many(request, "condition"),
        statuses=_many(request, "status"),
        task=params.get("task") or None,
        tag=params.get("tag") or None,
    )
    try:
        page = await state.in_thread(
            lambda: state.reader.cells(
                run_id,
                where,
                sort=sort,
                order=order,
                limit=limit,
                offset=offset,
            )
        )
    except RunNotFoundError:
        raise _not_found(run_id) from None
    return json_response(None, raw=cells_page_json(page.data, page.total, limit, offset))


async def get_cell(request: Request) -> Response:
    state = state_of(request)
    run_id = request.path_params["run_id"]
    params = request.query_params
    task, condition = params.get("task"), params.get("condition")
    for name, value in (("task", task), ("condition", condition)):
        if not value:
            raise ApiError.bk(400, "INVALID_QUERY", f"{name} is required", field=name)
    epoch = query_int(params, "epoch", 0, low=0, high=10**6)
    attempt = query_int(params, "attempt", 0, low=0, high=10**6) if params.get("attempt") else None
    try:
        found = await state.in_thread(
            state.reader.cell_story, run_id, task, condition, epoch, attempt
        )
    except RunNotFoundError:
        raise _not_found(run_id) from None
    if found is None:
        which = "" if attempt is None else f", attempt {attempt}"
        raise ApiError.bk(
            404,
            "CELL_NOT_FOUND",
            f"run {run_id!r} has no cell ({task!r}, {condition!r}, epoch {epoch}{which})",
        )
    data, number, attempts, transcript = found
    return json_response(None, raw=cell_json(data, number, attempts, transcript))


async def delete_run(request: Request) -> Response:
    state = state_of(request)
    run_id = request.path_params["run_id"]
    if state.jobs.live(run_id) is not None:
        raise ApiError.bk(409, "RUN_ACTIVE", f"run {run_id!r} is running: cancel it first")
    await row_of(state, run_id)
    try:
        count = await state.in_thread(state.store.delete, run_id)
    except BenchkitError as exc:
        raise ApiError.bk(409, "RUN_ACTIVE", state.scrub(exc.message)) from None
    state.jobs.forget_spec(run_id)
    state.jobs.jobs.pop(run_id, None)
    state.loaded.pop(run_id, None)
    return json_response({"run_id": run_id, "deleted_cells": count})


async def cancel_run(request: Request) -> Response:
    state = state_of(request)
    run_id = request.path_params["run_id"]
    job = state.jobs.cancel(run_id)
    if job is None:
        await row_of(state, run_id)  # 404 for an unknown run
        raise ApiError.bk(409, "RUN_NOT_ACTIVE", f"run {run_id!r} is not running in this server")
    return json_response({"run_id": run_id, "job": job.to_json()}, 202)


def spec_for_resume(state: ServeState, row: RunSummary) -> dict[str, Any]:
    """The saved spec of a run this server started, else one from its stored source."""
    spec = state.jobs.load_spec(row.run_id)
    if spec is not None:
        return spec
    if row.source_path is None:
        raise ApiError.bk(
            409,
            "RUN_NOT_RESUMABLE",
            f"run {row.run_id!r} has no source inside the root to run from",
        )
    return {"route": "benchmark", "path": row.source_path, "format": row.source_format or None}


async def resume_run(request: Request) -> Response:
    state = state_of(request)
    run_id = request.path_params["run_id"]
    await read_json(
        request, {"type": "object", "maxProperties": 0}, max_bytes=state.max_body, empty_ok=True
    )
    if state.jobs.live(run_id) is not None:
        raise ApiError.bk(409, "RUN_ACTIVE", f"run {run_id!r} is already running")
    row = await row_of(state, run_id)
    if row.status == "running":
        raise ApiError.bk(409, "RUN_ACTIVE", f"run {run_id!r} is running in another process")
    spec = spec_for_resume(state, row)
    if state.jobs.builder(spec) is None:
        raise ApiError.bk(409, "RUN_NOT_RESUMABLE", f"run {run_id!r} cannot be resumed here")
    await check_spec(state, spec)
    try:
        job = state.jobs.submit(run_id, "resume", spec)
    except QueueFull as exc:
        raise ApiError.bk(503, "QUEUE_FULL", f"{exc}; try again later") from None
    return json_response({"run_id": run_id, "job": job.to_json()}, 202)


async def run_events(request: Request) -> Response:
    """Server-sent events: ``status`` now, ``progress`` per finished cell, ``end`` last."""
    state = state_of(request)
    run_id = request.path_params["run_id"]
    job = state.jobs.live(run_id)
    if job is None:
        row = await row_of(state, run_id)
        final = run_json(row, None)

        async def once() -> AsyncIterator[bytes]:
            yield sse("end", final)

        return StreamingResponse(once(), media_type="text/event-stream", headers=_SSE_HEADERS)
    receive = job.subscribe()
    first = job.to_json()

    async def stream() -> AsyncIterator[bytes]:
        yield sse("status", first)
        async with receive:
            while True:
                with anyio.move_on_after(15) as idle:
                    try:
                        event = await receive.receive()
                    except anyio.EndOfStream:
                        return
                if idle.cancelled_caught:
                    yield b": keep-alive\n\n"
                    continue
                yield sse(event["event"], event["data"])
                if event["event"] == "end":
                    return

    return StreamingResponse(stream(), media_type="text/event-stream", headers=_SSE_HEADERS)


_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


async def compare(request: Request) -> Response:
    state = state_of(request)
    params = request.query_params
    a, b = params.get("a"), params.get("b")
    for name, value in (("a", a), ("b", b)):
        if not value:
            raise ApiError.bk(400, "INVALID_QUERY", f"{name} (a run id) is required", field=name)
    pairs: list[tuple[str, str]] = []
    for raw in params.getlist("pair"):
        left, sep, right = raw.partition(":")
        if not sep or not left or not right:
            raise ApiError.bk(
                400, "INVALID_QUERY", "pair must be CONDITION_A:CONDITION_B", field="pair"
            )
        pairs.append((left, right))
    for run_id in (a, b):
        await row_of(state, str(run_id))

    def compare() -> RunComparison:  # from the columns: no run is loaded whole
        return state.reader.compare(str(a), str(b), pairs=pairs or None)

    try:
        result = await state.in_thread(compare)
    except BenchkitError as exc:
        raise ApiError.bk(400, "NOT_COMPARABLE", state.scrub(exc.message), field="pair") from None
    return json_response(converter.unstructure(result))


async def list_benchmarks(request: Request) -> Response:
    """Every benchmark file under the root that a format loads, and those that fail."""
    state = state_of(request)

    def find() -> dict[str, Any]:
        from benchkit import formats

        found, problems = formats.discover(state.root)
        return benchmarks_json(found, problems, state.root, state.scrub)

    return json_response(await state.in_thread(find))


async def list_jobs(request: Request) -> Response:
    state = state_of(request)
    return json_response({"jobs": [job.to_json() for job in state.jobs.jobs.values()]})


async def list_endpoints(request: Request) -> Response:
    """The endpoints a request may name: what a client offers its user to pick from."""
    state = state_of(request)
    return json_response(endpoints_json(state.endpoints))


def routes() -> list[Route]:
    return [
        Route("/api/runs", cached(list_runs), methods=["GET"]),
        Route("/api/runs", start_run, methods=["POST"]),
        Route("/api/runs/{run_id}", cached(get_run), methods=["GET"]),
        Route("/api/runs/{run_id}", delete_run, methods=["DELETE"]),
        Route("/api/runs/{run_id}/cells", cached(list_cells), methods=["GET"]),
        Route("/api/runs/{run_id}/cell", cached(get_cell), methods=["GET"]),
        Route("/api/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
        Route("/api/runs/{run_id}/resume", resume_run, methods=["POST"]),
        Route("/api/runs/{run_id}/events", run_events, methods=["GET"]),
        Route("/api/compare", cached(compare), methods=["GET"]),
        Route("/api/benchmarks", list_benchmarks, methods=["GET"]),
        Route("/api/jobs", list_jobs, methods=["GET"]),
        Route("/api/endpoints", list_endpoints, methods=["GET"]),
    ]
