"""Span scorers: checks on the OpenTelemetry spans the user's own agent exported in a cell.

They read ``metadata["spans"]`` that the ``traced`` provider puts on a response
(:mod:`benchkit.traces`); a response without spans cannot be judged (the score has an
``error``: run the condition's provider as ``traced``). Names are shell-style globs
(``execute_tool *``); ``attributes`` must all be present with equal values.

* ``span_exists`` — at least ``min`` spans match (``name``, ``attributes``, ``status``);
* ``span_count`` — between ``min`` and ``max`` spans match (``tool: true``: tool spans,
  those with ``gen_ai.operation.name: execute_tool`` in OpenTelemetry's GenAI conventions);
* ``span_duration`` — every matching span (default: the root spans) lasts at most
  ``max_ms`` milliseconds;
* ``span_errors`` — at most ``max`` (0) matching spans have status ``error``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from benchkit._limits import MAX_COUNT, MAX_TIMEOUT_S, out_of_bounds
from benchkit.errors import ConfigError
from benchkit.results import Score
from benchkit.traces._span import Span, spans_of

if TYPE_CHECKING:
    from benchkit.model import Response, Task

__all__ = [
    "SpanCountEvaluator",
    "SpanDurationEvaluator",
    "SpanErrorsEvaluator",
    "SpanExistsEvaluator",
]

#: The attribute OpenTelemetry's GenAI conventions put on a tool's span, and its value.
TOOL_ATTRIBUTE = ("gen_ai.operation.name", "execute_tool")


class _Select:
    """Which spans a scorer looks at: a name glob, attributes, a status, tool spans only."""

    def __init__(
        self,
        name: str | None,
        attributes: Mapping[str, Any] | None,
        status: str | None = None,
        tool: bool = False,
    ) -> None:
        if name is not None and (not isinstance(name, str) or not name):
            raise ConfigError(f"name must be a span name or glob, got {name!r}")
        if attributes is not None and not isinstance(attributes, Mapping):
            raise ConfigError("attributes must be a mapping", fix="write e.g. attributes: {k: v}.")
        if status not in (None, "ok", "error", "unset"):
            raise ConfigError(f"status {status!r} is unknown", fix="use ok, error or unset.")
        self.name = name
        self.attributes = dict(attributes or {})
        if tool:
            self.attributes.setdefault(*TOOL_ATTRIBUTE)
        self.status = status

    def __call__(self, span: Span) -> bool:
        if self.name is not None and not fnmatch.fnmatchcase(span.name, self.name):
            return False
        if self.status is not None and span.status != self.status:
            return False
        return all(span.attributes.get(k) == v for k, v in self.attributes.items())

    def describe(self) -> str:
        parts = [f"named {self.name!r}"] if self.name else []
        if self.attributes:
            parts.append(f"with {self.attributes}")
        if self.status:
            parts.append(f"status {self.status}")
        return "spans " + " ".join(parts) if parts else "spans"


def _spans(response: Response, label: str) -> tuple[Span, ...] | Score:
    found = spans_of(response.metadata)
    if found is None:
        return Score(
            name=label,
            value=None,
            passed=False,
            error="the response has no spans: run the condition's provider as `traced` "
            "(docs/agents.md)",
        )
    return found


def _count(name: str, value: Any, *, optional: bool) -> int | None:
    if value is None and optional:
        return None
    problem = out_of_bounds(value, 0, MAX_COUNT, integer=True)
    if problem is not None:
        raise ConfigError(f"{name} {problem}", fix=f"give {name} a whole number >= 0.")
    return int(value)


def _score(name: str, passed: bool, reason: str, **details: Any) -> Score:
    return Score(
        name=name,
        value=1.0 if passed else 0.0,
        passed=passed,
        reason=None if passed else reason,
        details=details,
    )


def _names(spans: Sequence[Span], limit: int = 8) -> str:
    names = [s.name for s in spans[:limit]]
    more = f" and {len(spans) - limit} more" if len(spans) > limit else ""
    return (", ".join(names) or "none") + more


class SpanExistsEvaluator:
    """``span_exists``: at least ``min`` (1) spans named ``name`` (a glob) with these
    ``attributes`` and ``status``.

    .. versionadded:: 0.2.0
    """

    thread = False

    def __init__(
        self,
        *,
        name: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        status: Literal["ok", "error", "unset"] | None = None,
        min: int = 1,
    ) -> None:
        self.select = _Select(name, attributes, status)
        self.min = _count("min", min, optional=False) or 0

    def evaluate(self, task: Task, response: Response) -> Score:
        spans = _spans(response, "span_exists")
        if isinstance(spans, Score):
            return spans
        n = sum(1 for s in spans if self.select(s))
        return _score(
            "span_exists",
            n >= self.min,
            f"{n} {self.select.describe()}, wanted at least {self.min}; the spans: {_names(spans)}",
            matched=n,
            spans=len(spans),
        )


class SpanCountEvaluator:
    """``span_count``: between ``min`` (0) and ``max`` (no limit) spans match ``name``,
    ``attributes`` (and ``tool: true``: tool spans).

    .. versionadded:: 0.2.0
    """

    thread = False

    def __init__(
        self,
        *,
        name: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        tool: bool = False,
        min: int = 0,
        max: int | None = None,
    ) -> None:
        self.select = _Select(name, attributes, tool=bool(tool))
        self.min = _count("min", min, optional=False) or 0
        self.max = _count("max", max, optional=True)

    def evaluate(self, task: Task, response: Response) -> Score:
        spans = _spans(response, "span_count")
        if isinstance(spans, Score):
            return spans
        n = sum(1 for s in spans if self.select(s))
        passed = n >= self.min and (self.max is None or n <= self.max)
        bound = f"at least {self.min}" if self.max is None else f"{self.min} to {self.max}"
        return _score(
            "span_count", passed, f"{n} {self.select.describe()}, wanted {bound}", count=n
        )


class SpanDurationEvaluator:
    """``span_duration``: every span named ``name`` (default: the root spans, those whose
    parent is not among the cell's spans) lasts at most ``max_ms`` milliseconds.

    .. versionadded:: 0.2.0
    """

    thread = False

    def __init__(self, *, max_ms: float, name: str | None = None) -> None:
        problem = out_of_bounds(max_ms, 0, MAX_TIMEOUT_S * 1000, above=True)
        if problem is not None:
            raise ConfigError(f"max_ms {problem}", fix="give a duration in milliseconds.")
        self.max_ms = float(max_ms)
        self.select = _Select(name, None)
        self.roots = name is None

    def evaluate(self, task: Task, response: Response) -> Score:
        spans = _spans(response, "span_duration")
        if isinstance(spans, Score):
            return spans
        ids = {s.span_id for s in spans}
        if self.roots:
            chosen = [s for s in spans if s.parent_id is None or s.parent_id not in ids]
        else:
            chosen = [s for s in spans if self.select(s)]
        if not chosen:
            what = "root spans" if self.roots else self.select.describe()
            return _score("span_duration", False, f"no {what} to time", longest_ms=None)
        longest = max(chosen, key=lambda s: s.duration_ms)
        return _score(
            "span_duration",
            longest.duration_ms <= self.max_ms,
            f"{longest.name!r} took {longest.duration_ms:.1f} ms, over {self.max_ms:g} ms",
            longest_ms=longest.duration_ms,
        )


class SpanErrorsEvaluator:
    """``span_errors``: at most ``max`` (0) spans (named ``name``, when given) have status
    ``error``.

    .. versionadded:: 0.2.0
    """

    thread = False

    def __init__(self, *, max: int = 0, name: str | None = None) -> None:
        self.max = _count("max", max, optional=False) or 0
        self.select = _Select(name, None, status="error")

    def evaluate(self, task: Task, response: Response) -> Score:
        spans = _spans(response, "span_errors")
        if isinstance(spans, Score):
            return spans
        failed = [s for s in spans if self.select(s)]
        detail = "; ".join(f"{s.name}: {s.status_message or 'error'}" for s in failed[:5])
        return _score(
            "span_errors",
            len(failed) <= self.max,
            f"{len(failed)} span(s) in error, at most {self.max} allowed: {detail}",
            errors=len(failed),
        )
