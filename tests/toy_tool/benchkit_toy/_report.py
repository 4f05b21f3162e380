"""The toy tool's sections of a run's reports (HTML and Markdown), from the run's JSON."""

import html
from collections.abc import Mapping
from typing import Any


def _counts(run: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """``(condition, sums right, sums)`` per condition."""
    return [
        (str(agg["condition_id"]), agg["passed"], agg["n"]) for agg in run.get("aggregates") or []
    ]


def html_section(run: Mapping[str, Any]) -> str:
    """How many sums each condition got right."""
    rows = "".join(
        f"<li>{html.escape(condition)}: {passed} of {n} sums</li>"
        for condition, passed, n in _counts(run)
    )
    return f'<section class="toy-report"><h2>Toy arithmetic</h2><ul>{rows}</ul></section>'


def markdown_section(run: Mapping[str, Any]) -> str:
    """The same, as a Markdown section."""
    rows = "".join(
        f"- {condition}: {passed} of {n} sums\n" for condition, passed, n in _counts(run)
    )
    return f"## Toy arithmetic\n\n{rows}"
