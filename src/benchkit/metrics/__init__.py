"""Metrics that work on their own, on any data — no benchkit run needed.

* :mod:`benchkit.metrics.retrieval` — precision, recall, F1, coverage, nDCG and MAP at a
  cutoff, with binary or graded relevance and a documented tie order; agrees with
  trec_eval (pytrec_eval).
* :class:`RetrievalEvaluator` (``retrieval`` in the evaluator registry) — those metrics as
  an evaluator over ``Task.relevant_ids`` and ``Response.retrieved``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchkit.metrics._evaluator import RetrievalEvaluator

__all__ = ["RetrievalEvaluator"]


def __getattr__(name: str) -> Any:
    if name == "RetrievalEvaluator":
        from benchkit.metrics._evaluator import RetrievalEvaluator

        return RetrievalEvaluator
    raise AttributeError(f"module 'benchkit.metrics' has no attribute {name!r}")
