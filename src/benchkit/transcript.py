"""A cell's transcript: what happened inside one (task, condition, epoch), in order.

Providers, evaluators, verifiers, judges, memory steps and the LLM client call
:func:`record` as things happen — the request sent to the system under test, each model
reply, each tool call and its result, memory adds / retrievals / deletes, a verifier's
commands and output, a judge's prompt and raw reply, retries and rate-limit waits::

    from benchkit import transcript

    transcript.record("request", "POST /answer", {"question": question})
    ...
    transcript.record("response", "200 OK", body, duration=elapsed)

The runner opens a recorder for every cell (a :class:`contextvars.ContextVar`, so
concurrent cells, threads started through anyio and child tasks each see their own cell's
recorder, and nothing is global); outside a cell :func:`record` does nothing and costs one
context-variable read. The events end up on the cell (``CellResult.transcript``, not part
of the cell's JSON) and the run store keeps them beside it
(:meth:`benchkit.store.Store.transcript`, ``runs show RUN --cell task/condition/epoch``,
the explorer's cell view).

A transcript is bounded and holds no secret: every value is made JSON-safe, strings
longer than :data:`MAX_STRING` characters are cut with a visible ``…[truncated N bytes]``
mark, containers are cut at :data:`MAX_ITEMS` items and :data:`MAX_DEPTH` levels, a cell
keeps at most :data:`MAX_EVENTS` events and :data:`MAX_BYTES` bytes of them (then
``truncated`` is true and a last ``note`` event says how many were dropped). Secrets are
redacted by benchkit's one redaction (:mod:`benchkit._secrets`): values under keys that
name credentials (``authorization``, ``api_key``, ``token``, ``password``, ``secret``,
``cookie``...) are replaced by ``"[redacted]"``, and so is any occurrence of a configured
key or credential header, of the value of an environment variable whose name says it
holds a secret (``*_KEY``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``), of a bearer token,
or of a credential in a URL (``?api_key=…``, ``https://user:pw@host``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import attrs

from benchkit._secrets import REDACTED, SECRET_KEY, Secrets, known

__all__ = [
    "KINDS",
    "MAX_BYTES",
    "MAX_EVENTS",
    "MAX_STRING",
    "Recorder",
    "Transcript",
    "TranscriptEvent",
    "active",
    "judge",
    "judging",
    "record",
    "recording",
    "redact",
]

#: The kinds the explorer knows; any other lowercase word is kept and shown generically.
KINDS = (
    "request",
    "response",
    "message",
    "tool_call",
    "tool_result",
    "memory_add",
    "memory_retrieve",
    "memory_delete",
    "verifier",
    "judge_prompt",
    "judge_reply",
    "retry",
    "rate_limit",
    "error",
    "note",
)
#: Longest string kept in an event's data (characters); longer ones are cut with a mark.
MAX_STRING = 4000
#: Most items kept of one list or mapping in an event's data.
MAX_ITEMS = 50
#: Deepest nesting kept in an event's data.
MAX_DEPTH = 8
#: Most events a cell keeps.
MAX_EVENTS = 500
#: Most bytes (of the events' JSON) a cell keeps.
MAX_BYTES = 256_000
_MAX_TITLE = 200

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


@attrs.frozen
class TranscriptEvent:
    """One thing that happened in a cell: ``t`` seconds after the cell started, its
    ``kind`` (one of :data:`KINDS`, or another lowercase word), a one-line ``title``, a
    short JSON ``data`` value, and how long it took (seconds) when known."""

    t: float
    kind: str
    title: str
    data: Any = None
    duration: float | None = None


@attrs.frozen
class Transcript:
    """A cell's events in order; ``truncated`` says some were dropped or cut, ``bytes``
    is the size of the events' JSON."""

    events: tuple[TranscriptEvent, ...] = ()
    truncated: bool = False
    bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape the store and the explorer use."""
        return {
            "events": [attrs.asdict(e) for e in self.events],
            "truncated": self.truncated,
            "bytes": self.bytes,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Transcript:
        """The transcript of :meth:`to_dict`'s shape."""
        events = tuple(
            TranscriptEvent(
                t=float(e.get("t", 0.0)),
                kind=str(e.get("kind", "note")),
                title=str(e.get("title", "")),
                data=e.get("data"),
                duration=None if e.get("duration") is None else float(e["duration"]),
            )
            for e in data.get("events", ())
        )
        return cls(events, bool(data.get("truncated", False)), int(data.get("bytes", 0)))


class _Events:
    """What a recorder holds once something was recorded."""

    __slots__ = ("bytes", "dropped", "events", "secrets", "truncated")

    def __init__(self) -> None:
        self.events: list[TranscriptEvent] = []
        self.bytes = 0
        self.truncated = False
        self.dropped = 0
        self.secrets = known()


class Recorder:
    """The events of one cell as they are recorded (see :func:`recording`).

    The runner makes one for every cell, so making one is cheap: its event list is only
    made when something is recorded."""

    __slots__ = ("_held", "deterministic", "start")

    def __init__(self, deterministic: bool = False) -> None:
        self.start = time.perf_counter()
        self.deterministic = deterministic
        self._held: _Events | None = None

    def add(self, kind: str, title: str, data: Any = None, duration: float | None = None) -> None:
        """Record one event (made safe and bounded; see the module's docstring)."""
        held = self._held
        if held is None:
            held = self._held = _Events()
        if len(held.events) >= MAX_EVENTS or held.dropped:
            held.dropped += 1
            held.truncated = True
            return
        state = [False]
        clean = _clean(data, 0, held.secrets, state)
        title = held.secrets.scrub(str(title))
        if len(title) > _MAX_TITLE:
            title = title[:_MAX_TITLE] + "…"
        t = 0.0 if self.deterministic else round(time.perf_counter() - self.start, 6)
        if duration is not None:
            duration = 0.0 if self.deterministic else round(float(duration), 6)
        event = TranscriptEvent(t, str(kind) or "note", title, clean, duration)
        size = len(_ENCODER.encode(attrs.asdict(event)).encode("utf-8"))
        if held.bytes + size > MAX_BYTES:
            held.dropped += 1
            held.truncated = True
            return
        held.bytes += size
        held.truncated = held.truncated or state[0]
        held.events.append(event)

    def transcript(self) -> Transcript | None:
        """The recorded events, or None when nothing was recorded."""
        held = self._held
        if held is None:
            return None
        events = list(held.events)
        if held.dropped:
            t = 0.0 if self.deterministic else round(time.perf_counter() - self.start, 6)
            events.append(
                TranscriptEvent(
                    t, "note", f"…[truncated: {held.dropped} more event(s) not kept]", None
                )
            )
        return Transcript(tuple(events), held.truncated, held.bytes)


_CURRENT: ContextVar[Recorder | None] = ContextVar("benchkit_transcript", default=None)


def record(kind: str, title: str, data: Any = None, *, duration: float | None = None) -> None:
    """Add an event to the transcript of the cell being run (nothing outside a cell).

    ``kind`` is one of :data:`KINDS` (or another lowercase word), ``title`` one line,
    ``data`` any JSON-like value (made safe and bounded), ``duration`` seconds it took.
    """
    recorder = _CURRENT.get()
    if recorder is not None:
        recorder.add(kind, title, data, duration)


def active() -> bool:
    """True inside a cell that records (so a caller can skip building costly data)."""
    return _CURRENT.get() is not None


@contextmanager
def recording(*, deterministic: bool = False) -> Iterator[Recorder]:
    """Record the events of the code inside into a new :class:`Recorder` (the runner
    does this for every cell; a test or a harness may too)."""
    recorder = Recorder(deterministic)
    token = _CURRENT.set(recorder)
    try:
        yield recorder
    finally:
        _CURRENT.reset(token)


_JUDGE: ContextVar[str | None] = ContextVar("benchkit_transcript_judge", default=None)


@contextmanager
def judging(name: str) -> Iterator[None]:
    """Mark the model calls inside as judge ``name``'s: the LLM client records them as
    ``judge_prompt`` / ``judge_reply`` events instead of ``request`` / ``response``."""
    token = _JUDGE.set(name)
    try:
        yield
    finally:
        _JUDGE.reset(token)


def judge() -> str | None:
    """The judge whose model calls are being made (see :func:`judging`), or None."""
    return _JUDGE.get()


def redact(data: Any) -> Any:
    """``data`` as a transcript would keep it: JSON-safe, bounded, secrets redacted."""
    return _clean(data, 0, known(), [False])


def _cut(text: str, state: list[bool]) -> str:
    if len(text) <= MAX_STRING:
        return text
    state[0] = True
    rest = len(text[MAX_STRING:].encode("utf-8"))
    return f"{text[:MAX_STRING]}…[truncated {rest} bytes]"


def _clean(value: Any, depth: int, secrets: Secrets, state: list[bool]) -> Any:
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if value - value == 0.0 else str(value)
    if isinstance(value, str):
        return _cut(secrets.scrub(value), state)
    if isinstance(value, bytes):
        return _clean(value.decode("utf-8", "replace"), depth, secrets, state)
    if depth >= MAX_DEPTH:
        state[0] = True
        return "…[truncated: nested too deep]"
    if attrs.has(type(value)):
        value = attrs.asdict(value, recurse=False)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for i, (key, item) in enumerate(value.items()):
            if i >= MAX_ITEMS:
                state[0] = True
                out["…"] = f"[truncated: {len(value) - MAX_ITEMS} more keys]"
                break
            name = str(key)
            if SECRET_KEY.search(name) and item is not None and not isinstance(item, bool):
                out[name] = REDACTED
            else:
                out[name] = _clean(item, depth + 1, secrets, state)
        return out
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        kept = [_clean(item, depth + 1, secrets, state) for item in items[:MAX_ITEMS]]
        if len(items) > MAX_ITEMS:
            state[0] = True
            kept.append(f"…[truncated: {len(items) - MAX_ITEMS} more items]")
        return kept
    return _cut(secrets.scrub(str(value)), state)
