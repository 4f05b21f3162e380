"""Running a server from a command: the loopback check, the token rule, the listening
socket and uvicorn — shared by ``serve``, ``view`` and the tools' own server commands.

Nothing here imports Starlette or uvicorn until a server starts, so a command module may
import it lazily from its command function.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from typing import Any

from benchkit.errors import ConfigError

__all__ = [
    "TOKEN_ENV",
    "is_loopback",
    "require_serve",
    "serve_app",
    "token_for",
]

TOKEN_ENV = "BENCHKIT_TOKEN"
"""The environment variable a server's token may come from."""

_EXTRA = "pip install 'benchkit[serve]'"


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_for(host: str, token: str | None) -> str | None:
    """The server's token: ``token``, else ``$BENCHKIT_TOKEN``; a ConfigError when there is
    none and ``host`` is not a loopback address (the server would be open to the network)."""
    found: str | None = token or os.environ.get(TOKEN_ENV) or None
    if found is None and not is_loopback(host):
        raise ConfigError(
            f"--host {host} is not a loopback address: the server would be reachable "
            "from other machines without a token",
            fix=f"pass --token TOKEN (or set ${TOKEN_ENV}); clients then send "
            "'Authorization: Bearer TOKEN'. Or bind to 127.0.0.1.",
        )
    return found


def require_serve() -> None:
    """A ConfigError naming the extra when Starlette is not installed."""
    try:
        import starlette  # noqa: F401
    except ImportError:
        raise ConfigError(
            "the server needs the extra 'serve' (starlette, uvicorn)", fix=_EXTRA
        ) from None


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

        from benchkit.serve_toolkit._uvicorn import HEADER_TIMEOUT, uvicorn_config
    except ImportError:
        raise ConfigError(
            "the server needs the extra 'serve' (starlette, uvicorn)", fix=_EXTRA
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
