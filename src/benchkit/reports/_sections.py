"""A tool's own sections of a run's reports, found by the run's source format.

Every loaded tool's :attr:`~benchkit.tools.Tool.report_html` and
:attr:`~benchkit.tools.Tool.report_markdown`, keyed by each format the tool reads, and the
plug-ins' of the entry-point groups ``benchkit.report_sections`` and
``benchkit.markdown_sections``: ``f(run JSON) -> text``. They live in the
:class:`~benchkit.registry.Registries` a run uses (``report_html``, ``report_markdown``),
so a tool added on a run's own copy of the registries keeps its section. The reports name
no tool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from benchkit.registry import Registry, default_registries

if TYPE_CHECKING:
    from benchkit.registry import Registries

__all__ = ["MARKDOWN_SECTIONS", "SECTIONS", "find_section"]

Section = Callable[[Mapping[str, Any]], str]

#: The default registries' sections of the HTML report, by source format:
#: ``f(run JSON) -> HTML`` (``default_registries().report_html``).
SECTIONS: Registry[Section] = default_registries().report_html

#: The default registries' sections of the Markdown report, by source format:
#: ``f(run JSON) -> Markdown`` (``default_registries().report_markdown``).
MARKDOWN_SECTIONS: Registry[Section] = default_registries().report_markdown


def find_section(
    field: str, source_format: str | None, registries: Registries | None = None
) -> Section | None:
    """The section function the Tool field ``field`` (``report_html`` or
    ``report_markdown``) gives runs of ``source_format`` in ``registries`` (default: the
    default ones), or None — also when the section's module cannot be imported (said once,
    as a warning: the report goes on without it). A run built in code (no format) has none.
    """
    if not source_format:
        return None
    regs = registries if registries is not None else default_registries()
    sections: Registry[Section] = getattr(regs, field)
    return sections.find(source_format)
