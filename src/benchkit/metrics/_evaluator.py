"""The ``retrieval`` evaluator: retrieval metrics of one response, as a Score."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from benchkit.errors import ConfigError
from benchkit.metrics.retrieval import (
    METRICS,
    Denominator,
    Gains,
    TieOrder,
    _plan,
    evaluate_query,
)
from benchkit.results import Score

if TYPE_CHECKING:
    from benchkit.model import Response, RetrievedItem, Task

__all__ = ["RetrievalEvaluator"]


class RetrievalEvaluator:
    """Scores ``response.retrieved`` against ``task.relevant_ids`` at cutoff ``k``.

    Grades come from ``task.metadata["relevance"]`` (id -> grade) when the task has it,
    else every relevant id has grade 1. ``details`` hold each of ``metrics`` (see
    :mod:`benchkit.metrics.retrieval` for their definitions and the options ``ties``,
    ``denominator``, ``gains``, ``relevance_level``). The score's value is the
    ``primary`` metric (the first one asked for by default) and it passes at
    ``threshold``. A task without relevant ids cannot be judged: the score is an error.

        >>> import anyio
        >>> from benchkit.model import Response, RetrievedItem, Task
        >>> task = Task("t", relevant_ids=["d2"])
        >>> response = Response(retrieved=(RetrievedItem("d1", "x"), RetrievedItem("d2", "y")))
        >>> score = anyio.run(RetrievalEvaluator(metrics=["ndcg", "recall"], k=2).evaluate,
        ...                   task, response)
        >>> round(score.value, 4), score.details["recall"]
        (0.6309, 1.0)
    """

    name = "retrieval"

    def __init__(
        self,
        *,
        metrics: Iterable[str] = METRICS,
        k: int = 10,
        ties: TieOrder = "given",
        denominator: Denominator = "k",
        gains: Gains = "graded",
        relevance_level: float = 1,
        primary: str | None = "",
        threshold: float = 0.0,
    ) -> None:
        self.metrics = (metrics,) if isinstance(metrics, str) else tuple(metrics)
        self.k = k
        self.ties: TieOrder = ties
        self.denominator: Denominator = denominator
        self.gains: Gains = gains
        self.relevance_level = relevance_level
        # Every option is checked now: a bad one is a ConfigError before any task runs.
        _plan(k, self.metrics, ties, denominator, gains, relevance_level, "none")
        self.primary = self.metrics[0] if primary == "" else primary
        if self.primary is not None and self.primary not in self.metrics:
            raise ConfigError(
                f"primary metric {self.primary!r} is not one of the metrics {list(self.metrics)}",
                fix="name one of the metrics, or leave primary out.",
            )
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise ConfigError(f"threshold must be a number, got {threshold!r}")
        self.threshold = float(threshold)

    def item_id(self, item: RetrievedItem) -> str:
        """The id a retrieved item is judged by (its own id here)."""
        return item.id

    def detail_key(self, metric: str) -> str:
        """The key a metric is reported under in ``details``."""
        return metric

    def no_relevant(self, task: Task) -> Score:
        """The score of a task that names no relevant ids."""
        return Score(
            name=self.name,
            value=None,
            passed=False,
            error=f"task {task.id!r} has no relevant_ids: nothing to measure retrieval against",
        )

    async def evaluate(self, task: Task, response: Response) -> Score:
        if not task.relevant_ids:
            return self.no_relevant(task)
        grades = task.metadata.get("relevance")
        qrels: Mapping[str, Any]
        if isinstance(grades, Mapping):
            qrels = {i: grades.get(i, 1) for i in task.relevant_ids}
        else:
            qrels = dict.fromkeys(task.relevant_ids, 1)
        ranking: list[str] | dict[str, float]
        if self.ties == "trec":
            ranking = {}
            for item in response.retrieved:
                if item.score is None:
                    return Score(
                        name=self.name,
                        value=None,
                        passed=False,
                        error=f"ties='trec' ranks by score, but item {item.id!r} has none",
                    )
                ranking.setdefault(self.item_id(item), item.score)
        else:
            ranking = [self.item_id(item) for item in response.retrieved]
        values = evaluate_query(
            ranking,
            qrels,
            self.k,
            self.metrics,
            ties=self.ties,
            denominator=self.denominator,
            gains=self.gains,
            relevance_level=self.relevance_level,
        )
        details = {self.detail_key(m): v for m, v in values.items() if v is not None}
        shown = ", ".join(
            f"{self.detail_key(m)}={v:.3f}" for m, v in values.items() if v is not None
        )
        reason = f"{len(response.retrieved)} retrieved, {len(qrels)} relevant: {shown}"
        if self.primary is None:
            return Score(name=self.name, value=None, passed=True, reason=reason, details=details)
        value = values[self.primary]
        if value is None:
            return Score(
                name=self.name,
                value=None,
                passed=False,
                details=details,
                error=f"{self.primary} is undefined for task {task.id!r} (no relevant grade > 0)",
            )
        return Score(
            name=self.name,
            value=value,
            passed=value >= self.threshold,
            reason=reason,
            details=details,
        )
