"""What a memory store returned, as benchkit's types: record ids and retrieved items.

Shared by the adapter of user objects (:mod:`benchkit.memory._adapter`) and the HTTP
store (:mod:`benchkit.memory._http`): a store may answer with benchkit's shapes, plain
strings, mappings, objects with attributes, or MemoryBench's ``{record: {id, context}}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from benchkit.errors import InvocationError
from benchkit.model import RetrievedItem

__all__ = ["excerpt", "to_items", "to_record_id"]

_CONTENT_KEYS = ("content", "context", "text", "memory")
_EXCERPT = 120


def excerpt(value: Any) -> str:
    """A short ``repr`` of a value, for an error message."""
    text = repr(value)
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"


def to_record_id(value: Any, where: str = "add") -> str:
    """A record id from what an ``add`` returned (a string, ``{"id": ...}``, ``.id``)."""
    found = value
    if isinstance(value, Mapping):
        found = value.get("id")
    elif not isinstance(value, (str, int)) and hasattr(value, "id"):
        found = value.id
    if isinstance(found, bool) or not isinstance(found, (str, int)) or found == "":
        raise InvocationError(
            f"{where} returned {excerpt(value)}; expected a record id (a string, "
            "a mapping with 'id', or an object with an 'id' attribute)",
            retryable=False,
        )
    return str(found)


def _field(item: Any, name: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def _item(value: Any, position: int, where: str) -> RetrievedItem:
    if isinstance(value, RetrievedItem):
        return value
    if isinstance(value, str):
        return RetrievedItem(id=f"result_{position}", content=value)
    record = _field(value, "record")
    source = record if record is not None else value
    content = next((c for key in _CONTENT_KEYS if (c := _field(source, key)) is not None), None)
    if not isinstance(content, str):
        raise InvocationError(
            f"{where} result {position} is {excerpt(value)}; expected a RetrievedItem, a "
            "string, or a mapping with 'content' (or MemoryBench's {record: {id, context}})",
            retryable=False,
        )
    ident = _field(source, "id")
    score = _field(value, "score")
    if score is None and record is not None:
        score = _field(record, "score")
    metadata = _field(source, "metadata")
    return RetrievedItem(
        id=str(ident) if ident is not None else f"result_{position}",
        content=content,
        score=float(score)
        if isinstance(score, (int, float)) and not isinstance(score, bool)
        else None,
        metadata=metadata if isinstance(metadata, Mapping) else None,
    )


def to_items(value: Any, where: str = "retrieve") -> list[RetrievedItem]:
    """:class:`RetrievedItem` objects from what a ``retrieve`` or ``list`` returned."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InvocationError(
            f"{where} returned {excerpt(value)}; expected a list of results", retryable=False
        )
    return [_item(v, i, where) for i, v in enumerate(value)]
