"""OTLP/HTTP trace requests decoded with the official protocol definitions.

An ``ExportTraceServiceRequest`` arrives as protobuf (``application/x-protobuf``) or as
OTLP's JSON encoding (``application/json``); both are read into the message classes of
``opentelemetry-proto`` (the ``benchkit[otel]`` extra) — the protobuf runtime parses the
binary form, ``google.protobuf.json_format`` the JSON one, after the one thing OTLP/JSON
does differently from protobuf's JSON mapping (trace and span ids are hex, not base64) —
so nothing here parses the wire format by hand.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from benchkit.errors import ProviderError

__all__ = ["DecodeError", "RawSpan", "decode_traces", "export_response"]

_INSTALL_FIX = "install the extra: pip install 'benchkit[otel]'."
_KINDS = ("unspecified", "internal", "server", "client", "producer", "consumer")
_STATUS = ("unset", "ok", "error")
#: Attributes kept per span (and per event); a longer list is cut.
MAX_ATTRIBUTES = 128
#: Characters kept of one attribute's string value.
MAX_VALUE_CHARS = 4000


class DecodeError(ValueError):
    """A request body that is not an OTLP trace export."""


@attrs.frozen
class RawSpan:
    """A decoded span with its absolute times (Unix nanoseconds) and its resource's
    attributes, before it is given to a cell."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    start_ns: int
    end_ns: int
    status: str
    status_message: str | None
    attributes: Mapping[str, Any]
    events: tuple[Mapping[str, Any], ...]
    resource: Mapping[str, Any]
    scope: str | None


def require_proto() -> None:
    """ProviderError naming the extra when ``opentelemetry-proto`` cannot be imported."""
    try:
        import opentelemetry.proto.collector.trace.v1.trace_service_pb2  # noqa: F401
    except ImportError as exc:
        raise ProviderError(
            f"collecting OTLP traces needs `opentelemetry-proto`, which cannot be imported: {exc}",
            fix=_INSTALL_FIX,
        ) from exc


def decode_traces(body: bytes, content_type: str) -> list[RawSpan]:
    """The spans of one OTLP/HTTP trace export (``content_type`` picks the encoding)."""
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError as ProtobufError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    kind = content_type.split(";", 1)[0].strip().lower()
    request = ExportTraceServiceRequest()
    if kind == "application/x-protobuf":
        try:
            request.ParseFromString(body)
        except (ProtobufError, RuntimeError, ValueError) as exc:
            raise DecodeError(f"not an OTLP protobuf trace export: {exc}") from None
    elif kind == "application/json":
        try:
            document = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise DecodeError(f"not JSON: {exc}") from None
        if not isinstance(document, dict):
            raise DecodeError("an OTLP/JSON export is a JSON object")
        try:
            json_format.ParseDict(_ids_to_base64(document), request, ignore_unknown_fields=True)
        except (json_format.ParseError, ValueError, TypeError) as exc:
            raise DecodeError(f"not an OTLP/JSON trace export: {exc}") from None
    else:
        raise DecodeError(f"content type {content_type!r} is not OTLP/HTTP")
    return list(_spans(request))


def export_response(content_type: str) -> tuple[bytes, str]:
    """An empty ``ExportTraceServiceResponse`` (full success) in the request's encoding."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    if content_type.split(";", 1)[0].strip().lower() == "application/json":
        return b"{}", "application/json"
    return ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf"


_ID_KEYS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


def _ids_to_base64(value: Any, depth: int = 0) -> Any:
    """OTLP/JSON writes ids as hex; protobuf's JSON mapping reads bytes as base64."""
    if depth > 64:
        raise DecodeError("nested too deep")
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in _ID_KEYS and isinstance(item, str):
                try:
                    item = base64.b64encode(bytes.fromhex(item)).decode("ascii")
                except ValueError:
                    raise DecodeError(f"{key} {item[:40]!r} is not hex") from None
            else:
                item = _ids_to_base64(item, depth + 1)
            out[key] = item
        return out
    if isinstance(value, list):
        return [_ids_to_base64(item, depth + 1) for item in value]
    return value


def _spans(request: Any) -> Iterator[RawSpan]:
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name or None
            for span in scope_spans.spans:
                yield RawSpan(
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    parent_id=span.parent_span_id.hex() or None,
                    name=span.name,
                    kind=_KINDS[span.kind] if 0 <= span.kind < len(_KINDS) else "unspecified",
                    start_ns=int(span.start_time_unix_nano),
                    end_ns=int(span.end_time_unix_nano),
                    status=_STATUS[span.status.code] if 0 <= span.status.code < 3 else "unset",
                    status_message=span.status.message or None,
                    attributes=_attributes(span.attributes),
                    events=tuple(
                        {
                            "name": event.name,
                            "time_ns": int(event.time_unix_nano),
                            "attributes": _attributes(event.attributes),
                        }
                        for event in list(span.events)[:MAX_ATTRIBUTES]
                    ),
                    resource=resource,
                    scope=scope,
                )


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in list(pairs)[:MAX_ATTRIBUTES]}


def _value(value: Any, depth: int = 0) -> Any:
    """An OTLP ``AnyValue`` as a JSON value (bytes as hex, strings cut)."""
    which = value.WhichOneof("value")
    if which == "string_value":
        text: str = value.string_value
        return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "…"
    if which == "bool_value":
        return bool(value.bool_value)
    if which == "int_value":
        return int(value.int_value)
    if which == "double_value":
        number = float(value.double_value)
        return number if number - number == 0.0 else str(number)
    if which == "bytes_value":
        return bytes(value.bytes_value).hex()
    if depth > 8:
        return "…"
    if which == "array_value":
        return [_value(v, depth + 1) for v in list(value.array_value.values)[:MAX_ATTRIBUTES]]
    if which == "kvlist_value":
        return {
            kv.key: _value(kv.value, depth + 1)
            for kv in list(value.kvlist_value.values)[:MAX_ATTRIBUTES]
        }
    return None
