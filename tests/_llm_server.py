"""A scriptable OpenAI-compatible server on 127.0.0.1, for tests of everything LLM-shaped.

It listens on a real socket (a ThreadingHTTPServer on a thread) and answers
``POST /v1/chat/completions``. By default it replies with a completion whose text is
produced by ``server.respond`` (default: echo the last user message). Tests script it:

    server.queue(Reply.error(429, headers={"Retry-After": "0.2"}), Reply.text("8"))
    server.respond = lambda body: "7"          # text for every unscripted request
    server.requests                            # every request: time, body, headers

Misbehaving replies, for the client's bounds: ``Reply.endless()`` streams a chunked body
that does not end (up to a ceiling, so a test against an unbounded client still ends),
``Reply.drip(text, every=...)`` sends a valid completion one byte at a time.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


def completion(
    text: str | None,
    *,
    tool_calls: Sequence[Mapping[str, Any]] = (),
    model: str = "fake-model",
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
) -> dict[str, Any]:
    """A chat.completion JSON body with one choice."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": call.get("id", f"call_{i}"),
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"]
                    if isinstance(call.get("arguments"), str)
                    else json.dumps(call.get("arguments", {})),
                },
            }
            for i, call in enumerate(tool_calls)
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


@attrs.frozen
class Reply:
    """One scripted reply: a status, a body (JSON or raw text), headers, and a delay."""

    status: int = 200
    json_body: Any = None
    raw: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    delay: float = 0.0
    #: A chunked body instead: the pieces to send, and the pause before each.
    chunks: Callable[[], Iterator[bytes]] | None = None
    chunk_delay: float = 0.0

    @classmethod
    def endless(cls, *, chunk: int = 65_536, ceiling: int = 64_000_000) -> Reply:
        """A 200 whose chunked body is ``{"choices": [...`` and then spaces without end
        (it stops at ``ceiling`` bytes, or when the client hangs up)."""

        def pieces() -> Iterator[bytes]:
            yield b'{"choices": ['
            for _ in range(ceiling // chunk):
                yield b" " * chunk

        return cls(chunks=pieces)

    @classmethod
    def drip(cls, text: str, *, every: float) -> Reply:
        """A valid completion sent one byte every ``every`` seconds (a read timeout never
        fires: each read gets a byte in time)."""
        data = json.dumps(completion(text), separators=(",", ":")).encode()
        return cls(chunks=lambda: (data[i : i + 1] for i in range(len(data))), chunk_delay=every)

    @classmethod
    def text(cls, text: str | None, *, delay: float = 0.0, **kwargs: Any) -> Reply:
        return cls(json_body=completion(text, **kwargs), delay=delay)

    @classmethod
    def tools(cls, *calls: Mapping[str, Any], text: str | None = None) -> Reply:
        return cls(json_body=completion(text, tool_calls=calls))

    @classmethod
    def error(cls, status: int, *, headers: Mapping[str, str] | None = None) -> Reply:
        return cls(
            status=status,
            json_body={"error": {"message": f"scripted {status}"}},
            headers=dict(headers or {}),
        )

    @classmethod
    def malformed(cls) -> Reply:
        return cls(raw='{"choices": [ this is not json')


@attrs.frozen
class Recorded:
    at: float
    body: Any
    headers: Mapping[str, str]


def _last_user_text(body: Mapping[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def capital_model(body: Mapping[str, Any]) -> str:
    """A ``FakeOpenAI.respond`` for the CodeForge tests: as the model it answers the
    capital question right and the rest wrong; as a judge it scores answers that name
    Paris high (and returns one reasoning step when asked for steps)."""
    if "response_format" not in body:
        question = body["messages"][-1]["content"]
        return "Paris." if "capital" in question else "I do not know."
    schema = body["response_format"]["json_schema"]["name"]
    prompt = body["messages"][-1]["content"]
    if schema == "codeforge_steps":
        return json.dumps({"steps": ["Compare the facts"]})
    return json.dumps({"score": 9 if "Paris." in prompt else 2, "reason": "judged"})


class FakeOpenAI:
    """The server. Use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.respond: Callable[[Mapping[str, Any]], str | Reply] = _last_user_text
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        self.bytes_sent = 0  # body bytes of chunked replies written so far
        self.stopping = threading.Event()
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

    def queue(self, *replies: Reply) -> None:
        """Replies to give, in order, before falling back to :attr:`respond`."""
        with self._lock:
            self._queue.extend(replies)

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_reply(self, body: Mapping[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        answer = self.respond(body)
        return answer if isinstance(answer, Reply) else Reply.text(answer)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode(errors="replace")
                with server._lock:
                    server.requests.append(Recorded(time.monotonic(), body, dict(self.headers)))
                    server.active += 1
                    server.max_active = max(server.max_active, server.active)
                try:
                    if self.path.rstrip("/") != "/v1/chat/completions":
                        reply = Reply.error(404)
                    else:
                        reply = server._next_reply(body if isinstance(body, dict) else {})
                    if reply.delay:
                        time.sleep(reply.delay)
                finally:
                    with server._lock:
                        server.active -= 1
                if reply.chunks is not None:
                    self._send_chunked(reply)
                    return
                data = (
                    reply.raw if reply.raw is not None else json.dumps(reply.json_body)
                ).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    return

            def _send_chunked(self, reply: Reply) -> None:
                assert reply.chunks is not None
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for piece in reply.chunks():
                        if server.stopping.is_set():
                            break
                        if reply.chunk_delay:
                            time.sleep(reply.chunk_delay)
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                        with server._lock:
                            server.bytes_sent += len(piece)
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    return
                finally:
                    self.close_connection = True

        return Handler


class PerWindowLimit:
    """A ``respond`` that enforces a rate limit the strict way: at most ``limit`` requests
    arrive in any ``window`` seconds (sliding, over arrival times); the others get a 429
    with ``Retry-After`` and do not count. ``accepted`` and ``rejected`` count replies.

        server.respond = limit = PerWindowLimit(10)     # 600 a minute, enforced per second
    """

    def __init__(self, limit: int, window: float = 1.0, *, retry_after: str = "1") -> None:
        self.limit = limit
        self.window = window
        self.retry_after = retry_after
        self.accepted = 0
        self.rejected = 0
        self._arrivals: deque[float] = deque()
        self._lock = threading.Lock()

    def __call__(self, body: Mapping[str, Any]) -> Reply:
        with self._lock:
            now = time.monotonic()
            while self._arrivals and self._arrivals[0] <= now - self.window:
                self._arrivals.popleft()
            if len(self._arrivals) >= self.limit:
                self.rejected += 1
                return Reply.error(429, headers={"Retry-After": self.retry_after})
            self._arrivals.append(now)
            self.accepted += 1
        return Reply.text(_last_user_text(body))
