"""Per-run state: one run of a suite from its first cell to its result.

A :class:`RunState` is made for each run (``Runner.run``, ``Runner.stream``): it checks
the suite, decides which cells run and in what order (``RunState._iter_cells``, with
the sequential procedure of ``until_decided`` in ``RunState._iter_until_decided``),
hands the cells to the executor, records each finished one (sinks, stream, progress) and
builds the :class:`~benchkit.results.RunResult`. What one cell is lives in
:mod:`benchkit.runner._cells`; the state only counts and collects. Nothing here is shared
between runs, so any number of runs may share an event loop.
"""

from __future__ import annotations

import functools
import hashlib
import operator
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import anyio
import attrs
from anyio.streams.memory import MemoryObjectSendStream

from benchkit import _threads
from benchkit._aggregate import aggregate_run, task_value
from benchkit._public import public
from benchkit._secrets import known as known_secrets
from benchkit._version import __version__
from benchkit.errors import ConfigError
from benchkit.executors import CellItem, Executor
from benchkit.judges import judge_warnings
from benchkit.model import Condition, ProviderSpec, Suite, Task
from benchkit.protocols import ResponseCache, ResultSink
from benchkit.registry import Registries
from benchkit.results import CellResult, ConditionInfo, RunInfo, RunResult
from benchkit.runner._budget import Meter
from benchkit.runner._cells import Cells, RemoteRun
from benchkit.sequential import StoppingPolicy, schedule

__all__ = [
    "FROZEN_TIMESTAMP",
    "ActiveRuns",
    "Progress",
    "ProgressCallback",
    "RunSettings",
    "RunState",
    "check_suite_options",
    "new_run_id",
]

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


# Its annotations are resolved here, before it reports the module users import it from.
attrs.resolve_types(Progress)
public("benchkit.runner")(Progress)

ProgressCallback = Callable[[Progress], None]


class RunSettings(Protocol):
    """What a run reads from the :class:`~benchkit.Runner` that starts it."""

    @property
    def sinks(self) -> tuple[ResultSink, ...]: ...

    @property
    def progress(self) -> ProgressCallback | None: ...

    @property
    def registries(self) -> Registries: ...

    @property
    def keep_raw(self) -> bool: ...

    @property
    def response_cache(self) -> ResponseCache | None: ...

    @property
    def executor(self) -> Executor: ...


class ActiveRuns:
    """The runs of one Runner in progress, so that a cancel reaches every one of them.

    A cancel from another thread that comes before any run has started is remembered
    (``cancel_pending``) and stops the next run as soon as it starts, so a signal can
    never slip between "not started yet" and "running" unseen.
    """

    def __init__(self) -> None:
        self.runs: set[RunState] = set()
        self.cancel_pending = False
        self.pending_reason = "cancelled"
        #: The result of the run that finished (or stopped) last.
        self.last_result: RunResult | None = None

    def cancel(self, reason: str = "cancelled") -> None:
        for state in list(self.runs):
            state.cancel(reason)

    def cancel_threadsafe(self, reason: str = "cancelled") -> None:
        self.pending_reason = reason
        self.cancel_pending = True
        for state in list(self.runs):
            state.cancel_threadsafe(reason)

    def enter(self, state: RunState) -> None:
        """``state`` starts running (cancelled at once when a cancel is pending)."""
        self.runs.add(state)
        if self.cancel_pending:  # cancelled from another thread before it started
            state.cancelled = True
            state.stopped_by = state.stopped_by or self.pending_reason

    def leave(self, state: RunState) -> None:
        """``state`` has stopped (its result is not made yet)."""
        self.runs.discard(state)
        if not self.runs:
            self.cancel_pending = False


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


def _limiter(cond: Condition) -> anyio.CapacityLimiter | None:
    """The cap on a condition's cells in flight at once (None: no cap)."""
    return anyio.CapacityLimiter(cond.concurrency) if cond.concurrency else None


def check_suite_options(suite: Suite, executor: Executor, registries: Registries) -> None:
    """Raise the :class:`~benchkit.errors.ConfigError` a run of ``suite`` on ``executor``
    raises before it starts: no or duplicate conditions, too few epochs for pass@k, options
    of ``until_decided`` that contradict each other, what the executor refuses."""
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
    if scoring.method == "pass_at_k" and scoring.k > suite.options.epochs:
        raise ConfigError(
            f"pass@{scoring.k} needs at least {scoring.k} epochs, the run has "
            f"{suite.options.epochs}",
            fix=f"run with epochs >= {scoring.k} (--epochs {scoring.k}) or lower k.",
        )
    executor.check(suite, registries)
    options = suite.options
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
                "until_decided counts tasks as independent units, and cluster_by says they are not",
                fix="drop --cluster-by or --until-decided.",
            )
        if options.margin is not None and not options.margin < 1:
            raise ConfigError(
                f"margin={options.margin!r} must be below 1 (differences lie in [-1, 1])",
                fix="pass the largest difference you would call none, e.g. --margin 0.05.",
            )


class RunState:
    """The state of one run: its cells' plug-ins, counters, the cells collected so far.

    It is the :class:`benchkit.executors.CellWork` the executor is handed.
    """

    def __init__(
        self,
        settings: RunSettings,
        runs: ActiveRuns,
        suite: Suite,
        run_id: str | None,
        done: Iterable[CellResult],
    ) -> None:
        self.settings = settings
        self._runs = runs
        self.suite = suite
        self.options = suite.options
        self.base_dir = suite.base_dir
        check_suite_options(suite, settings.executor, settings.registries)
        self.run_id = run_id or new_run_id(suite)
        self.cells: list[CellResult] = list(done)
        self._done = frozenset(cell.key for cell in self.cells)
        self._new_cells = 0
        self.errors = sum(1 for cell in self.cells if cell.errored)
        self.cancelled = False
        #: Why the run stopped early (RunResult.stopped_by): the first reason given.
        self.stopped_by: str | None = None
        self._scope: anyio.CancelScope | None = None
        self._call_soon: Callable[[Callable[[], object]], None] | None = None
        #: The plug-ins and the cell logic, for cells run in this process.
        self.here = Cells(
            suite,
            self.run_id,
            registries=settings.registries,
            keep_raw=settings.keep_raw,
            response_cache=settings.response_cache,
        )
        self._limiters: list[anyio.CapacityLimiter | None] = []
        self._iterator: Iterator[CellItem] | None = None
        self._send: MemoryObjectSendStream[CellResult] | None = None
        self._started = 0.0
        self._taken = 0
        self._fatal: Exception | None = None
        self._policy: StoppingPolicy | None = None  # consulted after each cell (until_decided)
        # The budget (max_cost / max_tokens / max_calls): a resume's kept cells count first,
        # and a budget they already reach stops the run before its first cell.
        self._meter = Meter.create(self.options)
        if self._meter is not None:
            for cell in self.cells:
                self._meter.add(cell)
            self.cancelled = self._meter.stop is not None
            if self.cancelled:
                self.stopped_by = "budget"
        # The sinks' ``see_task`` methods (see ResultSink), called as the run reaches a task.
        self._task_hooks: tuple[Callable[[int, Task], object], ...] = ()
        self._secrets = known_secrets()
        self.info = self._make_info()

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

    # -- which cells run, in what order ------------------------------------------------

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
            horizon=len(tasks),
            seed=options.seed,
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

    def cancel(self, reason: str = "cancelled") -> None:
        self.cancelled = True
        self.stopped_by = self.stopped_by or reason
        if self._scope is not None:
            self._scope.cancel()

    def cancel_threadsafe(self, reason: str = "cancelled") -> None:
        self.cancelled = True  # seen by a run that has not entered its cancel scope yet
        self.stopped_by = self.stopped_by or reason
        call_soon = self._call_soon
        if call_soon is not None:
            call_soon(functools.partial(self.cancel, reason))

    # -- execution ----------------------------------------------------------------------

    async def execute(self, send: MemoryObjectSendStream[CellResult] | None) -> RunResult:
        self._call_soon = _threads.threadsafe_caller()
        here = self.here
        here.build_plugins()
        if self.settings.executor.in_process:
            here.build_providers()
        # else the executor builds the providers where the cells run
        self._limiters = [_limiter(cond) for cond in self.suite.conditions]
        self._record_versions()
        # A provider that is an async context manager (one keeping a session, like MCP's)
        # is entered for the whole run, in this task, and exited after the sinks close.
        async with AsyncExitStack() as entered:
            await here.enter_providers(entered)
            return await self._execute(send)

    def _record_versions(self) -> None:
        """Add what the plug-ins say answered (``versions``: the local model's file hash and
        llama.cpp's version, ...) to the run's versions, on the plug-in or its ``client``."""
        if self.options.deterministic:
            return
        found: dict[str, str] = {}
        for plugin in (*self.here.providers, *self.here.evaluators.values()):
            for obj in (plugin, getattr(plugin, "client", None)):
                versions = getattr(obj, "versions", None)
                if isinstance(versions, Mapping):
                    found.update({str(k): str(v) for k, v in versions.items()})
        if found:
            self.info = attrs.evolve(self.info, versions={**found, **self.info.versions})

    async def _execute(self, send: MemoryObjectSendStream[CellResult] | None) -> RunResult:
        self._runs.enter(self)
        self._started = time.perf_counter()
        sinks = self.settings.sinks
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
                    await self.settings.executor.execute(self)
                except Exception as exc:
                    self.fail(exc)
            if self._fatal is not None:
                raise self._fatal
            completed = True
        finally:
            self._scope = None
            self._call_soon = None
            self._runs.leave(self)
            result = self._finish(interrupted=not completed or self.cancelled)
            self._runs.last_result = result
            with anyio.CancelScope(shield=True):
                await self.here.close()
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
        early_stop = None if self._policy is None else self._policy.result()
        aggregates, groups, comparisons = aggregate_run(
            cells,
            [c.id for c in self.suite.conditions],
            method=self.suite.benchmark.scoring.method,
            k=self.suite.benchmark.scoring.k,
            errors_as=self.options.errors_as,
            seed=self.options.seed,
            early_stop=early_stop,
        )
        return RunResult(
            info=self.info,
            cells=cells,
            aggregates=aggregates,
            groups=groups,
            comparisons=comparisons,
            interrupted=interrupted,
            not_run=not_run,
            early_stop=early_stop,
            warnings=judge_warnings(cells, seed=self.options.seed),
            budget=None if self._meter is None else self._meter.stop,
            stopped_by=self.stopped_by if interrupted else None,
            registries=self.settings.registries,
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
        self.cancel("error")

    async def run_cell(self, item: CellItem) -> CellResult:
        index, task, cond_index, cond, epoch = item
        limiter = self._limiters[cond_index]
        if limiter is None:
            return await self.here.run_cell(index, task, cond_index, cond, epoch)
        async with limiter:
            return await self.here.run_cell(index, task, cond_index, cond, epoch)

    async def record(self, cell: CellResult) -> bool:
        self._secrets = self._secrets.current()  # no secret reaches a sink or the result
        cell = self._secrets.scrub_cell(cell)
        self.cells.append(cell)
        self._new_cells += 1
        policy = self._policy
        if policy is not None:
            policy.observe(cell)
        if cell.status == "error" or cell.status == "timeout":
            self.errors += 1
        for sink in self.settings.sinks:
            await sink.write(cell)
        meter = self._meter
        if meter is not None and meter.add(cell) and not self.cancelled:
            self.cancel("budget")  # the budget is spent: stop as Ctrl-C does
        send = self._send
        if send is not None:
            try:
                await send.send(cell)
            except anyio.BrokenResourceError:  # the stream's reader has gone away
                self.cancel("reader gone")
                return False
        progress = self.settings.progress
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

    def remote(self) -> RemoteRun:
        bench = attrs.evolve(self.suite.benchmark, tasks=())
        suite = attrs.evolve(self.suite, benchmark=bench)
        return RemoteRun(suite, self.run_id, self.settings.registries, self.settings.keep_raw)

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
