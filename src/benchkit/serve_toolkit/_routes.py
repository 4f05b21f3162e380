"""What a tool serves: its routes (its original's HTTP API, say), described for the
OpenAPI document, and how the server treats them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
from starlette.routing import BaseRoute

from benchkit.serve_toolkit._state import ServeState

__all__ = ["ToolRoutes"]


@attrs.frozen(kw_only=True)
class ToolRoutes:
    """A tool's routes, named by ``Tool.routes`` (``"module:ROUTES"``) and imported when
    the server is built — so only that module imports Starlette, never the tool package.

    >>> ToolRoutes(routes=lambda state: []).plain_errors
    ()
    """

    routes: Callable[[ServeState], list[BaseRoute]]
    """The routes the tool serves in ``create_app``'s server, beside benchkit's ``/api``."""
    openapi: Callable[[], Mapping[str, Any]] | None = None
    """The OpenAPI path items of :attr:`routes` (``{path: {method: operation}}``), each
    operation tagged with the tool's name; the server's ``/openapi.json`` joins them."""
    plain_errors: tuple[str, ...] = ()
    """Path prefixes whose refusals (a cross-site request, a bad content type) answer
    ``{"error": message}``, the shape the tool's original API uses, not benchkit's
    ``{code, error, details}``."""
    public: tuple[str, ...] = ()
    """Paths a ``GET`` reaches without the token (a health check whose original needs no
    scope); they must answer no data."""
    standalone: Callable[[ServeState], list[BaseRoute]] | None = None
    """The routes at the root of a server of the tool's own for one run
    (``create_explorer_app``, the server's state's ``run_id``): the original's paths, with
    benchkit's routes under ``/benchkit``. None: the tool has no such server."""
