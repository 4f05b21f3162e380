"""benchkit's own API over the store, under ``/api``: runs of every format, their cells,
comparisons, and jobs (start, cancel, resume) with live progress as server-sent events.

Shapes are documented in docs/server.md and served as OpenAPI at ``/openapi.json``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Literal

import anyio
import attrs
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from benchkit.errors import BenchkitError, ConfigError, RunNotFoundError
from benchkit.llm._endpoints import EndpointRegistry
from benchkit.model import Condition, ProviderSpec, Suite
from benchkit.serde import converter
from benchkit.serve._http import ApiError, PathError, json_response, read_json, resolve_inside
from benchkit.serve._jobs import Job, QueueFull
from benchkit.serve._state import ServeState, query_int, state_of
from benchkit.store import RunSummary
from benchkit.store._compare import RunComparison
from benchkit.store._queries import CELL_SORTS, CellFilter, RunFilter

__all__ = ["START_SCHEMA", "build_benchmark_suite", "routes", "run_json", "start_job"]

_RUN_OPTIONS = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "concurrency": {"type": "integer", "minimum": 1, "maximum": 1000},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "retries": {"type": "integer", "minimum": 0, "maximum": 100},
        "epochs": {"type": "integer", "minimum": 1, "maximum": 1000},
        "seed": {"type": "integer"},
        "deterministic": {"type": "boolean"},
        "errors_as": {"enum": ["zero", "exclude"]},
    },
}

#: Provider types a request may name in ``conditions`` (``local``: the embedded model, a
#: name like an endpoint's — the server starts it; no URL comes from the request).
REQUEST_PROVIDERS = ("chat", "http", "mock", "local")

#: The options a request may give each provider type. Never a URL, a header or the name of
#: an environment variable: where the server's credentials go is the server's
#: configuration (its endpoints), and a request names an endpoint (``endpoint: NAME``).
REQUEST_OPTIONS: dict[str, frozenset[str]] = {
    "chat": frozenset(
        {
            "endpoint",
            "model",
            "temperature",
            "max_tokens",
            "system",
            "tools",
            "seed",
            "timeout",
            "max_retries",
            "requests_per_minute",
            "tokens_per_minute",
            "max_concurrency",
            "cache",
            "price",
        }
    ),
    "http": frozenset(
        {"endpoint", "method", "body", "output_field", "timeout", "skill_version"}
        | {"max_response_bytes"}
    ),
    "mock": frozenset({"outputs", "delay"}),
}
#: Options that would choose where a credential goes.
_CREDENTIAL_OPTIONS = ("base_url", "url", "api_key_env", "api_key", "headers")
_ENDPOINT_FIX = (
    "configure the endpoint on the server (serve --endpoint NAME=URL[,key-env=VAR], "
    'create_app(endpoints=...)) and name it in the request: "endpoint": "NAME".'
)

#: The body of ``POST /api/runs``.
START_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["benchmark"],
    "properties": {
        "benchmark": {"type": "string", "minLength": 1},
        "format": {"type": "string", "minLength": 1},
        "options": _RUN_OPTIONS,
        "conditions": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "provider"],
                "properties": {
                    "id": {"type": "string", "minLength": 1},
                    "label": {"type": "string"},
                    "provider": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["type"],
                        "properties": {
                            # Only providers that run no code of the request's choosing
                            # on the server: python and subprocess stay in benchmark files.
                            "type": {"enum": list(REQUEST_PROVIDERS)},
                            "options": {"type": "object"},
                        },
                    },
                },
            },
        },
        "format_options": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "providers": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "pass_correctness": {"type": "number", "minimum": 0, "maximum": 1},
                "pass_faithfulness": {"type": "number", "minimum": 0, "maximum": 1},
            },
        },
        "chat": {
            "type": "object",
            "additionalProperties": False,
            "required": ["model", "metrics"],
            "properties": {
                "model": {"type": "string", "minLength": 1},
                "metrics": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "endpoint": {"type": "string", "minLength": 1},
                "base_url": {"type": "string"},
                "judge_model": {"type": "string"},
                "judge_endpoint": {"type": "string", "minLength": 1},
                "judge_base_url": {"type": "string"},
            },
        },
    },
}

_RUN_STATUSES = ("running", "finished", "interrupted", "crashed")


def _path_error(exc: PathError, field: str) -> ApiError:
    return ApiError.bk(400, "PATH_INVALID", f"{field}: {exc}", field=field, reason=exc.reason)


def check_provider_options(conditions: Any, endpoints: EndpointRegistry) -> None:
    """Refuse (400, naming the field and the fix) provider options of a request that would
    choose where a credential goes, or that a request may not set at all."""
    for n, condition in enumerate(conditions or ()):
        provider = condition["provider"]
        kind, options = provider["type"], provider.get("options") or {}
        for key in options:
            field = f"conditions.{n}.provider.options.{key}"
            if key in _CREDENTIAL_OPTIONS:
                raise ApiError.bk(
                    400,
                    "ENDPOINT_REQUIRED",
                    f"{field}: a request may not choose a URL, a header or an environment "
                    f"variable; {_ENDPOINT_FIX}",
                    field=field,
                    fix=_ENDPOINT_FIX,
                )
            if key not in REQUEST_OPTIONS[kind]:
                allowed = ", ".join(sorted(REQUEST_OPTIONS[kind]))
                raise ApiError.bk(
                    400,
                    "INVALID_BODY",
                    f"{field}: not an option a request may give a {kind} provider "
                    f"(it may give: {allowed})",
                    field=field,
                )
        field = f"conditions.{n}.provider.options.endpoint"
        if "endpoint" in options:
            try:
                endpoints.get(options["endpoint"], field=field)
            except ConfigError as exc:
                raise ApiError.bk(
                    400, "UNKNOWN_ENDPOINT", exc.message, field=field, fix=exc.fix
                ) from None
        elif kind == "http":
            raise ApiError.bk(
                400,
                "ENDPOINT_REQUIRED",
                f"{field} is required: an http provider calls one of the server's endpoints",
                field=field,
                fix=_ENDPOINT_FIX,
            )


def endpoint_by_url(
    body: Mapping[str, Any],
    url_key: str,
    name_key: str,
    endpoints: EndpointRegistry,
    prefix: str = "",
) -> str | None:
    """The endpoint a CodeForge-style body names: ``name_key`` (a name), or ``url_key`` (a
    URL that must be one of the server's endpoints' — it is then read as that endpoint).
    Anything else is :class:`ApiError` 400 naming the field (``prefix`` + key) and the fix."""
    name, url = body.get(name_key), body.get(url_key)
    if name is not None and url is not None:
        raise ApiError.bk(
            400,
            "INVALID_BODY",
            f"give {prefix}{name_key} or {prefix}{url_key}, not both",
            field=prefix + url_key,
        )
    if name is not None:
        try:
            return endpoints.get(name, field=prefix + name_key).name
        except ConfigError as exc:
            raise ApiError.bk(
                400,
                "UNKNOWN_ENDPOINT",
                f"{exc.message}; {exc.fix}",
                field=prefix + name_key,
                fix=exc.fix,
            ) from None
    if url is None or url == "":
        return None
    found = endpoints.by_url(url) if isinstance(url, str) else None
    if found is None:
        raise ApiError.bk(
            400,
            "ENDPOINT_REQUIRED",
            f"{prefix}{url_key}: the server calls only the endpoints it is configured with, "
            f"and this URL is none of them; configure it on the server (serve --endpoint "
            f'NAME=URL[,key-env=VAR]) and send "{name_key}": "NAME"',
            field=prefix + url_key,
            fix=_ENDPOINT_FIX,
        )
    return found.name


def _resolve_conditions(conditions: Any, endpoints: EndpointRegistry) -> tuple[Condition, ...]:
    out = []
    for n, c in enumerate(conditions):
        kind = c["provider"]["type"]
        options = dict(c["provider"].get("options") or {})
        name = options.pop("endpoint", None)
        if name is not None:
            endpoint = endpoints.get(name, field=f"conditions.{n}.provider.options.endpoint")
            options.update(endpoint.http_options() if kind == "http" else endpoint.chat_options())
        out.append(Condition(c["id"], ProviderSpec(kind, options), label=c.get("label")))
    return tuple(out)


def chat_endpoints(
    spec: Mapping[str, Any], endpoints: EndpointRegistry, prefix: str = ""
) -> dict[str, Any]:
    """``codeforge_suite``'s endpoint arguments for a saved spec's ``endpoint`` and
    ``judge_endpoint`` (names); a spec saved with a URL maps it to an endpoint or fails."""
    out: dict[str, Any] = {}
    for role, arg in (("", ""), ("judge_", "judge_")):
        name = spec.get(f"{role}endpoint")
        if name is None and spec.get(f"{role}base_url"):
            found = endpoints.by_url(str(spec[f"{role}base_url"]))
            if found is None:
                raise ConfigError(
                    f"{prefix}{role}base_url: the server is not configured to call this URL",
                    fix=_ENDPOINT_FIX,
                )
            name = found.name
        if name is not None:
            endpoint = endpoints.get(str(name), field=f"{prefix}{role}endpoint")
            options = endpoint.chat_options()
            out[f"{arg}base_url"] = options["base_url"]
            out[f"{arg}api_key_env"] = options["api_key_env"]
    return out


def build_benchmark_suite(
    spec: Mapping[str, Any], root: Path, endpoints: EndpointRegistry | None = None
) -> Suite:
    """The suite a ``POST /api/runs`` spec describes (also used to resume its run);
    ``endpoints`` are the server's, which the spec names."""
    from benchkit import formats

    endpoints = endpoints if endpoints is not None else EndpointRegistry()
    path = resolve_inside(root, spec["path"])
    chat = spec.get("chat")
    if chat:
        from benchkit.formats.codeforge import codeforge_suite

        suite = codeforge_suite(
            path,
            model=chat["model"],
            metrics=list(chat["metrics"]),
            judge_model=chat.get("judge_model"),
            **chat_endpoints(chat, endpoints, "chat."),
        )
    else:
        try:
            suite = formats.load(path, format=spec.get("format"), **spec.get("format_options", {}))
        except TypeError as exc:  # a format that takes no such option
            raise ConfigError(
                str(exc), fix="drop format_options this format does not take."
            ) from None
    conditions = spec.get("conditions")
    if conditions:
        check_provider_options(conditions, endpoints)  # a spec saved by an older server
        suite = attrs.evolve(suite, conditions=_resolve_conditions(conditions, endpoints))
    options = spec.get("options") or {}
    if options:
        suite = suite.with_options(**options)
    if not suite.conditions:
        raise ConfigError(
            f"{spec['path']} declares no conditions to run",
            fix="give conditions in the request (`conditions: [{id, provider: {type}}]`).",
        )
    return suite


def _spec_from_request(body: Mapping[str, Any], state: ServeState) -> dict[str, Any]:
    try:
        path = resolve_inside(state.root, body["benchmark"])
    except PathError as exc:
        raise _path_error(exc, "benchmark") from None
    if not path.exists():
        raise ApiError.bk(
            404, "BENCHMARK_NOT_FOUND", "benchmark: no such file under the root", field="benchmark"
        )
    if not (path.is_file() or path.is_dir()):
        raise ApiError.bk(
            400,
            "PATH_INVALID",
            "benchmark: not a regular file (a FIFO, socket or device)",
            field="benchmark",
            reason="not_a_file",
        )
    spec: dict[str, Any] = {"route": "benchmark", "path": path.relative_to(state.root).as_posix()}
    for key in ("format", "format_options", "options", "conditions", "chat"):
        if key in body:
            spec[key] = body[key]
    check_provider_options(body.get("conditions"), state.endpoints)
    chat = body.get("chat")
    if chat:
        chat = {k: v for k, v in chat.items() if k not in ("base_url", "judge_base_url")}
        for name_key, url_key in (("endpoint", "base_url"), ("judge_endpoint", "judge_base_url")):
            name = endpoint_by_url(body["chat"], url_key, name_key, state.endpoints, "chat.")
            if name is not None:
                chat[name_key] = name
        spec["chat"] = chat
    return spec


async def start_job(
    state: ServeState, spec: Mapping[str, Any], *, run_id: str | None = None
) -> tuple[Job, Suite]:
    """Check ``spec`` by building its suite (400 when it cannot), then queue a new run."""
    from benchkit.runner import new_run_id

    builder = state.jobs.builders[str(spec["route"])]
    try:
        suite = await state.in_thread(builder, spec, state.root)
    except PathError as exc:
        raise _path_error(exc, "benchmark") from None
    except (BenchkitError, ValueError) as exc:
        raise _bad_input(state, exc) from None
    rid = run_id or new_run_id(suite.with_options(deterministic=False))
    try:
        return state.jobs.submit(rid, "start", spec), suite
    except QueueFull as exc:
        raise ApiError.bk(503, "QUEUE_FULL", f"{exc}; try again later") from None


def _bad_input(state: ServeState, exc: BaseException) -> ApiError:
    if isinstance(exc, BenchkitError):
        details: dict[str, Any] = {}
        if exc.json_path:
            details["field"] = exc.json_path
        if exc.line is not None:
            details["line"] = exc.line
        if exc.fix:
            details["fix"] = state.scrub(exc.fix)
        return ApiError(
            400,
            {"code": "INVALID_BENCHMARK", "error": state.scrub(exc.message), "details": details},
        )
    return ApiError.bk(400, "INVALID_BENCHMARK", state.scrub(str(exc)))


def _api_status(row: RunSummary, job: Job | None) -> dict[str, Any]:
    # A job that ended after the row was read: the row (read earlier) is consistent with
    # the cell counts beside it, the job's new status would not be.
    if job is not None and job.live:
        return {"status": job.status, "crashed": False}
    if row.status == "crashed":
        return {"status": "interrupted", "crashed": True}
    return {"status": row.status, "crashed": False}


def run_json(row: RunSummary, job: Job | None) -> dict[str, Any]:
    """A run as the list and detail routes show it."""
    return {
        "run_id": row.run_id,
        "benchmark_id": row.benchmark_id,
        "benchmark_name": row.benchmark_name,
        "format": row.source_format,
        "source_path": row.source_path,
        **_api_status(row, job),
        "started_at": row.started_at,
        "updated_at": row.updated_at,
        "finished_at": row.finished_at,
        "conditions": list(row.conditions),
        "cells": row.cells,
        "errors": row.errors,
        "total_cells": row.total_cells,
        "job": job.to_json() if job is not None else None,
    }


def _relative_source(row: RunSummary, state: ServeState) -> RunSummary:
    """Hide a source path outside the root (a run stored by another program)."""
    if row.source_path is None:
        return row
    try:
        inside = Path(os.path.realpath(row.source_path))
        rel = inside.relative_to(state.root).as_posix()
    except ValueError:
        rel = None
    return attrs.evolve(row, source_path=rel)


async def _row(state: ServeState, run_id: str) -> RunSummary:
    try:
        row = await state.in_thread(state.reader.run, run_id)
    except RunNotFoundError:
        raise _not_found(run_id) from None
    return _relative_source(row, state)


def _not_found(run_id: str) -> ApiError:
    return ApiError.bk(404, "RUN_NOT_FOUND", f"no run {run_id!r}", run_id=run_id)


def _queued_json(job: Job) -> dict[str, Any]:
    return {
        "run_id": job.run_id,
        "benchmark_id": None,
        "benchmark_name": None,
        "format": None,
        "source_path": job.spec.get("path"),
        "status": job.status,
        "crashed": False,
        "started_at": job.created_at,
        "updated_at": job.created_at,
        "finished_at": None,
        "conditions": [],
        "cells": 0,
        "errors": 0,
        "total_cells": 0,
        "job": job.to_json(),
    }


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
    runs = [run_json(_relative_source(r, state), state.jobs.live(r.run_id)) for r in rows]
    counts = await state.in_thread(state.reader.pass_counts, [r.run_id for r in rows])
    for run in runs:
        run["pass_rates"] = {
            condition: {"passed": passed, "cells": cells, "pass_rate": passed / cells}
            for condition, (passed, cells) in counts.get(run["run_id"], {}).items()
        }
    return json_response({"runs": runs, "total": total, "limit": limit, "offset": offset})


async def start_run(request: Request) -> Response:
    state = state_of(request)
    body = await read_json(request, START_SCHEMA, max_bytes=state.max_body)
    job, _ = await start_job(state, _spec_from_request(body, state))
    return json_response({"run_id": job.run_id, "job": job.to_json()}, 202)


async def get_run(request: Request) -> Response:
    state = state_of(request)
    run_id = request.path_params["run_id"]
    job = state.jobs.live(run_id)
    try:
        row = await _row(state, run_id)
    except ApiError:
        job = state.jobs.jobs.get(run_id)  # queued, or failed before its first cell
        if job is None:
            raise
        return json_response(
            {
                "run": _queued_json(job),
                "info": None,
                "aggregates": [],
                "groups": [],
                "comparisons": [],
                "error_categories": [],
                "sessions": [],
                "ratings": {"count": 0, "agreement": []},
            }
        )
    result = await state.in_thread(state.outcome, run_id)

    summary = await state.in_thread(state.reader.summary, run_id)
    # From the aggregates (every category a cell of the condition was put in), not from
    # the cells' JSON: the page reads nothing whose size grows with the run.
    categories = sorted(
        (
            (agg.condition_id, category, count)
            for agg in result.aggregates
            for category, count in agg.errors_by_category.items()
        ),
        key=lambda row: (row[0], -row[2], row[1]),
    )
    info = converter.unstructure(result.info)
    info["source_path"] = row.source_path
    ratings = await state.in_thread(state.reader.agreement, run_id)
    return json_response(
        {
            "run": run_json(row, job),
            "info": info,
            "aggregates": converter.unstructure(result.aggregates),
            "groups": converter.unstructure(result.groups),
            "comparisons": converter.unstructure(result.comparisons),
            "error_categories": [
                {"condition_id": c, "category": cat, "count": n} for c, cat, n in categories
            ],
            "sessions": converter.unstructure(summary.sessions),
            "ratings": ratings,
        }
    )


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
    head = json.dumps({"total": page.total, "limit": limit, "offset": offset})
    raw = '{"cells":[' + ",".join(page.data) + "]," + head[1:]
    return json_response(None, raw=raw)


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
    # The cell's stored JSON, as stored, with its attempt and transcript spliced in
    # (``stored_attempts``: the cell's own ``attempts`` counts its retries within one run).
    extra = json.dumps(
        {"attempt": number, "stored_attempts": attempts, "transcript": transcript},
        ensure_ascii=False,
    )
    return json_response(None, raw=data.rstrip()[:-1] + "," + extra[1:])


async def delete_run(request: Request) -> Response:
    state = state_of(request)
    run_id = request.path_params["run_id"]
    if state.jobs.live(run_id) is not None:
        raise ApiError.bk(409, "RUN_ACTIVE", f"run {run_id!r} is running: cancel it first")
    await _row(state, run_id)
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
        await _row(state, run_id)  # 404 for an unknown run
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
    return {"route": "benchmark", "path": row.source_path, "format": row.source_format}


async def resume_run(request: Request) -> Response:
    state = state_of(request)
    run_id = request.path_params["run_id"]
    await read_json(
        request, {"type": "object", "maxProperties": 0}, max_bytes=state.max_body, empty_ok=True
    )
    if state.jobs.live(run_id) is not None:
        raise ApiError.bk(409, "RUN_ACTIVE", f"run {run_id!r} is already running")
    row = await _row(state, run_id)
    if row.status == "running":
        raise ApiError.bk(409, "RUN_ACTIVE", f"run {run_id!r} is running in another process")
    spec = spec_for_resume(state, row)
    builder = state.jobs.builders.get(str(spec.get("route")))
    if builder is None:
        raise ApiError.bk(409, "RUN_NOT_RESUMABLE", f"run {run_id!r} cannot be resumed here")
    try:
        await state.in_thread(builder, spec, state.root)
    except PathError as exc:
        raise _path_error(exc, "benchmark") from None
    except BenchkitError as exc:
        raise _bad_input(state, exc) from None
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
        row = await _row(state, run_id)
        final = run_json(row, None)

        async def once() -> AsyncIterator[bytes]:
            yield _sse("end", final)

        return StreamingResponse(once(), media_type="text/event-stream", headers=_SSE_HEADERS)
    receive = job.subscribe()
    first = job.to_json()

    async def stream() -> AsyncIterator[bytes]:
        yield _sse("status", first)
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
                yield _sse(event["event"], event["data"])
                if event["event"] == "end":
                    return

    return StreamingResponse(stream(), media_type="text/event-stream", headers=_SSE_HEADERS)


_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


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
        await _row(state, str(run_id))

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
        return {
            "benchmarks": [
                {
                    "path": path.relative_to(state.root).as_posix(),
                    "format": suite.benchmark.source.format if suite.benchmark.source else None,
                    "id": suite.benchmark.id,
                    "name": suite.benchmark.name,
                    "tasks": suite.benchmark.task_count,
                    "conditions": [c.id for c in suite.conditions],
                    # the file's own run options, where the start form begins
                    "options": {
                        "epochs": suite.options.epochs,
                        "concurrency": suite.options.concurrency,
                    },
                }
                for path, suite in found
                if _inside(path, state.root)
            ],
            "problems": [
                {"path": path.relative_to(state.root).as_posix(), "error": state.scrub(exc.message)}
                for path, exc in problems
                if _inside(path, state.root)
            ],
        }

    return json_response(await state.in_thread(find))


def _inside(path: Path, root: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == root or root in real.parents


async def list_jobs(request: Request) -> Response:
    state = state_of(request)
    return json_response({"jobs": [job.to_json() for job in state.jobs.jobs.values()]})


async def list_endpoints(request: Request) -> Response:
    """The endpoints a request may name: what a client offers its user to pick from."""
    state = state_of(request)
    return json_response(
        {
            "endpoints": [
                {"name": e.name, "url": e.url, "has_key": e.key_env is not None}
                for e in sorted(state.endpoints, key=lambda e: e.name)
            ]
        }
    )


def routes() -> list[Route]:
    return [
        Route("/api/runs", list_runs, methods=["GET"]),
        Route("/api/runs", start_run, methods=["POST"]),
        Route("/api/runs/{run_id}", get_run, methods=["GET"]),
        Route("/api/runs/{run_id}", delete_run, methods=["DELETE"]),
        Route("/api/runs/{run_id}/cells", list_cells, methods=["GET"]),
        Route("/api/runs/{run_id}/cell", get_cell, methods=["GET"]),
        Route("/api/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
        Route("/api/runs/{run_id}/resume", resume_run, methods=["POST"]),
        Route("/api/runs/{run_id}/events", run_events, methods=["GET"]),
        Route("/api/compare", compare, methods=["GET"]),
        Route("/api/benchmarks", list_benchmarks, methods=["GET"]),
        Route("/api/jobs", list_jobs, methods=["GET"]),
        Route("/api/endpoints", list_endpoints, methods=["GET"]),
    ]
