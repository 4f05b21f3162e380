"""Tests for HttpProvider against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchkit.errors import ConfigError, InvocationError
from benchkit.model import Condition, ProviderSpec, Request, Task, Usage
from benchkit.providers._http import HttpProvider
from benchkit.registry import default_registries

pytestmark = pytest.mark.anyio

SECRET = "sk-test-0123456789"
Make = Callable[..., HttpProvider]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Server(ThreadingHTTPServer):
    """Records every request; ``release`` lets the /slow route finish."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[dict[str, Any]] = []
        self.release = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    """Routes: /echo, /nested, /status/<code>, /text, /slow, /usage-headers, /usage-body."""

    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.seen.append(
            {
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": json.loads(raw),
            }
        )
        route = self.path
        if route == "/echo":
            self.reply(200, {"echo": json.loads(raw)})
        elif route == "/nested":
            self.reply(200, {"data": {"choices": [{"text": "first"}, {"text": "second"}]}})
        elif route.startswith("/status/"):
            self.reply(int(route.rsplit("/", 1)[1]), {"error": "scripted"})
        elif route == "/text":
            self.reply(200, b"<html>hello</html>")
        elif route == "/slow":
            self.server.release.wait(10)
            self.reply(200, {"late": True})
        elif route == "/usage-headers":
            headers = {"x-usage-input-tokens": "12", "x-usage-output-tokens": "34"}
            self.reply(200, {"answer": "hi", "usage": {"prompt_tokens": 1}}, headers)
        elif route == "/big":
            self.reply(200, {"answer": "x" * 3_000_000})
        elif route == "/big-unsized":  # no Content-Length: the size shows only while reading
            self.send_response(200)
            self.end_headers()
            try:
                self.wfile.write(b'{"answer": "')
                for _ in range(300):
                    self.wfile.write(b"y" * 10_000)
                self.wfile.write(b'"}')
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
        elif route == "/usage-body":
            self.reply(200, {"answer": "hi", "usage": {"prompt_tokens": 5, "completion_tokens": 7}})

    do_PUT = do_POST

    def reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the timeout tests)


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield srv
    srv.release.set()
    srv.shutdown()
    srv.server_close()
    thread.join(5)


@pytest.fixture
async def make(server: Server) -> AsyncIterator[Make]:
    """Builds providers for a server path and closes them all after the test."""
    made: list[HttpProvider] = []

    def build(path: str = "/echo", **options: Any) -> HttpProvider:
        provider = HttpProvider(server.url + path, **options)
        made.append(provider)
        return provider

    yield build
    for provider in made:
        await provider.aclose()


def request_for(value: Any, *, condition: str = "cond-a", epoch: int = 2) -> Request:
    task = Task(id="t7", input=value)
    return Request(task=task, condition=Condition(condition, ProviderSpec("http")), epoch=epoch)


async def test_benchkit_body_shape_and_headers(server: Server, make: Make) -> None:
    provider = make(headers={"Authorization": f"Bearer {SECRET}"})
    response = await provider.invoke(request_for({"q": 1}))
    expected = {"task_id": "t7", "input": {"q": 1}, "condition": "cond-a", "epoch": 2, "attempt": 1}
    assert response.output == {"echo": expected}
    assert response.raw == {"echo": expected}
    (seen,) = server.seen
    assert seen["method"] == "POST"
    assert seen["body"] == expected
    assert seen["headers"]["authorization"] == f"Bearer {SECRET}"
    assert seen["headers"]["content-type"] == "application/json"
    assert "x-eval-skills-version" not in seen["headers"]


async def test_input_body_is_the_task_input(server: Server, make: Make) -> None:
    await make(body="input", method="put").invoke(request_for(["a", "b"]))
    assert server.seen[0]["method"] == "PUT"
    assert server.seen[0]["body"] == ["a", "b"]


async def test_eval_skills_body_and_version_header(server: Server, make: Make) -> None:
    """A body mode a tool brings (eval-skills', ``Tool.http_bodies``), with its options."""
    provider = make(body="eval-skills", body_options={"version": "1.2.3"})
    await provider.invoke(request_for("text", condition="my-skill"))
    (seen,) = server.seen
    assert seen["body"] == {"skillId": "my-skill", "version": "1.2.3", "input": "text"}
    assert seen["headers"]["x-eval-skills-version"] == "0.1.0"


async def test_output_field_extracts_a_dotted_path(make: Make) -> None:
    nested = make("/nested", output_field="data.choices.1.text")
    assert (await nested.invoke(request_for(None))).output == "second"
    echoed = make(output_field="echo.input")
    assert (await echoed.invoke(request_for({"x": 1}))).output == {"x": 1}


@pytest.mark.parametrize("field", ["data.missing", "data.choices.2.text", "data.choices.x"])
async def test_missing_output_field_is_not_retryable(make: Make, field: str) -> None:
    with pytest.raises(InvocationError, match="is not in the reply") as info:
        await make("/nested", output_field=field).invoke(request_for(None))
    assert not info.value.retryable


@pytest.mark.parametrize(
    ("path", "usage"),
    [
        ("/usage-headers", Usage(12, 34)),
        ("/usage-body", Usage(5, 7)),
        ("/nested", None),
    ],
)
async def test_usage_from_headers_then_body(make: Make, path: str, usage: Usage | None) -> None:
    response = await make(path, output_field=None).invoke(request_for(None))
    assert response.usage == usage


@pytest.mark.parametrize(
    ("status", "reason", "retryable"),
    [
        (500, "Internal Server Error", True),
        (429, "Too Many Requests", True),
        (503, "Service Unavailable", True),
        (404, "Not Found", False),
        (400, "Bad Request", False),
    ],
)
async def test_http_errors(make: Make, status: int, reason: str, retryable: bool) -> None:
    provider = make(f"/status/{status}", headers={"X-Api-Key": SECRET})
    with pytest.raises(InvocationError) as info:
        await provider.invoke(request_for(None))
    assert info.value.message == f"HTTP {status}: {reason}"
    assert info.value.retryable is retryable
    assert info.value.category == "execution_error"
    assert SECRET not in str(info.value)


async def test_non_json_reply_is_retryable(make: Make) -> None:
    with pytest.raises(InvocationError, match="not JSON: <html>hello</html>") as info:
        await make("/text").invoke(request_for(None))
    assert info.value.retryable


async def test_connection_refused_is_retryable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = HttpProvider(f"http://127.0.0.1:{port}/x", headers={"X-Api-Key": SECRET})
    try:
        with pytest.raises(InvocationError, match="HTTP request failed: ConnectError") as info:
            await provider.invoke(request_for(None))
    finally:
        await provider.aclose()
    assert info.value.retryable
    assert SECRET not in str(info.value)


async def test_cell_timeout_cancels_a_slow_request_promptly(make: Make) -> None:
    provider = make("/slow")
    start = time.monotonic()
    with pytest.raises(TimeoutError), anyio.fail_after(0.3):
        await provider.invoke(request_for(None))
    assert time.monotonic() - start < 3


async def test_httpx_timeout_is_a_retryable_timeout_error(make: Make) -> None:
    provider = make("/slow", timeout=0.2)
    start = time.monotonic()
    with pytest.raises(InvocationError, match=r"ReadTimeout after 0\.2s") as info:
        await provider.invoke(request_for(None))
    assert time.monotonic() - start < 3
    assert info.value.category == "timeout"
    assert info.value.retryable


async def test_one_client_is_reused_and_aclose_closes_it(make: Make) -> None:
    provider = make()
    await provider.invoke(request_for(1))
    client = provider._client
    await provider.invoke(request_for(2))
    assert provider._client is client
    assert client is not None
    assert not client.is_closed
    await provider.aclose()
    assert client.is_closed
    assert (await provider.invoke(request_for(3))).output["echo"]["input"] == 3


async def test_registry_builds_it_and_ignores_base_dir(server: Server, tmp_path: Path) -> None:
    provider = default_registries().providers.build(
        "http", {"url": server.url + "/echo", "body": "input"}, base_dir=tmp_path
    )
    assert isinstance(provider, HttpProvider)
    try:
        assert (await provider.invoke(request_for("hi"))).output == {"echo": "hi"}
    finally:
        await provider.aclose()


def test_repr_hides_headers_and_url_secrets() -> None:
    provider = HttpProvider(
        f"https://user:{SECRET}@api.example.com/v1/run?key={SECRET}",
        headers={"Authorization": SECRET},
    )
    assert repr(provider) == "HttpProvider(POST https://api.example.com/v1/run, body='benchkit')"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"url": "ftp://example.com/x"}, "not an http"),
        ({"url": "not a url"}, "not an http"),
        ({"url": "http://"}, "not an http"),
        ({"url": 42}, "not an http"),
        ({"url": "http://h/x", "method": "GET"}, "method"),
        ({"url": "http://h/x", "body": "xml"}, "body"),
        ({"url": "http://h/x", "timeout": 0}, "timeout"),
        ({"url": "http://h/x", "output_field": ""}, "output_field"),
        ({"url": "http://h/x", "body_options": ["v"]}, "body_options must be a mapping"),
        ({"url": "http://h/x", "max_response_bytes": 0}, "max_response_bytes"),
        ({"url": "http://h/x", "headers": {"X-Key": 12345}}, "must be a string, got int"),
    ],
)
def test_bad_configuration_is_a_config_error(options: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError, match=expected) as info:
        HttpProvider(**options)
    assert "12345" not in str(info.value)


@pytest.mark.parametrize("path", ["/big", "/big-unsized"])
async def test_a_reply_past_max_response_bytes_is_refused(make: Make, path: str) -> None:
    provider = make(path, max_response_bytes=1_000_000)
    with pytest.raises(InvocationError, match="max_response_bytes=1000000") as info:
        await provider.invoke(request_for(1))
    assert not info.value.retryable
    assert len(info.value.message) < 300


async def test_a_reply_under_max_response_bytes_is_read_whole(make: Make) -> None:
    response = await make("/big", output_field="answer").invoke(request_for(1))
    assert response.output == "x" * 3_000_000
