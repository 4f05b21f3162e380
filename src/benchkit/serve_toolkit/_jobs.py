"""Runs started over HTTP: a queue, a bounded number running at once, cancel, resume,
and live progress for server-sent events.

A job is one session of one stored run. Workers in the app's lifespan task group take
jobs from the queue; each runs its suite with the Runner and the store's sink, exactly as
``benchkit.run`` does, so a job's cells are durable as they finish and a resume (after a
cancel, or after the server died) reuses them by key — no cell lost or run twice.

What a job was started from (its *spec*: the kind of route that started it, the benchmark
path relative to the root, the options) is written to ``<store>.jobs/<run id>.json``
beside the store before it is queued, so a server started later can rebuild the suite and
resume the run.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc
import anyio.to_thread
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from benchkit._stored import StoredRun
from benchkit.errors import BenchkitError
from benchkit.llm._endpoints import EndpointRegistry
from benchkit.model import Suite
from benchkit.results import RunResult
from benchkit.runner import Progress, Runner
from benchkit.store import Store

__all__ = ["Job", "JobBuilder", "JobContext", "JobManager", "JobStatus", "QueueFull", "now"]

log = logging.getLogger("benchkit.serve")

JobStatus = Literal["queued", "running", "finished", "interrupted", "cancelled", "failed"]
_LIVE = ("queued", "running")


@attrs.frozen(kw_only=True)
class JobContext:
    """What a job builder may use besides the spec: the server's root (every path of a
    spec stays inside it), its endpoints (a spec names them, never a URL) and the tools'
    server settings (``create_app(**settings)``, resolved; see ``Tool.server_settings``)."""

    root: Path
    endpoints: EndpointRegistry = attrs.field(factory=EndpointRegistry)
    settings: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class JobBuilder:
    """One kind of job: how its saved *spec* becomes a Suite, and what a request for it
    looks like. A tool declares its builders in ``Tool.jobs`` (``{kind: "module:attr"}``);
    the server's generic ``POST /api/runs`` starts a kind with a JSON Schema, checking the
    request against that schema before anything is built (docs/server.md).

    ``build(spec, context)`` runs in a worker thread when the job is checked, started and
    resumed: a problem is a :class:`~benchkit.errors.BenchkitError` (400 naming its
    ``json_path``), never a guess.
    """

    build: Callable[[Mapping[str, Any], JobContext], Suite]
    """The suite of a saved spec."""
    schema: Mapping[str, Any] | None = None
    """The JSON Schema of a request's fields beside ``kind`` (an object schema). None: the
    kind is started only by the tool's own routes (and still resumed by the server)."""
    field: str | None = None
    """A field this job adds to benchkit's own ``benchmark`` request (``schema`` is then
    that field's schema): a benchmark request giving the field is this job, and its spec
    is a benchmark spec that keeps the field (so an older server's spec resumes alike)."""
    spec: Callable[[Mapping[str, Any], JobContext], Mapping[str, Any]] | None = None
    """The spec saved for a checked request (default: the request's fields): where names
    are resolved (an endpoint given by URL, say); raises ``ApiError`` for the client."""
    summary: str = ""
    """One line for the OpenAPI document."""
    format: str | None = None
    """The format the job's runs are recorded under when its suite names none (a suite
    built from a request, not read from a file): its reports then carry the tool's
    sections, and the explorer its view. Default: the tool's format, when it reads one.

    .. versionadded:: 0.2.0
    """


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@attrs.define(eq=False)
class Job:
    """One start or resume of a stored run, from queue to end."""

    run_id: str
    kind: Literal["start", "resume", "rerun"]
    spec: Mapping[str, Any]
    status: JobStatus = "queued"
    #: For a re-run: the cells to run again as new attempts (task, condition or None,
    #: epoch or None); see Store.prepare(rerun=...).
    rerun: tuple[tuple[str, str | None, int | None], ...] = ()
    created_at: str = attrs.field(factory=now)
    started_at: str | None = None
    ended_at: str | None = None
    done: int = 0
    total: int | None = None
    errors: int = 0
    error: str | None = None
    cancel_requested: bool = False
    result: RunResult | None = None
    runner: Runner | None = None
    finished: anyio.Event = attrs.field(factory=anyio.Event)
    subscribers: list[MemoryObjectSendStream[dict[str, Any]]] = attrs.field(factory=list)

    @property
    def live(self) -> bool:
        return self.status in _LIVE

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "route": self.spec.get("route"),
            "benchmark": self.spec.get("path"),
            "status": self.status,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "progress": {"done": self.done, "total": self.total, "errors": self.errors},
            "error": self.error,
            "cancel_requested": self.cancel_requested,
        }

    def publish(self, event: str, data: dict[str, Any]) -> None:
        """Send an event to every subscriber; a subscriber that lags loses progress events
        (the next one carries the totals), never the final status."""
        for stream in list(self.subscribers):
            try:
                stream.send_nowait({"event": event, "data": data})
            except anyio.WouldBlock:
                if event != "progress":
                    log.warning("an event stream of run %s is full; closing it", self.run_id)
                    stream.close()
                    self.subscribers.remove(stream)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self.subscribers.remove(stream)

    def subscribe(self) -> MemoryObjectReceiveStream[dict[str, Any]]:
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](256)
        self.subscribers.append(send)
        return receive


class QueueFull(Exception):
    """More jobs are waiting than the server accepts."""


class JobManager:
    """Queues jobs and runs at most ``max_running`` at once in the app's event loop."""

    def __init__(
        self,
        store: Store,
        context: JobContext,
        builders: Mapping[str, JobBuilder],
        *,
        extensions: Mapping[str, JobBuilder] | None = None,
        max_running: int = 2,
        max_queued: int = 100,
    ) -> None:
        self.store = store
        self.context = context
        self.root = context.root
        self.builders = dict(builders)
        #: The tools' additions to the benchmark job, by the field they add
        #: (:attr:`JobBuilder.field`).
        self.extensions = dict(extensions or {})
        self.max_running = max_running
        self.max_queued = max_queued
        self.jobs: dict[str, Job] = {}
        self.specs_dir = store.path.with_name(store.path.name + ".jobs")
        self._send, self._receive = anyio.create_memory_object_stream[Job](max_queued)

    # -- specs on disk ---------------------------------------------------------------------

    def _spec_file(self, run_id: str) -> Path:
        return self.specs_dir / f"{run_id}.json"

    def save_spec(self, run_id: str, spec: Mapping[str, Any]) -> None:
        self.specs_dir.mkdir(parents=True, exist_ok=True)
        target = self._spec_file(run_id)
        temporary = target.with_suffix(".tmp")
        temporary.write_text(json.dumps(dict(spec), sort_keys=True), encoding="utf-8")
        os.replace(temporary, target)

    def load_spec(self, run_id: str) -> dict[str, Any] | None:
        try:
            value = json.loads(self._spec_file(run_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def forget_spec(self, run_id: str) -> None:
        self._spec_file(run_id).unlink(missing_ok=True)

    def builder(self, spec: Mapping[str, Any]) -> JobBuilder | None:
        """The builder of a saved spec's kind (its ``route``); None for a kind no installed
        tool declares."""
        return self.builders.get(str(spec.get("route")))

    def suite(self, spec: Mapping[str, Any]) -> Suite:
        """The suite a saved spec describes (blocking: call it in a worker thread); one
        that names no format is recorded under its builder's (:attr:`JobBuilder.format`)."""
        builder = self.builder(spec)
        if builder is None:
            raise ValueError(f"no job builder for route {spec.get('route')!r}")
        suite = builder.build(spec, self.context)
        source = suite.benchmark.source
        if source.format is None and builder.format is not None:
            stamped = attrs.evolve(source, format=builder.format)
            suite = attrs.evolve(suite, benchmark=attrs.evolve(suite.benchmark, source=stamped))
        return suite

    # -- the queue -------------------------------------------------------------------------

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The workers; run this in the app's lifespan task group (until cancelled)."""
        async with anyio.create_task_group() as group:
            for _ in range(self.max_running):
                group.start_soon(self._worker)
            task_status.started()

    def live(self, run_id: str) -> Job | None:
        job = self.jobs.get(run_id)
        return job if job is not None and job.live else None

    def busy(self) -> bool:
        """Whether any job is queued or running (its live progress is not all stored)."""
        return any(job.live for job in self.jobs.values())

    def submit(
        self,
        run_id: str,
        kind: Literal["start", "resume", "rerun"],
        spec: Mapping[str, Any],
        *,
        rerun: tuple[tuple[str, str | None, int | None], ...] = (),
    ) -> Job:
        """Queue a job (its spec is saved first). :class:`QueueFull` when the queue is full."""
        if spec.get("route") not in self.builders:
            raise ValueError(f"no suite builder for route {spec.get('route')!r}")
        job = Job(run_id=run_id, kind=kind, spec=spec, rerun=rerun)
        try:
            self._send.send_nowait(job)
        except anyio.WouldBlock:
            raise QueueFull(f"{self.max_queued} runs are already waiting") from None
        self.save_spec(run_id, spec)
        self.jobs[run_id] = job
        return job

    async def _worker(self) -> None:
        async for job in self._receive:
            if job.status != "queued":  # cancelled while it waited
                continue
            await self._execute(job)

    async def _execute(self, job: Job) -> None:
        job.status = "running"
        job.started_at = now()
        job.publish("status", job.to_json())
        try:
            suite = await anyio.to_thread.run_sync(self.suite, job.spec)
            kept = 0

            def progress(event: Progress) -> None:
                job.done = len(stored.done) + event.done
                job.errors = kept + event.errors
                cell = event.cell
                job.publish(
                    "progress",
                    {
                        "done": job.done,
                        "total": job.total,
                        "errors": job.errors,
                        "cell": {
                            "task_id": cell.task_id,
                            "condition_id": cell.condition_id,
                            "epoch": cell.epoch,
                            "status": cell.status,
                        },
                    },
                )

            # The one pipeline (a run into the store): this server's store is the run's
            # sink and its LLM reply cache, as for a run from the CLI or from code.
            stored = StoredRun(
                suite,
                store=self.store,
                run_id=job.run_id,
                resume=job.kind != "start",
                rerun=job.rerun,
                progress=progress,
            )
            await anyio.to_thread.run_sync(stored.prepare)
            job.total = suite.benchmark.task_count
            if job.total is not None:
                job.total *= len(suite.conditions) * suite.options.epochs
            kept = sum(1 for cell in stored.done if cell.errored)
            job.done, job.errors = len(stored.done), kept
            job.runner = stored.runner
            if job.cancel_requested:  # cancelled while the suite was being built: never ran
                job.status = "cancelled"
                return
            job.result = await stored.arun()
            if job.cancel_requested:
                job.status = "cancelled"
            else:
                job.status = "interrupted" if job.result.interrupted else "finished"
        except BenchkitError as exc:
            job.status, job.error = "failed", exc.render()
        except anyio.get_cancelled_exc_class():
            job.status = "cancelled" if job.cancel_requested else "interrupted"
            raise
        except Exception as exc:  # a provider's bug must not take the server down
            log.exception("run %s failed", job.run_id)
            job.status, job.error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            job.runner = None
            job.ended_at = now()
            job.publish("end", job.to_json())
            for stream in job.subscribers:
                stream.close()
            job.subscribers.clear()
            job.finished.set()

    def cancel(self, run_id: str) -> Job | None:
        """Stop a live job: a queued one never starts, a running one stops after the cells
        that are running (they are stored; a resume continues). None when none is live."""
        job = self.live(run_id)
        if job is None:
            return None
        job.cancel_requested = True
        if job.status == "queued":
            job.status = "cancelled"
            job.ended_at = now()
            job.publish("end", job.to_json())
            for stream in job.subscribers:
                stream.close()
            job.subscribers.clear()
            job.finished.set()
            return job
        if job.runner is not None:
            job.runner.cancel()
        return job

    async def cancel_all(self) -> None:
        """On shutdown: stop every running job gracefully so its run is marked interrupted."""
        for job in list(self.jobs.values()):
            if job.live:
                self.cancel(job.run_id)
        with anyio.move_on_after(10):
            for job in list(self.jobs.values()):
                await job.finished.wait()
