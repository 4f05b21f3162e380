"""A page of a finished run's cells deep in the run (#30): read through the run's kept
order of row ids instead of an SQL OFFSET that walks every skipped cell, and the same
cells, in the same order, as the OFFSET query gives — for every filter, order and depth."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import benchkit
from benchkit import Request, Response, Task
from benchkit.store import Store
from benchkit.store._queries import CellFilter

from ._support import make_suite, trace_queries

TASKS = 700  # 1,400 cells: deeper than the offset from which the kept order is used


class Answers:
    """Answers task i right, except every third task under condition b."""

    async def invoke(self, request: Request) -> Response:
        index = int(request.task.input)
        wrong = request.condition.id == "b" and index % 3 == 0
        return Response(output="no" if wrong else str(index))


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("pages") / "s.db"
    tasks = [Task(f"t{i:04d}", input=i, expected=str(i)) for i in range(TASKS)]
    suite = make_suite({"a": Answers(), "b": Answers()}, tasks)
    return path, benchkit.run(suite, store=path).run_id


def _by_offset(path: Path, run_id: str, where: str, params: list[Any], order: str) -> list[str]:
    """Every matching cell's JSON through SQL's ORDER BY ... OFFSET (the reference)."""
    with sqlite3.connect(path) as db:
        return [
            row[0]
            for row in db.execute(
                f"SELECT data FROM cells WHERE run_id = ? {where} ORDER BY position {order}, "
                f"condition_id {order}, epoch {order}",
                [run_id, *params],
            )
        ]


@pytest.mark.parametrize("order", ["asc", "desc"])
@pytest.mark.parametrize(
    ("where", "sql", "params"),
    [
        (CellFilter(), "", []),
        (CellFilter(statuses=("fail",)), "AND status = ?", ["fail"]),
        (CellFilter(conditions=("a",)), "AND condition_id = ?", ["a"]),
    ],
)
def test_deep_pages_are_the_cells_an_offset_gives(
    store_path: tuple[Path, str], order: str, where: CellFilter, sql: str, params: list[str]
) -> None:
    path, run_id = store_path
    expected = _by_offset(path, run_id, sql, params, order.upper())
    reader = Store(path).reader
    for offset in (0, 5, 999, 1000, 1001, 1234, len(expected) - 3, len(expected), 5000):
        for limit in (1, 100):
            page = reader.cells(run_id, where, order=order, offset=offset, limit=limit)  # type: ignore[arg-type]
            assert list(page.data) == expected[offset : offset + limit], (offset, limit)
            assert page.total == len(expected)


def test_a_deep_page_reads_only_its_cells_once_the_order_is_kept(
    store_path: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, run_id = store_path
    statements: list[str] = []
    trace_queries(monkeypatch, statements.append)
    reader = Store(path).reader
    reader.cells(run_id, offset=1200, limit=10)  # builds the order
    statements.clear()
    page = reader.cells(run_id, offset=1300, limit=10)
    reads = [s for s in statements if "FROM cells" in s]
    assert len(page.data) == 10
    assert reads and all("OFFSET" not in s for s in reads), reads
    assert any("rowid IN" in s for s in reads), reads
