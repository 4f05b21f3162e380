"""skillvault's manager bench API: ``/bench/configs`` and ``/bench/runs``, with the
original's bodies, codes and files.

Runs go through the job queue (so they are in the run store and count against the
server's concurrency) and the request waits for the run, as skillvault's does. A saved run
is written as ``<root>/.skillvault/export/bench/runs/<runId>.json`` — the bytes
``python -m benchkit bench run --out`` writes for the same config — and indexed in
``index.json`` with the original's entries. Deliberate differences (see
docs/compatibility.md): a config or bundle error is a 400 with skillvault's message (the
original answers 500), and discovery lists only files that load as bench configs.

Imported only when the server is built (the tool's ``routes`` and ``jobs``).
"""

from __future__ import annotations

import json
import math
import os
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from benchkit._js import stringify, to_number, trim
from benchkit.model import Suite
from benchkit.serve_toolkit import (
    ANY,
    ERROR,
    RUN_ID,
    ApiError,
    JobBuilder,
    JobContext,
    PathError,
    ServeState,
    ToolRoutes,
    json_response,
    operation,
    read_json,
    resolve_inside,
    start_job,
    state_of,
)

__all__ = [
    "JOB",
    "POST_RUN_SCHEMA",
    "ROUTES",
    "build_skillvault_suite",
    "list_limit",
    "routes",
]

_DISCOVERY_DIRS = ("bench", "benchmarks", "packages/cli/examples/bench-v0")
_SUFFIXES = (".yaml", ".yml", ".json")
_EXPORT = Path(".skillvault") / "export" / "bench"
_INDEX_SCHEMA = "skillvault.bench.index.v1"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")

#: The body of ``POST /bench/runs``.
POST_RUN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "configPath": {"type": "string"},
        "deterministic": {"type": "boolean"},
        "save": {"type": "boolean"},
        "label": {"type": "string"},
    },
}


def _js(value: Any) -> Response:
    """A response as Express's ``res.json`` sends it (``JSON.stringify``)."""
    return json_response(None, raw=stringify(value))


def _error(status: int, code: str, message: str, details: Mapping[str, Any]) -> ApiError:
    return ApiError(status, {"code": code, "error": message, "details": dict(details)})


def build_skillvault_suite(spec: Mapping[str, Any], context: JobContext) -> Suite:
    """The suite of a skillvault config (``spec["path"]``, relative to the root)."""
    from benchkit.formats import skillvault

    loaded = skillvault.load_config(resolve_inside(context.root, spec["path"]))
    return skillvault.to_suite(loaded, deterministic=bool(spec.get("deterministic", True)))


#: The runs of ``POST /bench/runs`` (started by that route only; the server resumes them).
JOB = JobBuilder(build=build_skillvault_suite, summary="skillvault: a bench config's run")


def _discover(root: Path) -> list[dict[str, Any]]:
    from benchkit.errors import BenchkitError
    from benchkit.formats import skillvault

    found: list[dict[str, Any]] = []
    for base in _DISCOVERY_DIRS:
        top = root / base
        if not top.is_dir():
            continue
        for current, subdirs, files in os.walk(top):
            subdirs[:] = sorted(d for d in subdirs if d not in (".git", "node_modules"))
            for name in sorted(files):
                if not name.lower().endswith(_SUFFIXES):
                    continue
                try:
                    path = resolve_inside(root, str(Path(current) / name))
                    if not path.is_file():  # a FIFO, socket or device: reading could block
                        continue
                    skillvault.load_config(path)
                except (PathError, BenchkitError, OSError):
                    continue  # not a valid bench config (or outside the root): not listed
                found.append(
                    {
                        "id": path.relative_to(root).as_posix(),
                        "name": path.name,
                        "path": str(path),
                        "source": "workspace",
                    }
                )
    unique = {entry["path"]: entry for entry in found}
    return [unique[key] for key in sorted(unique)]


async def list_configs(request: Request) -> Response:
    state = state_of(request)
    return _js({"configs": await state.in_thread(_discover, state.root)})


def _config_path(state: ServeState, raw: Any) -> Path:
    """The config a run names, with skillvault's codes, messages and details word for word
    (its UI shows them); where skillvault names an absolute server path (the workspace
    root, the resolved file), benchkit names the path as the client sent it."""
    given = trim(raw) if isinstance(raw, str) else ""
    try:
        path = resolve_inside(state.root, given)
    except PathError as exc:
        message, details = {
            "empty": ("configPath must be a non-empty string", {"field": "configPath"}),
            "url": (
                "configPath must be a local file path",
                {"field": "configPath", "configPath": given},
            ),
        }.get(
            exc.reason,
            (
                "configPath must resolve inside workspace root",
                {"field": "configPath", "inputPath": given},
            ),
        )
        raise _error(400, "BENCH_CONFIG_PATH_INVALID", message, details) from None
    if not path.is_file():
        raise _error(
            404,
            "BENCH_CONFIG_NOT_FOUND",
            f"Benchmark config not found: {given}",
            {"configPath": given},
        )
    return path


async def post_run(request: Request) -> Response:
    from benchkit.formats import skillvault
    from benchkit.formats.skillvault.report import build_report, build_run, dumps

    state = state_of(request)
    body = await read_json(request, POST_RUN_SCHEMA, max_bytes=state.max_body)
    path = _config_path(state, body.get("configPath"))
    deterministic = body.get("deterministic", True)
    try:
        loaded = await state.in_thread(skillvault.load_config, path)
    except skillvault.BenchConfigError as exc:
        details: dict[str, Any] = {}
        if exc.field is not None:
            details["field"] = exc.field
        raise _error(400, exc.reason, state.scrub(exc.message), details) from None
    spec = {
        "route": "skillvault",
        "path": path.relative_to(state.root).as_posix(),
        "deterministic": deterministic,
    }
    run_id = str(uuid.uuid4())
    job, _ = await start_job(state, spec, run_id=run_id)
    await job.finished.wait()
    if job.result is None or job.status != "finished":
        raise ApiError(500, {"error": state.scrub(job.error or f"the run ended {job.status}")})
    git = await state.in_thread(skillvault.git_commit, loaded.config_dir)
    run = build_run(loaded, job.result, git_commit=git)
    report = build_report(run)
    export = state.root / _EXPORT
    run_path = export / "runs" / f"{run_id}.json"
    save = body.get("save", True) is not False
    if save:
        label = trim(body.get("label") or "") or loaded.config.metadata.suite or None
        await state.in_thread(_save, export, run_path, run_id, run, dumps(run), label)
    return _js(
        {"runId": run_id, "runPath": str(run_path), "run": run, "report": report, "saved": save}
    )


def _save(
    export: Path, run_path: Path, run_id: str, run: Mapping[str, Any], text: str, label: str | None
) -> None:
    from benchkit.formats.skillvault.report import iso_now

    run_path.parent.mkdir(parents=True, exist_ok=True)
    run_path.write_bytes(text.encode("utf-8"))
    deltas = run.get("deltas") or {}

    def delta(name: str) -> Any:
        value = deltas.get(name)
        return value.get("pass_rate_delta") if isinstance(value, dict) else None

    entry = {
        "runId": run_id,
        "runPath": str(run_path),
        "configPath": run["run"]["config_path"],
        "createdAt": run["created_at"],
        "deterministic": run["run"]["deterministic"],
        "gitCommit": run["run"]["git_commit"],
        "conditionPassRates": {
            cid: agg["pass_rate"] for cid, agg in (run.get("aggregates") or {}).items()
        },
        "deltas": {
            "curated_vs_no_skill": delta("curated_vs_no_skill"),
            "self_generated_vs_no_skill": delta("self_generated_vs_no_skill"),
        },
        "label": label,
    }
    entries = [e for e in _read_index(export) if e.get("runId") != run_id]
    entries.append(entry)
    # Newest first, then by id: an ISO timestamp sorts as text.
    entries.sort(key=lambda e: str(e.get("runId", "")))
    entries.sort(key=lambda e: str(e.get("createdAt", "")), reverse=True)
    index = {"schema": _INDEX_SCHEMA, "updated_at": iso_now(), "runs": entries}
    target = export / "index.json"
    temporary = target.with_suffix(".json.tmp")
    temporary.write_text(stringify(index, 2) + "\n", encoding="utf-8")
    os.replace(temporary, target)


def _read_index(export: Path) -> list[dict[str, Any]]:
    """The index's entries; a missing or corrupt index is empty (as skillvault treats it)."""
    try:
        data = json.loads((export / "index.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    runs = data.get("runs") if isinstance(data, dict) else None
    return [e for e in runs if isinstance(e, dict)] if isinstance(runs, list) else []


def list_limit(values: list[str]) -> int:
    """``GET /bench/runs``'s ``limit`` as skillvault reads it: ``Number(query.limit ?? 25)``,
    25 unless finite and positive, then ``Math.trunc`` (so ``0x3`` is 3, ``1_0`` and
    ``Infinity`` are 25, ``0.5`` is 0); a repeated parameter is an array, ``NaN`` to
    ``Number``."""
    if not values:
        return 25
    number = to_number(values[0] if len(values) == 1 else values)
    if not math.isfinite(number) or number <= 0:
        return 25
    return math.trunc(number)


async def list_runs(request: Request) -> Response:
    state = state_of(request)
    limit = list_limit(request.query_params.getlist("limit"))
    entries = await state.in_thread(_read_index, state.root / _EXPORT)
    return _js({"runs": entries[:limit]})


async def health(request: Request) -> Response:
    """``GET /health``: ``{ok: true}``, what skillvault's web UI asks before anything else."""
    return _js({"ok": True})


def _stored_run(state: ServeState, run_id: str) -> tuple[bytes, dict[str, Any]]:
    from benchkit.formats.skillvault.report import BenchRunError, parse_run

    details = {"runId": run_id}
    missing = _error(404, "BENCH_RUN_NOT_FOUND", f"Benchmark run not found: {run_id}", details)
    if not _RUN_ID.match(run_id):
        raise missing
    path = state.root / _EXPORT / "runs" / f"{run_id}.json"
    try:
        raw = path.read_bytes()
        run = parse_run(raw.decode("utf-8", errors="replace"), source=path)
    except (OSError, BenchRunError):
        raise missing from None
    return raw, run


async def get_run(request: Request) -> Response:
    state = state_of(request)
    raw, _ = await state.in_thread(_stored_run, state, request.path_params["run_id"])
    return Response(raw, 200, media_type="application/json")


async def get_report(request: Request) -> Response:
    from benchkit.formats.skillvault.report import build_report

    state = state_of(request)
    _, run = await state.in_thread(_stored_run, state, request.path_params["run_id"])
    return _js(build_report(run))


def routes(state: ServeState | None = None) -> list[BaseRoute]:
    """skillvault's manager routes, at its paths."""
    return [
        Route("/health", health, methods=["GET"]),
        Route("/bench/configs", list_configs, methods=["GET"]),
        Route("/bench/runs", post_run, methods=["POST"]),
        Route("/bench/runs", list_runs, methods=["GET"]),
        Route("/bench/runs/{run_id}", get_run, methods=["GET"]),
        Route("/bench/runs/{run_id}/report", get_report, methods=["GET"]),
    ]


def openapi() -> dict[str, Any]:
    """The OpenAPI path items of :func:`routes`."""
    tag = "skillvault"
    return {
        "/health": {
            "get": operation(
                "skillvault: {ok: true} (what its web UI asks first)",
                {200: ("ok", ANY)},
                tag=tag,
            )
        },
        "/bench/configs": {
            "get": operation(
                "skillvault: bench configs under the root", {200: ("configs", ANY)}, tag=tag
            )
        },
        "/bench/runs": {
            "get": operation(
                "skillvault: saved runs (index entries)",
                {200: ("runs", ANY)},
                params=[
                    ("limit", "query", "read as JavaScript's Number(), then truncated; default 25")
                ],
                tag=tag,
            ),
            "post": operation(
                "skillvault: run a config and wait for it",
                {
                    200: ("runId, runPath, run, report, saved", ANY),
                    400: (
                        "BENCH_CONFIG_PATH_INVALID, BENCH_CONFIG_INVALID, BENCH_CONFIG_PARSE_ERROR",
                        ERROR,
                    ),
                    404: ("BENCH_CONFIG_NOT_FOUND", ERROR),
                },
                body=POST_RUN_SCHEMA,
                tag=tag,
            ),
        },
        "/bench/runs/{run_id}": {
            "get": operation(
                "skillvault: a saved run (skillvault.bench.run.v1), as `bench run --out` wrote it",
                {200: ("the run", ANY), 404: ("BENCH_RUN_NOT_FOUND", ERROR)},
                params=[RUN_ID],
                tag=tag,
            )
        },
        "/bench/runs/{run_id}/report": {
            "get": operation(
                "skillvault: the report (skillvault.bench.report.v1) of a saved run",
                {200: ("the report", ANY), 404: ("BENCH_RUN_NOT_FOUND", ERROR)},
                params=[RUN_ID],
                tag=tag,
            )
        },
    }


#: What the server serves of skillvault (``Tool.routes``): ``GET /health`` needs no token,
#: as skillvault's own needs no scope.
ROUTES = ToolRoutes(routes=routes, openapi=openapi, public=("/health",))
