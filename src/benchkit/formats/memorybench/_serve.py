"""MemoryBench's explorer API, from benchkit's store: ``GET /api/data``, ``GET /api/runs``,
``GET /api/run/<id>``.

A MemoryBench run here is a stored run of a MemoryBench benchmark (format
``memorybench``); its conditions are the memory providers. ``/api/data`` answers
``{manifest, summary, results}`` for the current run — ``results`` are the MemoryBench
records of its cells (what ``results.jsonl`` holds), ``summary`` is recomputed from them
as the original's explorer does, ``manifest`` is the run manifest's shape.
``/api/run/<id>`` switches the current run: the server's, as the original's does (a
client without a cookie sees it), and the client's own (a cookie, which keeps a client
that sends it on its run whatever others switch to). ``python -m benchkit
memory explore --run ID --port 3000`` serves these on their own (the original's paths);
the main server mounts them under ``/memorybench``.

Also MemoryBench's part of benchkit's ``POST /api/runs``: a benchmark request's
``format_options`` (the providers to run and the pass thresholds), the job kind
``memorybench``. Imported only when the server is built (the tool's ``routes`` and ``jobs``).
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from benchkit._version import __version__
from benchkit.errors import ConfigError, RunNotFoundError
from benchkit.model import Suite
from benchkit.results import ConditionInfo
from benchkit.serve_toolkit import (
    ANY,
    ARRAY,
    ERROR,
    RUN_ID,
    JobBuilder,
    JobContext,
    ServeState,
    ToolRoutes,
    json_response,
    now,
    operation,
    resolve_inside,
    state_of,
)
from benchkit.store import RunSummary
from benchkit.store._queries import RunFilter

if TYPE_CHECKING:
    from benchkit.formats.memorybench._export import CombinationSummary

__all__ = ["LOAD_JOB", "LOAD_OPTIONS_SCHEMA", "ROUTES", "build_suite", "routes"]

_FORMAT = "memorybench"
#: Where the main server serves the explorer API.
_PREFIX = "/memorybench"
#: The cookie naming the run a client explores (set by ``GET /api/run/<id>``).
_COOKIE = "memorybench_run"
#: Where the server keeps the last switch (``ServeState.extra``).
_SWITCHED = "memorybench.switched"


def _environment() -> dict[str, str]:
    """The original's ``EnvironmentInfo``: runtime, its version, the OS, its release and
    the machine architecture (the original reads Bun's version, ``os.platform()``,
    ``os.release()`` and ``os.arch()``); ``benchkit`` is benchkit's addition."""
    return {
        "runtime": "python",
        "runtime_version": sys.version.split()[0],
        "os": sys.platform,
        "os_version": platform.release(),
        "platform": platform.machine().lower() or "unknown",
        "benchkit": __version__,
    }


def _manifest_hash(condition: ConditionInfo) -> str:
    """A stable hash of what the run records of a provider (the original hashes the
    provider's manifest as canonical JSON; benchkit records the condition, not a file)."""
    canonical = json.dumps(attrs.asdict(condition), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _combination(summary: CombinationSummary) -> dict[str, Any]:
    """The original's ``CombinationSummary``: the status counts nested under ``counts``
    (its UI reads ``combo.counts.cases``); ``score_counts`` is benchkit's addition."""
    return {
        "provider_name": summary.provider_name,
        "benchmark_name": summary.benchmark_name,
        "counts": {
            "cases": summary.cases,
            "passed": summary.passed,
            "failed": summary.failed,
            "skipped": summary.skipped,
            "errors": summary.errors,
        },
        "duration_ms": summary.duration_ms,
        "score_averages": dict(summary.score_averages),
        "score_counts": dict(summary.score_counts),
    }


def _group(state: ServeState, run_id: str) -> tuple[RunSummary, list[RunSummary]]:
    """A MemoryBench run and the stored runs it is made of: ``memory eval`` stores one run
    per benchmark, the first under the run's id, the others as ``<id>-<benchmark>``."""
    row = state.reader.run(run_id)
    if row.source_format != _FORMAT or _is_member(row.run_id, state):
        raise RunNotFoundError(run_id)
    later, _ = state.reader.runs(RunFilter(format=_FORMAT, since=row.started_at), limit=1000)
    siblings = sorted(
        (r for r in later if r.run_id.startswith(f"{run_id}-")), key=lambda r: r.started_at
    )
    return row, [row, *siblings]


def _is_member(run_id: str, state: ServeState) -> bool:
    """Whether ``run_id`` is a further benchmark's part of another run (``<id>-<name>``)."""
    head, sep, _ = run_id.partition("-")
    if not sep:
        return False
    try:
        return state.reader.run(head).source_format == _FORMAT
    except RunNotFoundError:
        return False


def _data(state: ServeState, run_id: str) -> dict[str, Any]:
    """``{manifest, summary, results}`` of a stored MemoryBench run, in the shapes of the
    original's ``RunManifest``, ``MetricsSummary`` and ``ResultRecord``."""
    from benchkit.formats.memorybench._export import result_record, summarize_records

    row, members = _group(state, run_id)
    records: list[dict[str, Any]] = []
    benchmarks: list[dict[str, Any]] = []
    conditions: dict[str, ConditionInfo] = {}
    info = None
    for member in members:
        result = state.load(member.run_id)
        info = info or result.info
        name = result.info.benchmark_name or result.info.benchmark_id
        records += (result_record(cell, run_id=run_id, benchmark=name) for cell in result.cells)
        for condition in result.info.conditions:
            conditions.setdefault(condition.id, condition)
        per_case = max(1, len(result.info.conditions) * result.info.options.epochs)
        benchmarks.append(
            {
                "name": name,
                "version": result.info.benchmark_version,
                "case_count": member.total_cells // per_case,
            }
        )
    assert info is not None
    combos = summarize_records(records)
    providers = list(conditions)
    manifest: dict[str, Any] = {"version": 1, "run_id": run_id, "timestamp": row.started_at}
    if info.git_commit:
        manifest["git_commit"] = info.git_commit
    manifest |= {
        "selections": {
            "providers": providers,
            "benchmarks": [b["name"] for b in benchmarks],
            "concurrency": info.options.concurrency,
        },
        "providers": [
            {"name": c.id, "version": c.provider or "", "manifest_hash": _manifest_hash(c)}
            for c in conditions.values()
        ],
        "benchmarks": benchmarks,
        "environment": _environment(),
        "cli_args": [],
    }
    summary = {
        "version": 1,
        "run_id": run_id,
        "generated_at": now(),
        "totals": {
            "cases": sum(c.cases for c in combos),
            "passed": sum(c.passed for c in combos),
            "failed": sum(c.failed for c in combos),
            "skipped": sum(c.skipped for c in combos),
            "errors": sum(c.errors for c in combos),
            "duration_ms": sum(c.duration_ms for c in combos),
        },
        "by_combination": [_combination(c) for c in combos],
    }
    return {"manifest": manifest, "summary": summary, "results": records}


def _json(body: Any, status: int = 200) -> Response:
    """Every answer of this API, as the original's: JSON with ``Cache-Control: no-store``."""
    response = json_response(body, status)
    response.headers["Cache-Control"] = "no-store"
    return response


def _current(request: Request) -> str | None:
    """The run this client explores: its own choice (the cookie ``/api/run/<id>`` sets),
    else the server's — the last switch (as the original's server, whose switch is
    every client's), else the run it was started on (``memory explore --run``). A client
    that keeps the cookie keeps its run whatever other clients switch to; one that sends
    no cookie (a plain HTTP client, a proxy that drops it) sees the last switch."""
    chosen = request.cookies.get(_COOKIE)
    if chosen:
        return chosen
    state = state_of(request)
    switched: str | None = state.extra.get(_SWITCHED)
    return switched if switched is not None else state.run_id


async def get_data(request: Request) -> Response:
    state = state_of(request)
    run_id = _current(request)
    if run_id is None:
        return _json({"error": "No run selected"}, 404)
    try:
        return _json(await state.in_thread(_data, state, run_id))
    except RunNotFoundError:
        return _json({"error": f"Run not found: {run_id}"}, 404)


def _run_infos(state: ServeState) -> list[dict[str, Any]]:
    """One ``RunInfo`` per MemoryBench run, its benchmarks' stored runs folded in."""
    rows, _ = state.reader.runs(RunFilter(format=_FORMAT), limit=1000)
    ids = {r.run_id for r in rows}
    infos: dict[str, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: r.started_at):
        head, sep, _ = r.run_id.partition("-")
        info = infos.get(head) if sep and head in ids else None
        if info is None:
            info = infos[r.run_id] = {
                "run_id": r.run_id,
                "timestamp": r.started_at,
                "providers": [],
                "benchmarks": [],
                "result_count": 0,
            }
        info["providers"] += (c for c in r.conditions if c not in info["providers"])
        info["benchmarks"].append(r.benchmark_name or r.benchmark_id)
        info["result_count"] += r.cells
    return sorted(infos.values(), key=lambda i: i["timestamp"], reverse=True)


async def list_runs(request: Request) -> Response:
    """The original's ``RunInfo[]``, newest first."""
    state = state_of(request)
    return _json(await state.in_thread(_run_infos, state))


async def switch_run(request: Request) -> Response:
    """``{success: true, run_id}``, and the run switched: the server's (what clients
    without the cookie see, as with the original) and this client's (a cookie scoped to
    the API's path); ``{success: false, error}`` with 404 for an unknown run."""
    state = state_of(request)
    run_id = request.path_params["run_id"]

    def known() -> bool:
        try:
            _group(state, run_id)
        except RunNotFoundError:
            return False
        return True

    if not await state.in_thread(known):
        return _json({"success": False, "error": f"Run not found: {run_id}"}, 404)
    state.extra[_SWITCHED] = run_id
    response = _json({"success": True, "run_id": run_id})
    prefix = request.scope.get("root_path", "") + request.url.path.rsplit("/api/run/", 1)[0]
    response.set_cookie(_COOKIE, run_id, path=prefix or "/", httponly=True, samesite="strict")
    return response


def routes(state: ServeState | None = None, prefix: str = _PREFIX) -> list[BaseRoute]:
    """The explorer API under ``prefix`` (the main server's ``/memorybench``)."""
    return [
        Route(f"{prefix}/api/data", get_data, methods=["GET"]),
        Route(f"{prefix}/api/runs", list_runs, methods=["GET"]),
        Route(f"{prefix}/api/run/{{run_id}}", switch_run, methods=["GET"]),
    ]


def standalone(state: ServeState | None = None) -> list[BaseRoute]:
    """The explorer API at the original's paths (``memory explore``)."""
    return routes(state, "")


def openapi() -> dict[str, Any]:
    """The OpenAPI path items of :func:`routes`."""
    tag = "memorybench"
    return {
        f"{_PREFIX}/api/data": {
            "get": operation("MemoryBench explorer: the current run", {200: ("data", ANY)}, tag=tag)
        },
        f"{_PREFIX}/api/runs": {
            "get": operation("MemoryBench explorer: runs", {200: ("runs", ARRAY)}, tag=tag)
        },
        f"{_PREFIX}/api/run/{{run_id}}": {
            "get": operation(
                "MemoryBench explorer: switch run",
                {200: ("data", ANY), 404: ("{error}", ERROR)},
                params=[RUN_ID],
                tag=tag,
            )
        },
    }


#: What the server serves of MemoryBench (``Tool.routes``).
ROUTES = ToolRoutes(routes=routes, openapi=openapi, standalone=standalone)

#: The ``format_options`` of a ``POST /api/runs`` benchmark request: MemoryBench's
#: ``load()`` options.
LOAD_OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "providers": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "pass_correctness": {"type": "number", "minimum": 0, "maximum": 1},
        "pass_faithfulness": {"type": "number", "minimum": 0, "maximum": 1},
    },
}


def build_suite(spec: Mapping[str, Any], context: JobContext) -> Suite:
    """A benchmark spec's MemoryBench benchmark, loaded with its ``format_options``; a
    benchmark of another format takes none (a ConfigError naming the field)."""
    from benchkit import formats

    path = resolve_inside(context.root, spec["path"])
    found = spec.get("format") or formats.detect_format(path)
    if found != _FORMAT:
        raise ConfigError(
            f"format_options: only MemoryBench benchmarks take them, and {spec['path']} "
            f"is read as {found}",
            fix="drop format_options this format does not take.",
            json_path="format_options",
        )
    return formats.load(path, format=_FORMAT, **spec["format_options"])


LOAD_JOB = JobBuilder(
    build=build_suite,
    schema=LOAD_OPTIONS_SCHEMA,
    field="format_options",
    summary="MemoryBench: a benchmark loaded with the providers and thresholds given",
)
