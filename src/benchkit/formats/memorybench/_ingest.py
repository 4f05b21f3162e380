"""Ingestion strategies: turn one MemoryBench case record into memory set-up steps.

The original ingests while it runs a case; benchkit computes the steps when the benchmark
loads (pure functions of the record and the manifest) and the memory pipeline replays them
against whichever store is under test. The byte layout of every stored memory is the
original's (notes A.4):

    >>> print(format_conversation([("user", "Hi, I'm Alex"), ("assistant", "Hello!")], "s1", ""))
    === Session: s1 ===
    [USER]: Hi, I'm Alex
    <BLANKLINE>
    [ASSISTANT]: Hello!

(The blank line the original means to put after the header is dropped by its own
``filter(Boolean)``; so is an empty date line.)

A record the strategy cannot ingest (a missing field, a session that is not a list of
messages) gives an :class:`IngestionPlan` with ``error`` set: the case then fails as an
error result with that message instead of running with nothing ingested.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from benchkit._js import MISSING, stringify, to_string, trim, truthy
from benchkit.formats.memorybench._manifest import (
    AddDeleteVerifyIngestion,
    Ingestion,
    SessionIngestion,
    SimpleIngestion,
)
from benchkit.model import SetupStep

__all__ = [
    "IngestionPlan",
    "format_conversation",
    "parse_evidence",
    "parse_relevant_evidence",
    "plan_ingestion",
    "relevant_session_ids",
    "session_indices",
]

_DIALOG_REF = re.compile(r"^D([0-9]+):")
_RELEVANT_REF = re.compile(r"^(D[0-9]+)(?::|$)", re.IGNORECASE)


@attrs.frozen
class IngestionPlan:
    """The set-up steps for one case, and what the strategy found.

    ``total`` counts the items or sessions available, ``selected`` those chosen (lazy and
    shared modes choose fewer). ``deleted`` holds the contents an add-delete-verify case
    deletes (what a deletion check must not see again). ``error`` says why the record
    cannot be ingested; the steps are then empty.
    """

    steps: tuple[SetupStep, ...] = ()
    total: int = 0
    selected: int = 0
    deleted: tuple[str, ...] = ()
    error: str | None = None


class _Unusable(Exception):
    """A record the strategy cannot ingest; its message becomes the case's error."""


def _kind(value: Any) -> str:
    if value is MISSING:
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _as_text(value: Any) -> str:
    """What the original stores for a content item: a string as is, else its JSON."""
    return value if isinstance(value, str) else stringify(value)


def _same(a: Any, b: Any) -> bool:
    """JavaScript's ``===`` on JSON values (objects and lists are never equal)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return a is None and b is None


def _includes(items: Sequence[Any], value: Any) -> bool:
    return any(_same(item, value) for item in items)


def _at(items: Sequence[Any] | None, index: int) -> Any:
    """``items?.[index]``: MISSING past the end or when there is no list."""
    if items is None or index >= len(items):
        return MISSING
    return items[index]


def _list_or_none(value: Any) -> list[Any] | None:
    """A field that should hold a list: the list, one string as a list, else None."""
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [value]
    return None


# --------------------------------------------------------------------------- formatting


def format_conversation(messages: Sequence[tuple[str, str]], session_id: Any, date: Any) -> str:
    """The original's ``formatConversation``: a header, a date line, then the turns."""
    body = "\n\n".join(f"[{role.upper()}]: {content}" for role, content in messages)
    header = f"=== Session: {to_string(session_id)} ===" if truthy(session_id) else ""
    date_line = f"Date: {to_string(date)}" if truthy(date) else ""
    return "\n".join(part for part in (header, date_line, "", body) if part)


def _messages(
    session: Any, speaker_a: Any, dialogue_formatter: str, where: str
) -> list[tuple[str, str]]:
    """A session as (role, content) pairs: LoCoMo dialogue turns or role/content messages."""
    first = session[0] if isinstance(session, list) and session else MISSING
    dialogue = False
    if truthy(first):
        if not isinstance(first, dict):
            raise _Unusable(
                f"{where}: its first turn is {_kind(first)}, not an object "
                "(expected {speaker, text} turns or {role, content} messages)"
            )
        dialogue = "speaker" in first and "text" in first
    if dialogue and truthy(speaker_a):
        turns: list[tuple[str, str]] = []
        for j, turn in enumerate(session):
            if not isinstance(turn, dict):
                if turn is None:
                    raise _Unusable(f"{where}, turn {j}: null is not a dialogue turn")
                turn = {}
            speaker = turn.get("speaker", MISSING)
            text = turn.get("text", MISSING)
            role = "user" if _same(speaker, speaker_a) else "assistant"
            if dialogue_formatter == "speaker_text":
                content = f"{to_string(speaker)}: {to_string(text)}"
            else:
                content = to_string(text)
            turns.append((role, content))
        return turns
    if not isinstance(session, list):
        raise _Unusable(f"{where}: expected a list of messages, got {_kind(session)}")
    messages: list[tuple[str, str]] = []
    for j, message in enumerate(session):
        role = message.get("role", MISSING) if isinstance(message, dict) else MISSING
        if not isinstance(role, str):
            raise _Unusable(
                f"{where}, message {j}: `role` must be a string, got {_kind(role)}"
                + ("" if isinstance(message, dict) else f" (the message is {_kind(message)})")
            )
        messages.append((role, to_string(message.get("content", MISSING))))
    return messages


# --------------------------------------------------------------------------- evidence


def parse_evidence(evidence: Sequence[Any], parser: str) -> list[str]:
    """Answer session ids from evidence, as ingestion reads them (lazy / shared modes).

    ``direct`` keeps the string items as they are; ``dialog_refs`` reads ``D<n>:<turn>``
    references (``"D1:3; D2:5"`` holds two) — the colon is required and ``D`` is
    case-sensitive, unlike :func:`parse_relevant_evidence`.
    """
    if parser == "direct":
        return [item for item in evidence if isinstance(item, str)]
    found: dict[str, None] = {}
    for item in evidence:
        if not isinstance(item, str):
            continue
        for part in item.split(";"):
            match = _DIALOG_REF.match(trim(part))
            if match:
                found[f"D{match.group(1)}"] = None
    return list(found)


def parse_relevant_evidence(evidence: Any, parser: str) -> list[str]:
    """Relevant session ids from evidence, as the retrieval metrics read them.

    Accepts one string or a list. ``direct`` keeps trimmed non-empty strings;
    ``dialog_refs`` accepts ``D5`` and ``d3:1`` (case-insensitive, colon optional) and
    upper-cases them. Unique, in first-seen order.
    """
    if isinstance(evidence, list):
        items = evidence
    elif evidence is MISSING or evidence is None:
        items = []
    else:
        items = [evidence]
    if parser == "direct":
        return [text for item in items if isinstance(item, str) and (text := trim(item))]
    found: dict[str, None] = {}
    for item in items:
        if not isinstance(item, str):
            continue
        for part in item.split(";"):
            match = _RELEVANT_REF.match(trim(part))
            if match:
                found[match.group(1).upper()] = None
    return list(found)


def relevant_session_ids(record: Mapping[str, Any], ingestion: Ingestion) -> tuple[str, ...]:
    """The gold session ids of a case (empty: no retrieval metrics for it).

    Only session-based ingestion has them: ``answer_session_ids_field`` when it holds a
    list, else the evidence parsed by :func:`parse_relevant_evidence`.
    """
    if not isinstance(ingestion, SessionIngestion):
        return ()
    ids: list[str] | None = None
    if ingestion.answer_session_ids_field:
        value = record.get(ingestion.answer_session_ids_field, MISSING)
        if isinstance(value, list):
            ids = [to_string(item) for item in value]
    if ids is None and ingestion.evidence_field:
        parsed = parse_relevant_evidence(
            record.get(ingestion.evidence_field, MISSING), ingestion.evidence_parser
        )
        if parsed:
            ids = parsed
    return tuple(dict.fromkeys(ids or ()))


# --------------------------------------------------------------------------- sessions


def session_indices(
    total: int,
    session_ids: Sequence[Any] | None,
    answer_ids: Sequence[Any] | None,
    mode: str,
    shared_sample_size: float,
) -> list[int]:
    """Which sessions a mode ingests (notes A.4).

    ``lazy``: the answer sessions, else the first one. ``shared``: the answer sessions
    plus ``max(shared_sample_size - answers, 5)`` evenly spread ones. ``full``: all.

        >>> session_indices(20, [f"s{i}" for i in range(20)], ["s7", "s15"], "shared", 10)
        [0, 2, 5, 7, 10, 12, 15, 17]
    """
    answers: list[int] = []
    if session_ids is not None and answer_ids is not None:
        answers = [
            i for i, sid in enumerate(session_ids) if truthy(sid) and _includes(answer_ids, sid)
        ]
    if mode == "lazy":
        if session_ids is None or answer_ids is None:
            return [0]
        return answers or [0]
    if mode == "shared":
        size = max(shared_sample_size - len(answers), 5)
        if size >= total:
            sample = list(range(total))
        else:
            step = total / size
            sample = []
            i = 0
            while i < size:
                index = math.floor(i * step)
                if index not in sample:
                    sample.append(index)
                i += 1
        return sorted(set(answers) | set(sample))
    return list(range(total))


def _dynamic_sessions(
    conversation: Mapping[str, Any], prefix: str, date_suffix: str
) -> tuple[list[Any], list[str], list[Any]]:
    """LoCoMo's ``session_<n>`` keys: the sessions in number order, ids ``D<n>``, dates."""
    pattern = re.compile(f"^{prefix}[0-9]+$")

    def number(key: str) -> float:
        digits = re.match(r"[0-9]+", key.replace(prefix, "", 1))
        return int(digits.group()) if digits else math.inf

    keys = sorted((k for k in conversation if pattern.search(k)), key=number)
    sessions: list[Any] = []
    ids: list[str] = []
    dates: list[Any] = []
    for key in keys:
        value = conversation[key]
        if isinstance(value, list):
            sessions.append(value)
            ids.append(f"D{key.replace(prefix, '', 1)}")
            date = conversation.get(key + date_suffix)
            dates.append("" if date is None else date)
    return sessions, ids, dates


def _plan_sessions(record: Mapping[str, Any], cfg: SessionIngestion) -> IngestionPlan:
    speaker_a: Any = MISSING
    answer_ids: list[Any] | None = None
    session_ids: list[Any] | None
    dates: list[Any] | None
    if cfg.sessions_format == "dynamic_keys":
        conversation = record.get(cfg.sessions_field, MISSING)
        if isinstance(conversation, list):
            conversation = {}
        if not isinstance(conversation, dict):
            raise _Unusable(f"Sessions field '{cfg.sessions_field}' not found or not an object")
        sessions, ids, dates = _dynamic_sessions(
            conversation, cfg.session_key_prefix, cfg.date_key_suffix
        )
        session_ids = list(ids)
        speaker_a = conversation.get("speaker_a", MISSING)
        if cfg.evidence_field:
            evidence = record.get(cfg.evidence_field, MISSING)
            if isinstance(evidence, list):
                answer_ids = list(parse_evidence(evidence, cfg.evidence_parser))
        elif cfg.answer_session_ids_field:
            answer_ids = _list_or_none(record.get(cfg.answer_session_ids_field, MISSING))
    else:
        raw = record.get(cfg.sessions_field, MISSING)
        if not isinstance(raw, list):
            raise _Unusable(f"Sessions field '{cfg.sessions_field}' not found or not an array")
        sessions = raw
        session_ids = (
            _list_or_none(record.get(cfg.session_ids_field, MISSING))
            if cfg.session_ids_field
            else None
        )
        dates = _list_or_none(record.get(cfg.dates_field, MISSING)) if cfg.dates_field else None
        if cfg.answer_session_ids_field:
            answer_ids = _list_or_none(record.get(cfg.answer_session_ids_field, MISSING))
    total = len(sessions)
    if total == 0:
        raise _Unusable("No sessions found to ingest")
    chosen = session_indices(total, session_ids, answer_ids, cfg.mode, cfg.shared_sample_size)
    steps: list[SetupStep] = []
    for index in chosen:
        session = sessions[index] if index < total else MISSING
        if not truthy(session):
            continue
        session_id = _at(session_ids, index)
        date = _at(dates, index)
        if cfg.content_formatter == "conversation":
            where = f"session {to_string(session_id) if truthy(session_id) else index}"
            messages = _messages(session, speaker_a, cfg.dialogue_content_formatter, where)
            content = format_conversation(messages, session_id, date)
        else:
            content = _as_text(session)
        metadata: dict[str, Any] = {"_sessionId": session_id, "_sessionDate": date}
        metadata = {k: v for k, v in metadata.items() if v is not MISSING}
        metadata["_sessionIndex"] = index
        steps.append(SetupStep("add", content=content, metadata=metadata))
    return IngestionPlan(tuple(steps), total=total, selected=len(chosen))


def _plan_simple(record: Mapping[str, Any], cfg: SimpleIngestion) -> IngestionPlan:
    content = record.get(cfg.content_field, MISSING)
    if content is MISSING:
        raise _Unusable(f"Content field '{cfg.content_field}' not found in input")
    if cfg.is_array and not isinstance(content, list):
        raise _Unusable(
            f"Content field '{cfg.content_field}' is {_kind(content)}, not an array "
            "(the manifest sets is_array: true)"
        )
    items = content if cfg.is_array else [content]
    picked = {f: record[f] for f in cfg.metadata_fields or () if f in record}
    steps = tuple(
        SetupStep("add", content=_as_text(item), metadata={**picked, "_index": i})
        for i, item in enumerate(items)
    )
    return IngestionPlan(steps, total=len(items), selected=len(items))


def _plan_add_delete(record: Mapping[str, Any], cfg: AddDeleteVerifyIngestion) -> IngestionPlan:
    content = record.get(cfg.add_content_field, MISSING)
    if content is MISSING:
        raise _Unusable(f"Content field '{cfg.add_content_field}' not found in input")
    items = content if isinstance(content, list) else [content]
    steps: list[SetupStep] = []
    texts: dict[str, str] = {}
    for i, item in enumerate(items):
        ref = str(i)
        metadata: dict[str, Any] = {}
        if isinstance(item, dict) and "content" in item:
            text = _as_text(item["content"])
            if item.get("id") is not None:
                ref = to_string(item["id"])
            if isinstance(item.get("metadata"), dict):
                metadata = dict(item["metadata"])
        else:
            text = _as_text(item)
        if ref in texts:
            raise _Unusable(f"two items of '{cfg.add_content_field}' have the id {ref!r}")
        texts[ref] = text
        steps.append(SetupStep("add", content=text, target=ref, metadata={**metadata, "_index": i}))
    targets = record.get(cfg.delete_target_field, MISSING)
    if targets is MISSING:
        raise _Unusable(f"Delete target field '{cfg.delete_target_field}' not found in input")
    refs = list(texts)
    chosen: list[str] = []
    for target in targets if isinstance(targets, list) else [targets]:
        if isinstance(target, str) and target in texts:
            chosen.append(target)
        elif isinstance(target, int) and not isinstance(target, bool) and 0 <= target < len(refs):
            chosen.append(refs[target])
        else:
            raise _Unusable(
                f"delete target {stringify(target)} in '{cfg.delete_target_field}' names no item "
                f"of '{cfg.add_content_field}' (ids: {', '.join(refs)}; or an index from 0)"
            )
    if cfg.phase_delay_ms > 0:
        steps.append(SetupStep("wait", delay_ms=float(cfg.phase_delay_ms)))
    steps.extend(SetupStep("delete", target=ref) for ref in chosen)
    deleted = tuple(texts[ref] for ref in dict.fromkeys(chosen))
    return IngestionPlan(tuple(steps), total=len(items), selected=len(items), deleted=deleted)


def plan_ingestion(record: Mapping[str, Any], ingestion: Ingestion) -> IngestionPlan:
    """The set-up steps that ingest ``record`` with ``ingestion``'s strategy."""
    try:
        if isinstance(ingestion, SimpleIngestion):
            return _plan_simple(record, ingestion)
        if isinstance(ingestion, SessionIngestion):
            return _plan_sessions(record, ingestion)
        return _plan_add_delete(record, ingestion)
    except _Unusable as exc:
        return IngestionPlan(error=str(exc))
