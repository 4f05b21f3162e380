"""The ASGI app: routes of the three tools and benchkit's own, over one store and root.

Layers, outside in: CORS (loopback origins by default, and the configured ones), the guard
(the Host check, the cross-site check and the JSON content type of every state-changing
request, then the bearer token and its scopes), then Starlette's router. Every error leaves as JSON: an :class:`ApiError` with its route family's shape, a
benchkit error as 400 with its message, anything else as 500 ``{"error": "internal
error"}`` — the traceback goes to the server's log, never to the client.
"""

from __future__ import annotations

import functools
import hmac
import logging
import os
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from benchkit.errors import BenchkitError
from benchkit.llm._endpoints import EndpointRegistry, NamedEndpoint
from benchkit.serve import _api, _codeforge, _memorybench, _skillvault, _story
from benchkit.serve._explorer import ui_routes
from benchkit.serve._http import DEFAULT_MAX_BODY, ApiError, Scrubber, dumps, json_response
from benchkit.serve._jobs import JobManager, SuiteBuilder
from benchkit.serve._openapi import openapi_document
from benchkit.serve._state import ServeState
from benchkit.store import Store

__all__ = ["create_app", "create_explorer_app"]

log = logging.getLogger("benchkit.serve")

#: Where benchkit's routes live in ``memory explore``'s app (its ``/api`` is MemoryBench's).
EXPLORER_BASE = "/benchkit"

READ_SCOPE, WRITE_SCOPE = "read:evals", "write:evals"
_READ_METHODS = ("GET", "HEAD", "OPTIONS")
#: Methods that change state: every one is checked for cross-site requests.
_WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")

#: Origins of pages served from this machine (any port): allowed by default on loopback,
#: where another local tool's web UI (skillvault's, on its own dev-server port) calls the API.
LOOPBACK_ORIGIN = re.compile(r"http://(localhost|127\.0\.0\.1|\[::1\])(:[0-9]{1,5})?")


def _tokens(token: str | None, tokens: Mapping[str, Any] | None) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    if token:
        out[token] = frozenset({"*"})
    for value, scopes in (tokens or {}).items():
        out[value] = frozenset(scopes)
    return out


class _Guard:
    """The Host check (DNS rebinding), the cross-site check of every state-changing
    request (CSRF), and bearer tokens with skillvault's scopes (``read:evals`` for reads,
    ``write:evals`` for writes, ``*`` for both)."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: Mapping[str, frozenset[str]],
        hosts: frozenset[str] | None,
        origins: frozenset[str] = frozenset(),
        loopback_origins: bool = True,
    ) -> None:
        self.app = app
        self.tokens = dict(tokens)
        self.hosts = hosts
        self.origins = origins
        self.loopback_origins = loopback_origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        if self.hosts is not None and _host(scope) not in self.hosts:
            # Without a token, a page on another site could reach a loopback server by
            # rebinding its DNS name to 127.0.0.1; its requests carry that name as Host.
            await json_response({"error": "Host not allowed"}, 421)(scope, receive, send)
            return
        if method in _WRITE_METHODS:
            refused = self._cross_site(scope)
            if refused is not None:
                await refused(scope, receive, send)
                return
        if self.tokens and method != "OPTIONS" and not _public(scope):
            problem = self._check(scope)
            if problem is not None:
                await problem(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def origin_allowed(self, origin: str, scope: Scope) -> bool:
        """The request's own origin, a configured one, or (by default) a loopback one."""
        if origin in self.origins or "*" in self.origins:
            return True
        if self.loopback_origins and LOOPBACK_ORIGIN.fullmatch(origin):
            return True
        host = _header(scope, b"host").lower()
        scheme, sep, rest = origin.lower().partition("://")
        return bool(sep) and scheme in ("http", "https") and rest == host

    def _cross_site(self, scope: Scope) -> Response | None:
        """A state-changing request a browser could send from another site is refused:
        one whose ``Origin`` is not allowed, one the browser marks ``Sec-Fetch-Site:
        cross-site`` without an allowed origin, and one without a JSON content type (an
        HTML form or a ``no-cors`` fetch cannot send ``application/json``; a DELETE
        without a body is exempt: no browser sends one cross-origin without a CORS
        preflight, which only allowed origins pass)."""
        path: str = scope.get("path", "")
        origin = _header(scope, b"origin")
        if origin:
            if not self.origin_allowed(origin, scope):
                return _refusal(
                    path, 403, "CROSS_SITE", f"requests from origin {origin} are not allowed"
                )
        elif _header(scope, b"sec-fetch-site").lower() == "cross-site":
            return _refusal(path, 403, "CROSS_SITE", "cross-site requests are not allowed")
        kind = _header(scope, b"content-type").split(";")[0].strip().lower()
        if kind != "application/json":
            bodiless = _header(scope, b"content-length") in ("", "0") and not _header(
                scope, b"transfer-encoding"
            )
            if scope["method"] != "DELETE" or not bodiless:
                return _refusal(
                    path,
                    415,
                    "UNSUPPORTED_MEDIA_TYPE",
                    "the request must be sent with Content-Type: application/json "
                    "(send {} when there is nothing to say)",
                )
        return None

    def _check(self, scope: Scope) -> Response | None:
        header = ""
        for key, value in scope.get("headers", ()):
            if key == b"authorization":
                header = value.decode("latin-1")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return json_response({"error": "Missing bearer token"}, 401)
        given = given.strip()
        scopes: frozenset[str] | None = None
        for value, granted in self.tokens.items():
            if hmac.compare_digest(value.encode(), given.encode()):
                scopes = granted
        if scopes is None:
            return json_response({"error": "Invalid token"}, 401)
        need = READ_SCOPE if scope["method"] in _READ_METHODS else WRITE_SCOPE
        if "*" not in scopes and need not in scopes:
            return json_response({"error": f"Missing permission: {need}"}, 403)
        return None


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key == name:
            text: str = value.decode("latin-1")
            return text
    return ""


def _refusal(path: str, status: int, code: str, message: str) -> Response:
    """The guard's refusal in the shape of the route family the request was for."""
    if path.startswith((_codeforge.PREFIX, EXPLORER_BASE + _codeforge.PREFIX)):
        return json_response({"error": message}, status)
    return json_response({"code": code, "error": message, "details": {}}, status)


def _public(scope: Scope) -> bool:
    """The explorer's page and static files: no data in them, and a browser must load them
    before it can ask for the token that every API call then carries; ``/health``, which
    skillvault guards with no scope either."""
    path: str = scope.get("path", "")
    return scope["method"] in ("GET", "HEAD") and (
        path in ("/", "/health") or path.startswith("/static/")
    )


#: The Host names a server without a token answers to (any port).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def _host(scope: Scope) -> str:
    for key, value in scope.get("headers", ()):
        if key == b"host":
            host: str = value.decode("latin-1").strip().lower()
            if host.startswith("["):
                return host[1 : host.find("]")] if "]" in host else host
            return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return ""


def _errors(scrub: Scrubber) -> dict[Any, Any]:
    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return exc.response()

    async def benchkit_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, BenchkitError)
        return json_response(
            {"code": "BAD_REQUEST", "error": scrub(exc.message), "details": {}}, 400
        )

    async def internal(request: Request, exc: Exception) -> Response:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return json_response({"error": "internal error"}, 500)

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        text = "not found" if status == 404 else "method not allowed" if status == 405 else "error"
        return json_response({"error": text}, status)

    return {
        ApiError: api_error,
        BenchkitError: benchkit_error,
        Exception: internal,
        404: not_found,
        405: not_found,
    }


def _state(
    store: Store | str | os.PathLike[str] | None,
    root: str | os.PathLike[str] | None,
    max_body: int,
    max_running: int,
    codeforge_datasets: str | os.PathLike[str] | None,
    endpoints: EndpointRegistry | Iterable[NamedEndpoint | str] | Mapping[str, str] | None = None,
) -> ServeState:
    from benchkit.serve._http import resolve_inside

    registry = endpoints if isinstance(endpoints, EndpointRegistry) else EndpointRegistry(endpoints)

    base = Path(os.path.realpath(root if root is not None else os.getcwd()))
    if not base.is_dir():
        raise BenchkitError(
            f"the server's root {str(base)!r} is not a directory",
            fix="pass --root DIR (an existing directory).",
        )
    chosen = store if isinstance(store, Store) else Store(store)
    builders: dict[str, SuiteBuilder] = {
        "benchmark": functools.partial(_api.build_benchmark_suite, endpoints=registry),
        "skillvault": _skillvault.build_skillvault_suite,
        "codeforge": functools.partial(_codeforge.build_codeforge_suite, endpoints=registry),
    }
    datasets = None
    if codeforge_datasets is not None:
        datasets = resolve_inside(base, os.fspath(codeforge_datasets))
    return ServeState(
        root=base,
        store=chosen,
        jobs=JobManager(chosen, base, builders, max_running=max_running),
        scrub=Scrubber(base, chosen.path),
        max_body=max_body,
        codeforge_datasets=datasets,
        endpoints=registry,
    )


def create_app(
    *,
    store: Store | str | os.PathLike[str] | None = None,
    root: str | os.PathLike[str] | None = None,
    token: str | None = None,
    tokens: Mapping[str, Any] | None = None,
    cors_origins: tuple[str, ...] = (),
    loopback_origins: bool = True,
    allowed_hosts: tuple[str, ...] | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    max_running: int = 2,
    codeforge_datasets: str | os.PathLike[str] | None = None,
    endpoints: EndpointRegistry | Iterable[NamedEndpoint | str] | Mapping[str, str] | None = None,
) -> Starlette:
    """The benchkit server as an ASGI app (Starlette), to run with uvicorn or mount.

    ``store`` is a :class:`~benchkit.store.Store` or its path (default: the default
    store); ``root`` the directory benchmark and config paths must stay inside (default:
    the working directory). ``token`` makes every request need ``Authorization: Bearer
    <token>`` (all scopes); ``tokens`` maps more tokens to their scopes (``read:evals``,
    ``write:evals``, ``*``). ``cors_origins`` are the origins whose pages may call the API
    (CORS, and the cross-site check of state-changing requests); ``loopback_origins``
    (default True) adds every ``http://localhost:*``, ``http://127.0.0.1:*`` and
    ``http://[::1]:*`` origin — ``serve`` turns it off when it binds to a non-loopback
    address. ``allowed_hosts`` are the ``Host`` names it answers to (default: without a
    token, loopback names only — a defence against DNS rebinding; with one, any).
    ``max_body`` limits request bodies (bytes); ``max_running`` runs at once
    (more wait in a queue). ``codeforge_datasets`` is CodeForge's datasets directory
    inside the root (default ``benchmarks/codeforge``). ``endpoints`` are the URLs runs
    started by requests may call and the variable holding each one's key
    (:class:`~benchkit.llm.NamedEndpoint` values, ``"NAME=URL[,key-env=VAR]"`` strings, or
    a :class:`~benchkit.llm.EndpointRegistry`): a request names one (``"endpoint":
    "NAME"``) and never gives a URL or a variable name itself (see docs/server.md).
    """
    state = _state(store, root, max_body, max_running, codeforge_datasets, endpoints)
    granted = _tokens(token, tokens)
    return _assemble(
        state,
        _routes(state, bool(granted)),
        granted,
        cors_origins,
        allowed_hosts,
        loopback_origins,
    )


def create_explorer_app(
    *,
    run_id: str,
    store: Store | str | os.PathLike[str] | None = None,
    root: str | os.PathLike[str] | None = None,
    token: str | None = None,
    loopback_origins: bool = True,
) -> Starlette:
    """MemoryBench's explorer API (``/api/data``, ``/api/runs``, ``/api/run/<id>``) for
    ``run_id``, and the web UI at ``/`` opened on that run, with benchkit's own routes under
    ``/benchkit`` — what ``python -m benchkit memory explore`` serves."""
    state = _state(store, root, DEFAULT_MAX_BODY, 1, None)
    state.extra["memorybench_run"] = run_id
    granted = _tokens(token, None)
    start = f"#/run/{quote(run_id, safe='')}"
    routes: list[BaseRoute] = [
        *_memorybench.routes(),
        *ui_routes(base=EXPLORER_BASE, start=start, auth=bool(granted)),
        Mount(
            EXPLORER_BASE,
            routes=[
                *_api.routes(),
                *_story.routes(),
                *_skillvault.routes(),
                *_codeforge.routes(),
            ],
        ),
    ]
    return _assemble(state, routes, granted, (), None, loopback_origins)


def _routes(state: ServeState, auth: bool = False) -> list[BaseRoute]:
    document = dumps(openapi_document())  # built once per app

    async def openapi(request: Request) -> Response:
        return json_response(None, raw=document)

    return [
        *ui_routes(auth=auth),
        Route("/openapi.json", openapi, methods=["GET"]),
        *_api.routes(),
        *_story.routes(),
        *_skillvault.routes(),
        *_codeforge.routes(),
        *_memorybench.routes("/memorybench"),
    ]


def _assemble(
    state: ServeState,
    routes: list[BaseRoute],
    tokens: Mapping[str, frozenset[str]],
    cors_origins: tuple[str, ...],
    allowed_hosts: tuple[str, ...] | None,
    loopback_origins: bool = True,
) -> Starlette:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(state.reader.ensure_indexes)
        async with anyio.create_task_group() as group:
            await group.start(state.jobs.serve)
            try:
                yield
            finally:
                await state.jobs.cancel_all()
                group.cancel_scope.cancel()
        state.store.close()

    middleware = []
    if cors_origins or loopback_origins:
        from starlette.middleware.cors import CORSMiddleware

        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_origin_regex=LOOPBACK_ORIGIN.pattern if loopback_origins else None,
                allow_methods=["GET", "POST", "DELETE"],
                allow_headers=["Authorization", "Content-Type"],
            )
        )
    if allowed_hosts is not None:
        hosts: frozenset[str] | None = frozenset(h.lower() for h in allowed_hosts)
    else:
        hosts = None if tokens else LOOPBACK_HOSTS
    middleware.append(
        Middleware(
            _Guard,
            tokens=tokens,
            hosts=hosts,
            origins=frozenset(cors_origins),
            loopback_origins=loopback_origins,
        )
    )
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers=_errors(state.scrub),
        lifespan=lifespan,
    )
    app.state.benchkit = state
    return app
