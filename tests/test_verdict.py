"""Verdicts in shape: the reply parser every LLM judge shares (benchkit.evaluators._verdict)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from benchkit.evaluators._judge import bare_number
from benchkit.evaluators._verdict import parse_verdict, schema_check, score_schema

#: What a judge validates a reply against (the schema it sends, score_schema, is tighter:
#: bounds a grammar needs, which a reply from an endpoint that enforces none may exceed).
_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 0, "maximum": 10},
        "reason": {"type": "string"},
    },
    "required": ["score"],
}
_CHECK = schema_check(_SCHEMA)


def test_the_schema_sent_is_bounded_for_a_grammar() -> None:
    sent = score_schema(0, 10)
    assert sent["properties"]["score"]["enum"] == list(range(11))
    assert sent["properties"]["reason"]["maxLength"] == 200
    assert sent["required"] == ["score", "reason"] and sent["additionalProperties"] is False


def _bare(text: str) -> Any:
    number = bare_number(text)
    return None if number is None else {"score": number}


@given(st.integers(-10_000, 10_000), st.sampled_from(["", " ", "\n", "/10", ".", " / 10 "]))
def test_a_number_and_nothing_else_is_read(number: int, tail: str) -> None:
    assert bare_number(f" {number}{tail}") == number


@given(
    st.integers(0, 100),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz'(),", min_size=1, max_size=12),
)
def test_a_number_in_free_text_is_no_verdict(number: int, words: str) -> None:
    # "80 legs", "The answer is incorrect ... '7 times 6'": never "the first number"
    assert bare_number(f"{number} {words}") is None
    assert bare_number(f"{words} {number}") is None
    data, kind, _ = parse_verdict(f"{words} {number} {words}", _CHECK, bare=_bare)
    assert (data, kind) == (None, "not_json")


@given(st.integers(0, 10), st.text(max_size=200))
def test_a_reply_matching_the_schema_is_read_back(score: int, reason: str) -> None:
    reply = {"score": score, "reason": reason}
    for text in (
        json.dumps(reply),
        f"```json\n{json.dumps(reply)}\n```",
        f"Here: {json.dumps(reply)}",
    ):
        assert parse_verdict(text, _CHECK) == (reply, None, None)


@given(st.integers(11, 1000) | st.integers(-1000, -1))
def test_a_score_off_the_scale_is_a_schema_mismatch(score: int) -> None:
    data, kind, why = parse_verdict(json.dumps({"score": score, "reason": ""}), _CHECK)
    assert (data, kind) == (None, "schema_mismatch")
    assert why is not None and "$.score" in why


def test_a_raw_line_break_in_a_string_is_read() -> None:
    # llama-cpp-python's JSON grammar lets the model write one; json.loads(strict) refuses it
    assert parse_verdict('{"score": 3, "reason": "a\nb"}', _CHECK)[0] == {
        "score": 3,
        "reason": "a\nb",
    }


def test_an_empty_reply_and_a_refused_verdict_have_their_kinds() -> None:
    assert parse_verdict("  ", _CHECK)[1] == "empty_reply"
    refuse = parse_verdict('{"score": 3, "reason": ""}', _CHECK, check=lambda d: "no")
    assert refuse == (None, "invalid_verdict", "no")
