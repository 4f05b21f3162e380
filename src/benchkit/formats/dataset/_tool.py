"""The dataset source as a tool: published under the entry-point group ``benchkit.tools``."""

from __future__ import annotations

from benchkit.tools import Tool

__all__ = ["TOOL"]

# The tool's name is not its format's ("dataset"): the generic layers must never name a
# tool, and "dataset" is also everyone's word for data (a test searches them for it).
TOOL = Tool(
    name="dataset-files",
    title="Dataset files",
    package="benchkit.formats.dataset",
    description="Multiple-choice datasets in JSONL, CSV or Parquet, mapped by field names "
    "and {field} templates, scored by log-likelihood as published benchmarks are.",
    formats={"dataset": "benchkit.formats.dataset:FORMAT"},
)
