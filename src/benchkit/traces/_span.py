"""A span as a cell keeps it: what the OTLP receiver decoded, in plain JSON values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

__all__ = ["KEY", "Span", "spans_of"]

#: Where a cell's spans live in ``Response.metadata``.
KEY = "spans"

_EMPTY: Mapping[str, Any] = {}


@attrs.frozen
class Span:
    """One span of the user's agent: ids (hex), name, kind (``internal``, ``server``,
    ``client``, ``producer``, ``consumer`` or ``unspecified``), when it started (ms after
    the cell's first span) and how long it took (ms), its status (``unset``, ``ok`` or
    ``error``, with the message), its attributes and events, and the service (the
    resource's ``service.name``) and instrumentation scope that made it.

    .. versionadded:: 0.2.0
    """

    trace_id: str
    span_id: str
    name: str
    parent_id: str | None = None
    kind: str = "internal"
    start_ms: float = 0.0
    duration_ms: float = 0.0
    status: str = "unset"
    status_message: str | None = None
    attributes: Mapping[str, Any] = attrs.field(default=_EMPTY, hash=False)
    events: tuple[Mapping[str, Any], ...] = ()
    service: str | None = None
    scope: str | None = None

    @property
    def is_error(self) -> bool:
        return self.status == "error"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "parent_id": self.parent_id,
            "name": self.name,
            "kind": self.kind,
            "start_ms": self.start_ms,
            "duration_ms": self.duration_ms,
            "status": self.status,
        }
        if self.status_message:
            out["status_message"] = self.status_message
        if self.attributes:
            out["attributes"] = dict(self.attributes)
        if self.events:
            out["events"] = [dict(e) for e in self.events]
        if self.service is not None:
            out["service"] = self.service
        if self.scope is not None:
            out["scope"] = self.scope
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Span:
        attributes = data.get("attributes")
        events = data.get("events")
        return cls(
            trace_id=str(data.get("trace_id", "")),
            span_id=str(data.get("span_id", "")),
            name=str(data.get("name", "")),
            parent_id=None if not data.get("parent_id") else str(data["parent_id"]),
            kind=str(data.get("kind") or "internal"),
            start_ms=_number(data.get("start_ms")),
            duration_ms=_number(data.get("duration_ms")),
            status=str(data.get("status") or "unset"),
            status_message=None
            if data.get("status_message") is None
            else str(data["status_message"]),
            attributes=dict(attributes) if isinstance(attributes, Mapping) else {},
            events=tuple(dict(e) for e in events or () if isinstance(e, Mapping))
            if isinstance(events, Sequence)
            else (),
            service=None if data.get("service") is None else str(data["service"]),
            scope=None if data.get("scope") is None else str(data["scope"]),
        )


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def spans_of(metadata: Mapping[str, Any] | None) -> tuple[Span, ...] | None:
    """The spans a response's metadata holds, or None when it holds none (the provider
    was not traced)."""
    kept = metadata.get(KEY) if metadata else None
    if not isinstance(kept, Sequence) or isinstance(kept, str):
        return None
    return tuple(Span.from_dict(s) for s in kept if isinstance(s, Mapping))
