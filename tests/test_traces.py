"""Traces from the user's own agent: the OTLP/HTTP receiver (protobuf and JSON, checked
against messages built with the official definitions), the ``traced`` provider around a
real OpenTelemetry-instrumented agent (a subprocess, and an HTTP server), and the span
scorers over what it collected."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.protobuf import json_format
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Status
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

import benchkit
from benchkit import Benchmark, CellResult, Condition, EvaluatorSpec, ProviderSpec, Suite, Task
from benchkit._limits import MAX_OTLP_BYTES
from benchkit.traces import OtlpReceiver, Span, spans_of
from benchkit.traces._decode import decode_traces

AGENT = Path(__file__).parent / "agents" / "otel_agent.py"
PY = sys.executable


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    found = OtlpReceiver()
    found.start()
    yield found
    found.stop()


def proto_request(spans: list[dict[str, Any]], resource: dict[str, str] | None = None) -> bytes:
    """An ExportTraceServiceRequest built with the official message classes."""
    made = []
    for s in spans:
        span = ProtoSpan(
            trace_id=bytes.fromhex(s["trace_id"]),
            span_id=bytes.fromhex(s["span_id"]),
            parent_span_id=bytes.fromhex(s.get("parent_id") or ""),
            name=s["name"],
            kind=s.get("kind", 1),
            start_time_unix_nano=s["start"],
            end_time_unix_nano=s["end"],
            attributes=[KeyValue(key=k, value=_any(v)) for k, v in s.get("attributes", {}).items()],
        )
        if s.get("error"):
            span.status.code = Status.STATUS_CODE_ERROR
            span.status.message = s["error"]
        made.append(span)
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(
                    attributes=[KeyValue(key=k, value=_any(v)) for k, v in (resource or {}).items()]
                ),
                scope_spans=[ScopeSpans(scope=InstrumentationScope(name="test"), spans=made)],
            )
        ]
    )
    data: bytes = request.SerializeToString()
    return data


def _any(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


def as_otlp_json(body: bytes) -> bytes:
    """The same request in OTLP/JSON: protobuf's JSON mapping, with hex ids."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    document = json_format.MessageToDict(request)
    for rs in document.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = __import__("base64").b64decode(span[key]).hex()
    return json.dumps(document).encode()


TRACE = "0af7651916cd43dd8448eb211c80319c"
ROOT = {
    "trace_id": TRACE,
    "span_id": "b7ad6b7169203331",
    "name": "agent.run",
    "start": 1_000_000_000,
    "end": 1_250_000_000,
}
TOOL = {
    "trace_id": TRACE,
    "span_id": "00f067aa0ba902b7",
    "parent_id": "b7ad6b7169203331",
    "name": "execute_tool calculator",
    "start": 1_100_000_000,
    "end": 1_150_000_000,
    "attributes": {"gen_ai.operation.name": "execute_tool", "n": 3, "ok": True},
    "error": "division by zero",
}


@pytest.mark.parametrize("encoding", ["protobuf", "json", "gzip"])
def test_the_receiver_files_spans_under_the_cell_of_the_path(
    receiver: OtlpReceiver, encoding: str
) -> None:
    cell = receiver.open_cell()
    body = proto_request([ROOT, TOOL], {"service.name": "calc"})
    headers = {"Content-Type": "application/x-protobuf"}
    if encoding == "json":
        body, headers = as_otlp_json(body), {"Content-Type": "application/json"}
    elif encoding == "gzip":
        body, headers["Content-Encoding"] = gzip.compress(body), "gzip"
    reply = httpx.post(f"{cell.endpoint}/v1/traces", content=body, headers=headers)
    assert reply.status_code == 200
    assert reply.headers["content-type"] == headers["Content-Type"]
    spans, dropped = receiver.close_cell(cell)
    assert dropped == 0
    assert [(s.name, s.start_ms, s.duration_ms) for s in spans] == [
        ("agent.run", 0.0, 250.0),
        ("execute_tool calculator", 100.0, 50.0),
    ]
    tool = spans[1]
    assert tool.parent_id == "b7ad6b7169203331" and tool.trace_id == TRACE
    assert tool.status == "error" and tool.status_message == "division by zero"
    assert tool.attributes == {"gen_ai.operation.name": "execute_tool", "n": 3, "ok": True}
    assert tool.service == "calc" and tool.scope == "test"


def test_spans_find_their_cell_by_trace_id_or_attribute(receiver: OtlpReceiver) -> None:
    first, second, third = receiver.open_cell(), receiver.open_cell(), receiver.open_cell()
    by_trace = dict(ROOT, trace_id=first.trace_id)
    by_attribute = dict(TOOL, trace_id="1" * 32, parent_id=None)
    stranger = dict(ROOT, trace_id="2" * 32)
    for body in (
        proto_request([by_trace]),
        proto_request([by_attribute], {"benchkit.cell": second.token}),
        proto_request([stranger]),
    ):
        reply = httpx.post(
            f"{receiver.url}/v1/traces",
            content=body,
            headers={"Content-Type": "application/x-protobuf"},
        )
        assert reply.status_code == 200
    assert [s.name for s in receiver.close_cell(first)[0]] == ["agent.run"]
    assert [s.name for s in receiver.close_cell(second)[0]] == ["execute_tool calculator"]
    assert receiver.close_cell(third) == ([], 0)
    assert receiver.unmatched == 1


@pytest.mark.parametrize(
    ("path", "headers", "body", "status"),
    [
        ("/v1/nothing", {"Content-Type": "application/json"}, b"{}", 404),
        ("/v1/traces", {"Content-Type": "text/plain"}, b"hello", 415),
        ("/v1/traces", {"Content-Type": "application/x-protobuf"}, b"\xff\xff\xff", 400),
        ("/v1/traces", {"Content-Type": "application/json"}, b"[1, 2]", 400),
        (
            "/v1/traces",
            {"Content-Type": "application/json"},
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
            400,
        ),
        ("/v1/traces", {"Content-Type": "application/json", "Content-Encoding": "br"}, b"{}", 415),
        (
            "/v1/traces",
            {"Content-Type": "application/json", "Content-Encoding": "gzip"},
            b"not gzip",
            400,
        ),
        ("/v1/metrics", {"Content-Type": "application/x-protobuf"}, b"", 200),
        ("/v1/logs", {"Content-Type": "application/json"}, b"{}", 200),
    ],
)
def test_bad_requests_get_a_4xx_with_a_message(
    receiver: OtlpReceiver, path: str, headers: dict[str, str], body: bytes, status: int
) -> None:
    reply = httpx.post(receiver.url + path, content=body, headers=headers)
    assert reply.status_code == status
    if status >= 400:
        assert reply.json()["message"]


def test_a_body_over_the_bound_is_refused_unread_and_unzipped_too(receiver: OtlpReceiver) -> None:
    import socket

    host, port = receiver.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            + f"Content-Length: {MAX_OTLP_BYTES + 1}\r\n\r\n".encode()
        )
        assert raw.recv(100).startswith(b"HTTP/1.1 413 ")
    bomb = gzip.compress(b"\0" * (MAX_OTLP_BYTES + 10))
    reply = httpx.post(
        receiver.url + "/v1/traces",
        content=bomb,
        headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"},
    )
    assert reply.status_code == 413


def test_a_cell_keeps_at_most_max_spans(receiver: OtlpReceiver) -> None:
    small = OtlpReceiver(max_spans=2)
    small.start()
    try:
        cell = small.open_cell()
        many = [dict(ROOT, span_id=f"{i:016x}") for i in range(5)]
        httpx.post(
            f"{cell.endpoint}/v1/traces",
            content=proto_request(many),
            headers={"Content-Type": "application/x-protobuf"},
        )
        spans, dropped = small.close_cell(cell)
        assert (len(spans), dropped) == (2, 3)
    finally:
        small.stop()


_ids = st.binary(min_size=8, max_size=8).map(bytes.hex)
_names = st.text(min_size=1, max_size=20)
_values = st.one_of(st.text(max_size=20), st.integers(-(2**63), 2**63 - 1), st.booleans())


@given(
    st.lists(
        st.tuples(
            _ids,
            _names,
            st.integers(0, 10**9),
            st.integers(0, 10**9),
            st.dictionaries(_names, _values, max_size=4),
        ),
        min_size=1,
        max_size=6,
        unique_by=lambda t: t[0],
    ),
    st.booleans(),
)
def test_decoding_gives_back_what_was_encoded(
    items: list[tuple[str, str, int, int, dict[str, Any]]], as_json: bool
) -> None:
    spans = [
        {
            "trace_id": TRACE,
            "span_id": sid,
            "name": name,
            "start": start,
            "end": start + took,
            "attributes": attrs,
        }
        for sid, name, start, took, attrs in items
    ]
    body = proto_request(spans)
    kind = "application/x-protobuf"
    if as_json:
        body, kind = as_otlp_json(body), "application/json"
    decoded = decode_traces(body, kind)
    assert [(s.span_id, s.name, s.start_ns, s.end_ns, dict(s.attributes)) for s in decoded] == [
        (s["span_id"], s["name"], s["start"], s["end"], s["attributes"]) for s in spans
    ]


# -- a real instrumented agent --------------------------------------------------------------


def run_traced(
    provider: dict[str, Any], tasks: list[Task], evaluators: list[EvaluatorSpec]
) -> list[CellResult]:
    suite = Suite(
        Benchmark("traced", tasks=tasks, evaluators=evaluators),
        conditions=[Condition("agent", ProviderSpec("traced", provider))],
    )
    return list(benchkit.run(suite, store=False, timeout=60).cells)


SCORERS = [
    EvaluatorSpec("exact"),
    EvaluatorSpec("span_exists", {"name": "agent.run"}),
    EvaluatorSpec(
        "span_exists",
        {"name": "chat *", "attributes": {"gen_ai.usage.input_tokens": 12}},
        name="chat",
    ),
    EvaluatorSpec("span_count", {"tool": True, "min": 2, "max": 3}),
    EvaluatorSpec("span_duration", {"max_ms": 30_000}),
    EvaluatorSpec("span_errors"),
]


def test_a_subprocess_agents_spans_are_collected_per_cell_and_scored() -> None:
    tasks = [
        Task("sum", input="2 + 3", expected="5"),
        Task("three", input="1 + 2 + 3", expected="6"),
        Task("bad", input="2 + x", expected="2"),
    ]
    provider = {"provider": {"type": "subprocess", "command": [PY, str(AGENT)], "memory_mb": None}}
    good, three, bad = run_traced(provider, tasks, SCORERS)
    assert good.status == "pass", (good.error, good.scores)
    assert three.status == "pass", (three.error, three.scores)
    assert good.response is not None and three.response is not None
    spans = spans_of(good.response.metadata)
    assert spans is not None
    assert [s.name for s in spans] == [
        "agent.run",
        "chat model",
        "execute_tool calculator",
        "execute_tool calculator",
    ]
    assert {s.service for s in spans} == {"sum-agent"}
    # the agent continued the cell's trace context: one trace per cell, under the cell's span
    assert len({s.trace_id for s in spans}) == 1
    assert spans[0].parent_id is not None
    other = spans_of(three.response.metadata)
    assert other is not None and len(other) == 5 and other[0].trace_id != spans[0].trace_id
    # the third cell's tool span is an error: span_errors says so, by name and message
    assert bad.status == "fail"
    failed = {s.name: s for s in bad.scores}
    assert not failed["span_errors"].passed
    assert "not a number: x" in (failed["span_errors"].reason or "")
    assert good.transcript is not None
    assert next(e.title for e in good.transcript.events if e.kind == "span") == "agent.run"


def test_span_scorers_without_spans_cannot_judge() -> None:
    suite = Suite(
        Benchmark(
            "plain",
            tasks=[Task("t", input="x", expected="x")],
            evaluators=[EvaluatorSpec("span_errors")],
        ),
        conditions=[Condition("echo", benchkit.CallableProvider(str))],
    )
    cell = benchkit.run(suite, store=False).cells[0]
    assert cell.error_category == "evaluation_error"
    assert "run the condition's provider as `traced`" in (cell.error or "")


@pytest.mark.slow
def test_an_http_agent_learns_the_trace_from_its_request() -> None:
    """A server started before the run exports to the receiver's fixed port; its spans
    reach the cell through the traceparent header the http provider sends."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
    }
    server = subprocess.Popen([PY, str(AGENT), "http"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert server.stdout is not None
        agent_port = int(server.stdout.readline())
        provider = {
            "port": port,
            "provider": {
                "type": "http",
                "url": f"http://127.0.0.1:{agent_port}/",
                "output_field": "answer",
            },
        }
        (cell,) = run_traced(provider, [Task("sum", input="2 + 3", expected="5")], SCORERS)
    finally:
        server.terminate()
        server.wait(10)
    assert cell.status == "pass", (cell.error, cell.scores)
    assert cell.response is not None
    spans = spans_of(cell.response.metadata)
    assert spans is not None and len(spans) == 4


def test_span_round_trip() -> None:
    span = Span(
        TRACE, "b7ad6b7169203331", "x", attributes={"a": 1}, status="error", status_message="m"
    )
    assert Span.from_dict(span.to_dict()) == span
