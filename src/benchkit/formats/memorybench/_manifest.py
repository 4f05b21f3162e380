"""The typed MemoryBench manifest: what ``manifest.json`` says, with the original's defaults.

The classes mirror the original's zod schema (notes A.2) one-to-one; JSON Schema
validation happens first (``benchkit/schemas/memorybench.schema.json``), then
:func:`benchkit.serde.structure` builds these objects — the union members are told apart
by their ``strategy`` / ``protocol`` literal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

__all__ = [
    "AddDeleteVerifyIngestion",
    "DeletionCheckEvaluation",
    "Evaluation",
    "ExactMatchEvaluation",
    "Flatten",
    "Ingestion",
    "LlmJudgeEvaluation",
    "Manifest",
    "Query",
    "SessionIngestion",
    "SimpleIngestion",
]


@attrs.frozen
class Flatten:
    """Expand a record's ``field`` list into one case per item (the first ``max_items``)."""

    field: str
    max_items: float | None = None
    promote_fields: tuple[str, ...] = ()


@attrs.frozen
class SimpleIngestion:
    """Add ``record[content_field]`` (each item of it when ``is_array``)."""

    strategy: Literal["simple"]
    content_field: str
    is_array: bool = False
    metadata_fields: tuple[str, ...] | None = None


@attrs.frozen
class SessionIngestion:
    """Add conversation sessions, one memory per session (LongMemEval, LoCoMo)."""

    strategy: Literal["session-based"]
    sessions_field: str
    session_ids_field: str | None = None
    dates_field: str | None = None
    answer_session_ids_field: str | None = None
    evidence_field: str | None = None
    mode: Literal["lazy", "shared", "full"] = "full"
    shared_sample_size: float = 10
    content_formatter: Literal["conversation", "raw"] = "conversation"
    sessions_format: Literal["array", "dynamic_keys"] = "array"
    session_key_prefix: str = "session_"
    date_key_suffix: str = "_date_time"
    evidence_parser: Literal["direct", "dialog_refs"] = "direct"
    dialogue_content_formatter: Literal["speaker_text", "role_content"] = "speaker_text"


@attrs.frozen
class AddDeleteVerifyIngestion:
    """Add content, wait ``phase_delay_ms``, delete the targets, then query."""

    strategy: Literal["add-delete-verify"]
    add_content_field: str
    delete_target_field: str
    verify_query_field: str | None = None
    phase_delay_ms: float = 100


Ingestion = SimpleIngestion | SessionIngestion | AddDeleteVerifyIngestion


@attrs.frozen
class Query:
    """Which record fields hold the question and the answer; how many memories to fetch."""

    question_field: str
    expected_answer_field: str
    retrieval_limit: float = 10


@attrs.frozen
class ExactMatchEvaluation:
    """String comparison with the original's correctness ladder."""

    protocol: Literal["exact-match"]
    case_sensitive: bool = False
    normalize_whitespace: bool = True


@attrs.frozen
class LlmJudgeEvaluation:
    """An LLM grades the answer; ``type_field`` picks per-type instructions."""

    protocol: Literal["llm-as-judge"]
    judge_backend: (
        Literal[
            "anthropic-vertex", "google-vertex", "openai", "azure-openai", "anthropic", "google"
        ]
        | None
    ) = None
    project_id: str | None = None
    region: str | None = None
    model: str | None = None
    type_field: str | None = None
    type_instructions: Mapping[str, str] | None = None
    type_instructions_file: str | None = None


@attrs.frozen
class DeletionCheckEvaluation:
    """Deleted content must not come back for the verification query."""

    protocol: Literal["deletion-check"]
    verification_query_field: str
    deleted_content_field: str
    fuzzy_match: bool = False


Evaluation = ExactMatchEvaluation | LlmJudgeEvaluation | DeletionCheckEvaluation


@attrs.frozen
class Manifest:
    """A whole ``manifest.json``, validated, with every default filled in."""

    manifest_version: Literal["1"]
    name: str
    version: str
    data_file: str
    ingestion: Ingestion
    query: Query
    evaluation: Evaluation
    metrics: tuple[str, ...]
    required_capabilities: tuple[str, ...]
    description: str | None = None
    source: str | None = None
    flatten: Flatten | None = None

    @property
    def retrieval_limit(self) -> int:
        """``query.retrieval_limit`` as a count (a fraction is cut, as ``slice`` does)."""
        return int(self.query.retrieval_limit)
