"""A tool's own sections of a run's reports, found by the run's source format.

Every installed tool's :attr:`~benchkit.tools.Tool.report_html` and
:attr:`~benchkit.tools.Tool.report_markdown`, keyed by each format the tool reads, and the
plug-ins' of the entry-point groups ``benchkit.report_sections`` and
``benchkit.markdown_sections``: ``f(run JSON) -> text``. The reports name no tool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from benchkit.registry import Registry, default_registries

__all__ = ["MARKDOWN_SECTIONS", "SECTIONS", "find_section"]

Section = Callable[[Mapping[str, Any]], str]

#: A tool's own section of the HTML report, by source format: ``f(run JSON) -> HTML``.
SECTIONS: Registry[Section] = Registry(
    "report section",
    "benchkit.report_sections",
    tools=default_registries().tools,
    contributes="report_html",
)

#: A tool's own section of the Markdown report, by source format: ``f(run JSON) -> Markdown``.
MARKDOWN_SECTIONS: Registry[Section] = Registry(
    "Markdown report section",
    "benchkit.markdown_sections",
    tools=default_registries().tools,
    contributes="report_markdown",
)

_BY_FIELD = {"report_html": SECTIONS, "report_markdown": MARKDOWN_SECTIONS}


def find_section(field: str, source_format: str | None) -> Section | None:
    """The section function the Tool field ``field`` (``report_html`` or
    ``report_markdown``) gives runs of ``source_format``, or None. A tool installed in
    code after the registry was first read (``default_registries().add_tool(...)`` in a
    notebook) is looked at too."""
    sections = _BY_FIELD[field]
    if not source_format:
        return None
    if source_format not in sections:
        for tool in default_registries().all_tools():
            reference = tool.contributions(field).get(source_format)
            if reference is not None:
                sections.add(source_format, reference)
                break
        else:
            return None
    return sections.get(source_format)
