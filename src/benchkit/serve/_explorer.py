"""The explorer: the web UI's page and files, and the one route only the UI needs.

The UI is static HTML, CSS and JavaScript in ``serve/static/`` (package data; no build
step, nothing fetched from another host). ``GET /`` answers its page with two values filled
in: where benchkit's routes are (at ``/`` on the main server, under ``/benchkit`` beside a
tool's own routes in a server of one run, whose ``/api/runs`` may differ from benchkit's)
and the screen to open first (that run's). The
stylesheet shared with the HTML report comes from :mod:`benchkit.reports.html`.

``GET /api/runs/{id}/task?task=ID`` answers a task's input, expected output and metadata
from the snapshot the store took when the run was prepared (``"source": "store"``) — for
every run, whatever its origin (Python, any format, Ray, a file that changed or moved
since). A run stored before the store kept tasks (schema < 5) falls back to the benchmark
file it came from, when it still lies inside the root (``"source": "file"``).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from benchkit.errors import BenchkitError
from benchkit.serve._runs import BENCHMARK, load_benchmark
from benchkit.serve_toolkit import ApiError, PathError, ServeState, json_response, state_of

__all__ = ["task_json", "ui_routes"]

STATIC = Path(__file__).with_name("static")
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}
_FILES = ("app.js", "app.css")
#: Suites read for the task route, by run id (a run's source does not change under it).
_SUITES = "explorer_suites"
_MAX_SUITES = 16


def _page(base: str, start: str, auth: bool) -> str:
    text = (STATIC / "index.html").read_text(encoding="utf-8")
    for key, value in (("BASE", base), ("START", start), ("AUTH", "token" if auth else "")):
        text = text.replace("{{" + key + "}}", html.escape(value))
    return text


def ui_routes(*, base: str = "", start: str = "", auth: bool = False) -> list[Route]:
    """``/`` and ``/static/<file>``: the explorer's page and its files; ``base`` is the
    prefix of benchkit's routes, ``start`` the screen (a ``#/...`` link) opened first;
    ``auth`` says the API wants a bearer token (the page asks for it)."""
    page = _page(base, start, auth)
    files: dict[str, tuple[bytes, str]] = {
        name: ((STATIC / name).read_bytes(), _TYPES[Path(name).suffix]) for name in _FILES
    }
    from benchkit.reports.html import stylesheet

    files["base.css"] = (stylesheet().encode("utf-8"), "text/css")

    async def index(request: Request) -> Response:
        return HTMLResponse(page, headers={"Cache-Control": "no-cache"})

    async def static(request: Request) -> Response:
        found = files.get(request.path_params["name"])
        if found is None:
            return json_response({"error": "not found"}, 404)
        body, kind = found
        return Response(
            body, media_type=f"{kind}; charset=utf-8", headers={"Cache-Control": "no-cache"}
        )

    async def task(request: Request) -> Response:
        return await _task(request)

    return [
        Route("/", index, methods=["GET"]),
        Route("/static/{name}", static, methods=["GET"]),
        Route(f"{base}/api/runs/{{run_id}}/task", task, methods=["GET"]),
    ]


def task_json(task: Any) -> dict[str, Any]:
    """What the cell detail shows of a task (everything but how it is judged)."""
    from benchkit.serde import unstructure
    from benchkit.store._story import TASK_FIELDS

    data: dict[str, Any] = unstructure(task)
    return {key: data.get(key) for key in TASK_FIELDS}


def _benchmark(state: ServeState, run_id: str, spec: dict[str, Any]) -> Any:
    """The benchmark of a run stored before its tasks were (schema < 5), read from its
    file: only the tasks are needed, so a file that declares no conditions (a format whose
    benchmarks take theirs from the run request) is read as it is."""
    cache: dict[str, Any] = state.extra.setdefault(_SUITES, {})
    if run_id not in cache:
        if spec.get("route") == BENCHMARK:
            suite = load_benchmark(spec, state.jobs.context, state.jobs.extensions)
        else:
            if state.jobs.builder(spec) is None:
                raise BenchkitError(f"run {run_id!r} was not made from a benchmark file")
            suite = state.jobs.suite(spec)
        if len(cache) >= _MAX_SUITES:
            cache.pop(next(iter(cache)))
        cache[run_id] = suite.benchmark
    return cache[run_id]


async def _task(request: Request) -> Response:
    from benchkit.serve._api import row_of, spec_for_resume

    state = state_of(request)
    run_id = request.path_params["run_id"]
    task_id = request.query_params.get("task")
    if not task_id:
        raise ApiError.bk(400, "INVALID_QUERY", "task is required", field="task")
    row = await row_of(state, run_id)
    stored = await state.in_thread(state.reader.task, run_id, task_id)
    if stored is not None:  # the snapshot taken when the run was prepared
        return json_response({**stored, "source": "store"})
    try:
        spec = spec_for_resume(state, row)
    except ApiError:
        raise ApiError.bk(
            404,
            "TASK_UNAVAILABLE",
            f"run {run_id!r} stored no task {task_id!r} and has no benchmark file inside the root",
        ) from None
    try:
        bench = await state.in_thread(_benchmark, state, run_id, spec)
    except (BenchkitError, PathError) as exc:
        message = exc.message if isinstance(exc, BenchkitError) else str(exc)
        raise ApiError.bk(
            404,
            "TASK_UNAVAILABLE",
            f"the run's benchmark no longer loads: {state.scrub(message)}",
        ) from None

    def find() -> Any:
        for task in bench.iter_tasks():
            if task.id == task_id:
                return task
        return None

    found = await state.in_thread(find)
    if found is None:
        raise ApiError.bk(404, "TASK_NOT_FOUND", f"the run's benchmark has no task {task_id!r}")
    return json_response({**task_json(found), "source": "file"})
