"""skillvault's section of the HTML report: the deltas against ``no_skill`` and the error
breakdown, as skillvault's own report has them. Looked up by ``benchkit.reports.html``
through its section registry (the generic layer never imports this package)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from benchkit.reports.html import table

__all__ = ["html_section"]

BASELINE = "no_skill"


def html_section(data: Mapping[str, Any]) -> str:
    """``<h2>`` skillvault's deltas and error breakdown from a run's JSON."""
    aggs = {a["condition_id"]: a for a in data.get("aggregates") or []}
    if not aggs:
        return ""
    base = BASELINE if BASELINE in aggs else next(iter(aggs))
    esc = html.escape
    deltas = [
        [
            f"{esc(c)} vs {esc(base)}",
            f"{a['pass_rate'] - aggs[base]['pass_rate']:+.3f}",
            f"{a['passed'] - aggs[base]['passed']:+d}",
            str(a["n"]),
        ]
        for c, a in aggs.items()
        if c != base
    ]
    cats = sorted({k for a in aggs.values() for k in a.get("errors_by_category") or {}})
    breakdown = [
        [esc(c), *(str((a.get("errors_by_category") or {}).get(k, 0)) for k in cats)]
        for c, a in aggs.items()
    ]
    parts = ["<h2>skillvault: deltas and error breakdown</h2>"]
    parts.append(
        table(["delta", "pass rate Δ", "pass count Δ", "samples"], deltas, numeric=(1, 2, 3))
    )
    if cats:
        parts.append(
            table(
                ["condition", *(esc(k) for k in cats)], breakdown, numeric=range(1, len(cats) + 1)
            )
        )
    return "".join(parts)
