"""The typed per-task data of a MemoryBench case: ``task.metadata["memory"]``.

The loader builds one :class:`MemoryCase` per case; the memory pipeline reads the
:class:`~benchkit.memory.MemoryQuery` part of it (question, retrieval limit, the reason a
case cannot be ingested), MemoryBench's evaluators the rest (question type, deleted
content). Tasks written by hand may carry a plain mapping with the same keys instead;
:meth:`MemoryCase.of` reads both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from benchkit.errors import ConfigError
from benchkit.memory import MemoryQuery
from benchkit.model import Task

__all__ = ["IngestionCounts", "MemoryCase"]


@attrs.frozen
class IngestionCounts:
    """How many memories the case's record holds, and how many the strategy ingests."""

    total: int
    selected: int


@attrs.frozen
class MemoryCase(MemoryQuery):
    """One MemoryBench case's data, beyond the task's input and expected answer.

    ``question_type`` is the record's question type when the manifest names a type field
    (it picks the judge's type instruction); ``deleted`` the contents a deletion-check case
    must no longer retrieve; ``ingestion`` the record's memory counts.
    """

    ingestion: IngestionCounts | None = None
    question_type: Any = None
    deleted: tuple[str, ...] | None = None

    @classmethod
    def of(cls, task: Task) -> MemoryCase:
        """The task's case data: the typed object, or one read from a mapping (a task built
        by hand: ``metadata={"memory": {"deleted": [...]}}``)."""
        found = task.metadata.get("memory")
        if isinstance(found, MemoryCase):
            return found
        if isinstance(found, MemoryQuery):
            return cls(question=found.question, limit=found.limit, setup_error=found.setup_error)
        if not isinstance(found, Mapping):
            return _NO_CASE
        base = MemoryQuery.of(task)
        deleted = found.get("deleted")
        if deleted is not None and (isinstance(deleted, str) or not _is_list(deleted)):
            raise ConfigError(
                f"task {task.id!r}: metadata.memory.deleted must be a list of texts, "
                f"got {deleted!r}"
            )
        counts = found.get("ingestion")
        return cls(
            question=base.question,
            limit=base.limit,
            setup_error=base.setup_error,
            ingestion=IngestionCounts(**counts) if isinstance(counts, Mapping) else None,
            question_type=found.get("question_type"),
            deleted=None if deleted is None else tuple(deleted),
        )


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


_NO_CASE = MemoryCase()
