"""Run cells on Ray actors; the driver keeps the store, the sinks and the statistics.

What travels to the workers, once per run: the suite as loaded, without its tasks (each cell
carries its own task, by content), its conditions (a :class:`~benchkit.ProviderSpec` is
built on each worker, so subprocess skills, command verifiers and memory stores run where
the cell runs; a provider object travels pickled), the registries and, with
``ship_files``, the suite's directory by content. Then cells go out in batches, one
round trip per worker at a time (:class:`_Feeder`), and results
(:class:`~benchkit.CellResult`) come back, every one finished since the last round trip;
the Runner records each in this process exactly as it records an in-process cell. The run's
``concurrency`` is shared out between the workers (:func:`plan_slots`), so the cluster
never runs more cells at once than the run allows.

Faults: a cell whose worker dies (killed, out of memory, a node lost) runs again, alone, on
another worker, up to ``max_attempts`` times; then it is recorded as an error with category
``worker_lost`` and the run goes on. A cell is recorded only from a result that came back,
so no cell is recorded twice. Ray restarts a dead actor in the background.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import importlib
import io
import itertools
import os
import pickle
import shutil
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import attrs

from benchkit._public import public
from benchkit._threads import run_limiter
from benchkit.errors import BenchkitError, ConfigError
from benchkit.executors._base import CellItem, CellsHere, CellWork, RemoteCells
from benchkit.model import ProviderSpec, Suite, Task
from benchkit.registry import Registries
from benchkit.results import CellResult

__all__ = ["RayExecutor"]


def _import_ray() -> Any:
    """The ``ray`` module (typed as Any: benchkit uses a handful of its calls)."""
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise ConfigError(
            f"the Ray executor needs Ray, which is not installed ({exc})",
            fix="pip install 'benchkit[ray]' (on the driver and on every node of the cluster).",
        ) from None


@attrs.frozen
class _Payload:
    """What every worker receives once: enough to run any cell of the run."""

    cells: RemoteCells
    shipped_from: str | None = None  # the driver's base_dir, when a copy of it travels


#: A shipped directory: (digest, ref of its gzipped tar). It goes with each call rather than
#: in the actor's constructor, so a restarted actor holds no reference Ray must keep alive.
_Files = tuple[str, Any] | None


#: One cell as it travels to a worker: (sequence number, task index, task, condition index,
#: epoch). The number is the driver's, so a result is matched to its cell without a key.
_Sent = tuple[int, int, Task, int, int]


class _CellWorker:
    """A Ray actor that runs cells: providers and plug-ins are built here, on first use.

    Built lazily (not in ``__init__``) so a build error reaches the driver as the error of
    ``setup`` and a restarted actor rebuilds on its next call. The opened cells are held by
    one task for the actor's life, so a provider keeping a session (MCP) is entered and
    left in the same task, as the Runner does in-process.

    Cells arrive in batches through :meth:`exchange`, which queues them, runs at most
    ``slots`` at once, and answers with every result finished since the last call — so one
    round trip carries many cells each way, and the queue keeps the slots busy while the
    driver records the previous answer.
    """

    def __init__(self, payload: _Payload, slots: int) -> None:
        self._payload = payload
        self._slots = slots
        self._cells: CellsHere | None = None
        self._lock: asyncio.Lock | None = None
        self._copy: Path | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._queue: collections.deque[_Sent] = collections.deque()
        self._running = 0
        self._done: list[tuple[int, CellResult]] = []
        self._failed: BaseException | None = None
        self._ready: asyncio.Event | None = None
        self._threads: anyio.CapacityLimiter | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def _ensure(self, files: _Files) -> CellsHere:
        if self._cells is not None:
            return self._cells
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._cells is None:
                p = self._payload
                remote = p.cells
                if p.shipped_from is not None and files is not None:
                    self._copy = await _unpack(*files)
                    remote = remote.with_suite(
                        _rebase(remote.suite, Path(p.shipped_from), self._copy)
                    )
                loop = asyncio.get_running_loop()
                opened: asyncio.Future[CellsHere] = loop.create_future()
                self._stop = asyncio.Event()
                self._holder = loop.create_task(self._hold(remote, opened, self._stop))
                self._ready = asyncio.Event()
                # Sync plug-ins run in threads, as many at once as this worker's slots.
                self._threads = anyio.CapacityLimiter(self._slots)
                self._cells = await opened
        return self._cells

    @staticmethod
    async def _hold(
        remote: RemoteCells, opened: asyncio.Future[CellsHere], stop: asyncio.Event
    ) -> None:
        try:
            async with remote.open() as cells:
                opened.set_result(cells)
                await stop.wait()
        except BaseException as exc:
            if opened.done():
                raise
            opened.set_exception(exc)

    async def setup(self, files: _Files) -> int:
        """Build everything now; returns this worker's process id."""
        await self._ensure(files)
        return os.getpid()

    async def exchange(self, cells: list[_Sent], files: _Files) -> list[tuple[int, CellResult]]:
        """Queue ``cells``, then return the results finished since the last call: at least
        one while any cell is queued or running here (an empty list when none is)."""
        here = await self._ensure(files)
        assert self._ready is not None
        self._queue.extend(cells)
        self._start(here)
        if not self._done and self._failed is None and self._running:
            await self._ready.wait()
            # Let the cells finishing in this same moment join the answer.
            await asyncio.sleep(0)
        self._ready.clear()
        if self._failed is not None:
            raise self._failed  # a fault of the run (a broken spec), not of one cell
        done, self._done = self._done, []
        return done

    def _start(self, here: CellsHere) -> None:
        loop = asyncio.get_running_loop()
        while self._queue and self._running < self._slots:
            task = loop.create_task(self._one(here, self._queue.popleft()))
            self._running += 1
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _one(self, here: CellsHere, sent: _Sent) -> None:
        number, index, task, cond_index, epoch = sent
        assert self._threads is not None and self._ready is not None
        try:
            with run_limiter(self._threads):
                cell = await self._run(here, index, task, cond_index, epoch)
            self._done.append((number, cell))
        except Exception as exc:
            if self._failed is None:
                self._failed = exc
        finally:
            self._running -= 1
            self._ready.set()
        if self._failed is None:
            self._start(here)

    async def _run(
        self, here: CellsHere, index: int, task: Task, cond_index: int, epoch: int
    ) -> CellResult:
        copy, shipped = self._copy, self._payload.shipped_from
        if copy is not None and shipped is not None and (task.evaluators or task.verifiers):
            task = _rebase_task(task, Path(shipped), copy)
        cell = await here.run(index, task, cond_index, epoch)
        response = cell.response
        if copy is not None and shipped is not None and response is not None:
            artifacts = _move(response.artifacts, copy, Path(shipped))  # as the driver sees it
            if artifacts != response.artifacts:
                cell = attrs.evolve(cell, response=attrs.evolve(response, artifacts=artifacts))
        return cell

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._stop is not None and self._holder is not None:
            self._stop.set()
            await self._holder


@public("benchkit.executors")
class RayExecutor:
    """Runs a suite's cells on Ray actors, ``workers`` of them; the driver (this process)
    records every result.

    ``address``: None starts a local Ray instance (or joins ``$RAY_ADDRESS``); ``"auto"``
    joins the cluster started on this machine with ``ray start``; ``"HOST:6379"`` joins that
    cluster's head; ``"ray://host:10001"`` connects through Ray Client. When this process
    has already called ``ray.init``, that connection is used whatever the address.
    ``workers`` defaults to the cluster's CPUs divided by ``num_cpus`` (the CPUs each actor
    reserves). A cell whose worker dies runs again elsewhere, at most ``max_attempts`` times
    in all, then is recorded as a ``worker_lost`` error. ``init`` holds further keyword arguments
    for ``ray.init`` (``runtime_env``, ``namespace``...).

    The run's ``RunOptions.concurrency`` holds across the cluster: never more cells run at
    once, spread evenly over the workers (:func:`plan_slots`). ``concurrency_per_worker``
    caps each worker's share; None takes the suite's ``RunOptions.concurrency_per_worker``,
    and when that is unset too, each worker gets an even share of ``concurrency``. Cells
    travel to the workers, and results back, in batches: one round trip carries every cell
    that fits and every result finished since the last.

    ``ship_files=True`` sends the suite's directory (the benchmark file's) by content, for
    clusters without a shared filesystem: packed once into Ray's object store (at most
    ``MAX_SHIPPED_BYTES``; ``.git``, ``.venv``, ``__pycache__`` and ``.benchkit`` left out),
    unpacked once per node, and every path under the directory in the suite (the suite's
    own directory, a bundle, a provider's file, a verifier's script) points into the copy.

        >>> RayExecutor("auto", workers=8, concurrency_per_worker=4)
        RayExecutor(address='auto', workers=8, concurrency_per_worker=4)

    .. versionchanged:: 0.2.0
       The run's ``concurrency`` holds across the cluster; ``concurrency_per_worker``
       defaults to its even share (it was 1); cells travel in batches.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        workers: int | None = None,
        concurrency_per_worker: int | None = None,
        num_cpus: float = 1.0,
        max_attempts: int = 3,
        ship_files: bool = False,
        init: Mapping[str, Any] | None = None,
    ) -> None:
        if workers is not None and workers < 1:
            raise ConfigError(f"workers must be >= 1, got {workers}", fix="pass workers=1 or more.")
        if concurrency_per_worker is not None and concurrency_per_worker < 1:
            raise ConfigError(
                f"concurrency_per_worker must be >= 1, got {concurrency_per_worker}",
                fix="pass concurrency_per_worker=1 or more.",
            )
        if max_attempts < 1:
            raise ConfigError(
                f"max_attempts must be >= 1, got {max_attempts}", fix="pass max_attempts=1 or more."
            )
        self.address = address
        self.workers = workers
        self.concurrency_per_worker = concurrency_per_worker
        self.num_cpus = num_cpus
        self.max_attempts = max_attempts
        self.ship_files = ship_files
        self.init = dict(init or {})

    in_process = False

    def __repr__(self) -> str:
        return (
            f"RayExecutor(address={self.address!r}, workers={self.workers!r}, "
            f"concurrency_per_worker={self.concurrency_per_worker!r})"
        )

    # -- before the run ---------------------------------------------------------------

    def check(self, suite: Suite, registries: Registries) -> None:
        """Refuse, before anything runs, what cannot travel to a worker, saying why."""
        ray = _import_ray()
        if self.ship_files and (suite.base_dir is None or not suite.base_dir.is_dir()):
            raise ConfigError(
                f"ship_files=True sends the suite's directory, and the suite for "
                f"{suite.benchmark.id!r} has none ({suite.base_dir})",
                fix="load the suite from a benchmark file (benchkit.load) or set "
                "Suite.base_dir; or drop ship_files.",
            )
        for cond in suite.conditions:
            if isinstance(cond.provider, ProviderSpec):
                continue
            # Plain pickle, not cloudpickle: cloudpickle would copy a closure's captured
            # state to every worker, where changes to it are silently never seen again.
            try:
                pickle.dumps(cond.provider)
            except Exception as exc:
                raise ConfigError(
                    f"condition {cond.id!r}: its provider {cond.provider!r} cannot travel to "
                    f"Ray workers ({type(exc).__name__}: {exc}); a lambda, a nested function "
                    "or a closure over local state would run on a copy of that state",
                    fix="give the condition a ProviderSpec (built on each worker), or a "
                    "provider object that pickles: a module-level function or class "
                    "importable on the workers (CallableProvider(callable='pkg.mod:fn')).",
                ) from None
        try:
            bench = attrs.evolve(suite.benchmark, tasks=())  # tasks travel with their cells
            ray.cloudpickle.dumps((attrs.evolve(suite, benchmark=bench), registries))
        except Exception as exc:
            raise ConfigError(
                f"the suite for {suite.benchmark.id!r} cannot be sent to Ray workers "
                f"({type(exc).__name__}: {exc})",
                fix="use ProviderSpecs and registered plug-ins (by name) instead of objects "
                "that hold locks, open files or sockets.",
            ) from None

    # -- the run ----------------------------------------------------------------------

    def _connect(self, ray: Any) -> None:
        if ray.is_initialized():
            return
        options: dict[str, Any] = {"logging_level": "warning", **self.init}
        if self.address is None:
            options.setdefault("include_dashboard", False)
        try:
            ray.init(address=self.address, **options)
        except Exception as exc:  # Ray raises bare Exceptions too ("timed out during startup")
            with contextlib.suppress(Exception):
                ray.shutdown()  # what a half-started local instance left
            raise _not_started(self.address, exc) from None

    async def execute(self, work: CellWork) -> None:
        ray = _import_ray()
        self._connect(ray)
        count = self.workers
        if count is None:
            cpus = float(ray.cluster_resources().get("CPU", 1.0))
            count = max(1, int(cpus // self.num_cpus)) if self.num_cpus > 0 else 1
        options = work.suite.options
        per_worker = self.concurrency_per_worker or options.concurrency_per_worker
        slots = plan_slots(options.concurrency, count, per_worker)
        _check_placeable(ray, len(slots), self.num_cpus)
        # By value, not ray.put: a restarted actor gets its arguments again from its spec,
        # with no object-store reference to keep alive (the payload has no tasks: small).
        payload = _Payload(work.remote())
        base_dir = work.suite.base_dir
        files: _Files = None
        if self.ship_files and base_dir is not None:
            packed = await anyio.to_thread.run_sync(_pack, base_dir)
            # Sent with each call; nested in a tuple, the ref stays a ref (fetched once a node).
            files = (hashlib.sha256(packed).hexdigest()[:16], ray.put(packed))
            payload = attrs.evolve(payload, shipped_from=str(base_dir))
        actor_class = ray.remote(_CellWorker).options(
            num_cpus=self.num_cpus,
            max_concurrency=4,  # an exchange, setup and close; the cells run in its pool
            max_restarts=-1,
            max_task_retries=0,
        )
        actors = [actor_class.remote(payload, n) for n in slots]
        use_await = _on_asyncio()
        waiter = _Waiter(ray, use_await, anyio.CapacityLimiter(len(actors) + 1))
        try:
            # Build everywhere first, so a provider that cannot be built stops the run before
            # any cell; a worker lost meanwhile is restarted by Ray and builds on its first cell.
            try:
                with anyio.fail_after(PLACEMENT_TIMEOUT):
                    for ref in [actor.setup.remote(files) for actor in actors]:
                        with contextlib.suppress(*waiter.lost_errors):
                            await waiter.get(ref)
            except TimeoutError:
                raise _not_placed(ray, len(actors), self.num_cpus) from None
            dispatch = _Dispatch(work, waiter, self.max_attempts, len(actors), files)
            async with anyio.create_task_group() as tg:
                for number, (actor, n) in enumerate(zip(actors, slots, strict=True)):
                    tg.start_soon(_Feeder(dispatch, actor, number, n).run)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_shut, ray, actors)


#: How long the workers have to be placed on the cluster and built (seconds): a worker that
#: Ray cannot place waits for resources without end, and the run with it.
PLACEMENT_TIMEOUT = 300.0


def _not_started(address: str | None, exc: BaseException) -> ConfigError:
    """What failed when Ray could not be started or reached, and what to try."""
    lines = str(exc).strip().splitlines()
    said = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    joining = address or os.environ.get("RAY_ADDRESS")
    if joining:
        return ConfigError(
            f"cannot reach the Ray cluster at {joining}: {said}",
            fix="start the cluster first (`ray start --head`, see docs/scale-out.md) and pass "
            "its address: auto on its head node, ray://HOST:10001 from elsewhere; or run "
            "without Ray (--executor local). Nothing was run.",
        )
    return ConfigError(
        f"the local Ray cluster did not start: {said}",
        fix="Ray starts a GCS, a raylet and an object store here, which need memory (several "
        "GB of address space; the object store a share of RAM and /dev/shm) and free ports: "
        "raise the memory limit (ulimit -v, the container's), give Ray a smaller object "
        "store (RayExecutor(init={'object_store_memory': 200_000_000})), start a cluster "
        "yourself (`ray start --head`, then --ray-address auto), or run without Ray "
        "(--executor local). Nothing was run.",
    )


def _check_placeable(ray: Any, workers: int, num_cpus: float) -> None:
    """Refuse at once a run whose workers the cluster can never place: they would wait
    for CPUs without end."""
    total = float(ray.cluster_resources().get("CPU", 0.0))
    if num_cpus > 0 and workers * num_cpus > total:
        fits = int(total // num_cpus)
        raise ConfigError(
            f"Ray cannot place {workers} workers of {num_cpus:g} CPU each: the cluster has "
            f"{total:g} CPUs in all",
            fix=f"ask for at most {fits} workers (--workers {max(fits, 1)}), fewer CPUs each "
            "(RayExecutor(num_cpus=...)), or add nodes to the cluster. Nothing was run."
            if fits
            else "give each worker fewer CPUs (RayExecutor(num_cpus=...)) or add nodes to "
            "the cluster. Nothing was run.",
        )


def _not_placed(ray: Any, workers: int, num_cpus: float) -> ConfigError:
    """The error of workers still not placed (or built) after :data:`PLACEMENT_TIMEOUT`."""
    free = float(ray.available_resources().get("CPU", 0.0))
    return ConfigError(
        f"Ray did not place the run's {workers} workers ({num_cpus:g} CPU each) within "
        f"{PLACEMENT_TIMEOUT:g} s: {free:g} CPUs of the cluster are free now, the rest held "
        "by other work",
        fix="wait for the cluster's other jobs, ask for fewer workers (--workers N), or add "
        "nodes. The cells that finished are stored; --resume continues the run.",
    )


def plan_slots(concurrency: int, workers: int, per_worker: int | None) -> list[int]:
    """The cells each worker runs at once: ``concurrency`` spread evenly over ``workers``,
    each at most ``per_worker`` (default: an even share), so the cluster never runs more
    than the run's ``concurrency`` cells at once. Workers left without a slot (fewer cells
    at once than workers) are not started.

        >>> plan_slots(100, 2, None), plan_slots(100, 3, None), plan_slots(100, 2, 10)
        ([50, 50], [34, 33, 33], [10, 10])
        >>> plan_slots(3, 8, None), plan_slots(8, 16, 1)
        ([1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1])
    """
    per = per_worker if per_worker is not None else -(-concurrency // workers)
    base, extra = divmod(min(concurrency, workers * per), workers)
    return [base + 1] * extra + [base] * (workers - extra if base else 0)


class _Out:
    """A cell sent (or about to be sent) to a worker, and what became of it so far."""

    __slots__ = ("holds", "item", "losses", "lost_on")

    def __init__(self, item: CellItem) -> None:
        self.item = item
        self.losses = 0  # workers that died while holding it
        self.lost_on = -1  # the last of them
        self.holds = False  # a token of its condition's cap


class _Dispatch:
    """What the feeders of one run share: the cells to take, the cells to run again
    because their worker died, and how many cells are out on workers."""

    def __init__(
        self, work: CellWork, waiter: _Waiter, max_attempts: int, workers: int, files: _Files
    ) -> None:
        self.work = work
        self.waiter = waiter
        self.max_attempts = max_attempts
        self.workers = workers
        self.files = files
        self.retries: collections.deque[_Out] = collections.deque()
        self.out = 0
        self.exhausted = False
        self.stopped = False
        self._changed = anyio.Event()

    def next_cell(self) -> _Out | None:
        if self.exhausted:
            return None
        item = next(self.work.todo, None)
        if item is None:
            self.exhausted = True
            self.changed()
            return None
        return _Out(item)

    def finished(self) -> bool:
        return self.stopped or (self.exhausted and not self.retries and self.out == 0)

    def changed(self) -> None:
        """Wake the feeders waiting for something to do (a retry, the end of the run)."""
        self._changed.set()
        self._changed = anyio.Event()

    async def wait(self) -> None:
        await self._changed.wait()


class _Feeder:
    """Keeps one worker busy: sends it cells in batches, records what comes back.

    Each round trip (:meth:`_CellWorker.exchange`) sends the cells that fit and brings back
    every result finished meanwhile. A worker holds at most twice its slots: those running
    and as many queued, so it never waits for the driver while the driver records, yet no
    worker hoards the run's last cells. When a worker dies, the cells it held run again,
    each alone on another worker (so a cell that kills its worker takes no other down with
    it twice), and count one attempt each.
    """

    def __init__(self, dispatch: _Dispatch, actor: Any, number: int, slots: int) -> None:
        self.dispatch = dispatch
        self.actor = actor
        self.number = number
        self.slots = slots
        self.room = slots  # the first batch fills the slots only: the others get cells too
        self.pending: dict[int, _Out] = {}
        self.held: _Out | None = None  # taken, waiting for its condition's cap
        self.isolating = False
        self.sequence = itertools.count()

    async def run(self) -> None:
        d = self.dispatch
        try:
            while not d.stopped:
                batch = await self._fill()
                if not batch and not self.pending:
                    if self.held is None and d.finished():
                        return
                    await d.wait()
                    continue
                if not await self._exchange(batch):
                    d.stopped = True
                    d.changed()
                    return
        except Exception as exc:
            d.work.fail(exc)

    async def _fill(self) -> list[_Out]:
        d = self.dispatch
        if d.retries or self.isolating:
            if self.pending:
                return []  # drain first: a retried cell runs alone
            out = self._take_retry()
            if out is None:
                return []
            await self._acquire(out, wait=True)
            self.isolating = True
            return [out]
        batch: list[_Out] = []
        room = self.room - len(self.pending)
        while len(batch) < room:
            if self.held is None:
                self.held = d.next_cell()
                if self.held is None:
                    break
            out = self.held
            if not await self._acquire(out, wait=not batch and not self.pending):
                break  # its condition is at its cap: send what there is
            self.held = None
            batch.append(out)
        if batch:
            self.room = 2 * self.slots
        return batch

    def _take_retry(self) -> _Out | None:
        retries = self.dispatch.retries
        for out in retries:
            if out.lost_on != self.number or self.dispatch.workers == 1:
                retries.remove(out)
                return out
        return None

    async def _acquire(self, out: _Out, *, wait: bool) -> bool:
        limiter = self.dispatch.work.limiter(out.item[2])
        if limiter is None:
            return True
        if wait:
            await limiter.acquire_on_behalf_of(out)
        else:
            try:
                limiter.acquire_on_behalf_of_nowait(out)
            except anyio.WouldBlock:
                return False
        out.holds = True
        return True

    def _release(self, out: _Out) -> None:
        if out.holds:
            limiter = self.dispatch.work.limiter(out.item[2])
            assert limiter is not None
            limiter.release_on_behalf_of(out)
            out.holds = False

    async def _exchange(self, batch: list[_Out]) -> bool:
        """One round trip; False when the run should stop taking cells."""
        d = self.dispatch
        sent = []
        for out in batch:
            number = next(self.sequence)
            self.pending[number] = out
            index, task, cond_index, _, epoch = out.item
            sent.append((number, index, task, cond_index, epoch))
        d.out += len(batch)
        try:
            done = await d.waiter.get(self.actor.exchange.remote(sent, d.files))
        except d.waiter.lost_errors as exc:
            return await self._lost(exc)
        if not done and self.pending:
            # Nothing back although cells are out: the worker restarted between two calls
            # and forgot them.
            return await self._lost(None)
        record = d.work.record
        for number, cell in done:
            if number not in self.pending:  # given up for lost meanwhile, run again elsewhere
                continue
            out = self.pending.pop(number)
            self._release(out)
            d.out -= 1
            if not await record(cell):
                return False
        if not self.pending:
            self.isolating = False
            d.changed()
        return True

    async def _lost(self, exc: BaseException | None) -> bool:
        d = self.dispatch
        lost = list(self.pending.values())
        self.pending.clear()
        self.isolating = False
        d.out -= len(lost)
        going_on = True
        for out in lost:
            self._release(out)
            out.losses += 1
            out.lost_on = self.number
            if out.losses < d.max_attempts:
                d.retries.append(out)
                continue
            if exc is None:
                why = "it restarted and forgot the cell"
            else:
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                why = f"{type(exc).__name__}: {reason}"
            cell = d.work.lost_cell(
                out.item,
                f"the Ray worker running this cell died {out.losses} times ({why}); "
                f"recorded as an error after {d.max_attempts} attempts so the run could go on",
                out.losses,
            )
            going_on = await d.work.record(cell) and going_on
        d.changed()
        if going_on:
            await self._revive()
        return going_on

    async def _revive(self) -> None:
        """Wait until the worker answers again (:data:`REVIVE_SECONDS` at most): Ray restarts
        a dead actor in the background, and a call in the meantime fails, which would count
        against the cells it carried."""
        d = self.dispatch
        delay = 0.05
        deadline = anyio.current_time() + REVIVE_SECONDS
        while True:
            try:
                await d.waiter.get(self.actor.setup.remote(d.files))
                return
            except d.waiter.lost_errors:
                if anyio.current_time() > deadline:
                    return  # send it cells anyway: each loss counts, so the run ends
                await anyio.sleep(delay)
                delay = min(2 * delay, 1.0)


#: How long a feeder waits for its restarted worker before it sends it cells regardless.
REVIVE_SECONDS = 60.0


#: The largest packed directory ``ship_files`` sends (bigger: use a shared filesystem).
MAX_SHIPPED_BYTES = 256 * 1024 * 1024
_NOT_SHIPPED = frozenset({".git", ".venv", "__pycache__", ".benchkit", "node_modules"})


def _pack(directory: Path) -> bytes:
    """``directory`` as a gzipped tar (modes kept, so scripts stay executable)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(
            directory,
            arcname=".",
            filter=lambda info: None if _NOT_SHIPPED.intersection(Path(info.name).parts) else info,
        )
        if buffer.tell() > MAX_SHIPPED_BYTES:
            raise ConfigError(
                f"{directory} packs to more than {MAX_SHIPPED_BYTES // 2**20} MiB, too much "
                "to ship to every Ray node with each run",
                fix="put the benchmark's files on a filesystem every node mounts at the same "
                "path and drop ship_files.",
            )
    return buffer.getvalue()


async def _unpack(digest: str, ref: Any) -> Path:
    """This node's copy of a shipped directory, unpacked by the first worker that needs it."""
    target = Path(tempfile.gettempdir()) / "benchkit-ray" / digest
    if not target.is_dir():
        packed: bytes = await ref
        await anyio.to_thread.run_sync(_extract, packed, target)
    return target


def _extract(packed: bytes, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{target.name}-", dir=target.parent))
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(staging, filter="data")
        else:  # pragma: no cover - Pythons before the filter (we packed it ourselves)
            tar.extractall(staging)
    try:
        staging.rename(target)
    except OSError:  # another worker on this node got there first
        shutil.rmtree(staging, ignore_errors=True)


def _move(value: Any, old: Path, new: Path) -> Any:
    """``value`` with every path (or path string) under ``old`` moved under ``new``."""
    if isinstance(value, Path):
        return new / value.relative_to(old) if value.is_relative_to(old) else value
    if isinstance(value, str):
        prefix = str(old)
        if value == prefix or value.startswith(prefix + os.sep):
            return str(new) + value[len(prefix) :]
        return value
    if isinstance(value, Mapping):
        return {k: _move(v, old, new) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_move(v, old, new) for v in value)
    return value


def _move_specs(specs: tuple[Any, ...], old: Path, new: Path) -> tuple[Any, ...]:
    return tuple(attrs.evolve(s, options=_move(s.options, old, new)) for s in specs)


def _rebase(suite: Suite, old: Path, new: Path) -> Suite:
    """The suite as the worker sees it: its directory (and paths into it) in ``new``."""
    conditions = tuple(
        attrs.evolve(
            cond,
            bundle=_move(cond.bundle, old, new),
            provider=ProviderSpec(cond.provider.type, _move(cond.provider.options, old, new))
            if isinstance(cond.provider, ProviderSpec)
            else cond.provider,
        )
        for cond in suite.conditions
    )
    bench = suite.benchmark
    bench = attrs.evolve(
        bench,
        evaluators=_move_specs(bench.evaluators, old, new),
        verifiers=_move_specs(bench.verifiers, old, new),
    )
    return attrs.evolve(suite, benchmark=bench, conditions=conditions, base_dir=new)


def _rebase_task(task: Task, old: Path, new: Path | None) -> Task:
    assert new is not None
    return attrs.evolve(
        task,
        evaluators=_move_specs(task.evaluators, old, new),
        verifiers=_move_specs(task.verifiers, old, new),
    )


class _Waiter:
    """Waits for Ray object refs on either anyio backend, unwrapping task errors."""

    def __init__(self, ray: Any, use_await: bool, limiter: anyio.CapacityLimiter) -> None:
        exc = ray.exceptions
        self.ray = ray
        self.use_await = use_await
        self.limiter = limiter
        self.lost_errors: tuple[type[BaseException], ...] = (
            exc.RayActorError,
            exc.WorkerCrashedError,
            exc.NodeDiedError,
            exc.OutOfMemoryError,
        )
        self.task_error: type[BaseException] = exc.RayTaskError

    async def get(self, ref: Any) -> Any:
        try:
            if self.use_await:
                return await ref
            return await anyio.to_thread.run_sync(
                self.ray.get, ref, abandon_on_cancel=True, limiter=self.limiter
            )
        except self.lost_errors as exc:
            if getattr(exc, "actor_init_failed", False):
                # Not a lost worker: none can start (restarted, it fails the same way).
                first = str(exc).strip().splitlines()
                raise ConfigError(
                    "the Ray workers cannot start this run: unpacking what the driver sent "
                    f"failed there ({type(exc).__name__}: {first[-1] if first else ''})",
                    fix="make every provider and plug-in importable on each node: a module-"
                    "level function or class of an installed package (not of a script run as "
                    "__main__ elsewhere), or a ProviderSpec that names it.",
                ) from None
            raise
        except self.task_error as exc:
            # An error raised by benchkit's code on the worker (a bad spec, a provider
            # that cannot be built there): re-raise the original, as an in-process run would.
            cause = getattr(exc, "cause", None)
            if isinstance(cause, BenchkitError):
                raise cause from None
            if isinstance(cause, Exception):
                raise cause from exc
            raise


def _on_asyncio() -> bool:
    """True on asyncio (Ray's refs are awaitable there), False on trio."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _shut(ray: Any, actors: list[Any]) -> None:
    """Close the workers' providers (a few seconds at most), then end the actors."""
    refs = [actor.close.remote() for actor in actors]
    ray.wait(refs, num_returns=len(refs), timeout=10)
    for actor in actors:
        ray.kill(actor, no_restart=True)
