"""Latency of the server's cells endpoint on a 100,000-cell run under 50 concurrent
clients — printed (p50 / p95 per query), never asserted.

    python perf/serve_cells.py                    # 100,000 cells, 50 clients, 2,000 requests
    python perf/serve_cells.py --cells 20000 --requests 500     # quicker

Steps: a run of N cells (N/2 tasks × 2 conditions, no-op provider) goes into a fresh
store; ``python -m benchkit serve`` serves it from a subprocess on 127.0.0.1 (pinned to
every CPU but the last); 50 clients (perf/http_load.py in a process of its own on the last
CPU, one keep-alive connection each) send the requests, spread over five query kinds:

* ``page``      a page of 100 cells at a random offset, benchmark order (the index);
* ``filtered``  failing cells of one condition, a random page (the status index);
* ``glob``      cells whose task id matches a glob, first page;
* ``by-score``  sorted by score, descending, first page (a sort in SQL, no index);
* ``floor``     ``GET /openapi.json`` — no store work: what HTTP and the app cost alone.

Each kind's p50 is also given as a ratio to the floor's p50 in the same run, since this VM
varies by ±30 %; the last columns are the same queries from one client alone (250
requests), i.e. the work of one request without queueing behind 49 others.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def _serving(root: Path, store: Path, cpus: set[int] | None) -> Iterator[str]:
    """``python -m benchkit serve --port 0`` as a process for the block; yields its URL."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchkit",
            "serve",
            "--port",
            "0",
            "--root",
            str(root),
            "--store",
            str(store),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if cpus:
            os.sched_setaffinity(process.pid, cpus)
        assert process.stderr is not None
        yield process.stderr.readline().split(" on ")[1].strip()
    finally:
        process.terminate()
        process.wait(30)


def _make_run(store: Path, cells: int) -> str:
    import benchkit
    from benchkit import Benchmark, Condition, EvaluatorSpec, RunOptions, Suite, Task

    class NoOp:
        async def invoke(self, request: benchkit.Request) -> benchkit.Response:
            value = int(request.task.input)
            # Condition b is wrong on every third task, so the status filter has work.
            wrong = request.condition.id == "b" and value % 3 == 0
            return benchkit.Response(output="no" if wrong else request.task.expected)

    tasks = tuple(
        Task(f"t{i:06d}", input=i, expected=str(i), tags=("even" if i % 2 == 0 else "odd",))
        for i in range(cells // 2)
    )
    suite = Suite(
        Benchmark(id="perf-cells", tasks=tasks, evaluators=(EvaluatorSpec("exact"),)),
        (Condition("a", NoOp()), Condition("b", NoOp())),
        RunOptions(concurrency=100),
    )
    result = benchkit.run(suite, store=store)
    return result.run_id


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _plan(run_id: str, cells: int, requests: int) -> tuple[list[str], list[str]]:
    """The requests' targets, and the kind of each, in a shuffled order."""
    from urllib.parse import urlencode

    kinds = ["page", "filtered", "glob", "by-score", "floor"]
    plan = [kinds[i % len(kinds)] for i in range(requests)]
    random.Random(7).shuffle(plan)
    rng = random.Random(11)
    base = f"/api/runs/{run_id}/cells"

    def target(kind: str) -> str:
        if kind == "page":
            query = {"offset": str(rng.randrange(0, cells - 100)), "limit": "100"}
        elif kind == "filtered":
            query = {"condition": "b", "status": "fail", "offset": str(rng.randrange(0, 16000))}
        elif kind == "glob":
            query = {"task": f"t0{rng.randrange(0, 5)}{rng.randrange(0, 10)}1*"}
        elif kind == "by-score":
            query = {"sort": "score", "order": "desc"}
        else:
            return "/openapi.json"
        return f"{base}?{urlencode(query)}"

    return [target(kind) for kind in plan], plan


def _drive(
    url: str, run_id: str, cells: int, clients: int, requests: int, work: Path, cpu: int | None
) -> dict[str, list[float]]:
    """Latencies (ms) by kind, from perf/http_load.py in a process of its own."""
    import json

    targets, kinds = _plan(run_id, cells, requests)
    (work / "paths.json").write_text(json.dumps(targets), encoding="utf-8")
    command = [sys.executable, str(Path(__file__).resolve().parent / "http_load.py")]
    command += ["--url", url, "--paths", str(work / "paths.json"), "--clients", str(clients)]
    command += ["--requests", str(requests), "--seconds", "3600"]
    if cpu is not None:
        command += ["--cpu", str(cpu)]
    found = json.loads(subprocess.run(command, check=True, capture_output=True).stdout)
    times: dict[str, list[float]] = {kind: [] for kind in dict.fromkeys(kinds)}
    for ms, index in zip(found["times"], found["which"], strict=True):
        times[kinds[index]].append(ms)
    return times


def main() -> None:
    import httpx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    client_cpu = cpus[-1] if len(cpus) > 1 else None
    server_cpus = set(cpus[:-1]) if len(cpus) > 1 else None
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store.db"
        start = time.perf_counter()
        run_id = _make_run(store, args.cells)
        print(f"run {run_id}: {args.cells} cells stored in {time.perf_counter() - start:.1f} s")
        with _serving(Path(tmp), store, server_cpus) as url:
            detail = []
            for _ in range(2):  # the run page, twice (read from the run's stored outcome)
                start = time.perf_counter()
                httpx.get(f"{url}/api/runs/{run_id}", timeout=300).raise_for_status()
                detail.append((time.perf_counter() - start) * 1000)
            print(f"GET /api/runs/{{id}}: first {detail[0]:.0f} ms, again {detail[1]:.1f} ms")
            work = Path(tmp)
            _drive(url, run_id, args.cells, args.clients, 50, work, client_cpu)  # warm up
            alone = _drive(url, run_id, args.cells, 1, 250, work, client_cpu)
            start = time.perf_counter()
            times = _drive(url, run_id, args.cells, args.clients, args.requests, work, client_cpu)
            wall = time.perf_counter() - start
    floor = statistics.median(times["floor"])
    print(
        f"python {sys.version.split()[0]}; {args.clients} clients, {args.requests} requests "
        f"in {wall:.1f} s ({args.requests / wall:.0f} req/s)"
    )
    print(
        f"{'query':<10} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'p50 / floor':>12}"
        f" {'1 client p50':>13} {'p95':>6}"
    )
    for kind, values in times.items():
        p50, p95 = _percentile(values, 0.5), _percentile(values, 0.95)
        one, one95 = _percentile(alone[kind], 0.5), _percentile(alone[kind], 0.95)
        print(
            f"{kind:<10} {len(values):>5} {p50:>8.1f} {p95:>8.1f} {p50 / floor:>12.2f}"
            f" {one:>13.1f} {one95:>6.1f}"
        )


if __name__ == "__main__":
    main()
