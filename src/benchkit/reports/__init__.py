"""Reports read results and render them; they never re-run anything.

* :func:`to_markdown` — a Markdown summary (conditions, comparisons, errors);
* :func:`to_table` — the same as a :mod:`rich` table for terminals;
* :func:`to_json` — the full :class:`~benchkit.results.RunResult` as JSON;
* :func:`to_junit_xml` — JUnit XML, one test case per cell, for CI systems;
* :data:`MARKDOWN_SECTIONS` — the tools' own sections of the Markdown report, by format.
"""

from __future__ import annotations

from benchkit.reports._junit import to_junit_xml
from benchkit.reports._text import (
    MARKDOWN_SECTIONS,
    summary_rows,
    to_json,
    to_markdown,
    to_table,
)

__all__ = [
    "MARKDOWN_SECTIONS",
    "summary_rows",
    "to_json",
    "to_junit_xml",
    "to_markdown",
    "to_table",
]
