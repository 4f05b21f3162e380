"""Ray executor: latency-bound throughput, the driver's ceiling, CPU-bound scaling — printed.

    python perf/ray_scaling.py                          # every part, a few minutes on 2 cores
    python perf/ray_scaling.py --part latency --part noop

Starts a local Ray instance with 2 CPUs (no dashboard) and measures (figures printed, never
asserted; recorded in perf/RESULTS.md):

1. latency: N cells (default 2,000) whose provider waits 50 ms (an async sleep: a remote
   API), at a total concurrency of 100 — in-process, then on Ray with 2 workers (50 cells
   at once each, the default share). Ray's start-up (actors started and providers built,
   up to the first finished cell) is reported apart; "steady" is the rate between the
   first and the last finished cell, and the ratio Ray / in-process is taken on it
   (target >= 0.9x);
2. noop: M no-op cells (the provider returns the expected answer; ``exact``) with the run
   store on, in-process and on Ray with 1 and 2 workers at a total concurrency of 100 —
   cells/s and the driver's CPU per cell (this process, Ray's own threads in it included).
   The driver's ceiling is 1 / (its CPU per cell): the model in docs/scale-out.md;
3. cpu: N cells whose verifier burns ~50 ms of CPU each (a registered verifier, so it
   is built on the worker like a command verifier), in-process, then on Ray with 1 and 2
   workers — the speed-up of 2 workers over 1 (target >= 1.7x on 2 cores), beside the same
   CPU work split over 1 and 2 plain processes (the floor: the speed-up the machine allows
   at that moment), in rounds run back to back.

Each Ray run creates its actors afresh.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

import benchkit
from benchkit import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    Suite,
    Task,
    VerifierSpec,
)
from benchkit.registry import default_registries


class BurnVerifier:
    """Burns ``ms`` milliseconds of this process's CPU, then passes."""

    def __init__(self, ms: float = 50.0) -> None:
        self.seconds = ms / 1000.0

    async def verify(self, task: Any, response: Any, context: Any) -> benchkit.Verdict:
        deadline = time.process_time() + self.seconds
        spins = 0
        while time.process_time() < deadline:
            spins += 1
        return benchkit.Verdict(name="burn", passed=spins >= 0)


def echo(text: str) -> str:
    return text


async def wait50(text: str) -> str:
    """A remote API answering in 50 ms."""
    await asyncio.sleep(0.05)
    return text


def _burn_cells(cells: int, ms: float) -> None:
    for _ in range(cells):
        deadline = time.process_time() + ms / 1000.0
        while time.process_time() < deadline:
            pass


def floor(cells: int, ms: float, procs: int) -> float:
    """Wall time of the same CPU work split over ``procs`` plain processes (no Ray)."""
    import multiprocessing

    share = [cells // procs + (1 if i < cells % procs else 0) for i in range(procs)]
    with multiprocessing.get_context("spawn").Pool(procs) as pool:
        pool.apply(time.sleep, (0,))  # started before timing
        t0 = time.perf_counter()
        pool.starmap(_burn_cells, [(k, ms) for k in share])
        return time.perf_counter() - t0


def suite(cells: int, *, burn_ms: float | None = None, wait: bool = False) -> Suite:
    verifiers = [VerifierSpec("burn", {"ms": burn_ms})] if burn_ms is not None else []
    return Suite(
        Benchmark(
            "ray-perf",
            tasks=[Task(f"t{i}", input=str(i), expected=str(i)) for i in range(cells)],
            evaluators=[EvaluatorSpec("exact")],
            verifiers=verifiers,
        ),
        conditions=[Condition("c", benchkit.CallableProvider(wait50 if wait else echo))],
        # CPU-bound: one cell at a time per worker, two workers at most (the burn blocks
        # the event loop it runs on, so in-process runs one at a time whatever the figure).
        options=benchkit.RunOptions(concurrency=2, concurrency_per_worker=1)
        if burn_ms is not None
        else benchkit.RunOptions(concurrency=100),
    )


def timed(
    s: Suite, executor: Any, *, store: Path | None = None
) -> tuple[float, float, float, float]:
    """(wall s, startup s to the first cell, steady cells/s between first and last cell,
    the driver's CPU seconds — this process, Ray's own threads in it included)."""
    registries = default_registries().copy()
    registries.verifiers.add("burn", BurnVerifier)
    stamps: list[float] = []
    sinks: list[Any] = []
    opened = None
    run_id = None
    if store is not None:
        opened = benchkit.Store(store)
        prepared = opened.prepare(s, registries=registries)
        sinks.append(prepared.sink)
        run_id = prepared.run_id
    runner = benchkit.Runner(
        sinks=sinks,
        registries=registries,
        executor=executor,
        progress=lambda p: stamps.append(time.perf_counter()),
    )
    t0, c0 = time.perf_counter(), time.process_time()
    result = anyio.run(lambda: runner.run(s, run_id=run_id))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if opened is not None:
        opened.close()
    assert all(c.status == "pass" for c in result.cells), result.cells[0]
    steady = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    return wall, stamps[0] - t0, steady, cpu


def latency(n: int) -> None:
    work = suite(n, wait=True)
    timed(suite(100, wait=True), benchkit.RayExecutor(workers=2))  # warm caches, imports
    ideal = 100 / 0.05
    for _ in range(2):
        wall, start, local, _ = timed(work, None)
        print(
            f"latency       {n} cells × 50 ms, concurrency 100: in-process  wall {wall:5.2f} s"
            f"  steady {local:7.0f} cells/s ({local / ideal:.2f} of 100 / 50 ms)"
        )
        wall, start, ray, _ = timed(work, benchkit.RayExecutor(workers=2))
        print(
            f"latency       {n} cells × 50 ms, concurrency 100: ray 2 × 50   wall {wall:5.2f} s"
            f"  steady {ray:7.0f} cells/s; start-up {start:.2f} s apart"
            f"  -> ray / in-process {ray / local:.2f}x steady (target >= 0.9x)"
        )


def round_trips() -> list[int]:
    """Count the Ray executor's round trips from now on (cells sent in each)."""
    from benchkit.executors import _ray

    sizes: list[int] = []
    exchange = _ray._Feeder._exchange

    async def counted(self: Any, batch: list[Any]) -> bool:
        sizes.append(len(batch))
        return await exchange(self, batch)

    _ray._Feeder._exchange = counted  # type: ignore[method-assign]
    return sizes


def noop(m: int) -> None:
    sizes = round_trips()
    with tempfile.TemporaryDirectory() as tmp:
        _, _, steady, used = timed(suite(m), None, store=Path(tmp) / "a.db")
        print(
            f"noop          {m} cells, store on: in-process                 {steady:7.0f} cells/s"
            f" steady  driver CPU {used / m * 1000:.3f} ms/cell"
        )
        for concurrency in (100, 10):
            work = suite(m).with_options(concurrency=concurrency)
            for workers in (1, 2):
                ex = benchkit.RayExecutor(workers=workers)
                sizes.clear()
                db = Path(tmp) / f"r{workers}-{concurrency}.db"
                _, start, steady, used = timed(work, ex, store=db)
                per_cell = used / m
                print(
                    f"noop          {m} cells, store on: ray {workers} worker{'s' if workers > 1 else ' '}"
                    f", concurrency {concurrency:3}  {steady:7.0f} cells/s steady  driver CPU "
                    f"{per_cell * 1000:.3f} ms/cell (ceiling 1 / that = {1 / per_cell:6.0f} "
                    f"cells/s); {m / len(sizes):5.1f} cells a round trip; start-up {start:.2f} s"
                )


def cpu(n: int, ms: float, rounds_wanted: int) -> None:
    work = suite(n, burn_ms=ms)
    timed(suite(4, burn_ms=ms), benchkit.RayExecutor(workers=2))  # warm caches, imports
    local = timed(work, None)[0]
    print(f"cpu-bound     {n} cells × {ms:g} ms CPU: in-process   wall {local:6.2f} s")
    # Rounds of (1 worker, 2 workers, floor 1, floor 2) back to back, so each ratio compares
    # runs made under the same load; the median round is the figure.
    rounds = []
    for r in range(rounds_wanted):
        one = timed(work, benchkit.RayExecutor(workers=1))
        two = timed(work, benchkit.RayExecutor(workers=2))
        floors = {procs: floor(n, ms, procs) for procs in (1, 2)}
        wall_ratio, steady_ratio = one[0] / two[0], two[2] / one[2]
        rounds.append((steady_ratio, wall_ratio, floors[1] / floors[2]))
        print(
            f"round {r + 1}       ray 1 worker wall {one[0]:5.2f} s (steady {one[2]:5.1f} cells/s), "
            f"2 workers {two[0]:5.2f} s ({two[2]:5.1f} cells/s; startup {two[1]:.2f} s): "
            f"{wall_ratio:.2f}x wall, {steady_ratio:.2f}x steady; floor {floors[1]:.2f} s / "
            f"{floors[2]:.2f} s = {floors[1] / floors[2]:.2f}x"
        )
    steady_ratio, wall_ratio, floor_ratio = sorted(rounds)[len(rounds) // 2]
    print(
        f"speed-up      ray 2 workers over 1 (median round): {steady_ratio:.2f}x steady, "
        f"{wall_ratio:.2f}x wall (target >= 1.7x; 2.00x ideal); the same work in plain "
        f"processes {floor_ratio:.2f}x (what the machine gave then)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--part", action="append", choices=("latency", "noop", "cpu"), help="default: all"
    )
    parser.add_argument("--latency", type=int, default=2000, help="latency-bound cells")
    parser.add_argument("--noop", type=int, default=10000, help="no-op cells")
    parser.add_argument("--cells", type=int, default=80, help="CPU-bound cells")
    parser.add_argument("--burn-ms", type=float, default=50.0)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the CPU-bound runs")
    args = parser.parse_args()
    parts = args.part or ["latency", "noop", "cpu"]

    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level="warning")
    print(f"python {sys.version.split()[0]} on {os.cpu_count()} cores; ray {ray.__version__}")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if "latency" in parts:
        latency(args.latency)
    if "noop" in parts:
        noop(args.noop)
    if "cpu" in parts:
        cpu(args.cells, args.burn_ms, args.rounds)
    ray.shutdown()


if __name__ == "__main__":
    main()
