"""Small building blocks for tests: paths, a suite factory, a stored run cut short."""

from __future__ import annotations

import functools
import sqlite3
import subprocess
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import anyio
import pytest

from benchkit import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    Progress,
    Runner,
    RunOptions,
    RunResult,
    Store,
    Suite,
    Task,
)
from benchkit.protocols import Provider

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def make_suite(
    providers: Mapping[str, Provider],
    tasks: Iterable[Task] | None = None,
    *,
    n: int = 5,
    evaluator: str = "exact",
    **options: object,
) -> Suite:
    """A suite whose task i has input i and expects str(i), run under ``providers``."""
    if tasks is None:
        tasks = [Task(f"t{i}", input=i, expected=str(i)) for i in range(n)]
    return Suite(
        Benchmark("test", name="Test", tasks=tuple(tasks), evaluators=(EvaluatorSpec(evaluator),)),
        conditions=tuple(Condition(cid, p) for cid, p in providers.items()),
        options=RunOptions(**options),  # type: ignore[arg-type]
    )


def tasks_of(bench: Benchmark) -> tuple[Task, ...]:
    """The tasks of a benchmark the test loaded into memory (never a lazy source)."""
    assert isinstance(bench.tasks, tuple), f"{bench.id}: tasks are streamed, not loaded"
    return bench.tasks


def stored_run_stopped_after(store: Store, suite: Suite, cells: int) -> tuple[str, RunResult]:
    """Run ``suite`` into ``store``, cancelled once ``cells`` cells have finished (run it
    at concurrency 1 to stop at exactly that many): its run id and its partial result."""
    prepared = store.prepare(suite)
    runners: list[Runner] = []

    def stop(event: Progress) -> None:
        if event.done == cells:
            runners[0].cancel()

    runners.append(Runner(sinks=[prepared.sink], progress=stop))
    run = functools.partial(runners[0].run, suite, run_id=prepared.run_id)
    return prepared.run_id, anyio.run(run)


def trace_queries(monkeypatch: pytest.MonkeyPatch, record: Callable[[str], object]) -> None:
    """Hand ``record`` every statement of every connection the store's query layer opens
    from now on (the tests that count what a read reads)."""
    from benchkit.store import _queries, _schema

    def connect(path: Path, *, timeout: float) -> sqlite3.Connection:
        conn = _schema.connect(path, timeout=timeout)
        conn.set_trace_callback(record)
        return conn

    monkeypatch.setattr(_queries, "connect", connect)


def one_paragraph_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The CLI's one error line, after checking it exited 2 without a traceback."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("benchkit: error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]
