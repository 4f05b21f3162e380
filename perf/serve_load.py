"""The server under load against a bare Starlette app serving the same bytes — printed
(throughput, p50 / p99 per route, ratio to the floor), never asserted.

    python perf/serve_load.py                          # 1,000 runs, one of 100,000 cells
    python perf/serve_load.py --runs 200 --cells 20000 --seconds 5      # quicker
    python perf/serve_load.py --keep /tmp/serve-load   # build the store once, reuse it

Issue #30's setting: a store holding a 100,000-cell run among 1,000 runs, ``python -m
benchkit serve`` in a subprocess on 127.0.0.1, 50 concurrent clients (one keep-alive
connection each) sending one route for ``--seconds``. The clients are perf/http_load.py in
a process of their own (raw asyncio streams: ~0.1 ms of CPU a request where httpx needed
~1 ms), pinned to the last CPU while the servers are pinned to the others (``--no-pin``
lets the scheduler place both; ``--client httpx`` is the old in-process httpx clients).
The floor is a one-route-per-path Starlette app under the same uvicorn, in its own
subprocess, answering each path with the bytes benchkit answered it with (fetched first),
so the ratio is what benchkit's own work costs over HTTP, routing and JSON transfer.
Routes:

* ``runs``    ``GET /api/runs`` (the explorer's first screen: the newest 50 runs);
* ``run``     ``GET /api/runs/{id}`` of the 100,000-cell run (its page);
* ``cells``   a page of 100 cells of that run at a random offset;
* ``search``  ``GET /api/search?q=...`` (full-text search over outputs), one of 97 words:
  after the first ask of each, answers kept until the store changes;
* ``search-new`` a word and a number, different at each request (a first-time query
  each: what the index and the ranking cost), not among the default routes.

Rounds alternate benchkit and the floor (``--rounds``, default 3) and the medians are
printed, with the ratio benchkit / floor of throughput pair by pair, each side's CPU per
request (the server's from /proc, the clients' from their own rusage) and the load
average at the start of each round.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROUTES = "runs,run,cells,search,search-new"

FLOOR_APP = """
import json
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

bodies = json.load(open("floor_bodies.json"))

async def answer(request):
    return Response(bodies[request.url.path], media_type="application/json")

app = Starlette(routes=[Route(path, answer) for path in bodies])
"""


@contextmanager
def _process(args: list[str], cwd: Path, cpus: set[int] | None) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(args, cwd=cwd, stderr=subprocess.PIPE, text=True)
    try:
        if cpus:  # before it starts any thread: they inherit it
            os.sched_setaffinity(process.pid, cpus)
        yield process
    finally:
        process.terminate()
        process.wait(30)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of process ``pid`` (every thread) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def _benchkit(root: Path, store: Path, cpus: set[int] | None) -> Iterator[tuple[str, int]]:
    args = [sys.executable, "-m", "benchkit", "serve", "--port", "0"]
    with _process([*args, "--root", str(root), "--store", str(store)], root, cpus) as process:
        assert process.stderr is not None
        yield process.stderr.readline().split(" on ")[1].strip(), process.pid


@contextmanager
def _floor(
    root: Path, bodies: dict[str, str], port: int, cpus: set[int] | None
) -> Iterator[tuple[str, int]]:
    import json

    import httpx

    (root / "floor_app.py").write_text(textwrap.dedent(FLOOR_APP), encoding="utf-8")
    (root / "floor_bodies.json").write_text(json.dumps(bodies), encoding="utf-8")
    args = [sys.executable, "-m", "uvicorn", "floor_app:app", "--port", str(port)]
    args += ["--log-level", "warning", "--no-access-log"]
    with _process(args, root, cpus) as process:
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                httpx.get(url + next(iter(bodies)), timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        yield url, process.pid


def _build_store(store: Path, runs: int, cells: int) -> str:
    """``runs - 1`` small runs (10 cells) and one of ``cells`` cells; returns the big one's id."""
    import benchkit
    from benchkit import Benchmark, Condition, EvaluatorSpec, RunOptions, Suite, Task

    class Words:
        async def invoke(self, request: benchkit.Request) -> benchkit.Response:
            value = int(request.task.input)
            wrong = request.condition.id == "b" and value % 3 == 0
            words = f"answer {value} word{value % 97} apple" if not wrong else "banana"
            return benchkit.Response(output=words)

    def suite(name: str, n: int) -> Suite:
        tasks = tuple(
            Task(f"t{i:06d}", input=i, expected=f"answer {i} word{i % 97} apple")
            for i in range(n // 2)
        )
        return Suite(
            Benchmark(id=name, tasks=tasks, evaluators=(EvaluatorSpec("exact"),)),
            (Condition("a", Words()), Condition("b", Words())),
            RunOptions(concurrency=100),
        )

    big = benchkit.run(suite("big", cells), store=store).run_id
    for i in range(runs - 1):
        benchkit.run(suite(f"small-{i % 20}", 10), store=store)
    return big


def _paths(run_id: str, cells: int, rng: random.Random) -> dict[str, Callable[[], str]]:
    return {
        "runs": lambda: "/api/runs",
        "run": lambda: f"/api/runs/{run_id}",
        "cells": lambda: (
            f"/api/runs/{run_id}/cells?offset={rng.randrange(0, cells - 100)}&limit=100"
        ),
        "search": lambda: f"/api/search?q=word{rng.randrange(0, 97)}",
        # a word and a number never asked before: every request a first-time query
        "search-new": lambda: (
            f"/api/search?q=word{rng.randrange(0, 97)}+{rng.randrange(0, cells // 2)}"
        ),
    }


async def _httpx_load(url: str, paths: list[str], clients: int, seconds: float) -> list[float]:
    """The old clients: httpx in this process (``--client httpx``)."""
    import itertools

    import httpx

    times: list[float] = []
    deadline = time.perf_counter() + seconds
    targets = itertools.cycle(paths)

    async def client() -> None:
        async with httpx.AsyncClient(base_url=url, timeout=120) as http:
            while time.perf_counter() < deadline:
                path = next(targets)
                start = time.perf_counter()
                response = await http.get(path)
                times.append((time.perf_counter() - start) * 1000)
                response.raise_for_status()

    await asyncio.gather(*(client() for _ in range(clients)))
    return times


def _drive(
    url: str, paths: list[str], args: argparse.Namespace, cpu: int | None, work: Path
) -> tuple[list[float], float]:
    """Every request's latency (ms) and the clients' CPU seconds."""
    if args.client == "httpx":
        before = time.process_time()
        times = asyncio.run(_httpx_load(url, paths, args.clients, args.seconds))
        return times, time.process_time() - before
    (work / "paths.json").write_text(json.dumps(paths), encoding="utf-8")
    command = [sys.executable, str(HERE / "http_load.py"), "--url", url]
    command += ["--paths", str(work / "paths.json"), "--clients", str(args.clients)]
    command += ["--seconds", str(args.seconds)]
    if cpu is not None:
        command += ["--cpu", str(cpu)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    found = json.loads(out)
    return found["times"], found["cpu"]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


#: One measurement: req/s, p50 ms, p99 ms, server CPU ms a request, clients' CPU ms a request.
Figures = tuple[float, float, float, float, float]


def _measure(
    url: str, pid: int, paths: list[str], args: argparse.Namespace, cpu: int | None, work: Path
) -> Figures:
    before = _cpu_seconds(pid)
    times, client_cpu = _drive(url, paths, args, cpu, work)
    server_cpu = _cpu_seconds(pid) - before
    n = len(times)
    return (
        n / args.seconds,
        _pct(times, 0.5),
        _pct(times, 0.99),
        server_cpu * 1000 / n,
        client_cpu * 1000 / n,
    )


def main() -> None:
    import httpx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=8765, help="the floor app's port")
    parser.add_argument("--keep", type=Path, help="build the store here once and reuse it")
    parser.add_argument("--routes", default="runs,run,cells,search", help="of " + ROUTES)
    parser.add_argument("--client", choices=("raw", "httpx"), default="raw")
    parser.add_argument(
        "--no-pin", action="store_true", help="leave the processes wherever the OS puts them"
    )
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    pinned = not args.no_pin and args.client == "raw" and len(cpus) > 1
    client_cpu = cpus[-1] if pinned else None
    server_cpus = set(cpus[:-1]) if pinned else None
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        store = root / "store.db"
        id_file = root / "big-run-id"
        if not id_file.exists():
            start = time.perf_counter()
            id_file.write_text(_build_store(store, args.runs, args.cells), encoding="utf-8")
            print(f"store built in {time.perf_counter() - start:.0f} s")
        run_id = id_file.read_text(encoding="utf-8")
        rng = random.Random(7)
        chosen = args.routes.split(",")
        makers = {k: v for k, v in _paths(run_id, args.cells, rng).items() if k in chosen}
        routes = {k: [make() for _ in range(20_000)] for k, make in makers.items()}
        results: dict[str, dict[str, list[Figures]]] = {
            k: {"benchkit": [], "floor": []} for k in routes
        }
        loads: list[float] = []
        work = Path(tmp)
        for _ in range(args.rounds):
            loads.append(os.getloadavg()[0])
            with _benchkit(root, store, server_cpus) as (url, pid):
                bodies = {}
                for kind, paths in routes.items():
                    # The first answer builds what the route keeps (a search index, say).
                    bodies[paths[0].split("?")[0]] = httpx.get(url + paths[0], timeout=300).text
                    results[kind]["benchkit"].append(
                        _measure(url, pid, paths, args, client_cpu, work)
                    )
            with _floor(root, bodies, args.port, server_cpus) as (url, pid):
                for kind, paths in routes.items():
                    results[kind]["floor"].append(_measure(url, pid, paths, args, client_cpu, work))
    where = (
        f"clients on CPU {client_cpu}, servers on {sorted(server_cpus or ())}"
        if pinned
        else "not pinned"
    )
    print(
        f"python {sys.version.split()[0]}; {args.clients} {args.client} clients × "
        f"{args.seconds:.0f} s, {where}; {args.rounds} rounds alternated, medians; store: "
        f"{args.runs} runs, one of {args.cells} cells; load average at each round's start: "
        + ", ".join(f"{x:.1f}" for x in loads)
    )
    print(
        f"{'route':<7} {'req/s':>6} {'p50 ms':>7} {'p99 ms':>7} {'cpu':>5} | {'floor/s':>7} "
        f"{'p50':>6} {'p99':>6} {'cpu':>5} | {'ratio':>5} | {'client cpu':>10}"
    )
    for kind, by in results.items():
        mine = [statistics.median(col) for col in zip(*by["benchkit"], strict=True)]
        floor = [statistics.median(col) for col in zip(*by["floor"], strict=True)]
        ratio = statistics.median(
            a[0] / b[0] for a, b in zip(by["benchkit"], by["floor"], strict=True)
        )
        print(
            f"{kind:<7} {mine[0]:>6.0f} {mine[1]:>7.1f} {mine[2]:>7.1f} {mine[3]:>5.2f} | "
            f"{floor[0]:>7.0f} {floor[1]:>6.1f} {floor[2]:>6.1f} {floor[3]:>5.2f} | "
            f"{ratio:>5.2f} | {mine[4]:>4.2f} {floor[4]:>5.2f}"
        )
    print("cpu: ms of CPU a request (server; client cpu: the clients', benchkit and floor)")


if __name__ == "__main__":
    main()
