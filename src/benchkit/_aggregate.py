"""Aggregates computed from cells alone: per condition, per group, and between conditions.

Pure functions of the cells, so a saved or resumed run aggregates exactly like a live one.
The task is the unit of analysis (or the cluster named by ``CellResult.cluster``): epochs
of a task are reduced before anything is compared, and every interval and p-value counts
tasks or clusters, never cells. docs/statistics.md explains each number.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from benchkit import stats
from benchkit.errors import ConfigError
from benchkit.model import Task, Usage
from benchkit.results import (
    UNJUDGED,
    CellResult,
    Comparison,
    ConditionAggregate,
    FailureExample,
    GroupAggregate,
)

__all__ = ["aggregate_run", "paired_values", "task_cluster", "task_value"]

#: How many example cells a condition's aggregate quotes per error category.
EXAMPLES_PER_CATEGORY = 3
#: Failure messages are cut to their first line and this many characters.
EXAMPLE_CHARS = 160


def task_cluster(task: Task, path: str) -> str:
    """The value of the dotted task field ``path`` (``metadata.passage``, ``domain``) as
    the task's cluster label; a :class:`ConfigError` names the task when it has none."""
    value: Any = task
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else getattr(value, part, None)
        if value is None:
            raise ConfigError(
                f"task {task.id!r} has no field {path!r} to cluster by",
                fix="give every task that field (e.g. metadata: {passage: p1}) or drop "
                "cluster_by / --cluster-by.",
            )
    return value if isinstance(value, str) else str(value)


class PairedCell(Protocol):
    """What the task-level comparison reads of a cell. :class:`CellResult` has it, and so
    has the store's outline of a stored cell (:class:`benchkit.store._compare.OutlineCell`),
    which is cheaper to build when two stored runs are compared."""

    @property
    def task_id(self) -> str: ...
    @property
    def score(self) -> float | None: ...
    @property
    def weight(self) -> float: ...
    @property
    def cluster(self) -> str | None: ...
    @property
    def error_category(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    @property
    def errored(self) -> bool: ...


def _unit(cell: PairedCell) -> str:
    """The independent unit a cell belongs to: its declared cluster, else its task."""
    return cell.task_id if cell.cluster is None else "\x00" + cell.cluster


def _short(message: str | None) -> str:
    text = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    if len(text) > EXAMPLE_CHARS:
        text = text[: EXAMPLE_CHARS - 1] + "…"
    return text or "(no message)"


def _mean_interval(
    values: Sequence[float], units: Sequence[str] | None, unit: str
) -> stats.Interval:
    """The interval of a mean score: Wilson when the scores are pass/fail (0 or 1) and each
    is its own unit — the same interval as the pass rate's — else cluster-robust t.
    ``units`` None: the caller knows every value is its own unit."""
    own_units = units is None or len(set(units)) == len(values)
    if own_units and all(v in (0.0, 1.0) for v in values):
        ones = sum(1 for v in values if v == 1.0)
        return attrs.evolve(stats.wilson_interval(ones, len(values)), n=len(values))
    return stats.clustered_interval(values, units, unit=unit)


def _rate_interval(cells: Sequence[CellResult]) -> stats.Interval:
    """The pass-rate interval: Wilson for one cell per independent task, else the
    cluster-robust t interval over tasks (or declared clusters)."""
    units = [_unit(c) for c in cells]
    distinct = len(set(units))
    passed = sum(1 for c in cells if c.status == "pass")
    if distinct == len(cells):
        return attrs.evolve(stats.wilson_interval(passed, len(cells)), n=len(cells))
    clustered = any(c.cluster is not None for c in cells)
    return stats.clustered_interval(
        [1.0 if c.status == "pass" else 0.0 for c in cells],
        units,
        unit="cluster" if clustered else "task",
    )


def _cell_value(cell: PairedCell, errors_as: str) -> float | None:
    """The score a cell contributes to averages, or None when it is left out.

    A grader's failure (``judge_error``, ``evaluation_error``: a judge that gave no verdict,
    an evaluator that failed) says nothing about the system, so it is left out whatever
    ``errors_as`` says.
    """
    if cell.error_category in UNJUDGED:
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
) -> ConditionAggregate:
    # Memory matters here: this runs at the end of a run with every cell alive, so it keeps
    # no per-cell objects of its own — lists of references, a count per task (small ints are
    # shared), and each per-task structure is dropped before the next is built.
    n = len(cells)
    passed = failed = errors = 0
    by_category: dict[str, int] = defaultdict(int)
    values: list[float] = []
    weights: list[float] = []
    latencies: list[float] = []
    usage: Usage | None = None
    judge_usage: Usage | None = None
    per_task: dict[str, int] = {}  # cells per task, in first-seen order
    passes: dict[str, int] = {}  # passing cells per task, for pass@k only
    judged_per_task: dict[str, int] = {}  # judged cells per task, for pass@k only
    count_passes = method == "pass_at_k"
    clustered = False
    value_tasks: list[str] = []
    examples: dict[str, list[FailureExample]] = defaultdict(list)
    unjudged = 0
    for cell in cells:
        status = cell.status
        task_id = cell.task_id
        if status == "pass":
            passed += 1
        elif status == "fail":
            failed += 1
        else:
            errors += 1
            if cell.error_category in UNJUDGED:
                unjudged += 1
        if cell.error_category != "none" or status != "pass":
            category = cell.error_category if cell.error_category != "none" else status
            if cell.error_category != "none":
                by_category[category] += 1
            shown = examples[category]
            if len(shown) < EXAMPLES_PER_CATEGORY and all(
                e.task_id != task_id for e in shown
            ):  # one example per task: three epochs of one task say less than three tasks
                shown.append(FailureExample(category, task_id, cell.epoch, _short(cell.error)))
        value = _cell_value(cell, errors_as)
        if value is not None:
            values.append(value)
            weights.append(cell.weight)
            value_tasks.append(task_id)
        response = cell.response
        if response is not None:
            if response.latency_ms is not None:
                latencies.append(response.latency_ms)
            if response.usage is not None:
                usage = response.usage if usage is None else usage + response.usage
        for judged in cell.scores:
            details = judged.details
            if details and "usage" in details:
                spent = _judge_usage(details)
                if spent is not None:
                    judge_usage = spent if judge_usage is None else judge_usage + spent
        per_task[task_id] = per_task.get(task_id, 0) + 1
        if count_passes and cell.error_category not in UNJUDGED:
            judged_per_task[task_id] = judged_per_task.get(task_id, 0) + 1
            passes[task_id] = passes.get(task_id, 0) + (status == "pass")
        if cell.cluster is not None:
            clustered = True

    unit = "cluster" if clustered else "task"
    n_tasks = len(per_task)
    # Without declared clusters the units are the tasks: no second set of them is built.
    value_units: Sequence[str] = (
        [_unit(c) for c in cells if _cell_value(c, errors_as) is not None]
        if clustered
        else value_tasks
    )
    n_clusters = len({_unit(c) for c in cells}) if clustered else n_tasks
    latencies.sort()  # once: each percentile below copies and sorts, now in one pass
    latency_p50, latency_p95, latency_p99 = (
        (stats.percentile(latencies, p) for p in (0.5, 0.95, 0.99))
        if latencies
        else (None, None, None)
    )
    del latencies
    mean_score = stats.mean(values) if values else None
    if not values:
        mean_ci = None
    elif not clustered and len(values) == n and n_tasks == n:  # every value its own unit
        mean_ci = _mean_interval(values, None, unit)
    else:
        mean_ci = _mean_interval(values, value_units, unit)
    score_ci = mean_ci
    if method == "weighted_mean":
        positive = values and sum(weights) > 0
        score = stats.weighted_mean(values, weights) if positive else mean_score
        if positive:
            score_ci = stats.clustered_interval(values, value_units, weights=weights, unit=unit)
    elif method == "pass_at_k":
        task_unit = {c.task_id: _unit(c) for c in cells}
        reached = [(tid, t, passes[tid]) for tid, t in judged_per_task.items() if t >= k]
        estimates = [stats.pass_at_k(t, c, k) for _, t, c in reached]
        score = stats.mean(estimates) if estimates else None
        score_ci = (
            stats.clustered_interval(
                estimates, [task_unit[tid] for tid, _, _ in reached], unit=unit
            )
            if estimates
            else None
        )
        del task_unit, reached
    else:
        score = mean_score
    del per_task, passes, weights, judged_per_task
    n_judged = n - unjudged  # the pass rate is the system's over the cells judged
    if not n_judged:
        rate_ci = stats.wilson_interval(0, 0)
    elif not clustered and n_tasks == n:  # one cell per independent task
        rate_ci = attrs.evolve(stats.wilson_interval(passed, n_judged), n=n_judged)
    else:
        rate_ci = _rate_interval([c for c in cells if c.error_category not in UNJUDGED])
    return ConditionAggregate(
        condition_id=cid,
        n=n,
        passed=passed,
        failed=failed,
        errors=errors,
        errors_by_category=dict(sorted(by_category.items())),
        pass_rate=passed / n_judged if n_judged else 0.0,
        pass_rate_ci=rate_ci,
        unjudged=unjudged,
        mean_score=mean_score,
        mean_score_ci=mean_ci,
        scored_cells=len(values),
        score=score,
        scoring_method=method,
        k=k if method == "pass_at_k" else None,
        latency_p50_ms=latency_p50,
        latency_p95_ms=latency_p95,
        latency_p99_ms=latency_p99,
        usage=usage,
        judge_usage=judge_usage,
        errors_as=errors_as,
        score_ci=score_ci,
        n_tasks=n_tasks,
        n_clusters=n_clusters,
        variance=stats.variance_split(values, value_tasks) if values else None,
        failure_examples=tuple(e for cat in sorted(examples) for e in examples[cat]),
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
        judged = [c for c in members if c.error_category not in UNJUDGED]
        passed = sum(1 for c in judged if c.status == "pass")
        values = [v for c in members if (v := _cell_value(c, errors_as)) is not None]
        out.append(
            GroupAggregate(
                condition_id=cid,
                group=group,  # type: ignore[arg-type]
                value=value,
                n=n,
                passed=passed,
                pass_rate=passed / len(judged) if judged else 0.0,
                pass_rate_ci=_rate_interval(judged) if judged else stats.wilson_interval(0, 0),
                mean_score=stats.mean(values) if values else None,
                unjudged=n - len(judged),
            )
        )
    return out


def _task_values(
    cells: Sequence[PairedCell], method: str, k: int, errors_as: str
) -> dict[str, tuple[float, float, str]]:
    """Each task's epochs reduced to one value: ``{task: (value, weight, unit)}``.

    The value is the task's mean cell value (``mean`` / ``weighted_mean``; errored cells
    per ``errors_as``) or its unbiased pass@k (``pass_at_k``, tasks with at least k epochs).
    """
    # The first cell of each task, and a list only for the tasks that have more: a list
    # per task was most of the time and memory of comparing runs of one-epoch tasks.
    firsts: dict[str, PairedCell] = {}
    more: dict[str, list[PairedCell]] = {}
    first_of = firsts.setdefault
    for cell in cells:
        if first_of(cell.task_id, cell) is not cell:
            more.setdefault(cell.task_id, []).append(cell)
    weighted = method == "weighted_mean"
    out: dict[str, tuple[float, float, str]] = {}
    for task_id, first in firsts.items():
        extra = more.get(task_id)
        weight = first.weight if weighted else 1.0
        if method == "pass_at_k":
            members = [c for c in ((first, *extra) if extra else (first,))
                       if c.error_category not in UNJUDGED]  # fmt: skip
            if len(members) < k:
                continue
            value = stats.pass_at_k(len(members), sum(c.passed for c in members), k)
        elif extra is None:
            single = _cell_value(first, errors_as)
            if single is None:
                continue
            value = single + 0.0  # what fsum([v]) / 1 gives: v as a float, never -0.0
        else:
            found = [v for c in (first, *extra) if (v := _cell_value(c, errors_as)) is not None]
            if not found:
                continue
            value = math.fsum(found) / len(found)  # cell scores are finite by construction
        out[task_id] = (value, weight, _unit(first))
    return out


def task_value(cells: Sequence[PairedCell], method: str, k: int, errors_as: str) -> float | None:
    """One task's cells under one condition reduced to its value, as comparisons reduce
    it (None when it has none); what ``--until-decided`` feeds its sequential test."""
    found = _task_values(cells, method, k, errors_as)
    return next(iter(found.values()))[0] if found else None


def _compare(
    base_id: str,
    target_id: str,
    base: Sequence[PairedCell],
    target: Sequence[PairedCell],
    *,
    base_rate: float,
    target_rate: float,
    errors_as: str,
    method: str = "mean",
    k: int = 1,
) -> Comparison | None:
    """``target`` against ``base``, task by task (see :class:`~benchkit.results.Comparison`);
    None when no task has a value under both conditions."""
    by_task = _task_values(base, method, k, errors_as)
    other = _task_values(target, method, k, errors_as)
    a: list[float] = []
    b: list[float] = []
    weights: list[float] = []
    units: list[str] = []
    improved: list[str] = []
    regressed: list[str] = []
    for task_id, (vb, weight, unit) in other.items():
        found = by_task.get(task_id)
        if found is None:
            continue
        va = found[0]
        a.append(va)
        b.append(vb)
        weights.append(weight)
        units.append(unit)
        if vb > va:
            improved.append(task_id)
        elif va > vb:
            regressed.append(task_id)
    return paired_values(
        base_id,
        target_id,
        a,
        b,
        weights=weights if method == "weighted_mean" else None,
        units=units,
        improved=improved,
        regressed=regressed,
        base_rate=base_rate,
        target_rate=target_rate,
    )


def paired_values(
    base_id: str,
    target_id: str,
    a: list[float],
    b: list[float],
    *,
    weights: list[float] | None,
    units: list[str],
    improved: list[str],
    regressed: list[str],
    base_rate: float,
    target_rate: float,
) -> Comparison | None:
    """The :class:`Comparison` of tasks already reduced and paired: ``a[i]`` and ``b[i]``
    are task ``i``'s values (in the target's task order), ``units[i]`` its unit and
    ``weights`` theirs (None unless the scoring weighs tasks); ``improved`` and
    ``regressed`` the tasks whose value rose or fell. None when no task was paired.
    :func:`_compare` pairs cells this way, and so does the store's comparison of two
    plain stored runs (:mod:`benchkit.store._compare`), from their columns."""
    if not a:
        return None
    paired = stats.paired_task_comparison(a, b, clusters=units, weights=weights)
    return Comparison(
        baseline=base_id,
        target=target_id,
        pass_rate_delta=target_rate - base_rate,
        paired=paired,
        improved=tuple(improved),
        regressed=tuple(regressed),
    )


def with_holm(comparisons: Sequence[Comparison]) -> tuple[Comparison, ...]:
    """``comparisons`` with ``p_holm`` filled in when there is more than one of them, and
    each said in words (:func:`in_words`)."""
    m = len(comparisons)
    if m < 2:
        return tuple(in_words(c, 1) for c in comparisons)
    raw = [c.paired.p_value if c.paired.p_value is not None else 1.0 for c in comparisons]
    return tuple(
        in_words(attrs.evolve(c, p_holm=p), m)
        for c, p in zip(comparisons, stats.holm(raw), strict=True)
    )


#: The tests whose smallest attainable p-value is ``2 ** (1 - units)`` (every unit moving
#: the same way); the t test has none.
_EXACT_TESTS = {"mcnemar_exact": "exact McNemar test", "sign_flip_exact": "exact sign-flip test"}


def smallest_p(paired: stats.PairedComparison) -> float | None:
    """The smallest p-value the comparison's test can give at this size: ``2 ** (1 - n)``
    for McNemar (n tasks) and the sign-flip test (n clusters); None for the t test."""
    if paired.method not in _EXACT_TESTS:
        return None
    units = paired.n_tasks if paired.method == "mcnemar_exact" else paired.n_clusters
    return min(1.0, 2.0 ** (1 - units))


def in_words(cmp: Comparison, comparisons: int) -> Comparison:
    """``cmp`` with ``significant``, ``verdict``, ``note`` and ``detectable`` filled in.

    Significance is at ``paired.alpha`` for the Holm-adjusted p when ``comparisons > 1``.
    When even the most extreme result of this size could not get below alpha (after
    Holm), the verdict says so once, with the smallest attainable p, and the MDE reads
    "none detectable with N tasks". ``note`` explains, in one line, an interval that
    excludes 0 beside a test that does not reject (or the reverse).
    """
    paired = cmp.paired
    alpha = paired.alpha
    units = "tasks" if paired.n_clusters == paired.n_tasks else "clusters"
    n_units = paired.n_tasks if paired.method == "mcnemar_exact" else paired.n_clusters
    p = cmp.p_holm if cmp.p_holm is not None else paired.p_value
    if p is None:
        return cmp
    after = (
        " after Holm's adjustment for " + f"{comparisons} comparisons" if comparisons > 1 else ""
    )
    floor = smallest_p(paired)
    reachable = floor is None or floor * comparisons < alpha
    significant = p < alpha
    p_name = "Holm-adjusted p" if cmp.p_holm is not None else "p"
    attainable = None if floor is None else min(1.0, floor * comparisons)
    if not reachable:
        assert floor is not None and attainable is not None
        smallest = f"the {_EXACT_TESTS[paired.method]}'s smallest p is {floor:.3g}" + (
            f", {attainable:.3g} after Holm" if comparisons > 1 else ""
        )
        verdict = (
            f"not significant: with {n_units} {units} no result can reach p < {alpha:g}"
            f"{after} ({smallest}); MDE: none detectable with {n_units} {units}"
        )
    elif significant:
        verdict = f"significant at α = {alpha:g}{after} ({p_name} = {p:.4g})"
    else:
        verdict = f"not significant at α = {alpha:g}{after} ({p_name} = {p:.4g})"
    iv = paired.interval
    excludes = iv.low > 0.0 or iv.high < 0.0
    rejects = paired.p_value is not None and paired.p_value < alpha
    note = ""
    if excludes != rejects:
        test = _EXACT_TESTS.get(paired.method, "paired t test")
        side = "excludes" if excludes else "includes"
        verb = "does not reject" if excludes else "rejects"
        note = (
            f"the {iv.level:.0%} interval {side} 0 but the {test} {verb} (p = "
            f"{paired.p_value:.4g}): the interval is the t (or Wilson) approximation over "
            f"{paired.n_clusters} {units}, the test is exact — significance follows the test"
        )
    unreachable = not reachable or (paired.mde is None and floor is not None and floor >= alpha)
    beyond = paired.mde is not None and _within_unit(paired) and paired.mde > 1.0
    if unreachable or beyond:  # no true difference in [-1, 1] is detected at that power
        detectable = f"none detectable with {n_units} {units}"
    elif paired.mde is not None:
        detectable = f"±{paired.mde:.3f} with {paired.n_clusters} {units}"
    else:
        detectable = ""
    return attrs.evolve(
        cmp,
        significant=significant and reachable,
        verdict=verdict,
        note=note,
        detectable=detectable,
        attainable_p=attainable,
    )


def _within_unit(paired: stats.PairedComparison) -> bool:
    """True when both means lie in [0, 1], so no difference can exceed 1."""
    return 0.0 <= paired.mean_a <= 1.0 and 0.0 <= paired.mean_b <= 1.0


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

    Comparisons pair tasks (each task's epochs reduced first): every earlier condition is
    the baseline of every later one, so with conditions [a, b, c] they are b-vs-a, c-vs-a
    and c-vs-b. A condition whose every cell errored is not compared (reports say it is
    broken instead); with more than one comparison each gets a Holm-adjusted p-value.
    ``seed`` is accepted for callers but unused: every interval and test here is analytic
    or exact, so results do not depend on it.
    """
    by_condition: dict[str, list[CellResult]] = {cid: [] for cid in condition_ids}
    for cell in cells:
        by_condition.setdefault(cell.condition_id, []).append(cell)
    aggregates = tuple(
        _condition(cid, members, method=method, k=k, errors_as=errors_as)
        for cid, members in by_condition.items()
    )
    groups = tuple(
        g for cid, members in by_condition.items() for g in _groups(cid, members, errors_as)
    )
    rates = {agg.condition_id: agg.pass_rate for agg in aggregates}
    broken = {agg.condition_id for agg in aggregates if agg.broken}
    ids = [cid for cid in by_condition if cid not in broken]
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
                method=method,
                k=k,
            )
            if found is not None:
                comparisons.append(found)
    return aggregates, groups, with_holm(comparisons)
