"""benchkit's server: one ASGI app over the run store (extra ``benchkit[serve]``).

:func:`create_app` serves benchkit's own API (runs, cells, comparisons, jobs with live
progress) and every installed tool's routes (``Tool.routes``); :func:`create_explorer_app`
serves one run's tool's own routes with the explorer. Mount
either in your own ASGI server, or run ``python -m benchkit serve``. See docs/server.md.

Starlette and uvicorn are imported when these are first used, never by ``import benchkit``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr

if TYPE_CHECKING:
    from benchkit.serve._app import create_app, create_explorer_app

__all__ = ["create_app", "create_explorer_app"]

_LAZY = {
    "create_app": "benchkit.serve._app",
    "create_explorer_app": "benchkit.serve._app",
}

__getattr__ = lazy_getattr(__name__, _LAZY)
