"""Each MemoryBench case record as a :class:`~benchkit.model.Task`: id, query, setup, memory."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from benchkit._js import MISSING, to_string
from benchkit.formats.memorybench._case import IngestionCounts, MemoryCase
from benchkit.formats.memorybench._data import DataFile, Origin, flatten
from benchkit.formats.memorybench._ingest import plan_ingestion, relevant_session_ids
from benchkit.formats.memorybench._manifest import (
    AddDeleteVerifyIngestion,
    DeletionCheckEvaluation,
    Manifest,
)
from benchkit.model import Task


@attrs.frozen
class TaskPlan:
    """What every case of one benchmark shares."""

    manifest: Manifest
    query_field: str
    deletion: DeletionCheckEvaluation | None
    type_field: str | None


def query_field(manifest: Manifest) -> str:
    ingestion, evaluation = manifest.ingestion, manifest.evaluation
    if isinstance(ingestion, AddDeleteVerifyIngestion) and ingestion.verify_query_field:
        return ingestion.verify_query_field
    if isinstance(evaluation, DeletionCheckEvaluation):
        return evaluation.verification_query_field
    return manifest.query.question_field


def _case_id(record: Mapping[str, Any], index: int) -> str:
    for key in ("id", "question_id"):
        value = record.get(key)
        if value is not None:
            return to_string(value)
    return f"case_{index}"


def _deleted(
    record: Mapping[str, Any], plan: TaskPlan, planned: tuple[str, ...]
) -> list[str] | None:
    assert plan.deletion is not None
    value = record.get(plan.deletion.deleted_content_field, MISSING)
    if value is MISSING:
        return list(planned) if planned else None
    if isinstance(value, list):
        return [to_string(v) for v in value if v is not None]
    return None if value is None else [to_string(value)]


def record_task(record: Mapping[str, Any], index: int, plan: TaskPlan) -> Task:
    manifest = plan.manifest
    ingestion = plan_ingestion(record, manifest.ingestion)
    question = record.get(manifest.query.question_field, MISSING)
    query = record.get(plan.query_field, MISSING)
    problem = ingestion.error
    if query is MISSING or query is None:
        problem = problem or f"Query field '{plan.query_field}' not found in input"
        query_text = ""
    else:
        query_text = to_string(query)
    question_text = query_text if question is MISSING or question is None else to_string(question)
    tags: tuple[str, ...] = ()
    question_type: Any = None
    if plan.type_field:
        question_type = record.get(plan.type_field)
        if question_type is not None:
            tags = (f"type:{to_string(question_type)}",)
    deleted = None if plan.deletion is None else _deleted(record, plan, ingestion.deleted)
    own = record.get("metadata")
    metadata: dict[str, Any] = {"index": index, **(own if isinstance(own, dict) else {})}
    metadata["memory"] = MemoryCase(
        question=question_text,
        limit=manifest.retrieval_limit,
        setup_error=problem or None,
        ingestion=IngestionCounts(ingestion.total, ingestion.selected),
        question_type=question_type,
        deleted=None if deleted is None else tuple(deleted),
    )
    expected = record.get(manifest.query.expected_answer_field)
    return Task(
        id=_case_id(record, index),
        input=query_text,
        expected="" if expected is None else to_string(expected),
        description=question_text[:100] or None,
        tags=tags,
        relevant_ids=relevant_session_ids(record, manifest.ingestion),
        setup=ingestion.steps,
        metadata=metadata,
    )


def cases(data: DataFile, plan: TaskPlan) -> Iterator[tuple[dict[str, Any], int, Origin]]:
    """(record, case index, origin) after flattening; a repeated case id is an error."""
    seen: dict[str, Origin] = {}
    at: list[Origin] = [Origin()]

    def records() -> Iterator[dict[str, Any]]:
        for record, origin in data.records():
            at[0] = origin  # flatten pulls one record, then yields all of its cases
            yield record

    rule = plan.manifest.flatten
    cases = flatten(records(), rule) if rule is not None else records()
    for index, case in enumerate(cases):
        origin = at[0]
        ident = _case_id(case, index)
        first = seen.get(ident)
        if first is not None:
            raise data.error(
                f"duplicate case id {ident!r} (first from {first.describe()})",
                origin,
                fix="give every case a unique id (flattened cases are <parent id>_<n>).",
            )
        seen[ident] = origin
        yield case, index, origin
