"""A fresh server under concurrent first requests (issue #31, item 8): the plug-in
registry is filled lazily, from many threads at once."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import httpx

from ._serve import serve, write_benchmark

REPO = Path(__file__).resolve().parents[1]
RAG_MINI = Path(__file__).parent / "fixtures" / "codeforge" / "rag-mini.yaml"
EVAL_SKILLS = REPO / "benchmarks" / "coding-easy" / "benchmark.json"


def test_a_fresh_server_answers_100_concurrent_listings_alike(tmp_path: Path) -> None:
    root = tmp_path / "root"  # small files of three formats: the listing itself is cheap
    write_benchmark(root / "native", tasks=2)
    (root / "codeforge").mkdir()
    shutil.copy(RAG_MINI, root / "codeforge" / "rag-mini.yaml")
    shutil.copy(EVAL_SKILLS, root / "eval-skills.json")
    for attempt in range(2):  # each a fresh process: the registry's first use is the race
        with serve(root, tmp_path / f"store{attempt}.db") as (_, url):
            barrier = threading.Barrier(100)
            answers: list[tuple[int, str]] = []

            def listing() -> None:
                with httpx.Client(timeout=120) as client:
                    barrier.wait()
                    try:
                        response = client.get(f"{url}/api/benchmarks")
                    except httpx.HTTPError as exc:
                        answers.append((0, repr(exc)))
                    else:
                        answers.append((response.status_code, response.text))

            threads = [threading.Thread(target=listing) for _ in range(100)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(180)
            assert len(answers) == 100
            assert sorted({status for status, _ in answers}) == [200], [
                text for status, text in answers if status != 200
            ][:3]
            assert len({text for _, text in answers}) == 1
            listed = httpx.get(f"{url}/api/benchmarks", timeout=60).json()
            assert len(listed["benchmarks"]) == 3, listed


def test_a_fresh_registry_is_filled_once_from_many_threads() -> None:
    from benchkit.registry import _EVALUATORS, Registry

    for _ in range(20):
        registry: Registry[object] = Registry("evaluator", "benchkit.evaluators", _EVALUATORS)
        names = sorted(_EVALUATORS)
        barrier = threading.Barrier(16)
        failures: list[BaseException] = []

        def use(n: int) -> None:
            barrier.wait()
            try:
                for name in names[n % 3 :: 3]:
                    assert registry.get(name) is registry.get(name)
                    assert name in registry.names()
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=use, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert failures == []
