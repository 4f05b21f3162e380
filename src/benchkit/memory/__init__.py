"""Memory and RAG stores under test: the pipeline, the built-in store, and adapters.

* :class:`MemoryPipeline` — a :class:`~benchkit.protocols.Provider` that runs each cell
  as ingest → retrieve → answer → clean up over any memory store (registered as the
  provider type ``memory``);
* :class:`LocalBaseline` — the built-in store: SQLite FTS5 candidates, MemoryBench's BM25;
* :func:`as_memory_provider` — your own store (an object with add / retrieve / delete
  methods, sync or async) as a :class:`~benchkit.protocols.MemoryProvider`;
* :class:`HttpMemoryProvider` — a store behind six small JSON endpoints;
* MemoryBench's protocols as evaluators (:class:`MemoryExactMatch`, :class:`DeletionCheck`,
  :class:`MemoryRetrieval`), the llm-as-judge prompts and parser, and the MemoryBench
  ``results.jsonl`` export (:class:`MemoryBenchSink`).

How to plug a store in: ``docs/memory-providers.md``. The MemoryBench format itself
(``manifest.json``) is :mod:`benchkit.formats.memorybench`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr

if TYPE_CHECKING:
    from benchkit.memory._adapter import AdaptedMemoryProvider, as_memory_provider
    from benchkit.memory._baseline import LocalBaseline, tokenize
    from benchkit.memory._capabilities import CAPABILITIES, missing_capabilities, skip_message
    from benchkit.memory._evaluate import (
        DeletionCheck,
        ExactMatchResult,
        MemoryExactMatch,
        MemoryRetrieval,
        exact_match,
        leaked_items,
        session_id,
    )
    from benchkit.memory._export import (
        CombinationSummary,
        MemoryBenchSink,
        result_record,
        summarize_records,
    )
    from benchkit.memory._http import HttpMemoryProvider
    from benchkit.memory._ingest import IngestionPlan, format_conversation, plan_ingestion
    from benchkit.memory._judge import (
        JudgeSettings,
        JudgeVerdict,
        answer_prompt,
        judge_prompt,
        judge_score,
        judge_settings,
        parse_judge_reply,
        type_instruction,
    )
    from benchkit.memory._pipeline import (
        NO_ANSWER,
        Answer,
        AnswerGenerator,
        MemoryPipeline,
        TemplateAnswer,
    )
    from benchkit.memory._registry import (
        build_memory_provider,
        load_provider_module,
        memory_providers,
    )

__all__ = [
    "AdaptedMemoryProvider",
    "Answer",
    "AnswerGenerator",
    "CAPABILITIES",
    "CombinationSummary",
    "DeletionCheck",
    "ExactMatchResult",
    "HttpMemoryProvider",
    "IngestionPlan",
    "JudgeSettings",
    "JudgeVerdict",
    "LocalBaseline",
    "MemoryBenchSink",
    "MemoryExactMatch",
    "MemoryPipeline",
    "MemoryRetrieval",
    "NO_ANSWER",
    "TemplateAnswer",
    "answer_prompt",
    "as_memory_provider",
    "build_memory_provider",
    "exact_match",
    "format_conversation",
    "judge_prompt",
    "judge_score",
    "judge_settings",
    "leaked_items",
    "load_provider_module",
    "memory_providers",
    "missing_capabilities",
    "parse_judge_reply",
    "plan_ingestion",
    "result_record",
    "session_id",
    "skip_message",
    "summarize_records",
    "tokenize",
    "type_instruction",
]

_WHERE = {
    "AdaptedMemoryProvider": "_adapter",
    "as_memory_provider": "_adapter",
    "LocalBaseline": "_baseline",
    "tokenize": "_baseline",
    "CAPABILITIES": "_capabilities",
    "missing_capabilities": "_capabilities",
    "skip_message": "_capabilities",
    "DeletionCheck": "_evaluate",
    "ExactMatchResult": "_evaluate",
    "MemoryExactMatch": "_evaluate",
    "MemoryRetrieval": "_evaluate",
    "exact_match": "_evaluate",
    "leaked_items": "_evaluate",
    "session_id": "_evaluate",
    "CombinationSummary": "_export",
    "MemoryBenchSink": "_export",
    "result_record": "_export",
    "summarize_records": "_export",
    "HttpMemoryProvider": "_http",
    "IngestionPlan": "_ingest",
    "format_conversation": "_ingest",
    "plan_ingestion": "_ingest",
    "JudgeSettings": "_judge",
    "JudgeVerdict": "_judge",
    "answer_prompt": "_judge",
    "judge_prompt": "_judge",
    "judge_score": "_judge",
    "judge_settings": "_judge",
    "parse_judge_reply": "_judge",
    "type_instruction": "_judge",
    "NO_ANSWER": "_pipeline",
    "Answer": "_pipeline",
    "AnswerGenerator": "_pipeline",
    "MemoryPipeline": "_pipeline",
    "TemplateAnswer": "_pipeline",
    "build_memory_provider": "_registry",
    "load_provider_module": "_registry",
    "memory_providers": "_registry",
}


__getattr__ = lazy_getattr(
    __name__, {name: f"benchkit.memory.{mod}" for name, mod in _WHERE.items()}
)
