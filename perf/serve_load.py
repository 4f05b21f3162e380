"""The server under load against a bare Starlette app serving the same bytes — printed
(throughput, p50 / p99 per route, ratio to the floor), never asserted.

    python perf/serve_load.py                          # 1,000 runs, one of 100,000 cells
    python perf/serve_load.py --runs 200 --cells 20000 --seconds 5      # quicker
    python perf/serve_load.py --keep /tmp/serve-load   # build the store once, reuse it

Issue #30's setting: a store holding a 100,000-cell run among 1,000 runs, ``python -m
benchkit serve`` in a subprocess on 127.0.0.1, 50 concurrent clients (httpx, one
connection each) sending one route for ``--seconds``. The floor is a one-route-per-path
Starlette app under the same uvicorn, in its own subprocess, answering each path with the
bytes benchkit answered it with (fetched first), so the ratio is what benchkit's own work
costs over HTTP, routing and JSON transfer. Routes:

* ``runs``    ``GET /api/runs`` (the explorer's first screen: the newest 50 runs);
* ``run``     ``GET /api/runs/{id}`` of the 100,000-cell run (its page);
* ``cells``   a page of 100 cells of that run at a random offset;
* ``search``  ``GET /api/search?q=...`` (full-text search over outputs).

Rounds alternate benchkit and the floor (``--rounds``, default 3) and the medians are
printed, with the ratio benchkit / floor of throughput pair by pair.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
def _process(args: list[str], cwd: Path) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(args, cwd=cwd, stderr=subprocess.PIPE, text=True)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(30)


@contextmanager
def _benchkit(root: Path, store: Path) -> Iterator[str]:
    args = [sys.executable, "-m", "benchkit", "serve", "--port", "0"]
    with _process([*args, "--root", str(root), "--store", str(store)], root) as process:
        assert process.stderr is not None
        yield process.stderr.readline().split(" on ")[1].strip()


@contextmanager
def _floor(root: Path, bodies: dict[str, str], port: int) -> Iterator[str]:
    import json

    import httpx

    (root / "floor_app.py").write_text(textwrap.dedent(FLOOR_APP), encoding="utf-8")
    (root / "floor_bodies.json").write_text(json.dumps(bodies), encoding="utf-8")
    args = [sys.executable, "-m", "uvicorn", "floor_app:app", "--port", str(port)]
    args += ["--log-level", "warning", "--no-access-log"]
    with _process(args, root):
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                httpx.get(url + next(iter(bodies)), timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        yield url


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


def _paths(run_id: str, cells: int, rng: random.Random) -> dict[str, object]:
    return {
        "runs": lambda: "/api/runs",
        "run": lambda: f"/api/runs/{run_id}",
        "cells": lambda: (
            f"/api/runs/{run_id}/cells?offset={rng.randrange(0, cells - 100)}&limit=100"
        ),
        "search": lambda: f"/api/search?q=word{rng.randrange(0, 97)}",
    }


async def _load(url: str, make_path: object, clients: int, seconds: float) -> list[float]:
    import httpx

    times: list[float] = []
    deadline = time.perf_counter() + seconds

    async def client() -> None:
        async with httpx.AsyncClient(base_url=url, timeout=120) as http:
            while time.perf_counter() < deadline:
                path = make_path()  # type: ignore[operator]
                start = time.perf_counter()
                response = await http.get(path)
                times.append((time.perf_counter() - start) * 1000)
                response.raise_for_status()

    await asyncio.gather(*(client() for _ in range(clients)))
    return times


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


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
    parser.add_argument("--routes", default="runs,run,cells,search")
    args = parser.parse_args()
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
        routes = {k: v for k, v in _paths(run_id, args.cells, rng).items() if k in args.routes}
        results: dict[str, dict[str, list[tuple[float, float, float]]]] = {
            k: {"benchkit": [], "floor": []} for k in routes
        }
        for _ in range(args.rounds):
            with _benchkit(root, store) as url:
                bodies = {}
                for kind, make in routes.items():
                    path = make()  # type: ignore[operator]
                    bodies[path.split("?")[0]] = httpx.get(url + path, timeout=300).text
                    times = asyncio.run(_load(url, make, args.clients, args.seconds))
                    results[kind]["benchkit"].append(
                        (len(times) / args.seconds, _pct(times, 0.5), _pct(times, 0.99))
                    )
            with _floor(root, bodies, args.port) as url:
                for kind, make in routes.items():
                    times = asyncio.run(_load(url, make, args.clients, args.seconds))
                    results[kind]["floor"].append(
                        (len(times) / args.seconds, _pct(times, 0.5), _pct(times, 0.99))
                    )
    print(
        f"python {sys.version.split()[0]}; {args.clients} clients × {args.seconds:.0f} s, "
        f"{args.rounds} rounds alternated, medians; store: {args.runs} runs, one of "
        f"{args.cells} cells"
    )
    print(
        f"{'route':<8} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} | {'floor/s':>7} "
        f"{'p50':>6} {'p99':>6} | {'ratio':>5}"
    )
    for kind, by in results.items():
        mine = [statistics.median(col) for col in zip(*by["benchkit"], strict=True)]
        floor = [statistics.median(col) for col in zip(*by["floor"], strict=True)]
        ratio = statistics.median(
            a[0] / b[0] for a, b in zip(by["benchkit"], by["floor"], strict=True)
        )
        print(
            f"{kind:<8} {mine[0]:>7.0f} {mine[1]:>7.1f} {mine[2]:>7.1f} | {floor[0]:>7.0f} "
            f"{floor[1]:>6.1f} {floor[2]:>6.1f} | {ratio:>5.2f}"
        )


if __name__ == "__main__":
    main()
