"""MemoryBench's data-driven benchmarks: ``manifest.json`` + a data file → a Suite.

    >>> import benchkit
    >>> suite = benchkit.load("benchmarks/memorybench/rag-template")     # doctest: +SKIP
    >>> result = benchkit.run(suite)                                      # doctest: +SKIP

The manifest is validated against the original's schema and defaults (shipped as
``benchkit/schemas/memorybench.schema.json``). Every problem is reported at once, each with
the original's dotted path (``ingestion.mode``), in one :class:`ManifestError` located at
the most relevant one (file, line, column, ``$.ingestion.mode``). Unknown keys are a
:class:`ManifestWarning`, not an error (the original drops them silently). Data files are
``.jsonl`` (streamed, one case per line; a bad line is an error naming it) or JSON (a list,
or one object).

Each case becomes a :class:`~benchkit.model.Task`:

* ``id`` — the record's ``id``, else ``question_id``, else ``case_<index>``; ``flatten``
  makes ``<parent>_<i>`` (parent = ``sample_id``, else ``id``, else ``rec_<n>``); ids must
  be unique;
* ``input`` — the retrieval query (the question; the verify query of add-delete-verify
  and deletion-check cases); ``expected`` — ``String(answer ?? "")``;
* ``setup`` — the ingestion strategy's add / wait / delete steps
  (:mod:`benchkit.formats.memorybench._ingest`); ``relevant_ids`` — the gold session ids;
* ``metadata`` — ``index`` and the record's own ``metadata`` (as the original), plus
  ``memory``: a :class:`~benchkit.formats.memorybench._case.MemoryCase`, what the pipeline
  and evaluators need (question, limit, question type, deleted content, ingestion counts,
  or the reason the case cannot be ingested).

Each memory provider named in ``providers`` becomes a :class:`~benchkit.model.Condition`
running the ``memory`` pipeline; the protocol and the listed retrieval metrics become the
benchmark's evaluators. The full reference is ``docs/formats/memorybench.md``.
"""

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr

if TYPE_CHECKING:
    from benchkit.formats.memorybench._case import IngestionCounts, MemoryCase
    from benchkit.formats.memorybench._data import flatten
    from benchkit.formats.memorybench._discover import Discovery, discover
    from benchkit.formats.memorybench._evaluate import (
        DeletionCheck,
        ExactMatchResult,
        MemoryExactMatch,
        MemoryRetrieval,
        exact_match,
        leaked_items,
        session_id,
    )
    from benchkit.formats.memorybench._export import (
        CombinationSummary,
        MemoryBenchSink,
        result_record,
        summarize_records,
    )
    from benchkit.formats.memorybench._ingest import (
        IngestionPlan,
        format_conversation,
        plan_ingestion,
    )
    from benchkit.formats.memorybench._judge import (
        JudgeSettings,
        JudgeVerdict,
        answer_prompt,
        judge_prompt,
        judge_score,
        judge_settings,
        parse_judge_reply,
        type_instruction,
    )
    from benchkit.formats.memorybench._loader import FORMAT, MemoryBenchFormat, detect, load
    from benchkit.formats.memorybench._validate import (
        KNOWN_METRICS,
        MANIFEST_FILE,
        ManifestError,
        ManifestWarning,
        load_manifest,
        schema,
    )

__all__ = [
    "CombinationSummary",
    "DeletionCheck",
    "Discovery",
    "ExactMatchResult",
    "FORMAT",
    "IngestionCounts",
    "IngestionPlan",
    "JudgeSettings",
    "JudgeVerdict",
    "KNOWN_METRICS",
    "MANIFEST_FILE",
    "ManifestError",
    "ManifestWarning",
    "MemoryBenchFormat",
    "MemoryBenchSink",
    "MemoryCase",
    "MemoryExactMatch",
    "MemoryRetrieval",
    "answer_prompt",
    "detect",
    "discover",
    "exact_match",
    "flatten",
    "format_conversation",
    "judge_prompt",
    "judge_score",
    "judge_settings",
    "leaked_items",
    "load",
    "load_manifest",
    "parse_judge_reply",
    "plan_ingestion",
    "result_record",
    "schema",
    "session_id",
    "summarize_records",
    "type_instruction",
]


#: Everything, imported on first use: listing the tools (``--help``) imports this package,
#: and nothing of the format until it is used (#41).
_WHERE = {
    "IngestionCounts": "_case",
    "MemoryCase": "_case",
    "flatten": "_data",
    "Discovery": "_discover",
    "discover": "_discover",
    "FORMAT": "_loader",
    "MemoryBenchFormat": "_loader",
    "detect": "_loader",
    "load": "_loader",
    "KNOWN_METRICS": "_validate",
    "MANIFEST_FILE": "_validate",
    "ManifestError": "_validate",
    "ManifestWarning": "_validate",
    "load_manifest": "_validate",
    "schema": "_validate",
    "CombinationSummary": "_export",
    "DeletionCheck": "_evaluate",
    "ExactMatchResult": "_evaluate",
    "IngestionPlan": "_ingest",
    "JudgeSettings": "_judge",
    "JudgeVerdict": "_judge",
    "MemoryBenchSink": "_export",
    "MemoryExactMatch": "_evaluate",
    "MemoryRetrieval": "_evaluate",
    "answer_prompt": "_judge",
    "exact_match": "_evaluate",
    "format_conversation": "_ingest",
    "judge_prompt": "_judge",
    "judge_score": "_judge",
    "judge_settings": "_judge",
    "leaked_items": "_evaluate",
    "parse_judge_reply": "_judge",
    "plan_ingestion": "_ingest",
    "result_record": "_export",
    "session_id": "_evaluate",
    "summarize_records": "_export",
    "type_instruction": "_judge",
}

# Only at run time: a type checker sees the names declared under TYPE_CHECKING above and
# nothing else, so a typo such as `benchkit.Runer` is an error, not Any.
if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(
        __name__, {name: f"benchkit.formats.memorybench.{mod}" for name, mod in _WHERE.items()}
    )
