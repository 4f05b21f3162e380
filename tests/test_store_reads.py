"""Every read that is not a page of cells costs the same whatever the size of the runs it
shows (#30): it reads no row of the cells table — or, for people's ratings, only the rated
cells, by primary key. Asserted by tracing every SQL statement of every connection the
store's query layer opens, for the public ``Store`` and for the server (over HTTP)."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

import benchkit
from benchkit import Request, Response, Task
from benchkit.serve import create_app
from benchkit.store import Store

from ._serve import running
from ._support import make_suite, trace_queries

#: A statement that reads the cells table.
_READS_CELLS = re.compile(r"\bFROM\s+cells\b", re.IGNORECASE)
#: ...by its primary key: one cell, whatever the run's size.
_ONE_CELL = re.compile(
    r"FROM cells WHERE run_id = .+ AND task_id = .+ AND condition_id = .+ AND epoch = \d+$",
    re.IGNORECASE,
)


class Answers:
    """Answers task i right, except every third task."""

    async def invoke(self, request: Request) -> Response:
        index = int(request.task.input)
        return Response(output="no" if index % 3 == 0 else str(index))


class Traced:
    """Every statement run on a connection the query layer opened, from any thread."""

    def __init__(self) -> None:
        self.statements: list[str] = []
        self._lock = threading.Lock()

    def add(self, statement: str) -> None:
        with self._lock:
            self.statements.append(statement)

    def take(self) -> list[str]:
        with self._lock:
            found, self.statements = self.statements, []
        return found


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> Traced:
    trace = Traced()
    trace_queries(monkeypatch, trace.add)
    return trace


def _run(path: Path, tasks: int) -> str:
    suite = make_suite(
        {"a": Answers(), "b": Answers()},
        [Task(f"t{i}", input=i, expected=str(i)) for i in range(tasks)],
        epochs=2,
    )
    return benchkit.run(suite, store=path).run_id


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, str, str]:
    """A store holding a run of 12 cells and one of 240, each with two ratings."""
    path = tmp_path / "s.db"
    small, large = _run(path, 3), _run(path, 60)
    with Store(path) as store:
        for run_id in (small, large):
            store.rate(run_id, "t1", "a", 0, rater="ana", verdict=False)
            store.rate(run_id, "t2", "b", 1, rater="bo", score=0.75)
    return path, small, large


def _cell_reads(statements: list[str]) -> list[str]:
    return [s for s in statements if _READS_CELLS.search(s)]


def test_store_summaries_and_outcomes_read_no_cell(
    traced: Traced, runs: tuple[Path, str, str]
) -> None:
    path, small, large = runs
    with Store(path) as store:
        assert [r.run_id for r in store.runs()] == [large, small]
        for run_id, cells in ((small, 12), (large, 240)):
            traced.take()
            summary = store.summary(run_id)
            outcome = store.load(run_id, cells=False)
            ratings = store.ratings(run_id)
            task = store.task(run_id, "t2")
            statements = traced.take()
            assert statements and not _cell_reads(statements), statements
            assert (summary.cells, summary.errors, len(summary.sessions)) == (cells, 0, 1)
            assert outcome.cells == () and outcome.aggregate("a").n == cells // 2
            assert [r.rater for r in ratings] == ["ana", "bo"]
            assert task is not None and task["expected"] == "2"
        # a page of cells does read cells: the trace sees what it is meant to see
        assert len(store.cells(large, limit=5).cells) == 5
        assert _cell_reads(traced.take())


def _statement_shapes(statements: list[str]) -> list[str]:
    """The statements with their literals blanked, to compare two runs' reads."""
    return [re.sub(r"'[^']*'|\b\d+\b", "?", s) for s in statements]


def test_the_servers_lists_run_pages_and_ratings_read_no_cell(
    traced: Traced, runs: tuple[Path, str, str], tmp_path: Path
) -> None:
    """``GET /api/runs``, a run's page (``/api/runs/{id}``: summary, stored outcome,
    sessions, ratings' agreement), its ratings and a task snapshot: the cells table is
    read only for the rated cells (by primary key, one statement each), and the two runs
    — 12 and 240 cells — are read by the same statements."""
    path, small, large = runs
    app = create_app(store=path, root=tmp_path)
    shapes: dict[str, list[str]] = {}
    with running(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        traced.take()
        listed = client.get("/api/runs").json()
        statements = traced.take()
        assert [r["run_id"] for r in listed["runs"]] == [large, small]
        assert [r["cells"] for r in listed["runs"]] == [240, 12]
        assert statements and not _cell_reads(statements), statements
        for run_id, cells in ((small, 12), (large, 240)):
            page: dict[str, Any] = client.get(f"/api/runs/{run_id}").json()
            rated = client.get(f"/api/runs/{run_id}/ratings").json()
            task = client.get(f"/api/runs/{run_id}/task", params={"task": "t2"}).json()
            statements = traced.take()
            assert page["run"]["cells"] == cells and len(page["sessions"]) == 1
            assert page["ratings"]["count"] == 2 and len(rated["ratings"]) == 2
            assert task["source"] == "store"
            reads = _cell_reads(statements)
            assert len(reads) == 2 and all(_ONE_CELL.search(s) for s in reads), reads
            shapes[run_id] = sorted(_statement_shapes(statements))
    assert shapes[small] == shapes[large]


def test_connections_of_ended_threads_are_closed(runs: tuple[Path, str, str]) -> None:
    """Each thread reads through a connection of its own; one that has ended has its
    connection closed when another thread opens one, so calls from short-lived threads
    do not pile up open connections."""
    path, small, _ = runs
    with Store(path) as store:
        for _ in range(5):
            thread = threading.Thread(target=store.summary, args=(small,))
            thread.start()
            thread.join()
        assert len(store.reader._all) == 1  # the last thread's; the four before it closed
        assert store.summary(small).cells == 12
        assert len(store.reader._all) == 1  # this thread's: the ended one's was closed


def test_a_search_over_every_run_reads_no_cell_once_indexed(
    traced: Traced, runs: tuple[Path, str, str]
) -> None:
    """The first search indexes each run; after that a search over every run checks the
    finished runs' index stamps in one statement and reads only the matches (the search
    index and, for each match shown, its cell's status)."""
    path, _, _ = runs
    with Store(path) as store:
        first = store.reader.search("no", limit=5)
        traced.take()
        again = store.reader.search("no", limit=5)
        statements = traced.take()
    assert again == first and first[1] > 0
    counts = [s for s in statements if re.search(r"COUNT\(\*\)\s+FROM\s+cells", s, re.I)]
    assert counts == [], counts
    assert not [s for s in statements if "INSERT INTO cell_search" in s]
