"""An MCP server written with the official SDK that misbehaves on request, for the tests
of the MCP provider's bounds (tests/test_mcp_bounds.py).

``python unruly_server.py`` serves stdio; ``python unruly_server.py mute`` starts but never
reads its input, so ``initialize`` is never answered; ``python unruly_server.py mute-http``
listens on 127.0.0.1 at an ephemeral port (printed as the first stdout line) and never
answers a request (nor SSE's endpoint event); ``python unruly_server.py http`` (or
``http-json``: plain JSON replies instead of SSE) serves streamable HTTP at ``/mcp``, its
port printed the same way.

Tools: ``answer`` (returns ``text``, or exits the process with code 3 when ``text`` is
"crash": a crash in the middle of a run), ``pid`` (the server's process id), ``huge``
(a text reply of ``size`` bytes) and ``stall`` (blocks the whole server for an hour).
"""

from __future__ import annotations

import os
import socket
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("benchkit-test-unruly", log_level="WARNING")


@server.tool()
def answer(text: str) -> str:
    """``text`` back; "crash" ends the server at once."""
    if text == "crash":
        sys.stdout.flush()
        os._exit(3)
    return f"{text}@{os.getpid()}"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def stall() -> str:
    """Block the server: no answer, to this call or any other."""
    time.sleep(3600)
    return "unreachable"


@server.tool()
def huge(size: int) -> str:
    """A reply of ``size`` bytes of text."""
    return "x" * size


if __name__ == "__main__":
    if sys.argv[1:] == ["mute"]:
        time.sleep(3600)  # alive, reading nothing: initialize is never answered
    elif sys.argv[1:] == ["mute-http"]:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)  # connections complete in the backlog and then wait forever
        print(sock.getsockname()[1], flush=True)
        time.sleep(3600)
    elif sys.argv[1:2] in (["http"], ["http-json"]):
        import anyio
        import uvicorn

        json_replies = sys.argv[1] == "http-json"
        app = server.streamable_http_app(json_response=json_replies)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        print(sock.getsockname()[1], flush=True)
        anyio.run(uvicorn.Server(uvicorn.Config(app, log_level="warning")).serve, [sock])
    else:
        server.run("stdio")
