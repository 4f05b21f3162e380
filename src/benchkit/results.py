"""Results: what evaluators and verifiers say, what one cell produced, what a run produced.

A *cell* is one (task, condition, epoch). Its :class:`CellResult` is self-contained (it
carries the task's weight, tags and domain) so a run's aggregates can be recomputed from its
cells alone — by ``report`` on a saved file, or after a resumed run.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from benchkit.model import Response, RunOptions, Usage
from benchkit.stats import Interval, PairedComparison

__all__ = [
    "CellResult",
    "CellStatus",
    "Comparison",
    "ConditionAggregate",
    "ConditionInfo",
    "ERROR_CATEGORIES",
    "GroupAggregate",
    "RunInfo",
    "RunResult",
    "Score",
    "Verdict",
]

#: The built-in error categories. Verifiers may add their own lowercase names.
ERROR_CATEGORIES = (
    "none",
    "assertion_failed",
    "verification_failed",
    "timeout",
    "execution_error",
)

CellStatus = Literal["pass", "fail", "error", "timeout"]

_EMPTY: Mapping[str, Any] = {}


@attrs.frozen
class Score:
    """An evaluator's judgement of one response.

    ``value`` is in [0, 1]. When the evaluator itself failed (an unparseable judge reply, a
    broken schema) ``error`` says why and ``value`` is None: such a score never enters an
    average as a silent 0.
    """

    name: str
    value: float | None
    passed: bool
    reason: str | None = None
    details: Mapping[str, Any] = _EMPTY
    error: str | None = None


@attrs.frozen
class Verdict:
    """A verifier's check of a side effect (a file, a command's exit code)."""

    name: str
    passed: bool
    category: str = "none"
    message: str | None = None
    exit_code: int | None = None
    stdout_excerpt: str | None = None
    stderr_excerpt: str | None = None
    duration_ms: float = 0.0
    details: Mapping[str, Any] = _EMPTY


@attrs.frozen
class CellResult:
    """The outcome of one (task, condition, epoch).

    ``status`` is ``pass`` / ``fail`` (the system answered; the answer was judged) or
    ``error`` / ``timeout`` (no judgeable answer). ``error_category`` refines it: ``none``,
    ``assertion_failed``, ``verification_failed``, ``timeout``, ``execution_error`` or a
    verifier's own lowercase category. ``score`` is the mean of the non-errored evaluator
    scores (None when there were none). ``index`` is the task's position in its benchmark.
    """

    task_id: str
    condition_id: str
    epoch: int
    status: CellStatus
    index: int = 0
    error_category: str = "none"
    error: str | None = None
    score: float | None = None
    scores: tuple[Score, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    response: Response | None = None
    attempts: int = 1
    started_at: float = 0.0
    duration_ms: float = 0.0
    weight: float = 1.0
    tags: tuple[str, ...] = ()
    domain: str | None = None
    difficulty: str | None = None

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def errored(self) -> bool:
        return self.status in ("error", "timeout")

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.task_id, self.condition_id, self.epoch)


@attrs.frozen
class ConditionAggregate:
    """Per-condition numbers: counts, pass rate with Wilson interval, scores, latency.

    ``score`` is the benchmark's scoring method applied to this condition (mean, weighted
    mean, or pass@k over epochs). ``errors_as`` records how errored cells entered the score
    averages (``zero`` or ``exclude``); ``scored_cells`` says how many cells those averages
    cover.
    """

    condition_id: str
    n: int
    passed: int
    failed: int
    errors: int
    errors_by_category: Mapping[str, int]
    pass_rate: float
    pass_rate_ci: Interval
    mean_score: float | None
    mean_score_ci: Interval | None
    scored_cells: int
    score: float | None
    scoring_method: str
    k: int | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    latency_p99_ms: float | None
    usage: Usage | None
    errors_as: str
    #: Tokens and cost of LLM judges, summed from ``Score.details["usage"]`` (the
    #: convention every built-in judge follows); ``usage`` is the system under test's.
    judge_usage: Usage | None = None


@attrs.frozen
class GroupAggregate:
    """Pass rate and mean score of one condition within a tag, domain or difficulty."""

    condition_id: str
    group: Literal["tag", "domain", "difficulty"]
    value: str
    n: int
    passed: int
    pass_rate: float
    pass_rate_ci: Interval
    mean_score: float | None


@attrs.frozen
class Comparison:
    """``target`` against ``baseline`` over the (task, epoch) pairs both ran.

    ``paired`` holds the score delta with a paired bootstrap interval and the exact McNemar
    p-value of the pass/fail flips; ``improved`` / ``regressed`` list the task ids that went
    from fail to pass and from pass to fail.
    """

    baseline: str
    target: str
    pass_rate_delta: float
    paired: PairedComparison
    improved: tuple[str, ...]
    regressed: tuple[str, ...]


@attrs.frozen
class ConditionInfo:
    """What a run records about a condition (never the provider object itself)."""

    id: str
    label: str | None = None
    provider: str | None = None
    bundle: str | None = None


@attrs.frozen
class RunInfo:
    """A run's metadata: what ran, with which options, when, from which code."""

    run_id: str
    benchmark_id: str
    benchmark_name: str | None
    benchmark_version: str
    source_path: str | None
    source_format: str
    conditions: tuple[ConditionInfo, ...]
    options: RunOptions
    scoring_method: str = "mean"
    scoring_k: int = 1
    created_at: str = "1970-01-01T00:00:00Z"
    versions: Mapping[str, str] = _EMPTY
    git_commit: str | None = None
    total_cells: int | None = None


@attrs.frozen(repr=False)
class RunResult:
    """Everything a run produced: metadata, every cell, aggregates and comparisons.

    ``interrupted`` is true when the run was cancelled; ``not_run`` then says how many cells
    never ran (every cell that finished is in ``cells``).
    """

    info: RunInfo
    cells: tuple[CellResult, ...]
    aggregates: tuple[ConditionAggregate, ...] = ()
    groups: tuple[GroupAggregate, ...] = ()
    comparisons: tuple[Comparison, ...] = ()
    interrupted: bool = False
    not_run: int = 0

    def __repr__(self) -> str:
        conditions = ", ".join(a.condition_id for a in self.aggregates)
        extra = f", interrupted=True, not_run={self.not_run}" if self.interrupted else ""
        return (
            f"RunResult(run_id={self.info.run_id!r}, benchmark={self.info.benchmark_id!r}, "
            f"cells={len(self.cells)}, conditions=[{conditions}]{extra})"
        )

    @property
    def run_id(self) -> str:
        return self.info.run_id

    def aggregate(self, condition_id: str) -> ConditionAggregate:
        """The aggregate of one condition (KeyError when there is no such condition)."""
        for agg in self.aggregates:
            if agg.condition_id == condition_id:
                return agg
        raise KeyError(condition_id)

    def to_dict(self) -> dict[str, Any]:
        from benchkit.serde import unstructure

        data: dict[str, Any] = unstructure(self)
        return data

    def to_json(self, *, indent: int | None = 2) -> str:
        from benchkit.serde import dumps

        return dumps(self, indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> RunResult:
        from benchkit.serde import loads

        return loads(text, cls)

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per cell: the shape a DataFrame or a CSV wants."""
        records: list[dict[str, Any]] = []
        for cell in self.cells:
            row: dict[str, Any] = {
                "run_id": self.info.run_id,
                "task_id": cell.task_id,
                "condition_id": cell.condition_id,
                "epoch": cell.epoch,
                "status": cell.status,
                "error_category": cell.error_category,
                "score": cell.score,
                "attempts": cell.attempts,
                "duration_ms": cell.duration_ms,
                "latency_ms": cell.response.latency_ms if cell.response else None,
                "error": cell.error,
            }
            for score in cell.scores:
                row[f"score.{score.name}"] = score.value
            records.append(row)
        return records

    def to_pandas(self) -> Any:
        """A pandas DataFrame of :meth:`to_records` (needs pandas installed)."""
        try:
            import pandas as pd  # type: ignore[import-untyped,unused-ignore]
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("RunResult.to_pandas() needs pandas: pip install pandas") from exc
        return pd.DataFrame.from_records(self.to_records())

    def _repr_html_(self) -> str:
        return _summary_html(self)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _summary_html(result: RunResult) -> str:
    info = result.info
    rows = []
    for agg in result.aggregates:
        ci = agg.pass_rate_ci
        rows.append(
            "<tr>"
            f"<td>{html.escape(agg.condition_id)}</td>"
            f"<td>{agg.passed}/{agg.n}</td>"
            f"<td>{agg.pass_rate:.3f} [{ci.low:.3f}, {ci.high:.3f}]</td>"
            f"<td>{_fmt(agg.score)}</td>"
            f"<td>{agg.errors}</td>"
            f"<td>{_fmt(agg.latency_p50_ms, 1)}</td>"
            f"<td>{_fmt(agg.latency_p95_ms, 1)}</td>"
            "</tr>"
        )
    note = ""
    if result.interrupted:
        note = f"<p><b>Interrupted:</b> {result.not_run} cells did not run.</p>"
    return (
        f"<div><b>{html.escape(info.benchmark_name or info.benchmark_id)}</b> "
        f"v{html.escape(info.benchmark_version)} — run <code>{html.escape(info.run_id)}</code>"
        f"{note}<table><thead><tr><th>condition</th><th>passed</th>"
        "<th>pass rate [95% CI]</th><th>score</th><th>errors</th>"
        "<th>p50 ms</th><th>p95 ms</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )
