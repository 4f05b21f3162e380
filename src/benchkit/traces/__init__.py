"""Traces from the user's own agent: OpenTelemetry spans collected per cell over OTLP/HTTP.

* :class:`TracedProvider` (provider ``traced``) — wraps any provider: a receiver on
  127.0.0.1 for the run, an endpoint of its own for every cell, the spans in the response
  (``metadata["spans"]``) and the cell's transcript;
* :class:`OtlpReceiver` — the receiver (protobuf and JSON, gzip; needs the
  ``benchkit[otel]`` extra, for the official ``opentelemetry-proto`` definitions);
* :class:`Span`, :func:`spans_of` — a span as a cell keeps it;
* :func:`otlp_env`, :func:`otlp_headers`, :class:`CellTrace` — how a subprocess or an HTTP
  system learns where to send its spans (docs/agents.md).

.. versionadded:: 0.2.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr

if TYPE_CHECKING:
    from benchkit.traces._provider import TracedProvider
    from benchkit.traces._receiver import OtlpReceiver
    from benchkit.traces._scope import CellTrace, otlp_env, otlp_headers
    from benchkit.traces._span import Span, spans_of

__all__ = [
    "CellTrace",
    "OtlpReceiver",
    "Span",
    "TracedProvider",
    "otlp_env",
    "otlp_headers",
    "spans_of",
]

_LAZY = {
    "CellTrace": "benchkit.traces._scope",
    "OtlpReceiver": "benchkit.traces._receiver",
    "Span": "benchkit.traces._span",
    "TracedProvider": "benchkit.traces._provider",
    "otlp_env": "benchkit.traces._scope",
    "otlp_headers": "benchkit.traces._scope",
    "spans_of": "benchkit.traces._span",
}

if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _LAZY)
