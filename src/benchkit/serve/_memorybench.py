"""MemoryBench's explorer API, from benchkit's store: ``GET /api/data``, ``GET /api/runs``,
``GET /api/run/<id>``.

A MemoryBench run here is a stored run of a MemoryBench benchmark (format
``memorybench``); its conditions are the memory providers. ``/api/data`` answers
``{manifest, summary, results}`` for the current run — ``results`` are the MemoryBench
records of its cells (what ``results.jsonl`` holds), ``summary`` is recomputed from them
as the original's explorer does, ``manifest`` is the run manifest's shape.
``/api/run/<id>`` switches the current run and answers the same. ``python -m benchkit
memory explore --run ID --port 3000`` serves these on their own (the original's paths);
the main server mounts them under ``/memorybench``.
"""

from __future__ import annotations

import platform
import sys
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from benchkit._version import __version__
from benchkit.errors import RunNotFoundError
from benchkit.serve._http import ApiError, json_response
from benchkit.serve._state import ServeState, state_of
from benchkit.store._queries import RunFilter

__all__ = ["routes"]

_FORMAT = "memorybench"


def _error(status: int, message: str) -> ApiError:
    return ApiError(status, {"error": message})


def _data(state: ServeState, run_id: str) -> dict[str, Any]:
    """``{manifest, summary, results}`` of a stored MemoryBench run."""
    import attrs

    from benchkit.formats.memorybench._export import result_record, summarize_records
    from benchkit.serve._jobs import now as iso_now

    row = state.reader.run(run_id)
    if row.source_format != _FORMAT:
        raise RunNotFoundError(run_id)
    result = state.load(run_id)
    info = result.info
    benchmark = info.benchmark_name or info.benchmark_id
    records = [result_record(cell, run_id=run_id, benchmark=benchmark) for cell in result.cells]
    combos = summarize_records(records)
    providers = [c.id for c in info.conditions]
    manifest = {
        "version": 1,
        "run_id": run_id,
        "timestamp": row.started_at,
        "git": {"commit": info.git_commit},
        "selections": {"providers": providers, "benchmarks": [benchmark]},
        "providers": [{"name": c.id, "version": c.provider} for c in info.conditions],
        "benchmarks": [
            {
                "name": benchmark,
                "version": info.benchmark_version,
                "case_count": (row.total_cells // max(1, len(providers) * info.options.epochs)),
            }
        ],
        "environment": {
            "benchkit": __version__,
            "python": sys.version.split()[0],
            "platform": platform.system().lower(),
        },
        "cli_args": [],
    }
    summary = {
        "version": 1,
        "run_id": run_id,
        "generated_at": iso_now(),
        "totals": {
            "cases": sum(c.cases for c in combos),
            "passed": sum(c.passed for c in combos),
            "failed": sum(c.failed for c in combos),
            "skipped": sum(c.skipped for c in combos),
            "errors": sum(c.errors for c in combos),
            "duration_ms": sum(c.duration_ms for c in combos),
        },
        "by_combination": [attrs.asdict(c) for c in combos],
    }
    return {"manifest": manifest, "summary": summary, "results": records}


def _current(request: Request) -> str | None:
    value: str | None = state_of(request).extra.get("memorybench_run")
    return value


async def get_data(request: Request) -> Response:
    state = state_of(request)
    run_id = _current(request)
    if run_id is None:
        raise _error(404, "No run selected")
    try:
        return json_response(await state.in_thread(_data, state, run_id))
    except RunNotFoundError:
        raise _error(404, f"Run not found: {run_id}") from None


async def list_runs(request: Request) -> Response:
    state = state_of(request)
    rows, _ = await state.in_thread(
        lambda: state.reader.runs(RunFilter(format=_FORMAT), limit=1000)
    )
    return json_response(
        [{"run_id": r.run_id, "timestamp": r.started_at, "result_count": r.cells} for r in rows]
    )


async def switch_run(request: Request) -> Response:
    state = state_of(request)
    run_id = request.path_params["run_id"]
    try:
        data = await state.in_thread(_data, state, run_id)
    except RunNotFoundError:
        raise _error(404, f"Run not found: {run_id}") from None
    state.extra["memorybench_run"] = run_id
    return json_response(data)


def routes(prefix: str = "") -> list[Route]:
    return [
        Route(f"{prefix}/api/data", get_data, methods=["GET"]),
        Route(f"{prefix}/api/runs", list_runs, methods=["GET"]),
        Route(f"{prefix}/api/run/{{run_id}}", switch_run, methods=["GET"]),
    ]
