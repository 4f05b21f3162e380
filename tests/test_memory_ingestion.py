"""Ingestion strategies, formatters and evidence parsers (the JavaScript coercions behind them
are tested in test_js.py)."""

from __future__ import annotations

from typing import Literal

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchkit._js import MISSING
from benchkit.formats.memorybench._ingest import (
    format_conversation,
    parse_evidence,
    parse_relevant_evidence,
    plan_ingestion,
    relevant_session_ids,
    session_indices,
)
from benchkit.formats.memorybench._manifest import (
    AddDeleteVerifyIngestion,
    SessionIngestion,
    SimpleIngestion,
)
from benchkit.model import SetupStep

# --------------------------------------------------------------------------- formatters


def test_conversation_layout_drops_the_blank_line_and_empty_parts() -> None:
    messages = [("user", "Hi"), ("assistant", "Hello")]
    assert format_conversation(messages, "s1", "2023/05/20") == (
        "=== Session: s1 ===\nDate: 2023/05/20\n[USER]: Hi\n\n[ASSISTANT]: Hello"
    )
    assert (
        format_conversation(messages, "s1", "")
        == "=== Session: s1 ===\n[USER]: Hi\n\n[ASSISTANT]: Hello"
    )
    assert format_conversation(messages, MISSING, MISSING) == "[USER]: Hi\n\n[ASSISTANT]: Hello"
    assert format_conversation([], 0, "d") == "Date: d"  # id 0 is falsy in JavaScript


_ARRAY = SessionIngestion(
    strategy="session-based",
    sessions_field="sessions",
    session_ids_field="ids",
    dates_field="dates",
    answer_session_ids_field="answers",
)


def _record(**extra: object) -> dict[str, object]:
    return {
        "sessions": [
            [{"role": "user", "content": "I love hiking"}, {"role": "assistant", "content": 3}],
            [{"role": "user", "content": "Name: Alex"}],
            [],
            None,
        ],
        "ids": ["s1", "s2", "s3", "s4"],
        "dates": ["2023/01/01", "2023/01/02"],
        "answers": ["s2"],
        **extra,
    }


def test_session_based_array_full() -> None:
    plan = plan_ingestion(_record(), _ARRAY)
    assert plan.error is None and (plan.total, plan.selected) == (4, 4)
    # the None session is skipped; [] is truthy in JavaScript and ingested (header only)
    assert [s.content for s in plan.steps] == [
        "=== Session: s1 ===\nDate: 2023/01/01\n[USER]: I love hiking\n\n[ASSISTANT]: 3",
        "=== Session: s2 ===\nDate: 2023/01/02\n[USER]: Name: Alex",
        "=== Session: s3 ===",
    ]
    assert [dict(s.metadata) for s in plan.steps] == [
        {"_sessionId": "s1", "_sessionDate": "2023/01/01", "_sessionIndex": 0},
        {"_sessionId": "s2", "_sessionDate": "2023/01/02", "_sessionIndex": 1},
        {"_sessionId": "s3", "_sessionIndex": 2},
    ]
    assert {s.action for s in plan.steps} == {"add"}


def test_raw_formatter_stores_json() -> None:
    raw = SessionIngestion(
        strategy="session-based", sessions_field="sessions", content_formatter="raw"
    )
    plan = plan_ingestion({"sessions": ["plain text", [{"b": 1.0, "a": "x"}]]}, raw)
    assert [s.content for s in plan.steps] == ["plain text", '[{"b":1,"a":"x"}]']


@pytest.mark.parametrize(
    ("mode", "indices"),
    [("lazy", [1]), ("full", [0, 1, 2, 3]), ("shared", [0, 1, 2, 3])],
)
def test_modes_select_sessions(mode: Literal["lazy", "shared", "full"], indices: list[int]) -> None:
    cfg = SessionIngestion(
        strategy="session-based",
        sessions_field="sessions",
        session_ids_field="ids",
        answer_session_ids_field="answers",
        mode=mode,
    )
    plan = plan_ingestion(
        _record(sessions=[[{"role": "u", "content": str(i)}] for i in range(4)]), cfg
    )
    assert [s.metadata["_sessionIndex"] for s in plan.steps] == indices


def test_lazy_falls_back_to_the_first_session() -> None:
    ids = ["a", "b", "c"]
    assert session_indices(3, ids, ["zzz"], "lazy", 10) == [0]
    assert session_indices(3, None, ["a"], "lazy", 10) == [0]
    assert session_indices(3, ids, None, "lazy", 10) == [0]
    assert session_indices(3, ["", "b", "c"], ["", "c"], "lazy", 10) == [2]  # "" is falsy


@pytest.mark.parametrize(
    ("total", "answers", "size", "expected"),
    [
        (20, ["s7", "s15"], 10, [0, 2, 5, 7, 10, 12, 15, 17]),
        (19, ["s2"], 6, [0, 2, 3, 7, 11, 15]),  # at least 5 sampled: max(6 - 1, 5)
        (4, ["s3"], 10, [0, 1, 2, 3]),
        (30, [], 3, [0, 6, 12, 18, 24]),
    ],
)
def test_shared_mode_samples_evenly_and_keeps_answers(
    total: int, answers: list[str], size: int, expected: list[int]
) -> None:
    ids = [f"s{i}" for i in range(total)]
    assert session_indices(total, ids, answers, "shared", size) == expected


@given(st.integers(1, 60), st.lists(st.integers(0, 59), max_size=5), st.integers(0, 20))
def test_shared_mode_properties(total: int, answers: list[int], size: int) -> None:
    ids = [f"s{i}" for i in range(total)]
    chosen = session_indices(total, ids, [f"s{a}" for a in answers], "shared", size)
    assert chosen == sorted(set(chosen))
    assert all(0 <= i < total for i in chosen)
    assert {a for a in answers if a < total} <= set(chosen)
    assert len(chosen) >= min(total, 5)


# --------------------------------------------------------------------------- LoCoMo shape

_LOCOMO = SessionIngestion(
    strategy="session-based",
    sessions_field="conversation",
    sessions_format="dynamic_keys",
    evidence_field="evidence",
    evidence_parser="dialog_refs",
    mode="lazy",
)


def _conversation() -> dict[str, object]:
    return {
        "speaker_a": "Caroline",
        "speaker_b": "Melanie",
        "session_10": [{"speaker": "Melanie", "dia_id": "D10:1", "text": "Ten"}],
        "session_10_date_time": "10 May 2023",
        "session_2": [
            {"speaker": "Caroline", "dia_id": "D2:1", "text": "Hi Mel!", "img_url": ["x"]},
            {"speaker": "Melanie", "dia_id": "D2:2", "text": "Hey!"},
        ],
        "session_2_date_time": "2 May 2023",
        "session_3_date_time": "no session here",
        "session_x": [],
    }


def test_dynamic_keys_sorts_numerically_and_maps_speakers() -> None:
    full = attrs.evolve(_LOCOMO, mode="full")
    plan = plan_ingestion({"conversation": _conversation(), "evidence": ["D2:1"]}, full)
    assert [s.metadata["_sessionId"] for s in plan.steps] == ["D2", "D10"]
    assert plan.steps[0].content == (
        "=== Session: D2 ===\nDate: 2 May 2023\n[USER]: Caroline: Hi Mel!\n\n[ASSISTANT]: Melanie: Hey!"
    )
    role_content = attrs.evolve(full, dialogue_content_formatter="role_content")
    plan = plan_ingestion({"conversation": _conversation()}, role_content)
    assert plan.steps[1].content == "=== Session: D10 ===\nDate: 10 May 2023\n[ASSISTANT]: Ten"


def test_lazy_ingests_only_evidence_sessions() -> None:
    plan = plan_ingestion({"conversation": _conversation(), "evidence": ["D10:1"]}, _LOCOMO)
    assert [s.metadata["_sessionId"] for s in plan.steps] == ["D10"]
    assert (plan.total, plan.selected) == (2, 1)
    # "D10" without a colon is no evidence for ingestion: first session only
    plan = plan_ingestion({"conversation": _conversation(), "evidence": ["D10"]}, _LOCOMO)
    assert [s.metadata["_sessionId"] for s in plan.steps] == ["D2"]


def test_ingestion_and_metrics_parse_evidence_differently() -> None:
    refs = ["D5", "d3:1", "D21:18 D11:15", "D:11:26", "D", "D1:3; D2:5", 7]
    assert parse_evidence(refs, "dialog_refs") == ["D21", "D1", "D2"]
    assert parse_relevant_evidence(refs, "dialog_refs") == ["D5", "D3", "D21", "D1", "D2"]
    assert parse_evidence([" s1 ", 2, "s2"], "direct") == [" s1 ", "s2"]
    assert parse_relevant_evidence([" s1 ", "", "s2"], "direct") == ["s1", "s2"]
    assert parse_relevant_evidence("D4:1", "dialog_refs") == ["D4"]
    assert parse_relevant_evidence(None, "dialog_refs") == []


def test_relevant_ids_prefer_answer_session_ids() -> None:
    both = SessionIngestion(
        strategy="session-based",
        sessions_field="s",
        answer_session_ids_field="answers",
        evidence_field="evidence",
        evidence_parser="dialog_refs",
    )
    assert relevant_session_ids({"answers": [1, "b", "b"], "evidence": ["D1:1"]}, both) == (
        "1",
        "b",
    )
    assert relevant_session_ids({"answers": "nope", "evidence": ["D1:1"]}, both) == ("D1",)
    assert relevant_session_ids({"answers": [], "evidence": ["D1:1"]}, both) == ()
    simple = SimpleIngestion(strategy="simple", content_field="c")
    assert relevant_session_ids({"answers": ["x"]}, simple) == ()


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({}, "Sessions field 'sessions' not found or not an array"),
        ({"sessions": []}, "No sessions found to ingest"),
        ({"sessions": [["hello"]]}, "session 0: its first turn is a string, not an object"),
        ({"sessions": ["text"]}, "session 0: expected a list of messages, got a string"),
        ({"sessions": [[{"content": "x"}]]}, "session 0, message 0: `role` must be a string"),
    ],
)
def test_session_records_that_cannot_be_ingested(record: dict[str, object], message: str) -> None:
    cfg = SessionIngestion(strategy="session-based", sessions_field="sessions")
    plan = plan_ingestion(record, cfg)
    assert plan.steps == () and plan.error is not None and message in plan.error


def test_dynamic_keys_needs_an_object() -> None:
    plan = plan_ingestion({"conversation": "x"}, _LOCOMO)
    assert plan.error == "Sessions field 'conversation' not found or not an object"
    assert plan_ingestion({"conversation": []}, _LOCOMO).error == "No sessions found to ingest"


# --------------------------------------------------------------------------- simple


def test_simple_strategy() -> None:
    cfg = SimpleIngestion(
        strategy="simple", content_field="docs", is_array=True, metadata_fields=("src", "nope")
    )
    plan = plan_ingestion({"docs": ["a", 3, {"k": 1.0}, None], "src": "wiki"}, cfg)
    assert [s.content for s in plan.steps] == ["a", "3", '{"k":1}', "null"]
    assert [dict(s.metadata) for s in plan.steps][1] == {"src": "wiki", "_index": 1}
    single = SimpleIngestion(strategy="simple", content_field="docs")
    assert [s.content for s in plan_ingestion({"docs": ["a", "b"]}, single).steps] == ['["a","b"]']


def test_simple_strategy_errors() -> None:
    cfg = SimpleIngestion(strategy="simple", content_field="content", is_array=True)
    assert plan_ingestion({}, cfg).error == "Content field 'content' not found in input"
    error = plan_ingestion({"content": "text"}, cfg).error
    assert error is not None and "not an array" in error


# --------------------------------------------------------------------------- add-delete-verify

_ADV = AddDeleteVerifyIngestion(
    strategy="add-delete-verify", add_content_field="memories", delete_target_field="forget"
)


def test_add_delete_verify_plans_add_wait_delete() -> None:
    record = {
        "memories": ["code 4512", {"id": "pet", "content": "cat Miso", "metadata": {"t": 1}}],
        "forget": [0, "pet"],
    }
    plan = plan_ingestion(record, _ADV)
    assert plan.steps == (
        SetupStep("add", content="code 4512", target="0", metadata={"_index": 0}),
        SetupStep("add", content="cat Miso", target="pet", metadata={"t": 1, "_index": 1}),
        SetupStep("wait", delay_ms=100.0),
        SetupStep("delete", target="0"),
        SetupStep("delete", target="pet"),
    )
    assert plan.deleted == ("code 4512", "cat Miso")


def test_add_delete_verify_without_delay_and_with_one_string() -> None:
    cfg = AddDeleteVerifyIngestion(
        strategy="add-delete-verify",
        add_content_field="memories",
        delete_target_field="forget",
        phase_delay_ms=0,
    )
    plan = plan_ingestion({"memories": "only fact", "forget": "0"}, cfg)
    assert [s.action for s in plan.steps] == ["add", "delete"]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"forget": 0}, "Content field 'memories' not found"),
        ({"memories": ["a"]}, "Delete target field 'forget' not found"),
        ({"memories": ["a"], "forget": 3}, "delete target 3 in 'forget' names no item"),
        ({"memories": ["a"], "forget": "x"}, 'delete target "x"'),
        (
            {"memories": [{"id": "a", "content": 1}, {"id": "a", "content": 2}], "forget": "a"},
            "two items of 'memories' have the id 'a'",
        ),
    ],
)
def test_add_delete_verify_errors(record: dict[str, object], message: str) -> None:
    error = plan_ingestion(record, _ADV).error
    assert error is not None and message in error


refs = st.lists(st.text(alphabet="Dd0123456789:; ,x", max_size=12) | st.integers(0, 9), max_size=6)


@given(refs)
def test_metrics_find_every_session_ingestion_finds(evidence: list[object]) -> None:
    ingestion = parse_evidence(evidence, "dialog_refs")
    metrics = parse_relevant_evidence(evidence, "dialog_refs")
    assert set(ingestion) <= set(metrics)
    assert len(metrics) == len(set(metrics))
    assert all(s.startswith("D") and s[1:].isdigit() for s in metrics)
