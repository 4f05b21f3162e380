"""The OpenAPI 3.1 description served at ``/openapi.json``, built from the same JSON Schemas
that validate request bodies (so the document cannot drift from the validation): benchkit's
paths, each installed tool's (``ToolRoutes.openapi``), and the body of ``POST /api/runs``
of every kind of job the server starts (``Tool.jobs``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from benchkit._version import __version__
from benchkit.serve_toolkit._openapi import ANY as _ANY
from benchkit.serve_toolkit._openapi import ERROR as _ERROR
from benchkit.serve_toolkit._openapi import RUN_ID
from benchkit.serve_toolkit._openapi import operation as _op

if TYPE_CHECKING:
    from benchkit.serve._runs import JobKinds
    from benchkit.serve_toolkit._routes import ToolRoutes

__all__ = ["openapi_document"]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


_NULLABLE_STR = {"type": ["string", "null"]}
_JOB = {
    "type": "object",
    "required": ["run_id", "kind", "status", "progress"],
    "properties": {
        "run_id": {"type": "string"},
        "kind": {"enum": ["start", "resume", "rerun"]},
        "route": {"type": "string", "description": "the job's kind"},
        "benchmark": _NULLABLE_STR,
        "status": {"enum": ["queued", "running", "finished", "interrupted", "cancelled", "failed"]},
        "created_at": {"type": "string"},
        "started_at": _NULLABLE_STR,
        "ended_at": _NULLABLE_STR,
        "progress": {
            "type": "object",
            "properties": {
                "done": {"type": "integer"},
                "total": {"type": ["integer", "null"]},
                "errors": {"type": "integer"},
            },
        },
        "error": _NULLABLE_STR,
        "cancel_requested": {"type": "boolean"},
    },
}
_RUN = {
    "type": "object",
    "required": ["run_id", "status", "cells", "total_cells"],
    "properties": {
        "run_id": {"type": "string"},
        "benchmark_id": _NULLABLE_STR,
        "benchmark_name": _NULLABLE_STR,
        "format": _NULLABLE_STR,
        "source_path": _NULLABLE_STR,
        "status": {"enum": ["queued", "running", "finished", "interrupted", "cancelled", "failed"]},
        "crashed": {"type": "boolean"},
        "stopped_by": {
            "description": "Why an interrupted run stopped: budget, signal, cancelled, error "
            "(none for a run that finished, is running, or did not record it).",
            "oneOf": [{"type": "string"}, {"type": "null"}],
        },
        "budget": {
            "description": "A budget's stop: the limit reached (reason), the limits, and "
            "what was spent (cost_usd, tokens, calls); none for any other run.",
            "oneOf": [{"type": "object"}, {"type": "null"}],
        },
        "started_at": {"type": "string"},
        "updated_at": {"type": "string"},
        "finished_at": _NULLABLE_STR,
        "conditions": {"type": "array", "items": {"type": "string"}},
        "cells": {"type": "integer"},
        "errors": {"type": "integer"},
        "total_cells": {"type": "integer"},
        "job": {"oneOf": [_ref("Job"), {"type": "null"}]},
        "pass_rates": {
            "type": "object",
            "description": "In the runs list: per condition, the stored cells that passed.",
            "additionalProperties": {
                "type": "object",
                "required": ["passed", "cells", "pass_rate"],
                "properties": {
                    "passed": {"type": "integer"},
                    "cells": {"type": "integer"},
                    "pass_rate": {"type": "number"},
                },
            },
        },
    },
}
_CELL = {
    "type": "object",
    "description": "A stored CellResult, as RunResult.to_json() writes its cells.",
    "required": ["task_id", "condition_id", "epoch", "status"],
    "properties": {
        "task_id": {"type": "string"},
        "condition_id": {"type": "string"},
        "epoch": {"type": "integer"},
        "status": {"enum": ["pass", "fail", "error", "timeout"]},
        "index": {"type": "integer"},
        "error_category": {"type": "string"},
        "error": _NULLABLE_STR,
        "score": {"type": ["number", "null"]},
        "scores": {"type": "array"},
        "verdicts": {"type": "array"},
        "response": {"type": ["object", "null"]},
        "attempts": {"type": "integer"},
        "duration_ms": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}
_PAGE = {"limit": {"type": "integer"}, "offset": {"type": "integer"}, "total": {"type": "integer"}}
_SCHEMAS = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "code": {"type": "string"},
            "error": {"type": "string"},
            "details": {"type": "object"},
        },
    },
    "Job": _JOB,
    "Run": _RUN,
    "RunPage": {
        "type": "object",
        "properties": {"runs": {"type": "array", "items": _ref("Run")}, **_PAGE},
    },
    "Cell": _CELL,
    "CellPage": {
        "type": "object",
        "properties": {"cells": {"type": "array", "items": _ref("Cell")}, **_PAGE},
    },
    "RunDetail": {
        "type": "object",
        "properties": {
            "run": _ref("Run"),
            "info": {"type": ["object", "null"]},
            "aggregates": {"type": "array"},
            "groups": {"type": "array"},
            "comparisons": {"type": "array"},
            "warnings": {
                "type": "array",
                "items": {"type": "string"},
                "description": "One line each, what a reader must know before trusting the "
                "numbers: a weak judge (its scores are not evidence).",
            },
            "reproduction": {"type": ["object", "null"]},
            "error_categories": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "condition_id": {"type": "string"},
                        "category": {"type": "string"},
                        "count": {"type": "integer"},
                    },
                },
            },
            "sessions": {"type": "array"},
        },
    },
    "Accepted": {
        "type": "object",
        "properties": {"run_id": {"type": "string"}, "job": _ref("Job")},
    },
}


def _start_schema(kinds: JobKinds) -> dict[str, Any]:
    """The body of ``POST /api/runs``: one schema per kind a request may name."""
    schemas = list(kinds.request_schemas().values())
    return schemas[0] if len(schemas) == 1 else {"oneOf": schemas}


def openapi_document(kinds: JobKinds, tools: Mapping[str, ToolRoutes]) -> dict[str, Any]:
    """The whole document (a fresh dict on every call): benchkit's paths, the ``kinds`` of
    job ``POST /api/runs`` starts, and the paths of the ``tools``' routes."""
    from benchkit.serve._story import RATE_SCHEMA, RERUN_SCHEMA, UNRATE_SCHEMA

    run = RUN_ID
    bad = (400, ("invalid input; names the field", _ERROR))
    missing = (404, ("no such run", _ERROR))
    cell_filters = [
        ("condition", "query", "condition ids (repeat or comma-separate)"),
        ("status", "query", "pass, fail, error, timeout (repeat or comma-separate)"),
        ("task", "query", "task id glob (*, ?, [...])"),
        ("tag", "query", "a task tag"),
        ("sort", "query", "position, task, condition, status, epoch, score, duration"),
        ("order", "query", "asc or desc"),
        ("limit", "query", "1..1000 (default 100)"),
        ("offset", "query", "cells to skip"),
    ]
    paths: dict[str, dict[str, Any]] = {
        "/api/runs": {
            "get": _op(
                "List stored runs, newest first",
                {200: ("a page of runs", _ref("RunPage")), 400: bad[1]},
                params=[
                    ("benchmark", "query", "benchmark id"),
                    ("format", "query", "source format"),
                    ("status", "query", "running, finished, interrupted, crashed"),
                    ("since", "query", "started at or after (ISO 8601)"),
                    ("until", "query", "started before (ISO 8601)"),
                    ("limit", "query", "1..1000 (default 50)"),
                    ("offset", "query", "runs to skip"),
                ],
                tag="benchkit",
            ),
            "post": _op(
                "Start a run of a benchmark under the root (queued as a job)",
                {
                    202: ("queued", _ref("Accepted")),
                    400: bad[1],
                    404: ("no such benchmark", _ERROR),
                    413: ("body too large", _ERROR),
                    415: ("not JSON", _ERROR),
                    503: ("queue full", _ERROR),
                },
                body=_start_schema(kinds),
                tag="benchkit",
            ),
        },
        "/api/runs/{run_id}": {
            "get": _op(
                "A run: info, aggregates, comparisons, error categories, sessions",
                {200: ("the run", _ref("RunDetail")), 404: missing[1]},
                params=[run],
                tag="benchkit",
            ),
            "delete": _op(
                "Delete a run and its cells",
                {200: ("deleted", _ANY), 404: missing[1], 409: ("running", _ERROR)},
                params=[run],
                tag="benchkit",
            ),
        },
        "/api/runs/{run_id}/cells": {
            "get": _op(
                "A page of a run's cells (filtered and sorted in SQL)",
                {
                    200: ("cells, total, limit, offset", _ref("CellPage")),
                    400: bad[1],
                    404: missing[1],
                },
                params=[run, *cell_filters],
                tag="benchkit",
            )
        },
        "/api/runs/{run_id}/cell": {
            "get": _op(
                "One cell",
                {
                    200: ("the cell", _ref("Cell")),
                    400: bad[1],
                    404: ("no such run or cell", _ERROR),
                },
                params=[
                    run,
                    ("task", "query", "task id"),
                    ("condition", "query", "condition id"),
                    ("epoch", "query", "epoch (default 0)"),
                    ("attempt", "query", "attempt (default: the latest)"),
                ],
                tag="benchkit",
            )
        },
        "/api/runs/{run_id}/task": {
            "get": _op(
                "A task's input, expected output and metadata, from the run's stored snapshot",
                {
                    200: ("the task", _ANY),
                    400: bad[1],
                    404: ("no such run or task, or the file is gone", _ERROR),
                },
                params=[run, ("task", "query", "task id")],
                tag="benchkit",
            )
        },
        "/api/runs/{run_id}/cancel": {
            "post": _op(
                "Cancel a queued or running job",
                {
                    202: ("cancelling", _ref("Accepted")),
                    404: missing[1],
                    409: ("not running", _ERROR),
                },
                params=[run],
                tag="benchkit",
            )
        },
        "/api/runs/{run_id}/resume": {
            "post": _op(
                "Resume an interrupted run: only the cells not stored run",
                {202: ("queued", _ref("Accepted")), 404: missing[1], 409: ("running", _ERROR)},
                params=[run],
                tag="benchkit",
            )
        },
        "/api/runs/{run_id}/events": {
            "get": _op(
                "Live progress as server-sent events (status, progress, end)",
                {200: ("event stream", "sse"), 404: missing[1]},
                params=[run],
                tag="benchkit",
            )
        },
        "/api/compare": {
            "get": _op(
                "Compare run b against run a, task by task",
                {200: ("the comparison", _ANY), 400: bad[1], 404: missing[1]},
                params=[
                    ("a", "query", "run A"),
                    ("b", "query", "run B"),
                    ("pair", "query", "CONDITION_A:CONDITION_B (repeatable)"),
                ],
                tag="benchkit",
            )
        },
        "/api/endpoints": {
            "get": _op(
                "The endpoints requests may name (the server's configuration)",
                {200: ("endpoints: [{name, url, has_key}]", _ANY)},
                tag="benchkit",
            )
        },
        "/api/benchmarks": {
            "get": _op(
                "Benchmarks under the root", {200: ("found and problems", _ANY)}, tag="benchkit"
            )
        },
        "/api/jobs": {"get": _op("This server's jobs", {200: ("jobs", _ANY)}, tag="benchkit")},
        "/api/tools": {
            "get": _op(
                "The installed tools: name, title, description, formats, explorer view URL",
                {200: ("tools", _ANY)},
                tag="benchkit",
            )
        },
        "/static/tools/{name}/view.js": {
            "get": _op(
                "A tool's explorer view: an ES module from the tool's package (text/javascript)",
                {200: ("the module", None), 404: ("no installed tool has that view", _ERROR)},
                params=[("name", "path", "the tool's name")],
                tag="benchkit",
            )
        },
        "/api/runs/{run_id}/matrix": {
            "get": _op(
                "The outputs matrix: a page of tasks × conditions (or epochs), filtered in SQL",
                {200: ("columns, rows, total", _ANY), 400: bad[1], 404: missing[1]},
                params=[
                    run,
                    ("by", "query", "condition (default) or epoch"),
                    ("epoch", "query", "the epoch shown with by=condition (default 0)"),
                    ("condition", "query", "the condition shown with by=epoch"),
                    ("only", "query", "failures or disagree"),
                    ("tag", "query", "a task tag"),
                    ("q", "query", "full-text search (every word; FTS5)"),
                    ("rated", "query", "yes or no"),
                    ("limit", "query", "1..500 (default 50)"),
                    ("offset", "query", "rows to skip"),
                ],
                tag="benchkit",
            )
        },
        "/api/runs/{run_id}/ratings": {
            "get": _op(
                "People's ratings of the run's cells (JSON, or a CSV / JSONL download)",
                {200: ("ratings", _ANY), 400: bad[1], 404: missing[1]},
                params=[run, ("format", "query", "json (default), csv or jsonl")],
                tag="benchkit",
            ),
            "post": _op(
                "Rate a cell (one rating per rater per cell: rating again replaces it)",
                {
                    201: ("the rating", _ANY),
                    400: bad[1],
                    404: ("no such run or cell", _ERROR),
                    415: ("not JSON", _ERROR),
                },
                body=RATE_SCHEMA,
                params=[run],
                tag="benchkit",
            ),
            "delete": _op(
                "Delete a rater's rating of a cell",
                {204: ("deleted", None), 404: ("no such run or rating", _ERROR)},
                body=UNRATE_SCHEMA,
                params=[run],
                tag="benchkit",
            ),
        },
        "/api/runs/{run_id}/rerun": {
            "post": _op(
                "Run a task (every condition) or one cell again as new attempts",
                {
                    202: ("queued", _ref("Accepted")),
                    400: bad[1],
                    404: ("no such run or cell", _ERROR),
                    409: ("running, or not re-runnable here", _ERROR),
                },
                body=RERUN_SCHEMA,
                params=[run],
                tag="benchkit",
            )
        },
        "/api/search": {
            "get": _op(
                "Full-text search over inputs, expected outputs, outputs and reasons",
                {200: ("results, total", _ANY), 400: bad[1], 404: missing[1]},
                params=[
                    ("q", "query", "the words to find"),
                    ("run", "query", "one run's id (default: every run)"),
                    ("limit", "query", "1..500 (default 50)"),
                ],
                tag="benchkit",
            )
        },
    }
    for found in tools.values():
        if found.openapi is not None:
            paths.update(copy.deepcopy(dict(found.openapi())))
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "benchkit",
            "version": __version__,
            "description": "benchkit's API over the run store, and the HTTP APIs of the "
            "installed tools (tagged with each tool's name). See docs/server.md.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": _SCHEMAS,
        },
        "paths": paths,
    }
