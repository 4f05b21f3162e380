"""MemoryBench's section of the HTML report: its score overview, judge metrics (Corr,
Faith, Type) and retrieval metrics (Prec, Rec, F1, Cov, nDCG, MAP) per provider, the means
of the cells' score details. Looked up by ``benchkit.reports.html`` through its section
registry (the generic layer never imports this package)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from benchkit.reports.html import table

__all__ = ["JUDGE", "RETRIEVAL", "html_section"]

JUDGE = (("correctness", "Corr"), ("faithfulness", "Faith"), ("type_match", "Type"))
RETRIEVAL = (
    ("retrieval_precision", "Prec"),
    ("retrieval_recall", "Rec"),
    ("retrieval_f1", "F1"),
    ("retrieval_coverage", "Cov"),
    ("retrieval_ndcg", "nDCG"),
    ("retrieval_map", "MAP"),
)


def html_section(data: Mapping[str, Any]) -> str:
    """``<h2>`` the judge and retrieval tables from a run's JSON (its cells' scores)."""
    sums: dict[tuple[str, str], list[float]] = {}
    providers: list[str] = []
    for cell in data.get("cells") or []:
        if cell["condition_id"] not in providers:
            providers.append(cell["condition_id"])
        for score in cell.get("scores") or []:
            for key, value in (score.get("details") or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    sums.setdefault((cell["condition_id"], key), []).append(float(value))
    if not providers:
        return ""

    def block(title: str, columns: tuple[tuple[str, str], ...]) -> str:
        rows = []
        for provider in providers:
            row = [html.escape(provider)]
            for key, _ in columns:
                values = sums.get((provider, key))
                row.append(f"{sum(values) / len(values):.3f}" if values else "—")
            rows.append(row)
        head = ["provider", *(label for _, label in columns)]
        return f"<h3>{title}</h3>" + table(head, rows, numeric=range(1, len(columns) + 1))

    return (
        "<h2>MemoryBench: score overview</h2>"
        + block("Judge", JUDGE)
        + block("Retrieval", RETRIEVAL)
    )
