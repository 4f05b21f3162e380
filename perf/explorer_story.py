"""The explorer's outputs matrix and search at 100,000 cells, and what the task snapshot
and transcripts add to the store — printed, never asserted.

    python perf/explorer_story.py                 # 100,000 cells
    python perf/explorer_story.py --cells 20000   # quicker

Steps: a run of N/2 tasks × 2 conditions (inputs are short English-like sentences; the
provider records two transcript events per cell, a request and a response, as a chat
provider would) goes into a fresh store; ``python -m benchkit serve`` serves it from a
subprocess on 127.0.0.1 and httpx times each route (median of 5 after one warm-up); first,
the first matrix page, filter and search are timed once, as a person opening the matrix
meets them (the matrix route starts building the view's outline and the run's FTS5 index
in the background). The store's size is measured
on copies: as written, without the transcripts, and without the task snapshot (each after
VACUUM), so the difference is what each adds per cell.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from serve_cells import _serving

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
    "apple",
    "pear",
    "plum",
    "cherry",
    "river",
    "mountain",
    "valley",
    "ocean",
    "desert",
    "forest",
    "island",
    "city",
    "village",
]


def _make_run(store: Path, cells: int) -> tuple[str, float]:
    import benchkit
    from benchkit import Benchmark, Condition, EvaluatorSpec, RunOptions, Suite, Task, transcript

    rng = random.Random(25)

    class Chatty:
        async def invoke(self, request: benchkit.Request) -> benchkit.Response:
            transcript.record("request", "chat model", {"messages": [request.task.input]})
            value = request.task.metadata["n"]
            wrong = request.condition.id == "b" and value % 3 == 0
            answer = "no idea" if wrong else request.task.expected
            transcript.record("response", "model", {"text": answer}, duration=0.001)
            return benchkit.Response(output=answer)

    tasks = tuple(
        Task(
            f"t{i:06d}",
            input=" ".join(rng.choice(WORDS) for _ in range(12)) + f" question {i}",
            expected=rng.choice(WORDS),
            tags=("even" if i % 2 == 0 else "odd",),
            metadata={"n": i},
        )
        for i in range(cells // 2)
    )
    suite = Suite(
        Benchmark(id="perf-story", tasks=tasks, evaluators=(EvaluatorSpec("exact"),)),
        (Condition("a", Chatty()), Condition("b", Chatty())),
        RunOptions(concurrency=100),
    )
    started = time.perf_counter()
    result = benchkit.run(suite, store=store)
    return result.run_id, time.perf_counter() - started


def _size_without(store: Path, tmp: Path, tables: tuple[str, ...]) -> int:
    copy = tmp / f"copy-{'-'.join(tables) or 'all'}.db"
    shutil.copy(store, copy)
    with sqlite3.connect(copy) as db:
        db.execute("PRAGMA journal_mode=DELETE")
        for table in tables:
            db.execute(f"DELETE FROM {table}")
    db = sqlite3.connect(copy, isolation_level=None)
    db.execute("VACUUM")
    db.close()
    return copy.stat().st_size


def _timed(client: object, url: str, params: dict[str, object], repeat: int = 5) -> float:
    import httpx

    assert isinstance(client, httpx.Client)
    client.get(url, params=params).raise_for_status()  # warm-up
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        client.get(url, params=params).raise_for_status()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000.0


def main() -> None:
    import httpx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        store = tmp / "benchkit.db"
        run_id, took = _make_run(store, args.cells)
        print(
            f"python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}; run of "
            f"{args.cells} cells ({args.cells // 2} tasks × 2 conditions, 2 transcript events "
            f"a cell) stored in {took:.1f} s"
        )
        whole = _size_without(store, tmp, ())
        no_transcripts = _size_without(store, tmp, ("transcripts",))
        no_tasks = _size_without(store, tmp, ("tasks",))
        neither = _size_without(store, tmp, ("transcripts", "tasks"))
        cells = args.cells
        print(f"store        {whole / 1e6:8.1f} MB in all ({whole / cells:6.0f} B/cell)")
        print(
            f"  transcripts {(whole - no_transcripts) / 1e6:7.1f} MB "
            f"= {(whole - no_transcripts) / cells:5.0f} B/cell (2 events)"
        )
        print(
            f"  task snapshot {(whole - no_tasks) / 1e6:5.1f} MB "
            f"= {(whole - no_tasks) / cells:5.0f} B/cell "
            f"({(whole - no_tasks) / (cells // 2):.0f} B/task, once per task)"
        )
        print(f"  cells and the rest {neither / 1e6:5.1f} MB = {neither / cells:5.0f} B/cell")
        with _serving(tmp, store) as url, httpx.Client(base_url=url, timeout=300) as client:
            matrix = f"/api/runs/{run_id}/matrix"
            # As a person meets it: the matrix opens (which starts building the view's
            # outline and the search index in the background), then a filter, a search.
            for label, path, params in (
                ("first matrix page (first paint)", matrix, {"limit": 50}),
                ("first filtered page, right after", matrix, {"only": "failures"}),
                ("first search, right after", "/api/search", {"q": "tango", "run": run_id}),
            ):
                started = time.perf_counter()
                client.get(path, params=params).raise_for_status()
                print(f"{label:42} {(time.perf_counter() - started) * 1000:8.1f} ms (once)")
            rows = [
                ("matrix, first page (50 tasks)", matrix, {"limit": 50}),
                ("matrix, deep page", matrix, {"limit": 50, "offset": cells // 2 - 100}),
                ("matrix, only failures", matrix, {"only": "failures"}),
                ("matrix, only disagree", matrix, {"only": "disagree"}),
                ("matrix, by tag", matrix, {"tag": "odd"}),
                ("matrix, search q=tango", matrix, {"q": "tango"}),
                ("matrix, search q='river question 4999'", matrix, {"q": "river question 4999"}),
                ("search one run q=tango", "/api/search", {"q": "tango", "run": run_id}),
                (
                    "search whole store, rare q=question 12345",
                    "/api/search",
                    {"q": "question 12345"},
                ),
                ("search whole store q=no idea", "/api/search", {"q": "no idea"}),
            ]
            for label, path, params in rows:
                print(f"{label:42} {_timed(client, path, params):8.1f} ms (median of 5)")


if __name__ == "__main__":
    main()
