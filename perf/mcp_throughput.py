"""MCP provider throughput against a real stdio server — printed, never asserted.

    python perf/mcp_throughput.py              # about half a minute
    python perf/mcp_throughput.py --cells 100  # quicker

The same arithmetic tasks, answered by the example calculator three ways, through
``benchkit.run`` at concurrency 4 with the ``exact`` evaluator:

1. mcp: the calculator served over MCP (benchmarks/mcp/calculator/server.py, stdio), one
   session for the whole run, at most 4 calls in flight;
2. subprocess: the eval-skills calculator (benchmarks/skills/calculator/skill.py), one
   process per cell — cells/s;
3. floor: the calculator's own function called in-process.

Each prints cells/s over the whole run, the time to the first finished cell (for mcp:
starting the server and initializing the session) and cells/s after that.

What the figures say: the ratio mcp/subprocess is what keeping one session per condition
buys; mcp/floor is the protocol's cost per call. Needs ``benchkit[mcp]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONCURRENCY = 4


def _suite(cells: int, provider: object):  # type: ignore[no-untyped-def]
    from benchkit import Benchmark, Condition, EvaluatorSpec, RunOptions, Suite, Task

    tasks = [
        Task(f"t{i}", input={"expression": f"{i} + {i}"}, expected={"result": str(2 * i)})
        for i in range(cells)
    ]
    return Suite(
        Benchmark("perf", tasks=tasks, evaluators=(EvaluatorSpec("exact"),)),
        conditions=(Condition("c", provider),),  # type: ignore[arg-type]
        options=RunOptions(concurrency=CONCURRENCY),
    )


def _timed(cells: int, provider: object) -> tuple[float, float, float]:
    """(cells/s, ms to the first finished cell, cells/s after it) of one run; every cell
    must pass."""
    import benchkit
    from benchkit.runner import Progress

    first: list[float] = []
    start = time.perf_counter()

    def progress(event: Progress) -> None:
        if not first:
            first.append(time.perf_counter() - start)

    result = benchkit.run(_suite(cells, provider), progress=progress, store=False)
    elapsed = time.perf_counter() - start
    failed = [c for c in result.cells if c.status != "pass"]
    if failed:
        raise SystemExit(f"{len(failed)} cells did not pass, e.g. {failed[0].error}")
    steady = (cells - 1) / (elapsed - first[0]) if elapsed > first[0] else float("inf")
    return cells / elapsed, first[0] * 1000.0, steady


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs")
    args = parser.parse_args()

    from benchkit import CallableProvider
    from benchkit.providers import McpProvider, SubprocessProvider

    sys.path.insert(0, str(REPO / "benchmarks" / "skills" / "calculator"))
    import skill  # the calculator's module, for the in-process floor

    def mcp() -> McpProvider:
        server = REPO / "benchmarks" / "mcp" / "calculator" / "server.py"
        return McpProvider(command=[sys.executable, str(server)], tool="calculate", output="json")

    def subprocess() -> SubprocessProvider:
        script = REPO / "benchmarks" / "skills" / "calculator" / "skill.py"
        return SubprocessProvider(command=[sys.executable, str(script)], memory_mb=None)

    def floor() -> CallableProvider:
        return CallableProvider(lambda data: {"result": skill.invoke(data)})

    figures: dict[str, tuple[float, float, float]] = {}
    for name, make in (("mcp", mcp), ("subprocess", subprocess), ("floor", floor)):
        runs = [_timed(args.cells, make()) for _ in range(args.repeat)]
        figures[name] = max(runs, key=lambda r: r[0])

    print(
        f"python {sys.version.split()[0]}; {args.cells} cells, concurrency {CONCURRENCY}; "
        f"best of {args.repeat}"
    )
    for name, (rate, first_ms, steady) in figures.items():
        print(
            f"{name:<11} {rate:>10,.1f} cells/s; first cell after {first_ms:>6,.0f} ms, "
            f"then {steady:>9,.1f} cells/s"
        )
    mcp, sub, flo = (figures[n] for n in ("mcp", "subprocess", "floor"))
    print(
        f"ratio       mcp/subprocess = {mcp[0] / sub[0]:.1f}x overall, "
        f"{mcp[2] / sub[2]:.1f}x after the first cell; protocol cost after start-up = "
        f"{CONCURRENCY * (1000.0 / mcp[2] - 1000.0 / flo[2]):.2f} ms per call"
    )


if __name__ == "__main__":
    main()
