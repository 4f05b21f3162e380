"""The toy tool's section of a run's HTML report."""

import html
from collections.abc import Mapping
from typing import Any


def html_section(run: Mapping[str, Any]) -> str:
    """How many sums each condition got right, from the run's JSON."""
    rows = "".join(
        f"<li>{html.escape(str(agg['condition_id']))}: {agg['passed']} of {agg['n']} sums</li>"
        for agg in run.get("aggregates") or []
    )
    return f'<section class="toy-report"><h2>Toy arithmetic</h2><ul>{rows}</ul></section>'
