"""Whole-call deadlines and reply caps of the ``http`` provider and the HTTP memory store,
against a real misbehaving server on 127.0.0.1: one that drips its reply a byte at a time
(no single read ever waits long) and one whose chunked reply does not end."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from benchkit.errors import ConfigError, InvocationError
from benchkit.memory import HttpMemoryProvider
from benchkit.model import Condition, ProviderSpec, Request, Task
from benchkit.protocols import MemoryScope
from benchkit.providers._http import HttpProvider

pytestmark = pytest.mark.anyio

SCOPE = MemoryScope("u", "r", "s")
_CEILING = 64_000_000  # an "endless" reply stops here, so an unbounded client still ends


class Server(ThreadingHTTPServer):
    """``/drip/...`` sends a small JSON reply one byte every 20 ms (~1 s in all);
    ``/endless/...`` a chunked JSON string that does not end (until the ceiling)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.sent = 0
        self.stopping = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        self.do_POST()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.close_connection = True
        route = self.path.strip("/").split("/")[0]
        if route == "drip":
            data = json.dumps({"results": [], "answer": "late"}).encode()
            pieces: Iterator[bytes] = (data[i : i + 1] for i in range(len(data)))
            delay = 0.02
        else:
            pieces = iter([b'"', *(b"x" * 65_536 for _ in range(_CEILING // 65_536)), b'"'])
            delay = 0.0
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in pieces:
                if self.server.stopping.is_set():
                    return
                time.sleep(delay)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.server.sent += len(piece)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            return


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield srv
    srv.stopping.set()
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def request() -> Request:
    return Request(Task("t1", input="hi"), Condition("c", ProviderSpec("http")), 0, 1, 0)


async def test_http_provider_drip_is_a_timeout(server: Server) -> None:
    provider = HttpProvider(f"{server.url}/drip", timeout=0.3)
    try:
        with pytest.raises(InvocationError, match=r"ReadTimeout after 0\.3s") as info:
            await provider.invoke(request())
    finally:
        await provider.aclose()
    assert info.value.category == "timeout"


async def test_http_provider_endless_reply_stops_at_the_cap(server: Server) -> None:
    provider = HttpProvider(f"{server.url}/endless", max_response_bytes=500_000, timeout=30)
    try:
        with pytest.raises(InvocationError, match="max_response_bytes=500000") as info:
            await provider.invoke(request())
    finally:
        await provider.aclose()
    assert not info.value.retryable
    assert server.sent < _CEILING // 2


async def test_memory_store_drip_is_a_timeout(server: Server) -> None:
    store = HttpMemoryProvider(f"{server.url}/drip", timeout=0.3)
    try:
        with pytest.raises(InvocationError, match=r"no complete reply within 0\.3s") as info:
            await store.retrieve(SCOPE, "tea")
    finally:
        await store.aclose()
    assert info.value.category == "timeout" and info.value.retryable


async def test_memory_store_endless_reply_stops_at_the_cap(server: Server) -> None:
    store = HttpMemoryProvider(f"{server.url}/endless", max_response_bytes=500_000, timeout=30)
    try:
        with pytest.raises(InvocationError, match="max_response_bytes=500000") as info:
            await store.retrieve(SCOPE, "tea")
    finally:
        await store.aclose()
    assert not info.value.retryable
    assert server.sent < _CEILING // 2


async def test_memory_store_reads_a_slow_reply_within_its_deadline(server: Server) -> None:
    store = HttpMemoryProvider(f"{server.url}/drip", timeout=30)
    try:
        assert await store.retrieve(SCOPE, "tea") == []
    finally:
        await store.aclose()


def test_memory_store_cap_is_validated() -> None:
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ConfigError, match="max_response_bytes"):
            HttpMemoryProvider("http://127.0.0.1:9", max_response_bytes=bad)  # type: ignore[arg-type]
