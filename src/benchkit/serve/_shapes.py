"""The JSON of benchkit's ``/api`` routes: runs, run pages, cells, benchmarks, endpoints
and live events, shaped from the store's rows and the jobs. No route and no request here:
what each answer looks like, in one place (docs/server.md documents the shapes)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from benchkit.errors import BenchkitError
from benchkit.llm._endpoints import NamedEndpoint
from benchkit.model import Suite
from benchkit.results import RunResult
from benchkit.serde import converter
from benchkit.serve_toolkit._jobs import Job
from benchkit.store import RunSummary

__all__ = [
    "benchmarks_json",
    "cell_json",
    "cells_page_json",
    "endpoints_json",
    "pass_rates_json",
    "queued_detail",
    "relative_source",
    "run_detail",
    "run_json",
    "sse",
]


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
        "format": row.source_format or None,  # None: built in code
        "source_path": row.source_path,
        **_api_status(row, job),
        "stopped_by": row.stopped_by,
        "budget": None if row.budget is None else converter.unstructure(row.budget),
        "started_at": row.started_at,
        "updated_at": row.updated_at,
        "finished_at": row.finished_at,
        "conditions": list(row.conditions),
        "cells": row.cells,
        "errors": row.errors,
        "total_cells": row.total_cells,
        "job": job.to_json() if job is not None else None,
    }


def relative_source(row: RunSummary, root: Path) -> RunSummary:
    """The row with its source path relative to ``root``; a source outside the root (a run
    stored by another program) is hidden."""
    if row.source_path is None:
        return row
    try:
        inside = Path(os.path.realpath(row.source_path))
        rel = inside.relative_to(root).as_posix()
    except ValueError:
        rel = None
    return attrs.evolve(row, source_path=rel)


def pass_rates_json(counts: Mapping[str, tuple[int, int]]) -> dict[str, Any]:
    """Per condition, the stored cells that passed (the runs list's ``pass_rates``)."""
    return {
        condition: {"passed": passed, "cells": cells, "pass_rate": passed / cells}
        for condition, (passed, cells) in counts.items()
    }


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


def queued_detail(job: Job) -> dict[str, Any]:
    """The detail of a run that is queued, or failed before its first cell (nothing
    stored yet)."""
    return {
        "run": _queued_json(job),
        "info": None,
        "aggregates": [],
        "groups": [],
        "comparisons": [],
        "warnings": [],
        "reproduction": None,
        "error_categories": [],
        "sessions": [],
        "ratings": {"count": 0, "agreement": []},
    }


def _reproduction(result: RunResult) -> dict[str, Any] | None:
    """The run against its benchmark's published figure, with the lines every report
    prints (``lines``), so the explorer says exactly what they say."""
    if result.reproduction is None:
        return None
    found: dict[str, Any] = converter.unstructure(result.reproduction)
    found["lines"] = result.reproduction.lines()
    return found


def run_detail(
    row: RunSummary, job: Job | None, result: RunResult, sessions: Any, ratings: Any
) -> dict[str, Any]:
    """A stored run's detail: what it stored at its end (``result``, without cells), its
    sessions and its ratings."""
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
    return {
        "run": run_json(row, job),
        "info": info,
        "aggregates": converter.unstructure(result.aggregates),
        "groups": converter.unstructure(result.groups),
        "comparisons": converter.unstructure(result.comparisons),
        "warnings": list(result.warnings),
        "reproduction": _reproduction(result),
        "error_categories": [
            {"condition_id": c, "category": cat, "count": n} for c, cat, n in categories
        ],
        "sessions": converter.unstructure(sessions),
        "ratings": ratings,
    }


def cells_page_json(cells: Sequence[str], total: int, limit: int, offset: int) -> str:
    """A page of cells as JSON text: the cells' stored JSON spliced in as stored."""
    head = json.dumps({"total": total, "limit": limit, "offset": offset})
    return '{"cells":[' + ",".join(cells) + "]," + head[1:]


def cell_json(data: str, attempt: int, attempts: int, transcript: Any) -> str:
    """One cell's stored JSON, as stored, with its attempt and transcript spliced in
    (``stored_attempts``: the cell's own ``attempts`` counts its retries within one run)."""
    extra = json.dumps(
        {"attempt": attempt, "stored_attempts": attempts, "transcript": transcript},
        ensure_ascii=False,
    )
    return data.rstrip()[:-1] + "," + extra[1:]


def _inside(path: Path, root: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == root or root in real.parents


def benchmarks_json(
    found: Iterable[tuple[Path, Suite]],
    problems: Iterable[tuple[Path, BenchkitError]],
    root: Path,
    scrub: Any,
) -> dict[str, Any]:
    """The benchmarks under ``root`` a format loads, and those that fail (by path under
    the root; anything outside it is left out)."""
    return {
        "benchmarks": [
            {
                "path": path.relative_to(root).as_posix(),
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
            if _inside(path, root)
        ],
        "problems": [
            {"path": path.relative_to(root).as_posix(), "error": scrub(exc.message)}
            for path, exc in problems
            if _inside(path, root)
        ],
    }


def endpoints_json(endpoints: Iterable[NamedEndpoint]) -> dict[str, Any]:
    """The endpoints a request may name: what a client offers its user to pick from."""
    return {
        "endpoints": [
            {"name": e.name, "url": e.url, "has_key": e.key_env is not None}
            for e in sorted(endpoints, key=lambda e: e.name)
        ]
    }


def sse(event: str, data: Any) -> bytes:
    """One server-sent event."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
