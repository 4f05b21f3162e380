"""A fake log-probability server on 127.0.0.1: OpenAI-compatible ``/v1/completions`` with
``echo`` and ``logprobs``, for the LLM client's log-likelihood requests (#37).

Its "model" splits a prompt into tokens at spaces (a space starts a token, as BPE
tokenizers do) and gives token ``i`` the log-probability ``-(1 + len(token) / 10)``; the
first token has none (nothing predicts it). ``shape`` picks the reply: ``legacy``
(``tokens`` / ``text_offset`` / ``token_logprobs``, as OpenAI's and vLLM's) or ``content``
(``logprobs.content`` entries with ``bytes``, as llama.cpp's newer server). ``broken``
scripts a server that cannot answer: ``no_logprobs`` (a chat-only imitation),
``no_echo`` (only the generated token), ``404`` (no ``/completions`` route), and
``fail_first`` answers 503 once before answering.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GENERATED = " ok"


def tokens_of(text: str) -> list[str]:
    """The fake model's tokens: each piece starts at a space (or the text's start)."""
    return re.findall(r"\s*\S+|\s+$", text) if text else []


def logprob_of(token: str) -> float:
    return -(1.0 + len(token) / 10.0)


def expected(context: str, continuation: str) -> tuple[float, int]:
    """What the server's model says of ``continuation`` after ``context`` (whose
    trailing whitespace the client moves to the continuation)."""
    spaces = len(context) - len(context.rstrip())
    if spaces:
        context, continuation = context[:-spaces], context[-spaces:] + continuation
    whole = tokens_of(context + continuation)
    start, total, count = 0, 0.0, 0
    for token in whole:
        end = start + len(token)
        if end > len(context):
            total += logprob_of(token)
            count += 1
        start = end
    return total, count


class LogprobServer:
    """The server; a context manager. ``requests`` records every body received."""

    def __init__(self, shape: str = "legacy", broken: str | None = None) -> None:
        self.shape = shape
        self.broken = broken
        self.requests: list[Any] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}/v1"

    def __enter__(self) -> LogprobServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reply(self, body: Mapping[str, Any]) -> tuple[int, Any]:
        with self._lock:
            self.requests.append(body)
            first = len(self.requests) == 1
        if self.broken == "fail_first" and first:
            return 503, {"error": {"message": "busy"}}
        prompt = str(body.get("prompt", ""))
        pieces = tokens_of(prompt) if body.get("echo") and self.broken != "no_echo" else []
        pieces.append(GENERATED)
        values: list[float | None] = [logprob_of(p) for p in pieces]
        if body.get("echo") and self.broken != "no_echo":
            values[0] = None
        choice: dict[str, Any] = {"index": 0, "text": prompt + GENERATED, "finish_reason": "length"}
        if self.broken == "no_logprobs":
            choice["logprobs"] = None
        elif self.shape == "legacy":
            offsets, at = [], 0
            for piece in pieces[:-1]:
                offsets.append(at)
                at += len(piece)
            offsets.append(len(prompt))  # the generated token follows the prompt
            choice["logprobs"] = {
                "tokens": pieces,
                "text_offset": offsets,
                "token_logprobs": values,
                "top_logprobs": None,
            }
        else:
            choice["logprobs"] = {
                "content": [
                    {"token": p, "logprob": v, "bytes": list(p.encode()), "top_logprobs": []}
                    for p, v in zip(pieces, values, strict=True)
                ]
            }
        usage = {"prompt_tokens": len(pieces) - 1, "completion_tokens": 1}
        usage["total_tokens"] = usage["prompt_tokens"] + 1
        return 200, {
            "object": "text_completion",
            "model": "fake",
            "choices": [choice],
            "usage": usage,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.loads(raw)
                if self.path.rstrip("/") != "/v1/completions" or server.broken == "404":
                    status, data = 404, {"error": {"message": "not found"}}
                else:
                    status, data = server.reply(body)
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler
