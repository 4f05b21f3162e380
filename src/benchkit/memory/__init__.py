"""Memory and RAG stores under test: the pipeline, the built-in store, and adapters.

* :class:`MemoryPipeline` — a :class:`~benchkit.protocols.Provider` that runs each cell
  as ingest → retrieve → answer → clean up over any memory store (registered as the
  provider type ``memory``);
* :class:`LocalBaseline` — the built-in store: SQLite FTS5 candidates, MemoryBench's BM25;
* :func:`as_memory_provider` — your own store (an object with add / retrieve / delete
  methods, sync or async) as a :class:`~benchkit.protocols.MemoryProvider`;
* :class:`HttpMemoryProvider` — a store behind six small JSON endpoints;
* :class:`SupermemoryProvider`, :class:`Mem0Provider` — the hosted services MemoryBench
  ships adapters for, through their public REST APIs;
* the named memory-provider registry (``benchkit.memory_providers`` entry points).

How to plug a store in: ``docs/memory-providers.md``. MemoryBench itself — its
``manifest.json`` format, ingestion strategies, evaluation protocols (:class:`MemoryExactMatch`,
:class:`DeletionCheck`, :class:`MemoryRetrieval`), llm-as-judge and ``results.jsonl``
export — is :mod:`benchkit.formats.memorybench`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr

if TYPE_CHECKING:
    from benchkit.memory._adapter import AdaptedMemoryProvider, as_memory_provider
    from benchkit.memory._baseline import LocalBaseline, tokenize
    from benchkit.memory._capabilities import (
        CAPABILITIES,
        capability,
        missing_capabilities,
        skip_message,
    )
    from benchkit.memory._http import HttpMemoryProvider
    from benchkit.memory._pipeline import (
        NO_ANSWER,
        Answer,
        AnswerGenerator,
        MemoryPipeline,
        MemoryQuery,
        TemplateAnswer,
        answer_generator,
    )
    from benchkit.memory._registry import (
        build_memory_provider,
        load_provider_module,
        memory_providers,
    )
    from benchkit.memory._services import Mem0Provider, SupermemoryProvider

__all__ = [
    "AdaptedMemoryProvider",
    "Answer",
    "AnswerGenerator",
    "CAPABILITIES",
    "HttpMemoryProvider",
    "LocalBaseline",
    "Mem0Provider",
    "MemoryPipeline",
    "MemoryQuery",
    "NO_ANSWER",
    "SupermemoryProvider",
    "TemplateAnswer",
    "answer_generator",
    "as_memory_provider",
    "build_memory_provider",
    "capability",
    "load_provider_module",
    "memory_providers",
    "missing_capabilities",
    "skip_message",
    "tokenize",
]

_WHERE = {
    "AdaptedMemoryProvider": "_adapter",
    "as_memory_provider": "_adapter",
    "LocalBaseline": "_baseline",
    "tokenize": "_baseline",
    "CAPABILITIES": "_capabilities",
    "missing_capabilities": "_capabilities",
    "skip_message": "_capabilities",
    "capability": "_capabilities",
    "HttpMemoryProvider": "_http",
    "NO_ANSWER": "_pipeline",
    "Answer": "_pipeline",
    "AnswerGenerator": "_pipeline",
    "MemoryPipeline": "_pipeline",
    "MemoryQuery": "_pipeline",
    "TemplateAnswer": "_pipeline",
    "answer_generator": "_pipeline",
    "build_memory_provider": "_registry",
    "load_provider_module": "_registry",
    "memory_providers": "_registry",
    "Mem0Provider": "_services",
    "SupermemoryProvider": "_services",
}


# Only at run time: a type checker sees the names declared under TYPE_CHECKING above and
# nothing else, so a typo such as `benchkit.Runer` is an error, not Any.
if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(
        __name__, {name: f"benchkit.memory.{mod}" for name, mod in _WHERE.items()}
    )
