"""A run SIGKILLed at any moment leaves a consistent store (#42): every stored cell has its
task in the run's snapshot, and every stored transcript has its cell — with real SIGKILLs
of a real ``python -m benchkit run`` subprocess."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from benchkit import Benchmark, Condition, RunOptions, Suite, Task
from benchkit.protocols import ResultSink
from benchkit.providers import CallableProvider
from benchkit.results import CellResult, RunInfo, RunResult
from benchkit.runner import Runner
from benchkit.store import Store
from benchkit.store._writer import StoreSink

from ._support import REPO

REPLY = json.dumps({"jsonrpc": "2.0", "result": "x", "id": 1})


def _benchmark(directory: Path, tasks: int) -> Path:
    command = json.dumps(["sh", "-c", f"read line; echo '{REPLY}'"])
    lines = [
        "benchkit: 1",
        "id: killed",
        "evaluators: [exact]",
        "conditions:",
        f"  - {{id: a, provider: {{type: subprocess, command: {command}, memory_mb: null}}}}",
        f"  - {{id: b, provider: {{type: subprocess, command: {command}, memory_mb: null}}}}",
        "run: {concurrency: 8}",
        "tasks:",
    ]
    lines += [f"  - {{id: t{i}, input: q{i}, expected: x}}" for i in range(tasks)]
    path = directory / "benchmark.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _registered(store: Path) -> bool:
    """Whether the run's row is in the store (it then runs its cells)."""
    if not store.exists():
        return False
    db = sqlite3.connect(store, timeout=0.1)
    try:
        (count,) = db.execute("SELECT COUNT(*) FROM runs").fetchone()
        return int(count) > 0
    except sqlite3.OperationalError:
        return False
    finally:
        db.close()


def _orphans(store: Path) -> tuple[int, int, int]:
    """(cells, cells without their task, transcripts without their cell)."""
    db = sqlite3.connect(store)
    try:
        (cells,) = db.execute("SELECT COUNT(*) FROM cells").fetchone()
        (taskless,) = db.execute(
            "SELECT COUNT(*) FROM cells c WHERE NOT EXISTS (SELECT 1 FROM tasks t "
            "WHERE t.run_id = c.run_id AND t.task_id = c.task_id)"
        ).fetchone()
        (cellless,) = db.execute(
            "SELECT COUNT(*) FROM transcripts s WHERE NOT EXISTS (SELECT 1 FROM cells c "
            "WHERE c.run_id = s.run_id AND c.task_id = s.task_id "
            "AND c.condition_id = s.condition_id AND c.epoch = s.epoch)"
        ).fetchone()
    finally:
        db.close()
    return int(cells), int(taskless), int(cellless)


@pytest.mark.slow
def test_a_sigkilled_run_keeps_every_cells_task_and_every_transcripts_cell(
    tmp_path: Path,
) -> None:
    bench = _benchmark(tmp_path, 400)
    rng = random.Random()
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}
    killed_with_cells = 0
    for round_ in range(6):
        store = tmp_path / f"store{round_}.db"
        run = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchkit",
                "run",
                str(bench),
                "--store",
                str(store),
                "--no-progress",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while not _registered(store):  # then a random moment of the run
                assert run.poll() is None and time.monotonic() < deadline, "no run started"
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 1.5))
            assert run.poll() is None, "the run ended before it was killed"
            run.kill()
            run.wait(30)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        cells, taskless, cellless = _orphans(store)
        assert (taskless, cellless) == (0, 0), f"round {round_}: {cells} cells"
        killed_with_cells += cells > 0
    assert killed_with_cells >= 3  # most kills came mid-run, not before the first cell


class _Wrapper:
    """A sink around the store's that does not pass ``see_task`` on (as a sink that wraps
    another may not): the writer reads the tasks it needs from the benchmark itself."""

    def __init__(self, sink: StoreSink) -> None:
        self.sink = sink

    async def open(self, info: RunInfo) -> None:
        await self.sink.open(info)

    async def write(self, cell: CellResult) -> None:
        await self.sink.write(cell)

    async def close(self, result: RunResult) -> None:
        await self.sink.close(result)


@pytest.mark.parametrize("wrapped", [False, True])
def test_every_committed_cell_has_its_task_while_the_run_goes_on(
    tmp_path: Path, wrapped: bool
) -> None:
    """Read mid-run through another connection, the store never holds a cell without its
    task: each batch of cells goes in with the snapshot of every task it names, whether the
    runner passed the tasks on (``see_task``) or a wrapping sink hid them."""
    path = tmp_path / "s.db"
    checks: list[tuple[int, int, int]] = []

    async def answer(task_input: str) -> str:
        await anyio.sleep(0.001)
        if task_input.endswith("7"):
            checks.append(await anyio.to_thread.run_sync(_orphans, path))
        return task_input

    tasks = tuple(Task(f"t{i}", input=f"q{i}", expected=f"q{i}") for i in range(400))
    suite = Suite(
        Benchmark("mid-run", tasks=tasks),
        conditions=(Condition("c", CallableProvider(answer)),),
        options=RunOptions(concurrency=8),
    )
    store = Store(path)
    try:
        prepared = store.prepare(suite)
        sink: ResultSink = _Wrapper(prepared.sink) if wrapped else prepared.sink
        runner = Runner(sinks=[sink])

        async def main() -> RunResult:
            return await runner.run(suite, run_id=prepared.run_id)

        result = anyio.run(main)
    finally:
        store.close()
    assert not result.interrupted
    assert len(checks) == 40
    assert any(cells for cells, _, _ in checks)  # some checks saw stored cells
    assert [(taskless, cellless) for _, taskless, cellless in checks] == [(0, 0)] * 40
    assert _orphans(path) == (400, 0, 0)
