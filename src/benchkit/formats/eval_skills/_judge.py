"""eval-skills' ``llm_judge``: its prompts and a 0–10 rating, asked for in shape.

The shared judge plumbing (client, usage, excerpts) is :mod:`benchkit.evaluators._judge`;
how a verdict is asked for and read is :mod:`benchkit.evaluators._verdict`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchkit import _js
from benchkit.evaluators._judge import (
    bare_number,
    js_text,
    judge_client,
    start_client,
    usage_details,
)
from benchkit.evaluators._verdict import JudgeFailure, ask, failure_score, score_schema
from benchkit.llm import LLMClient
from benchkit.model import Response, Task
from benchkit.protocols import ResponseCache
from benchkit.results import Score

__all__ = [
    "EVAL_SKILLS_SYSTEM_PROMPT",
    "EvalSkillsJudge",
    "eval_skills_user_prompt",
]

EVAL_SKILLS_SYSTEM_PROMPT = (
    "You are an evaluator. Rate the output quality from 0 to 10. Respond with ONLY a number."
)
_EVAL_SKILLS_DEFAULT_CRITERIA = "Evaluate the quality of the output."
_UNSET: Any = object()
#: What is sent as the response format (an integer 0-10, which a grammar can enforce) and
#: what a reply must be (a number under ``score``; out of range is clamped, as the original).
_SEND = score_schema(0, 10, reason=None)
_CHECK = {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}


def _bare(text: str) -> Any:
    number = bare_number(text)
    return None if number is None else {"score": number}


def eval_skills_user_prompt(criteria: Any, reference: Any, output: Any) -> str:
    """The user prompt eval-skills sends to its judge (see docs/formats/eval-skills.md)."""
    judge = _EVAL_SKILLS_DEFAULT_CRITERIA if criteria in (None, "") else js_text(criteria)
    if _js.truthy(reference):
        return (
            f"Judge Criteria: {judge}\nReference Answer: {js_text(reference)}\n"
            f"Actual Output: {js_text(output)}\n\n"
            "Score the actual output from 0 to 10 based on the criteria and reference.\n"
            "Respond with ONLY a number."
        )
    return (
        f"Judge Criteria: {judge}\nActual Output: {js_text(output)}\n\n"
        "Score the actual output from 0 to 10 based on the criteria.\n"
        "Respond with ONLY a number."
    )


class EvalSkillsJudge:
    """eval-skills' ``llm_judge``: a 0–10 rating, asked for in shape.

    The prompts are the original's to the character; the rating is asked for as
    ``{"score": <0-10>}`` in the response format (the original reads the reply with
    JavaScript's ``parseFloat``, so "8 — but the output is wrong" was an 8). A reply that is
    that JSON or a number and nothing else is read; any other is asked for once more, then
    is a ``judge_error`` keeping every reply. The key comes from
    ``EVAL_SKILLS_LLM_KEY``, then ``OPENAI_API_KEY``, then ``OPENAI_KEY`` (a missing key
    is a ConfigError when the judge is built — before the run starts); the model defaults
    to ``gpt-4o`` and the base URL to ``OPENAI_BASE_URL`` or OpenAI's. Score =
    clamp(rating, 0, 10) / 10, passing at ``threshold`` (0.5, as the original). A judge
    error is never a 0.

    Options: ``judge_prompt`` (the criteria), ``reference`` (else ``task.expected``),
    ``model``, ``base_url``, ``threshold``; ``client`` from code.
    """

    def __init__(
        self,
        *,
        judge_prompt: Any = None,
        reference: Any = _UNSET,
        model: str | None = None,
        base_url: str | None = None,
        threshold: float = 0.5,
        client: LLMClient | None = None,
        cache: bool = True,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
    ) -> None:
        del base_dir
        self.judge_prompt = judge_prompt
        self.reference = reference
        self.threshold = threshold
        self.client = judge_client(
            client,
            model=model,
            base_url=base_url,
            api_key_env=("EVAL_SKILLS_LLM_KEY", "OPENAI_API_KEY", "OPENAI_KEY"),
            default_model="gpt-4o",
            max_concurrency=4,
            max_retries=3,
            cache=response_cache if cache else None,
        )

    async def evaluate(self, task: Task, response: Response) -> Score:
        reference = task.expected if self.reference is _UNSET else self.reference
        messages = [
            {"role": "system", "content": EVAL_SKILLS_SYSTEM_PROMPT},
            {
                "role": "user",
                "content": eval_skills_user_prompt(self.judge_prompt, reference, response.output),
            },
        ]
        try:
            reply = await ask(
                self.client, messages, _CHECK, name="llm_judge", send_schema=_SEND, bare=_bare
            )
        except JudgeFailure as failure:
            return failure_score("llm_judge", failure)
        raw = float(reply.data["score"])
        details = {"raw": reply.text, "usage": usage_details(reply.usage)}
        if reply.retried:
            details["replies"] = list(reply.replies)
        value = min(max(raw, 0.0), 10.0) / 10.0
        passed = value >= self.threshold
        return Score(
            "llm_judge",
            value,
            passed,
            reason=f"LLM judge score: {value * 10:g}/10",
            details=details,
        )

    async def prepare(self) -> None:
        """Start the local model's server before the first cell (see :func:`benchkit.evaluators._judge.start_client`)."""
        await start_client(self.client)

    async def aclose(self) -> None:
        await self.client.aclose()
