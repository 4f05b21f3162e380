"""The server parses requests with httptools when it is installed (the ``serve`` extra
brings it), else with h11 (#30): both keep the header deadline, serve keep-alive
requests, and answer the same bytes."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx
import pytest

import benchkit
from benchkit.serve import create_app
from benchkit.serve_toolkit._uvicorn import (
    HeaderTimeoutH11Protocol,
    httptools_protocol,
    uvicorn_config,
)

from ._serve import running
from ._support import make_suite

PARSERS = ["h11", "httptools"]


def _parser_installed(parser: str) -> None:
    if parser == "httptools" and httptools_protocol() is None:
        pytest.skip("httptools is not installed")


def test_the_default_parser_is_httptools_when_installed() -> None:
    protocol = uvicorn_config(object()).http
    if httptools_protocol() is None:
        assert issubclass(protocol, HeaderTimeoutH11Protocol)
    else:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        assert issubclass(protocol, HttpToolsProtocol)
    assert uvicorn_config(object(), header_timeout=3).http.header_timeout == 3
    assert issubclass(uvicorn_config(object(), parser="h11").http, HeaderTimeoutH11Protocol)


def _read_answer(sock: socket.socket) -> bytes:
    """One HTTP response (status line to the end of its Content-Length body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += _more(sock)
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += _more(sock)
    return head + b"\r\n\r\n" + body


def _more(sock: socket.socket) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise AssertionError("the server closed the connection mid-answer")
    return chunk


@pytest.mark.parametrize("parser", PARSERS)
def test_each_parser_cuts_off_slow_headers_and_serves_clients(parser: str, tmp_path: Path) -> None:
    _parser_installed(parser)
    store = tmp_path / "s.db"
    benchkit.run(make_suite({"a": _Echo()}, n=3), store=store)
    app = create_app(store=store, root=tmp_path)
    with running(app, parser=parser, header_timeout=1) as url:
        with httpx.Client(base_url=url, timeout=30) as http:
            expected = http.get("/api/runs").content
            time.sleep(1.5)  # idle past the deadline between requests: a new connection
            assert http.get("/api/runs").content == expected
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as idle:
            idle.settimeout(30)
            start = time.monotonic()
            assert idle.recv(1024) == b""  # nothing sent: closed
            assert time.monotonic() - start < 20
        with socket.create_connection((host, int(port))) as slow:
            slow.settimeout(0.1)
            slow.sendall(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            closed, deadline = False, time.monotonic() + 30
            while not closed and time.monotonic() < deadline:
                try:
                    closed = slow.recv(1024) == b""
                except TimeoutError:
                    try:
                        slow.send(b"X")  # a header that never ends
                    except OSError:
                        closed = True
                except OSError:
                    closed = True
            assert closed
    # Three requests in turn on one keep-alive connection: on a server with the default
    # deadline, so that a slow machine cannot make it expire between them.
    request = b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    answers = []
    with running(create_app(store=store, root=tmp_path), parser=parser) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as client:
            client.settimeout(30)
            for _ in range(3):
                client.sendall(request)
                answers.append(_read_answer(client))
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer[:200]
        assert answer.split(b"\r\n\r\n", 1)[1] == expected


class _Echo:
    async def invoke(self, request: benchkit.Request) -> benchkit.Response:
        return benchkit.Response(output=str(request.task.input))
