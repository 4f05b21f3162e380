"""Results: what evaluators and verifiers say, what one cell produced, what a run produced.

A *cell* is one (task, condition, epoch). Its :class:`CellResult` is self-contained (it
carries the task's weight, tags and domain) so a run's aggregates can be recomputed from its
cells alone — by ``report`` on a saved file, or after a resumed run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import attrs

from benchkit.model import Reproduces, Response, RunOptions, Usage
from benchkit.registry import Registry
from benchkit.sequential import EarlyStop
from benchkit.stats import Interval, PairedComparison, VarianceSplit
from benchkit.transcript import Transcript

if TYPE_CHECKING:
    from benchkit.judges import JudgeReport

__all__ = [
    "BudgetStop",
    "CellResult",
    "CellStatus",
    "Comparison",
    "ConditionAggregate",
    "ConditionInfo",
    "ERROR_CATEGORIES",
    "FailureExample",
    "GroupAggregate",
    "JUDGE_ERROR",
    "MetricEstimate",
    "Reproduction",
    "ReproductionRow",
    "RunInfo",
    "RunResult",
    "Score",
    "UNJUDGED",
    "VIEWS",
    "Verdict",
]

#: How a result is drawn for people, by name: the reports layer's renderers, named by
#: ``"module:function"`` strings (as the registries name their built-ins) and imported on
#: first use, so the core never imports the reports. ``html`` is the notebook view
#: (:meth:`RunResult._repr_html_`), ``markdown`` the Markdown report
#: (:meth:`RunResult.to_markdown`).
VIEWS: Registry[Callable[..., str]] = Registry(
    "result view",
    "benchkit.result_views",
    {
        "html": "benchkit.reports.html:run_fragment",
        "markdown": "benchkit.reports._text:to_markdown",
    },
)

#: The built-in error categories. Verifiers may add their own lowercase names.
ERROR_CATEGORIES = (
    "none",
    "assertion_failed",
    "verification_failed",
    "timeout",
    "execution_error",
    "evaluation_error",
    "judge_error",
)

#: The error category of a cell whose LLM judge gave no usable verdict (a failed request,
#: a reply out of shape twice): the judge failed, not the system. A judge's Score says so
#: by naming the kind of failure under ``details["judge_error"]``.
JUDGE_ERROR = "judge_error"

#: The categories of a cell its graders could not judge — a judge that gave no verdict, an
#: evaluator that failed. Such a cell says nothing about the system: it is left out of the
#: pass rate and every average, and counted as *unjudged* beside them.
UNJUDGED = frozenset({"evaluation_error", JUDGE_ERROR})

CellStatus = Literal["pass", "fail", "error", "timeout"]

_EMPTY: Mapping[str, Any] = {}


@attrs.frozen
class Score:
    """An evaluator's judgement of one response.

    ``value`` is in [0, 1]. When the evaluator itself failed (an unparseable judge reply, a
    broken schema) ``error`` says why and ``value`` is None: such a score never enters an
    average as a silent 0.
    """

    #: :mod:`benchkit.serde` writes it without the fields that hold their default (it is
    #: part of every cell: a results line stays short).
    __serde_compact__: ClassVar[bool] = True

    name: str
    value: float | None
    passed: bool
    reason: str | None = None
    details: Mapping[str, Any] = _EMPTY
    error: str | None = None


@attrs.frozen
class Verdict:
    """A verifier's check of a side effect (a file, a command's exit code)."""

    #: :mod:`benchkit.serde` writes it without the fields that hold their default (it is
    #: part of every cell: a results line stays short).
    __serde_compact__: ClassVar[bool] = True

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
    ``cluster`` is the value of the run's ``cluster_by`` task field (None without one):
    cells of tasks that share it are one independent unit in the statistics.
    """

    #: :mod:`benchkit.serde` writes it without the fields that hold their default (it is
    #: part of every cell: a results line stays short).
    __serde_compact__: ClassVar[bool] = True

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
    cluster: str | None = None
    #: What happened inside the cell (see :mod:`benchkit.transcript`); None when nothing
    #: recorded. Not part of the cell's JSON nor of equality: the run store keeps it in a
    #: table of its own (``Store.transcript``).
    transcript: Transcript | None = attrs.field(
        default=None, eq=False, repr=False, metadata={"serde": "omit"}
    )

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
class FailureExample:
    """One cell that did not pass, as a report quotes it: which task, and why (shortened)."""

    category: str
    task_id: str
    epoch: int
    message: str


@attrs.frozen
class ConditionAggregate:
    """Per-condition numbers: counts, pass rate and scores with intervals, latency, failures.

    Intervals treat the task (or the run's declared cluster) as the unit: epochs of one
    task are repeated measurements, not independent trials. ``pass_rate_ci`` is Wilson's
    interval when every task ran once and is its own cluster, else the cluster-robust t
    interval across tasks (``Interval.method`` and ``Interval.n`` say which and over how
    many units). ``score`` is the benchmark's scoring method applied to this condition
    (mean, weighted mean, or the mean of per-task pass@k) and ``score_ci`` its interval
    across tasks. ``errors_as`` records how errored cells entered the score averages
    (``zero`` or ``exclude``); ``scored_cells`` says how many cells those averages cover.
    ``n_tasks`` / ``n_clusters`` count the units; ``variance`` splits the spread of cell
    values into between-task and within-task parts (see :func:`benchkit.stats.variance_split`).
    ``failure_examples`` quotes up to three failed or errored cells per error category.

    ``unjudged`` counts the cells whose graders gave no verdict (:data:`UNJUDGED`: a judge
    that failed, an evaluator that raised): they are in ``n`` and ``errors``, and left out
    of ``pass_rate`` and its interval, which are the system's over the ``n - unjudged``
    judged cells.

    .. versionchanged:: 0.2.0
       ``unjudged``; the pass rate is over the judged cells.
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
    score_ci: Interval | None = None
    n_tasks: int = 0
    n_clusters: int = 0
    variance: VarianceSplit | None = None
    failure_examples: tuple[FailureExample, ...] = ()
    unjudged: int = 0

    @property
    def judged(self) -> int:
        """The cells the pass rate is over: ``n`` less the unjudged ones."""
        return self.n - self.unjudged

    @property
    def broken(self) -> bool:
        """True when every cell of this condition errored: there is nothing to compare."""
        return self.n > 0 and self.errors == self.n


@attrs.frozen
class GroupAggregate:
    """Pass rate and mean score of one condition within a tag, domain or difficulty (the
    pass rate over the judged cells: ``unjudged`` are left out, as in
    :class:`ConditionAggregate`)."""

    condition_id: str
    group: Literal["tag", "domain", "difficulty"]
    value: str
    n: int
    passed: int
    pass_rate: float
    pass_rate_ci: Interval
    mean_score: float | None
    unjudged: int = 0


@attrs.frozen
class Comparison:
    """``target`` against ``baseline`` over the tasks both ran, task by task.

    Each task's epochs are reduced first (its mean score, or its pass@k for that scoring
    method); ``paired`` holds the mean per-task difference with a paired interval, the
    p-value of the test valid for the design (``paired.method``: McNemar for pass/fail
    tasks, an exact sign-flip test for few clusters, a paired t test otherwise) and the
    minimum detectable effect. ``improved`` / ``regressed`` list the tasks whose reduced
    value went up / down — the units the test counts. ``p_holm`` is the Holm-adjusted
    p-value when the run makes more than one comparison (None otherwise).

    Said in words for reports and JSON: ``significant`` is whether the p-value (Holm's
    when there is one) is below ``paired.alpha``, and ``verdict`` says so in a sentence —
    or that no result of this size could be (with the smallest attainable p, also in
    ``attainable_p``: the exact tests' ``2 ** (1 - n)``, times the number of comparisons
    under Holm; None for the t test, which has no floor).
    ``note`` is one more line to read beside the figures (empty for a fixed-size test,
    whose interval inverts it, so the two never disagree; after ``--until-decided`` it
    says that every figure comes from the sequential procedure, whose ``paired.method``,
    p-value and interval then replace the fixed-size test's). ``detectable`` is the minimum detectable effect in words, or
    ``none detectable with N tasks`` when nothing in the possible range is.
    """

    baseline: str
    target: str
    pass_rate_delta: float
    paired: PairedComparison
    improved: tuple[str, ...]
    regressed: tuple[str, ...]
    p_holm: float | None = None
    significant: bool | None = None
    verdict: str = ""
    note: str = ""
    detectable: str = ""
    attainable_p: float | None = None

    @property
    def unreachable(self) -> bool:
        """True when no result of this size could be significant at ``paired.alpha``
        (after Holm): the verdict then says so, with the smallest attainable p."""
        return self.attainable_p is not None and self.attainable_p >= self.paired.alpha

    def p_text(self) -> str:
        """The p-value as reports print it: ``0.0156 (McNemar)``, with the test's name, the
        number of clusters when they are not the tasks, and the Holm-adjusted value."""
        paired = self.paired
        if paired.p_value is None:
            return "–" if paired.mcnemar_p is None else f"{paired.mcnemar_p:.4f} (McNemar)"
        name = _TEST_NAMES.get(paired.method, paired.method)
        if paired.n_clusters and paired.n_clusters != paired.n_tasks:
            name += f", {paired.n_clusters} clusters"
        holm = "" if self.p_holm is None else f"; Holm {_p(self.p_holm)}"
        return f"{_p(paired.p_value)} ({name}{holm})"

    def power_text(self) -> str:
        """One line on power: the minimum detectable effect for this run's size and, when
        the observed difference is smaller, about how many tasks would detect it."""
        paired = self.paired
        units = "tasks" if paired.n_clusters == paired.n_tasks else "clusters"
        if self.detectable.startswith("none"):
            n = paired.n_tasks if paired.method == "mcnemar_exact" else paired.n_clusters
            if (
                paired.method in _TEST_NAMES
                and paired.method != "paired_t"
                and 2.0 ** (1 - n) >= paired.alpha
            ):
                why = (
                    f"with {n} {units} no difference can reach p < {paired.alpha:g} (the "
                    f"exact test's smallest p-value is {2.0 ** (1 - n):.3g})"
                )
            else:
                why = (
                    f"at {paired.power:.0%} power (α={paired.alpha:g}) even the largest "
                    "possible difference could be missed"
                )
            return f"{why}; MDE: {self.detectable}; add {units}"
        if paired.mde is None:
            if paired.method == "sign_flip_exact" and 2.0**-paired.n_clusters * 2 > paired.alpha:
                return (
                    f"with {paired.n_clusters} {units} no difference can reach "
                    f"p < {paired.alpha:g} (the exact test's smallest p-value is "
                    f"{2.0 ** (1 - paired.n_clusters):.3g}); add {units}"
                )
            return ""
        line = (
            f"detectable at {paired.power:.0%} power (α={paired.alpha:g}): "
            f"±{paired.mde:.3f} with {paired.n_clusters} {units}"
        )
        if 0 < abs(paired.delta) < paired.mde:
            needed = paired.tasks_needed(paired.delta) or 0
            line += f"; detecting a {abs(paired.delta):.3f} difference needs about {needed} tasks"
            if units == "clusters":
                size = paired.n_tasks / paired.n_clusters
                line += f" ({math.ceil(needed / size - 1e-9)} clusters of this size)"
        return line


def _p(value: float) -> str:
    """A p-value to 4 decimals, or in scientific notation when that would print 0.0000."""
    return f"{value:.4f}" if value >= 1e-4 or value == 0 else f"{value:.1e}"


_TEST_NAMES = {
    "mcnemar_exact": "McNemar",
    "sign_flip_exact": "exact sign-flip",
    "paired_t": "paired t",
    "group_sequential": "group-sequential, stage-wise",
    "confidence_sequence": "anytime-valid",
}


@attrs.frozen
class ConditionInfo:
    """What a run records about a condition (never the provider object itself)."""

    id: str
    label: str | None = None
    provider: str | None = None
    bundle: str | None = None


@attrs.frozen
class MetricEstimate:
    """One metric of one condition over its tasks: the mean and its 95 % interval.

    .. versionadded:: 0.2.0
    """

    name: str
    value: float
    ci: Interval


@attrs.frozen
class ReproductionRow:
    """One condition against the published figure: our ``value`` of the metric with its
    95 % interval ``ci``, the ``difference`` (ours − published) with its interval (our
    interval shifted: the published figure is taken as exact, its own sampling error
    being unknown), whether the published value lies ``inside`` our interval, and every
    metric the cells carry (``acc``, ``acc_norm``, ...) with its interval.

    .. versionadded:: 0.2.0
    """

    condition_id: str
    value: float
    ci: Interval
    difference: float
    difference_low: float
    difference_high: float
    inside: bool
    metrics: tuple[MetricEstimate, ...] = ()


@attrs.frozen
class Reproduction:
    """A run against the published figure its benchmark declares
    (:class:`~benchkit.model.Reproduces`): one :class:`ReproductionRow` per condition.

    .. versionadded:: 0.2.0
    """

    metric: str
    published: float
    source: str
    rows: tuple[ReproductionRow, ...] = ()

    def lines(self) -> list[str]:
        """The reproduction line of each condition, then its metrics, as every report
        prints them."""
        found = []
        for row in self.rows:
            verdict = (
                "the published value lies inside our 95 % interval"
                if row.inside
                else "the published value lies OUTSIDE our 95 % interval: not reproduced"
            )
            ci = row.ci
            found.append(
                f"reproduction ({row.condition_id}): {self.metric} published {self.published:.3f}"
                f"{f' ({self.source})' if self.source else ''}, ours {row.value:.3f} "
                f"[{ci.low:.3f}, {ci.high:.3f}] ({_method(ci)}); difference "
                f"{row.difference:+.3f} [{row.difference_low:+.3f}, {row.difference_high:+.3f}]; "
                f"{verdict}"
            )
            if row.metrics:
                found.append(
                    f"metrics ({row.condition_id}): "
                    + " · ".join(
                        f"{m.name} {m.value:.3f} [{m.ci.low:.3f}, {m.ci.high:.3f}]"
                        for m in row.metrics
                    )
                    + f" ({_method(row.metrics[0].ci)})"
                )
        return found


def _method(ci: Interval) -> str:
    """How an interval was made, in the words the reports use: ``Wilson, n=1838 tasks``."""
    names = {"wilson": "Wilson", "task_t": "t over tasks", "cluster_t": "t over clusters"}
    units = "clusters" if ci.method.startswith("cluster") else "tasks"
    return f"{names.get(ci.method, ci.method)}, n={ci.n} {units}"


def _cell_metric(cell: CellResult, metric: str) -> float | None:
    """The cell's value of ``metric``: a score's ``details["metrics"][metric]`` (what
    ``multiple_choice`` keeps), else the value of the score named ``metric``, else for
    ``pass_rate`` / ``score`` the cell's own."""
    for score in cell.scores:
        found = score.details.get("metrics") if score.details else None
        if isinstance(found, Mapping) and isinstance(found.get(metric), (int, float)):
            return float(found[metric])
    for score in cell.scores:
        if score.name == metric and score.value is not None:
            return float(score.value)
    if metric == "pass_rate":
        return 1.0 if cell.passed else 0.0
    if metric == "score":
        return cell.score
    return None


def _metric_names(cells: tuple[CellResult, ...]) -> list[str]:
    names: list[str] = []
    for cell in cells:
        for score in cell.scores:
            found = score.details.get("metrics") if score.details else None
            if isinstance(found, Mapping):
                names.extend(n for n in found if isinstance(n, str) and n not in names)
    return names


def _estimate(cells: list[CellResult], metric: str, errors_as: str) -> MetricEstimate | None:
    """The mean of ``metric`` over the cells and its 95 % interval, the task (or declared
    cluster) the unit: Wilson for one 0/1 value per unit, else the cluster-robust t
    interval. An errored cell counts 0 (``errors_as="zero"``) or is left out."""
    from benchkit import stats

    values: list[float] = []
    units: list[str] = []
    for cell in cells:
        value = _cell_metric(cell, metric)
        if value is None and cell.errored and errors_as == "zero":
            value = 0.0
        if value is None:
            continue
        values.append(value)
        units.append(cell.task_id if cell.cluster is None else "\x00" + cell.cluster)
    if not values:
        return None
    mean = math.fsum(values) / len(values)
    if len(set(units)) == len(values) and all(v in (0.0, 1.0) for v in values):
        ones = sum(1 for v in values if v == 1.0)
        ci = attrs.evolve(stats.wilson_interval(ones, len(values)), n=len(values))
    else:
        clustered = any(c.cluster is not None for c in cells)
        ci = stats.clustered_interval(values, units, unit="cluster" if clustered else "task")
    return MetricEstimate(metric, mean, ci)


def reproduce(
    spec: Reproduces, cells: tuple[CellResult, ...], conditions: tuple[str, ...], errors_as: str
) -> Reproduction | None:
    """The :class:`Reproduction` of a run's cells against ``spec`` (None when no cell
    carries the metric)."""
    by_condition: dict[str, list[CellResult]] = {}
    for cell in cells:
        by_condition.setdefault(cell.condition_id, []).append(cell)
    wanted = [spec.condition] if spec.condition is not None else list(conditions)
    names = _metric_names(cells)
    rows = []
    for condition_id in wanted:
        members = by_condition.get(condition_id or "", [])
        found = _estimate(members, spec.metric, errors_as)
        if found is None:
            continue
        low, high = found.ci.low, found.ci.high
        metrics = tuple(
            m for m in (_estimate(members, name, errors_as) for name in names) if m is not None
        )
        rows.append(
            ReproductionRow(
                condition_id=condition_id or "",
                value=found.value,
                ci=found.ci,
                difference=found.value - spec.value,
                difference_low=low - spec.value,
                difference_high=high - spec.value,
                inside=low <= spec.value <= high,
                metrics=metrics,
            )
        )
    if not rows:
        return None
    return Reproduction(spec.metric, float(spec.value), spec.source, tuple(rows))


@attrs.frozen
class RunInfo:
    """A run's metadata: what ran, with which options, when, from which code.

    ``reproduces`` is the published figure the benchmark declares (None: none).

    .. versionchanged:: 0.2.0
       ``reproduces``.
    """

    run_id: str
    benchmark_id: str
    benchmark_name: str | None
    benchmark_version: str
    source_path: str | None
    #: The format the benchmark was read with; None for one built in code.
    source_format: str | None
    conditions: tuple[ConditionInfo, ...]
    options: RunOptions
    scoring_method: str = "mean"
    scoring_k: int = 1
    created_at: str = "1970-01-01T00:00:00Z"
    versions: Mapping[str, str] = _EMPTY
    git_commit: str | None = None
    total_cells: int | None = None
    #: The run this one rescored (:meth:`benchkit.store.Store.rescore`); None for a run of
    #: its own. Written to JSON only when set.
    #:
    #: .. versionadded:: 0.2.0
    parent_run_id: str | None = attrs.field(default=None, metadata={"serde": "omit_if_default"})
    reproduces: Reproduces | None = attrs.field(default=None, metadata={"serde": "omit_if_default"})


@attrs.frozen
class BudgetStop:
    """Why and where a run's budget stopped it (``run.max_cost`` / ``max_tokens`` /
    ``max_calls``): the limit that was reached (``reason``: ``cost``, ``tokens``, ``calls``,
    or ``cost unknown`` — a model call without a price, which a cost budget cannot count,
    never as 0), the limits, and what the finished cells had spent: ``cost_usd`` (None
    when some cost was unknown), ``tokens`` and ``calls`` (attempts of the system under
    test and judge requests; a reply the cache gave the system under test is no call).

    .. versionadded:: 0.2.0
    """

    reason: str
    cost_usd: float | None
    tokens: int
    calls: int
    max_cost: float | None = None
    max_tokens: int | None = None
    max_calls: int | None = None
    unpriced: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """``interrupted: budget`` with the figures, in one line."""
        spent = "cost unknown" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        limits = [
            f"{name} {value}"
            for name, value in (
                ("max cost $", self.max_cost),
                ("max tokens", self.max_tokens),
                ("max calls", self.max_calls),
            )
            if value is not None
        ]
        what = (
            f"no price for {', '.join(self.unpriced)}, so the cost cannot be counted"
            if self.reason == "cost unknown"
            else f"{self.reason} limit reached"
        )
        return (
            f"interrupted: budget ({what}; spent {spent}, {self.tokens} tokens, "
            f"{self.calls} calls; {', '.join(limits).replace('$ ', '$')})"
        )


@attrs.frozen(repr=False)
class RunResult:
    """Everything a run produced: metadata, every cell, aggregates and comparisons.

    ``interrupted`` is true when the run was cancelled; ``not_run`` then says how many cells
    never ran (every cell that finished is in ``cells``). ``early_stop`` says what
    ``until_decided`` did (None when the run did not ask for it): whether it stopped
    before the tasks ran out, after how many, and each comparison's decision.
    ``reproduction`` compares the run with the published figure its benchmark declares
    (``info.reproduces``); made from the cells when not given, like the aggregates.

    .. versionchanged:: 0.2.0
       ``reproduction``.
    """

    info: RunInfo
    cells: tuple[CellResult, ...]
    aggregates: tuple[ConditionAggregate, ...] = ()
    groups: tuple[GroupAggregate, ...] = ()
    comparisons: tuple[Comparison, ...] = ()
    interrupted: bool = False
    not_run: int = 0
    early_stop: EarlyStop | None = None
    #: Set when the run's budget stopped it (``interrupted`` is then true); written to
    #: JSON only when set.
    #:
    #: .. versionadded:: 0.2.0
    budget: BudgetStop | None = attrs.field(default=None, metadata={"serde": "omit_if_default"})
    #: Why an interrupted run stopped: ``budget`` (see :attr:`budget`), ``signal``
    #: (Ctrl-C, SIGTERM), ``cancelled`` (:meth:`Runner.cancel`, the server's cancel),
    #: ``error``; None for a finished run or when nothing said why. The run store keeps it
    #: (``runs show``: ``interrupted: signal``).
    #:
    #: .. versionadded:: 0.2.0
    stopped_by: str | None = attrs.field(default=None, metadata={"serde": "omit_if_default"})
    reproduction: Reproduction | None = attrs.field(
        default=None, metadata={"serde": "omit_if_default"}
    )
    #: One line each, what a reader must know before trusting the numbers: a weak judge
    #: (:func:`benchkit.judges.judge_warnings`). Every report prints them; the explorer
    #: reads them from the result's JSON (``warnings``, absent when there are none).
    #:
    #: .. versionadded:: 0.2.0
    warnings: tuple[str, ...] = attrs.field(default=(), metadata={"serde": "omit_if_default"})

    #: The :class:`~benchkit.registry.Registries` the run looked its plug-ins up in (None:
    #: the default ones): its reports find the run's tool's sections there, also a tool
    #: added on a run's own copy. Not part of the result's JSON nor of its equality (typed
    #: ``Any`` so that reading a result never resolves the registries' type).
    registries: Any = attrs.field(default=None, eq=False, repr=False, metadata={"serde": "omit"})

    def __attrs_post_init__(self) -> None:
        if self.reproduction is None and self.info.reproduces is not None and self.cells:
            found = reproduce(
                self.info.reproduces,
                self.cells,
                tuple(c.id for c in self.info.conditions),
                self.info.options.errors_as,
            )
            object.__setattr__(self, "reproduction", found)

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
        """The aggregate of one condition (NotFoundError, a KeyError, when there is none)."""
        for agg in self.aggregates:
            if agg.condition_id == condition_id:
                return agg
        from benchkit.errors import NotFoundError

        known = ", ".join(repr(a.condition_id) for a in self.aggregates) or "(none)"
        raise NotFoundError(
            f"run {self.info.run_id} has no condition {condition_id!r}",
            fix=f"use one of: {known}.",
        )

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

    def judge_report(
        self,
        ratings: Mapping[tuple[str, str, int], bool | float] | None = None,
        *,
        threshold: float = 0.5,
        level: float = 0.95,
        intervals: bool = True,
        seed: int = 0,
    ) -> JudgeReport:
        """How far this run's evaluators can be trusted: agreement with people (``ratings``
        maps ``(task_id, condition_id, epoch)`` to a verdict or a score in [0, 1]), between
        evaluators, across a judge's repeats, and across the orders of a pairwise judge.
        See :func:`benchkit.judges.judge_report` and docs/statistics.md.

        .. versionchanged:: 0.2.0
           ``intervals`` replaces ``resamples``.
        """
        from benchkit.judges import judge_report

        return judge_report(
            self.cells, ratings, threshold=threshold, level=level, intervals=intervals, seed=seed
        )

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
            raise ImportError(
                "RunResult.to_pandas() needs pandas: pip install 'benchkit[pandas]'"
            ) from exc
        return pd.DataFrame.from_records(self.to_records())

    def to_markdown(self) -> str:
        """The run as a Markdown report — broken conditions, the summary per condition with
        intervals, comparisons with their power, and why cells failed — for a pull request,
        a notebook (``IPython.display.Markdown``) or a file. The same text as
        ``benchkit.reports.to_markdown(result)`` and ``runs show RUN --format markdown``.

        .. versionadded:: 0.2.0
        """
        text: str = VIEWS.get("markdown")(self)
        return text

    def _repr_html_(self) -> str:
        """The notebook view: the HTML report's run page (:mod:`benchkit.reports.html`),
        found through :data:`VIEWS`."""
        fragment: str = VIEWS.get("html")(self)
        return fragment
