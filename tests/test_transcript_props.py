"""Property tests for the parsers and the bounding of issue #25: cell references, search
text as FTS5 queries, and what a transcript keeps of any value."""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchkit import transcript
from benchkit.errors import ConfigError
from benchkit.store._story import fts_query, parse_cell_ref

_names = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="/"), min_size=1, max_size=20
)


@given(
    task=st.lists(_names, min_size=1, max_size=3).map("/".join),
    condition=_names,
    epoch=st.integers(0, 10**6),
)
def test_a_cell_reference_names_its_cell_even_when_the_task_id_holds_slashes(
    task: str, condition: str, epoch: int
) -> None:
    assert parse_cell_ref(f"{task}/{condition}/{epoch}") == (task, condition, epoch)


@given(st.text(max_size=200))
@settings(max_examples=300)
def test_any_search_text_is_a_valid_fts5_query_or_a_clear_error(text: str) -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    db.execute("INSERT INTO t VALUES ('alpha beta \"gamma\" OR NOT delta*')")
    try:
        query = fts_query(text)
    except ConfigError:
        cleaned = "".join(" " if c == '"' or c < " " or c == "\x7f" else c for c in text)
        assert not cleaned.split()
        return
    db.execute("SELECT COUNT(*) FROM t WHERE t MATCH ?", (query,)).fetchone()


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6000),
    lambda inner: (
        st.lists(inner, max_size=80) | st.dictionaries(st.text(max_size=12), inner, max_size=80)
    ),
    max_leaves=200,
)


SECRET = "sk-prop-SECRET-7f3a9c"


def _bounded(value: Any) -> bool:
    """Every string within MAX_STRING (plus its mark), every container within MAX_ITEMS
    (plus its mark)."""
    if isinstance(value, str):
        return len(value) <= transcript.MAX_STRING + 40
    if isinstance(value, list):
        return len(value) <= transcript.MAX_ITEMS + 1 and all(_bounded(v) for v in value)
    if isinstance(value, dict):
        return len(value) <= transcript.MAX_ITEMS + 1 and all(_bounded(v) for v in value.values())
    return True


@given(_json)
@settings(max_examples=150, deadline=None)
def test_what_a_transcript_keeps_is_json_bounded_and_free_of_a_secret(value: Any) -> None:
    os.environ["PROPTEST_API_KEY"] = SECRET
    try:
        kept = transcript.redact({"payload": value, "note": f"key {SECRET}"})
    finally:
        del os.environ["PROPTEST_API_KEY"]
    text = json.dumps(kept, allow_nan=False)  # JSON, with no NaN or infinity
    assert SECRET not in text
    assert _bounded(kept)


def test_a_secret_under_a_credential_key_is_redacted_at_any_depth() -> None:
    kept = transcript.redact({"a": [{"headers": {"X-Api-Key": "k" * 20, "max_tokens": 5}}]})
    assert kept == {"a": [{"headers": {"X-Api-Key": "[redacted]", "max_tokens": 5}}]}


@pytest.mark.parametrize("ref", ["t1", "/c", "", "t1/"])
def test_a_bad_cell_reference_is_a_clear_error(ref: str) -> None:
    with pytest.raises(ConfigError, match="TASK/CONDITION"):
        parse_cell_ref(ref)
