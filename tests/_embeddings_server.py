"""A scriptable OpenAI-compatible server on 127.0.0.1 that answers ``/v1/embeddings``
(and ``/v1/chat/completions``, for judges), for the embeddings and RAG tests.

An embedding is :func:`letters`: the counts of the letters a-z in the text, so a test can
compute every cosine by hand. ``server.queue(status, headers)`` scripts errors first;
``server.chat`` answers chat requests (default: ``{}``); ``server.routes`` limits what it
answers (a server without ``embeddings`` answers 404 there).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def letters(text: str) -> list[float]:
    """The fake model's embedding: how often each letter a-z occurs (case folded)."""
    low = text.lower()
    return [float(low.count(ch)) for ch in ALPHABET]


class FakeEmbeddings:
    """The server; a context manager. ``requests`` holds (path, body) of every request."""

    def __init__(
        self,
        *,
        model: str = "fake-embed",
        routes: tuple[str, ...] = ("embeddings", "chat/completions"),
    ) -> None:
        self.model = model
        self.routes = routes
        self.requests: list[tuple[str, Any]] = []
        self.chat: Callable[[Mapping[str, Any]], str] = lambda body: "{}"
        self._errors: deque[tuple[int, dict[str, str]]] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def queue(self, status: int, headers: Mapping[str, str] | None = None) -> None:
        """An error reply to give before the next answers."""
        with self._lock:
            self._errors.append((status, dict(headers or {})))

    def paths(self, suffix: str) -> list[Any]:
        """The bodies of the requests to ``/v1/<suffix>``."""
        return [body for path, body in self.requests if path == "/v1/" + suffix]

    def __enter__(self) -> FakeEmbeddings:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, path: str, body: Mapping[str, Any]) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            self.requests.append((path, body))
            if self._errors:
                status, headers = self._errors.popleft()
                return status, headers, {"error": {"message": f"scripted {status}"}}
        route = path.removeprefix("/v1/")
        if route not in self.routes:
            return 404, {}, {"error": {"message": "not found"}}
        if route == "embeddings":
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = [
                {"object": "embedding", "index": i, "embedding": letters(t)}
                for i, t in reversed(list(enumerate(texts)))  # out of order: index decides
            ]
            tokens = sum(len(t.split()) for t in texts)
            return (
                200,
                {},
                {
                    "object": "list",
                    "data": data,
                    "model": self.model,
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                },
            )
        text = self.chat(body)
        return (
            200,
            {},
            {
                "object": "chat.completion",
                "model": self.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status, headers, payload = server._answer(self.path.rstrip("/"), json.loads(raw))
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler
