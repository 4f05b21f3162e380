"""llm-as-judge without the LLM: prompts, type instructions, reply parsing, settings, the seam."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import benchkit
from benchkit.errors import ConfigError
from benchkit.formats import memorybench as mb
from benchkit.formats.memorybench import (
    JudgeSettings,
    JudgeVerdict,
    answer_prompt,
    judge_prompt,
    judge_score,
    judge_settings,
    parse_judge_reply,
    type_instruction,
)
from benchkit.formats.memorybench._judge import load_type_instructions
from benchkit.registry import default_registries

from ._llm_server import FakeOpenAI, Reply
from ._support import REPO

pytestmark = pytest.mark.anyio
LOCOMO = REPO / "benchmarks" / "memorybench" / "locomo"

_RUBRIC = """EVALUATION CRITERIA:
1. **Correctness (0-1)**: Does the generated answer match the expected answer semantically?
   - 1.0: Perfect or near-perfect match
   - 0.7-0.9: Mostly correct with minor differences
   - 0.4-0.6: Partially correct
   - 0.1-0.3: Contains some relevant information but mostly wrong
   - 0.0: Completely wrong or irrelevant

2. **Faithfulness (0-1)**: Is the answer grounded in the retrieved context AND provides useful information?
   - 1.0: Fully supported by retrieved evidence and answers the question
   - 0.5: Partially supported or only answers part of the question
   - 0.0: Not supported, hallucinated, OR simply says "I don't know/not enough information"

   IMPORTANT: Responses like "I don't have enough information" or "I cannot answer" should receive 0.0 faithfulness because they fail to provide useful information from the memory system, even if they avoid hallucination.

3. **Type-Specific Score (0-1)**: Based on the question type instructions above (if applicable).

---

"""
_TAIL = """

---

Evaluate the answer and respond with a JSON object:
{
  "correctness": <number 0-1>,
  "faithfulness": <number 0-1>,
  "reasoning": "<your explanation>",
  "typeSpecificScore": <number 0-1 or null if not applicable>
}

Return ONLY valid JSON (no markdown, no code fences)."""
_ROLE = (
    "You are an expert evaluator for memory system benchmarks. Your task is to evaluate whether "
    "a memory system correctly answered a question based on retrieved context.\n\n"
)


def test_the_judge_prompt_is_the_originals() -> None:
    prompt = judge_prompt("When?", "7 May 2023", "May 7", ["ctx one", "ctx two"], 2, "Dates.")
    assert prompt == (
        _ROLE
        + "QUESTION TYPE: 2\n\nDates.\n\n"
        + _RUBRIC
        + "QUESTION: When?\n\nEXPECTED ANSWER: 7 May 2023\n\nGENERATED ANSWER: May 7\n\n"
        + "RETRIEVED CONTEXT:\nctx one\n\n---\n\nctx two"
        + _TAIL
    )


@pytest.mark.parametrize("question_type", [None, "", 0])
def test_no_question_type_no_type_section(question_type: object) -> None:
    prompt = judge_prompt("Q", "E", "G", [], question_type, "ignored")
    assert prompt.startswith(_ROLE + "EVALUATION CRITERIA:")
    assert "RETRIEVED CONTEXT:\n(No context retrieved)\n\n---" in prompt


def test_a_type_without_instruction_keeps_an_empty_line() -> None:
    prompt = judge_prompt("Q", "E", "G", [], 4, None)
    assert _ROLE + "QUESTION TYPE: 4\n\n\n\nEVALUATION CRITERIA:" in prompt


def test_type_instructions_are_looked_up_as_javascript_keys() -> None:
    instructions = json.loads((LOCOMO / "type_instructions.json").read_text())
    assert type_instruction(instructions, 2) == instructions["2"]
    assert type_instruction(instructions, 2.0) == instructions["2"]
    assert type_instruction(instructions, "3") == instructions["3"]
    assert type_instruction(instructions, 5) is None
    assert type_instruction(instructions, None) is None
    assert type_instruction({"true": "yes"}, True) == "yes"
    assert type_instruction(None, 2) is None


def test_type_instruction_files_load_or_warn(tmp_path: Path) -> None:
    found, warning = load_type_instructions(LOCOMO / "type_instructions.json")
    assert set(found) == {"1", "2", "3", "4"} and warning is None
    empty, warning = load_type_instructions(tmp_path / "missing.json")
    assert empty == {} and warning is not None and "cannot load type instructions" in warning
    (tmp_path / "list.json").write_text("[1]")
    assert load_type_instructions(tmp_path / "list.json") == (
        {},
        f"type instructions in {tmp_path / 'list.json'} are not a JSON object",
    )


def test_the_answer_prompt_is_the_originals() -> None:
    assert answer_prompt("Where?", ["a", "b"]) == (
        "You are a helpful assistant with access to a memory system. Based on the retrieved "
        "memories below, answer the user's question concisely and accurately.\n\n"
        "RETRIEVED MEMORIES:\na\n\n---\n\nb\n\nUSER QUESTION: Where?\n\nInstructions:\n"
        "- Answer based ONLY on the information in the retrieved memories\n"
        "- Be concise and direct\n"
        "- If the memories don't contain the answer, say \"I don't have enough information to "
        'answer this question."\n'
        "- Extract the specific fact or information requested\n\nANSWER:"
    )


# --------------------------------------------------------------------------- replies


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        (
            '{"correctness": 0.8, "faithfulness": 1, "reasoning": "ok", "typeSpecificScore": 0.5}',
            JudgeVerdict(0.8, 1.0, "ok", 0.5),
        ),
        (
            'Sure!\n```json\n{"correctness": "0.9", "faithfulness": -2}\n```\nbye',
            JudgeVerdict(0.9, 0.0, "No reasoning provided"),
        ),
        (
            '```\n{"correctness": 7, "faithfulness": "abc", "reasoning": 0}```',
            JudgeVerdict(1.0, 0.0, "No reasoning provided"),
        ),
        (
            '{"correctness": [0.5], "faithfulness": true, "reasoning": {"a": 1}}',
            JudgeVerdict(0.5, 1.0, "[object Object]"),
        ),
        (
            '{"correctness": 1, "faithfulness": 1, "typeSpecificScore": "n/a"}',
            JudgeVerdict(1.0, 1.0, "No reasoning provided"),
        ),
        (
            '{"correctness": 1, "faithfulness": 1, "typeSpecificScore": null}',
            JudgeVerdict(1.0, 1.0, "No reasoning provided"),
        ),
        ("[]", JudgeVerdict(0.0, 0.0, "No reasoning provided")),
        ("5", JudgeVerdict(0.0, 0.0, "No reasoning provided")),
    ],
)
def test_replies_parse_as_the_original_parses_them(reply: str, verdict: JudgeVerdict) -> None:
    assert parse_judge_reply(reply) == verdict


@pytest.mark.parametrize(
    "reply", ["not json at all", "null", '{"correctness": NaN}', "``` ```", '{"a": 1} trailing']
)
def test_unparseable_replies_are_judge_errors(reply: str) -> None:
    verdict = parse_judge_reply(reply)
    assert verdict.judge_error and (verdict.correctness, verdict.faithfulness) == (0.0, 0.0)
    assert verdict.reasoning == f"Failed to parse judge response: {reply}"


def test_the_error_excerpt_counts_utf16_units() -> None:
    reply = "😀" * 150  # 300 UTF-16 units: JavaScript keeps the first 100 emoji
    assert parse_judge_reply(reply).reasoning == "Failed to parse judge response: " + "😀" * 100


def test_judge_scores() -> None:
    good = judge_score(JudgeVerdict(0.8, 0.6, "fine", 0.4), metrics=["correctness"])
    assert (good.name, good.value, good.passed, good.reason) == ("llm-as-judge", 0.8, True, "fine")
    assert dict(good.details) == {"correctness": 0.8, "type_specific": 0.4}
    weak = judge_score(JudgeVerdict(0.8, 0.2, "thin"))
    assert not weak.passed and weak.reason == "thin Fails: faithfulness 0.200 < 0.5."
    failed = judge_score(JudgeVerdict.failure("No text response from judge"))
    assert (failed.value, failed.passed, failed.error, dict(failed.details)) == (
        None,
        False,
        "No text response from judge",
        {"judge_error": 1},
    )


# --------------------------------------------------------------------------- settings


def test_settings_resolve_run_then_manifest_then_environment() -> None:
    env = {
        "MEMORYBENCH_JUDGE_BACKEND": "openai",
        "LLM_JUDGE_MODEL": "gpt-env",
        "GOOGLE_CLOUD_PROJECT": "p",
    }
    assert judge_settings({}, {}, env).backend == "openai"
    assert judge_settings({}, {}, env).model == "gpt-env"
    manifest = {"judge_backend": "google", "model": "gemini-manifest"}
    assert judge_settings({}, manifest, env) == JudgeSettings(
        "google", "gemini-manifest", "p", None
    )
    assert judge_settings({"model": "run-model"}, manifest, env).model == "run-model"
    default = judge_settings({}, {}, {})
    assert (default.backend, default.model, default.region) == (
        "anthropic-vertex",
        "claude-sonnet-4",
        "us-east5",
    )
    vertex = judge_settings({}, {"model": "claude-sonnet-4-20250514"}, {})
    assert vertex.model == "claude-sonnet-4"
    answer_env = {"MEMORYBENCH_ANSWER_MODEL": "small", "MEMORYBENCH_JUDGE_MODEL": "big"}
    assert judge_settings({}, {}, answer_env, purpose="answer").model == "small"
    assert judge_settings({}, {}, answer_env).model == "big"
    with pytest.raises(ConfigError, match="invalid judge backend 'bedrock'"):
        judge_settings({"judge_backend": "bedrock"}, {}, {})
    with pytest.raises(ConfigError, match="needs an explicit deployment name"):
        judge_settings({"judge_backend": "azure-openai"}, {}, {})


# --------------------------------------------------------------------------- with the LLM


def _judge_reply(correctness: float, faithfulness: float) -> str:
    return json.dumps(
        {"correctness": correctness, "faithfulness": faithfulness, "reasoning": "scripted"}
    )


async def test_the_judge_sends_the_original_prompt_and_scores_the_reply(
    llm_server: FakeOpenAI,
) -> None:
    judge = default_registries().evaluators.build(
        "memory_llm_judge",
        {
            "judge_backend": "openai",
            "model": "judge-model",
            "base_url": llm_server.url,
            "cache": False,
            "type_instructions": {"2": "Temporal."},
        },
    )
    task = benchkit.Task(
        "c1",
        input="When?",
        expected="2022",
        metadata={"memory": {"question": "When did it happen?", "question_type": 2}},
    )
    response = benchkit.Response(
        "In 2022.", retrieved=(benchkit.RetrievedItem("m1", "It happened in 2022."),)
    )
    llm_server.queue(
        Reply.text(f"```json\n{_judge_reply(0.9, 1.0)}\n```"),
        Reply.text("nope"),
        Reply.text('{"reasoning": "valid JSON without the scores"}'),
    )
    good = await judge.evaluate(task, response)
    bad = await judge.evaluate(task, response)
    (first, *_) = llm_server.requests
    assert first.body["model"] == "judge-model" and first.body["max_tokens"] == 8192
    assert first.body["messages"][0]["content"] == judge_prompt(
        "When did it happen?", "2022", "In 2022.", ["It happened in 2022."], 2, "Temporal."
    )
    sent = first.body["response_format"]["json_schema"]["schema"]
    assert sent["properties"]["correctness"]["enum"][:3] == [0.0, 0.1, 0.2]
    assert (good.value, good.passed, good.details["faithfulness"]) == (0.9, True, 1.0)
    assert good.details["usage"] == {"prompt_tokens": 10, "completion_tokens": 5}
    # out of shape twice (not JSON, then JSON without the scores): a judge error, not a 0
    assert bad.value is None and bad.details["judge_error"] == "schema_mismatch"
    assert bad.details["replies"] == ["nope", '{"reasoning": "valid JSON without the scores"}']
    assert bad.error is not None and "'correctness' is a required property" in bad.error


async def test_locomo_runs_end_to_end_with_llm_answers_and_judge(
    llm_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.url)
    for name in ("MEMORYBENCH_JUDGE_BACKEND", "LLM_JUDGE_BACKEND", "MEMORYBENCH_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)

    def respond(body: Mapping[str, Any]) -> str:
        prompt = body["messages"][0]["content"]
        if prompt.startswith("You are a helpful assistant"):
            return "An answer from memory."
        return _judge_reply(1.0, 1.0)

    llm_server.respond = respond
    suite = mb.load(LOCOMO / "lazy")
    store = benchkit.Store(tmp_path / "store.db")
    result = await benchkit.Runner(response_cache=store).run(suite.with_options(concurrency=4))
    agg = result.aggregates[0]
    assert (agg.n, agg.passed, agg.errors) == (18, 18, 0)
    kinds = [r.body["messages"][0]["content"][:20] for r in llm_server.requests]
    assert kinds.count("You are a helpful as") == 18
    assert len(kinds) == 36
    assert {r.body["model"] for r in llm_server.requests} == {"claude-sonnet-4"}
    before = len(llm_server.requests)
    again = await benchkit.Runner(response_cache=store).run(suite.with_options(concurrency=4))
    store.close()
    assert again.aggregates[0].passed == 18
    assert len(llm_server.requests) == before, "the re-run is served from the store's cache"
    uncached = await benchkit.Runner().run(suite.with_options(concurrency=4))
    assert uncached.aggregates[0].passed == 18
    assert len(llm_server.requests) == 2 * before, "no cache handed in: every call is made"


@given(st.text())
def test_any_reply_gives_a_verdict_in_range(reply: str) -> None:
    verdict = parse_judge_reply(reply)
    assert 0.0 <= verdict.correctness <= 1.0 and 0.0 <= verdict.faithfulness <= 1.0
    assert verdict.type_specific is None or 0.0 <= verdict.type_specific <= 1.0


@given(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
)
def test_numeric_replies_are_clamped(correctness: float, faithfulness: float, fenced: bool) -> None:
    body = json.dumps({"correctness": correctness, "faithfulness": faithfulness})
    verdict = parse_judge_reply(f"```json\n{body}\n```" if fenced else body)
    assert verdict.correctness == min(max(correctness, 0.0), 1.0)
    assert verdict.faithfulness == min(max(faithfulness, 0.0), 1.0)
    assert not verdict.judge_error
