"""Metrics that work on their own, on any data — no benchkit run needed.

* :mod:`benchkit.metrics.retrieval` — precision, recall, F1, coverage, nDCG and MAP at a
  cutoff, with binary or graded relevance and a documented tie order; agrees with
  trec_eval (pytrec_eval).
* :class:`RetrievalEvaluator` (``retrieval`` in the evaluator registry) — those metrics as
  an evaluator over ``Task.relevant_ids`` and ``Response.retrieved``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr

if TYPE_CHECKING:
    from benchkit.metrics._evaluator import RetrievalEvaluator

__all__ = ["RetrievalEvaluator"]


# Only at run time: a type checker sees the names declared under TYPE_CHECKING above.
if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, {"RetrievalEvaluator": "benchkit.metrics._evaluator"})
