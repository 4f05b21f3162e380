"""The store's fast read paths give exactly what the general ones give.

``Store.load`` builds each stored cell directly (:func:`~benchkit.store._records.decode_cell`)
instead of through the reading converter: the same cell, or the same error, for any record.
``Store.compare`` of two plain stored runs reads their joined columns
(:func:`~benchkit.store._compare.compare_plain`) instead of an outline cell per stored
cell (:func:`~benchkit.store._compare.compare_cells`): the same comparison, number for
number, whatever the statuses, scores, epochs, missing cells and scoring.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Literal

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import benchkit
from benchkit._celljson import cell_json
from benchkit.errors import StoreError
from benchkit.model import RunOptions, ScoringSpec
from benchkit.results import CellResult, CellStatus, ConditionInfo, RunInfo
from benchkit.store import Store, compare_runs
from benchkit.store._compare import (
    NotPlain,
    OutlineCell,
    PlainPair,
    compare_cells,
    compare_plain,
)
from benchkit.store._records import ENCODER, decode_cell, decode_cells, structure

from ._support import make_suite
from .test_celljson import PLAIN, json_values, plain_cells
from .test_celljson import cells as celljson_cells
from .test_store import Counting

_SCORES = st.one_of(
    st.none(),
    st.sampled_from([0.0, 1.0, 0.5, -0.0]),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
_STATUSES: list[CellStatus] = ["pass", "fail", "error", "timeout"]
_CELL = st.tuples(st.sampled_from(_STATUSES), _SCORES)


@st.composite
def _run(draw: st.DrawFn, conditions: list[str], epochs: int) -> list[OutlineCell]:
    """A run's plain cells in run order: tasks t0..t7, some cells missing."""
    cells = []
    for position in range(8):
        for condition in conditions:
            for epoch in range(epochs):
                if draw(st.integers(0, 5)) == 0:
                    continue  # not run (or not stored)
                status, score = draw(_CELL)
                cells.append(OutlineCell(f"t{position}", condition, epoch, status, score))
    return cells


def _info(run_id: str, conditions: list[str], method: str, errors_as: str) -> RunInfo:
    return RunInfo(
        run_id=run_id,
        benchmark_id="b",
        benchmark_name=None,
        benchmark_version="1",
        source_path=None,
        source_format="native",
        conditions=tuple(ConditionInfo(c) for c in conditions),
        options=RunOptions(errors_as=errors_as),  # type: ignore[arg-type]
        scoring_method=method,
    )


def _joined(cells_a: list[OutlineCell], cells_b: list[OutlineCell]):  # type: ignore[no-untyped-def]
    """What the store's join gives for a pair of conditions, from the runs' cells."""

    def text(score: float | None) -> str:
        return "null" if score is None else repr(score)

    def fetch(cond_a: str, cond_b: str) -> PlainPair:
        side_a = {(c.task_id, c.epoch): c for c in cells_a if c.condition_id == cond_a}
        side_b = [c for c in cells_b if c.condition_id == cond_b]
        rows: list[tuple[str, str, str | None, str, str | None]] = [
            (y.task_id, x.status, text(x.score), y.status, text(y.score))
            for y in side_b
            if (x := side_a.get((y.task_id, y.epoch))) is not None
        ]
        return PlainPair(rows, len(side_a), len(side_b))

    return fetch


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    epochs=st.integers(1, 3),
    method=st.sampled_from(["mean", "weighted_mean"]),
    errors_as=st.sampled_from(["zero", "exclude"]),
    swap=st.booleans(),
)
def test_the_joined_columns_compare_as_the_cells_do(
    data: st.DataObject, epochs: int, method: str, errors_as: str, swap: bool
) -> None:
    conditions = ["x", "y"]
    cells_a = data.draw(_run(conditions, epochs))
    cells_b = data.draw(_run(conditions, epochs))
    a = _info("a", conditions, method, errors_as)
    b = _info("b", conditions, method, errors_as)
    pairs = [("x", "y"), ("y", "x")] if swap else None
    expected = compare_cells(a, cells_a, b, cells_b, pairs=pairs)
    assert compare_plain(a, b, pairs, _joined(cells_a, cells_b)) == expected


def test_rows_that_are_not_plain_send_the_comparison_back_to_the_outlines() -> None:
    a, b = _info("a", ["c"], "mean", "zero"), _info("b", ["c"], "mean", "zero")
    for row in (("t0", "pass", None, "pass", "1.0"), ("t0", "pass", "1.0", "odd", "1.0")):
        with pytest.raises(NotPlain):
            compare_plain(a, b, None, lambda _a, _b, row=row: PlainPair([row], 1, 1))  # type: ignore[misc]
    with pytest.raises(NotPlain):  # pass@k reduces epochs otherwise: the outlines do it
        compare_plain(attrs.evolve(a, scoring_method="pass_at_k"), b, None, _joined([], []))


def _no_outlines(store: Store) -> None:
    def refuse(run_id: str) -> None:
        raise AssertionError(f"outline({run_id!r}) read although both runs are plain")

    store.reader.outline = refuse  # type: ignore[method-assign,assignment]


@pytest.mark.parametrize("errors_as", ["zero", "exclude"])
def test_store_compares_plain_runs_from_their_columns(
    tmp_path: Path, errors_as: Literal["zero", "exclude"]
) -> None:
    path = tmp_path / "s.db"
    providers_a = {"x": Counting(wrong={1, 4}), "y": Counting(failing={2})}
    providers_b = {"y": Counting(wrong={3}), "x": Counting(failing={1, 7}, wrong={5})}
    suites = [
        make_suite(p, n=n, epochs=2, seed=4) for p, n in ((providers_a, 12), (providers_b, 10))
    ]
    for run_id, suite in zip("ab", suites, strict=True):
        options = attrs.evolve(suite.options, errors_as=errors_as)
        benchkit.run(attrs.evolve(suite, options=options), store=path, run_id=run_id)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT plain_cells FROM runs").fetchall() == [(1,), (1,)]
    with Store(path) as store:
        expected = compare_runs(store.load("a"), store.load("b"))
        pairs = [("x", "y"), ("y", "x")]
        expected_pairs = compare_runs(store.load("a"), store.load("b"), pairs=pairs)
        _no_outlines(store)
        assert store.compare("a", "b") == expected
        assert store.compare("a", "b", pairs=pairs) == expected_pairs
    assert [item.only_a for item in expected.conditions] == [4, 4]
    assert expected.conditions[0].comparison is not None


def test_store_compares_weighted_plain_runs_from_their_columns(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    for run_id, wrong in (("a", {1, 5}), ("b", {2, 7, 8})):
        made = make_suite({"c": Counting(wrong=wrong)}, n=9)
        bench = attrs.evolve(made.benchmark, scoring=ScoringSpec("weighted_mean"))
        benchkit.run(attrs.evolve(made, benchmark=bench), store=path, run_id=run_id)
    with Store(path) as store:
        expected = compare_runs(store.load("a"), store.load("b"))
        _no_outlines(store)
        assert store.compare("a", "b") == expected
    assert expected.conditions[0].comparison is not None
    assert expected.conditions[0].comparison.regressed == ("t2", "t7", "t8")


# -- Store.load: the direct build of a stored cell ----------------------------------------

_PATH = Path("s.db")
_ODD_VALUES: st.SearchStrategy[Any] = json_values | st.sampled_from(
    [None, 1, 1.5, "x", [], {}, True]
)
_KEYS = st.sampled_from(
    [*PLAIN, "verdicts", "details", "usage", "output", "latency_ms", "name", "value", "extra"]
)


def _decoded(data: Any) -> tuple[str, str]:
    """What a path makes of ``data``: the cell's repr (it tells 1 from 1.0, True from 1,
    a tuple from a list, and NaN equal to itself) and its type, or the error it raises."""
    try:
        cell = decode_cell(data, _PATH, "r")
    except StoreError as exc:
        return "error", str(exc)
    return repr(cell), type(cell).__name__


def _general(data: Any) -> tuple[str, str]:
    try:
        cell = structure(data, CellResult, _PATH, "r")
    except StoreError as exc:
        return "error", str(exc)
    return repr(cell), type(cell).__name__


@st.composite
def _stored(draw: st.DrawFn) -> Any:
    """A cell's JSON as the store holds it, decoded — often bent: a key dropped, a value
    replaced by another JSON value, an unknown key, in the cell, a score or its response."""
    data = json.loads(cell_json(draw(celljson_cells | plain_cells), ENCODER))
    targets = [data]
    targets += [s for s in data.get("scores", []) if isinstance(s, dict)]
    if isinstance(data.get("response"), dict):
        targets.append(data["response"])
    for _ in range(draw(st.integers(0, 3))):
        target = draw(st.sampled_from(targets))
        key = draw(_KEYS | st.sampled_from(sorted(target) or ["task_id"]))
        if draw(st.booleans()):
            target.pop(key, None)
        else:
            target[key] = draw(_ODD_VALUES)
    return data


@settings(max_examples=2000, deadline=None)
@given(_stored())
def test_a_stored_cell_decodes_as_the_reading_converter_structures_it(data: Any) -> None:
    assert _decoded(data) == _general(data)


def test_a_cell_that_is_no_record_is_the_stores_error() -> None:
    cases: tuple[Any, ...] = ([], "task_id", None, {"task_id": "t"}, {**_MINIMAL, "status": "odd"})
    for data in cases:
        assert _decoded(data) == _general(data)
        assert _decoded(data)[0] == "error"
    assert _decoded(_MINIMAL) == _general(_MINIMAL)
    assert _decoded(_MINIMAL)[1] == "CellResult"


_MINIMAL = {"task_id": "t", "condition_id": "c", "epoch": 0, "status": "pass"}


def _each(texts: list[Any]) -> tuple[str, str]:
    try:
        return "ok", repr([decode_cell(json.loads(text), _PATH, "r") for text in texts])
    except (ValueError, TypeError, StoreError) as exc:
        return type(exc).__name__, str(exc)


def _batch(texts: list[Any]) -> tuple[str, str]:
    try:
        return "ok", repr(decode_cells(texts, _PATH, "r"))
    except (ValueError, TypeError, StoreError) as exc:
        return type(exc).__name__, str(exc)


_DOCUMENTS = st.lists(
    json_values.map(lambda v: json.dumps(v, ensure_ascii=False))
    | plain_cells.map(lambda cell: cell_json(cell, ENCODER))
    | st.sampled_from(
        [
            "",
            "not json",
            "{}",
            "1,2",
            "[1",
            "2]",
            '{"a":1},{"b":2}',
            " 3 ",
            "3 ",
            "\ufeff{}",
            "NaN",
            None,
            3,
            b'{"task_id":"t","condition_id":"c","epoch":0,"status":"pass"}',
        ]
    ),
    max_size=6,
)


@settings(max_examples=500, deadline=None)
@given(_DOCUMENTS)
def test_stored_cells_decode_as_json_loads_and_decode_cell_make_them(texts: list[Any]) -> None:
    # reprs: NaN is not equal to itself
    assert _batch(texts) == _each(texts)


# Scores that look alike: equal as dict keys (1 and 1.0 and True, 0.0 and -0.0 and False),
# so a batch that shares equal scores between cells must still build each as its own.
_TWINS: dict[str, dict[Any, list[Any]]] = {  # a near miss too (1.0000000000000002)
    "value": {
        1.0: [1.0, 1, True, 1.0000000000000002],
        0.0: [0.0, -0.0, 0, False],
        None: [None, float("nan")],
    },
    "passed": {True: [True, 1, 1.0], False: [False, 0, -0.0]},
}


@st.composite
def _alike_scores(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    """Cells of one plain score each (or none, or two), most of them a twin of one base
    score: a value or verdict replaced by one equal to it as a key, a detail added."""
    base: dict[str, Any] = {
        "name": draw(st.sampled_from(["exact", "judge"])),
        "value": draw(st.sampled_from([1.0, 0.0, None])),
        "passed": draw(st.booleans()),
    }
    if draw(st.booleans()):
        base["reason"] = draw(st.sampled_from(["r", None]))
    cells: list[list[dict[str, Any]]] = []
    for _ in range(draw(st.integers(2, 8))):
        twin = dict(base)
        field = draw(st.sampled_from(["value", "passed", "name", "reason", "details", None]))
        if field in ("value", "passed"):
            twin[field] = draw(st.sampled_from(_TWINS[field][base[field]]))
        elif field in ("name", "reason"):  # str() of 1 and True differ, a list is no key
            twin[field] = draw(st.sampled_from([1, True, "exact", "r", ["r"]]))
        elif field == "details":
            twin["details"] = {"k": 1}
        cells.append(draw(st.sampled_from([[twin], [twin], [twin], [], [twin, base]])))
    return cells


@settings(max_examples=500, deadline=None)
@given(_alike_scores())
def test_a_batch_shares_only_the_scores_it_would_build_alike(
    scores: list[list[dict[str, Any]]],
) -> None:
    texts = [
        json.dumps({**_MINIMAL, "task_id": f"t{i}", "scores": found}, allow_nan=True)
        for i, found in enumerate(scores)
    ]
    assert _batch(texts) == _each(texts)  # reprs: -0.0 is not 0.0, 1 not True


def test_a_batch_builds_each_distinct_plain_score_once() -> None:
    """A run's equal scores are one object (a 100,000-cell run of ``exact`` holds two)."""
    score = {"name": "exact", "value": 1.0, "passed": True, "reason": "Exact match"}
    zero = {"name": "exact", "value": 0.0, "passed": False}
    texts = [
        json.dumps({**_MINIMAL, "task_id": f"t{i}", "scores": [score if i % 2 else zero]})
        for i in range(6)
    ]
    cells = decode_cells(texts, _PATH, "r")
    assert len({id(c.scores[0]) for c in cells}) == 2
    assert cells == [decode_cell(json.loads(text), _PATH, "r") for text in texts]
