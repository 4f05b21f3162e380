"""The core model: one typed shape for every benchmark, whatever format it came from.

Everything here is an attrs frozen, slotted class. Loaders build these objects; the Runner
reads them; nothing mutates them. (De)serialisation goes through :mod:`benchkit.serde`.

Units: configuration durations (``timeout``) are **seconds** as floats, because that is what
anyio's cancel scopes take; measurements in results (``latency_ms``, ``duration_ms``) are
**milliseconds**, because that is what reports show.

A minimal benchmark built in code::

    >>> from benchkit.model import Benchmark, Task, EvaluatorSpec
    >>> bench = Benchmark(
    ...     id="arith",
    ...     name="Arithmetic",
    ...     tasks=(Task(id="t1", input="1+1", expected="2"),),
    ...     evaluators=(EvaluatorSpec("exact"),),
    ... )
    >>> [t.id for t in bench.iter_tasks()]
    ['t1']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import attrs

from benchkit import _limits

__all__ = [
    "Benchmark",
    "Condition",
    "EvaluatorSpec",
    "LazyTasks",
    "Provider",
    "ProviderSpec",
    "Reproduces",
    "Request",
    "Response",
    "ResponseCache",
    "RetrievedItem",
    "RunOptions",
    "ScoringSpec",
    "SetupStep",
    "Source",
    "Suite",
    "Task",
    "ToolCall",
    "Usage",
    "VerifierSpec",
]

ScoringMethod = Literal["mean", "weighted_mean", "pass_at_k"]
SetupAction = Literal["add", "delete", "update", "wait"]

_EMPTY: Mapping[str, Any] = {}


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return value if value else _EMPTY


def _str_tuple(value: Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


# Collection fields take any iterable (a list is what people write) and store a tuple, so
# the objects stay immutable and hashable. One converter per element type: mypy's attrs
# plug-in types ``__init__`` from the converter's argument.


def _evaluator_specs(value: Iterable[EvaluatorSpec]) -> tuple[EvaluatorSpec, ...]:
    return value if type(value) is tuple else tuple(value)


def _verifier_specs(value: Iterable[VerifierSpec]) -> tuple[VerifierSpec, ...]:
    return value if type(value) is tuple else tuple(value)


def _tool_calls(value: Iterable[ToolCall]) -> tuple[ToolCall, ...]:
    return value if type(value) is tuple else tuple(value)


def _retrieved(value: Iterable[RetrievedItem]) -> tuple[RetrievedItem, ...]:
    return value if type(value) is tuple else tuple(value)


def _setup_steps(value: Iterable[SetupStep]) -> tuple[SetupStep, ...]:
    return value if type(value) is tuple else tuple(value)


def _conditions(value: Iterable[Condition]) -> tuple[Condition, ...]:
    return value if type(value) is tuple else tuple(value)


def _str_set(value: Iterable[str]) -> frozenset[str]:
    return frozenset((value,) if isinstance(value, str) else value)


@attrs.frozen
class ToolCall:
    """A tool (function) call: made by a model, or expected of it."""

    #: :mod:`benchkit.serde` writes it without the fields that hold their default (it is
    #: part of every cell: a results line stays short).
    __serde_compact__: ClassVar[bool] = True

    name: str
    arguments: Mapping[str, Any] = attrs.field(
        default=_EMPTY, converter=_frozen_mapping, hash=False
    )
    id: str | None = None


@attrs.frozen
class RetrievedItem:
    """One item a retriever or memory store returned, in rank order."""

    #: :mod:`benchkit.serde` writes it without the fields that hold their default (it is
    #: part of every cell: a results line stays short).
    __serde_compact__: ClassVar[bool] = True

    id: str
    content: str
    score: float | None = None
    metadata: Mapping[str, Any] = attrs.field(default=_EMPTY, converter=_frozen_mapping, hash=False)


@attrs.frozen
class Usage:
    """Token usage and (when a price table is known) cost of one or more model calls."""

    #: :mod:`benchkit.serde` writes it without the fields that hold their default (it is
    #: part of every cell: a results line stays short).
    __serde_compact__: ClassVar[bool] = True

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost_unknown(self) -> bool:
        """Tokens were spent at no known price: any sum that includes this is unknown too.

        .. versionadded:: 0.2.0
        """
        return self.cost_usd is None and self.total_tokens > 0

    def __add__(self, other: Usage) -> Usage:
        """Tokens add up; so do costs, but a part that spent tokens at an unknown cost
        makes the sum's cost unknown (None), never a figure that counts it as free. A part
        with no tokens and no cost (``Usage()``) adds nothing.

        .. versionchanged:: 0.2.0
           An unknown cost is no longer counted as 0.
        """
        unknown = self.cost_unknown or other.cost_unknown
        unpriced = self.cost_usd is None and other.cost_usd is None
        cost = None if unknown or unpriced else (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            cost,
        )


@attrs.frozen
class _NamedSpec:
    """A registry type, its options, and an optional label for its results."""

    type: str
    options: Mapping[str, Any] = attrs.field(default=_EMPTY, converter=_frozen_mapping, hash=False)
    name: str | None = None

    @property
    def label(self) -> str:
        """The name results are reported under: ``name``, else ``type``."""
        return self.name or self.type


@attrs.frozen
class EvaluatorSpec(_NamedSpec):
    """Which evaluator scores a task, and its options (keywords, patterns, schema, ...).

    ``name`` labels the score in results; it defaults to ``type``. The Runner builds each
    distinct spec (same type, options and name) once per run.
    """


@attrs.frozen
class VerifierSpec(_NamedSpec):
    """A side-effect check run after the provider (a file exists, a command exits 0, ...)."""


@attrs.frozen
class ProviderSpec:
    """A provider named by its registry type plus options, built by the Runner at run time."""

    type: str
    options: Mapping[str, Any] = attrs.field(default=_EMPTY, converter=_frozen_mapping, hash=False)


def _whole(value: Any) -> Any:
    """An integral float (``4.0``, as JSON Schema's ``integer`` allows) as an int; anything
    else unchanged, for the validator to judge."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


@attrs.frozen
class SetupStep:
    """A step run before the task's query, e.g. memory ingestion (add / delete / update).

    ``content`` is what to store; ``target`` names the record a delete or update acts on;
    ``delay_ms`` waits after the step (``action="wait"`` only waits).
    """

    action: SetupAction
    content: Any = attrs.field(default=None, hash=False)
    target: str | None = None
    metadata: Mapping[str, Any] = attrs.field(default=_EMPTY, converter=_frozen_mapping, hash=False)
    delay_ms: float = 0.0


@attrs.frozen
class Task:
    """One thing to evaluate: an input, what is expected of the output, and how to judge it.

    ``input`` and ``expected`` are any JSON values (a string, a message list, an object).
    ``evaluators`` score the response; ``verifiers`` check side effects. A task with neither
    uses the benchmark's defaults. ``context`` is retrieval context (for faithfulness-style
    judges); ``relevant_ids`` are the gold retrieval ids (with optional graded relevance in
    ``metadata["relevance"]``); ``setup`` holds ingestion steps for memory benchmarks.
    """

    id: str
    input: Any = attrs.field(default=None, hash=False)  # any JSON value: maybe unhashable
    expected: Any = attrs.field(default=None, hash=False)
    evaluators: tuple[EvaluatorSpec, ...] = attrs.field(default=(), converter=_evaluator_specs)
    verifiers: tuple[VerifierSpec, ...] = attrs.field(default=(), converter=_verifier_specs)
    timeout: float | None = None
    weight: float = 1.0
    tags: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)
    domain: str | None = None
    difficulty: str | None = None
    description: str | None = None
    context: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)
    expected_tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_tool_calls)
    relevant_ids: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)
    setup: tuple[SetupStep, ...] = attrs.field(default=(), converter=_setup_steps)
    metadata: Mapping[str, Any] = attrs.field(default=_EMPTY, converter=_frozen_mapping, hash=False)


@attrs.frozen
class LazyTasks:
    """Tasks produced on demand by ``factory`` — each call returns a fresh iterator.

    Lets a 1M-task JSONL file stream through a run without sitting in memory whole.
    ``count`` is the number of tasks when known cheaply (for progress bars), else None.
    """

    factory: Callable[[], Iterator[Task]] = attrs.field(eq=False)
    count: int | None = None

    def __iter__(self) -> Iterator[Task]:
        return self.factory()


TaskSource = tuple[Task, ...] | LazyTasks


def _tasks(value: Iterable[Task] | LazyTasks) -> TaskSource:
    if isinstance(value, (tuple, LazyTasks)):
        return value
    return tuple(value)


@attrs.frozen
class ScoringSpec:
    """How a condition's headline score is computed from its cells.

    ``mean`` averages cell scores; ``weighted_mean`` weights them by ``Task.weight``;
    ``pass_at_k`` uses the unbiased estimator over epochs with this ``k``.
    """

    method: ScoringMethod = "mean"
    k: int = attrs.field(default=1, converter=_whole)


@attrs.frozen
class Source:
    """Where a benchmark came from: the file it was loaded from and its format name.

    A benchmark built in code has no format (None, shown as "built in code"); a format's
    ``load`` names itself, and a server job's suite is stamped with its tool's format.

    .. versionchanged:: 0.2.0
       ``format`` defaults to None (it said ``native`` for every suite built in code).
    """

    path: str | None = None
    format: str | None = None


def _fraction(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        from benchkit.errors import ConfigError

        raise ConfigError(
            f"reproduces.{attribute.name} must be a fraction in [0, 1], got {value!r}",
            fix="write a published 66.3 % as 0.663.",
        )


@attrs.frozen
class Reproduces:
    """A published figure a benchmark reproduces: ``metric`` (``acc``, ``acc_norm``, an
    evaluator's name, or ``pass_rate``) was ``value`` (a fraction: 66.3 % is 0.663) in
    ``source``. A run of the benchmark reports its own figure beside it, with a 95 %
    interval, and whether the published value lies inside (``RunResult.reproduction``;
    docs/reproduce.md). ``condition`` names the condition compared (default: all).

    .. versionadded:: 0.2.0
    """

    metric: str
    value: float = attrs.field(validator=_fraction)
    source: str = ""
    condition: str | None = None


@attrs.frozen
class Benchmark:
    """A named, versioned set of tasks with default evaluators and a scoring method.

    ``reproduces`` names a published figure the benchmark reproduces (:class:`Reproduces`).

    .. versionchanged:: 0.2.0
       ``reproduces``.
    """

    id: str
    name: str | None = None
    version: str = "0"
    tasks: TaskSource = attrs.field(default=(), converter=_tasks)
    domain: str | None = None
    description: str | None = None
    scoring: ScoringSpec = ScoringSpec()
    timeout: float | None = None
    evaluators: tuple[EvaluatorSpec, ...] = attrs.field(default=(), converter=_evaluator_specs)
    verifiers: tuple[VerifierSpec, ...] = attrs.field(default=(), converter=_verifier_specs)
    metadata: Mapping[str, Any] = attrs.field(default=_EMPTY, converter=_frozen_mapping, hash=False)
    source: Source = Source()
    reproduces: Reproduces | None = None

    @property
    def title(self) -> str:
        return self.name or self.id

    @property
    def task_count(self) -> int | None:
        """How many tasks, or None when they stream from a source of unknown length."""
        if isinstance(self.tasks, tuple):
            return len(self.tasks)
        return self.tasks.count

    def iter_tasks(self) -> Iterator[Task]:
        return iter(self.tasks)


def _bounded(
    high: float, *, low: float = 0, above: bool = False, integer: bool = False
) -> Callable[[object, attrs.Attribute[Any], Any], None]:
    """An attrs validator: the value (unless None) is a finite number from ``low``
    (excluded when ``above``) to ``high`` — the bounds of :mod:`benchkit._limits`."""
    from benchkit._limits import out_of_bounds

    def check(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None:
            return
        problem = out_of_bounds(value, low, high, above=above, integer=integer)
        if problem is not None:
            from benchkit.errors import ConfigError

            raise ConfigError(
                f"{attribute.name} {problem}",
                fix=f"give {attribute.name} a value {'>' if above else '>='} {low:,} and "
                f"<= {high:,} (or leave it out for the default); docs/limits.md lists the "
                "bounds.",
            )

    return check


@attrs.frozen
class Condition:
    """One arm of a comparison: the system under test plus its bundle and options.

    ``provider`` is either a :class:`ProviderSpec` (built from the registry at run time) or
    a ready provider object. ``bundle`` is a directory the provider or verifiers work in.
    ``concurrency`` optionally caps how many cells of this condition run at once.
    """

    id: str
    provider: ProviderSpec | Provider = attrs.field(eq=False)
    label: str | None = None
    bundle: Path | None = None
    options: Mapping[str, Any] = attrs.field(default=_EMPTY, converter=_frozen_mapping, hash=False)
    concurrency: int | None = attrs.field(
        default=None,
        converter=_whole,
        validator=_bounded(_limits.MAX_CONCURRENCY, above=True, integer=True),
    )

    @property
    def title(self) -> str:
        return self.label or self.id


def _positive(_inst: object, attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None and value <= 0:
        from benchkit.errors import ConfigError

        raise ConfigError(
            f"{attribute.name} must be > 0, got {value!r}",
            fix=f"give {attribute.name} a positive value (or leave it out for the default).",
        )


def _at_most(limit: int) -> Any:
    """A validator refusing values above ``limit`` with a :class:`ConfigError`."""

    def check(_inst: object, attribute: attrs.Attribute[Any], value: float) -> None:
        if value > limit:
            from benchkit.errors import ConfigError

            raise ConfigError(
                f"{attribute.name} must be at most {limit}, got {value!r}",
                fix=f"give {attribute.name} a value of {limit} or less.",
            )

    return check


@attrs.frozen
class RunOptions:
    """How to run a suite: concurrency, timeouts, retries, epochs, determinism.

    ``retry_on`` names the error categories that are retried; by default only
    ``execution_error`` (a failed assertion is an answer, not a fault). ``timeout`` is the
    per-cell limit in seconds when a task sets none. ``errors_as`` says how errored cells
    enter score aggregates: ``"zero"`` (they count as 0) or ``"exclude"``. ``cluster_by``
    names a task field (a dotted path such as ``metadata.passage``) whose value groups
    tasks into clusters that the statistics treat as one independent unit (questions that
    share a passage, a conversation or a template); by default each task is its own unit.

    ``until_decided`` runs the tasks in a seeded random order and stops taking cells once
    every comparison between conditions is decided by an anytime-valid test — the paired
    difference shown non-zero, or (with ``margin``) shown to lie within ``±margin`` — see
    :mod:`benchkit.sequential`. ``judge_repeats`` asks every evaluator that many times per
    cell: the verdict is the majority (the score the mean), and the report gives the flip
    rate (:meth:`benchkit.RunResult.judge_report`).

    ``concurrency`` is the cap on cells running at once for the whole run, on one machine
    or across a Ray cluster. ``concurrency_per_worker`` matters only on Ray
    (:class:`~benchkit.executors.RayExecutor`): the cells one worker runs at once, by
    default ``concurrency`` divided over the workers (docs/scale-out.md).

    .. versionadded:: 0.2.0
       ``concurrency_per_worker``.
    """

    concurrency: int = attrs.field(
        default=8,
        converter=_whole,
        validator=_bounded(_limits.MAX_CONCURRENCY, above=True, integer=True),
    )
    concurrency_per_worker: int | None = attrs.field(
        default=None,
        converter=_whole,
        validator=_bounded(_limits.MAX_CONCURRENCY, above=True, integer=True),
    )
    timeout: float | None = attrs.field(
        default=None, validator=_bounded(_limits.MAX_TIMEOUT_S, above=True)
    )
    retries: int = attrs.field(
        default=0, converter=_whole, validator=_bounded(_limits.MAX_RETRIES, integer=True)
    )
    retry_on: frozenset[str] = attrs.field(
        default=frozenset({"execution_error"}), converter=_str_set
    )
    backoff_base: float = attrs.field(default=0.5, validator=_bounded(_limits.MAX_WAIT_S))
    backoff_max: float = attrs.field(default=30.0, validator=_bounded(_limits.MAX_WAIT_S))
    epochs: int = attrs.field(
        default=1,
        converter=_whole,
        validator=_bounded(_limits.MAX_EPOCHS, above=True, integer=True),
    )
    deterministic: bool = False
    seed: int = attrs.field(
        default=0,
        converter=_whole,
        validator=_bounded(_limits.MAX_SEED, low=_limits.MIN_SEED, integer=True),
    )
    errors_as: Literal["zero", "exclude"] = "zero"
    cluster_by: str | None = None
    until_decided: bool = False
    margin: float | None = attrs.field(default=None, validator=_positive)
    judge_repeats: int = attrs.field(default=1, validator=[_positive, _at_most(100)])
    #: The run's budget: it stops scheduling cells once the cost (USD), the tokens or the
    #: calls of its finished cells reach one of these (docs/llm.md). Written to JSON only
    #: when set.
    #:
    #: .. versionadded:: 0.2.0
    max_cost: float | None = attrs.field(
        default=None,
        validator=_bounded(_limits.MAX_COST_USD, above=True),
        metadata={"serde": "omit_if_default"},
    )
    max_tokens: int | None = attrs.field(
        default=None,
        converter=_whole,
        validator=_bounded(_limits.MAX_COUNT, above=True, integer=True),
        metadata={"serde": "omit_if_default"},
    )
    max_calls: int | None = attrs.field(
        default=None,
        converter=_whole,
        validator=_bounded(_limits.MAX_COUNT, above=True, integer=True),
        metadata={"serde": "omit_if_default"},
    )


@attrs.frozen
class Suite:
    """A benchmark plus the conditions to run it under and the run options."""

    benchmark: Benchmark
    conditions: tuple[Condition, ...] = attrs.field(default=(), converter=_conditions)
    options: RunOptions = RunOptions()
    base_dir: Path | None = None

    def with_options(self, **changes: Any) -> Suite:
        """A copy with some run options replaced (``suite.with_options(epochs=5)``)."""
        return attrs.evolve(self, options=attrs.evolve(self.options, **changes))

    def select(
        self,
        *,
        tasks: Iterable[str] = (),
        tags: Iterable[str] = (),
        conditions: Iterable[str] = (),
        limit: int | None = None,
    ) -> Suite:
        """A copy that runs part of the suite (the CLI's ``-k``, ``--tag``, ``--condition``,
        ``--limit``).

        ``tasks`` are patterns matched against task ids — a glob when it has ``*``, ``?`` or
        ``[``, else a substring; a task is kept when any pattern matches. ``tags`` keep tasks
        with any of them. ``conditions`` are condition ids to keep. ``limit`` keeps the first
        N selected tasks. Streamed tasks stay streamed. Selecting nothing is a ConfigError.
        """
        import fnmatch
        import itertools

        from benchkit.errors import ConfigError

        patterns, wanted_tags = tuple(tasks), frozenset(tags)
        if limit is not None and limit < 1:
            raise ConfigError(f"limit must be >= 1, got {limit}", fix="pass --limit 1 or more.")

        def matches(task: Task) -> bool:
            if wanted_tags and wanted_tags.isdisjoint(task.tags):
                return False
            if not patterns:
                return True
            return any(
                fnmatch.fnmatchcase(task.id, p) if any(c in p for c in "*?[") else p in task.id
                for p in patterns
            )

        suite = self
        if patterns or wanted_tags or limit is not None:
            source = self.benchmark.tasks
            if isinstance(source, tuple):
                kept = tuple(t for t in source if matches(t))[:limit]
                if not kept:
                    raise ConfigError(
                        f"no task of {self.benchmark.id!r} matches the selection",
                        fix="check the task patterns and tags (`validate` lists the file).",
                    )
                new_tasks: TaskSource = kept
            else:
                lazy = source

                def factory() -> Iterator[Task]:
                    return itertools.islice((t for t in lazy if matches(t)), limit)

                new_tasks = LazyTasks(factory)
            suite = attrs.evolve(self, benchmark=attrs.evolve(self.benchmark, tasks=new_tasks))
        wanted = tuple(conditions)
        if wanted:
            known = [c.id for c in self.conditions]
            unknown = [c for c in wanted if c not in known]
            if unknown:
                raise ConfigError(
                    f"no condition {', '.join(map(repr, unknown))} in {self.benchmark.id!r}",
                    fix=f"use one of: {', '.join(known) or '(none)'}.",
                )
            suite = attrs.evolve(suite, conditions=[c for c in suite.conditions if c.id in wanted])
        return suite


@attrs.frozen
class Request:
    """What a provider is asked to do for one cell (one attempt of task × condition × epoch).

    ``seed`` is derived from the run seed and the cell key, so a seeded provider gives the
    same answer for the same cell in every run; ``timeout`` is the cell's limit in seconds
    (the Runner enforces it too; a provider may use it to stop its own work early).
    """

    task: Task
    condition: Condition
    epoch: int = 0
    attempt: int = 1
    seed: int = 0
    timeout: float | None = None
    run_id: str = ""
    deterministic: bool = False


@attrs.frozen
class Response:
    """What a provider returned for one request.

    ``output`` is any JSON value. ``latency_ms`` is filled in by the Runner when the
    provider leaves it None. ``raw`` keeps the provider's raw payload for debugging; the
    Runner drops it from results unless asked to keep it.
    """

    #: :mod:`benchkit.serde` writes it without the fields that hold their default (it is
    #: part of every cell: a results line stays short).
    __serde_compact__: ClassVar[bool] = True

    output: Any = attrs.field(default=None, hash=False)
    latency_ms: float | None = None
    usage: Usage | None = None
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_tool_calls)
    retrieved: tuple[RetrievedItem, ...] = attrs.field(default=(), converter=_retrieved)
    artifacts: str | None = None
    raw: Any = attrs.field(default=None, hash=False)
    metadata: Mapping[str, Any] = attrs.field(default=_EMPTY, converter=_frozen_mapping, hash=False)


# -- what a run is handed: the system under test, and where LLM replies are cached --------
# (re-exported by benchkit.protocols with the other plug-in protocols)


@runtime_checkable
class Provider(Protocol):
    """The system under test. Raise :class:`benchkit.errors.InvocationError` on failure.

    A provider may also define ``async aclose()``; the Runner calls it after the run for
    providers it built from a :class:`~benchkit.model.ProviderSpec`. A provider that is an
    async context manager (``__aenter__``/``__aexit__``) is entered for the whole run, in
    the run's task, so it can keep a session and background tasks alive across cells
    (:class:`~benchkit.providers.McpProvider` does); it must accept nested entries.
    """

    async def invoke(self, request: Request) -> Response: ...


@runtime_checkable
class ResponseCache(Protocol):
    """A cache of LLM replies: ``cache_get`` / ``cache_put`` over JSON text.

    The run store is one (its ``llm_cache`` table). Whoever opens the store hands it to the
    :class:`~benchkit.runner.Runner` (``response_cache=``), which passes it to every plug-in
    factory that takes a ``response_cache`` argument; an LLM client never opens a store
    itself, so ``--store PATH`` and ``--no-store`` decide where replies are cached.
    """

    def cache_get(self, key: str) -> str | None: ...

    def cache_put(self, key: str, value: str) -> None: ...
