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

import hashlib
import json
import platform
import sys
from typing import TYPE_CHECKING, Any

import attrs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from benchkit._version import __version__
from benchkit.errors import RunNotFoundError
from benchkit.results import ConditionInfo
from benchkit.serve._http import json_response
from benchkit.serve._state import ServeState, state_of
from benchkit.store import RunSummary
from benchkit.store._queries import RunFilter

if TYPE_CHECKING:
    from benchkit.formats.memorybench._export import CombinationSummary

__all__ = ["routes"]

_FORMAT = "memorybench"
#: The cookie naming the run a client explores (set by ``GET /api/run/<id>``).
_COOKIE = "memorybench_run"


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
    from benchkit.serve._jobs import now as iso_now

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
        "generated_at": iso_now(),
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
    """The run this client explores: its own choice (a cookie set by ``/api/run/<id>``),
    else the server's (``memory explore --run``). One client's switch never changes what
    another sees."""
    chosen = request.cookies.get(_COOKIE)
    if chosen:
        return chosen
    value: str | None = state_of(request).extra.get("memorybench_run")
    return value


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
    """``{success: true, run_id}`` and this client's run switched (a cookie scoped to the
    API's path); ``{success: false, error}`` with 404 for an unknown run."""
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
    response = _json({"success": True, "run_id": run_id})
    prefix = request.scope.get("root_path", "") + request.url.path.rsplit("/api/run/", 1)[0]
    response.set_cookie(_COOKIE, run_id, path=prefix or "/", httponly=True, samesite="strict")
    return response


def routes(prefix: str = "") -> list[Route]:
    return [
        Route(f"{prefix}/api/data", get_data, methods=["GET"]),
        Route(f"{prefix}/api/runs", list_runs, methods=["GET"]),
        Route(f"{prefix}/api/run/{{run_id}}", switch_run, methods=["GET"]),
    ]
