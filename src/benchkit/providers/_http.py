"""An HTTP JSON endpoint as the system under test."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio
import attrs
import httpx

from benchkit import _secrets, transcript
from benchkit._public import public
from benchkit.errors import ConfigError, InvocationError
from benchkit.model import Request, Response, Usage
from benchkit.traces._scope import otlp_headers

if TYPE_CHECKING:
    from benchkit.registry import Registries

__all__ = ["BENCHKIT_BODY", "INPUT_BODY", "HttpBody", "HttpProvider"]

_METHODS = ("POST", "PUT", "PATCH")
_RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
_EXCERPT = 200
#: At most this much of a reply's body goes into the cell's transcript (bytes).
_TRANSCRIBED = 8192


@public("benchkit.providers")
@runtime_checkable
class HttpBody(Protocol):
    """A request shape of the :class:`HttpProvider` (``body: NAME``): the JSON sent for a
    cell, and the headers sent with every request. benchkit's own are ``benchkit`` and
    ``input``; a tool adds others (``Tool.http_bodies``), and a provider's
    ``body_options`` reach :meth:`payload` as ``options``.

    .. versionadded:: 0.2.0
    """

    @property
    def headers(self) -> Mapping[str, str]:
        """Sent with every request (before the provider's own ``headers``)."""

    def payload(self, request: Request, options: Mapping[str, Any]) -> Any:
        """The JSON to send for one cell."""


@attrs.frozen
class _Body:
    """An :class:`HttpBody` from a function of the request (and the body's options)."""

    make: Callable[[Request, Mapping[str, Any]], Any]
    headers: Mapping[str, str] = attrs.field(factory=dict)

    def payload(self, request: Request, options: Mapping[str, Any]) -> Any:
        return self.make(request, options)


def _benchkit_payload(request: Request, options: Mapping[str, Any]) -> Any:
    return {
        "task_id": request.task.id,
        "input": request.task.input,
        "condition": request.condition.id,
        "epoch": request.epoch,
        "attempt": request.attempt,
    }


def _input_payload(request: Request, options: Mapping[str, Any]) -> Any:
    return request.task.input


# Module-level functions, not lambdas: the registries (and so these) travel pickled to
# remote workers.
#: ``body: benchkit``: ``{"task_id", "input", "condition", "epoch", "attempt"}``.
BENCHKIT_BODY: HttpBody = _Body(_benchkit_payload)
#: ``body: input``: the task's input itself.
INPUT_BODY: HttpBody = _Body(_input_payload)


@public("benchkit.providers")
class HttpProvider:
    """Sends each cell's task as a JSON request and takes the JSON reply as the output.

    ``body`` names the request shape (an :class:`HttpBody`): ``"benchkit"`` sends
    ``{"task_id", "input", "condition", "epoch", "attempt"}``; ``"input"`` sends the task
    input itself; the tools add others (``Tool.http_bodies``), which take their
    ``body_options``.
    ``output_field`` is a dotted path into the reply (numeric parts index lists, as in
    ``choices.0.text``); without it the whole reply is the output.

        >>> provider = HttpProvider("http://127.0.0.1:8080/solve", output_field="answer")

    A reply larger than ``max_response_bytes`` (default 5 MB, as the subprocess provider's
    ``max_output_bytes``) is refused as soon as its ``Content-Length`` or its running size
    says so, with a non-retryable error: a runaway endpoint cannot exhaust memory or fill
    the result store. ``timeout`` bounds the whole call — connecting, sending and reading
    the reply to its last byte — so an endpoint that drips its reply cannot stretch it.

    Token usage comes from the ``x-usage-input-tokens`` / ``x-usage-output-tokens`` response
    headers, else from a top-level ``usage: {prompt_tokens, completion_tokens}`` object.
    Failures raise :class:`InvocationError`: HTTP 429/500/502/503/504, a non-JSON body and
    connection errors are retryable, other statuses are not; an expired ``timeout`` has
    category ``timeout``. ``headers`` (API keys) never appear in errors or the repr.
    ``api_key_env`` names an environment variable whose value is sent as ``Authorization:
    Bearer <key>`` (how a server's configured endpoint gets its key, docs/server.md).

    One :class:`httpx.AsyncClient` serves every call (connection reuse); it is opened on
    first use and closed by :meth:`aclose`, which the Runner calls after the run.
    ``base_dir`` is accepted, like every provider's, and unused.
    """

    def __init__(
        self,
        url: str,
        *,
        method: str = "POST",
        headers: Mapping[str, str] | None = None,
        body: str = "benchkit",
        body_options: Mapping[str, Any] | None = None,
        output_field: str | None = None,
        timeout: float = 30.0,
        max_response_bytes: int = 5_000_000,
        api_key_env: str | None = None,
        base_dir: Path | None = None,
        registries: Registries | None = None,
    ) -> None:
        self._url = _check_url(url)
        if not isinstance(method, str) or method.upper() not in _METHODS:
            raise ConfigError(
                f"method {method!r} is not supported", fix=f"use one of {', '.join(_METHODS)}."
            )
        from benchkit.registry import default_registries

        bodies = (registries or default_registries()).http_bodies
        if not isinstance(body, str) or body not in bodies:
            raise ConfigError(
                f"body {body!r} is unknown", fix=f"use one of {', '.join(bodies.names())}."
            )
        shape = bodies.get(body)
        if not isinstance(shape, HttpBody):
            raise ConfigError(
                f"body {body!r} is {type(shape).__name__!r}, not an HttpBody",
                fix="give the body mode `headers` and `payload(request, options)`.",
            )
        if body_options is not None and not isinstance(body_options, Mapping):
            raise ConfigError(f"body_options must be a mapping, got {body_options!r}")
        if output_field is not None and (not isinstance(output_field, str) or not output_field):
            raise ConfigError(f"output_field must be a dotted path or null, got {output_field!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ConfigError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes <= 0
        ):
            raise ConfigError(
                f"max_response_bytes must be a positive integer, got {max_response_bytes!r}"
            )
        self.url = url
        self.method = method.upper()
        self.body = body
        self.body_options: Mapping[str, Any] = dict(body_options or {})
        self._shape = shape
        self.output_field = output_field
        self.timeout = float(timeout)
        self.max_response_bytes = max_response_bytes
        self._headers = {"Accept": "application/json", "Content-Type": "application/json"}
        self._headers.update(shape.headers)
        self._headers.update(_check_headers(headers))
        if api_key_env is not None:
            key = os.environ.get(api_key_env) if isinstance(api_key_env, str) else None
            if not key:
                raise ConfigError(
                    f"the key of {_shown_url(self._url)} is not set: ${api_key_env} is empty",
                    fix=f"set {api_key_env} in the environment that runs benchkit.",
                )
            self._headers["Authorization"] = f"Bearer {key}"
        for name, value in self._headers.items():  # redacted wherever benchkit shows text
            _secrets.add_header(name, value)
        self._client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"HttpProvider({self.method} {_shown_url(self._url)}, body={self.body!r})"

    async def invoke(self, request: Request) -> Response:
        payload = self._payload(request)
        try:
            content = json.dumps(payload).encode()
        except (TypeError, ValueError) as exc:
            raise InvocationError(f"request body is not JSON: {exc}", retryable=False) from exc
        phase = _Phase()
        client = self._http()  # made before the deadline starts: it can block for a while
        transcript.record("request", f"{self.method} {_shown_url(self._url)}", payload)
        started = time.perf_counter()
        try:
            with anyio.fail_after(self.timeout):
                reply, body = await self._send(client, content, phase)
        except TimeoutError as exc:
            raise InvocationError(
                f"HTTP {phase.timeout_name()} after {self.timeout:g}s "
                "(the whole request, reply included)",
                category="timeout",
            ) from exc
        except httpx.TimeoutException as exc:
            raise InvocationError(
                f"HTTP {type(exc).__name__} after {self.timeout:g}s", category="timeout"
            ) from exc
        except httpx.RequestError as exc:
            raise InvocationError(f"HTTP request failed: {type(exc).__name__}: {exc}") from exc
        transcript.record(
            "response",
            f"HTTP {reply.status_code} {reply.reason_phrase}",
            body[:_TRANSCRIBED].decode(errors="replace"),
            duration=time.perf_counter() - started,
        )
        if not reply.is_success:
            raise InvocationError(
                f"HTTP {reply.status_code}: {reply.reason_phrase}",
                retryable=reply.status_code in _RETRYABLE_STATUS,
            )
        try:
            data = json.loads(body)
        except ValueError as exc:
            excerpt = body[:_EXCERPT].decode(errors="replace")
            raise InvocationError(f"response is not JSON: {excerpt}") from exc
        return Response(
            output=_extract(data, self.output_field),
            usage=_usage(reply.headers, data),
            raw=data,
        )

    async def _send(
        self, client: httpx.AsyncClient, content: bytes, phase: _Phase
    ) -> tuple[httpx.Response, bytes]:
        """The reply and its body, read in chunks and refused past ``max_response_bytes``."""
        limit = self.max_response_bytes
        request = client.build_request(
            self.method,
            self._url,
            content=content,
            headers=otlp_headers(),  # a traced cell's trace context (docs/agents.md)
            extensions={"trace": phase.trace},
        )
        reply = await client.send(request, stream=True)
        try:
            declared = reply.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise _too_large(limit, f"Content-Length {declared}")
            chunks: list[bytes] = []
            size = 0
            async for chunk in reply.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise _too_large(limit, f"{size}+ bytes read")
                chunks.append(chunk)
        finally:
            await reply.aclose()
        return reply, b"".join(chunks)

    async def aclose(self) -> None:
        """Close the HTTP client; a later :meth:`invoke` opens a new one."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(headers=self._headers, timeout=self.timeout)
        return self._client

    def _payload(self, request: Request) -> Any:
        return self._shape.payload(request, self.body_options)


class _Phase:
    """Where a request is (httpcore's trace events), to name a whole-call timeout as
    httpx would name a per-operation one: connecting, sending or reading."""

    def __init__(self) -> None:
        self.event = ""

    async def trace(self, event: str, info: Mapping[str, Any]) -> None:
        # Only the steps that wait on the peer: the closing ones run after a cancellation.
        if event.endswith(".started") and any(step in event for step in _WAITS):
            self.event = event

    def timeout_name(self) -> str:
        if ".send_" in self.event:
            return "WriteTimeout"
        if ".receive_" in self.event:
            return "ReadTimeout"
        return "ConnectTimeout" if self.event else "PoolTimeout"


_WAITS = (".connect_", ".start_tls", ".send_", ".receive_")


def _too_large(limit: int, seen: str) -> InvocationError:
    return InvocationError(
        f"response exceeded max_response_bytes={limit} ({seen})",
        retryable=False,
    )


def _check_url(url: object) -> httpx.URL:
    try:
        parsed = httpx.URL(url) if isinstance(url, str) else None
    except httpx.InvalidURL:
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(
            f"url {url!r} is not an http(s) URL", fix="write e.g. url: 'http://127.0.0.1:8080/run'."
        )
    return parsed


def _check_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    checked: dict[str, str] = {}
    for name, value in (headers or {}).items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ConfigError(  # the value may be an API key: name only its type
                f"header {name!r} must be a string, got {type(value).__name__}",
                fix='quote the value, e.g. X-Retries: "3".',
            )
        checked[name] = value
    return checked


def _extract(data: Any, path: str | None) -> Any:
    """``data`` at the dotted ``path``; numeric parts index lists."""
    if path is None:
        return data
    value = data
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif (
            isinstance(value, list) and part.isascii() and part.isdigit() and int(part) < len(value)
        ):
            value = value[int(part)]
        else:
            raise InvocationError(f"output_field {path!r} is not in the reply", retryable=False)
    return value


def _count(value: object) -> int:
    """A token count from a header or a JSON value; 0 when malformed."""
    if isinstance(value, int) and not isinstance(value, bool):
        return max(value, 0)
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value)
    return 0


def _usage(headers: httpx.Headers, data: Any) -> Usage | None:
    prompt = headers.get("x-usage-input-tokens")
    completion = headers.get("x-usage-output-tokens")
    if prompt is not None or completion is not None:
        return Usage(_count(prompt), _count(completion))
    usage = data.get("usage") if isinstance(data, dict) else None
    if isinstance(usage, dict):
        return Usage(_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))
    return None


def _shown_url(url: httpx.URL) -> httpx.URL:
    """``url`` without its query, fragment and credentials: safe to show."""
    return url.copy_with(query=None, fragment=None, username=None, password=None)
