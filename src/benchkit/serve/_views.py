"""The installed tools as the explorer sees them: what each is, and its view of a run.

``GET /api/tools`` lists every tool found through the entry-point group ``benchkit.tools``
(benchkit's own and third parties', the same way): its name, title, description, the
formats it reads, and the URL of its explorer view or ``null``. ``GET
/static/tools/{name}/view.js`` answers that view: exactly the file the tool's
:attr:`~benchkit.tools.Tool.explorer_view` names inside its package, read with
:mod:`importlib.resources` (so it works from a wheel or a zip as from a checkout), as
``text/javascript``. Nothing of the request's path reaches the file system — the name only
picks a tool — so no path leaves a package. The views live under ``/static/`` with the
explorer's own files: public on a server with a token (they hold code, no data), and at the
server's root beside the page under ``memory explore`` too, whose API moves under
``/benchkit``. docs/explorer.md says what a view module exports.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from benchkit.registry import default_registries
from benchkit.serve_toolkit._http import ApiError, json_response
from benchkit.serve_toolkit._state import state_of
from benchkit.tools import Tool

__all__ = ["tool_json", "tool_routes", "view_url"]

#: Where a tool's explorer view is served (one route; the name picks the tool).
VIEW_ROUTE = "/static/tools/{name}/view.js"


def view_url(tool: Tool) -> str | None:
    """The path the explorer imports ``tool``'s view from, or None when it has none."""
    return VIEW_ROUTE.format(name=tool.name) if tool.explorer_view else None


def tool_json(tool: Tool) -> dict[str, Any]:
    """What ``GET /api/tools`` says of one tool."""
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "formats": sorted(tool.formats),
        "view": view_url(tool),
    }


def _tools() -> list[dict[str, Any]]:
    return [tool_json(tool) for tool in default_registries().all_tools()]


def _read_view(name: str) -> bytes | None:
    """The bytes of the view tool ``name`` declares, or None (no such tool, no view, or
    the file is missing from its package)."""
    tools = default_registries().tools
    if name not in tools:
        return None
    tool = tools.get(name)
    if not tool.explorer_view:
        return None
    try:
        found = resources.files(tool.package).joinpath(*tool.explorer_view.split("/"))
        return found.read_bytes()
    except (ImportError, OSError):
        return None


def tool_routes(base: str = "") -> list[Route]:
    """``{base}/api/tools`` and the tools' views (``/static/tools/{name}/view.js``, beside
    the explorer's page at the server's root whatever ``base`` is)."""
    views: dict[str, bytes] = {}  # read once per app: installed tools do not change under it

    async def tools(request: Request) -> Response:
        return json_response({"tools": await state_of(request).in_thread(_tools)})

    async def view(request: Request) -> Response:
        name = request.path_params["name"]
        body = views.get(name)
        if body is None:
            body = await state_of(request).in_thread(_read_view, name)
            if body is None:
                raise ApiError.bk(
                    404, "NO_VIEW", f"no installed tool {name!r} has an explorer view"
                )
            views[name] = body
        return Response(
            body,
            media_type="text/javascript; charset=utf-8",
            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
        )

    return [
        Route(f"{base}/api/tools", tools, methods=["GET"]),
        Route(VIEW_ROUTE, view, methods=["GET"]),
    ]
