"""A server on 127.0.0.1 that speaks Anthropic's Messages API as it is documented, for the
client's ``anthropic`` protocol (#44).

``POST /v1/messages`` only. Like the real API it checks the ``x-api-key`` (401
``authentication_error``) and ``anthropic-version`` headers, and the body's shape (400
``invalid_request_error`` naming the field): ``model``, ``max_tokens`` (required), no
``system`` role in ``messages`` (it is a top-level field), roles ``user`` / ``assistant``,
content blocks of known types, every ``tool_result`` answering a ``tool_use`` of the
assistant message just before, tools with an ``input_schema``, a ``tool_choice`` naming a
tool that exists, no fields the API does not take (``seed``, ``response_format``). Errors
are ``{type: error, error: {type, message}}``. Tests script replies as with
``tests/_llm_server.py``:

    server.queue(AReply.error(529, "overloaded_error", headers={"retry-after": "0"}))
    server.respond = lambda body: "7"        # text for every unscripted request
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

KEY = "sk-ant-api03-benchkit-test-SECRET-0123456789abcdef"
VERSION = "2023-06-01"
_FIELDS = {
    "model",
    "messages",
    "max_tokens",
    "system",
    "metadata",
    "stop_sequences",
    "stream",
    "temperature",
    "top_k",
    "top_p",
    "tools",
    "tool_choice",
}
_BLOCKS = {"text", "image", "tool_use", "tool_result", "document"}
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def message(
    text: str | None = None,
    *,
    tool_uses: Sequence[tuple[str, str, Mapping[str, Any]]] = (),
    model: str = "claude-sonnet-4-20250514",
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int = 0,
    cache_write: int = 0,
    stop_reason: str | None = None,
) -> dict[str, Any]:
    """A Messages API reply: text and ``tool_use`` blocks (id, name, input), usage."""
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    for call_id, name, arguments in tool_uses:
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": dict(arguments)})
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if tool_uses else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write,
        },
    }


@attrs.frozen
class AReply:
    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = attrs.field(factory=dict)

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> AReply:
        return cls(body=dict(body))

    @classmethod
    def error(
        cls, status: int, kind: str, text: str = "", *, headers: Mapping[str, str] | None = None
    ) -> AReply:
        return cls(
            status=status,
            body={"type": "error", "error": {"type": kind, "message": text or kind}},
            headers=dict(headers or {}),
        )


def invalid(body: Any) -> str | None:
    """What the real API would refuse in ``body`` (None: nothing)."""
    if not isinstance(body, dict):
        return "body: Input should be an object"
    extra = sorted(set(body) - _FIELDS)
    if extra:
        return f"{extra[0]}: Extra inputs are not permitted"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    tokens = body.get("max_tokens")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        return "max_tokens: Field required (an integer >= 1)"
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        return "system: Input should be a string or a list of text blocks"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: Field required (a non-empty list)"
    asked: set[str] = set()
    for i, item in enumerate(messages):
        role = item.get("role") if isinstance(item, dict) else None
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        content = item.get("content")
        if not content and not (role == "assistant" and i == len(messages) - 1):
            return (
                f"messages.{i}: all messages must have non-empty content except for the "
                "optional final assistant message"
            )
        if isinstance(content, str):
            asked = set()
            continue
        if not isinstance(content, list):
            return f"messages.{i}.content: Input should be a string or a list of blocks"
        calls: set[str] = set()
        for j, block in enumerate(content):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind not in _BLOCKS:
                return f"messages.{i}.content.{j}.type: unknown block type {kind!r}"
            if kind == "text" and not block.get("text"):
                return f"messages.{i}.content.{j}.text: text content blocks must be non-empty"
            if kind == "tool_use":
                if role != "assistant" or not isinstance(block.get("input"), dict):
                    return f"messages.{i}.content.{j}: tool_use needs an assistant and an input"
                calls.add(str(block.get("id")))
            if kind == "tool_result" and (role != "user" or block.get("tool_use_id") not in asked):
                return (
                    f"messages.{i}.content.{j}: tool_use ids were found without tool_result "
                    "blocks immediately after, or a tool_result answers no tool_use"
                )
        asked = calls
    names = set()
    for k, tool in enumerate(body.get("tools") or []):
        schema = tool.get("input_schema") if isinstance(tool, dict) else None
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return f"tools.{k}.input_schema: Field required (a JSON schema of type object)"
        names.add(tool.get("name"))
    choice = body.get("tool_choice")
    if choice is not None:
        if not isinstance(choice, dict) or choice.get("type") not in (
            "auto",
            "any",
            "tool",
            "none",
        ):
            return "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'"
        if choice["type"] == "tool" and choice.get("name") not in names:
            return f"tool_choice.name: no tool named {choice.get('name')!r}"
    return None


def _last_user_text(body: Mapping[str, Any]) -> str:
    for item in reversed(body.get("messages", [])):
        if item.get("role") == "user":
            content = item.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


class FakeAnthropic:
    """The server; a context manager. ``requests`` holds every request's body and headers."""

    def __init__(self, key: str = KEY) -> None:
        self.key = key
        self.requests: list[tuple[Any, dict[str, str]]] = []
        self.respond: Callable[[Mapping[str, Any]], str | AReply] = _last_user_text
        self._queue: deque[AReply] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)
        return f"http://{host}:{port}/v1"

    def queue(self, *replies: AReply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _reply(self, path: str, headers: Mapping[str, str], body: Any) -> AReply:
        if path.rstrip("/") != "/v1/messages":
            return AReply.error(404, "not_found_error", f"no route {path}")
        if headers.get("x-api-key") != self.key:
            return AReply.error(401, "authentication_error", "invalid x-api-key")
        if headers.get("anthropic-version") != VERSION:
            return AReply.error(400, "invalid_request_error", "anthropic-version: header required")
        if not headers.get("content-type", "").startswith("application/json"):
            return AReply.error(400, "invalid_request_error", "content-type must be JSON")
        problem = invalid(body)
        if problem is not None:
            return AReply.error(400, "invalid_request_error", problem)
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        answer = self.respond(body)
        return answer if isinstance(answer, AReply) else AReply.of(message(answer))

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.requests.append((body, headers))
                reply = server._reply(self.path, headers, body)
                data = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler
