"""CodeForge's five metrics as evaluators, each computed for real.

* :class:`GEvalMetric` (``codeforge_correctness``) — G-Eval: the criteria become evaluation
  steps (one judge call, made once per evaluator and kept for the run), then a second call
  scores the response 0–10; the score is that integer / 10.
* :class:`ToolCorrectness` (``codeforge_tool_correctness``) — a deterministic comparison of
  the expected and the actual tool calls (:func:`compare_tool_calls`: ``exact``,
  ``ordered``, ``unordered`` or ``f1``, with ``exact`` / ``subset`` / ``ignore`` argument
  matching), or ``mode="judge"``: G-Eval with both tool lists shown to the judge.
* :class:`Faithfulness` (``codeforge_faithfulness``) — claims from the output, facts from
  the retrieval context, one verdict per claim; score = claims not contradicted / claims.
* :class:`AnswerRelevancy` (``codeforge_answer_relevancy``) — statements from the output,
  one verdict per statement against the input; score = statements not irrelevant /
  statements.
* :class:`ContextualPrecision` (``codeforge_contextual_precision``) — one usefulness
  verdict per context passage against the expected output, scored by
  :func:`weighted_precision` (DeepEval's rank-weighted precision).

Every judge call asks for its verdict in shape (:mod:`benchkit.evaluators._verdict`): the
schema in ``benchkit/schemas/codeforge_judge.schema.json`` goes out as the response format,
bounded so a grammar can enforce it (a list of verdicts exactly as long as the items
judged), the reply is validated against it and asked for once more when out of shape; the
prompts are package data (``benchkit/formats/codeforge/prompts/*.txt``). A failed request
or a reply that still cannot be used is ``Score(value=None, error=...)`` with
``details["judge_error"]`` and every reply — a judge error, never a silent 0. docs/metrics.md has the definitions and edge cases.
"""

from __future__ import annotations

import abc
import functools
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import attrs

from benchkit._jsonschema import load_schema
from benchkit.errors import ConfigError
from benchkit.evaluators._judge import start_client
from benchkit.evaluators._verdict import JudgeFailure, ask, bounded
from benchkit.formats.codeforge._tool_calls import (
    ARGUMENT_MATCHING,
    TOOL_MODES,
    ToolComparison,
    compare_tool_calls,
    describe,
)
from benchkit.llm import LLMClient, RateLimits
from benchkit.llm._config import offline_as
from benchkit.llm._local import LocalClient, is_local
from benchkit.model import Response, Task, ToolCall, Usage
from benchkit.protocols import ResponseCache
from benchkit.results import JUDGE_ERROR, Score

__all__ = [
    "ARGUMENT_MATCHING",
    "CORRECTNESS_CRITERIA",
    "DEFAULT_JUDGE_MODEL",
    "GEVAL_PARAMS",
    "JUDGE_API_KEY_ENV",
    "JUDGE_BASE_URL_ENV",
    "JUDGE_MODEL_ENV",
    "TOOL_CORRECTNESS_CRITERIA",
    "TOOL_MODES",
    "AnswerRelevancy",
    "ContextualPrecision",
    "Faithfulness",
    "GEvalMetric",
    "ToolComparison",
    "ToolCorrectness",
    "compare_tool_calls",
    "judge_client",
    "render_prompt",
    "weighted_precision",
]

CORRECTNESS_CRITERIA = (
    "Determine whether the actual output is factually correct and matches the expected output."
)
"""CodeForge's ``correctness`` criteria, as its metrics module words them."""

TOOL_CORRECTNESS_CRITERIA = (
    "Evaluate whether the actual tool calls match the expected tool calls in terms of tool "
    "names, arguments, and ordering."
)
"""CodeForge's ``tool_correctness`` criteria, used by :class:`ToolCorrectness` in judge mode."""

JUDGE_MODEL_ENV = ("CODEFORGE_JUDGE_MODEL",)
JUDGE_BASE_URL_ENV = ("LITELLM_BASE_URL", "OPENAI_BASE_URL")
JUDGE_API_KEY_ENV = ("LITELLM_MASTER_KEY", "OPENAI_API_KEY")
DEFAULT_JUDGE_MODEL = "gpt-4o"

#: What a G-Eval judge can be shown, with the heading each gets in the prompt.
GEVAL_PARAMS: Mapping[str, str] = {
    "input": "Input",
    "actual_output": "Actual Output",
    "expected_output": "Expected Output",
    "context": "Retrieval Context",
    "expected_tools": "Expected Tool Calls",
    "tool_calls": "Actual Tool Calls",
}


_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_EMPTY_OUTPUT = "empty actual output: there is nothing to judge, so the score is 0"


# --------------------------------------------------------------------------- prompts


@functools.cache
def _template(name: str) -> str:
    resource = resources.files("benchkit.formats.codeforge").joinpath(f"prompts/{name}.txt")
    return resource.read_text(encoding="utf-8")


def render_prompt(name: str, **fields: str) -> str:
    """The prompt ``benchkit/formats/codeforge/prompts/<name>.txt`` with its ``{{field}}``
    placeholders filled in one pass (a value that itself holds ``{{...}}`` stays as is).

    A placeholder without a value is a KeyError: a prompt and its caller disagree.
    """

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in fields:
            raise KeyError(f"prompt {name!r} needs the field {key!r}")
        return fields[key]

    return _PLACEHOLDER.sub(fill, _template(name))


@functools.cache
def _reply_schema(name: str) -> dict[str, Any]:
    full = load_schema("codeforge_judge")
    return {"$schema": full["$schema"], **full["$defs"][name]}


def _sent_schema(name: str, count: int | None) -> dict[str, Any]:
    """What goes out as the response format: the reply schema with the bounds a grammar
    needs to end (:func:`~benchkit.evaluators._verdict.bounded`), and exactly ``count``
    verdicts when the prompt asks for that many."""
    schema = bounded(_reply_schema(name), items=4 if name == "steps" else 8)
    if count is not None and "verdicts" in schema["properties"]:
        verdicts = schema["properties"]["verdicts"]
        verdicts["minItems"] = verdicts["maxItems"] = count
    return schema


class _JudgeFailure(Exception):
    """A judge call that gave no usable verdict; becomes the Score's ``judge_error``."""

    def __init__(self, message: str, kind: str = "invalid_verdict") -> None:
        super().__init__(message)
        self.kind = kind


def _tidy(data: Any) -> Any:
    """Verdict strings compared without regard to case or surrounding space ("Yes " is
    "yes")."""
    if isinstance(data, dict) and isinstance(data.get("verdicts"), list):
        for item in data["verdicts"]:
            if isinstance(item, dict) and isinstance(item.get("verdict"), str):
                item["verdict"] = item["verdict"].strip().lower()
    return data


def _count_check(count: int | None) -> Callable[[Any], str | None] | None:
    if count is None:
        return None

    def check(data: Any) -> str | None:
        found = data.get("verdicts") if isinstance(data, dict) else None
        if not isinstance(found, list) or len(found) == count:
            return None
        return f"it gives {len(found)} verdicts for {count} items; give exactly {count}"

    return check


# --------------------------------------------------------------------------- judges


def judge_client(
    *,
    model: str | None = None,
    base_url: str | None = None,
    cache: bool = True,
    max_concurrency: int = 8,
    timeout: float = 120.0,
    response_cache: ResponseCache | None = None,
    api_key_env: str | Sequence[str] | None = None,
) -> LLMClient:
    """The judge's LLM client. Settings: the arguments, else CodeForge's variables
    (``CODEFORGE_JUDGE_MODEL``, ``LITELLM_BASE_URL``, ``LITELLM_MASTER_KEY``), else
    OpenAI's (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``); the model defaults to ``gpt-4o``.
    A missing key for a remote endpoint is a ConfigError, raised here — before a run.
    ``cache`` turns the reply cache (``response_cache``, the run's) on or off.
    ``api_key_env`` replaces the variables the key is read from (``[]``: no key). The model
    ``local`` (argument or ``CODEFORGE_JUDGE_MODEL``) is the embedded model."""
    named = model or next((os.environ[n] for n in JUDGE_MODEL_ENV if os.environ.get(n)), None)
    if is_local(named, base_url):
        return LocalClient(cache=response_cache if cache else None)
    if api_key_env is None:
        keys: Sequence[str] = JUDGE_API_KEY_ENV
    else:
        keys = (api_key_env,) if isinstance(api_key_env, str) else tuple(api_key_env)
    with offline_as("judge"):
        return LLMClient(
            base_url=base_url,
            model=model,
            base_url_env=JUDGE_BASE_URL_ENV,
            api_key_env=keys,
            model_env=JUDGE_MODEL_ENV,
            default_model=DEFAULT_JUDGE_MODEL,
            timeout=timeout,
            limits=RateLimits(max_concurrency=max_concurrency),
            cache=response_cache if cache else None,
        )


@attrs.define
class _Calls:
    """The judge calls one evaluation made: replies (for details) and their usage."""

    replies: list[dict[str, str]] = attrs.field(factory=list)
    usage: Usage = attrs.field(factory=Usage)

    def details(self, **extra: Any) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
        }
        if self.usage.cost_usd is not None:
            usage["cost_usd"] = self.usage.cost_usd
        return {**extra, "replies": list(self.replies), "usage": usage}


def _text(value: Any) -> str:
    """A task or response value as prompt text: strings as they are, a chat input's user
    messages joined, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("messages"), Sequence):
        return "\n\n".join(
            str(m.get("content") or "")
            for m in value["messages"]
            if isinstance(m, Mapping) and m.get("role") == "user"
        )
    return json.dumps(value, ensure_ascii=False)


def _calls_json(calls: Sequence[ToolCall]) -> str:
    return json.dumps(
        [{"name": c.name, "arguments": dict(c.arguments)} for c in calls],
        ensure_ascii=False,
        indent=2,
    )


def _json_list(items: Sequence[str]) -> str:
    return json.dumps(list(items), ensure_ascii=False, indent=2)


class _JudgeMetric(abc.ABC):
    """What the LLM metrics share: the client, the threshold, the name, one judge call.

    Options of every LLM metric: ``threshold`` (0.5: a score passes at or above it),
    ``name`` (the metric's name), ``model``, ``base_url`` and ``api_key_env`` of the judge
    (else :func:`judge_client`'s variables), ``cache`` (true: temperature-0 replies are reused),
    ``max_concurrency`` (8 judge requests at once); ``client`` from code.
    """

    metric = ""

    def __init__(
        self,
        *,
        name: str | None = None,
        threshold: float = 0.5,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | Sequence[str] | None = None,
        client: LLMClient | None = None,
        cache: bool = True,
        max_concurrency: int = 8,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
    ) -> None:
        del base_dir  # accepted for the registry's sake; nothing here is a path
        if not 0.0 <= threshold <= 1.0:
            raise ConfigError(
                f"threshold={threshold!r} is not in [0, 1]", fix="use e.g. threshold: 0.5."
            )
        self.name = name or self.metric
        self.threshold = threshold
        self.client = client or judge_client(
            model=model,
            base_url=base_url,
            api_key_env=api_key_env,
            cache=cache,
            max_concurrency=max_concurrency,
            response_cache=response_cache,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, client={self.client!r})"

    async def _ask(self, calls: _Calls, prompt: str, schema: str, **fields: str) -> dict[str, Any]:
        """One verdict in shape (:func:`benchkit.evaluators._verdict.ask`): the reply schema
        ``schema`` sent bounded as the response format, the reply validated against it,
        asked once more when out of shape; a prompt with a ``count`` gets exactly that many
        verdicts. Raises ``_JudgeFailure`` with the kind of failure."""
        count = int(fields["count"]) if "count" in fields else None
        messages = [{"role": "user", "content": render_prompt(prompt, **fields)}]
        try:
            reply = await ask(
                self.client,
                messages,
                _reply_schema(schema),
                name=self.name,
                format_name=f"codeforge_{schema}",
                send_schema=_sent_schema(schema, count),
                check=_count_check(count),
                prepare=_tidy,
            )
        except JudgeFailure as failure:
            calls.replies += [{"prompt": prompt, "reply": text} for text in failure.replies]
            calls.usage = calls.usage + failure.usage
            raise _JudgeFailure(f"{failure.message} ({prompt})", failure.kind) from None
        calls.replies += [{"prompt": prompt, "reply": text} for text in reply.replies]
        calls.usage = calls.usage + reply.usage
        result: dict[str, Any] = reply.data
        return result

    async def _verdicts(
        self, calls: _Calls, items: Sequence[str], prompt: str, **fields: str
    ) -> list[dict[str, Any]]:
        """One verdict per item, in order (a different count is asked for again, then is a
        judge failure)."""
        data = await self._ask(calls, prompt, "verdicts", count=str(len(items)), **fields)
        verdicts: list[dict[str, Any]] = data["verdicts"]
        return verdicts

    def _score(self, value: float, reason: str, calls: _Calls, **details: Any) -> Score:
        return Score(
            self.name,
            value,
            value >= self.threshold,
            reason=reason,
            details=calls.details(**details),
        )

    def _empty_output(self) -> Score:
        return Score(self.name, 0.0, False, reason=_EMPTY_OUTPUT, details={"empty_output": True})

    async def evaluate(self, task: Task, response: Response) -> Score:
        calls = _Calls()
        try:
            return await self._evaluate(task, response, calls)
        except _JudgeFailure as exc:
            return Score(
                self.name,
                None,
                False,
                details=calls.details(**{JUDGE_ERROR: exc.kind}),
                error=str(exc),
            )

    @abc.abstractmethod
    async def _evaluate(self, task: Task, response: Response, calls: _Calls) -> Score:
        """The metric itself; a judge reply it cannot use raises ``_JudgeFailure``."""

    async def prepare(self) -> None:
        """Start the local model's server before the first cell (see :func:`benchkit.evaluators._judge.start_client`)."""
        await start_client(self.client)

    async def aclose(self) -> None:
        await self.client.aclose()


def _no_context(name: str) -> Score:
    return Score(
        name,
        None,
        False,
        error=f"the task has no retrieval context: {name} needs the task's `context`",
    )


class GEvalMetric(_JudgeMetric):
    """G-Eval: criteria → evaluation steps → an integer score 0–10, reported / 10.

    The steps are generated by one judge call the first time they are needed and kept
    for the evaluator's life (one run): every task is judged by the same steps, and a
    run pays for them once. ``evaluation_steps`` skips the generation. ``params`` names
    what the judge sees, from :data:`GEVAL_PARAMS` (default: the actual and the expected
    output, as CodeForge's ``correctness``). An empty actual output, when the judge is to
    see it, scores 0 without a call.

    Options: ``criteria``, ``evaluation_steps``, ``params``, ``threshold`` (0.5), ``name``
    (``correctness``), ``model``, ``base_url``, ``cache``, ``max_concurrency``; ``client``
    from code.
    """

    metric = "correctness"

    def __init__(
        self,
        *,
        criteria: str = CORRECTNESS_CRITERIA,
        evaluation_steps: Sequence[str] | None = None,
        params: Sequence[str] = ("actual_output", "expected_output"),
        name: str | None = None,
        threshold: float = 0.5,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | Sequence[str] | None = None,
        client: LLMClient | None = None,
        cache: bool = True,
        max_concurrency: int = 8,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
    ) -> None:
        unknown = [p for p in params if p not in GEVAL_PARAMS]
        if unknown or not params:
            raise ConfigError(
                f"G-Eval params {list(params)} are not all known",
                fix=f"use some of: {', '.join(GEVAL_PARAMS)}.",
            )
        if not criteria.strip() and not evaluation_steps:
            raise ConfigError("G-Eval needs criteria or evaluation_steps")
        super().__init__(
            name=name,
            threshold=threshold,
            model=model,
            base_url=base_url,
            api_key_env=api_key_env,
            client=client,
            cache=cache,
            max_concurrency=max_concurrency,
            base_dir=base_dir,
            response_cache=response_cache,
        )
        self.criteria = criteria
        self.params = tuple(params)
        self._steps: tuple[str, ...] | None = tuple(evaluation_steps) if evaluation_steps else None
        self._lock: anyio.Lock | None = None
        self._lock_token: object | None = None

    @property
    def _parameters(self) -> str:
        names = [GEVAL_PARAMS[p] for p in self.params]
        words = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f"the {words}"

    def _step_lock(self) -> anyio.Lock:
        token = anyio.lowlevel.current_token()
        if self._lock is None or self._lock_token != token:
            self._lock = anyio.Lock()
            self._lock_token = token
        return self._lock

    async def evaluation_steps(self, calls: _Calls | None = None) -> tuple[str, ...]:
        """The evaluation steps: given, cached, or generated now (once)."""
        if self._steps is not None:
            return self._steps
        async with self._step_lock():
            if self._steps is None:
                data = await self._ask(
                    calls if calls is not None else _Calls(),
                    "geval_steps",
                    "steps",
                    criteria=self.criteria,
                    parameters=self._parameters,
                )
                self._steps = tuple(step.strip() for step in data["steps"])
        return self._steps

    def _section(self, param: str, task: Task, response: Response) -> str:
        if param == "input":
            body = _text(task.input)
        elif param == "actual_output":
            body = _text(response.output)
        elif param == "expected_output":
            body = _text(task.expected)
        elif param == "context":
            body = _json_list(task.context)
        elif param == "expected_tools":
            body = _calls_json(task.expected_tool_calls)
        else:
            body = _calls_json(response.tool_calls)
        return f"{GEVAL_PARAMS[param]}:\n{body}"

    async def _evaluate(self, task: Task, response: Response, calls: _Calls) -> Score:
        if "actual_output" in self.params and not _text(response.output).strip():
            return self._empty_output()
        steps = await self.evaluation_steps(calls)
        test_case = "\n\n".join(self._section(p, task, response) for p in self.params)
        data = await self._ask(
            calls,
            "geval_score",
            "score",
            steps="\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1)),
            parameters=self._parameters,
            test_case=test_case,
        )
        raw = int(data["score"])
        return self._score(
            raw / 10.0, data["reason"], calls, raw_score=raw, evaluation_steps=list(steps)
        )


class Faithfulness(_JudgeMetric):
    """Is the output faithful to the retrieval context?

    Claims are taken from the output and facts from the task's ``context``; the judge
    gives each claim a verdict against the facts: ``yes`` (supported), ``no``
    (contradicted) or ``idk`` (not addressed). Score = claims not contradicted / claims,
    and 1.0 when the output makes no claim. A task with no context is an error (there is
    nothing to be faithful to); an empty output scores 0 without a call.
    """

    metric = "faithfulness"

    async def _evaluate(self, task: Task, response: Response, calls: _Calls) -> Score:
        if not task.context:
            return _no_context(self.name)
        output = _text(response.output)
        if not output.strip():
            return self._empty_output()
        claims = (await self._ask(calls, "faithfulness_claims", "claims", actual_output=output))[
            "claims"
        ]
        if not claims:
            return self._score(1.0, "the output makes no factual claim", calls, claims=[])
        truths = (
            await self._ask(
                calls, "faithfulness_truths", "truths", context=_json_list(task.context)
            )
        )["truths"]
        verdicts = await self._verdicts(
            calls,
            claims,
            "faithfulness_verdicts",
            truths=_json_list(truths),
            claims=_json_list(claims),
        )
        contradicted = _said_no(claims, verdicts, "claim")
        kept = len(claims) - len(contradicted)
        return self._score(
            kept / len(claims),
            f"{kept} of {len(claims)} claims are not contradicted by the retrieval context",
            calls,
            claims=claims,
            truths=truths,
            verdicts=verdicts,
            contradicted=contradicted,
        )


def _said_no(
    items: Sequence[str], verdicts: Sequence[Mapping[str, Any]], label: str
) -> list[dict[str, Any]]:
    """The items whose verdict is ``no``, each with the judge's reason (for details)."""
    return [
        {label: item, "reason": verdict.get("reason", "")}
        for item, verdict in zip(items, verdicts, strict=True)
        if verdict["verdict"] == "no"
    ]


class AnswerRelevancy(_JudgeMetric):
    """Is the output relevant to the input?

    Statements are taken from the output; the judge gives each a verdict against the
    input: ``yes`` (relevant), ``no`` (irrelevant) or ``idk`` (supporting). Score =
    statements not irrelevant / statements, and 1.0 when there is no statement. An empty
    output scores 0 without a call.
    """

    metric = "answer_relevancy"

    async def _evaluate(self, task: Task, response: Response, calls: _Calls) -> Score:
        output = _text(response.output)
        if not output.strip():
            return self._empty_output()
        statements = (
            await self._ask(
                calls, "answer_relevancy_statements", "statements", actual_output=output
            )
        )["statements"]
        if not statements:
            return self._score(1.0, "the output makes no statement", calls, statements=[])
        verdicts = await self._verdicts(
            calls,
            statements,
            "answer_relevancy_verdicts",
            input=_text(task.input),
            statements=_json_list(statements),
        )
        irrelevant = _said_no(statements, verdicts, "statement")
        kept = len(statements) - len(irrelevant)
        return self._score(
            kept / len(statements),
            f"{kept} of {len(statements)} statements are relevant to the input",
            calls,
            statements=statements,
            verdicts=verdicts,
            irrelevant=irrelevant,
        )


def weighted_precision(relevant: Sequence[bool]) -> float:
    """DeepEval's contextual precision of a ranking: the mean, over the ranks k of the
    relevant items, of precision@k (relevant items among the first k / k); 0 when no
    item is relevant.

        >>> round(weighted_precision([True, False, True]), 4)  # (1/1 + 2/3) / 2
        0.8333
        >>> weighted_precision([False, True]), weighted_precision([]), weighted_precision([False])
        (0.5, 0.0, 0.0)
    """
    hits = 0
    total = 0.0
    for k, is_relevant in enumerate(relevant, 1):
        if is_relevant:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


class ContextualPrecision(_JudgeMetric):
    """Are the context passages useful for the expected output ranked first?

    The judge gives each passage of the task's ``context`` (in rank order) a ``yes`` /
    ``no`` verdict: useful for arriving at the expected output, given the input. Score =
    :func:`weighted_precision` of the verdicts (0 when no passage is useful). The actual
    output plays no part, so an empty one is judged like any other. A task with no
    context is an error.
    """

    metric = "contextual_precision"

    async def _evaluate(self, task: Task, response: Response, calls: _Calls) -> Score:
        if not task.context:
            return _no_context(self.name)
        data = await self._ask(
            calls,
            "contextual_precision_verdicts",
            "relevance",
            count=str(len(task.context)),
            input=_text(task.input),
            expected_output=_text(task.expected),
            context=_json_list(task.context),
        )
        verdicts: list[dict[str, Any]] = data["verdicts"]
        relevant = [v["verdict"] == "yes" for v in verdicts]
        value = weighted_precision(relevant)
        ranks = [k for k, r in enumerate(relevant, 1) if r]
        reason = (
            f"useful passages at ranks {ranks} of {len(relevant)}"
            if ranks
            else f"none of the {len(relevant)} passages is useful for the expected output"
        )
        return self._score(value, reason, calls, verdicts=verdicts)


class ToolCorrectness:
    """Did the model make the expected tool calls?

    By default a deterministic comparison of ``task.expected_tool_calls`` with
    ``response.tool_calls`` (:func:`compare_tool_calls`): ``mode`` ``exact`` (default),
    ``ordered``, ``unordered`` or ``f1``, ``arguments`` ``exact`` (default), ``subset`` or
    ``ignore``. Every comparison's numbers and the missing / unexpected calls are in
    ``details`` whatever the mode. ``mode="judge"`` asks an LLM instead — G-Eval with
    CodeForge's tool criteria, showing the judge the input and both tool lists (the
    original showed it only the text output) — and takes the judge options of
    :class:`GEvalMetric` (``model``, ``base_url``, ``criteria``, ...).
    """

    def __init__(
        self,
        *,
        mode: str = "exact",
        arguments: str = "exact",
        threshold: float = 0.5,
        name: str = "tool_correctness",
        criteria: str = TOOL_CORRECTNESS_CRITERIA,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | Sequence[str] | None = None,
        client: LLMClient | None = None,
        cache: bool = True,
        max_concurrency: int = 8,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
    ) -> None:
        del base_dir
        if mode not in TOOL_MODES:
            raise ConfigError(
                f"tool_correctness mode {mode!r} is not known",
                fix=f"use one of: {', '.join(TOOL_MODES)}.",
            )
        if arguments not in ARGUMENT_MATCHING:
            raise ConfigError(
                f"tool_correctness arguments {arguments!r} is not known",
                fix=f"use one of: {', '.join(ARGUMENT_MATCHING)}.",
            )
        if not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"threshold={threshold!r} is not in [0, 1]")
        self.mode = mode
        self.arguments = arguments
        self.threshold = threshold
        self.name = name
        self.judge: GEvalMetric | None = None
        if mode == "judge":
            self.judge = GEvalMetric(
                criteria=criteria,
                params=("input", "expected_tools", "tool_calls"),
                name=name,
                threshold=threshold,
                model=model,
                base_url=base_url,
                api_key_env=api_key_env,
                client=client,
                cache=cache,
                max_concurrency=max_concurrency,
                response_cache=response_cache,
            )

    def __repr__(self) -> str:
        return f"ToolCorrectness(mode={self.mode!r}, arguments={self.arguments!r})"

    async def evaluate(self, task: Task, response: Response) -> Score:
        if self.judge is not None:
            return await self.judge.evaluate(task, response)
        result = compare_tool_calls(
            task.expected_tool_calls, response.tool_calls, mode=self.mode, arguments=self.arguments
        )
        parts = [
            f"{self.mode}: {result.matched} of {len(task.expected_tool_calls)} expected calls "
            f"matched among {len(response.tool_calls)} made"
        ]
        if result.missing:
            parts.append(f"missing {describe(result.missing)}")
        if result.unexpected:
            parts.append(f"unexpected {describe(result.unexpected)}")
        if self._out_of_order(result):
            parts.append("the calls are out of order")
        return Score(
            self.name,
            result.value,
            result.value >= self.threshold,
            reason="; ".join(parts),
            details=result.details(),
        )

    def _out_of_order(self, result: ToolComparison) -> bool:
        """Failed only on order: the right calls (no missing, no extra for exact)."""
        if result.value == 1.0 or result.missing:
            return False
        return self.mode == "ordered" or (self.mode == "exact" and not result.unexpected)

    async def aclose(self) -> None:
        if self.judge is not None:
            await self.judge.aclose()
