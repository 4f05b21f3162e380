"""``semantic_similarity``: the cosine of the output's and the reference's embeddings.

Both texts are embedded by one model through :meth:`benchkit.llm.LLMClient.embed` (an
OpenAI-compatible ``/embeddings`` endpoint, or the embedded model ``local`` offline, the
default), and the score is their cosine, negative values clipped to 0, so it lies in
[0, 1]; with several references, the best. It passes at ``threshold``: by default 0.8,
and 0.9 for ``local``, whose mean-pooled vectors put even unrelated sentences near 0.8
(docs/llm.md, "Embeddings", measures it). This is the "answer semantic similarity" of
RAGAS (Es et al. 2023), which :class:`~benchkit.evaluators._rag.AnswerCorrectness` mixes in.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from benchkit.errors import LLMError
from benchkit.evaluators._basic import _clip, _no_expectation, _strings, _text
from benchkit.evaluators._judge import judge_client, usage_details
from benchkit.evaluators._text import _THRESHOLD, _check_options
from benchkit.llm import LLMClient, cosine
from benchkit.llm._local import LOCAL, LocalClient
from benchkit.model import Response, Task
from benchkit.protocols import ResponseCache
from benchkit.results import Score

__all__ = ["SemanticSimilarityEvaluator", "embedding_client", "similarity"]

#: The default pass mark of ``semantic_similarity`` by embedding model: ``local`` gets a
#: higher one (measured in docs/llm.md).
THRESHOLDS = {LOCAL: 0.9}
DEFAULT_THRESHOLD = 0.8
DEFAULT_REMOTE_MODEL = "text-embedding-3-small"

#: The options that choose an endpoint, shared by every evaluator that calls a model.
ENDPOINT_OPTIONS: dict[str, Any] = {
    "model": {
        "type": "string",
        "minLength": 1,
        "description": "The model: `local` (the default without base_url) or the endpoint's.",
    },
    "base_url": {"type": "string", "minLength": 1, "description": "An OpenAI-compatible /v1 URL."},
    "api_key_env": {
        "oneOf": [
            {"type": "string", "minLength": 1},
            {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
        ],
        "description": "The variable(s) holding the endpoint's key (default OPENAI_API_KEY).",
    },
    "cache": {"type": "boolean", "description": "Use the run's reply cache (default true)."},
}


def embedding_client(
    options: Mapping[str, Any],
    response_cache: ResponseCache | None,
    *,
    default_model: str = DEFAULT_REMOTE_MODEL,
) -> LLMClient:
    """The client an evaluator calls (``model``, ``base_url``, ``api_key_env``, ``cache``
    of its options): ``local`` unless a ``base_url`` is given, then ``default_model``
    unless ``model`` names one."""
    base_url = options.get("base_url")
    model = options.get("model") or (None if base_url else LOCAL)
    env = options.get("api_key_env", ("OPENAI_API_KEY",))
    return judge_client(
        None,
        model=model,
        base_url=base_url,
        api_key_env=(env,) if isinstance(env, str) else tuple(env),
        default_model=default_model,
        max_concurrency=16,
        max_retries=4,
        cache=response_cache if options.get("cache", True) else None,
    )


def embedding_model(client: LLMClient) -> str:
    """``local`` for the embedded model's client, else the client's model name."""
    return LOCAL if isinstance(client, LocalClient) else client.model


async def similarity(
    client: LLMClient, text: str, references: Sequence[str]
) -> tuple[float, int, Any]:
    """The best cosine of ``text`` with one of ``references`` (negative: 0), the index of
    that reference, and the embeddings' usage."""
    result = await client.embed([text, *references])
    first, *others = result.vectors
    values = [max(0.0, cosine(first, other)) for other in others]
    best = max(range(len(values)), key=values.__getitem__)
    return values[best], best, result.usage


class SemanticSimilarityEvaluator:
    """The cosine of the output's and the reference's embeddings, in [0, 1] (see the
    module). Options: ``references`` (default ``task.expected``), ``threshold``,
    ``model`` (default ``local``), ``base_url``, ``api_key_env``, ``cache``.

    .. versionadded:: 0.2.0
    """

    name = "semantic_similarity"
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "references": {
                "description": "The reference answer(s); default: task.expected.",
                "oneOf": [
                    {"type": "string"},
                    {"type": "array", "items": {"type": "string"}, "minItems": 1},
                ],
            },
            "threshold": _THRESHOLD,
            **ENDPOINT_OPTIONS,
        },
        "additionalProperties": False,
    }

    def __init__(
        self,
        *,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
        **options: Any,
    ) -> None:
        del base_dir
        options.pop("registries", None)
        _check_options(self.name, self.options_schema, options)
        self.references = _strings(options.get("references"))
        self.client = embedding_client(options, response_cache)
        self.model = embedding_model(self.client)
        self.threshold = float(
            options.get("threshold", THRESHOLDS.get(self.model, DEFAULT_THRESHOLD))
        )

    async def evaluate(self, task: Task, response: Response) -> Score:
        references = self.references or _strings(task.expected)
        if not references:
            return _no_expectation(
                self.name, "references", task.expected, "a string or a non-empty list of strings"
            )
        try:
            value, best, usage = await similarity(self.client, _text(response.output), references)
        except LLMError as exc:
            return Score(self.name, None, False, error=f"embeddings request failed: {exc}")
        return Score(
            self.name,
            value,
            value >= self.threshold,
            reason=f'cosine {value:.3f} with "{_clip(references[best], 200)}" '
            f"({self.model}, threshold {self.threshold:g})",
            details={
                "model": self.model,
                "references": len(references),
                "usage": usage_details(usage),
            },
        )

    async def aclose(self) -> None:
        await self.client.aclose()
