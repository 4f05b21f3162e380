"""Aggregates computed from cells alone: per condition, per group, and between conditions.

Pure functions of the cells, so a saved or resumed run aggregates exactly like a live one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from benchkit import stats
from benchkit.model import Usage
from benchkit.results import CellResult, Comparison, ConditionAggregate, GroupAggregate

__all__ = ["aggregate_run"]


def _cell_value(cell: CellResult, errors_as: str) -> float | None:
    """The score a cell contributes to averages, or None when it is left out.

    A grader's failure (``evaluation_error``: a judge that could not answer or be read) says
    nothing about the system, so it is left out whatever ``errors_as`` says.
    """
    if cell.error_category == "evaluation_error":
        return None
    if cell.score is not None:
        return cell.score
    if cell.errored and errors_as == "zero":
        return 0.0
    return None


def _judge_usage(details: Mapping[str, Any]) -> Usage | None:
    """The ``usage`` a judge put in its score details, as a :class:`Usage`."""
    raw = details.get("usage") if details else None
    if not isinstance(raw, Mapping):
        return None
    cost = raw.get("cost_usd")
    return Usage(
        int(raw.get("prompt_tokens") or 0),
        int(raw.get("completion_tokens") or 0),
        float(cost) if isinstance(cost, (int, float)) else None,
    )


def _condition(
    cid: str,
    cells: Sequence[CellResult],
    *,
    method: str,
    k: int,
    errors_as: str,
    seed: int,
) -> ConditionAggregate:
    n = len(cells)
    passed = failed = errors = 0
    by_category: dict[str, int] = defaultdict(int)
    values: list[float] = []
    weights: list[float] = []
    latencies: list[float] = []
    usage: Usage | None = None
    judge_usage: Usage | None = None
    per_task: dict[str, list[int]] = {}
    for cell in cells:
        status = cell.status
        if status == "pass":
            passed += 1
        elif status == "fail":
            failed += 1
        else:
            errors += 1
        if cell.error_category != "none":
            by_category[cell.error_category] += 1
        value = _cell_value(cell, errors_as)
        if value is not None:
            values.append(value)
            weights.append(cell.weight)
        response = cell.response
        if response is not None:
            if response.latency_ms is not None:
                latencies.append(response.latency_ms)
            if response.usage is not None:
                usage = response.usage if usage is None else usage + response.usage
        for judged in cell.scores:
            spent = _judge_usage(judged.details)
            if spent is not None:
                judge_usage = spent if judge_usage is None else judge_usage + spent
        counts = per_task.get(cell.task_id)
        if counts is None:
            per_task[cell.task_id] = [1, 1 if status == "pass" else 0]
        else:
            counts[0] += 1
            counts[1] += status == "pass"

    mean_score = stats.mean(values) if values else None
    mean_ci = stats.mean_interval(values, seed=seed) if values else None
    if method == "weighted_mean":
        score = stats.weighted_mean(values, weights) if values and sum(weights) > 0 else mean_score
    elif method == "pass_at_k":
        estimates = [stats.pass_at_k(t, c, k) for t, c in per_task.values() if t >= k]
        score = stats.mean(estimates) if estimates else None
    else:
        score = mean_score
    return ConditionAggregate(
        condition_id=cid,
        n=n,
        passed=passed,
        failed=failed,
        errors=errors,
        errors_by_category=dict(sorted(by_category.items())),
        pass_rate=passed / n if n else 0.0,
        pass_rate_ci=stats.wilson_interval(passed, n),
        mean_score=mean_score,
        mean_score_ci=mean_ci,
        scored_cells=len(values),
        score=score,
        scoring_method=method,
        k=k if method == "pass_at_k" else None,
        latency_p50_ms=stats.percentile(latencies, 0.5) if latencies else None,
        latency_p95_ms=stats.percentile(latencies, 0.95) if latencies else None,
        latency_p99_ms=stats.percentile(latencies, 0.99) if latencies else None,
        usage=usage,
        judge_usage=judge_usage,
        errors_as=errors_as,
    )


def _groups(cid: str, cells: Sequence[CellResult], errors_as: str) -> list[GroupAggregate]:
    buckets: dict[tuple[str, str], list[CellResult]] = defaultdict(list)
    for cell in cells:
        for tag in cell.tags:
            buckets[("tag", tag)].append(cell)
        if cell.domain is not None:
            buckets[("domain", cell.domain)].append(cell)
        if cell.difficulty is not None:
            buckets[("difficulty", cell.difficulty)].append(cell)
    out: list[GroupAggregate] = []
    for (group, value), members in sorted(buckets.items()):
        n = len(members)
        passed = sum(1 for c in members if c.status == "pass")
        values = [v for c in members if (v := _cell_value(c, errors_as)) is not None]
        out.append(
            GroupAggregate(
                condition_id=cid,
                group=group,  # type: ignore[arg-type]
                value=value,
                n=n,
                passed=passed,
                pass_rate=passed / n,
                pass_rate_ci=stats.wilson_interval(passed, n),
                mean_score=stats.mean(values) if values else None,
            )
        )
    return out


def _compare(
    base_id: str,
    target_id: str,
    base: Sequence[CellResult],
    target: Sequence[CellResult],
    *,
    base_rate: float,
    target_rate: float,
    errors_as: str,
    seed: int,
) -> Comparison | None:
    by_key = {(c.task_id, c.epoch): c for c in base}
    a: list[float] = []
    b: list[float] = []
    pa: list[bool] = []
    pb: list[bool] = []
    improved: dict[str, None] = {}
    regressed: dict[str, None] = {}
    for cell in target:
        other = by_key.get((cell.task_id, cell.epoch))
        if other is None:
            continue
        va, vb = _cell_value(other, errors_as), _cell_value(cell, errors_as)
        if va is None or vb is None:
            continue
        a.append(va)
        b.append(vb)
        pa.append(other.passed)
        pb.append(cell.passed)
        if cell.passed and not other.passed:
            improved[cell.task_id] = None
        elif other.passed and not cell.passed:
            regressed[cell.task_id] = None
    if not a:
        return None
    paired = stats.paired_comparison(a, b, passed_a=pa, passed_b=pb, seed=seed)
    return Comparison(
        baseline=base_id,
        target=target_id,
        pass_rate_delta=target_rate - base_rate,
        paired=paired,
        improved=tuple(improved),
        regressed=tuple(regressed),
    )


def aggregate_run(
    cells: Iterable[CellResult],
    condition_ids: Sequence[str],
    *,
    method: str = "mean",
    k: int = 1,
    errors_as: str = "zero",
    seed: int = 0,
) -> tuple[tuple[ConditionAggregate, ...], tuple[GroupAggregate, ...], tuple[Comparison, ...]]:
    """Per-condition aggregates, per-group aggregates and pairwise comparisons.

    Comparisons pair cells by (task, epoch): every earlier condition is the baseline of every
    later one, so with conditions [a, b, c] they are b-vs-a, c-vs-a and c-vs-b.
    """
    by_condition: dict[str, list[CellResult]] = {cid: [] for cid in condition_ids}
    for cell in cells:
        by_condition.setdefault(cell.condition_id, []).append(cell)
    aggregates = tuple(
        _condition(cid, members, method=method, k=k, errors_as=errors_as, seed=seed)
        for cid, members in by_condition.items()
    )
    groups = tuple(
        g for cid, members in by_condition.items() for g in _groups(cid, members, errors_as)
    )
    rates = {agg.condition_id: agg.pass_rate for agg in aggregates}
    ids = list(by_condition)
    comparisons: list[Comparison] = []
    for i, base_id in enumerate(ids):
        for target_id in ids[i + 1 :]:
            found = _compare(
                base_id,
                target_id,
                by_condition[base_id],
                by_condition[target_id],
                base_rate=rates[base_id],
                target_rate=rates[target_id],
                errors_as=errors_as,
                seed=seed,
            )
            if found is not None:
                comparisons.append(found)
    return aggregates, groups, tuple(comparisons)
