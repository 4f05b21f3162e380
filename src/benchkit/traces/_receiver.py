"""A loopback OTLP/HTTP receiver: spans from the user's agent, sorted by cell.

:class:`OtlpReceiver` listens on ``127.0.0.1`` (a thread of its own, the standard
library's HTTP server: a few exports per cell need no more) and accepts
``POST /v1/traces`` and ``POST /cells/<token>/v1/traces`` in protobuf or JSON, gzipped or
not. A span belongs to a cell by, in this order: the token in the path (what
:func:`~benchkit.traces.otlp_env` gives a subprocess), a ``benchkit.cell`` resource or span
attribute, or its trace id (the one the cell's ``traceparent`` header started). Others are
counted and dropped. Metrics and logs (``/v1/metrics``, ``/v1/logs``) are accepted and
dropped, so an exporter that sends them too does not log errors.

Every body is bounded (:data:`benchkit._limits.MAX_OTLP_BYTES`, after decompression too)
and so is every cell (:data:`benchkit._limits.MAX_SPANS` spans; more are counted).
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from benchkit import _limits
from benchkit.traces._decode import DecodeError, RawSpan, decode_traces, export_response
from benchkit.traces._scope import CellTrace
from benchkit.traces._span import Span

__all__ = ["OtlpReceiver"]

_log = logging.getLogger("benchkit.traces")
_PATH = re.compile(r"^(?:/cells/([0-9a-f]{32}))?/v1/(traces|metrics|logs)/?$")


class _Cell:
    __slots__ = ("dropped", "last", "spans", "trace")

    def __init__(self, trace: CellTrace) -> None:
        self.trace = trace
        self.spans: list[RawSpan] = []
        self.dropped = 0
        self.last = 0.0  # when a span last arrived (time.monotonic)


class OtlpReceiver:
    """Collects OTLP/HTTP trace exports on ``127.0.0.1:port`` (0: a free port) for the
    cells opened with :meth:`open_cell`. Start with :meth:`start`, end with :meth:`stop`.

    .. versionadded:: 0.2.0
    """

    def __init__(self, *, port: int = 0, max_spans: int = _limits.MAX_SPANS) -> None:
        from benchkit.traces._decode import require_proto

        require_proto()
        self.port = port
        self.max_spans = max_spans
        self.unmatched = 0  # spans that belonged to no open cell
        self._cells: dict[str, _Cell] = {}
        self._traces: dict[str, str] = {}  # trace id -> token
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"OtlpReceiver({self.url if self._server else 'not started'})"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (an exporter's ``OTEL_EXPORTER_OTLP_ENDPOINT``)."""
        assert self._server is not None, "the receiver is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> str:
        """Listen, and serve in a daemon thread; the base URL."""
        if self._server is None:
            server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
            server.daemon_threads = True
            self._server = server
            self._thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="benchkit-otlp",
                daemon=True,
            )
            self._thread.start()
        return self.url

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    # -- cells --------------------------------------------------------------------------

    def open_cell(self) -> CellTrace:
        """A new cell: its endpoint, token and trace context."""
        token = secrets.token_hex(16)
        trace = CellTrace(
            endpoint=f"{self.url}/cells/{token}",
            token=token,
            trace_id=secrets.token_hex(16),
            span_id=secrets.token_hex(8),
        )
        with self._lock:
            self._cells[token] = _Cell(trace)
            self._traces[trace.trace_id] = token
        return trace

    def close_cell(self, trace: CellTrace) -> tuple[list[Span], int]:
        """Forget the cell: its spans (times from its first span) and how many were dropped."""
        with self._lock:
            cell = self._cells.pop(trace.token, None)
            for trace_id in [t for t, token in self._traces.items() if token == trace.token]:
                del self._traces[trace_id]
        if cell is None:
            return [], 0
        return _spans(cell.spans), cell.dropped

    def snapshot(self, trace: CellTrace) -> tuple[float, bool]:
        """(seconds since the cell's last span arrived, whether its spans form whole
        trees: some spans, and every parent among them or the cell's own span)."""
        with self._lock:
            cell = self._cells.get(trace.token)
            if cell is None:
                return 0.0, False
            spans = list(cell.spans)
            quiet = time.monotonic() - cell.last
        ids = {s.span_id for s in spans}
        whole = bool(spans) and all(
            s.parent_id is None or s.parent_id in ids or s.parent_id == trace.span_id for s in spans
        )
        return quiet, whole

    # -- what the handler calls ---------------------------------------------------------

    def _accept(self, token: str | None, spans: list[RawSpan]) -> None:
        now = time.monotonic()
        with self._lock:
            for span in spans:
                owner = token or _attribute_token(span) or self._traces.get(span.trace_id)
                cell = self._cells.get(owner) if owner else None
                if cell is None:
                    self.unmatched += 1
                    continue
                # a span of another trace started by the agent belongs to the cell too
                self._traces.setdefault(span.trace_id, cell.trace.token)
                if len(cell.spans) >= self.max_spans:
                    cell.dropped += 1
                    continue
                cell.spans.append(span)
                cell.last = now


def _attribute_token(span: RawSpan) -> str | None:
    for where in (span.resource, span.attributes):
        value = where.get("benchkit.cell")
        if isinstance(value, str):
            return value
    return None


def _spans(raw: list[RawSpan]) -> list[Span]:
    """The cell's spans in start order, times in ms from the first one's start."""
    if not raw:
        return []
    ordered = sorted(raw, key=lambda s: (s.start_ns, s.end_ns))
    origin = ordered[0].start_ns
    spans = []
    for s in ordered:
        service = s.resource.get("service.name")
        spans.append(
            Span(
                trace_id=s.trace_id,
                span_id=s.span_id,
                name=s.name,
                parent_id=s.parent_id,
                kind=s.kind,
                start_ms=round((s.start_ns - origin) / 1e6, 3),
                duration_ms=round(max(0, s.end_ns - s.start_ns) / 1e6, 3),
                status=s.status,
                status_message=s.status_message,
                attributes=dict(s.attributes),
                events=tuple(
                    {
                        "name": e["name"],
                        "t_ms": round((int(e["time_ns"]) - origin) / 1e6, 3),
                        "attributes": e["attributes"],
                    }
                    for e in s.events
                ),
                service=service if isinstance(service, str) else None,
                scope=s.scope,
            )
        )
    return spans


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body, bounded before and after decompression (gzip); _Refused with the
    status to answer otherwise."""
    length = handler.headers.get("Content-Length")
    if length is None or not length.isdigit():
        raise _Refused(411, "a Content-Length is required")
    if int(length) > _limits.MAX_OTLP_BYTES:
        raise _Refused(413, f"the body is over {_limits.MAX_OTLP_BYTES} bytes")
    body = handler.rfile.read(int(length))
    encoding = (handler.headers.get("Content-Encoding") or "identity").strip().lower()
    if encoding == "gzip":
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            body = inflater.decompress(body, _limits.MAX_OTLP_BYTES + 1)
        except zlib.error as exc:
            raise _Refused(400, f"the gzip body cannot be read: {exc}") from None
        if len(body) > _limits.MAX_OTLP_BYTES or inflater.unconsumed_tail:
            raise _Refused(413, f"the body is over {_limits.MAX_OTLP_BYTES} bytes unzipped")
    elif encoding != "identity":
        raise _Refused(415, f"Content-Encoding {encoding!r} is not gzip")
    return body


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _handler(receiver: OtlpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "benchkit-otlp"
        timeout = 30  # seconds a connection may sit silent (or drip) before it is closed

        def log_message(self, format: str, *args: Any) -> None:
            _log.debug("otlp: " + format, *args)

        def do_POST(self) -> None:
            found = _PATH.match(self.path.split("?", 1)[0])
            if found is None:
                self._answer(404, b'{"message": "no such path"}', "application/json")
                return
            token, signal = found.group(1), found.group(2)
            kind = self.headers.get("Content-Type") or ""
            try:
                body = _read_body(self)
                if signal == "traces":
                    receiver._accept(token, decode_traces(body, kind))
            except _Refused as exc:
                self._refuse(exc.status, exc.message)
                return
            except DecodeError as exc:
                status = 415 if "content type" in str(exc) else 400
                self._refuse(status, str(exc))
                return
            data, answered = export_response(kind)
            self._answer(200, data, answered)

        def _refuse(self, status: int, message: str) -> None:
            import json

            self._answer(status, json.dumps({"message": message}).encode(), "application/json")

        def _answer(self, status: int, data: bytes, kind: str) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    return Handler
