"""An agent instrumented with the official OpenTelemetry SDK, exporting OTLP/HTTP (protobuf).

Run by the tests as benchkit's ``subprocess`` system (one JSON-RPC request on stdin, the
answer on stdout) or, with ``http``, as a small HTTP server (POST a benchkit body, get
``{"answer": ...}``; the port is the first stdout line). It finds its exporter's endpoint
in the standard ``OTEL_EXPORTER_OTLP_*`` variables and continues the trace context benchkit
gives it (``TRACEPARENT`` for a subprocess, the ``traceparent`` header over HTTP).

Its spans: ``agent.run`` (the root), ``chat model`` (a pretend model call with token
attributes) and one ``execute_tool calculator`` span per term of the sum it is given (the
GenAI conventions' attributes); a term that is not a number makes its tool span an error.
"""

from __future__ import annotations

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from opentelemetry import context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

provider = TracerProvider(resource=Resource.create({"service.name": "sum-agent"}))
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
tracer = provider.get_tracer("tests.otel_agent")


def answer(question: str, parent: context.Context) -> str:
    """Sum the terms of ``question`` ("2 + 3 + x"), one tool span per term."""
    with tracer.start_as_current_span("agent.run", context=parent) as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("chat model") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.usage.input_tokens", 12)
        total = 0.0
        for term in question.split("+"):
            with tracer.start_as_current_span("execute_tool calculator") as span:
                span.set_attribute("gen_ai.operation.name", "execute_tool")
                span.set_attribute("gen_ai.tool.name", "calculator")
                try:
                    total += float(term)
                except ValueError:
                    span.set_status(Status(StatusCode.ERROR, f"not a number: {term.strip()}"))
        return f"{total:g}"


def jsonrpc() -> None:
    request = json.loads(sys.stdin.readline())
    carrier = {"traceparent": os.environ.get("TRACEPARENT", "")}
    parent = TraceContextTextMapPropagator().extract(carrier)
    result = answer(str(request["params"]), parent)
    provider.shutdown()  # exports what is left before the answer: the cell's spans are in
    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}), flush=True)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        parent = TraceContextTextMapPropagator().extract(dict(self.headers.items()))
        data = json.dumps({"answer": answer(str(body["input"]), parent)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve() -> None:
    server = HTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    serve() if sys.argv[1:] == ["http"] else jsonrpc()
