"""LLM judges: the plumbing the tools' judges share, and the generic rubric judge.

Every judge calls the model through :class:`benchkit.llm.LLMClient`. A reply that cannot
be parsed, or a request that fails for good, is a judge *error* (``Score.error`` with an
excerpt of the reply, ``value=None``) — counted apart from the system's own failures and
never averaged in as a 0. eval-skills' ``llm_judge`` is in
:mod:`benchkit.formats.eval_skills._judge`; CodeForge's metrics and MemoryBench's judge
live in their tool packages too.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchkit import _js, transcript
from benchkit.errors import ConfigError
from benchkit.llm import LLMClient, LLMError, RateLimits
from benchkit.llm._local import LocalClient, is_local
from benchkit.model import Response, Task, Usage
from benchkit.protocols import ResponseCache
from benchkit.results import Score

__all__ = [
    "PairwiseJudge",
    "RubricJudge",
    "excerpt",
    "judge_client",
    "js_text",
    "usage_details",
]

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def excerpt(text: str | None, limit: int = 200) -> str:
    """The start of a reply, for an error message."""
    text = text or ""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def js_text(value: Any) -> str:
    """A value as JavaScript puts it in a template: strings as they are, else JSON.stringify."""
    return value if isinstance(value, str) else _js.stringify(value)


def judge_client(
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
    """``client`` when given, else a client with these settings and reply cache
    (``model="local"``: the embedded model's client)."""
    if client is not None:
        return client
    if is_local(model, base_url):
        return LocalClient(max_retries=max_retries, cache=cache)
    return LLMClient(
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        default_model=default_model,
        limits=RateLimits(max_concurrency=max_concurrency),
        max_retries=max_retries,
        cache=cache,
    )


def usage_details(usage: Any) -> dict[str, Any]:
    """A judge call's usage as a Score's ``details["usage"]`` (what aggregates sum)."""
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
        self.client = judge_client(
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
            input=js_text(task.input),
            output=js_text(response.output),
            expected=js_text(task.expected) if task.expected is not None else "",
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
                with transcript.judging(self.name):
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
                    details={"replies": replies, "usage": usage_details(spent)},
                    error=f'judge reply could not be parsed ({why}): "{excerpt(text)}"',
                )
            clamped = min(max(raw, self.low), self.high)
            values.append((clamped - self.low) / (self.high - self.low))
        value = sum(values) / len(values)
        details: dict[str, Any] = {"replies": replies, "usage": usage_details(spent)}
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


_CHOICE = re.compile(r"\b(A|B|TIE|T)\b", re.IGNORECASE)


class PairwiseJudge:
    """An LLM judge that compares the response with the task's reference answer, asked in
    both orders to catch position bias.

    ``prompt`` is a ``str.format`` template with ``{input}``, ``{a}``, ``{b}`` (the two
    answers) and ``{context}``; the reply's first standalone ``A``, ``B`` or ``T``/``tie``
    is the choice. By default (``both_orders=True``) the judge is asked once with the
    response as A and once with it as B. When the two choices name the same answer that
    answer wins. When they differ the verdict followed the position, not the answers: the
    score **fails** with the reason ``position_inconsistent`` (value 0, and
    ``details["position_inconsistent"]`` is true) — a judge that always answers "A" cannot
    pass anything, where counting it as a tie would pass every answer at the default
    threshold. The value is 1 (the response wins), 0.5 (a tie in both orders) or 0 (the
    reference wins, or the verdict followed the position); the score passes at
    ``threshold`` (by default a consistent tie passes: as good as the reference).
    ``both_orders=False`` asks once, with the response as A: half the calls, and position
    bias goes unseen. ``details["orders"]`` holds the winner of each order asked
    (``response``, ``reference`` or ``tie``) — what
    :meth:`benchkit.RunResult.judge_report` reads for position bias.

    .. versionchanged:: 0.2.0
       A verdict that depends on the order fails (``position_inconsistent``) instead of
       counting as a tie; ``both_orders``.
    """

    DEFAULT_PROMPT = (
        "Question:\n{input}\n\nAnswer A:\n{a}\n\nAnswer B:\n{b}\n\n"
        "Which answer is better? Reply with one letter: A, B, or T for a tie."
    )

    def __init__(
        self,
        *,
        prompt: str | None = None,
        system: str | None = None,
        reference: Any = None,
        threshold: float = 0.5,
        temperature: float = 0.0,
        both_orders: bool = True,
        name: str = "llm_pairwise",
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | Sequence[str] = ("OPENAI_API_KEY",),
        client: LLMClient | None = None,
        cache: bool = True,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
    ) -> None:
        del base_dir
        self.prompt = prompt or self.DEFAULT_PROMPT
        self.system = system
        self.reference = reference
        self.threshold = threshold
        self.temperature = temperature
        if not isinstance(both_orders, bool):
            raise ConfigError(f"both_orders={both_orders!r} must be true or false")
        self.both_orders = both_orders
        self.name = name
        self.client = judge_client(
            client,
            model=model,
            base_url=base_url,
            api_key_env=(api_key_env,) if isinstance(api_key_env, str) else api_key_env,
            default_model="gpt-4o",
            max_concurrency=16,
            max_retries=4,
            cache=response_cache if cache else None,
        )

    def _messages(self, task: Task, a: Any, b: Any) -> list[dict[str, str]]:
        fields = _Fields(
            input=js_text(task.input),
            a=js_text(a),
            b=js_text(b),
            context="\n\n".join(task.context),
        )
        messages = [{"role": "user", "content": self.prompt.format_map(fields)}]
        if self.system:
            messages.insert(0, {"role": "system", "content": self.system})
        return messages

    async def evaluate(self, task: Task, response: Response) -> Score:
        reference = self.reference if self.reference is not None else task.expected
        if reference is None:
            return Score(
                self.name,
                None,
                False,
                error="the pairwise judge needs a reference answer: give the task an "
                "expected value or the evaluator a reference",
            )
        winners: list[str] = []
        replies: list[str] = []
        spent = Usage()
        for response_first in (True, False) if self.both_orders else (True,):
            a, b = (response.output, reference) if response_first else (reference, response.output)
            try:
                result = await self.client.chat(
                    self._messages(task, a, b), temperature=self.temperature
                )
            except LLMError as exc:
                return Score(self.name, None, False, error=f"judge request failed: {exc}")
            text = result.text or ""
            replies.append(text)
            spent = spent + result.usage
            match = _CHOICE.search(text)
            if match is None:
                return Score(
                    self.name,
                    None,
                    False,
                    details={"replies": replies, "usage": usage_details(spent)},
                    error=f'judge reply names no answer (A, B or T): "{excerpt(text)}"',
                )
            choice = match.group(1).upper()[0]
            if choice == "T":
                winners.append("tie")
            elif (choice == "A") == response_first:
                winners.append("response")
            else:
                winners.append("reference")
        consistent = len(set(winners)) == 1
        winner = winners[0] if consistent else "position_inconsistent"
        value = {"response": 1.0, "tie": 0.5, "reference": 0.0}.get(winner, 0.0)
        asked = "in both orders" if self.both_orders else "with the response first"
        if not consistent:
            reason = (
                f"position_inconsistent: the verdict followed the position ({winners[0]} "
                f"with the response first, {winners[1]} with it second), so it says nothing "
                "about the answers"
            )
        elif winner == "tie":
            reason = f"a tie {asked}"
        else:
            reason = f"{winner} preferred {asked}"
        return Score(
            self.name,
            value,
            consistent and value >= self.threshold,
            reason=reason,
            details={
                "orders": winners,
                "position_inconsistent": not consistent,
                "replies": replies,
                "usage": usage_details(spent),
            },
        )

    async def aclose(self) -> None:
        await self.client.aclose()
