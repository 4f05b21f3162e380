"""CodeForge's benchmark API, under ``/api/v1/benchmarks``, with its Run and Result JSON.

Unlike the original (Phase 20), ``POST /runs`` really runs the dataset: it answers 201
with ``status: "running"`` and the run goes through the job queue into the store; the run
then reads ``completed`` (with ``summary_scores``: each metric's mean) or ``failed``.
Validation errors are 400 ``{"error": ...}`` with the original's messages, in its order.
Datasets are addressed as CodeForge does (file stem, or the YAML ``name``) and live in the
datasets directory under the root (``benchmarks/codeforge`` unless configured: the server
setting ``codeforge_datasets``).

Also CodeForge's part of benchkit's ``POST /api/runs``: a benchmark request's ``chat``
block (a chat model and judge metrics for a dataset), the job kind ``codeforge-chat``.
Imported only when the server is built (the tool's ``routes`` and ``jobs``).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from benchkit.errors import BenchkitError, ConfigError, RunNotFoundError
from benchkit.model import Suite
from benchkit.results import RunResult
from benchkit.serve_toolkit import (
    ANY,
    ARRAY,
    ERROR,
    RUN_ID,
    ApiError,
    Job,
    JobBuilder,
    JobContext,
    PathError,
    QueueFull,
    ServeState,
    ToolRoutes,
    chat_endpoints,
    endpoint_by_url,
    json_response,
    now,
    operation,
    parse_json,
    read_body,
    resolve_inside,
    start_job,
    state_of,
)

__all__ = [
    "API_JOB",
    "CHAT_JOB",
    "CHAT_SCHEMA",
    "DEFAULT_DATASETS",
    "ROUTES",
    "build_chat_suite",
    "build_codeforge_suite",
    "routes",
]

log = logging.getLogger("benchkit.serve")

PREFIX = "/api/v1/benchmarks"
#: The body of every 404 for a run (CodeForge's words).
_NOT_FOUND = "benchmark run not found"
#: Where datasets are, relative to the root, unless the app is told otherwise.
DEFAULT_DATASETS = Path("benchmarks") / "codeforge"
#: The server setting naming the datasets directory (``create_app(codeforge_datasets=)``).
DATASETS_SETTING = "codeforge_datasets"
_STATUS = {
    "queued": "running",
    "running": "running",
    "finished": "completed",
    "interrupted": "failed",
    "cancelled": "failed",
    "failed": "failed",
    "crashed": "failed",
}


def _datasets_dir(state: ServeState) -> Path:
    """The datasets directory: the app's (``create_app(codeforge_datasets=...)``), else
    CodeForge's configuration under the root (``$CODEFORGE_BENCHMARK_DATASETS_DIR``, else
    ``benchmark.datasets_dir`` in ``<root>/codeforge.yaml``), else ``benchmarks/codeforge``;
    always inside the root."""
    from benchkit.formats.codeforge import configured_datasets_dir

    given: Path | None = state.settings.get(DATASETS_SETTING)
    if given is not None:
        return given
    configured = configured_datasets_dir(state.root)
    if configured is None:
        return state.root / DEFAULT_DATASETS
    return resolve_inside(state.root, str(configured))


def _relative(state: ServeState, text: str, directory: Path) -> str:
    """``text`` without the server's absolute paths: the datasets directory is named by its
    path under the root, other paths are scrubbed."""
    try:
        shown = directory.relative_to(state.root).as_posix() or "."
    except ValueError:
        shown = "the datasets directory"
    return state.scrub(text.replace(str(directory), shown))


def build_codeforge_suite(spec: Mapping[str, Any], context: JobContext) -> Suite:
    """The suite of a CodeForge run: ``spec["path"]`` (relative to the root) against
    ``spec["model"]``, scored by ``spec["metrics"]``; the model and the judges at the
    server's endpoints the spec names (else where the server's environment says). A
    run accepted with a problem (``spec["error"]``: an unknown dataset or metric, as
    CodeForge accepts them) fails here, with that error."""
    from benchkit.formats.codeforge import codeforge_suite

    if spec.get("error"):
        raise ConfigError(str(spec["error"]))
    return codeforge_suite(
        resolve_inside(context.root, spec["path"]),
        model=spec["model"],
        metrics=list(spec["metrics"]),
        judge_model=spec.get("judge_model"),
        **chat_endpoints(spec, context.endpoints),
    )


#: The runs of CodeForge's own ``POST /api/v1/benchmarks/runs`` (started by that route
#: only; the server resumes them).
API_JOB = JobBuilder(build=build_codeforge_suite, summary="CodeForge: a dataset run")

#: The ``chat`` block of a ``POST /api/runs`` benchmark request.
CHAT_SCHEMA: dict[str, Any] = {
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
}


def chat_spec(chat: Mapping[str, Any], context: JobContext) -> dict[str, Any]:
    """The ``chat`` block as saved: endpoints by name (a URL given must be one of the
    server's endpoints', and is saved as that endpoint's name)."""
    saved = {k: v for k, v in chat.items() if k not in ("base_url", "judge_base_url")}
    for name_key, url_key in (("endpoint", "base_url"), ("judge_endpoint", "judge_base_url")):
        name = endpoint_by_url(chat, url_key, name_key, context.endpoints, "chat.")
        if name is not None:
            saved[name_key] = name
    return saved


def build_chat_suite(spec: Mapping[str, Any], context: JobContext) -> Suite:
    """A benchmark spec's CodeForge dataset (``spec["path"]``) against its ``chat`` block's
    model and metrics (the server then applies the spec's conditions and options)."""
    from benchkit.formats.codeforge import codeforge_suite

    chat = spec["chat"]
    return codeforge_suite(
        resolve_inside(context.root, spec["path"]),
        model=chat["model"],
        metrics=list(chat["metrics"]),
        judge_model=chat.get("judge_model"),
        **chat_endpoints(chat, context.endpoints, "chat."),
    )


CHAT_JOB = JobBuilder(
    build=build_chat_suite,
    schema=CHAT_SCHEMA,
    field="chat",
    spec=chat_spec,
    summary="CodeForge: a dataset against a chat model, scored by judge metrics",
)


#: benchkit's optional fields of ``POST /runs`` (the original takes none of them).
_OPTIONAL = ("endpoint", "base_url", "judge_model", "judge_endpoint", "judge_base_url")


def _error(status: int, message: str) -> ApiError:
    return ApiError(status, {"error": message})


def _validate(body: Any) -> tuple[str, str, list[str]]:
    """CreateRunRequest.Validate: the original's checks and messages, in its order. Other
    fields are ignored, as Go's JSON decoder ignores them (CodeForge's later clients send
    ``exec_mode``, ``benchmark_type``, ``suite_id``); they are logged at debug level."""
    if not isinstance(body, dict):
        raise _error(400, "request body must be a JSON object")
    dataset, model, metrics = body.get("dataset"), body.get("model"), body.get("metrics")
    if not isinstance(dataset, str) or not dataset.strip():
        raise _error(400, "dataset is required")
    if not isinstance(model, str) or not model.strip():
        raise _error(400, "model is required")
    if not isinstance(metrics, list) or not metrics:
        raise _error(400, "at least one metric is required")
    if not all(isinstance(m, str) and m.strip() for m in metrics):
        raise _error(400, "metrics must be non-empty strings")
    for key in _OPTIONAL:
        if key in body and not isinstance(body[key], str):
            raise _error(400, f"{key} must be a string")
    ignored = sorted(set(body) - {"dataset", "model", "metrics", *_OPTIONAL})
    if ignored:
        log.debug("CodeForge run request: ignoring fields %s", ", ".join(ignored))
    return dataset.strip(), model.strip(), [m.strip() for m in metrics]


async def _body(request: Request, state: ServeState) -> Any:
    raw = await read_body(request, state.max_body)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise _error(415, "request body must be sent with Content-Type: application/json")
    try:
        return parse_json(raw)
    except (ValueError, UnicodeDecodeError):
        raise _error(400, "invalid request body") from None


def _run_json(
    state: ServeState,
    run_id: str,
    spec: Mapping[str, Any],
    job: Job | None,
    result: RunResult | None,
    status: str,
    created_at: str,
    finished_at: str | None,
) -> dict[str, Any]:
    scores: dict[str, Any] | None = None
    cost: float = 0.0
    tokens = 0
    duration = 0
    if result is not None and status == "completed":
        from benchkit.formats.codeforge import summary

        found = summary(result, metrics=list(spec.get("metrics") or ()) or None)
        scores = {m.metric: m.mean if m.mean is not None else 0.0 for m in found.metrics}
        cost = found.cost_usd or 0.0
        tokens = found.tokens_in + found.tokens_out
        duration = round(found.duration_ms)
    document: dict[str, Any] = {
        "id": run_id,
        "dataset": spec.get("dataset"),
        "model": spec.get("model"),
        "metrics": list(spec.get("metrics") or ()),
        "status": status,
        "summary_scores": scores,
        "total_cost": cost,
        "total_tokens": tokens,
        "total_duration_ms": duration,
        "created_at": created_at,
    }
    if finished_at is not None and status != "running":
        document["completed_at"] = finished_at
    if job is not None and job.error is not None:
        document["error"] = state.scrub(job.error)
    return document


def _describe(state: ServeState, run_id: str) -> dict[str, Any]:
    """One run's Run JSON (in a worker thread); RunNotFoundError when it is not ours."""
    spec = state.jobs.load_spec(run_id)
    if spec is None or spec.get("route") != "codeforge":
        raise RunNotFoundError(run_id)
    job = state.jobs.jobs.get(run_id)
    if job is not None and job.live:
        return _run_json(state, run_id, spec, job, None, "running", job.created_at, None)
    try:
        row = state.reader.run(run_id)
    except RunNotFoundError:
        if job is None:
            if not spec.get("error"):
                raise
            # Accepted with an unknown dataset or metric, failed before anything was stored
            # (and the server restarted since): the spec keeps why.
            created = str(spec.get("created_at", ""))
            document = _run_json(state, run_id, spec, None, None, "failed", created, created)
            document["error"] = str(spec["error"])
            return document
        return _run_json(
            state, run_id, spec, job, None, _STATUS[job.status], job.created_at, job.ended_at
        )
    status = _STATUS[row.status] if job is None else _STATUS[job.status]
    result = state.load(run_id) if status == "completed" else None
    return _run_json(state, run_id, spec, job, result, status, row.started_at, row.finished_at)


def _codeforge_ids(state: ServeState) -> list[str]:
    """Every run this server started through CodeForge's API (newest first)."""
    ids: list[tuple[str, str]] = []
    if state.jobs.specs_dir.is_dir():
        for file in state.jobs.specs_dir.glob("*.json"):
            spec = state.jobs.load_spec(file.stem)
            if spec is not None and spec.get("route") == "codeforge":
                ids.append((str(spec.get("created_at", "")), file.stem))
    return [run_id for _, run_id in sorted(ids, reverse=True)]


async def list_runs(request: Request) -> Response:
    state = state_of(request)

    def describe_all() -> list[dict[str, Any]]:
        out = []
        for run_id in _codeforge_ids(state):
            try:
                out.append(_describe(state, run_id))
            except RunNotFoundError:
                continue
        return out

    return json_response(await state.in_thread(describe_all))


async def create_run(request: Request) -> Response:
    state = state_of(request)
    body = await _body(request, state)
    dataset, model, metrics = _validate(body)
    spec: dict[str, Any] = {
        "route": "codeforge",
        "dataset": dataset,
        "model": model,
        "metrics": metrics,
        "created_at": now(),
    }
    if "judge_model" in body:
        spec["judge_model"] = body["judge_model"]
    for name_key, url_key in (("endpoint", "base_url"), ("judge_endpoint", "judge_base_url")):
        try:
            name = endpoint_by_url(body, url_key, name_key, state.endpoints)
        except ApiError as exc:
            raise _error(exc.status, str(exc.body.get("error", ""))) from None
        if name is not None:
            spec[name_key] = name
    # CodeForge checks neither the dataset nor the metrics when it accepts a run (201); the
    # run then fails. So does benchkit's: the error names what is unknown, never a silent 0.
    problem = await state.in_thread(_problem, state, dataset, metrics)
    if isinstance(problem, Path):
        spec["path"] = problem.relative_to(state.root).as_posix()
    else:
        spec["error"] = problem
    run_id = str(uuid.uuid4())
    try:
        if "error" in spec:
            job = state.jobs.submit(run_id, "start", spec)
        else:
            job, _ = await start_job(state, spec, run_id=run_id)
    except QueueFull as exc:
        raise _error(503, f"{exc}; try again later") from None
    except ApiError as exc:
        raise _error(exc.status, str(exc.body.get("error", ""))) from None
    return json_response(
        _run_json(state, job.run_id, spec, job, None, "running", job.created_at, None), 201
    )


def _problem(state: ServeState, dataset: str, metrics: Sequence[str]) -> Path | str:
    """The dataset file a run names, or what is wrong with the run (an unknown or broken
    dataset, an unknown metric) in words that name no server path."""
    from benchkit.formats.codeforge import METRICS, find_dataset

    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        return f"unknown metric {unknown[0]!r} (known metrics: {', '.join(METRICS)})"
    try:
        directory = _datasets_dir(state)
    except (BenchkitError, PathError) as exc:
        return _relative(state, f"the datasets directory is not usable: {exc}", state.root)
    try:
        return resolve_inside(state.root, str(find_dataset(directory, dataset)))
    except PathError:
        return f"dataset {dataset!r} is not inside the datasets directory"
    except BenchkitError as exc:
        return _relative(state, exc.message, directory)
    except OSError as exc:  # a name the file system refuses (too long, ...)
        return f"dataset cannot be read: {exc.strerror}"


async def get_run(request: Request) -> Response:
    state = state_of(request)
    try:
        return json_response(await state.in_thread(_describe, state, request.path_params["run_id"]))
    except RunNotFoundError:
        raise _error(404, _NOT_FOUND) from None


async def delete_run(request: Request) -> Response:
    state = state_of(request)
    run_id = request.path_params["run_id"]
    spec = state.jobs.load_spec(run_id)
    if spec is None or spec.get("route") != "codeforge":
        raise _error(404, _NOT_FOUND)
    if state.jobs.live(run_id) is not None:
        state.jobs.cancel(run_id)
        await state.jobs.jobs[run_id].finished.wait()

    def delete() -> None:
        with contextlib.suppress(RunNotFoundError):
            state.store.delete(run_id)
        state.jobs.forget_spec(run_id)
        state.jobs.jobs.pop(run_id, None)
        state.loaded.pop(run_id, None)

    await state.in_thread(delete)
    return Response(status_code=204)


def _results(state: ServeState, run_id: str) -> list[dict[str, Any]]:
    from benchkit.formats.codeforge import export_results

    spec = state.jobs.load_spec(run_id)
    if spec is None or spec.get("route") != "codeforge":
        raise RunNotFoundError(run_id)
    try:
        result = state.load(run_id)
    except RunNotFoundError:
        if run_id in state.jobs.jobs:
            return []
        raise
    records = export_results(result)
    for record in records:
        record["id"] = f"{run_id}:{record['task_id']}:{record['epoch']}"
        record["run_id"] = run_id
    return records


async def get_results(request: Request) -> Response:
    """A run's results; ``[]`` for a run that has none or does not exist (CodeForge lists
    the results table by run id, so an unknown run is an empty list, not a 404)."""
    state = state_of(request)
    try:
        return json_response(await state.in_thread(_results, state, request.path_params["run_id"]))
    except RunNotFoundError:
        return json_response([])


async def compare(request: Request) -> Response:
    state = state_of(request)
    body = await _body(request, state)
    a = body.get("run_id_a") if isinstance(body, dict) else None
    b = body.get("run_id_b") if isinstance(body, dict) else None
    if not isinstance(a, str) or not a or not isinstance(b, str) or not b:
        raise _error(400, "run_id_a and run_id_b are required")

    def both() -> dict[str, Any]:
        return {
            "run_a": _describe(state, a),
            "run_b": _describe(state, b),
            "results_a": _results(state, a),
            "results_b": _results(state, b),
        }

    try:
        return json_response(await state.in_thread(both))
    except RunNotFoundError:
        raise _error(404, _NOT_FOUND) from None


async def list_datasets(request: Request) -> Response:
    from benchkit.formats.codeforge import discover_datasets

    state = state_of(request)
    directory = _datasets_dir(state)
    if not directory.is_dir():
        return json_response([])
    found, _ = await state.in_thread(discover_datasets, directory)
    return json_response(
        [
            {
                "name": info.name,
                "description": info.description or "",
                "task_count": info.task_count,
                "path": info.path,
            }
            for info in found
        ]
    )


async def list_metrics(request: Request) -> Response:
    """The metric names a run may ask for (benchkit's addition, so a client offers exactly
    what the server computes)."""
    from benchkit.formats.codeforge import METRICS

    return json_response(list(METRICS))


def routes(state: ServeState | None = None) -> list[BaseRoute]:
    """CodeForge's routes, under :data:`PREFIX`."""
    return [
        Route(f"{PREFIX}/runs", list_runs, methods=["GET"]),
        Route(f"{PREFIX}/runs", create_run, methods=["POST"]),
        Route(f"{PREFIX}/runs/{{run_id}}", get_run, methods=["GET"]),
        Route(f"{PREFIX}/runs/{{run_id}}", delete_run, methods=["DELETE"]),
        Route(f"{PREFIX}/runs/{{run_id}}/results", get_results, methods=["GET"]),
        Route(f"{PREFIX}/compare", compare, methods=["POST"]),
        Route(f"{PREFIX}/datasets", list_datasets, methods=["GET"]),
        Route(f"{PREFIX}/metrics", list_metrics, methods=["GET"]),
    ]


def openapi() -> dict[str, Any]:
    """The OpenAPI path items of :func:`routes`."""
    create = {
        "type": "object",
        "required": ["dataset", "model", "metrics"],
        "properties": {
            "dataset": {"type": "string"},
            "model": {"type": "string"},
            "metrics": {"type": "array", "items": {"type": "string"}},
            "endpoint": {"type": "string", "description": "one of the server's endpoints"},
            "base_url": {
                "type": "string",
                "description": "the URL of one of the server's endpoints (any other: 400)",
            },
            "judge_model": {"type": "string"},
            "judge_endpoint": {"type": "string"},
            "judge_base_url": {"type": "string"},
        },
    }
    tag = "codeforge"
    return {
        f"{PREFIX}/runs": {
            "get": operation("CodeForge: runs", {200: ("Run list", ARRAY)}, tag=tag),
            "post": operation(
                "CodeForge: start a run (really runs it)",
                {201: ("Run, status running", ANY), 400: ("{error}", ERROR)},
                body=create,
                tag=tag,
            ),
        },
        f"{PREFIX}/runs/{{run_id}}": {
            "get": operation(
                "CodeForge: a Run",
                {200: ("Run", ANY), 404: ("{error}", ERROR)},
                params=[RUN_ID],
                tag=tag,
            ),
            "delete": operation(
                "CodeForge: delete a run",
                {204: ("deleted", None), 404: ("{error}", ERROR)},
                params=[RUN_ID],
                tag=tag,
            ),
        },
        f"{PREFIX}/runs/{{run_id}}/results": {
            "get": operation(
                "CodeForge: a run's Results",
                {200: ("Result list", ARRAY), 404: ("{error}", ERROR)},
                params=[RUN_ID],
                tag=tag,
            )
        },
        f"{PREFIX}/compare": {
            "post": operation(
                "CodeForge: two runs and their results",
                {200: ("run_a, run_b, results_a, results_b", ANY), 400: ("{error}", ERROR)},
                body={
                    "type": "object",
                    "required": ["run_id_a", "run_id_b"],
                    "properties": {
                        "run_id_a": {"type": "string"},
                        "run_id_b": {"type": "string"},
                    },
                },
                tag=tag,
            )
        },
        f"{PREFIX}/datasets": {
            "get": operation("CodeForge: datasets", {200: ("DatasetInfo list", ARRAY)}, tag=tag)
        },
        f"{PREFIX}/metrics": {
            "get": operation(
                "CodeForge: the metric names a run may ask for (benchkit's addition)",
                {200: ("metric names", ARRAY)},
                tag=tag,
            )
        },
    }


#: What the server serves of CodeForge (``Tool.routes``): its refusals answer
#: ``{"error": message}``, as all of its API does.
ROUTES = ToolRoutes(routes=routes, openapi=openapi, plain_errors=(PREFIX,))
