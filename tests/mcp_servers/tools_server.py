"""An MCP server written with the official SDK, used by benchkit's MCP tests.

Run ``python tools_server.py`` for stdio, or ``python tools_server.py http|sse`` to serve
streamable HTTP (``/mcp``) or SSE (``/sse``) on 127.0.0.1 at an ephemeral port; the port
is printed as the first stdout line so the test that started the server can connect.

Tools: ``add`` (structured output), ``echo``, ``fail`` (a tool error), ``protocol_error``
(a JSON-RPC error), ``pid`` (the server's process id), ``environment`` (its variable
names), ``spawn_child`` (starts a sleeping grandchild in the server's process group and
returns its pid), ``overlap`` (the most calls in flight at once), ``slow`` (answers
late), ``hang`` (blocks the whole server), ``crash`` (exits the process with code 3) and
``picture`` (an image plus a caption: non-text content).
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import time

from mcp import MCPError
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

server = MCPServer("benchkit-test-tools", log_level="WARNING")

# The smallest valid PNG (1x1 transparent pixel), written here byte by byte.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
)


@server.tool()
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers; the sum is returned as structured content."""
    return {"sum": a + b}


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def fail(message: str) -> str:
    """Always fail with a tool error carrying ``message``."""
    raise ToolError(f"refused: {message}")


@server.tool()
def protocol_error(code: int = -32602) -> str:
    """Answer with a JSON-RPC error (``code``) instead of a result."""
    raise MCPError(code=code, message="no such thing")


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def environment() -> str:
    """The names of the server's environment variables, comma-separated."""
    return ",".join(sorted(os.environ))


@server.tool()
def spawn_child() -> int:
    """Start a long sleep in this process group; return its pid."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    return child.pid


_running = {"now": 0, "most": 0}


@server.tool()
async def overlap() -> int:
    """Hold the call a moment; return the most calls this server has seen at once."""
    import anyio

    _running["now"] += 1
    _running["most"] = max(_running["most"], _running["now"])
    await anyio.sleep(0.3)
    _running["now"] -= 1
    return _running["most"]


@server.tool()
async def slow(seconds: float) -> str:
    """Answer after ``seconds`` without blocking the server."""
    import anyio

    await anyio.sleep(seconds)
    return "slept"


@server.tool()
def hang() -> str:
    """Block the server's event loop: the server stops answering anything."""
    time.sleep(3600)
    return "unreachable"


@server.tool()
def crash() -> str:
    """Exit the server process at once."""
    sys.stdout.flush()
    os._exit(3)


@server.tool(structured_output=False)
def picture() -> list[object]:
    """A caption and a 1x1 PNG."""
    return ["a single pixel", Image(data=PIXEL, format="png")]


def _serve_http(kind: str) -> None:
    import anyio
    import uvicorn

    app = server.sse_app() if kind == "sse" else server.streamable_http_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, log_level="warning")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        server.run("stdio")
    else:
        _serve_http(mode)
