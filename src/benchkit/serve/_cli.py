"""``python -m benchkit serve`` and ``python -m benchkit view``: the server on uvicorn.

    python -m benchkit serve [--host 127.0.0.1] [--port 8000] [--root DIR] [--store PATH]
                             [--token TOKEN] [--allow-origin ORIGIN ...] [--max-running N]
                             [--endpoint NAME=URL[,key-env=VAR] ...] [the tools' settings]
    python -m benchkit view [RUN] [--open] [--store PATH] [--root DIR] [--port 0]

Each installed tool's server settings (``Tool.server_settings``) are options of ``serve``
(``--<tool>-datasets DIR``, say). A tool's own server commands (a server of one run, say)
live with the tool and share :mod:`benchkit.serve_toolkit`'s way of running a server.

Safe by default: the server binds to the loopback address; binding to any other address
needs a token (``--token`` or ``$BENCHKIT_TOKEN``), and then every request must carry
``Authorization: Bearer <token>``. Starlette and uvicorn (``pip install
'benchkit[serve]'``) are imported only when a command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from benchkit.errors import ConfigError
from benchkit.registry import default_registries
from benchkit.serve_toolkit._run import (
    TOKEN_ENV,
    is_loopback,
    require_serve,
    serve_app,
    token_for,
)

__all__ = ["add_commands"]


def add_commands(subparsers: Any) -> None:
    """Add ``serve`` and ``view`` to the ``python -m benchkit`` parser."""
    parser = subparsers.add_parser(
        "serve",
        help="serve the run store over HTTP (benchkit's API and the tools' APIs)",
        description="Serve benchkit's API and every installed tool's routes over the run "
        "store (see docs/server.md).",
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
        "--allow-origin",
        "--cors-origin",
        dest="allow_origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let pages of this origin (scheme://host:port) start, cancel and delete runs "
        "and read the API (repeatable); otherwise only the server's own pages may change "
        "anything (on a loopback address, local pages of any port may read)",
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
    for setting in _settings():
        parser.add_argument(
            setting.flag, dest=setting.name, metavar=setting.metavar, help=setting.help
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


def _settings() -> list[Any]:
    """The installed tools' server settings (``Tool.server_settings``), by name."""
    found = [s for tool in default_registries().all_tools() for s in tool.server_settings]
    return sorted(found, key=lambda setting: setting.name)


def _cmd_serve(args: argparse.Namespace) -> int:
    require_serve()
    from benchkit.serve import create_app

    token = token_for(args.host, args.token)
    if args.max_running < 1:
        raise ConfigError("--max-running must be at least 1", fix="pass --max-running 1 or more.")
    from benchkit.llm import EndpointRegistry

    endpoints = EndpointRegistry(args.endpoint)
    app = create_app(
        endpoints=endpoints,
        store=args.store,
        root=args.root,
        token=token,
        allow_origins=tuple(args.allow_origin),
        loopback_origins=is_loopback(args.host),
        max_running=args.max_running,
        **{s.name: getattr(args, s.name) for s in _settings()},
    )
    if not 0 < args.header_timeout <= 3600:
        raise ConfigError(
            f"--header-timeout {args.header_timeout:g} is not between 0 and 3600 seconds",
            fix="pass e.g. --header-timeout 10.",
        )
    return serve_app(app, args.host, args.port, what="serving", header_timeout=args.header_timeout)


def _cmd_view(args: argparse.Namespace) -> int:
    require_serve()
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
