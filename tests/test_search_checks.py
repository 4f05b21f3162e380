"""A search over every run checks the store only when something was committed since the
last check (#30): the first ask of a word then costs only FTS5's own work. And it still
finds exactly the cells of the store's runs — a new run's cells, none of a run deleted
behind the index's back, a run whose index build was cut short rebuilt."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

import benchkit
from benchkit import Request, Response, Task
from benchkit.store import Store

from ._support import make_suite, trace_queries


class Echo:
    """Answers every task with a sentence naming its run's word."""

    def __init__(self, word: str) -> None:
        self.word = word

    async def invoke(self, request: Request) -> Response:
        return Response(output=f"{self.word} answer {request.task.input}")


def _run(path: Path, word: str, tasks: int = 6) -> str:
    suite = make_suite(
        {"a": Echo(word)}, [Task(f"t{i}", input=i, expected=str(i)) for i in range(tasks)]
    )
    return benchkit.run(suite, store=path).run_id


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    found: list[str] = []
    trace_queries(monkeypatch, found.append)
    return found


def _top_level(found: list[str]) -> list[str]:
    """The statements benchkit ran (not FTS5's own, which start with ``--``)."""
    return [s for s in found if not s.startswith("--")]


def test_a_new_word_over_every_run_reads_only_the_index(
    tmp_path: Path, statements: list[str]
) -> None:
    path = tmp_path / "s.db"
    _run(path, "apple")
    _run(path, "pear")
    with Store(path) as store:
        assert store.reader.search("apple")[1] == 6  # the first search indexes both runs
        statements.clear()
        results, total = store.reader.search("pear")
        ran = _top_level(statements)
    assert total == 6 and {r["task_id"] for r in results} == {f"t{i}" for i in range(6)}
    assert not [s for s in ran if re.search(r"\bFROM\s+runs\b", s, re.I)], ran
    assert not [s for s in ran if "run_id IN" in s], ran


def test_a_run_stored_after_a_search_is_found_by_the_next(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _run(path, "apple")
    with Store(path) as store:
        assert store.reader.search("plum") == ([], 0)
        new = _run(path, "plum", tasks=4)  # committed by another connection
        results, total = store.reader.search("plum")
    assert total == 4 and {r["run_id"] for r in results} == {new}


def test_a_run_deleted_behind_the_index_is_not_found(tmp_path: Path) -> None:
    """A run removed by other means than benchkit's delete leaves its rows in the index:
    its stamp says so, and the search then keeps to the store's runs."""
    path = tmp_path / "s.db"
    kept = _run(path, "apple")
    lost = _run(path, "apple")
    with Store(path) as store:
        assert store.reader.search("apple")[1] == 12
        with sqlite3.connect(path) as db:
            db.execute("DELETE FROM cells WHERE run_id = ?", (lost,))
            db.execute("DELETE FROM runs WHERE run_id = ?", (lost,))
        results, total = store.reader.search("apple")
    assert total == 6 and {r["run_id"] for r in results} == {kept}


def test_a_build_cut_short_is_rebuilt(tmp_path: Path) -> None:
    """A build in progress stamps its run "building": a build that never finished (the
    process died) is seen as stale and done again, its partial rows replaced."""
    path = tmp_path / "s.db"
    run_id = _run(path, "apple")
    with Store(path) as store:
        assert store.reader.search("apple")[1] == 6
        with sqlite3.connect(path) as db:
            (stamp,) = db.execute(
                "SELECT updated_at FROM cell_search_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            assert stamp != "building"
            db.execute(
                "DELETE FROM cell_search WHERE rowid IN (SELECT rowid FROM cell_search LIMIT 4)"
            )
            db.execute("UPDATE cell_search_runs SET updated_at = 'building'")
        assert store.reader.search("apple")[1] == 6
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT updated_at FROM cell_search_runs").fetchone() == (stamp,)
