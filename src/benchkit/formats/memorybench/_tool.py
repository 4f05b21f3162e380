"""MemoryBench as a tool: published under the entry-point group ``benchkit.tools``."""

from __future__ import annotations

from benchkit.tools import Command, Tool

__all__ = ["TOOL"]

_PACKAGE = "benchkit.formats.memorybench"

TOOL = Tool(
    name="memorybench",
    title="MemoryBench",
    package=_PACKAGE,
    description="Memory and RAG stores: ingest conversations, then answer and judge questions.",
    formats={"memorybench": f"{_PACKAGE}:FORMAT"},
    evaluators={
        "memory_exact_match": f"{_PACKAGE}._evaluate:MemoryExactMatch",
        "memory_llm_judge": f"{_PACKAGE}._llm:MemoryLLMJudge",
        "memory_retrieval": f"{_PACKAGE}._evaluate:MemoryRetrieval",
        "deletion_check": f"{_PACKAGE}._evaluate:DeletionCheck",
    },
    answer_generators={"llm": f"{_PACKAGE}._llm:LLMAnswer"},
    commands=(
        Command(
            name="memory",
            help="MemoryBench benchmarks against memory providers (list, eval, explore)",
            add=f"{_PACKAGE}._cli:add_commands",
        ),
    ),
    routes=f"{_PACKAGE}._serve:ROUTES",
    jobs={"memorybench": f"{_PACKAGE}._serve:LOAD_JOB"},
    report_html=f"{_PACKAGE}._html:html_section",
    explorer_view="static/view.js",
)
