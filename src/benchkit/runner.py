"""The Runner: drives tasks × conditions × epochs through providers, verifiers, evaluators.

Design points, each measured or tested:

* The Runner decides what runs; an executor (:mod:`benchkit.executors`) decides where. The
  default, in-process one is a fixed pool of ``concurrency`` workers pulling cells from one
  shared iterator; there is no task (or memory stream) per cell, so a 200,000-cell run
  costs 200,000 loop iterations, not 200,000 tasks. A condition's ``concurrency`` adds a
  per-provider cap. Whatever the executor, finished cells come back to this process, which
  alone writes them to the sinks.
* Every finished cell goes to the sinks at once, in completion order; nothing that finished
  is lost when a later cell, the process or the user stops the run.
* All state lives in a per-run object: any number of runs may share an event loop.
* Works on asyncio and trio (anyio), and has a sync twin (:func:`benchkit.run`).
* A recorded cell is bounded: every string in its output and raw reply is cut at
  :data:`MAX_OUTPUT_CHARS`, every reason, message and string in score or verdict details or
  response metadata at :data:`MAX_TEXT_CHARS`, the cell's error at 2,000 characters; a cut
  text ends with ``"…[truncated N characters]"``. Evaluators see the whole output first.

    >>> import benchkit
    >>> from benchkit import Benchmark, Condition, Suite, Task, EvaluatorSpec
    >>> suite = Suite(
    ...     Benchmark("echo", tasks=[Task("t1", input="hi", expected="hi")],
    ...               evaluators=[EvaluatorSpec("exact")]),
    ...     conditions=[Condition("echo", benchkit.CallableProvider(lambda x: x))],
    ... )
    >>> benchkit.run(suite).aggregate("echo").pass_rate
    1.0
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import math
import operator
import random
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeGuard, cast

import anyio
import anyio.abc
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from benchkit import _threads
from benchkit._aggregate import aggregate_run, task_cluster, task_value
from benchkit._bounds import clip, clip_json
from benchkit._repeat import JUDGE_REPEAT
from benchkit._version import __version__
from benchkit.errors import ConfigError, InvocationError
from benchkit.executors import CellItem, Executor, LocalExecutor
from benchkit.model import (
    Condition,
    EvaluatorSpec,
    ProviderSpec,
    Request,
    Response,
    Suite,
    Task,
    VerifierSpec,
)
from benchkit.protocols import (
    Evaluator,
    Provider,
    ResponseCache,
    ResultSink,
    Verifier,
    VerifyContext,
)
from benchkit.registry import Registries, Registry, default_registries
from benchkit.results import (
    CellResult,
    CellStatus,
    ConditionInfo,
    RunInfo,
    RunResult,
    Score,
    Verdict,
)
from benchkit.sequential import StoppingPolicy, schedule
from benchkit.transcript import _CURRENT as _TRANSCRIPT
from benchkit.transcript import Recorder, record

__all__ = ["Progress", "RunStream", "Runner", "check_suite", "new_run_id", "sync_run"]

_log = logging.getLogger("benchkit.runner")

FROZEN_TIMESTAMP = "1970-01-01T00:00:00Z"


@attrs.frozen
class Progress:
    """One progress event, sent after every finished cell.

    ``total`` is None when tasks stream from a source of unknown length; ``rate`` is cells
    per second so far and ``eta`` the seconds left at that rate (None when unknown).
    """

    done: int
    total: int | None
    errors: int
    elapsed: float
    cell: CellResult

    @property
    def rate(self) -> float:
        return self.done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        if self.total is None or self.done == 0:
            return None
        return (self.total - self.done) / self.rate if self.rate > 0 else None


ProgressCallback = Callable[[Progress], None]


class Runner:
    """Runs suites. Holds configuration only; each run keeps its own state.

    ``sinks`` receive every finished cell at once. ``progress`` is called after each cell
    (keep it cheap — throttle expensive rendering yourself). ``keep_raw`` keeps providers'
    raw payloads in results (off by default: they can be large). ``response_cache`` (the
    run store, say) goes to every provider, evaluator and verifier built from a spec whose
    factory takes a ``response_cache`` argument — the LLM clients cache their replies there;
    without one they cache nothing. ``executor`` decides where cells run (default
    :class:`~benchkit.executors.LocalExecutor`: in this process; see
    :class:`benchkit.RayExecutor`); the sinks always receive the cells here.
    """

    def __init__(
        self,
        *,
        sinks: Sequence[ResultSink] = (),
        progress: ProgressCallback | None = None,
        registries: Registries | None = None,
        keep_raw: bool = False,
        response_cache: ResponseCache | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.sinks = tuple(sinks)
        self.progress = progress
        self.registries = registries or default_registries()
        self.keep_raw = keep_raw
        self.response_cache = response_cache
        self.executor: Executor = executor if executor is not None else LocalExecutor()
        self._active: set[_Run] = set()
        self._cancel_pending = False
        self.last_result: RunResult | None = None

    async def run(
        self, suite: Suite, *, run_id: str | None = None, done: Iterable[CellResult] = ()
    ) -> RunResult:
        """Run every cell of ``suite`` and return the result.

        ``done`` are cells already finished by an earlier, interrupted run (a resume): their
        (task, condition, epoch) keys are not run again, and they are part of the result
        but are not written to the sinks a second time.

        If the run is cancelled from outside (a cancel scope, Ctrl-C) the cancellation
        propagates as anyio requires, after every finished cell has reached the sinks;
        the partial result is then in :attr:`last_result`. :meth:`cancel` instead stops
        the run gracefully and ``run`` returns the partial result.
        """
        state = _Run(self, suite, run_id, done)
        return await state.execute(None)

    def stream(
        self, suite: Suite, *, run_id: str | None = None, done: Iterable[CellResult] = ()
    ) -> RunStream:
        """Cells as they finish: ``async with runner.stream(s) as cells: async for c in cells``.

        After the block, ``cells.result`` holds the :class:`RunResult`. ``done`` as for
        :meth:`run` (those cells are not streamed again).
        """
        return RunStream(_Run(self, suite, run_id, done))

    def cancel(self) -> None:
        """Stop every active run of this runner gracefully (call from the event loop)."""
        for state in list(self._active):
            state.cancel()

    def cancel_threadsafe(self) -> None:
        """Like :meth:`cancel`, callable from any thread or a signal handler (Ctrl-C).

        A cancel that comes before the run has started stops it as soon as it starts, so
        a signal can never slip between "not started yet" and "running" unseen.
        """
        self._cancel_pending = True
        for state in list(self._active):
            state.cancel_threadsafe()


class RunStream:
    """Async context manager and iterator over a run's cells in completion order."""

    def __init__(self, state: _Run) -> None:
        self._state = state
        self._tg: anyio.abc.TaskGroup | None = None
        self._receive: MemoryObjectReceiveStream[CellResult] | None = None
        self._exhausted = False
        self.result: RunResult | None = None

    async def __aenter__(self) -> RunStream:
        send: MemoryObjectSendStream[CellResult]
        send, self._receive = anyio.create_memory_object_stream[CellResult](
            max_buffer_size=math.inf
        )
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._produce, send)
        return self

    async def _produce(self, send: MemoryObjectSendStream[CellResult]) -> None:
        async with send:
            self.result = await self._state.execute(send)

    def __aiter__(self) -> AsyncIterator[CellResult]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[CellResult]:
        assert self._receive is not None, "use `async with runner.stream(suite) as cells`"
        async for cell in self._receive:
            yield cell
        self._exhausted = True

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None and self._receive is not None
        if not self._exhausted:
            self._state.cancel()
        self._receive.close()
        return await self._tg.__aexit__(exc_type, exc, tb)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_run_id(suite: Suite) -> str:
    """A fresh run id: ``run_<UTC time>_<random>``, or a hash of the suite when deterministic."""
    if suite.options.deterministic:
        ident = f"{suite.benchmark.id}|{suite.options.seed}|" + "|".join(
            c.id for c in suite.conditions
        )
        return "run_" + hashlib.blake2b(ident.encode(), digest_size=6).hexdigest()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return f"run_{stamp}_{uuid.uuid4().hex[:6]}"


def _git_commit(path: Path | None) -> str | None:
    start = path if path is not None else Path.cwd()
    for directory in (start, *start.parents):
        head = directory / ".git" / "HEAD"
        if head.is_file():
            try:
                ref = head.read_text().strip()
                if ref.startswith("ref: "):
                    ref_file = directory / ".git" / ref[5:]
                    return ref_file.read_text().strip() if ref_file.is_file() else None
                return ref
            except OSError:
                return None
    return None


def _cell_seed(seed: int, task_id: str, condition_id: str, epoch: int) -> int:
    digest = hashlib.blake2b(
        f"{seed}\x1f{task_id}\x1f{condition_id}\x1f{epoch}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big") >> 1


def _spec_key(spec: EvaluatorSpec | VerifierSpec) -> str:
    if not spec.options and spec.name is None:
        return spec.type
    return json.dumps([spec.type, spec.name, spec.options], sort_keys=True, default=str)


@attrs.define
class _Outcome:
    """What one attempt at a cell produced."""

    status: CellStatus
    category: str = "none"
    error: str | None = None
    response: Response | None = None
    scores: tuple[Score, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    retryable: bool = True


class _Run:
    """The state of one run: built providers, counters, collected cells."""

    def __init__(
        self, runner: Runner, suite: Suite, run_id: str | None, done: Iterable[CellResult]
    ) -> None:
        self.runner = runner
        self.suite = suite
        self.options = suite.options
        self.base_dir = suite.base_dir
        self._validate()
        self.run_id = run_id or new_run_id(suite)
        self.cells: list[CellResult] = list(done)
        self._done = frozenset(cell.key for cell in self.cells)
        self._new_cells = 0
        self.errors = sum(1 for cell in self.cells if cell.errored)
        self.cancelled = False
        self._scope: anyio.CancelScope | None = None
        self._call_soon: Callable[[Callable[[], object]], None] | None = None
        self._providers: list[Provider] = []
        self._owned: list[Provider] = []
        self._limiters: list[anyio.CapacityLimiter | None] = []
        self._evaluators: dict[str, Evaluator] = {}
        self._verifiers: dict[str, Verifier] = {}
        self._blocking: set[int] = set()  # ids of plug-ins whose sync methods run in threads
        self._iterator: Iterator[CellItem] | None = None
        self._send: MemoryObjectSendStream[CellResult] | None = None
        self._started = 0.0
        self._taken = 0
        self._fatal: Exception | None = None
        self._default_evaluators = suite.benchmark.evaluators
        self._default_verifiers = suite.benchmark.verifiers
        self._policy: StoppingPolicy | None = None  # consulted after each cell (until_decided)
        # The sinks' ``see_task`` methods (see ResultSink), called as the run reaches a task.
        self._task_hooks: tuple[Callable[[int, Task], object], ...] = ()
        self.info = self._make_info()

    def _validate(self) -> None:
        suite = self.suite
        if not suite.conditions:
            raise ConfigError(
                f"suite for benchmark {suite.benchmark.id!r} has no conditions",
                fix="add at least one Condition (the system under test) to the Suite.",
            )
        seen: set[str] = set()
        for cond in suite.conditions:
            if cond.id in seen:
                raise ConfigError(
                    f"condition id {cond.id!r} appears twice",
                    fix="give every condition a unique id.",
                )
            seen.add(cond.id)
        scoring = suite.benchmark.scoring
        if scoring.method == "pass_at_k" and scoring.k > self.options.epochs:
            raise ConfigError(
                f"pass@{scoring.k} needs at least {scoring.k} epochs, the run has "
                f"{self.options.epochs}",
                fix=f"run with epochs >= {scoring.k} (--epochs {scoring.k}) or lower k.",
            )
        self.runner.executor.check(suite, self.runner.registries)
        options = self.options
        if options.margin is not None and not options.until_decided:
            raise ConfigError(
                "margin is the equivalence margin of until_decided, which is off",
                fix="add --until-decided (until_decided: true), or drop --margin.",
            )
        if options.until_decided:
            if len(suite.conditions) < 2:
                raise ConfigError(
                    "until_decided stops a run once its comparisons are decided, and this "
                    "run has one condition",
                    fix="add a second condition to compare, or drop --until-decided.",
                )
            if options.cluster_by is not None:
                raise ConfigError(
                    "until_decided counts tasks as independent units, and cluster_by says "
                    "they are not",
                    fix="drop --cluster-by or --until-decided.",
                )
            if options.margin is not None and not options.margin < 1:
                raise ConfigError(
                    f"margin={options.margin!r} must be below 1 (differences lie in [-1, 1])",
                    fix="pass the largest difference you would call none, e.g. --margin 0.05.",
                )

    def _make_info(self) -> RunInfo:
        bench = self.suite.benchmark
        det = self.options.deterministic
        conditions = tuple(
            ConditionInfo(
                id=c.id,
                label=c.label,
                provider=c.provider.type
                if isinstance(c.provider, ProviderSpec)
                else type(c.provider).__name__,
                bundle=str(c.bundle) if c.bundle is not None else None,
            )
            for c in self.suite.conditions
        )
        total = bench.task_count
        return RunInfo(
            run_id=self.run_id,
            benchmark_id=bench.id,
            benchmark_name=bench.name,
            benchmark_version=bench.version,
            source_path=bench.source.path,
            source_format=bench.source.format,
            conditions=conditions,
            options=self.options,
            scoring_method=bench.scoring.method,
            scoring_k=bench.scoring.k,
            created_at=FROZEN_TIMESTAMP if det else _now_iso(),
            versions={} if det else {"benchkit": __version__},
            git_commit=None if det else _git_commit(self.base_dir),
            total_cells=None
            if total is None
            else total * len(self.suite.conditions) * self.options.epochs,
            reproduces=bench.reproduces,
        )

    # -- set-up -----------------------------------------------------------------------

    def _build_providers(self) -> None:
        reg = self.runner.registries.providers
        for cond in self.suite.conditions:
            if isinstance(cond.provider, ProviderSpec):
                built = reg.build(
                    cond.provider.type,
                    cond.provider.options,
                    base_dir=self.base_dir,
                    response_cache=self.runner.response_cache,
                    registries=self.runner.registries,
                )
                self._owned.append(built)
                self._providers.append(built)
            else:
                self._providers.append(cond.provider)
            provider = self._providers[-1]
            invoke = getattr(provider, "invoke", None)
            if not callable(invoke):
                raise ConfigError(
                    f"condition {cond.id!r}: {type(provider).__name__} has no invoke() method",
                    fix="a provider needs `async def invoke(self, request)` (a plain def runs "
                    "in a worker thread); see docs/plugins.md.",
                )
            if not inspect.iscoroutinefunction(invoke) and getattr(provider, "thread", True):
                self._blocking.add(id(provider))
            self._limiters.append(_limiter(cond))

    def _build_plugins(self) -> None:
        """Build every evaluator and verifier up front when the tasks are in memory, so a
        bad spec or a missing judge key stops the run before any cell runs."""
        for spec in self._default_evaluators:
            self._evaluator(spec)
        for vspec in self._default_verifiers:
            self._verifier(vspec)
        tasks = self.suite.benchmark.tasks
        if isinstance(tasks, tuple):
            for task in tasks:
                if self.options.cluster_by is not None:  # a task without the field fails now
                    task_cluster(task, self.options.cluster_by)
                for spec in task.evaluators:
                    self._evaluator(spec)
                for vspec in task.verifiers:
                    self._verifier(vspec)

    async def _close_providers(self) -> None:
        with anyio.CancelScope(shield=True):
            for prov in self._owned:
                aclose = getattr(prov, "aclose", None)
                if aclose is not None:
                    await aclose()
            for ev in (*self._evaluators.values(), *self._verifiers.values()):
                aclose = getattr(ev, "aclose", None)
                if aclose is not None:
                    await aclose()

    def _evaluator(self, spec: EvaluatorSpec) -> Evaluator:
        if not spec.options and spec.name is None:  # the common case, without the key
            found = self._evaluators.get(spec.type)
            if found is not None:
                return found
        built: Evaluator = self._build(self._evaluators, self.runner.registries.evaluators, spec)
        return built

    def _verifier(self, spec: VerifierSpec) -> Verifier:
        built: Verifier = self._build(self._verifiers, self.runner.registries.verifiers, spec)
        return built

    def _build(
        self, cache: dict[str, Any], registry: Registry[Any], spec: EvaluatorSpec | VerifierSpec
    ) -> Any:
        """The plug-in for ``spec``, built once per distinct spec in this run."""
        key = _spec_key(spec)
        found = cache.get(key)
        if found is None:
            found = cache[key] = registry.build(
                spec.type,
                spec.options,
                base_dir=self.base_dir,
                response_cache=self.runner.response_cache,
                registries=self.runner.registries,
            )
            method = getattr(found, "evaluate" if registry.kind == "evaluator" else "verify", None)
            if (
                method is not None
                and not inspect.iscoroutinefunction(method)
                and getattr(found, "thread", True)
            ):
                self._blocking.add(id(found))
        return found

    def _iter_cells(self) -> Iterator[CellItem]:
        if self.options.until_decided:
            yield from self._iter_until_decided()
            return
        conditions = list(enumerate(self.suite.conditions))
        epochs = range(self.options.epochs)
        done = self._done
        hooks = self._task_hooks
        for index, task in enumerate(self.suite.benchmark.iter_tasks()):
            for hook in hooks:
                hook(index, task)
            for cond_index, cond in conditions:
                for epoch in epochs:
                    if not done or (task.id, cond.id, epoch) not in done:
                        self._taken += 1
                        yield index, task, cond_index, cond, epoch

    def _iter_until_decided(self) -> Iterator[CellItem]:
        """The cells task by task in the seeded random order of :func:`sequential.schedule`,
        until the stopping policy has decided every comparison (see :mod:`benchkit.sequential`)."""
        tasks = list(self.suite.benchmark.iter_tasks())
        for hook in self._task_hooks:  # all of them now: they are read in a random order
            for index, task in enumerate(tasks):
                hook(index, task)
        order = schedule(len(tasks), self.options.seed)
        bench = self.suite.benchmark
        options = self.options

        def reduce(cells: Sequence[CellResult]) -> float | None:
            return task_value(cells, bench.scoring.method, bench.scoring.k, options.errors_as)

        policy = StoppingPolicy(
            [c.id for c in self.suite.conditions],
            options.epochs,
            order,
            reduce,
            margin=options.margin,
        )
        self._policy = policy
        for cell in self.cells:  # a resumed run's finished cells count first
            policy.observe(cell)
        conditions = list(enumerate(self.suite.conditions))
        epochs = range(options.epochs)
        done = self._done
        for index in order:
            task = tasks[index]
            for cond_index, cond in conditions:
                for epoch in epochs:
                    if policy.decided:
                        return
                    if not done or (task.id, cond.id, epoch) not in done:
                        self._taken += 1
                        yield index, task, cond_index, cond, epoch

    # -- control ----------------------------------------------------------------------

    def cancel(self) -> None:
        self.cancelled = True
        if self._scope is not None:
            self._scope.cancel()

    def cancel_threadsafe(self) -> None:
        self.cancelled = True  # seen by a run that has not entered its cancel scope yet
        call_soon = self._call_soon
        if call_soon is not None:
            call_soon(self.cancel)

    # -- execution ----------------------------------------------------------------------

    async def execute(self, send: MemoryObjectSendStream[CellResult] | None) -> RunResult:
        self._call_soon = _threads.threadsafe_caller()
        self._build_plugins()
        if self.runner.executor.in_process:
            self._build_providers()
        else:  # the executor builds the providers where the cells run
            self._limiters = [_limiter(cond) for cond in self.suite.conditions]
        self._record_versions()
        # A provider that is an async context manager (one keeping a session, like MCP's)
        # is entered for the whole run, in this task, and exited after the sinks close.
        async with AsyncExitStack() as entered:
            await self._enter_providers(entered)
            return await self._execute(send)

    def _record_versions(self) -> None:
        """Add what the plug-ins say answered (``versions``: the local model's file hash and
        llama.cpp's version, ...) to the run's versions, on the plug-in or its ``client``."""
        if self.options.deterministic:
            return
        found: dict[str, str] = {}
        for plugin in (*self._providers, *self._evaluators.values()):
            for obj in (plugin, getattr(plugin, "client", None)):
                versions = getattr(obj, "versions", None)
                if isinstance(versions, Mapping):
                    found.update({str(k): str(v) for k, v in versions.items()})
        if found:
            self.info = attrs.evolve(self.info, versions={**found, **self.info.versions})

    async def _enter_providers(self, entered: AsyncExitStack) -> None:
        seen: set[int] = set()
        for prov in self._providers:
            if id(prov) not in seen and _is_async_context(prov):
                seen.add(id(prov))
                await entered.enter_async_context(prov)

    async def _execute(self, send: MemoryObjectSendStream[CellResult] | None) -> RunResult:
        self.runner._active.add(self)
        if self.runner._cancel_pending:  # cancelled from another thread before it started
            self.cancelled = True
        self._started = time.perf_counter()
        sinks = self.runner.sinks
        self._task_hooks = tuple(
            hook for sink in sinks if callable(hook := getattr(sink, "see_task", None))
        )
        self._iterator = self._iter_cells()
        self._send = send
        completed = False
        try:
            for sink in sinks:
                await sink.open(self.info)
            # Sync plug-ins run in worker threads, no more at once than the run's workers.
            limiter = anyio.CapacityLimiter(self.options.concurrency)
            with anyio.CancelScope() as scope, _threads.run_limiter(limiter):
                self._scope = scope
                if self.cancelled:
                    scope.cancel()
                try:
                    await self.runner.executor.execute(self)
                except Exception as exc:
                    self.fail(exc)
            if self._fatal is not None:
                raise self._fatal
            completed = True
        finally:
            self._scope = None
            self._call_soon = None
            self.runner._active.discard(self)
            if not self.runner._active:
                self.runner._cancel_pending = False
            result = self._finish(interrupted=not completed or self.cancelled)
            self.runner.last_result = result
            with anyio.CancelScope(shield=True):
                await self._close_providers()
                for sink in sinks:
                    await sink.close(result)
        return result

    def _finish(self, *, interrupted: bool) -> RunResult:
        # Task position, then condition, then epoch: three stable sorts whose keys are ints
        # the cells already hold, not a key tuple per cell (≈ 20 MB at 200,000 cells).
        cond_order = {c.id: i for i, c in enumerate(self.suite.conditions)}
        self.cells.sort(key=operator.attrgetter("epoch"))
        if len(cond_order) > 1:
            self.cells.sort(key=lambda c: cond_order[c.condition_id])
        self.cells.sort(key=operator.attrgetter("index"))
        not_run = 0
        if interrupted and self._iterator is not None:
            total = self.info.total_cells
            if total is not None:
                not_run = total - len(self.cells)
            else:  # taken but unfinished, plus never taken (counting those takes them too)
                taken = self._taken
                not_run = sum(1 for _ in self._iterator) + taken - self._new_cells
        cells = tuple(self.cells)
        aggregates, groups, comparisons = aggregate_run(
            cells,
            [c.id for c in self.suite.conditions],
            method=self.suite.benchmark.scoring.method,
            k=self.suite.benchmark.scoring.k,
            errors_as=self.options.errors_as,
            seed=self.options.seed,
        )
        return RunResult(
            info=self.info,
            cells=cells,
            aggregates=aggregates,
            groups=groups,
            comparisons=comparisons,
            interrupted=interrupted,
            not_run=not_run,
            early_stop=None if self._policy is None else self._policy.result(),
        )

    # -- what an executor sees (benchkit.executors.CellWork) -------------------------------

    @property
    def todo(self) -> Iterator[CellItem]:
        assert self._iterator is not None, "the run has not started"
        return self._iterator

    def limiter(self, cond_index: int) -> anyio.CapacityLimiter | None:
        return self._limiters[cond_index]

    def fail(self, exc: Exception) -> None:
        # Keep the first error that stops the run; execute() re-raises it unwrapped.
        if self._fatal is None:
            self._fatal = exc
        self.cancel()

    async def run_cell(self, item: CellItem) -> CellResult:
        index, task, cond_index, cond, epoch = item
        limiter = self._limiters[cond_index]
        if limiter is None:
            return await self._run_cell(index, task, cond_index, cond, epoch)
        async with limiter:
            return await self._run_cell(index, task, cond_index, cond, epoch)

    async def record(self, cell: CellResult) -> bool:
        self.cells.append(cell)
        self._new_cells += 1
        policy = self._policy
        if policy is not None:
            policy.observe(cell)
        if cell.status == "error" or cell.status == "timeout":
            self.errors += 1
        for sink in self.runner.sinks:
            await sink.write(cell)
        send = self._send
        if send is not None:
            try:
                await send.send(cell)
            except anyio.BrokenResourceError:  # the stream's reader has gone away
                self.cancel()
                return False
        progress = self.runner.progress
        if progress is not None:
            progress(
                Progress(
                    len(self.cells),
                    self.info.total_cells,
                    self.errors,
                    time.perf_counter() - self._started,
                    cell,
                )
            )
        return not self.cancelled

    def remote(self) -> _RemoteCells:
        bench = attrs.evolve(self.suite.benchmark, tasks=())
        suite = attrs.evolve(self.suite, benchmark=bench)
        return _RemoteCells(suite, self.run_id, self.runner.registries, self.runner.keep_raw)

    def lost_cell(self, item: CellItem, message: str, attempts: int) -> CellResult:
        index, task, _, cond, epoch = item
        return CellResult(
            task_id=task.id,
            condition_id=cond.id,
            epoch=epoch,
            status="error",
            index=index,
            error_category="worker_lost",
            error=message,
            attempts=attempts,
            started_at=0.0 if self.options.deterministic else time.time(),
            weight=task.weight,
            tags=task.tags,
            domain=task.domain,
            difficulty=task.difficulty,
        )

    async def _run_cell(
        self, index: int, task: Task, cond_index: int, cond: Condition, epoch: int
    ) -> CellResult:
        # Every cell records its transcript (benchkit.transcript.record) into a recorder
        # of its own: a context variable, so concurrent cells never mix their events.
        recorder = Recorder(self.options.deterministic)
        token = _TRANSCRIPT.set(recorder)
        try:
            return await self._run_recorded(index, task, cond_index, cond, epoch, recorder)
        finally:
            _TRANSCRIPT.reset(token)

    async def _run_recorded(
        self,
        index: int,
        task: Task,
        cond_index: int,
        cond: Condition,
        epoch: int,
        recorder: Recorder,
    ) -> CellResult:
        options = self.options
        deterministic = options.deterministic
        cluster_by = options.cluster_by
        cluster = None if cluster_by is None else task_cluster(task, cluster_by)
        provider = self._providers[cond_index]
        timeout = task.timeout if task.timeout is not None else self.suite.benchmark.timeout
        if timeout is None:
            timeout = options.timeout
        seed = _cell_seed(options.seed, task.id, cond.id, epoch)
        started_at = 0.0 if deterministic else time.time()
        t0 = time.perf_counter()
        attempt = 1
        rng: random.Random | None = None
        while True:
            outcome = await self._attempt(task, cond, provider, epoch, attempt, seed, timeout)
            if not self._should_retry(outcome, attempt):
                break
            if rng is None:
                rng = random.Random(seed)
            delay = min(options.backoff_max, options.backoff_base * 2 ** (attempt - 1))
            delay *= 0.5 + rng.random()
            _log.info(
                "%s/%s epoch %d attempt %d: %s (%s); retrying in %.2fs",
                cond.id,
                task.id,
                epoch,
                attempt,
                outcome.category,
                outcome.error,
                delay,
            )
            recorder.add(
                "retry",
                f"attempt {attempt} ended {outcome.category}; retrying",
                {"error": outcome.error, "delay": round(delay, 3)},
            )
            if delay > 0:
                await anyio.sleep(delay)
            attempt += 1
        duration = 0.0 if deterministic else (time.perf_counter() - t0) * 1000.0
        status, response, scores = outcome.status, outcome.response, outcome.scores
        if response is not None:
            raw = response.raw if self.runner.keep_raw else None
            if deterministic and response.latency_ms:
                response = _replace_response(response, 0.0, raw)
            elif response.raw is not raw:
                response = _replace_response(response, response.latency_ms, raw)
            response = _bounded_response(response)
        score: float | None = None
        if len(scores) == 1:
            score = scores[0].value
        elif scores:
            values = [s.value for s in scores if s.value is not None]
            if values:
                score = sum(values) / len(values)
        elif status == "pass" or status == "fail":
            score = 1.0 if status == "pass" else 0.0
        return CellResult(
            task_id=task.id,
            condition_id=cond.id,
            epoch=epoch,
            status=status,
            index=index,
            error_category=outcome.category,
            error=_excerpt(outcome.error),
            score=score,
            scores=_bounded_scores(scores),
            verdicts=_bounded_verdicts(outcome.verdicts),
            response=response,
            attempts=attempt,
            started_at=started_at,
            duration_ms=duration,
            weight=task.weight,
            tags=task.tags,
            domain=task.domain,
            difficulty=task.difficulty,
            cluster=cluster,
            transcript=recorder.transcript(),
        )

    def _should_retry(self, outcome: _Outcome, attempt: int) -> bool:
        if attempt > self.options.retries:
            return False
        if outcome.status == "pass" or not outcome.retryable:
            return False
        retry_on = self.options.retry_on
        return outcome.category in retry_on or "any" in retry_on

    async def _attempt(
        self,
        task: Task,
        cond: Condition,
        provider: Provider,
        epoch: int,
        attempt: int,
        seed: int,
        timeout: float | None,
    ) -> _Outcome:
        deterministic = self.options.deterministic
        request = Request(task, cond, epoch, attempt, seed, timeout, self.run_id, deterministic)
        t0 = time.perf_counter()
        try:
            if timeout is None:
                response = await self._invoke(provider, request)
            else:
                with anyio.fail_after(timeout):
                    response = await self._invoke(provider, request)
        except TimeoutError:
            record("error", f"attempt {attempt}: timed out after {timeout:g}s")
            return _Outcome("timeout", "timeout", f"timed out after {timeout:g}s")
        except InvocationError as exc:
            status: CellStatus = "timeout" if exc.category == "timeout" else "error"
            record("error", f"attempt {attempt}: {exc.category}", exc.message)
            return _Outcome(status, exc.category, exc.message, retryable=exc.retryable)
        except Exception as exc:
            record("error", f"attempt {attempt}: {type(exc).__name__}", str(exc))
            return _Outcome("error", "execution_error", f"{type(exc).__name__}: {exc}")
        problem = _bad_response(response)
        if problem is not None:  # say so on the cell, instead of crashing the store later
            return _Outcome("error", "execution_error", problem, retryable=False)
        if response.latency_ms is None:
            response = _replace_response(
                response, (time.perf_counter() - t0) * 1000.0, response.raw
            )

        verdicts: tuple[Verdict, ...] = ()
        verifier_specs = task.verifiers or self._default_verifiers
        if verifier_specs:
            context = VerifyContext(
                condition=cond,
                epoch=epoch,
                attempt=attempt,
                seed=self.options.seed,
                deterministic=deterministic,
                base_dir=self.base_dir,
                timeout=timeout,
            )
            verdicts = tuple(
                [await self._verify(s, task, response, context, timeout) for s in verifier_specs]
            )

        scores: tuple[Score, ...] = ()
        evaluator_specs = task.evaluators or self._default_evaluators
        if self.options.judge_repeats > 1:
            scores = tuple(
                [await self._evaluate_repeated(s, task, response, timeout) for s in evaluator_specs]
            )
        elif len(evaluator_specs) == 1:  # the usual case, without a comprehension's frame
            scores = (await self._evaluate(evaluator_specs[0], task, response, timeout),)
        elif evaluator_specs:
            scores = tuple(
                [await self._evaluate(s, task, response, timeout) for s in evaluator_specs]
            )

        for verdict in verdicts:
            if not verdict.passed:
                cat = verdict.category if verdict.category != "none" else "verification_failed"
                vstatus: CellStatus = (
                    "timeout"
                    if cat == "timeout"
                    else "error"
                    if cat == "execution_error"
                    else "fail"
                )
                return _Outcome(vstatus, cat, verdict.message, response, scores, verdicts)
        failed: Score | None = None
        for score in scores:
            if score.error is not None:
                return _Outcome(
                    "error", "evaluation_error", score.error, response, scores, verdicts
                )
            if failed is None and not score.passed:
                failed = score
        if failed is not None:
            return _Outcome("fail", "assertion_failed", failed.reason, response, scores, verdicts)
        return _Outcome("pass", "none", None, response, scores, verdicts)

    async def _invoke(self, provider: Provider, request: Request) -> Response:
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug(
                "calling %s for %s/%s epoch %d attempt %d",
                type(provider).__name__,
                request.condition.id,
                request.task.id,
                request.epoch,
                request.attempt,
            )
        if id(provider) in self._blocking:  # a plain `def invoke`: off the event loop
            invoke = cast(Callable[[Request], Any], provider.invoke)
            response = await _threads.run_sync(invoke, request)
            if inspect.isawaitable(response):  # an async callable that did not look async
                response = await response
            return cast(Response, response)
        return await provider.invoke(request)

    async def _verify(
        self,
        spec: VerifierSpec,
        task: Task,
        response: Response,
        context: VerifyContext,
        timeout: float | None,
    ) -> Verdict:
        verifier = self._verifier(spec)  # a bad spec stops the run: it is the user's input
        deadline = _grader_deadline(timeout)
        try:
            if id(verifier) in self._blocking:  # a sync method: in a worker thread
                verify = cast(Callable[..., Verdict], verifier.verify)
                pending = _threads.run_sync(verify, task, response, context)
            else:
                pending = verifier.verify(task, response, context)
            if not inspect.isawaitable(pending):  # a sync method with thread = False
                verdict = pending
            elif deadline is None:  # no cancel scope to enter: ≈ 10 µs a cell saved
                verdict = await pending
            else:
                with anyio.fail_after(deadline):
                    verdict = await pending
        except TimeoutError:
            return Verdict(
                name=spec.label,
                passed=False,
                category="timeout",
                message=f"verifier {spec.label!r} timed out after {deadline:g}s",
            )
        except Exception as exc:
            return Verdict(
                name=spec.label,
                passed=False,
                category="execution_error",
                message=f"verifier {spec.label!r} raised {type(exc).__name__}: {exc}",
            )
        if not isinstance(verdict, Verdict):  # a broken plug-in: stop the run, name it
            raise _wrong_return("verifier", spec.type, "verify", "Verdict", verdict)
        return verdict

    async def _evaluate_repeated(
        self, spec: EvaluatorSpec, task: Task, response: Response, timeout: float | None
    ) -> Score:
        """Ask the evaluator ``judge_repeats`` times: the majority verdict (a tie fails),
        the mean score, each repeat in ``details["repeats"]`` and the usage summed. A
        repeat that fails makes the score a judge error, as one failed request would."""
        repeats = self.options.judge_repeats
        found: list[Score] = []
        for repeat in range(repeats):
            token = JUDGE_REPEAT.set(repeat)
            try:
                score = await self._evaluate(spec, task, response, timeout)
            finally:
                JUDGE_REPEAT.reset(token)
            if score.error is not None or score.value is None:
                return attrs.evolve(
                    score, error=f"repeat {repeat + 1} of {repeats}: {score.error or 'no value'}"
                )
            found.append(score)
        passes = sum(1 for s in found if s.passed)
        values = [s.value for s in found if s.value is not None]
        details = dict(found[0].details)
        details["repeats"] = [{"value": s.value, "passed": s.passed} for s in found]
        spent = [s.details.get("usage") for s in found if s.details]
        usage = [u for u in spent if isinstance(u, Mapping)]
        if usage:
            details["usage"] = {
                key: sum(float(u.get(key) or 0) for u in usage)
                if key == "cost_usd"
                else sum(int(u.get(key) or 0) for u in usage)
                for key in {k for u in usage for k in u}
            }
        first = found[0]
        return Score(
            name=first.name,
            value=sum(values) / len(values),
            passed=2 * passes > repeats,
            reason=f"{first.reason or first.name} — {passes} of {repeats} repeats passed",
            details=details,
        )

    async def _evaluate(
        self, spec: EvaluatorSpec, task: Task, response: Response, timeout: float | None
    ) -> Score:
        evaluator = self._evaluator(spec)  # a bad spec stops the run: it is the user's input
        deadline = _grader_deadline(timeout)
        try:
            if id(evaluator) in self._blocking:  # a sync method: in a worker thread
                evaluate = cast(Callable[..., Score], evaluator.evaluate)
                pending = _threads.run_sync(evaluate, task, response)
            else:
                pending = evaluator.evaluate(task, response)
            if not inspect.isawaitable(pending):  # a sync method with thread = False
                score = pending
            elif deadline is None:  # as the provider's call: no scope without a deadline
                score = await pending
            else:
                with anyio.fail_after(deadline):
                    score = await pending
        except TimeoutError:
            return Score(
                name=spec.label,
                value=None,
                passed=False,
                error=f"evaluator {spec.label!r} timed out after {deadline:g}s",
            )
        except Exception as exc:
            return Score(
                name=spec.label,
                value=None,
                passed=False,
                error=f"evaluator {spec.label!r} raised {type(exc).__name__}: {exc}",
            )
        if not isinstance(score, Score):  # a broken plug-in: stop the run, name it
            raise _wrong_return("evaluator", spec.type, "evaluate", "Score", score)
        if spec.name is not None and score.name != spec.name:
            score = attrs.evolve(score, name=spec.name)
        return score


_SCALARS = (str, int, float, bool, type(None))


def _json_value(value: Any, depth: int = 0) -> bool:
    if isinstance(value, _SCALARS):
        return True
    if depth > 100:
        return False
    if isinstance(value, (list, tuple)):
        return all(_json_value(v, depth + 1) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _json_value(v, depth + 1) for k, v in value.items())
    return False


def _bad_response(response: object) -> str | None:
    """Why a provider's return value cannot be recorded, or None when it can."""
    if not isinstance(response, Response):
        return (
            f"the provider returned {type(response).__name__}, not a benchkit.Response; "
            "return Response(output=...)"
        )
    output = response.output
    if type(output) is str or _json_value(output):
        return None
    return (
        f"the provider's output is a {type(output).__name__} ({output!r:.60}), which is not "
        "a string or a JSON value; return str(...) or a dict/list of JSON values"
    )


def _wrong_return(kind: str, name: str, method: str, expected: str, got: object) -> ConfigError:
    return ConfigError(
        f"{kind} {name!r}: {method}() returned {type(got).__name__} {got!r:.80}, "
        f"not a benchkit.{expected}",
        fix=f"make {method}() return benchkit.{expected}(...); see docs/plugins.md.",
    )


@attrs.frozen
class _RemoteCells:
    """A run's cells as another process (a Ray worker) receives them; see
    :class:`benchkit.executors.RemoteCells`."""

    suite: Suite
    run_id: str
    registries: Registries
    keep_raw: bool

    def with_suite(self, suite: Suite) -> _RemoteCells:
        return attrs.evolve(self, suite=suite)

    @asynccontextmanager
    async def open(self) -> AsyncIterator[_CellsHere]:
        runner = Runner(registries=self.registries, keep_raw=self.keep_raw)
        state = _Run(runner, self.suite, self.run_id, ())
        state._build_plugins()
        state._build_providers()
        try:
            async with AsyncExitStack() as entered:
                await state._enter_providers(entered)
                yield _CellsHere(state)
        finally:
            await state._close_providers()


class _CellsHere:
    """Cells of a run opened in this process: the Runner's own cell logic, nothing else."""

    def __init__(self, state: _Run) -> None:
        self._state = state

    async def run(self, index: int, task: Task, cond_index: int, epoch: int) -> CellResult:
        state = self._state
        cond = state.suite.conditions[cond_index]
        return await state._run_cell(index, task, cond_index, cond, epoch)


def _limiter(cond: Condition) -> anyio.CapacityLimiter | None:
    """The cap on a condition's cells in flight at once (None: no cap)."""
    return anyio.CapacityLimiter(cond.concurrency) if cond.concurrency else None


#: Added to the cell's timeout for each verifier and evaluator: a grader that honours the
#: timeout itself (a command verifier) reports its own, more precise, timeout first.
GRADER_GRACE = 1.0


def _grader_deadline(timeout: float | None) -> float | None:
    """Each grader's own deadline: the cell's timeout plus :data:`GRADER_GRACE`."""
    return None if timeout is None else timeout + GRADER_GRACE


def _excerpt(message: str | None, limit: int = 2000) -> str | None:
    """A cell's error message, cut to ``limit`` characters (it may quote a huge output)."""
    if message is None or len(message) <= limit:
        return message
    return f"{message[:limit]}... ({len(message)} characters)"


#: The longest a string in a recorded cell's output or raw reply may be, in characters;
#: a longer one is cut and ends with ``"…[truncated N characters]"``.
MAX_OUTPUT_CHARS = 1_000_000

#: The same for each reason, message, excerpt and error of a score or verdict, and each
#: string in their ``details`` and in the response's ``metadata`` (a judge's reply, a
#: tool's text): a 10 MB unparseable judge reply is not copied whole into every cell.
MAX_TEXT_CHARS = 20_000


def _bounded_response(response: Response) -> Response:
    """``response`` with its output, raw reply and metadata cut to size (itself when none
    needed cutting)."""
    output = response.output
    if type(output) is not str or len(output) > MAX_OUTPUT_CHARS:
        output = clip_json(output, MAX_OUTPUT_CHARS)
    raw = response.raw
    if raw is not None:
        raw = clip_json(raw, MAX_OUTPUT_CHARS)
    metadata = response.metadata
    if metadata:
        metadata = clip_json(metadata, MAX_TEXT_CHARS)
    if output is response.output and raw is response.raw and metadata is response.metadata:
        return response
    return attrs.evolve(response, output=output, raw=raw, metadata=metadata)


def _text(value: str | None) -> str | None:
    return value if value is None or len(value) <= MAX_TEXT_CHARS else clip(value, MAX_TEXT_CHARS)


def _bounded_scores(scores: tuple[Score, ...]) -> tuple[Score, ...]:
    """Each score's reason, error and details cut to :data:`MAX_TEXT_CHARS`."""
    bounded = scores
    for i, s in enumerate(scores):
        if s.reason is None and s.error is None and not s.details:  # `exact` and the like
            continue
        reason, error = _text(s.reason), _text(s.error)
        details = clip_json(s.details, MAX_TEXT_CHARS) if s.details else s.details
        if reason is not s.reason or error is not s.error or details is not s.details:
            new = attrs.evolve(s, reason=reason, error=error, details=details)
            bounded = (*bounded[:i], new, *bounded[i + 1 :])
    return bounded


def _bounded_verdicts(verdicts: tuple[Verdict, ...]) -> tuple[Verdict, ...]:
    """Each verdict's message, excerpts and details cut to :data:`MAX_TEXT_CHARS`."""
    bounded = verdicts
    for i, v in enumerate(verdicts):
        message, out, err = _text(v.message), _text(v.stdout_excerpt), _text(v.stderr_excerpt)
        details = clip_json(v.details, MAX_TEXT_CHARS) if v.details else v.details
        if (
            message is v.message
            and out is v.stdout_excerpt
            and err is v.stderr_excerpt
            and details is v.details
        ):
            continue
        new = attrs.evolve(
            v, message=message, stdout_excerpt=out, stderr_excerpt=err, details=details
        )
        bounded = (*bounded[:i], new, *bounded[i + 1 :])
    return bounded


def _is_async_context(obj: object) -> TypeGuard[AbstractAsyncContextManager[Any]]:
    return callable(getattr(obj, "__aenter__", None)) and callable(getattr(obj, "__aexit__", None))


def _replace_response(response: Response, latency_ms: float | None, raw: Any) -> Response:
    """``attrs.evolve(response, latency_ms=..., raw=...)`` at a third of the cost (hot path)."""
    return Response(
        response.output,
        latency_ms,
        response.usage,
        response.tool_calls,
        response.retrieved,
        response.artifacts,
        raw,
        response.metadata,
    )


def check_suite(suite: Suite, *, registries: Registries | None = None) -> None:
    """Build every provider, evaluator and verifier of ``suite`` as a run would, then close
    them: raises whatever a run would raise before its first cell (``validate`` uses it)."""
    state = _Run(Runner(registries=registries), suite, None, ())
    try:
        state._build_plugins()
        state._build_providers()
    finally:
        anyio.run(state._close_providers)


def sync_run(
    suite: Suite,
    *,
    runner: Runner | None = None,
    backend: str = "asyncio",
    run_id: str | None = None,
    done: Iterable[CellResult] = (),
) -> RunResult:
    """Run ``suite`` from synchronous code; works inside a running event loop (Jupyter).

    With no loop running in this thread it calls :func:`anyio.run`; with one running (a
    notebook) it runs the suite on a fresh loop in a worker thread and waits. Ctrl-C stops
    the run gracefully and returns the partial result (``interrupted=True``). ``done`` as
    for :meth:`Runner.run` (cells of an earlier run that a resume keeps).
    """
    runner = runner or Runner()
    in_loop = _loop_running()

    async def main() -> RunResult:
        return await runner.run(suite, run_id=run_id, done=done)

    if not in_loop:
        try:
            return anyio.run(main, backend=backend)
        except (KeyboardInterrupt, asyncio.CancelledError):  # 3.10: the main task's cancel
            if runner.last_result is None:
                raise
            return attrs.evolve(runner.last_result, interrupted=True)

    import threading

    box: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            box["result"] = anyio.run(main, backend=backend)
        except BaseException as exc:  # re-raised in the calling thread
            box["error"] = exc
        finally:
            finished.set()

    thread = threading.Thread(target=target, name=f"benchkit-run-{id(suite):x}", daemon=True)
    thread.start()
    # Wait on an Event, never Thread.join: on Python <= 3.12 a KeyboardInterrupt inside
    # join() can mark the still-running thread as stopped (CPython gh-90882), so a later
    # join() returned at once, before the run had stored its result (KeyError: 'result').
    interrupted = False
    try:
        while not finished.is_set():
            try:
                finished.wait(0.05)
            except KeyboardInterrupt:
                if interrupted:  # a second Ctrl-C: stop waiting for the graceful stop
                    raise
                interrupted = True
                runner.cancel_threadsafe()
    finally:
        if finished.is_set():
            runner._cancel_pending = False  # a cancel that came after the run had finished
    if "error" in box:
        raise box["error"]
    result: RunResult = box["result"]
    return result


def _loop_running() -> bool:
    """True when this thread is inside a running asyncio or trio event loop."""
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        pass
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
            return True
        except RuntimeError:
            pass
    return False
