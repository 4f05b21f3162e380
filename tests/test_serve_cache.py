"""The server's read answers kept until the store changes (serve/_cache.py, issue #30):
the same bytes as a fresh answer, stale the moment anything commits to the store — from
this server or another process — and never kept while a job of this server runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import benchkit
from benchkit import Benchmark, Condition, EvaluatorSpec, ProviderSpec, Suite, Task
from benchkit.serve import create_app
from benchkit.serve._cache import ResponseCache

from ._serve import running

READS = ("/api/runs", "/api/runs/{run}", "/api/runs/{run}/cells?limit=5", "/api/search?q=four")


def _suite(name: str, n: int = 6) -> Suite:
    tasks = [Task(f"t{i}", input=str(i), expected="four" if i % 2 else "x") for i in range(n)]
    return Suite(
        Benchmark(name, tasks=tasks, evaluators=[EvaluatorSpec("exact")]),
        conditions=[
            Condition("c", ProviderSpec("mock", {"outputs": {t.id: "four" for t in tasks}}))
        ],
    )


def _cache(app: object) -> ResponseCache:
    found = app.state.benchkit.extra["benchkit.response_cache"]  # type: ignore[attr-defined]
    assert isinstance(found, ResponseCache)
    return found


def test_a_kept_answer_is_the_fresh_answer_until_the_store_changes(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    run = benchkit.run(_suite("first"), store=store).run_id
    app = create_app(store=store, root=tmp_path)
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        paths = [p.format(run=run) for p in READS]
        first = {p: http.get(p) for p in paths}
        assert all(r.status_code == 200 for r in first.values()), first
        for p in paths:  # the first search builds its index: a commit, so all go stale
            http.get(p)
        cache = _cache(app)
        hits = cache.hits
        again = {p: http.get(p) for p in paths}
        assert cache.hits == hits + len(paths)  # every read answered from memory
        assert {p: r.content for p, r in again.items()} == {p: r.content for p, r in first.items()}
        assert all(r.headers["content-type"] == "application/json" for r in again.values())
        # another process commits a run: the list shows it at once
        code = (
            "import sys, benchkit; sys.path.insert(0, sys.argv[2]); "
            "from tests.test_serve_cache import _suite; "
            "benchkit.run(_suite('second'), store=sys.argv[1])"
        )
        root = str(Path(__file__).resolve().parent.parent)
        subprocess.run([sys.executable, "-c", code, str(store), root], check=True, cwd=root)
        listed = http.get("/api/runs").json()
        assert [r["benchmark_id"] for r in listed["runs"]] == ["second", "first"]
        assert listed["total"] == 2
        # a change made through this server (a deletion) is seen as well
        assert http.delete(f"/api/runs/{run}").status_code in (200, 204)
        assert http.get(f"/api/runs/{run}").status_code == 404
        assert [r["benchmark_id"] for r in http.get("/api/runs").json()["runs"]] == ["second"]


def test_errors_are_never_kept(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    benchkit.run(_suite("first"), store=store)
    app = create_app(store=store, root=tmp_path)
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        for _ in range(2):
            assert http.get("/api/runs/run_nope").status_code == 404
            assert http.get("/api/runs?status=bogus").status_code == 400
        assert _cache(app).hits == 0


def test_the_cache_bounds_its_entries_and_bytes(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "none.db", max_entries=3, max_bytes=10)
    assert cache.version() is None  # no store yet: nothing is answered from memory
    for i in range(5):
        cache.put(f"k{i}", 1, b"abcd", "application/json")
    assert cache.get("k0", 1) is None and cache.get("k1", 1) is None
    assert cache.get("k4", 1) == (b"abcd", "application/json")
    assert cache.get("k4", 2) is None  # another version: stale
    assert len(cache._entries) == 2  # 3 entries would be 12 bytes > 10


@pytest.mark.slow
def test_nothing_is_kept_while_a_job_of_the_server_runs(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(
        "import time\ndef answer(task):\n    time.sleep(0.3)\n    return 'x'\n",
        encoding="utf-8",
    )
    (tmp_path / "bench.yaml").write_text(
        "benchkit: 1\nid: slow\ntasks:\n"
        + "".join(f"  - {{id: t{i}, input: '{i}', expected: x}}\n" for i in range(6))
        + "evaluators: [exact]\nconditions:\n"
        "  - {id: c, provider: {type: python, file: slow.py, function: answer}}\n",
        encoding="utf-8",
    )
    store = tmp_path / "s.db"
    app = create_app(store=store, root=tmp_path)
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        started = http.post("/api/runs", json={"benchmark": "bench.yaml"})
        assert started.status_code == 202, started.text
        statuses = []
        while True:
            answer = http.get(f"/api/runs/{started.json()['run_id']}").json()
            run = answer.get("run", answer)
            statuses.append((run["status"], run.get("cells")))
            if run["status"] not in ("running", "queued"):
                break
        # seen running, then finished with every cell: no answer kept from the running job
        # was given again after the store changed (the loop would never end)
        assert statuses[0][0] in ("running", "queued") and statuses[-1] == ("finished", 6)
        cache = app.state.benchkit.extra.get("benchkit.response_cache")
        assert cache is None or cache.hits == 0
