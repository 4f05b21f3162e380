"""A CodeForge run read in CodeForge's terms: each metric's mean, pass rate and judge cost."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from benchkit import stats
from benchkit.formats.codeforge._loader import DIFFICULTIES
from benchkit.model import Usage
from benchkit.stats import Interval

if TYPE_CHECKING:
    from benchkit.results import CellResult, RunResult


@attrs.frozen
class MetricSummary:
    """One metric's mean for one condition (and one difficulty, when ``difficulty`` is set).

    ``mean`` is over ``n`` values, with a bootstrap ``interval`` (95 %). ``errors``
    counts metric scores that errored (a judge failure): they are left out, never
    averaged as 0. ``cell_errors`` counts cells whose model call failed, so no metric
    ran: they enter the mean as 0 when the run's ``errors_as`` is ``zero`` (the default)
    and are left out when it is ``exclude``.
    """

    condition_id: str
    metric: str
    difficulty: str | None
    mean: float | None
    interval: Interval | None
    n: int
    errors: int
    cell_errors: int
    errors_as: str


@attrs.frozen
class Summary:
    """Per-metric means with intervals, per-difficulty breakdown, tokens, cost, time.

    ``tokens_in`` / ``tokens_out`` / ``cost_usd`` are the model under test's (``cost_usd``
    is None when some of the tokens had no known price); ``judge_*`` are the judges'. ``duration_ms`` sums
    the cells' durations (model call and scoring).
    """

    metrics: tuple[MetricSummary, ...]
    by_difficulty: tuple[MetricSummary, ...]
    cells: int
    errored_cells: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    judge_tokens_in: int
    judge_tokens_out: int
    judge_cost_usd: float | None
    duration_ms: float

    def summary_scores(self, condition_id: str | None = None) -> dict[str, float | None]:
        """``{metric: mean}`` of one condition (the first when not given): CodeForge's
        ``summary_scores``, except that a metric with no value is None, not 0."""
        if condition_id is None and self.metrics:
            condition_id = self.metrics[0].condition_id
        return {m.metric: m.mean for m in self.metrics if m.condition_id == condition_id}

    def to_dict(self) -> dict[str, Any]:
        from benchkit.serde import unstructure

        data: dict[str, Any] = unstructure(self)
        return data


def metric_order(cells: Iterable[CellResult], metrics: Sequence[str] | None) -> list[str]:
    if metrics is not None:
        return list(metrics)
    names: dict[str, None] = {}
    for cell in cells:
        for score in cell.scores:
            names.setdefault(score.name, None)
    return list(names)


def _metric_summary(
    cells: Sequence[CellResult],
    condition_id: str,
    metric: str,
    difficulty: str | None,
    errors_as: str,
    seed: int,
) -> MetricSummary:
    values: list[float] = []
    errors = cell_errors = 0
    for cell in cells:
        score = next((s for s in cell.scores if s.name == metric), None)
        if score is not None:
            if score.value is None:
                errors += 1
            else:
                values.append(score.value)
        elif cell.errored:
            cell_errors += 1
            if errors_as == "zero":
                values.append(0.0)
    return MetricSummary(
        condition_id=condition_id,
        metric=metric,
        difficulty=difficulty,
        mean=stats.mean(values) if values else None,
        interval=stats.mean_interval(values, seed=seed) if values else None,
        n=len(values),
        errors=errors,
        cell_errors=cell_errors,
        errors_as=errors_as,
    )


def _judge_usage(cell: CellResult) -> Usage:
    """What the cell's judges spent (a judge's tokens at no known price: cost unknown)."""
    total = Usage()
    for score in cell.scores:
        usage = score.details.get("usage")
        if isinstance(usage, Mapping):
            cost = usage.get("cost_usd")
            total = total + Usage(
                int(usage.get("prompt_tokens", 0)),
                int(usage.get("completion_tokens", 0)),
                None if cost is None else float(cost),
            )
    return total


def summary(result: RunResult, *, metrics: Sequence[str] | None = None) -> Summary:
    """Per-metric means (with intervals) of every condition, overall and per difficulty.

    ``metrics`` fixes the metrics and their order (default: every score name in the
    cells, in order of first appearance). A pure function of the result's cells: a
    saved result summarises exactly like a live one.
    """
    options = result.info.options
    names = metric_order(result.cells, metrics)
    conditions = [c.id for c in result.info.conditions] or list(
        dict.fromkeys(c.condition_id for c in result.cells)
    )
    overall: list[MetricSummary] = []
    by_difficulty: list[MetricSummary] = []
    for cid in conditions:
        cells = [c for c in result.cells if c.condition_id == cid]
        levels = sorted(
            {c.difficulty for c in cells if c.difficulty is not None},
            key=lambda d: (DIFFICULTIES.index(d) if d in DIFFICULTIES else len(DIFFICULTIES), d),
        )
        for name in names:
            overall.append(_metric_summary(cells, cid, name, None, options.errors_as, options.seed))
            for level in levels:
                subset = [c for c in cells if c.difficulty == level]
                by_difficulty.append(
                    _metric_summary(subset, cid, name, level, options.errors_as, options.seed)
                )
    spent = judged = Usage()
    for cell in result.cells:
        usage = cell.response.usage if cell.response is not None else None
        if usage is not None:
            spent = spent + usage
        judged = judged + _judge_usage(cell)
    return Summary(
        metrics=tuple(overall),
        by_difficulty=tuple(by_difficulty),
        cells=len(result.cells),
        errored_cells=sum(1 for c in result.cells if c.errored),
        tokens_in=spent.prompt_tokens,
        tokens_out=spent.completion_tokens,
        cost_usd=spent.cost_usd,
        judge_tokens_in=judged.prompt_tokens,
        judge_tokens_out=judged.completion_tokens,
        judge_cost_usd=judged.cost_usd,
        duration_ms=sum(c.duration_ms for c in result.cells),
    )
