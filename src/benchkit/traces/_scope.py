"""Which cell is being traced, and how its system under test learns where to send spans.

:class:`~benchkit.traces.TracedProvider` opens a :class:`CellTrace` for every cell it runs
(a context variable, so concurrent cells never share one); the subprocess provider adds
:func:`otlp_env` to the child's environment and the HTTP provider sends :func:`otlp_headers`
with its request. Outside a traced cell both are empty, so those providers behave exactly
as before. This module imports nothing but the standard library and attrs: the providers
import it on every call.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar

import attrs

__all__ = ["CellTrace", "current", "otlp_env", "otlp_headers"]


@attrs.frozen
class CellTrace:
    """One traced cell: the OTLP/HTTP endpoint of its own (``.../cells/<token>``; an
    exporter appends ``/v1/traces``), its token, and the W3C trace context benchkit gives
    it (``trace_id``, and ``span_id``: the cell's own span, the parent of the agent's root
    span; never exported itself)."""

    endpoint: str
    token: str
    trace_id: str
    span_id: str

    @property
    def traceparent(self) -> str:
        """The W3C ``traceparent`` value: version 00, sampled."""
        return f"00-{self.trace_id}-{self.span_id}-01"


_CELL: ContextVar[CellTrace | None] = ContextVar("benchkit_cell_trace", default=None)


def current() -> CellTrace | None:
    """The traced cell being run here, or None."""
    return _CELL.get()


def otlp_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` plus, inside a traced cell, the standard OpenTelemetry variables that point
    an OTLP/HTTP exporter at the cell's own endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` and
    its ``_TRACES_`` form, protocol ``http/protobuf``, a short batch delay), the resource
    attribute ``benchkit.cell`` and ``TRACEPARENT`` (the cell's trace context, for an
    agent that continues it). A resource attribute list already in ``env`` is kept."""
    cell = _CELL.get()
    if cell is None:
        return dict(env)
    resource = f"benchkit.cell={cell.token}"
    given = env.get("OTEL_RESOURCE_ATTRIBUTES")
    return {
        **env,
        "OTEL_EXPORTER_OTLP_ENDPOINT": cell.endpoint,
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{cell.endpoint}/v1/traces",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_RESOURCE_ATTRIBUTES": f"{given},{resource}" if given else resource,
        "TRACEPARENT": cell.traceparent,
    }


def otlp_headers() -> dict[str, str]:
    """Inside a traced cell, the headers an HTTP system under test gets: ``traceparent``
    (its spans join the cell's trace when its instrumentation continues the context),
    ``X-Benchkit-Cell`` (the token, for a span or resource attribute ``benchkit.cell``)
    and ``X-Benchkit-Otlp-Endpoint`` (the cell's endpoint); empty outside one."""
    cell = _CELL.get()
    if cell is None:
        return {}
    return {
        "traceparent": cell.traceparent,
        "X-Benchkit-Cell": cell.token,
        "X-Benchkit-Otlp-Endpoint": cell.endpoint,
    }
