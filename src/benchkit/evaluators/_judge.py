"""LLM judges: a generic rubric judge and eval-skills' ``llm_judge``.

Both call the model through :class:`benchkit.llm.LLMClient`. A reply that cannot be
parsed, or a request that fails for good, is a judge *error* (``Score.error`` with an
excerpt of the reply, ``value=None``) — counted apart from the system's own failures and
never averaged in as a 0.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchkit import _js
from benchkit.errors import ConfigError
from benchkit.llm import LLMClient, LLMError, RateLimits
from benchkit.model import Response, Task, Usage
from benchkit.protocols import ResponseCache
from benchkit.results import Score

__all__ = [
    "EVAL_SKILLS_SYSTEM_PROMPT",
    "EvalSkillsJudge",
    "RubricJudge",
    "eval_skills_user_prompt",
    "js_parse_float",
]

EVAL_SKILLS_SYSTEM_PROMPT = (
    "You are an evaluator. Rate the output quality from 0 to 10. Respond with ONLY a number."
)
_EVAL_SKILLS_DEFAULT_CRITERIA = "Evaluate the quality of the output."
_JS_FLOAT = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_UNSET: Any = object()


def _excerpt(text: str | None, limit: int = 200) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _js_text(value: Any) -> str:
    """A value as JavaScript puts it in a template: strings as they are, else JSON.stringify."""
    return value if isinstance(value, str) else _js.stringify(value)


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
    judge = _EVAL_SKILLS_DEFAULT_CRITERIA if criteria in (None, "") else _js_text(criteria)
    if _js.truthy(reference):
        return (
            f"Judge Criteria: {judge}\nReference Answer: {_js_text(reference)}\n"
            f"Actual Output: {_js_text(output)}\n\n"
            "Score the actual output from 0 to 10 based on the criteria and reference.\n"
            "Respond with ONLY a number."
        )
    return (
        f"Judge Criteria: {judge}\nActual Output: {_js_text(output)}\n\n"
        "Score the actual output from 0 to 10 based on the criteria.\n"
        "Respond with ONLY a number."
    )


def _client(
    client: LLMClient | None,
    *,
    model: str | None,
    base_url: str | None,
    api_key_env: Sequence[str],
    default_model: str,
    max_concurrency: int,
    max_retries: int,
    cache: ResponseCache | None,
) -> LLMClient:
    if client is not None:
        return client
    return LLMClient(
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        default_model=default_model,
        limits=RateLimits(max_concurrency=max_concurrency),
        max_retries=max_retries,
        cache=cache,
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
        self.client = _client(
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
            result = await self.client.chat(messages, temperature=0.0)
        except LLMError as exc:
            return Score("llm_judge", None, False, error=f"LLM API request failed: {exc}")
        content = (result.text or "").strip()
        raw = js_parse_float(content)
        details = {"raw": content, "usage": _usage(result.usage)}
        if math.isnan(raw):
            return Score(
                "llm_judge",
                None,
                False,
                details=details,
                error=f'LLM returned non-numeric response: "{_excerpt(content)}"',
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


def _usage(usage: Any) -> dict[str, Any]:
    data = {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}
    if usage.cost_usd is not None:
        data["cost_usd"] = usage.cost_usd
    return data


class _Fields(dict[str, str]):
    """``str.format_map`` fields: missing ones render empty, values as prompt text."""

    def __missing__(self, key: str) -> str:
        return ""


class RubricJudge:
    """A generic LLM judge: a prompt template, a score scale, a parser and a threshold.

    ``prompt`` is a ``str.format`` template with ``{input}``, ``{output}``, ``{expected}``
    and ``{context}`` (non-strings are rendered as JSON). The reply is parsed as a number
    (``parse="number"``: the first number in it) or as JSON (``parse="json"``: the object,
    optionally inside a fenced block, must match ``schema`` and hold the score under
    ``score_field``; the schema is also sent as the response format). The raw score is
    mapped from ``scale`` onto [0, 1]; the score passes at ``threshold``.

    ``samples`` > 1 asks the judge that many times (each with its own seed, so the cache
    keeps them apart) and reports the mean, with the spread and the agreement — the share
    of samples on the majority side of the threshold — in ``details``.

        >>> judge = RubricJudge(
        ...     prompt="Question: {input}\\nAnswer: {output}\\nRate 0-10.",
        ...     base_url="http://127.0.0.1:8000/v1", model="judge", cache=False,
        ... )
    """

    _DEFAULT_SCHEMA: Mapping[str, Any] = {
        "type": "object",
        "properties": {"score": {"type": "number"}, "reason": {"type": "string"}},
        "required": ["score"],
    }

    def __init__(
        self,
        *,
        prompt: str,
        system: str | None = None,
        scale: Sequence[float] = (0, 10),
        parse: str = "number",
        schema: Mapping[str, Any] | None = None,
        score_field: str = "score",
        threshold: float = 0.5,
        samples: int = 1,
        temperature: float = 0.0,
        name: str = "llm_rubric",
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | Sequence[str] = ("OPENAI_API_KEY",),
        client: LLMClient | None = None,
        cache: bool = True,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
    ) -> None:
        del base_dir
        if len(scale) != 2 or not scale[0] < scale[1]:
            raise ConfigError(f"scale {list(scale)} must be [low, high] with low < high")
        if parse not in ("number", "json"):
            raise ConfigError(f"parse={parse!r} is not one of number, json")
        if samples < 1:
            raise ConfigError(f"samples={samples} must be at least 1")
        self.prompt = prompt
        self.system = system
        self.low, self.high = float(scale[0]), float(scale[1])
        self.parse = parse
        self.schema = dict(schema or self._DEFAULT_SCHEMA)
        self.score_field = score_field
        self.threshold = threshold
        self.samples = samples
        self.temperature = temperature
        self.name = name
        self._validator = None
        if parse == "json":
            from jsonschema import Draft202012Validator

            Draft202012Validator.check_schema(self.schema)
            self._validator = Draft202012Validator(self.schema)
        self.client = _client(
            client,
            model=model,
            base_url=base_url,
            api_key_env=(api_key_env,) if isinstance(api_key_env, str) else api_key_env,
            default_model="gpt-4o",
            max_concurrency=16,
            max_retries=4,
            cache=response_cache if cache else None,
        )

    def _messages(self, task: Task, response: Response) -> list[dict[str, str]]:
        fields = _Fields(
            input=_js_text(task.input),
            output=_js_text(response.output),
            expected=_js_text(task.expected) if task.expected is not None else "",
            context="\n\n".join(task.context),
        )
        messages = [{"role": "user", "content": self.prompt.format_map(fields)}]
        if self.system:
            messages.insert(0, {"role": "system", "content": self.system})
        return messages

    def _parse(self, text: str) -> tuple[float | None, str | None]:
        """The raw score in the reply, or None and why not."""
        if self.parse == "number":
            match = _NUMBER.search(text)
            return (float(match.group(0)), None) if match else (None, "no number in the reply")
        fenced = _FENCE.search(text)
        body = fenced.group(1).strip() if fenced else text.strip()
        try:
            data = json.loads(body)
        except ValueError:
            return None, "the reply is not JSON"
        assert self._validator is not None
        error = next(iter(self._validator.iter_errors(data)), None)
        if error is not None:
            return None, f"the reply does not match the schema: {error.message}"
        value = data.get(self.score_field) if isinstance(data, dict) else None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return None, f"no number under {self.score_field!r}"
        return float(value), None

    async def evaluate(self, task: Task, response: Response) -> Score:
        messages = self._messages(task, response)
        response_format = None
        if self.parse == "json":
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": "judgement", "schema": self.schema},
            }
        values: list[float] = []
        replies: list[str] = []
        spent = Usage()
        for sample in range(self.samples):
            try:
                result = await self.client.chat(
                    messages,
                    temperature=self.temperature,
                    seed=sample if self.samples > 1 else None,
                    response_format=response_format,
                )
            except LLMError as exc:
                return Score(self.name, None, False, error=f"judge request failed: {exc}")
            text = result.text or ""
            replies.append(text)
            spent = spent + result.usage
            raw, why = self._parse(text)
            if raw is None:
                return Score(
                    self.name,
                    None,
                    False,
                    details={"replies": replies, "usage": _usage(spent)},
                    error=f'judge reply could not be parsed ({why}): "{_excerpt(text)}"',
                )
            clamped = min(max(raw, self.low), self.high)
            values.append((clamped - self.low) / (self.high - self.low))
        value = sum(values) / len(values)
        details: dict[str, Any] = {"replies": replies, "usage": _usage(spent)}
        if self.samples > 1:
            passes = sum(v >= self.threshold for v in values)
            details.update(
                samples=values,
                stdev=statistics.pstdev(values),
                agreement=max(passes, len(values) - passes) / len(values),
            )
        return Score(
            self.name,
            value,
            value >= self.threshold,
            reason=f"judge score {value:.3f} (threshold {self.threshold:g})",
            details=details,
        )

    async def aclose(self) -> None:
        await self.client.aclose()
