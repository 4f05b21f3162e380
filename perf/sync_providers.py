"""Sync (blocking) providers: cells/s of ``def system(x): time.sleep(0.02)`` — printed.

    python perf/sync_providers.py            # 2,000 cells at concurrency 50

A sync function runs in a worker thread by default, so at concurrency C a provider that
blocks for L seconds gives up to C/L cells/s (2,500 here). The ratio is to that ideal, in
the same run; ``thread=False`` (the function called on the event loop) is shown for
comparison: it serialises the run at 1/L cells/s.
"""

from __future__ import annotations

import argparse
import time

import benchkit
from benchkit import Benchmark, Condition, EvaluatorSpec, RunOptions, Suite, Task

DELAY = 0.02


def system(x: int) -> str:
    time.sleep(DELAY)
    return str(x)


def figure(cells: int, concurrency: int, *, thread: bool) -> float:
    tasks = tuple(Task(f"t{i}", input=i, expected=str(i)) for i in range(cells))
    suite = Suite(
        Benchmark("sync", tasks=tasks, evaluators=(EvaluatorSpec("exact"),)),
        conditions=(Condition("s", benchkit.CallableProvider(system, thread=thread)),),
        options=RunOptions(concurrency=concurrency),
    )
    t0 = time.perf_counter()
    result = benchkit.run(suite)
    elapsed = time.perf_counter() - t0
    assert result.aggregate("s").passed == cells
    return cells / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    args = parser.parse_args()
    ideal = args.concurrency / DELAY
    threaded = max(figure(args.cells, args.concurrency, thread=True) for _ in range(3))
    on_loop = figure(max(50, args.cells // 40), args.concurrency, thread=False)
    print(f"sync sleep {DELAY * 1000:.0f} ms, concurrency {args.concurrency}; best of 3")
    print(
        f"threads      {args.cells} cells  {threaded:8,.0f} cells/s  ({threaded / ideal:.2f} of C/L)"
    )
    print(f"thread=False            {on_loop:8,.0f} cells/s  ({on_loop / ideal:.3f} of C/L)")


if __name__ == "__main__":
    main()
