"""Runner throughput, latency-bound wall time and peak memory — printed, never asserted.

    python perf/runner_throughput.py            # all five figures (about a minute)
    python perf/runner_throughput.py --cells 5000 --rss-cells 50000   # quicker

Each figure runs in a fresh subprocess so peak RSS and warm caches do not leak between them:

1. engine: N cells (no-op provider, ``exact`` evaluator, concurrency 100, every cell to a
   JSONL sink) through ``benchkit.Runner`` — cells/s;
2. engine + store: the same run with the run store's sink instead (every cell committed to
   an SQLite store by the writer thread; the time includes opening the run and draining
   the queue at the end) — cells/s; and, apart, the one pass over the tasks that computes
   the resume keys (``Store.prepare``);
3. floor: the same work in a bare asyncio loop (100 workers pulling from one iterator, an
   awaited no-op call, a string comparison, a JSON line written and flushed) — cells/s,
   and the engine's overhead per cell over it;
4. latency-bound: 2,000 cells whose provider sleeps 50 ms at concurrency 100, against the
   ideal N·L/C — without a sink, and with the run store on;
5. memory: peak RSS of a 200,000-cell run (no sink, results kept in memory), and the same
   run with the run store on (``Store.prepare`` — the keys pass — and its sink).

``--store-cost`` prints only the store's figures (issues #30, #41): its cost a cell as the
store run's process CPU minus the no-sink run's, against its floor — everything a run
stores written the cheapest way, in one thread: the cells and the task snapshot (a store
that keeps the tasks is the product, #41) encoded and inserted in batches — the
latency-bound pair, and the store's own CPU priced directly (its methods on the event loop
and its writer thread, ``store-own``).

Targets (see perf/RESULTS.md): overhead <= 0.05 ms/cell (>= 20,000 cells/s) with the JSONL
sink and with the store (issue #20: engine + store <= 0.02 ms/cell), latency-bound within 5 %
of N·L/C, peak RSS < 200 MB at 200,000 cells, with the store on too.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CONCURRENCY = 100


def _suite(cells: int, *, delay: float = 0.0, tasks_per_epoch: int | None = None):  # type: ignore[no-untyped-def]
    import benchkit
    from benchkit import Benchmark, Condition, EvaluatorSpec, LazyTasks, RunOptions, Suite, Task

    class NoOp:
        async def invoke(self, request: benchkit.Request) -> benchkit.Response:
            return benchkit.Response(output=request.task.expected)

    class Sleeper:
        # asyncio.sleep, not anyio.sleep: the figure is the engine's overhead, and anyio's
        # own sleep adds about 15 µs per call on asyncio (the floor below shows both).
        async def invoke(self, request: benchkit.Request) -> benchkit.Response:
            await asyncio.sleep(delay)
            return benchkit.Response(output=request.task.expected)

    def tasks():  # type: ignore[no-untyped-def]
        for i in range(cells):
            yield Task(f"t{i}", input=i, expected=str(i))

    return Suite(
        Benchmark("perf", tasks=LazyTasks(tasks, count=cells), evaluators=[EvaluatorSpec("exact")]),
        conditions=[Condition("c", Sleeper() if delay else NoOp())],
        options=RunOptions(concurrency=CONCURRENCY),
    )


def _warm_up() -> None:
    """One tiny run first, so imports and registry look-ups are not timed."""
    import anyio

    from benchkit import Runner

    anyio.run(Runner().run, _suite(10))


def part_engine(cells: int) -> dict[str, float]:
    import anyio

    from benchkit import JsonlSink, Runner

    _warm_up()
    suite = _suite(cells)
    with tempfile.TemporaryDirectory() as tmp:
        runner = Runner(sinks=[JsonlSink(Path(tmp) / "cells.jsonl")])
        t0 = time.perf_counter()
        cpu = time.process_time()
        result = anyio.run(runner.run, suite)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu
    assert len(result.cells) == cells and result.aggregate("c").passed == cells
    return {
        "cells": cells,
        "wall_s": wall,
        "cells_per_s": cells / wall,
        "cpu_ms_per_cell": cpu * 1000 / cells,
    }


def part_store(cells: int) -> dict[str, float]:
    import functools

    import anyio

    from benchkit import Runner
    from benchkit.store import Store

    _warm_up()
    suite = _suite(cells)
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "benchkit.db") as store:
        t0 = time.perf_counter()
        prepared = store.prepare(suite)
        t1 = time.perf_counter()
        runner = Runner(sinks=[prepared.sink])
        cpu = time.process_time()
        result = anyio.run(functools.partial(runner.run, suite, run_id=prepared.run_id))
        wall = time.perf_counter() - t1
        cpu = time.process_time() - cpu
        stored = store.summary(prepared.run_id).cells
    assert len(result.cells) == cells and stored == cells
    return {
        "cells": cells,
        "wall_s": wall,
        "cells_per_s": cells / wall,
        "prepare_s": t1 - t0,
        "cpu_ms_per_cell": cpu * 1000 / cells,
    }


def part_bare(cells: int) -> dict[str, float]:
    """The engine with no sink at all: what the store's cost is measured over."""
    import anyio

    from benchkit import Runner

    _warm_up()
    suite = _suite(cells)
    t0 = time.perf_counter()
    cpu = time.process_time()
    result = anyio.run(Runner().run, suite)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu
    assert len(result.cells) == cells
    return {"cells": cells, "wall_s": wall, "cpu_ms_per_cell": cpu * 1000 / cells}


def _store_with_run_r(db: Any, cells: int) -> Any:
    """``db`` (a fresh store) with the run ``r`` of ``cells`` cells registered, as the
    rows of :func:`_cell_rows` need."""
    db.execute(
        "INSERT INTO runs (run_id, suite_key, benchmark_id, status, started_at, "
        "updated_at, total_cells, info) VALUES ('r', 'k', 'perf', 'running', '', '', ?, '{}')",
        (cells,),
    )
    return db


def _cell_rows(cells: Any, cell_json: Any, encoder: Any) -> list[tuple[Any, ...]]:
    """The rows the store writes for ``cells`` (run ``r``, a constant key): the floor's
    work, and what ``_writer_alone`` inserts."""
    key = "0" * 32
    return [
        (
            "r",
            c.task_id,
            c.condition_id,
            c.epoch,
            c.index,
            c.status,
            key,
            cell_json(c, encoder),
            "null" if c.score is None else repr(float(c.score)),
        )
        for c in cells
    ]


def part_store_floor(cells: int) -> dict[str, float]:
    """The store's floor: everything a run stores, written the cheapest way in one thread.
    The run's cells (made first, not timed) encoded to the JSON the store keeps and
    inserted, in batches of 1,024 rows (``executemany``, a transaction a batch), into the
    cells table of a fresh store (the same schema and indexes); then what the store keeps
    of each task (the tasks made first, as the run made them), encoded and inserted the
    same way — the task snapshot is part of what the store is for (#41)."""
    import anyio

    from benchkit import Runner
    from benchkit._celljson import cell_json
    from benchkit.store._records import ENCODER
    from benchkit.store._schema import connect
    from benchkit.store._story import task_rows

    _warm_up()
    suite = _suite(cells)
    made = anyio.run(Runner().run, suite).cells
    tasks_made = list(enumerate(suite.benchmark.iter_tasks()))
    with tempfile.TemporaryDirectory() as tmp:
        db = _store_with_run_r(connect(Path(tmp) / "floor.db", timeout=30), cells)
        sql = (
            "INSERT INTO cells (run_id, task_id, condition_id, epoch, position, status, "
            "cell_key, data, score) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        t0 = time.perf_counter()
        cpu = time.process_time()
        for start in range(0, len(made), 1024):
            rows = _cell_rows(made[start : start + 1024], cell_json, ENCODER)
            db.execute("BEGIN")
            db.executemany(sql, rows)
            db.execute("COMMIT")
        tasks = task_rows("r", tasks_made)
        while chunk := list(itertools.islice(tasks, 1024)):
            db.execute("BEGIN")
            db.executemany("INSERT INTO tasks VALUES (?, ?, ?, ?)", chunk)
            db.execute("COMMIT")
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu
        (stored,) = db.execute("SELECT COUNT(*) FROM cells").fetchone()
        db.close()
    assert stored == cells
    return {"cells": cells, "wall_s": wall, "cpu_ms_per_cell": cpu * 1000 / cells}


def part_store_own(cells: int, rounds: int) -> dict[str, float]:
    """The store's own CPU a cell, priced directly, against its floor in the same process,
    round by round: the thread CPU (``time.thread_time``) of the sink's methods on
    the event loop (``write``, ``see_task``, ``open``, ``close``) and of its writer thread
    — what the store does, without the noise of subtracting two whole runs (each of which
    wanders by a third between processes on a shared VM). What it leaves out is the
    store's indirect cost: the run's collections of a larger heap, and the caches it
    shares with the event loop (the subtracted figure carries those)."""
    import functools
    import statistics

    import anyio

    from benchkit import Runner
    from benchkit.store import Store, _writer

    clock = time.thread_time
    pair = min(_clock_pair(clock) for _ in range(5))
    spent = {"loop": 0.0, "writer": 0.0, "calls": 0.0}
    sink_type = _writer.StoreSink

    def timed(method: Any) -> Any:
        if inspect.iscoroutinefunction(method):

            async def run_async(self: Any, *args: Any) -> Any:
                t = clock()
                try:
                    return await method(self, *args)
                finally:
                    spent["loop"] += clock() - t
                    spent["calls"] += 1

            return run_async

        def run(self: Any, *args: Any) -> Any:
            t = clock()
            try:
                return method(self, *args)
            finally:
                spent["loop"] += clock() - t
                spent["calls"] += 1

        return run

    def writer(self: Any, _inner: Any = sink_type._writer) -> None:
        t = clock()
        try:
            _inner(self)
        finally:
            spent["writer"] += clock() - t

    for name in ("open", "write", "close", "see_task"):
        if hasattr(sink_type, name):
            setattr(sink_type, name, timed(getattr(sink_type, name)))
    sink_type._writer = writer  # type: ignore[method-assign]
    _warm_up()
    own: list[float] = []
    writers: list[float] = []
    alone: list[float] = []
    floors: list[float] = []
    for _ in range(rounds):
        for key in spent:
            spent[key] = 0.0
        suite = _suite(cells)
        with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "benchkit.db") as store:
            prepared = store.prepare(suite)
            runner = Runner(sinks=[prepared.sink])
            made = anyio.run(functools.partial(runner.run, suite, run_id=prepared.run_id))
        own.append((spent["loop"] + spent["writer"] - spent["calls"] * pair) * 1000 / cells)
        writers.append(spent["writer"] * 1000 / cells)
        alone.append(_writer_alone(made.cells, suite) * 1000 / cells)
        floors.append(part_store_floor(cells)["cpu_ms_per_cell"])
    ratios = [o / f for o, f in zip(own, floors, strict=True)]
    return {
        "cells": cells,
        "own_ms_per_cell": statistics.median(own),
        "floor_ms_per_cell": statistics.median(floors),
        "ratio": statistics.median(ratios),
        "ratios": ratios,  # type: ignore[dict-item]
        "writer_ms_per_cell": statistics.median(writers),
        "alone_ms_per_cell": statistics.median(alone),
    }


def _writer_alone(made: Any, suite: Any) -> float:
    """The thread CPU (seconds) of the writer's statements for a run's cells and tasks,
    run alone in one thread (no event loop beside it): the snapshot's rows encoded, then
    tasks and cells inserted as the writer does, in 1,024-row transactions. Against the
    writer thread's CPU in the run, what running beside the loop costs it."""
    from benchkit._celljson import cell_json
    from benchkit.store import _writer
    from benchkit.store._records import ENCODER
    from benchkit.store._schema import connect, transaction
    from benchkit.store._story import task_rows

    rows = _cell_rows(made, cell_json, ENCODER)
    tasks = list(enumerate(suite.benchmark.iter_tasks()))
    with tempfile.TemporaryDirectory() as tmp:
        db = _store_with_run_r(connect(Path(tmp) / "alone.db", timeout=30), len(rows))
        t = time.thread_time()
        for start in range(0, max(len(rows), len(tasks)), 1024):
            snapshot = list(task_rows("r", tasks[start : start + 1024]))
            with transaction(db):
                _writer._insert(db, _writer._TASKS, snapshot)
                _writer._insert(db, _writer._CELLS, rows[start : start + 1024])
        spent = time.thread_time() - t
        db.close()
    return spent


def _clock_pair(clock: Any) -> float:
    """What two calls of ``clock`` cost (subtracted once per timed call)."""
    t = time.perf_counter()
    for _ in range(20_000):
        clock()
        clock()
    return (time.perf_counter() - t) / 20_000


def part_floor(cells: int) -> dict[str, float]:
    async def noop(expected: str) -> str:
        return expected

    async def main(path: Path) -> int:
        items = iter(range(cells))
        results: list[tuple[str, bool]] = []
        with path.open("w") as out:

            async def worker() -> None:
                for i in items:
                    expected = str(i)
                    output = await noop(expected)
                    passed = output.strip() == expected.strip()
                    results.append((f"t{i}", passed))
                    out.write(json.dumps({"task_id": f"t{i}", "passed": passed}) + "\n")
                    out.flush()

            await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return len(results)

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        done = asyncio.run(main(Path(tmp) / "floor.jsonl"))
        wall = time.perf_counter() - t0
    assert done == cells
    return {"cells": cells, "wall_s": wall, "cells_per_s": cells / wall}


def part_latency(cells: int, latency: float, store: bool = False) -> dict[str, float]:
    import functools

    import anyio

    from benchkit import Runner
    from benchkit.store import Store

    _warm_up()
    suite = _suite(cells, delay=latency)
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "benchkit.db") as db:
        prepared = db.prepare(suite) if store else None
        runner = Runner(sinks=[prepared.sink] if prepared else [])
        run_id = prepared.run_id if prepared else None
        t0 = time.perf_counter()
        anyio.run(functools.partial(runner.run, suite, run_id=run_id))
        wall = time.perf_counter() - t0
    ideal = cells * latency / CONCURRENCY

    async def bare() -> None:
        items = iter(range(cells))

        async def worker() -> None:
            for _ in items:
                await asyncio.sleep(latency)

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))

    t0 = time.perf_counter()
    asyncio.run(bare())
    floor = time.perf_counter() - t0
    return {
        "cells": cells,
        "wall_s": wall,
        "ideal_s": ideal,
        "ratio": wall / ideal,
        "floor_ratio": floor / ideal,
    }


def part_memory(cells: int) -> dict[str, float]:
    import anyio

    from benchkit import Runner

    suite = _suite(cells)
    t0 = time.perf_counter()
    result = anyio.run(Runner().run, suite)
    wall = time.perf_counter() - t0
    assert len(result.cells) == cells
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"cells": cells, "wall_s": wall, "peak_rss_mb": peak_kb / 1024}


def part_memory_store(cells: int) -> dict[str, float]:
    import functools

    import anyio

    from benchkit import Runner
    from benchkit.store import Store

    suite = _suite(cells)
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "benchkit.db") as store:
        t0 = time.perf_counter()
        prepared = store.prepare(suite)
        runner = Runner(sinks=[prepared.sink])
        result = anyio.run(functools.partial(runner.run, suite, run_id=prepared.run_id))
        wall = time.perf_counter() - t0
    assert len(result.cells) == cells
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"cells": cells, "wall_s": wall, "peak_rss_mb": peak_kb / 1024}


def _child(part: str, *args: str) -> dict[str, float]:
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parent.parent / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, __file__, "--part", part, *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    data: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20_000)
    parser.add_argument("--latency-cells", type=int, default=2_000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rss-cells", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; best is kept")
    parser.add_argument(
        "--best-of",
        type=int,
        default=1,
        help="with --store-cost: runs of each part per round (the least CPU, or for the"
        " latency-bound parts the least wall time, is kept)",
    )
    parser.add_argument("--part", help=argparse.SUPPRESS)
    parser.add_argument(
        "--store-cost",
        action="store_true",
        help="only the store's figures (issue #30), alternated round by round",
    )
    args = parser.parse_args()

    if args.part:
        parts = {
            "engine": lambda: part_engine(args.cells),
            "store": lambda: part_store(args.cells),
            "floor": lambda: part_floor(args.cells),
            "bare": lambda: part_bare(args.cells),
            "store-floor": lambda: part_store_floor(args.cells),
            "store-own": lambda: part_store_own(args.cells, args.repeat),
            "latency": lambda: part_latency(args.latency_cells, args.latency),
            "latency-store": lambda: part_latency(args.latency_cells, args.latency, store=True),
            "memory": lambda: part_memory(args.rss_cells),
            "memory-store": lambda: part_memory_store(args.rss_cells),
        }
        print(json.dumps(parts[args.part]()))
        return

    if args.store_cost:
        store_cost(args)
        return
    cells = ["--cells", str(args.cells)]
    engine = max(
        (_child("engine", *cells) for _ in range(args.repeat)), key=lambda r: r["cells_per_s"]
    )
    store = max(
        (_child("store", *cells) for _ in range(args.repeat)), key=lambda r: r["cells_per_s"]
    )
    floor = max(
        (_child("floor", *cells) for _ in range(args.repeat)), key=lambda r: r["cells_per_s"]
    )
    latency = min(
        (
            _child(
                "latency",
                "--latency-cells",
                str(args.latency_cells),
                "--latency",
                str(args.latency),
            )
            for _ in range(args.repeat)
        ),
        key=lambda r: r["ratio"],
    )
    latency_store = min(
        (
            _child(
                "latency-store",
                "--latency-cells",
                str(args.latency_cells),
                "--latency",
                str(args.latency),
            )
            for _ in range(args.repeat)
        ),
        key=lambda r: r["ratio"],
    )
    memory = _child("memory", "--rss-cells", str(args.rss_cells))
    memory_store = _child("memory-store", "--rss-cells", str(args.rss_cells))

    overhead_ms = (1 / engine["cells_per_s"] - 1 / floor["cells_per_s"]) * 1000
    print(f"python {sys.version.split()[0]} on {os.cpu_count()} cores; best of {args.repeat}")
    print(
        f"engine      {args.cells:>7} cells  {engine['cells_per_s']:>9,.0f} cells/s"
        f"  ({1000 / engine['cells_per_s']:.4f} ms/cell, JSONL sink on)"
    )
    print(
        f"store       {args.cells:>7} cells  {store['cells_per_s']:>9,.0f} cells/s"
        f"  ({1000 / store['cells_per_s']:.4f} ms/cell, run store on; keys pass"
        f" {store['prepare_s'] * 1000:.0f} ms = {store['prepare_s'] * 1e6 / args.cells:.1f} µs/task)"
    )
    print(
        f"floor       {args.cells:>7} cells  {floor['cells_per_s']:>9,.0f} cells/s"
        f"  (bare asyncio, same work)"
    )
    store_overhead_ms = (1 / store["cells_per_s"] - 1 / floor["cells_per_s"]) * 1000
    print(
        f"ratio       engine/floor throughput = {engine['cells_per_s'] / floor['cells_per_s']:.3f};"
        f" engine overhead = {overhead_ms:.4f} ms/cell (target <= 0.05)"
    )
    print(
        f"ratio       store/floor throughput = {store['cells_per_s'] / floor['cells_per_s']:.3f};"
        f" engine + store overhead = {store_overhead_ms:.4f} ms/cell (target <= 0.02)"
    )
    print(
        f"latency     {args.latency_cells:>7} cells × {args.latency * 1000:.0f} ms / {CONCURRENCY}:"
        f" wall {latency['wall_s']:.3f} s vs N·L/C {latency['ideal_s']:.3f} s"
        f" = {latency['ratio']:.3f} (target <= 1.05; bare asyncio {latency['floor_ratio']:.3f})"
    )
    print(
        f"latency     {args.latency_cells:>7} cells, run store on: wall"
        f" {latency_store['wall_s']:.3f} s = {latency_store['ratio']:.3f} of N·L/C (target <= 1.05)"
    )
    print(
        f"memory      {args.rss_cells:>7} cells  peak RSS {memory['peak_rss_mb']:.1f} MB"
        f" in {memory['wall_s']:.1f} s (target < 200 MB)"
    )
    print(
        f"memory      {args.rss_cells:>7} cells  peak RSS {memory_store['peak_rss_mb']:.1f} MB"
        f" in {memory_store['wall_s']:.1f} s with the run store on (target < 200 MB)"
    )


def store_cost(args: argparse.Namespace) -> None:
    """The store's cost per cell against its floor, and a latency-bound run with the store
    against the same run without it: each round runs every part (``--best-of`` times), in
    turn, so a change in the machine's load falls on all of them; the ratios are per
    round, of the least disturbed run of each part."""
    import statistics

    cells = ["--cells", str(args.cells)]
    latency = ["--latency-cells", str(args.latency_cells), "--latency", str(args.latency)]
    costs: list[float] = []
    walls: list[float] = []
    print(
        f"python {sys.version.split()[0]} on {os.cpu_count()} cores; {args.repeat} rounds,"
        f" each part the best of {args.best_of} in a round; load average {os.getloadavg()[0]:.2f}"
    )
    best = args.best_of
    for round_ in range(1, args.repeat + 1):
        runs: dict[str, list[dict[str, float]]] = {}
        for _ in range(best):  # each part in turn, best times: the least disturbed is kept
            for part, part_args in (
                ("bare", cells),
                ("store", cells),
                ("store-floor", cells),
                ("latency", latency),
                ("latency-store", latency),
            ):
                runs.setdefault(part, []).append(_child(part, *part_args))
        bare, store, floor = (
            min(runs[part], key=lambda r: r["cpu_ms_per_cell"])
            for part in ("bare", "store", "store-floor")
        )
        plain, stored = (
            min(runs[part], key=lambda r: r["wall_s"]) for part in ("latency", "latency-store")
        )
        cost = store["cpu_ms_per_cell"] - bare["cpu_ms_per_cell"]
        costs.append(cost / floor["cpu_ms_per_cell"])
        walls.append(stored["wall_s"] / plain["wall_s"])
        print(
            f"round {round_} (load {os.getloadavg()[0]:.2f}): store"
            f" {store['cpu_ms_per_cell'] * 1000:.1f} µs/cell - no sink"
            f" {bare['cpu_ms_per_cell'] * 1000:.1f} = {cost * 1000:.1f} µs/cell; floor (cells +"
            f" task snapshot) {floor['cpu_ms_per_cell'] * 1000:.1f} µs/cell -> {costs[-1]:.2f}x;"
            f" latency-bound {stored['wall_s']:.3f} s with the store, {plain['wall_s']:.3f} s"
            f" without -> {walls[-1]:.3f}x"
        )
    print(
        f"store per cell / floor  median {statistics.median(costs):.2f}x (target <= 1.5;"
        f" process CPU, writer thread included; the floor writes the cells and the task"
        f" snapshot)"
    )
    print(f"latency-bound store/none median {statistics.median(walls):.3f}x (target <= 1.02)")
    own = _child("store-own", *cells, "--repeat", str(max(args.repeat, 5)))
    print(
        f"store's own CPU a cell, priced directly (sink methods on the loop + writer thread),"
        f" against its floor in one process, {max(args.repeat, 5)} rounds:"
        f" {own['own_ms_per_cell'] * 1000:.1f} µs/cell; floor (cells + task snapshot)"
        f" {own['floor_ms_per_cell'] * 1000:.1f} -> median {own['ratio']:.2f}x"
        f" ({', '.join(f'{r:.2f}' for r in own['ratios'])})"  # type: ignore[attr-defined]
    )
    print(
        f"  of which the writer thread {own['writer_ms_per_cell'] * 1000:.1f} µs/cell; its"
        f" statements alone, in one thread, {own['alone_ms_per_cell'] * 1000:.1f} µs/cell"
    )


if __name__ == "__main__":
    main()
