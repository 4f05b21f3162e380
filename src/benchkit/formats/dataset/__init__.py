"""The ``dataset`` format: data files people have (JSONL, CSV, Parquet, a saved Hugging
Face dataset) mapped onto multiple-choice tasks by a small YAML file of field names and
``{field}`` templates, with few-shot examples, scored by the model's log-likelihood of
each choice (docs/datasets.md).

    >>> import benchkit
    >>> suite = benchkit.load("benchmarks/reproduce/piqa.yaml")      # doctest: +SKIP
    >>> suite.benchmark.reproduces.metric                            # doctest: +SKIP
    'acc'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchkit.formats._document import Document
from benchkit.formats.dataset._loader import load
from benchkit.formats.dataset._read import DATA_SUFFIXES, Row, read_labels, read_rows
from benchkit.formats.dataset._template import Template
from benchkit.model import Suite

__all__ = [
    "DATA_SUFFIXES",
    "FORMAT",
    "DatasetFormat",
    "Row",
    "Template",
    "detect",
    "load",
    "read_labels",
    "read_rows",
]


def detect(path: Path, head: Any | None) -> bool:
    """A mapping whose ``dataset`` key is a mapping (where the data is)."""
    return isinstance(head, dict) and isinstance(head.get("dataset"), dict)


class DatasetFormat:
    """The ``dataset`` entry of the formats registry (see :mod:`benchkit.formats`)."""

    name = "dataset"

    def __repr__(self) -> str:
        return "<format dataset>"

    def detect(self, path: Path, head: Any | None) -> bool:
        return detect(path, head)

    def load(self, path: Path, *, document: Document | None = None) -> Suite:
        return load(path, document=document)


FORMAT = DatasetFormat()
