"""MemoryBench's two LLM calls — answer generation and llm-as-judge — over benchkit's client.

The prompts, type instructions and reply parsing are the original's (see ``_judge``); only
the transport differs: every backend goes through one OpenAI-compatible
:class:`~benchkit.llm.LLMClient`. Where a backend has an OpenAI-compatible endpoint of its
own (OpenAI, Anthropic, Google) it is used directly; for Vertex and Azure deployments,
point ``OPENAI_BASE_URL`` (or the ``base_url`` option) at an OpenAI-compatible proxy such
as LiteLLM. ``OPENAI_BASE_URL``, when set, routes every backend through it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from benchkit.errors import ConfigError
from benchkit.evaluators._judge import start_client
from benchkit.evaluators._verdict import JudgeFailure, ask, failure_score, text_schema
from benchkit.formats.memorybench._case import MemoryCase
from benchkit.formats.memorybench._evaluate import PASS_CORRECTNESS, PASS_FAITHFULNESS
from benchkit.formats.memorybench._judge import (
    ANSWER_CONTEXTS,
    JudgeSettings,
    answer_prompt,
    judge_prompt,
    judge_score,
    judge_settings,
    parse_judge_reply,
    type_instruction,
)
from benchkit.llm import LLMClient
from benchkit.llm._config import offline_as
from benchkit.llm._local import LocalClient, is_local
from benchkit.memory import NO_ANSWER, Answer
from benchkit.model import Response, Task
from benchkit.protocols import ResponseCache
from benchkit.results import Score

__all__ = ["LLMAnswer", "MemoryLLMJudge", "memory_client"]

ANSWER_MAX_TOKENS = 1024
JUDGE_MAX_TOKENS = 8192

_TENTHS = [round(i / 10, 1) for i in range(11)]
#: What the judge is sent as the response format: the prompt's JSON, every field bounded
#: so a grammar (the local model's) can enforce it and the reply ends.
JUDGE_SEND_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "correctness": {"type": "number", "enum": _TENTHS},
        "faithfulness": {"type": "number", "enum": _TENTHS},
        "reasoning": text_schema(200),
        "typeSpecificScore": {"enum": [None, *_TENTHS]},
    },
    "required": ["correctness", "faithfulness", "reasoning", "typeSpecificScore"],
    "additionalProperties": False,
}
#: What a reply must hold to be a verdict: both scores (numbers, or numeric strings as the
#: original's ``Number(x)`` reads them). A reply without them is asked for again, then is a
#: judge error — the original scored it 0.
JUDGE_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "correctness": {"type": ["number", "string"]},
        "faithfulness": {"type": ["number", "string"]},
    },
    "required": ["correctness", "faithfulness"],
}

# backend -> (its own OpenAI-compatible base URL, the variables that may hold its key)
_BACKENDS: Mapping[str, tuple[str | None, tuple[str, ...]]] = {
    "openai": ("https://api.openai.com/v1", ("OPENAI_API_KEY",)),
    "anthropic": ("https://api.anthropic.com/v1", ("ANTHROPIC_API_KEY",)),
    "google": (
        "https://generativelanguage.googleapis.com/v1beta/openai",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    ),
    "anthropic-vertex": (None, ("OPENAI_API_KEY",)),
    "google-vertex": (None, ("OPENAI_API_KEY",)),
    "azure-openai": (None, ("AZURE_OPENAI_API_KEY", "OPENAI_API_KEY")),
}


def memory_client(
    settings: JudgeSettings,
    *,
    base_url: str | None = None,
    cache: bool = True,
    environ: Mapping[str, str] | None = None,
    response_cache: ResponseCache | None = None,
    role: str = "judge",
) -> LLMClient:
    """The client for a judge or answer model with these settings (see the module doc).

    The model ``local`` is the embedded model, whatever the backend. ``role`` (``judge``,
    or ``model`` for the answer model) is what an error tells the user to give
    (``--judge`` / ``--model``)."""
    env = os.environ if environ is None else environ
    if is_local(settings.model, base_url):
        return LocalClient(cache=response_cache if cache else None)
    own_url, key_env = _BACKENDS[settings.backend]
    url = base_url or env.get("OPENAI_BASE_URL") or own_url
    flag = "--model" if role == "model" else "--judge"
    what = "answer model" if role == "model" else "judge"
    if url is None:
        raise ConfigError(
            f"this benchmark's {what} defaults to {settings.model}, reached through an "
            "OpenAI-compatible proxy, and none is set",
            fix=f"give {flag} local (the embedded model, offline), or {flag} MODEL with its "
            "key in OPENAI_API_KEY (OPENAI_BASE_URL for another OpenAI-compatible endpoint, "
            "such as a LiteLLM proxy).",
        )
    if base_url or env.get("OPENAI_BASE_URL"):
        key_env = ("OPENAI_API_KEY", *key_env)
    with offline_as(role):
        return LLMClient(
            base_url=url,
            model=settings.model,
            api_key_env=tuple(dict.fromkeys(key_env)),
            cache=response_cache if cache else None,
        )


def _settings(options: Mapping[str, Any], purpose: str) -> JudgeSettings:
    manifest = {k: options.get(k) for k in ("judge_backend", "model", "project_id", "region")}
    return judge_settings({}, manifest, purpose=purpose)


class LLMAnswer:
    """The original's LLM answer: the question and the top five memories, 1024 tokens.

    With nothing retrieved the answer is the original's fixed sentence and no call is
    made. A failed call raises (the cell is an error), where the original silently
    answered "I don't have enough information…".
    """

    def __init__(
        self,
        *,
        client: LLMClient | None = None,
        base_url: str | None = None,
        cache: bool = True,
        response_cache: ResponseCache | None = None,
        **settings: Any,
    ) -> None:
        self.client = client or memory_client(
            _settings(settings, "answer"),
            base_url=base_url,
            cache=cache,
            response_cache=response_cache,
            role="model",
        )

    async def generate(self, question: str, contexts: Sequence[str], task: Task) -> Answer:
        if not contexts:
            return Answer(NO_ANSWER)
        result = await self.client.chat(
            answer_prompt(question, contexts[:ANSWER_CONTEXTS]),
            max_tokens=ANSWER_MAX_TOKENS,
            temperature=0.0,
        )
        return Answer(result.text or "", result.usage)

    async def aclose(self) -> None:
        await self.client.aclose()


class MemoryLLMJudge:
    """The ``llm-as-judge`` protocol: one judge call per case, the original's prompt.

    Options are the manifest's evaluation settings (``judge_backend``, ``model``,
    ``project_id``, ``region``), ``type_instructions``, the pass thresholds, the listed
    ``metrics``, and ``base_url`` / ``cache``; ``client`` from code. The verdict is asked for
    in shape (:data:`JUDGE_SEND_SCHEMA` as the response format, the reply validated against
    :data:`JUDGE_SCHEMA`, once more when out of shape); a failed call or a reply still out
    of shape is a ``judge_error`` (``value=None``, every reply kept), never a 0.
    """

    def __init__(
        self,
        *,
        judge_backend: str | None = None,
        model: str | None = None,
        project_id: str | None = None,
        region: str | None = None,
        type_instructions: Mapping[str, Any] | None = None,
        pass_correctness: float = PASS_CORRECTNESS,
        pass_faithfulness: float = PASS_FAITHFULNESS,
        metrics: Iterable[str] | None = None,
        base_url: str | None = None,
        cache: bool = True,
        client: LLMClient | None = None,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
    ) -> None:
        del base_dir
        options = {
            "judge_backend": judge_backend,
            "model": model,
            "project_id": project_id,
            "region": region,
        }
        self.client = client or memory_client(
            _settings(options, "judge"),
            base_url=base_url,
            cache=cache,
            response_cache=response_cache,
        )
        self.instructions = dict(type_instructions or {})
        self.pass_correctness = pass_correctness
        self.pass_faithfulness = pass_faithfulness
        self.metrics = None if metrics is None else tuple(metrics)

    async def evaluate(self, task: Task, response: Response) -> Score:
        case = MemoryCase.of(task)
        question = case.question if case.question is not None else str(task.input)
        question_type = case.question_type
        prompt = judge_prompt(
            question,
            "" if task.expected is None else str(task.expected),
            "" if response.output is None else str(response.output),
            [item.content for item in response.retrieved],
            question_type,
            type_instruction(self.instructions, question_type),
        )
        try:
            reply = await ask(
                self.client,
                [{"role": "user", "content": prompt}],
                JUDGE_SCHEMA,
                name="memorybench_judge",
                send_schema=JUDGE_SEND_SCHEMA,
                max_tokens=JUDGE_MAX_TOKENS,
            )
        except JudgeFailure as failure:
            return failure_score("llm-as-judge", failure)
        score = judge_score(
            parse_judge_reply(json.dumps(reply.data)),
            pass_correctness=self.pass_correctness,
            pass_faithfulness=self.pass_faithfulness,
            metrics=self.metrics,
        )
        usage = reply.usage
        spent: dict[str, float] = {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
        }
        if usage.cost_usd is not None:
            spent["cost_usd"] = usage.cost_usd
        extra: dict[str, Any] = {"usage": spent}
        if reply.retried:
            extra["replies"] = list(reply.replies)
        return attrs.evolve(score, details={**score.details, **extra})

    async def prepare(self) -> None:
        """Start the local model's server before the first cell (see :func:`benchkit.evaluators._judge.start_client`)."""
        await start_client(self.client)

    async def aclose(self) -> None:
        await self.client.aclose()
