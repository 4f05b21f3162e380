"""``python -m benchkit serve`` and ``python -m benchkit memory explore``: the server on uvicorn.

    python -m benchkit serve [--host 127.0.0.1] [--port 8000] [--root DIR] [--store PATH]
                             [--token TOKEN] [--cors-origin URL ...] [--max-running N]
                             [--endpoint NAME=URL[,key-env=VAR] ...]
    python -m benchkit memory explore --run RUN_ID [--port 3000] [--store PATH]
    python -m benchkit view [RUN] [--open] [--store PATH] [--root DIR] [--port 0]

Safe by default: the server binds to the loopback address; binding to any other address
needs a token (``--token`` or ``$BENCHKIT_TOKEN``), and then every request must carry
``Authorization: Bearer <token>``. Starlette and uvicorn (``pip install
'benchkit[serve]'``) are imported only when a command runs.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
from typing import Any

from benchkit.errors import ConfigError

__all__ = ["add_commands", "add_explore", "is_loopback", "serve_app"]

TOKEN_ENV = "BENCHKIT_TOKEN"


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def add_commands(subparsers: Any) -> None:
    """Add ``serve`` to the ``python -m benchkit`` parser, and ``explore`` to its ``memory``
    group (MemoryBench's tool package knows nothing of the server)."""
    parser = subparsers.add_parser(
        "serve",
        help="serve the run store over HTTP (benchkit's API and the tools' APIs)",
        description="Serve benchkit's API, skillvault's bench routes, CodeForge's benchmark "
        "routes and MemoryBench's explorer API over the run store (see docs/server.md).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (8000; 0 picks one)")
    parser.add_argument("--root", default=".", help="benchmarks and configs stay inside it (.)")
    parser.add_argument(
        "--store",
        metavar="PATH",
        help="the run store (default: $BENCHKIT_STORE, else .benchkit/benchkit.db)",
    )
    parser.add_argument(
        "--token", help=f"require this bearer token (default: ${TOKEN_ENV}); needed off loopback"
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="URL",
        help="allow cross-origin requests from this origin (repeatable; on a loopback "
        "address, http://localhost:*, http://127.0.0.1:* and http://[::1]:* are allowed)",
    )
    parser.add_argument(
        "--max-running", type=int, default=2, metavar="N", help="runs at once; more queue (2)"
    )
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="a client has this long to send a request's headers (10)",
    )
    parser.add_argument(
        "--endpoint",
        action="append",
        default=[],
        metavar="NAME=URL[,key-env=VAR]",
        help="an endpoint runs started by requests may call, and the environment variable "
        "holding its key (repeatable); requests name it, never a URL (see docs/server.md)",
    )
    parser.set_defaults(func=_cmd_serve)
    view = subparsers.add_parser(
        "view",
        help="open the explorer (web UI) on the run store, or on one run",
        description="Start the server on a free loopback port and print the explorer's URL "
        "(--open also opens it in a browser). Ctrl-C stops it. See docs/explorer.md.",
    )
    view.add_argument("run", nargs="?", help="a run id (or a unique prefix) to open")
    view.add_argument("--store", metavar="PATH", help="the run store")
    view.add_argument("--root", default=".", help="benchmarks and configs stay inside it (.)")
    view.add_argument("--port", type=int, default=0, help="port (0, the default, picks one)")
    view.add_argument("--open", action="store_true", help="open the URL in a web browser")
    view.set_defaults(func=_cmd_view)
    memory = subparsers.choices.get("memory")
    if memory is not None:  # MemoryBench's command group: its explorer is served from here
        for action in memory._actions:
            if isinstance(action, argparse._SubParsersAction):
                add_explore(action)


def add_explore(memory_commands: Any) -> None:
    """Add ``explore`` to ``python -m benchkit memory``."""
    parser = memory_commands.add_parser(
        "explore",
        help="serve MemoryBench's explorer API for a stored run",
        description="Serve GET /api/data, /api/runs and /api/run/<id> (MemoryBench's "
        "explorer API) for a run in the store.",
    )
    parser.add_argument("--run", "-r", required=True, metavar="RUN_ID", help="the run to show")
    parser.add_argument("--port", type=int, default=3000, help="port (3000; 0 picks one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--store", metavar="PATH", help="the run store")
    parser.add_argument("--token", help=f"require this bearer token (default: ${TOKEN_ENV})")
    parser.set_defaults(func=_cmd_explore)


def _token(args: argparse.Namespace) -> str | None:
    token: str | None = args.token or os.environ.get(TOKEN_ENV) or None
    if token is None and not is_loopback(args.host):
        raise ConfigError(
            f"--host {args.host} is not a loopback address: the server would be reachable "
            "from other machines without a token",
            fix=f"pass --token TOKEN (or set ${TOKEN_ENV}); clients then send "
            "'Authorization: Bearer TOKEN'. Or bind to 127.0.0.1.",
        )
    return token


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say
    # they are TCP, and with Nagle on every keep-alive response waits ~40 ms for an ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)  # clients may connect (and wait) as soon as the URL is printed
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            fix="pick another --port (0 picks a free one) or --host.",
        ) from None
    return sock


def serve_app(
    app: Any,
    host: str,
    port: int,
    *,
    what: str,
    page: str = "",
    open_browser: bool = False,
    header_timeout: float | None = None,
) -> int:
    """Run ``app`` with uvicorn on ``host:port`` until Ctrl-C or SIGTERM; prints the URL
    (followed by ``page``, e.g. ``/#/run/ID``) and, with ``open_browser``, opens it. A
    client gets ``header_timeout`` seconds to send each request's headers."""
    try:
        import uvicorn

        from benchkit.serve._uvicorn import HEADER_TIMEOUT, uvicorn_config
    except ImportError:
        raise ConfigError(
            "the server needs the extra 'serve' (starlette, uvicorn)",
            fix="pip install 'benchkit[serve]'",
        ) from None
    sock = _bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}{page}"
    sys.stderr.write(f"benchkit: {what} on {url}\n")
    sys.stderr.flush()
    if open_browser:  # the socket listens already: the browser's request waits for uvicorn
        import threading
        import webbrowser

        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    config = uvicorn_config(
        app,
        header_timeout=header_timeout or HEADER_TIMEOUT,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=10,
    )
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def _require_serve() -> None:
    try:
        import starlette  # noqa: F401
    except ImportError:
        raise ConfigError(
            "the server needs the extra 'serve' (starlette, uvicorn)",
            fix="pip install 'benchkit[serve]'",
        ) from None


def _cmd_serve(args: argparse.Namespace) -> int:
    _require_serve()
    from benchkit.serve import create_app

    token = _token(args)
    if args.max_running < 1:
        raise ConfigError("--max-running must be at least 1", fix="pass --max-running 1 or more.")
    from benchkit.llm import EndpointRegistry

    endpoints = EndpointRegistry(args.endpoint)
    app = create_app(
        endpoints=endpoints,
        store=args.store,
        root=args.root,
        token=token,
        cors_origins=tuple(args.cors_origin),
        loopback_origins=is_loopback(args.host),
        max_running=args.max_running,
    )
    if not 0 < args.header_timeout <= 3600:
        raise ConfigError(
            f"--header-timeout {args.header_timeout:g} is not between 0 and 3600 seconds",
            fix="pass e.g. --header-timeout 10.",
        )
    return serve_app(app, args.host, args.port, what="serving", header_timeout=args.header_timeout)


def _cmd_view(args: argparse.Namespace) -> int:
    _require_serve()
    from urllib.parse import quote

    from benchkit.serve import create_app
    from benchkit.store import Store

    store = Store(args.store)
    page = "/"
    if args.run:
        run_id = store.summary(args.run).run_id  # an unknown run fails before anything listens
        page = f"/#/run/{quote(run_id, safe='')}"
    app = create_app(store=store, root=args.root)
    return serve_app(
        app, "127.0.0.1", args.port, what="explorer", page=page, open_browser=args.open
    )


def _cmd_explore(args: argparse.Namespace) -> int:
    _require_serve()
    from benchkit.serve import create_explorer_app
    from benchkit.store import Store

    store = Store(args.store)
    summary = store.summary(args.run)  # an unknown run fails here, before the server starts
    app = create_explorer_app(
        run_id=summary.run_id,
        store=store,
        token=_token(args),
        loopback_origins=is_loopback(args.host),
    )
    return serve_app(app, args.host, args.port, what=f"exploring run {summary.run_id}", page="/")
