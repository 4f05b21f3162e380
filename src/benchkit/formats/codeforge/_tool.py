"""CodeForge as a tool: published under the entry-point group ``benchkit.tools``."""

from __future__ import annotations

from benchkit.tools import Tool

__all__ = ["TOOL"]

_PACKAGE = "benchkit.formats.codeforge"

TOOL = Tool(
    name="codeforge",
    title="CodeForge",
    package=_PACKAGE,
    description="Chat models and code generators on YAML datasets, scored by judge metrics.",
    formats={"codeforge": f"{_PACKAGE}:FORMAT"},
    evaluators={
        "codeforge_correctness": f"{_PACKAGE}._metrics:GEvalMetric",
        "codeforge_tool_correctness": f"{_PACKAGE}._metrics:ToolCorrectness",
        "codeforge_faithfulness": f"{_PACKAGE}._metrics:Faithfulness",
        "codeforge_answer_relevancy": f"{_PACKAGE}._metrics:AnswerRelevancy",
        "codeforge_contextual_precision": f"{_PACKAGE}._metrics:ContextualPrecision",
    },
    commands=(f"{_PACKAGE}._cli:add_commands",),
    explorer_view="static/view.js",
)
