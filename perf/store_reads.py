"""Reading the run store: ``Store.load``, ``Store.compare`` and paged reads — printed, never
asserted.

    python perf/store_reads.py                  # two runs of 100,000 cells (a minute or two)
    python perf/store_reads.py --cells 20000    # quicker

The store is built once per invocation in a temporary directory: two runs of the same
benchmark (``--cells`` one-cell tasks, no-op provider, ``exact`` evaluator; the second run
answers every third task wrongly, so the comparison has flips) written through
``Store.prepare(...).sink`` by a ``Runner``. Then, each the best of ``--repeat``:

1. ``load``: ``Store.load(run)`` — µs a cell (JSON parsing, structuring, sorting and the
   aggregates recomputed);
2. ``compare``: ``Store.compare(run_a, run_b)`` — seconds (what ``runs compare`` does);
3. ``summary``: ``Store.summary(run)`` — ms (what ``runs show`` reads);
4. ``page``: ``Store.cells(run, offset=n/2, limit=50)`` — ms (one page from the middle);
5. ``outline``: ``Store.load(run, cells=False)`` — ms (the aggregates a finished run stored;
   skipped by a benchkit without it);
6. ``show``: ``python -m benchkit runs show RUN`` in a subprocess (table format) — its
   wall time and its process CPU, interpreter start and imports included; ``show (floor)``
   is ``python -m benchkit runs list`` on the same store, which reads no run;
7. ``json.loads`` of every stored cell alone — µs a cell; ``load floor`` is the SQL fetch
   of the run's cells and their ``json.loads`` together (issue #30: ``load`` <= 1.3× it),
   and ``GC paused`` the same with the cyclic garbage collector paused, as ``load``
   decodes (printed so ``load`` can be read against both);
8. ``compare floor``: the SQL fetch of what a comparison needs of both runs (ids, epoch,
   status, score columns) and the pairing of the two runs' cells by task, condition and
   epoch in a dict — what any comparison does before its statistics (issue #30:
   ``compare`` <= 2× it).

Run it with ``PYTHONPATH`` pointing at another tree's ``src`` to measure that tree (the
store is built by the benchkit measured).

Targets (issue #20): ``load`` <= 10 µs a cell, or reads that do not depend on the run's
size; ``compare`` of two 100,000-cell runs < 1 s.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _suite(cells: int, wrong_every: int = 0):  # type: ignore[no-untyped-def]
    import benchkit
    from benchkit import Benchmark, Condition, EvaluatorSpec, LazyTasks, RunOptions, Suite, Task

    class System:
        async def invoke(self, request: benchkit.Request) -> benchkit.Response:
            index = int(request.task.input)
            wrong = wrong_every and index % wrong_every == 0
            return benchkit.Response(output="no" if wrong else request.task.expected)

    def tasks():  # type: ignore[no-untyped-def]
        for i in range(cells):
            yield Task(f"t{i}", input=i, expected=str(i))

    return Suite(
        Benchmark("perf", tasks=LazyTasks(tasks, count=cells), evaluators=[EvaluatorSpec("exact")]),
        conditions=[Condition("c", System())],
        options=RunOptions(concurrency=100),
    )


def _store_run(store: Any, cells: int, wrong_every: int) -> str:
    import anyio

    from benchkit import Runner

    suite = _suite(cells, wrong_every)
    prepared = store.prepare(suite)
    runner = Runner(sinks=[prepared.sink])
    anyio.run(functools.partial(runner.run, suite, run_id=prepared.run_id))
    run_id: str = prepared.run_id
    return run_id


def _best(repeat: int, call: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
    return best


def _best_process(repeat: int, args: list[str]) -> tuple[float, float]:
    """The best wall time and the best process CPU (user + system) of a command."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, env=dict(os.environ))
        wall = min(wall, time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        cpu = min(cpu, used)
    return wall, cpu


def _load_floor(db: sqlite3.Connection, run_id: str) -> list[Any]:
    loads = json.loads
    return [loads(r) for (r,) in db.execute("SELECT data FROM cells WHERE run_id = ?", (run_id,))]


def _load_floor_paused(db: sqlite3.Connection, run_id: str) -> list[Any]:
    """The load floor with the cyclic GC paused, as ``Store.load`` decodes (not the
    issue's floor: printed so the ratio can be read against both)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _load_floor(db, run_id)
    finally:
        if enabled:
            gc.enable()


def _compare_floor(db: sqlite3.Connection, run_a: str, run_b: str) -> int:
    sql = "SELECT task_id, condition_id, epoch, status, score FROM cells WHERE run_id = ?"
    first = {(t, c, e): (s, v) for t, c, e, s, v in db.execute(sql, (run_a,))}
    pairs = [(first.get((t, c, e)), (s, v)) for t, c, e, s, v in db.execute(sql, (run_b,))]
    return len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from benchkit.store import Store

    n = args.cells
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "benchkit.db"
        with Store(path) as store:
            run_a = _store_run(store, n, 0)
            run_b = _store_run(store, n, 3)
        with Store(path) as store:
            load = _best(args.repeat, lambda: store.load(run_a))
            compare = _best(args.repeat, lambda: store.compare(run_a, run_b))
            summary = _best(args.repeat, lambda: store.summary(run_a))
            page_call = getattr(store, "cells", None)
            page = (
                _best(args.repeat, lambda: page_call(run_a, offset=n // 2, limit=50))
                if page_call is not None
                else None
            )
            outline = None
            try:
                store.load(run_a, cells=False)
            except TypeError:  # a benchkit before schema 3
                pass
            else:
                outline = _best(args.repeat, lambda: store.load(run_a, cells=False))
        cli = [sys.executable, "-m", "benchkit"]
        show = _best_process(args.repeat, [*cli, "runs", "show", run_a, "--store", str(path)])
        floor = _best_process(args.repeat, [*cli, "runs", "list", "--store", str(path)])
        with sqlite3.connect(path) as db:
            rows = [r[0] for r in db.execute("SELECT data FROM cells WHERE run_id = ?", (run_a,))]
            parse = _best(args.repeat, lambda: [json.loads(r) for r in rows])
            load_floor = _best(args.repeat, lambda: _load_floor(db, run_a))
            paused_floor = _best(args.repeat, lambda: _load_floor_paused(db, run_a))
            compare_floor = _best(args.repeat, lambda: _compare_floor(db, run_a, run_b))
    print(f"python {sys.version.split()[0]}; two runs of {n} cells; best of {args.repeat}")
    print(f"load        {load / n * 1e6:7.2f} µs/cell  ({load:.2f} s; target <= 10 µs/cell)")
    print(f"compare     {compare:7.2f} s       (two runs; target < 1 s at 100,000 cells)")
    print(f"summary     {summary * 1e3:7.2f} ms")
    if page is not None:
        print(f"page        {page * 1e3:7.2f} ms       (50 cells from the middle)")
    if outline is not None:
        print(f"outline     {outline * 1e3:7.2f} ms       (Store.load(run, cells=False))")
    print(f"show        {show[0]:7.2f} s wall, {show[1]:.2f} s CPU  (runs show RUN, a process)")
    print(f"show floor  {floor[0]:7.2f} s wall, {floor[1]:.2f} s CPU  (runs list, same store)")
    print(f"json.loads  {parse / n * 1e6:7.2f} µs/cell  (the floor under load)")
    print(
        f"load floor  {load_floor / n * 1e6:7.2f} µs/cell  (SQL fetch + json.loads);"
        f" load = {load / load_floor:.2f}x it (target <= 1.3)"
    )
    print(
        f"  GC paused {paused_floor / n * 1e6:7.2f} µs/cell  (the same with the cyclic GC paused,"
        f" as load decodes); load = {load / paused_floor:.2f}x it"
    )
    print(
        f"compare floor {compare_floor:5.2f} s       (fetch both runs' columns, pair them);"
        f" compare = {compare / compare_floor:.2f}x it (target <= 2)"
    )


if __name__ == "__main__":
    main()
