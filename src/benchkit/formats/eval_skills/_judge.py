"""eval-skills' ``llm_judge``: its prompts, JavaScript's ``parseFloat``, a 0–10 rating.

The shared judge plumbing (client, usage, excerpts) is :mod:`benchkit.evaluators._judge`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from benchkit import _js, transcript
from benchkit.evaluators._judge import excerpt, js_text, judge_client, usage_details
from benchkit.llm import LLMClient, LLMError
from benchkit.model import Response, Task
from benchkit.protocols import ResponseCache
from benchkit.results import Score

__all__ = [
    "EVAL_SKILLS_SYSTEM_PROMPT",
    "EvalSkillsJudge",
    "eval_skills_user_prompt",
    "js_parse_float",
]

EVAL_SKILLS_SYSTEM_PROMPT = (
    "You are an evaluator. Rate the output quality from 0 to 10. Respond with ONLY a number."
)
_EVAL_SKILLS_DEFAULT_CRITERIA = "Evaluate the quality of the output."
_JS_FLOAT = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")
_UNSET: Any = object()


def js_parse_float(text: str) -> float:
    """JavaScript's ``parseFloat``: the longest numeric prefix after leading white space.

    >>> js_parse_float("8/10"), js_parse_float(" .5"), js_parse_float("Infinity")
    (8.0, 0.5, inf)
    >>> math.isnan(js_parse_float("Score: 8"))
    True
    """
    match = _JS_FLOAT.match(text.lstrip())
    if match is None:
        return math.nan
    token = match.group(0)
    if token.lstrip("+-") == "Infinity":
        return -math.inf if token.startswith("-") else math.inf
    return float(token)


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
    """eval-skills' ``llm_judge``: a 0–10 rating parsed with JavaScript's ``parseFloat``.

    The prompts are the original's to the character. The key comes from
    ``EVAL_SKILLS_LLM_KEY``, then ``OPENAI_API_KEY``, then ``OPENAI_KEY`` (a missing key
    is a ConfigError when the judge is built — before the run starts); the model defaults
    to ``gpt-4o`` and the base URL to ``OPENAI_BASE_URL`` or OpenAI's. Score =
    clamp(rating, 0, 10) / 10, passing at ``threshold`` (0.5, as the original). A reply
    with no leading number ("Score: 8", "**8**", "") is a judge error, not a 0.

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
            with transcript.judging("llm_judge"):
                result = await self.client.chat(messages, temperature=0.0)
        except LLMError as exc:
            return Score("llm_judge", None, False, error=f"LLM API request failed: {exc}")
        content = (result.text or "").strip()
        raw = js_parse_float(content)
        details = {"raw": content, "usage": usage_details(result.usage)}
        if math.isnan(raw):
            return Score(
                "llm_judge",
                None,
                False,
                details=details,
                error=f'LLM returned non-numeric response: "{excerpt(content)}"',
            )
        value = min(max(raw, 0.0), 10.0) / 10.0
        passed = value >= self.threshold
        return Score(
            "llm_judge",
            value,
            passed,
            reason=f"LLM judge score: {value * 10:g}/10",
            details=details,
        )

    async def aclose(self) -> None:
        await self.client.aclose()
