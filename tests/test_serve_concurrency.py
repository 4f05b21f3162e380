"""A fresh server under concurrent first requests (issue #31, item 8): the plug-in
registry is filled lazily, from many threads at once."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from ._serve import serve, write_benchmark

REPO = Path(__file__).resolve().parents[1]
RAG_MINI = Path(__file__).parent / "fixtures" / "codeforge" / "rag-mini.yaml"
EVAL_SKILLS = REPO / "benchmarks" / "coding-easy" / "benchmark.json"


def _at_once(count: int, work: Callable[[], Any]) -> list[Any]:
    """``work()`` from ``count`` threads released together; what each returned or raised."""
    barrier = threading.Barrier(count)
    out: list[Any] = []

    def run() -> None:
        barrier.wait()
        try:
            out.append(work())
        except BaseException as exc:
            out.append(exc)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
    return out


def _listing(url: str) -> tuple[int, str]:
    with httpx.Client(timeout=120) as client:
        response = client.get(f"{url}/api/benchmarks")
        return response.status_code, response.text


def test_a_fresh_server_answers_100_concurrent_listings_alike(tmp_path: Path) -> None:
    root = tmp_path / "root"  # small files of three formats: the listing itself is cheap
    write_benchmark(root / "native", tasks=2)
    (root / "codeforge").mkdir()
    shutil.copy(RAG_MINI, root / "codeforge" / "rag-mini.yaml")
    shutil.copy(EVAL_SKILLS, root / "eval-skills.json")
    for attempt in range(2):  # each a fresh process: the registry's first use is the race
        with serve(root, tmp_path / f"store{attempt}.db") as (_, url):
            answers = _at_once(100, lambda: _listing(url))
            assert len(answers) == 100
            failed = [a for a in answers if not isinstance(a, tuple) or a[0] != 200]
            assert failed == [], failed[:3]
            assert len(set(answers)) == 1
            listed = httpx.get(f"{url}/api/benchmarks", timeout=60).json()
            assert len(listed["benchmarks"]) == 3, listed


def _use_all(registry: Any, names: list[str]) -> None:
    for name in names:
        assert registry.get(name) is registry.get(name)
        assert name in registry.names()


def test_a_fresh_registry_is_filled_once_from_many_threads() -> None:
    from benchkit.registry import _EVALUATORS, Registry

    names = sorted(_EVALUATORS)
    for _ in range(20):
        registry: Registry[Any] = Registry("evaluator", "benchkit.evaluators", _EVALUATORS)
        results = _at_once(16, lambda: _use_all(registry, names))  # noqa: B023
        assert results == [None] * 16
