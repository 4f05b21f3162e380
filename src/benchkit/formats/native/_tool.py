"""benchkit's own format as a tool: published under the entry-point group ``benchkit.tools``."""

from __future__ import annotations

from benchkit.tools import Tool

__all__ = ["TOOL"]

TOOL = Tool(
    name="native",
    title="benchkit",
    package="benchkit.formats.native",
    description="benchkit's own benchmark files: YAML, JSON or JSONL (benchkit: 1).",
    formats={"native": "benchkit.formats.native:FORMAT"},
)
