"""``cell_json`` writes exactly what the general path (cattrs, then ``json``) writes.

The run store and the JSONL sink keep a cell as this text, and resume, ``compare`` and the
server read it back, so a single byte of difference would be a format change. Generated
cells cover the shapes the fast path handles and the ones it must hand to the general path
(non-string outputs, details, tool calls, NaN, ``-0.0``, int where a float is declared,
subclasses, surrogates).
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from benchkit import CellResult, Response, Score, Verdict
from benchkit._celljson import cell_json
from benchkit.model import ToolCall, Usage
from benchkit.serde import converter
from benchkit.store._jsonl import _ENCODER as JSONL_ENCODER
from benchkit.store._records import ENCODER as STORE_ENCODER

ENCODERS = (STORE_ENCODER, JSONL_ENCODER)

texts = st.text(max_size=12)
optional_texts = st.none() | texts
floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1.0])
numbers = floats | st.integers(-3, 3) | st.booleans()
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | floats | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
details: st.SearchStrategy[dict[str, Any]] = st.just({}) | st.dictionaries(
    texts, json_values, max_size=2
)


class FloatSub(float):
    pass


class StrSub(str):
    pass


scores = st.builds(
    Score,
    name=texts,
    value=st.none() | floats | st.integers(0, 1),
    passed=st.booleans(),
    reason=optional_texts,
    details=details,
    error=optional_texts,
)
verdicts = st.builds(
    Verdict,
    name=texts,
    passed=st.booleans(),
    category=st.sampled_from(["none", "timeout", "file_missing"]),
    message=optional_texts,
    exit_code=st.none() | st.integers(-1, 2),
    duration_ms=floats,
)
responses = st.builds(
    Response,
    output=st.none() | texts | json_values,
    latency_ms=st.none() | floats | st.integers(0, 5),
    usage=st.none() | st.builds(Usage, prompt_tokens=st.integers(0, 9)),
    tool_calls=st.lists(st.builds(ToolCall, name=texts), max_size=1),
    artifacts=optional_texts,
    metadata=st.just({}) | st.dictionaries(texts, json_values, max_size=1),
)
plain_floats = st.floats(allow_nan=False, allow_infinity=False)
#: Cells of the shapes the fast path writes itself, no piece handed to the general path.
PLAIN: dict[str, Any] = {
    "task_id": texts,
    "condition_id": texts,
    "epoch": st.integers(0, 3),
    "status": st.sampled_from(["pass", "fail", "error", "timeout"]),
    "index": st.integers(0, 5),
    "error_category": st.sampled_from(["none", "assertion_failed"]),
    "error": optional_texts,
    "score": st.none() | plain_floats,
    "scores": st.lists(
        st.builds(
            Score,
            name=texts,
            value=st.none() | plain_floats,
            passed=st.booleans(),
            reason=optional_texts,
            error=optional_texts,
        ),
        max_size=2,
    ).map(tuple),
    "response": st.none() | st.builds(Response, output=texts, latency_ms=st.none() | plain_floats),
    "attempts": st.integers(1, 3),
    "started_at": plain_floats,
    "duration_ms": plain_floats,
    "weight": plain_floats,
    "tags": st.lists(texts, max_size=2).map(tuple),
    "domain": optional_texts,
    "difficulty": optional_texts,
    "cluster": optional_texts,
}
plain_cells = st.builds(CellResult, **PLAIN)
#: ...and cells with the odd pieces the general path must write.
cells = st.builds(
    CellResult,
    **{
        **PLAIN,
        "task_id": texts | st.builds(StrSub, texts),
        "index": st.integers(0, 5) | st.just(True),
        "error_category": st.sampled_from(["none", "assertion_failed", "timeout"]),
        "score": st.none() | numbers | st.builds(FloatSub, st.floats(0, 1)),
        "scores": st.lists(scores, max_size=2).map(tuple),
        "verdicts": st.lists(verdicts, max_size=2).map(tuple),
        "response": st.none() | responses,
        "started_at": numbers,
        "duration_ms": numbers,
        "weight": numbers,
    },
)


def _general(cell: Any, encoder: json.JSONEncoder) -> str:
    return encoder.encode(converter.unstructure(cell))


@settings(max_examples=1500, deadline=None)
@given(cells)
def test_cell_json_is_the_general_path_byte_for_byte(cell: CellResult) -> None:
    for encoder in ENCODERS:
        assert cell_json(cell, encoder) == _general(cell, encoder)


def test_the_common_cell_takes_the_fast_path_and_reads_back() -> None:
    cell = CellResult(
        task_id="t-é\n",
        condition_id="c",
        epoch=1,
        status="fail",
        index=7,
        error_category="assertion_failed",
        error='Expected "4"',
        score=0.0,
        scores=(Score("exact", 0.0, False, reason='Expected "4"'),),
        response=Response(output="5 ✓", latency_ms=0.1 + 0.2),
        attempts=2,
        started_at=1795620343.8441553,
        duration_ms=12.000000000000002,
        weight=2.5,
        tags=("a", "b"),
        domain="math",
        difficulty="easy",
        cluster="k1",
    )
    text = cell_json(cell, STORE_ENCODER)
    assert text == _general(cell, STORE_ENCODER)
    assert converter.structure(json.loads(text), CellResult) == cell


def test_values_json_cannot_hold_follow_the_encoder() -> None:
    """The store's encoder writes them with ``str``; the JSONL sink's refuses them, as the
    general path does."""
    cell = CellResult(
        "t", "c", 0, "pass", scores=(Score("s", 1.0, True, details={"when": {1, 2}}),)
    )
    assert cell_json(cell, STORE_ENCODER) == _general(cell, STORE_ENCODER)
    for encode in (cell_json, _general):
        try:
            encode(cell, JSONL_ENCODER)
        except TypeError:
            continue
        raise AssertionError(f"{encode.__name__} wrote a set into JSON")


def test_non_finite_floats_are_written_as_json_writes_them() -> None:
    for value, text in ((math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity")):
        cell = CellResult("t", "c", 0, "pass", score=value, duration_ms=value)
        out = cell_json(cell, STORE_ENCODER)
        assert f'"score":{text}' in out and out == _general(cell, STORE_ENCODER)


@settings(max_examples=500, deadline=None)
@given(plain_cells)
def test_cells_of_the_common_shape_match_too(cell: CellResult) -> None:
    """The shapes the fast path writes itself (no piece handed to the general path)."""
    assert cell_json(cell, STORE_ENCODER) == _general(cell, STORE_ENCODER)


def test_a_score_shared_by_many_cells_is_written_the_same_each_time() -> None:
    shared = Score("exact", 1.0, True, reason="Exact match")
    other = Score("exact", 0.0, False, reason='Expected "1"')
    for score in (shared, other, shared, shared, other):
        cell = CellResult("t", "c", 0, "pass", scores=(score,))
        assert cell_json(cell, STORE_ENCODER) == _general(cell, STORE_ENCODER)
