"""What a tool's server module shares with benchkit's server — the toolkit layer below the
tool packages (as :mod:`benchkit.cli_toolkit` is for their commands).

A tool serves its original's HTTP API and starts runs through the server's job queue by
declaring, in its ``Tool``, a :class:`ToolRoutes` (``routes="pkg._serve:ROUTES"``) and
:class:`JobBuilder` objects (``jobs={"kind": "pkg._serve:JOB"}``). Those modules import
this toolkit and Starlette; the tool package itself imports neither, so ``import
benchkit`` and listing the tools stay free of the server. Shapes and rules:
docs/server.md and docs/plugins.md.

Names are imported on first use: a command module may import :func:`serve_app` or
:func:`require_serve` without Starlette installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr

if TYPE_CHECKING:
    from benchkit.serve_toolkit._http import (
        ApiError,
        PathError,
        check_body,
        json_response,
        parse_json,
        read_body,
        read_json,
        resolve_inside,
    )
    from benchkit.serve_toolkit._jobs import Job, JobBuilder, JobContext, QueueFull, now
    from benchkit.serve_toolkit._openapi import ANY, ARRAY, ERROR, RUN_ID, operation
    from benchkit.serve_toolkit._routes import ToolRoutes
    from benchkit.serve_toolkit._run import (
        TOKEN_ENV,
        is_loopback,
        require_serve,
        serve_app,
        token_for,
    )
    from benchkit.serve_toolkit._start import (
        ENDPOINT_FIX,
        bad_input,
        chat_endpoints,
        check_spec,
        endpoint_by_url,
        path_error,
        start_job,
    )
    from benchkit.serve_toolkit._state import ServeState, query_int, state_of

__all__ = [
    "ANY",
    "ARRAY",
    "ENDPOINT_FIX",
    "ERROR",
    "RUN_ID",
    "TOKEN_ENV",
    "ApiError",
    "Job",
    "JobBuilder",
    "JobContext",
    "PathError",
    "QueueFull",
    "ServeState",
    "ToolRoutes",
    "bad_input",
    "chat_endpoints",
    "check_body",
    "check_spec",
    "endpoint_by_url",
    "is_loopback",
    "json_response",
    "now",
    "operation",
    "parse_json",
    "path_error",
    "query_int",
    "read_body",
    "read_json",
    "require_serve",
    "resolve_inside",
    "serve_app",
    "start_job",
    "state_of",
    "token_for",
]

_HTTP = "benchkit.serve_toolkit._http"
_JOBS = "benchkit.serve_toolkit._jobs"
_OPENAPI = "benchkit.serve_toolkit._openapi"
_RUN = "benchkit.serve_toolkit._run"
_START = "benchkit.serve_toolkit._start"
_STATE = "benchkit.serve_toolkit._state"

_LAZY = {
    "ApiError": _HTTP,
    "PathError": _HTTP,
    "check_body": _HTTP,
    "json_response": _HTTP,
    "parse_json": _HTTP,
    "read_body": _HTTP,
    "read_json": _HTTP,
    "resolve_inside": _HTTP,
    "Job": _JOBS,
    "JobBuilder": _JOBS,
    "JobContext": _JOBS,
    "QueueFull": _JOBS,
    "now": _JOBS,
    "ToolRoutes": "benchkit.serve_toolkit._routes",
    "ANY": _OPENAPI,
    "ARRAY": _OPENAPI,
    "ERROR": _OPENAPI,
    "RUN_ID": _OPENAPI,
    "operation": _OPENAPI,
    "TOKEN_ENV": _RUN,
    "is_loopback": _RUN,
    "require_serve": _RUN,
    "serve_app": _RUN,
    "token_for": _RUN,
    "ENDPOINT_FIX": _START,
    "bad_input": _START,
    "chat_endpoints": _START,
    "check_spec": _START,
    "endpoint_by_url": _START,
    "path_error": _START,
    "start_job": _START,
    "ServeState": _STATE,
    "query_int": _STATE,
    "state_of": _STATE,
}

__getattr__ = lazy_getattr(__name__, _LAZY)
