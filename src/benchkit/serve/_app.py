"""The ASGI app: benchkit's routes and every installed tool's, over one store and root.

Layers, outside in: CORS (loopback origins by default, and the configured ones), the guard
(the Host check, the origin check and the JSON content type of every state-changing
request — only the server's own origin and the allowed ones may change anything —, then
the bearer token and its scopes), then Starlette's router. Every error leaves as JSON: an :class:`ApiError` with its route family's shape, a
benchkit error as 400 with its message, anything else as 500 ``{"error": "internal
error"}`` — the traceback goes to the server's log, never to the client.
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import traceback
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import anyio.to_thread
import attrs
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from benchkit import _secrets
from benchkit.errors import BenchkitError, ConfigError, RegistryError
from benchkit.llm._endpoints import EndpointRegistry, NamedEndpoint
from benchkit.registry import default_registries
from benchkit.serve import _api, _story
from benchkit.serve._cache import close_cache
from benchkit.serve._explorer import ui_routes
from benchkit.serve._openapi import openapi_document
from benchkit.serve._runs import JobKinds, warn_tool
from benchkit.serve._views import tool_routes
from benchkit.serve_toolkit import JobContext, ToolRoutes, resolve_inside
from benchkit.serve_toolkit._http import DEFAULT_MAX_BODY, ApiError, Scrubber, dumps, json_response
from benchkit.serve_toolkit._jobs import JobManager
from benchkit.serve_toolkit._state import ServeState
from benchkit.store import Store
from benchkit.store._story import MAX_RATERS_PER_CELL
from benchkit.tools import ServerSetting, Tool

__all__ = ["create_app", "create_explorer_app"]

log = logging.getLogger("benchkit.serve")

#: Where benchkit's routes live in a tool's own server of one run (``create_explorer_app``:
#: its root is the tool's, whose ``/api`` may differ from benchkit's).
EXPLORER_BASE = "/benchkit"

READ_SCOPE, WRITE_SCOPE = "read:evals", "write:evals"
_READ_METHODS = ("GET", "HEAD", "OPTIONS")
#: Methods that change state: every one is checked for cross-site requests.
_WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")

#: Origins of pages served from this machine (any port): on loopback, by default, they may
#: read through the API (CORS); changing state takes the server's own origin or an allowed
#: one (``--allow-origin``), since any local page — a dev server, a notebook's output — is
#: such an origin.
LOOPBACK_ORIGIN = re.compile(r"http://(localhost|127\.0\.0\.1|\[::1\])(:[0-9]{1,5})?")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normal_origin(origin: str) -> str | None:
    """``scheme://host:port`` of an origin, lowercased with its port always written (None
    when it is not an http(s) origin): the form two origins are compared in."""
    scheme, sep, rest = origin.strip().lower().partition("://")
    if not sep or scheme not in _DEFAULT_PORTS or not rest or "/" in rest.rstrip("/"):
        return None
    rest = rest.rstrip("/")
    host, port = rest, str(_DEFAULT_PORTS[scheme])
    if rest.startswith("["):
        end = rest.find("]")
        if end < 0:
            return None
        host, tail = rest[: end + 1], rest[end + 1 :]
        if tail:
            if not tail.startswith(":") or not _digits(tail[1:]):
                return None
            port = tail[1:]
    elif ":" in rest:
        host, _, port = rest.rpartition(":")
        if not _digits(port):
            return None
    if not host or "@" in host:
        return None
    return f"{scheme}://{host}:{int(port)}"


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 5


def _written(origin: str) -> set[str]:
    """The ways a browser may write a normalised origin in its ``Origin`` header (a
    default port is left out), for the CORS middleware, which compares strings."""
    if origin == "*":
        return {origin}
    scheme, _, rest = origin.partition("://")
    host, _, port = rest.rpartition(":")
    ways = {origin}
    if _DEFAULT_PORTS.get(scheme) == int(port):
        ways.add(f"{scheme}://{host}")
    return ways


def check_origins(origins: Iterable[str]) -> frozenset[str]:
    """The allowed origins, normalised; ConfigError for one that is not an origin."""
    found: set[str] = set()
    for origin in origins:
        normal = "*" if origin == "*" else normal_origin(origin)
        if normal is None:
            raise ConfigError(
                f"{origin!r} is not an origin",
                fix="give scheme, host and port, e.g. --allow-origin http://localhost:5173.",
            )
        found.add(normal)
    return frozenset(found)


def _tokens(token: str | None, tokens: Mapping[str, Any] | None) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    if token:
        out[token] = frozenset({"*"})
    for value, scopes in (tokens or {}).items():
        out[value] = frozenset(scopes)
    return out


class _Guard:
    """The Host check (DNS rebinding), the cross-site check of every state-changing
    request (CSRF), and bearer tokens with scopes (``read:evals`` for reads,
    ``write:evals`` for writes, ``*`` for both)."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: Mapping[str, frozenset[str]],
        hosts: frozenset[str] | None,
        origins: frozenset[str] = frozenset(),
        plain_errors: tuple[str, ...] = (),
        public: frozenset[str] = frozenset(),
    ) -> None:
        self.app = app
        self.tokens = dict(tokens)
        self.hosts = hosts
        self.origins = origins  # normalised (normal_origin): allowed to change state
        self.plain_errors = plain_errors
        self.public = public

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
        if self.tokens and method != "OPTIONS" and not self._public(scope):
            problem = self._check(scope)
            if problem is not None:
                await problem(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def origin_allowed(self, origin: str, scope: Scope) -> bool:
        """The server's own origin — scheme, host and port exactly — or an allowed one."""
        normal = normal_origin(origin)
        if normal is None:
            return False
        if normal in self.origins or "*" in self.origins:
            return True
        own = normal_origin(f"{scope.get('scheme', 'http')}://{_header(scope, b'host')}")
        return normal == own

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
                shown = origin[:200]
                return self._refusal(
                    path,
                    403,
                    "CROSS_SITE",
                    f"requests from origin {shown} are not allowed: this server takes "
                    "requests that change anything from its own origin only. To allow "
                    f"{shown}, start it with --allow-origin {shown} "
                    "(create_app(allow_origins=...))",
                )
        elif _header(scope, b"sec-fetch-site").lower() == "cross-site":
            return self._refusal(path, 403, "CROSS_SITE", "cross-site requests are not allowed")
        kind = _header(scope, b"content-type").split(";")[0].strip().lower()
        if kind != "application/json":
            bodiless = _header(scope, b"content-length") in ("", "0") and not _header(
                scope, b"transfer-encoding"
            )
            if scope["method"] != "DELETE" or not bodiless:
                return self._refusal(
                    path,
                    415,
                    "UNSUPPORTED_MEDIA_TYPE",
                    "the request must be sent with Content-Type: application/json "
                    "(send {} when there is nothing to say)",
                )
        return None

    def _refusal(self, path: str, status: int, code: str, message: str) -> Response:
        """The guard's refusal in the shape of the route family the request was for: a
        tool's original shape (``ToolRoutes.plain_errors``), else benchkit's."""
        if path.startswith(self.plain_errors):
            return json_response({"error": message}, status)
        return json_response({"code": code, "error": message, "details": {}}, status)

    def _public(self, scope: Scope) -> bool:
        """The explorer's page and static files: no data in them, and a browser must load
        them before it can ask for the token that every API call then carries; and the
        tools' public paths (``ToolRoutes.public``: a health check)."""
        path: str = scope.get("path", "")
        return scope["method"] in ("GET", "HEAD") and (
            path == "/" or path in self.public or path.startswith("/static/")
        )

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
        trace = "".join(traceback.format_exception(exc))
        log.error("%s %s failed: %s", request.method, request.url.path, scrub(trace))
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


def _tool_routes(tools: list[Tool]) -> dict[str, ToolRoutes]:
    """Each tool's :class:`ToolRoutes` (imported now: the server is being built); one that
    cannot be imported or is not a ToolRoutes is left out with a warning."""
    found: dict[str, ToolRoutes] = {}
    for tool in tools:
        if tool.routes is None:
            continue
        try:
            routes = tool.load(tool.routes)
        except RegistryError as exc:
            warn_tool(tool, f"its routes are not served: {exc.message}")
            continue
        if not isinstance(routes, ToolRoutes):
            warn_tool(
                tool,
                f"its routes are not served: {tool.routes!r} is {type(routes).__name__!r}, "
                "not a benchkit.serve_toolkit.ToolRoutes",
            )
            continue
        found[tool.name] = routes
    return found


def _route_keys(routes: Iterable[BaseRoute]) -> set[tuple[str, str]]:
    """``(path, method)`` of each route (a mount: its path, any method)."""
    keys: set[tuple[str, str]] = set()
    for route in routes:
        path = str(getattr(route, "path", ""))
        methods = getattr(route, "methods", None) if isinstance(route, Route) else None
        keys.update((path, m) for m in (methods or {"*"}) if m != "HEAD")
    return keys


def _served(
    state: ServeState, tools: dict[str, ToolRoutes], own: list[BaseRoute]
) -> dict[str, list[BaseRoute]]:
    """The routes each tool serves in ``state``'s server. A tool whose routes cannot be
    built, or that serves a path (and method) benchkit or another tool serves, is left out
    with a warning (of two third-party tools, both; a built-in tool keeps its paths)."""
    built: dict[str, list[BaseRoute]] = {}
    by_name = {tool.name: tool for tool in default_registries().all_tools()}
    for name, found in tools.items():
        try:
            built[name] = list(found.routes(state))
        except Exception as exc:  # a plug-in's routes may fail in any way
            warn_tool(by_name[name], f"its routes are not served: {type(exc).__name__}: {exc}")
    taken = dict.fromkeys(_route_keys(own), "benchkit's own")
    owners: dict[tuple[str, str], list[str]] = {}
    for name, routes in built.items():
        for key in _route_keys(routes):
            owners.setdefault(key, []).append(name)
    refused: dict[str, str] = {}
    tools_registry = default_registries().tools
    for key, names in sorted(owners.items()):
        builtin = [n for n in names if tools_registry.is_builtin(n)]
        for name in names:
            others = [f"tool {o!r}'s" for o in names if o != name]
            if key in taken:
                refused.setdefault(name, f"{key[1]} {key[0]} is {taken[key]}")
            elif others and not (builtin and name in builtin):
                refused.setdefault(name, f"{key[1]} {key[0]} is also {' and '.join(others)}")
    for name, why in refused.items():
        warn_tool(by_name[name], f"its routes are not served: the route {why}")
        del built[name]
    return built


def _declared_settings(tools: list[Tool]) -> dict[str, ServerSetting]:
    """The settings the tools' routes take, by name (``create_app(NAME=...)``; discovery
    keeps two tools from declaring one)."""
    return {setting.name: setting for tool in tools for setting in tool.server_settings}


def _settings(tools: list[Tool], given: Mapping[str, Any], root: Path) -> dict[str, Any]:
    """The tools' settings as given (checked against what they declare; a path resolved
    inside the root)."""
    declared = _declared_settings(tools)
    out: dict[str, Any] = {}
    for name, value in given.items():
        setting = declared.get(name)
        if setting is None:
            known = ", ".join(sorted(declared)) or "none"
            raise ConfigError(
                f"create_app() got the setting {name!r}, which no installed tool takes",
                fix=f"give one of the tools' server settings ({known}), or install the "
                "tool that takes it.",
            )
        if value is None:
            continue
        out[name] = resolve_inside(root, os.fspath(value)) if setting.path else value
    return out


@attrs.frozen
class _Server:
    """What one app is built from: its state, the job kinds, the tools' routes."""

    state: ServeState
    kinds: JobKinds
    tools: dict[str, ToolRoutes]
    #: The routes each tool in :attr:`tools` serves in this server (built once).
    served: dict[str, list[BaseRoute]]


def _state(
    store: Store | str | os.PathLike[str] | None,
    root: str | os.PathLike[str] | None,
    max_body: int,
    max_running: int,
    settings: Mapping[str, Any],
    endpoints: EndpointRegistry | Iterable[NamedEndpoint | str] | Mapping[str, str] | None = None,
) -> _Server:
    registry = endpoints if isinstance(endpoints, EndpointRegistry) else EndpointRegistry(endpoints)

    base = Path(os.path.realpath(root if root is not None else os.getcwd()))
    if not base.is_dir():
        raise BenchkitError(
            f"the server's root {str(base)!r} is not a directory",
            fix="pass --root DIR (an existing directory).",
        )
    tools = default_registries().all_tools()
    resolved = _settings(tools, settings, base)
    kinds = JobKinds.of(tools)
    chosen = store if isinstance(store, Store) else Store(store)
    context = JobContext(root=base, endpoints=registry, settings=resolved)
    state = ServeState(
        root=base,
        store=chosen,
        jobs=JobManager(
            chosen,
            context,
            kinds.builders(),
            extensions=kinds.extensions,
            max_running=max_running,
        ),
        scrub=Scrubber(base, chosen.path),
        max_body=max_body,
        settings=resolved,
        endpoints=registry,
    )
    found = _tool_routes(tools)
    own = [*ui_routes(), *tool_routes(), Route("/openapi.json", _api.routes, methods=["GET"])]
    served = _served(state, found, [*own, *_api.routes(), *_story.routes()])
    return _Server(state, kinds, {n: r for n, r in found.items() if n in served}, served)


def create_app(
    *,
    store: Store | str | os.PathLike[str] | None = None,
    root: str | os.PathLike[str] | None = None,
    token: str | None = None,
    tokens: Mapping[str, Any] | None = None,
    allow_origins: tuple[str, ...] = (),
    cors_origins: tuple[str, ...] = (),
    loopback_origins: bool = True,
    allowed_hosts: tuple[str, ...] | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    max_running: int = 2,
    endpoints: EndpointRegistry | Iterable[NamedEndpoint | str] | Mapping[str, str] | None = None,
    max_raters_per_cell: int = MAX_RATERS_PER_CELL,
    ratings_per_minute: int = _story.RATINGS_PER_MINUTE,
    **settings: Any,
) -> Starlette:
    """The benchkit server as an ASGI app (Starlette), to run with uvicorn or mount.

    ``store`` is a :class:`~benchkit.store.Store` or its path (default: the default
    store); ``root`` the directory benchmark and config paths must stay inside (default:
    the working directory). ``token`` makes every request need ``Authorization: Bearer
    <token>`` (all scopes); ``tokens`` maps more tokens to their scopes (``read:evals``,
    ``write:evals``, ``*``). A request that changes state (POST, PUT, PATCH, DELETE) is
    taken from the server's own origin — scheme, host and port — and from
    ``allow_origins`` (``serve --allow-origin``; ``cors_origins`` is the same list under its
    earlier name) only: pages of those origins may also read through the API (CORS).
    ``loopback_origins`` (default True) lets pages of every ``http://localhost:*``,
    ``http://127.0.0.1:*`` and ``http://[::1]:*`` origin read (never change) — ``serve``
    turns it off when it binds to a non-loopback address. ``allowed_hosts`` are the ``Host`` names it answers to (default: without a
    token, loopback names only — a defence against DNS rebinding; with one, any).
    ``max_body`` limits request bodies (bytes); ``max_running`` runs at once
    (more wait in a queue). ``endpoints`` are the URLs runs
    started by requests may call and the variable holding each one's key
    (:class:`~benchkit.llm.NamedEndpoint` values, ``"NAME=URL[,key-env=VAR]"`` strings, or
    a :class:`~benchkit.llm.EndpointRegistry`): a request names one (``"endpoint":
    "NAME"``) and never gives a URL or a variable name itself (see docs/server.md).
    ``max_raters_per_cell`` and ``ratings_per_minute`` bound the ratings a cell keeps and
    one client may post in a minute.

    ``settings`` are the installed tools' server settings (``Tool.server_settings``, e.g.
    a tool's datasets directory inside the root); a name no
    tool declares is a ConfigError.

    Every installed tool's routes are served (``Tool.routes``), and ``POST /api/runs``
    starts every kind of job the tools declare (``Tool.jobs``).
    """
    allowed = check_origins((*allow_origins, *cors_origins))
    server = _state(store, root, max_body, max_running, settings, endpoints)
    server.state.extra["benchkit.ratings"] = _story.RatingGate(
        max_raters_per_cell, ratings_per_minute
    )
    granted = _tokens(token, tokens)
    _secrets.add(*granted)  # the server's tokens are redacted wherever benchkit shows text
    return _assemble(
        server,
        _routes(server, bool(granted)),
        granted,
        allowed,
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
    tool: str | None = None,
) -> Starlette:
    """The server of one run: its tool's own routes at the root (``ToolRoutes.standalone``:
    the original's explorer API, say), and the web UI at ``/`` opened on that run, with
    benchkit's routes under ``/benchkit`` — what a tool's own server command
    serves. ``tool`` names the tool (default: the tool whose format the stored run was
    loaded from); a tool with no server of its own is a ConfigError."""
    server = _state(store, root, DEFAULT_MAX_BODY, 1, {})
    state = server.state
    state.run_id = run_id
    name = tool if tool is not None else _tool_of_run(state, run_id)
    found = server.tools.get(name) if name is not None else None
    if found is None or found.standalone is None:
        raise ConfigError(
            f"run {run_id!r}: its tool ({name or 'unknown'}) serves no explorer of its own",
            fix="open the run in benchkit's explorer instead: python -m benchkit view RUN.",
        )
    granted = _tokens(token, None)
    start = f"#/run/{quote(run_id, safe='')}"
    routes: list[BaseRoute] = [
        *found.standalone(state),
        *ui_routes(base=EXPLORER_BASE, start=start, auth=bool(granted)),
        *tool_routes(base=EXPLORER_BASE),
        Mount(EXPLORER_BASE, routes=_benchkit_routes(server, but=name)),
    ]
    return _assemble(server, routes, granted, frozenset(), None, loopback_origins)


def _tool_of_run(state: ServeState, run_id: str) -> str | None:
    """The tool whose format the stored run was loaded from."""
    found = state.reader.run(run_id).source_format
    for tool in default_registries().all_tools():
        if found in tool.formats:
            return tool.name
    return None


def _benchkit_routes(server: _Server, but: str | None = None) -> list[BaseRoute]:
    """benchkit's own API and every tool's routes (but the tool ``but``'s, whose own
    server this is)."""
    routes: list[BaseRoute] = [*_api.routes(), *_story.routes()]
    for name, served in server.served.items():
        if name != but:
            routes += served
    return routes


def _routes(server: _Server, auth: bool = False) -> list[BaseRoute]:
    document = dumps(openapi_document(server.kinds, server.tools))  # built once per app

    async def openapi(request: Request) -> Response:
        return json_response(None, raw=document)

    return [
        *ui_routes(auth=auth),
        *tool_routes(),
        Route("/openapi.json", openapi, methods=["GET"]),
        *_benchkit_routes(server),
    ]


def _assemble(
    server: _Server,
    routes: list[BaseRoute],
    tokens: Mapping[str, frozenset[str]],
    allowed: frozenset[str],
    allowed_hosts: tuple[str, ...] | None,
    loopback_origins: bool = True,
) -> Starlette:
    state = server.state

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
        close_cache(state)
        state.store.close()

    middleware = []
    if allowed or loopback_origins:
        from starlette.middleware.cors import CORSMiddleware

        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=sorted({way for origin in allowed for way in _written(origin)}),
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
            origins=allowed,
            plain_errors=tuple(
                prefix
                for found in server.tools.values()
                for plain in found.plain_errors
                for prefix in (plain, EXPLORER_BASE + plain)
            ),
            public=frozenset(p for found in server.tools.values() for p in found.public),
        )
    )
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers=_errors(state.scrub),
        lifespan=lifespan,
    )
    app.state.benchkit = state
    app.state.job_kinds = server.kinds
    return app
