"""llm-as-judge: the original's prompts, type instructions and reply parsing, without the LLM.

Everything here is a pure function; the LLM calls themselves go through benchkit's LLM
client (``_llm``). How the pieces fit, per case::

    instruction = type_instruction(instructions, question_type)
    prompt = judge_prompt(question, expected, generated, contexts, question_type, instruction)
    reply = <one user message to the judge model, max 8192 output tokens>
    verdict = parse_judge_reply(reply)      # or JudgeVerdict.failure("Judge error: ...")
    score = judge_score(verdict)            # a judge failure is an error, never a 0

and the answer the judge grades comes from ``answer_prompt(question, contexts[:5])``
(1024 output tokens; :data:`~benchkit.memory._pipeline.NO_ANSWER` without any context).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from benchkit._js import (
    MISSING,
    WHITESPACE,
    to_number,
    to_string,
    trim,
    truthy,
    utf16_prefix,
)
from benchkit.errors import ConfigError
from benchkit.formats.memorybench._evaluate import PASS_CORRECTNESS, PASS_FAITHFULNESS, pass_rule
from benchkit.results import Score

__all__ = [
    "ANSWER_CONTEXTS",
    "JUDGE_BACKENDS",
    "JudgeSettings",
    "JudgeVerdict",
    "answer_prompt",
    "judge_prompt",
    "judge_score",
    "judge_settings",
    "load_type_instructions",
    "parse_judge_reply",
    "type_instruction",
]

ANSWER_CONTEXTS = 5
"""How many retrieved memories the original shows the answering model."""

JUDGE_BACKENDS = (
    "anthropic-vertex",
    "google-vertex",
    "openai",
    "azure-openai",
    "anthropic",
    "google",
)
_DEFAULT_MODELS = {
    "anthropic-vertex": "claude-sonnet-4",
    "google-vertex": "gemini-2.5-flash",
    "openai": "gpt-4o",
    "anthropic": "claude-sonnet-4-20250514",
    "google": "gemini-1.5-flash",
}
_DEFAULT_REGIONS = {"anthropic-vertex": "us-east5", "google-vertex": "us-central1"}
_VERTEX_DATE = re.compile(r"-[0-9]{8}$")
_WS = f"[{re.escape(WHITESPACE)}]"
_FENCE = re.compile(f"```(?:json)?{_WS}*([\\s\\S]*?)```")
_CONTEXT_SEPARATOR = "\n\n---\n\n"


# --------------------------------------------------------------------------- prompts


def answer_prompt(question: str, contexts: Sequence[str]) -> str:
    """The original's answer-generation prompt (pass the top five contexts)."""
    return (
        "You are a helpful assistant with access to a memory system. Based on the retrieved "
        "memories below, answer the user's question concisely and accurately.\n\n"
        f"RETRIEVED MEMORIES:\n{_CONTEXT_SEPARATOR.join(contexts)}\n\n"
        f"USER QUESTION: {question}\n\n"
        "Instructions:\n"
        "- Answer based ONLY on the information in the retrieved memories\n"
        "- Be concise and direct\n"
        "- If the memories don't contain the answer, say \"I don't have enough information to "
        'answer this question."\n'
        "- Extract the specific fact or information requested\n\n"
        "ANSWER:"
    )


def type_instruction(instructions: Mapping[str, Any] | None, question_type: Any) -> str | None:
    """The instruction for ``question_type``, looked up as JavaScript does: the key is
    ``String(question_type)``, so LoCoMo's numeric category ``2`` finds ``"2"``.

        >>> type_instruction({"2": "Temporal."}, 2), type_instruction({"2": "x"}, 4)
        ('Temporal.', None)
    """
    if not instructions or not truthy(question_type):
        return None
    found = instructions.get(to_string(question_type))
    return None if found is None else to_string(found)


def judge_prompt(
    question: str,
    expected: str,
    generated: str,
    contexts: Sequence[str],
    question_type: Any = None,
    instruction: str | None = None,
) -> str:
    """The original's judge prompt (one user message), byte for byte.

    The ``QUESTION TYPE`` section appears only when ``question_type`` is truthy (in the
    JavaScript sense); a type without an instruction keeps the section with an empty line.
    """
    type_section = (
        f"QUESTION TYPE: {to_string(question_type)}\n\n{instruction or ''}\n\n"
        if truthy(question_type)
        else ""
    )
    context = _CONTEXT_SEPARATOR.join(contexts) if contexts else "(No context retrieved)"
    return (
        "You are an expert evaluator for memory system benchmarks. Your task is to evaluate "
        "whether a memory system correctly answered a question based on retrieved context.\n\n"
        f"{type_section}EVALUATION CRITERIA:\n"
        "1. **Correctness (0-1)**: Does the generated answer match the expected answer "
        "semantically?\n"
        "   - 1.0: Perfect or near-perfect match\n"
        "   - 0.7-0.9: Mostly correct with minor differences\n"
        "   - 0.4-0.6: Partially correct\n"
        "   - 0.1-0.3: Contains some relevant information but mostly wrong\n"
        "   - 0.0: Completely wrong or irrelevant\n\n"
        "2. **Faithfulness (0-1)**: Is the answer grounded in the retrieved context AND "
        "provides useful information?\n"
        "   - 1.0: Fully supported by retrieved evidence and answers the question\n"
        "   - 0.5: Partially supported or only answers part of the question\n"
        "   - 0.0: Not supported, hallucinated, OR simply says \"I don't know/not enough "
        'information"\n\n'
        '   IMPORTANT: Responses like "I don\'t have enough information" or "I cannot '
        'answer" should receive 0.0 faithfulness because they fail to provide useful '
        "information from the memory system, even if they avoid hallucination.\n\n"
        "3. **Type-Specific Score (0-1)**: Based on the question type instructions above (if "
        "applicable).\n\n"
        "---\n\n"
        f"QUESTION: {question}\n\n"
        f"EXPECTED ANSWER: {expected}\n\n"
        f"GENERATED ANSWER: {generated}\n\n"
        f"RETRIEVED CONTEXT:\n{context}\n\n"
        "---\n\n"
        "Evaluate the answer and respond with a JSON object:\n"
        "{\n"
        '  "correctness": <number 0-1>,\n'
        '  "faithfulness": <number 0-1>,\n'
        '  "reasoning": "<your explanation>",\n'
        '  "typeSpecificScore": <number 0-1 or null if not applicable>\n'
        "}\n\n"
        "Return ONLY valid JSON (no markdown, no code fences)."
    )


def load_type_instructions(path: Path) -> tuple[dict[str, str], str | None]:
    """``(instructions, warning)`` from a type-instructions JSON file.

    As the original, a missing, unreadable or malformed file is not fatal: it yields no
    instructions and a warning saying why.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {}, f"cannot load type instructions from {path}: {exc}"
    if not isinstance(data, dict):
        return {}, f"type instructions in {path} are not a JSON object"
    return {str(k): to_string(v) for k, v in data.items()}, None


# --------------------------------------------------------------------------- replies


@attrs.frozen
class JudgeVerdict:
    """What the judge said: scores clamped to [0, 1], or ``judge_error`` with the reason."""

    correctness: float
    faithfulness: float
    reasoning: str
    type_specific: float | None = None
    judge_error: bool = False

    @classmethod
    def failure(cls, reasoning: str) -> JudgeVerdict:
        """A judge that gave no usable reply (``"No text response from judge"``,
        ``"Judge error: <message>"``)."""
        return cls(0.0, 0.0, reasoning, None, True)


def _clamp(value: float) -> float:
    return max(0.0, min(1.0, value))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_judge_reply(text: str) -> JudgeVerdict:
    """The original's parser: the inside of the first ``` fence (optionally ```json) when
    there is one, else the whole reply, must be strict JSON.

    ``correctness`` / ``faithfulness`` are ``Number(x) || 0`` clamped to [0, 1];
    ``reasoning`` defaults to "No reasoning provided"; ``typeSpecificScore`` is kept when
    present and numeric (the original lets a non-numeric one through as NaN; benchkit
    drops it). A reply that does not parse is a :meth:`JudgeVerdict.failure`.

        >>> parse_judge_reply('```json\\n{"correctness": "0.8", "faithfulness": 2}\\n```')
        JudgeVerdict(correctness=0.8, faithfulness=1.0, reasoning='No reasoning provided', type_specific=None, judge_error=False)
    """
    raw = text
    match = _FENCE.search(text)
    if match and match.group(1):
        raw = trim(match.group(1))
    try:
        parsed = json.loads(raw, parse_constant=_reject_constant)
        if parsed is None:
            raise ValueError("null has no properties")
    except ValueError:
        return JudgeVerdict.failure(
            f"Failed to parse judge response: {utf16_prefix(text, 200, split_pairs=True)}"
        )

    def field(name: str) -> Any:
        return parsed.get(name, MISSING) if isinstance(parsed, dict) else MISSING

    def score(name: str) -> float:
        value = to_number(field(name))
        return _clamp(value if value == value and value != 0 else 0.0)

    reasoning = field("reasoning")
    special = field("typeSpecificScore")
    type_specific: float | None = None
    if special is not MISSING and special is not None:
        number = to_number(special)
        type_specific = None if math.isnan(number) else _clamp(number)
    return JudgeVerdict(
        correctness=score("correctness"),
        faithfulness=score("faithfulness"),
        reasoning=to_string(reasoning) if truthy(reasoning) else "No reasoning provided",
        type_specific=type_specific,
    )


def judge_score(
    verdict: JudgeVerdict,
    *,
    pass_correctness: float = PASS_CORRECTNESS,
    pass_faithfulness: float = PASS_FAITHFULNESS,
    metrics: Iterable[str] | None = None,
) -> Score:
    """The ``llm-as-judge`` Score of a verdict (the layout of ``exact-match``).

    value = correctness; passes by MemoryBench's rule; details = the listed metrics among
    correctness / faithfulness, plus ``type_specific`` when the judge gave one. A judge
    failure is an error score (``value=None``, ``details={"judge_error": 1}``): the cell
    is an error and never enters an average as 0.
    """
    if verdict.judge_error:
        return Score(
            name="llm-as-judge",
            value=None,
            passed=False,
            details={"judge_error": 1},
            error=verdict.reasoning,
        )
    listed = None if metrics is None else set(metrics)
    details: dict[str, Any] = {
        k: v
        for k, v in (("correctness", verdict.correctness), ("faithfulness", verdict.faithfulness))
        if listed is None or k in listed
    }
    if verdict.type_specific is not None:
        details["type_specific"] = verdict.type_specific
    why = pass_rule(verdict.correctness, verdict.faithfulness, pass_correctness, pass_faithfulness)
    return Score(
        name="llm-as-judge",
        value=verdict.correctness,
        passed=why is None,
        reason=verdict.reasoning if why is None else f"{verdict.reasoning} Fails: {why}.",
        details=details,
    )


# --------------------------------------------------------------------------- settings


@attrs.frozen
class JudgeSettings:
    """Which backend and model judge (or answer), and where (Vertex project / region)."""

    backend: str
    model: str
    project_id: str | None = None
    region: str | None = None


def judge_settings(
    run: Mapping[str, Any],
    manifest: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    *,
    purpose: str = "judge",
) -> JudgeSettings:
    """Settings resolved run options > manifest > environment > the original's defaults.

    (The original lets the environment beat the manifest; benchkit's decision 7 puts the
    files people review first.) ``run`` and ``manifest`` use the manifest's keys
    (``judge_backend``, ``model``, ``project_id``, ``region``); the environment is read as
    the original reads it: ``MEMORYBENCH_JUDGE_BACKEND`` / ``LLM_JUDGE_BACKEND``,
    ``MEMORYBENCH_JUDGE_MODEL`` / ``LLM_JUDGE_MODEL``, and for ``purpose="answer"``
    ``MEMORYBENCH_ANSWER_BACKEND`` / ``MEMORYBENCH_ANSWER_MODEL`` first.
    """
    env = os.environ if environ is None else environ

    def first(*values: Any) -> Any:
        return next((v for v in values if v), None)

    answer = purpose == "answer"
    backend = first(
        run.get("judge_backend"),
        manifest.get("judge_backend"),
        env.get("MEMORYBENCH_ANSWER_BACKEND") if answer else None,
        env.get("MEMORYBENCH_JUDGE_BACKEND"),
        env.get("LLM_JUDGE_BACKEND"),
        "anthropic-vertex",
    )
    if backend not in JUDGE_BACKENDS:
        raise ConfigError(
            f"invalid judge backend {backend!r}", fix=f"use one of: {', '.join(JUDGE_BACKENDS)}."
        )
    model = first(
        run.get("model"),
        manifest.get("model"),
        env.get("MEMORYBENCH_ANSWER_MODEL") if answer else None,
        env.get("MEMORYBENCH_JUDGE_MODEL"),
        env.get("LLM_JUDGE_MODEL"),
        _DEFAULT_MODELS.get(backend),
    )
    if model is None:
        raise ConfigError(
            f"the {backend} backend needs an explicit deployment name",
            fix="set evaluation.model in the manifest or MEMORYBENCH_JUDGE_MODEL.",
        )
    if backend == "anthropic-vertex" and "@" not in model:
        model = _VERTEX_DATE.sub("", model)
    project = first(
        run.get("project_id"),
        manifest.get("project_id"),
        env.get("MEMORYBENCH_JUDGE_PROJECT_ID"),
        env.get("GOOGLE_VERTEX_PROJECT_ID"),
        env.get("GOOGLE_CLOUD_PROJECT"),
        env.get("GCLOUD_PROJECT"),
        env.get("GOOGLE_VERTEX_PROJECT"),
    )
    region = first(
        run.get("region"),
        manifest.get("region"),
        env.get("MEMORYBENCH_JUDGE_REGION"),
        env.get("GOOGLE_VERTEX_LOCATION"),
        env.get("CLOUD_ML_REGION"),
        _DEFAULT_REGIONS.get(backend),
    )
    return JudgeSettings(backend, model, project, region)
