"""The OpenAPI 3.1 description served at ``/openapi.json``, built from the same JSON Schemas
that validate request bodies (so the document cannot drift from the validation)."""

from __future__ import annotations

from typing import Any

from benchkit._version import __version__

__all__ = ["openapi_document"]

_ERROR = {"$ref": "#/components/schemas/Error"}
_ANY = {"type": "object"}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


_NULLABLE_STR = {"type": ["string", "null"]}
_JOB = {
    "type": "object",
    "required": ["run_id", "kind", "status", "progress"],
    "properties": {
        "run_id": {"type": "string"},
        "kind": {"enum": ["start", "resume", "rerun"]},
        "route": {"enum": ["benchmark", "skillvault", "codeforge"]},
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
_ARRAY = {"type": "array", "items": {"type": "object"}}


def _op(
    summary: str,
    responses: dict[int, tuple[str, Any]],
    *,
    body: Any | None = None,
    params: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    tag: str,
) -> dict[str, Any]:
    operation: dict[str, Any] = {"summary": summary, "tags": [tag], "responses": {}}
    if params:
        operation["parameters"] = [
            {
                "name": name,
                "in": where,
                "required": where == "path",
                "schema": {"type": "string"},
                "description": text,
            }
            for name, where, text in params
        ]
    if body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": body}},
        }
    for status, (text, schema) in responses.items():
        entry: dict[str, Any] = {"description": text}
        if schema is not None:
            kind = "text/event-stream" if schema == "sse" else "application/json"
            entry["content"] = {kind: {"schema": {"type": "string"} if schema == "sse" else schema}}
        operation["responses"][str(status)] = entry
    return operation


def openapi_document() -> dict[str, Any]:
    """The whole document (a fresh dict on every call)."""
    from benchkit.serve._api import START_SCHEMA
    from benchkit.serve._skillvault import POST_RUN_SCHEMA
    from benchkit.serve._story import RATE_SCHEMA, RERUN_SCHEMA, UNRATE_SCHEMA

    run = ("run_id", "path", "the run's id")
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
                body=START_SCHEMA,
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
        "/health": {
            "get": _op(
                "skillvault: {ok: true} (what its web UI asks first)",
                {200: ("ok", _ANY)},
                tag="skillvault",
            )
        },
        "/bench/configs": {
            "get": _op(
                "skillvault: bench configs under the root",
                {200: ("configs", _ANY)},
                tag="skillvault",
            )
        },
        "/bench/runs": {
            "get": _op(
                "skillvault: saved runs (index entries)",
                {200: ("runs", _ANY)},
                params=[
                    ("limit", "query", "read as JavaScript's Number(), then truncated; default 25")
                ],
                tag="skillvault",
            ),
            "post": _op(
                "skillvault: run a config and wait for it",
                {
                    200: ("runId, runPath, run, report, saved", _ANY),
                    400: (
                        "BENCH_CONFIG_PATH_INVALID, BENCH_CONFIG_INVALID, BENCH_CONFIG_PARSE_ERROR",
                        _ERROR,
                    ),
                    404: ("BENCH_CONFIG_NOT_FOUND", _ERROR),
                },
                body=POST_RUN_SCHEMA,
                tag="skillvault",
            ),
        },
        "/bench/runs/{run_id}": {
            "get": _op(
                "skillvault: a saved run (skillvault.bench.run.v1), as `bench run --out` wrote it",
                {200: ("the run", _ANY), 404: ("BENCH_RUN_NOT_FOUND", _ERROR)},
                params=[run],
                tag="skillvault",
            )
        },
        "/bench/runs/{run_id}/report": {
            "get": _op(
                "skillvault: the report (skillvault.bench.report.v1) of a saved run",
                {200: ("the report", _ANY), 404: ("BENCH_RUN_NOT_FOUND", _ERROR)},
                params=[run],
                tag="skillvault",
            )
        },
    }
    cf = "/api/v1/benchmarks"
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
    paths.update(
        {
            f"{cf}/runs": {
                "get": _op("CodeForge: runs", {200: ("Run list", _ARRAY)}, tag="codeforge"),
                "post": _op(
                    "CodeForge: start a run (really runs it)",
                    {201: ("Run, status running", _ANY), 400: ("{error}", _ERROR)},
                    body=create,
                    tag="codeforge",
                ),
            },
            f"{cf}/runs/{{run_id}}": {
                "get": _op(
                    "CodeForge: a Run",
                    {200: ("Run", _ANY), 404: ("{error}", _ERROR)},
                    params=[run],
                    tag="codeforge",
                ),
                "delete": _op(
                    "CodeForge: delete a run",
                    {204: ("deleted", None), 404: ("{error}", _ERROR)},
                    params=[run],
                    tag="codeforge",
                ),
            },
            f"{cf}/runs/{{run_id}}/results": {
                "get": _op(
                    "CodeForge: a run's Results",
                    {200: ("Result list", _ARRAY), 404: ("{error}", _ERROR)},
                    params=[run],
                    tag="codeforge",
                )
            },
            f"{cf}/compare": {
                "post": _op(
                    "CodeForge: two runs and their results",
                    {200: ("run_a, run_b, results_a, results_b", _ANY), 400: ("{error}", _ERROR)},
                    body={
                        "type": "object",
                        "required": ["run_id_a", "run_id_b"],
                        "properties": {
                            "run_id_a": {"type": "string"},
                            "run_id_b": {"type": "string"},
                        },
                    },
                    tag="codeforge",
                )
            },
            f"{cf}/datasets": {
                "get": _op(
                    "CodeForge: datasets", {200: ("DatasetInfo list", _ARRAY)}, tag="codeforge"
                )
            },
            f"{cf}/metrics": {
                "get": _op(
                    "CodeForge: the metric names a run may ask for (benchkit's addition)",
                    {200: ("metric names", _ARRAY)},
                    tag="codeforge",
                )
            },
            "/memorybench/api/data": {
                "get": _op(
                    "MemoryBench explorer: the current run",
                    {200: ("data", _ANY)},
                    tag="memorybench",
                )
            },
            "/memorybench/api/runs": {
                "get": _op("MemoryBench explorer: runs", {200: ("runs", _ARRAY)}, tag="memorybench")
            },
            "/memorybench/api/run/{run_id}": {
                "get": _op(
                    "MemoryBench explorer: switch run",
                    {200: ("data", _ANY), 404: ("{error}", _ERROR)},
                    params=[run],
                    tag="memorybench",
                )
            },
        }
    )
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "benchkit",
            "version": __version__,
            "description": "benchkit's API over the run store, and the HTTP APIs of "
            "skillvault, CodeForge and MemoryBench's explorer. See docs/server.md.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": _SCHEMAS,
        },
        "paths": paths,
    }
