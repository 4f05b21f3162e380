"""The eval-skills report computed: one ``SkillCompletionReport`` dict per skill of a run.

The arithmetic is the original's (see :mod:`benchkit.formats.eval_skills.report`); the
dicts carry its keys in its order, ready for
:mod:`benchkit.formats.eval_skills._report_render` to write out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from benchkit import stats
from benchkit._js import math_round, reduce_sum, round_to
from benchkit.model import Benchmark, Task
from benchkit.results import CellResult, RunResult

_SCORER_TYPES = {
    "exact": "exact_match",
    "contains": "contains",
    "json_schema": "json_schema",
    "regex": "regex",
    "llm_judge": "llm_judge",
}
_BOOTSTRAP_RESAMPLES = 1000
_CI_MIN_RESULTS = 10


def iso_timestamp(when: datetime | None = None) -> str:
    """``new Date().toISOString()``: UTC with milliseconds, e.g. ``2026-01-01T00:00:00.000Z``."""
    moment = (when or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def build_reports(
    result: RunResult,
    *,
    benchmark: Benchmark,
    versions: Mapping[str, str],
    timeout_ms: float,
    timestamp: str | None = None,
    seed: int | None = None,
) -> list[dict[str, Any]]:
    """One eval-skills ``SkillCompletionReport`` dict per condition of ``result``.

    ``benchmark`` gives ``maxLatencyMs`` (its metadata) and each task's scorer type and
    written weight; ``versions`` maps condition ids to skill versions (``skillVersion``,
    left out for a condition without one); ``timeout_ms`` is the run's ``--timeout``, the
    composite's latency scale when the benchmark sets none. ``timestamp`` defaults to now
    (:func:`iso_timestamp`); ``seed`` (default: the run's) seeds the bootstrap. Task
    results are in run-major order (run 1's tasks, then run 2's, ...).
    """
    stamp = timestamp if timestamp is not None else iso_timestamp()
    info = result.info
    max_latency = benchmark.metadata.get("maxLatencyMs", timeout_ms)
    tasks = {task.id: task for task in benchmark.iter_tasks()}
    by_condition: dict[str, list[CellResult]] = {c.id: [] for c in info.conditions}
    for cell in result.cells:
        by_condition.setdefault(cell.condition_id, []).append(cell)
    rng_seed = info.options.seed if seed is None else seed
    reports: list[dict[str, Any]] = []
    for condition_id, cells in by_condition.items():
        ordered = sorted(cells, key=lambda c: (c.epoch, c.index))
        task_results = [_task_result(cell, tasks.get(cell.task_id)) for cell in ordered]
        summary, latency = _summary(
            task_results, info.scoring_method, info.scoring_k, max_latency, rng_seed
        )
        report: dict[str, Any] = {"skillId": condition_id}
        if condition_id in versions:
            report["skillVersion"] = versions[condition_id]
        report.update(benchmarkId=info.benchmark_id, timestamp=stamp)
        report.update(summary=summary, latency=latency)
        token_cost = _token_cost(task_results)
        if token_cost is not None:
            report["tokenCost"] = token_cost
        report.update(taskResults=task_results, evaluatorMetadata={})
        reports.append(report)
    return reports


def _scorer_type(task: Task | None) -> str:
    if task is None:
        return "unknown"
    written = task.metadata.get("scorerType")
    if isinstance(written, str):
        return written
    if task.evaluators:
        kind = task.evaluators[0].type
        return _SCORER_TYPES.get(kind, kind)
    return "unknown"


def _weight(cell: CellResult, task: Task | None) -> float | None:
    """The weight a TaskResult shows: the one the benchmark wrote (None when it wrote none)."""
    if task is not None and "weight" in task.metadata:
        written: float = task.metadata["weight"]
        return written
    return cell.weight if cell.weight != 1.0 else None


def _reason(cell: CellResult) -> str | None:
    for score in cell.scores:
        if cell.status == "pass" or not score.passed:
            return score.reason
    return None


def _task_result(cell: CellResult, task: Task | None) -> dict[str, Any]:
    """One TaskResult with the original's keys in the original's order."""
    row: dict[str, Any] = {
        "taskId": cell.task_id,
        "skillId": cell.condition_id,
        "status": cell.status,
    }
    response = cell.response
    if cell.status in ("pass", "fail"):
        score = cell.score if cell.score is not None else float(cell.status == "pass")
        row["score"] = score
        row["latencyMs"] = (response.latency_ms or 0) if response is not None else 0
        row["output"] = response.output if response is not None else None
        row["scorerType"] = _scorer_type(task)
        reason = _reason(cell)
        if reason is not None:
            row["reason"] = reason
        row["runId"] = cell.epoch + 1
        if response is not None and response.usage is not None:
            usage = response.usage
            row["usage"] = {
                "promptTokens": usage.prompt_tokens,
                "completionTokens": usage.completion_tokens,
                "totalTokens": usage.total_tokens,
            }
    else:
        row["score"] = 0
        if response is not None:  # the skill answered; judging it failed
            row["latencyMs"] = response.latency_ms or 0
        elif cell.status == "timeout":
            row["latencyMs"] = cell.duration_ms
        else:
            row["latencyMs"] = 0
        row["error"] = cell.error or cell.error_category
        row["scorerType"] = _scorer_type(task)
        row["runId"] = cell.epoch + 1
    weight = _weight(cell, task)
    if weight is not None:
        row["weight"] = weight
    return row


def _summary(
    rows: Sequence[Mapping[str, Any]], method: str, k: int, max_latency: float, seed: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    total = len(rows)
    if total == 0:
        zero: dict[str, Any] = {
            "completionRate": 0,
            "partialScore": 0,
            "errorRate": 0,
            "consistencyScore": 1,
            "compositeScore": 0,
        }
        return zero, {"p50Ms": 0, "p95Ms": 0, "p99Ms": 0}
    passed = sum(1 for r in rows if r["status"] == "pass")
    errored = sum(1 for r in rows if r["status"] in ("error", "timeout"))
    completion = passed / total
    error_rate = errored / total
    latencies = sorted(r["latencyMs"] for r in rows if r["latencyMs"] > 0)
    p50, p95, p99 = (_nearest_rank(latencies, p) for p in (0.5, 0.95, 0.99))
    composite = (
        0.5 * completion + 0.2 * (1 - min(max(p95 / max_latency, 0), 1)) + 0.3 * (1 - error_rate)
    )
    summary: dict[str, Any] = {
        "completionRate": round_to(completion, 4),
        "partialScore": round_to(_partial(rows, method, k), 4),
        "errorRate": round_to(error_rate, 4),
        "consistencyScore": _consistency(rows),
        "compositeScore": round_to(composite, 4),
    }
    if total >= _CI_MIN_RESULTS:
        scores = [float(r["score"]) for r in rows]
        interval = stats.bootstrap_interval(scores, resamples=_BOOTSTRAP_RESAMPLES, seed=seed)
        summary["confidenceInterval"] = {
            "lower": interval.low,
            "upper": interval.high,
            "mean": stats.mean(scores),
            "level": interval.level,
        }
    return summary, {"p50Ms": p50, "p95Ms": p95, "p99Ms": p99}


def _nearest_rank(ordered: Sequence[float], p: float) -> int:
    """``sorted[clamp(ceil(p·n) − 1, 0, n − 1)]``, then ``Math.round``; 0 when empty."""
    n = len(ordered)
    if n == 0:
        return 0
    index = min(max(math.ceil(p * n) - 1, 0), n - 1)
    return int(math_round(ordered[index]))


def _partial(rows: Sequence[Mapping[str, Any]], method: str, k: int) -> float:
    if method == "weighted_mean":
        weighted = 0.0
        weights = 0.0
        for row in rows:
            w = row.get("weight", 1)
            weighted += row["score"] * w
            weights += w
        return weighted / weights if weights > 0 else 0.0
    if method == "pass_at_k":
        counts: dict[str, list[int]] = {}
        for row in rows:
            n_c = counts.setdefault(row["taskId"], [0, 0])
            n_c[0] += 1
            n_c[1] += row["status"] == "pass"
        estimates = [_pass_at_k(n, c, k) for n, c in counts.values()]
        return reduce_sum(estimates) / len(estimates)
    return reduce_sum(row["score"] for row in rows) / len(rows)


def _pass_at_k(n: int, c: int, k: int) -> float:
    """1 − C(n−c, k) / C(n, k), with the original's shortcuts for c = 0 and c = n."""
    if c == 0:
        return 0.0
    if c >= n or n - c < k:
        return 1.0
    return 1 - math.comb(n - c, k) / math.comb(n, k)


def _consistency(rows: Sequence[Mapping[str, Any]]) -> float:
    runs: dict[int, list[int]] = {}
    for row in rows:
        counts = runs.setdefault(row["runId"], [0, 0])
        counts[0] += 1
        counts[1] += row["status"] == "pass"
    if len(runs) <= 1:
        return 1.0
    rates = [passed / count for count, passed in runs.values()]
    mean = reduce_sum(rates) / len(rates)
    variance = reduce_sum((r - mean) * (r - mean) for r in rates) / len(rates)
    return max(0.0, 1 - math.sqrt(variance))


def _token_cost(rows: Sequence[Mapping[str, Any]]) -> dict[str, int] | None:
    prompt = completion = 0
    for row in rows:
        usage = row.get("usage")
        if usage is not None:
            prompt += usage["promptTokens"]
            completion += usage["completionTokens"]
    if prompt + completion <= 0:
        return None
    return {
        "promptTokens": prompt,
        "completionTokens": completion,
        "totalTokens": prompt + completion,
    }
