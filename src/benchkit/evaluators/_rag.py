"""RAG metrics as RAGAS defines them: ``context_recall``, ``context_precision``,
``faithfulness`` and ``answer_correctness``.

The definitions are those of RAGAS (Es, James, Espinosa-Anke and Schockaert, "RAGAS:
Automated Evaluation of Retrieval Augmented Generation", arXiv:2309.15217, 2023) and of
the ragas documentation's metric pages; docs/metrics.md ("RAG") states each with its
citation. Every judgement is asked of a model in shape, through the one verdict path
(:func:`benchkit.evaluators._verdict.ask`: a JSON Schema as the response format, one
retry with the complaint, then a ``judge_error`` cell — never free text read for a
number), so any endpoint serves, the embedded model ``local`` included (the default
when no ``base_url`` is given). Lists of verdicts are asked for with exactly as many items
as there are statements or contexts (``minItems`` = ``maxItems``), which a grammar
enforces on the local model and the validator checks everywhere.

**Where contexts come from.** ``contexts: retrieved`` (the default) reads the response's
``retrieved`` items in rank order — what the memory pipeline (MemoryBench runs) and any
provider returning :class:`~benchkit.model.RetrievedItem` values fill; ``contexts: task``
reads the task's ``context`` list (a native task's given passages). No contexts is a
retrieval that found nothing: the context metrics and faithfulness score 0 without asking.
The question is ``task.input`` (as text); the reference answer is the ``reference``
option, else ``task.expected``.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from benchkit.errors import ConfigError, LLMError
from benchkit.evaluators._basic import _text
from benchkit.evaluators._judge import start_client, usage_details
from benchkit.evaluators._semantic import (
    DEFAULT_REMOTE_MODEL,
    ENDPOINT_OPTIONS,
    embedding_client,
    embedding_model,
    similarity,
)
from benchkit.evaluators._text import _THRESHOLD, _check_options
from benchkit.evaluators._verdict import JudgeFailure, ask, failure_score, text_schema
from benchkit.llm import LLMClient
from benchkit.llm._local import LOCAL
from benchkit.model import Response, Task, Usage
from benchkit.protocols import ResponseCache
from benchkit.results import Score

__all__ = [
    "AnswerCorrectness",
    "ContextPrecision",
    "ContextRecall",
    "Faithfulness",
    "MAX_STATEMENTS",
    "context_precision",
    "f1_from_counts",
]

#: The most statements a judge may split a text into (the schemas' ``maxItems``).
MAX_STATEMENTS = 12
#: The judge model with a ``base_url`` and no ``model`` (as the other judges').
DEFAULT_JUDGE = "gpt-4o"
_STATEMENT_CHARS = 200
_CONTEXT_CHARS = 4000  # of each context shown to the judge

_RAG_OPTIONS: dict[str, Any] = {
    **ENDPOINT_OPTIONS,
    "threshold": _THRESHOLD,
    "contexts": {
        "enum": ["retrieved", "task"],
        "description": "Where the contexts are: the response's retrieved items (default) "
        "or the task's context list.",
    },
    "reference": {"type": "string", "description": "The reference answer; default task.expected."},
}

STATEMENTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "statements": {
            "type": "array",
            "items": text_schema(_STATEMENT_CHARS),
            "minItems": 1,
            "maxItems": MAX_STATEMENTS,
        }
    },
    "required": ["statements"],
    "additionalProperties": False,
}


def verdicts_schema(count: int, field: str = "verdicts") -> dict[str, Any]:
    """``{field: [0 or 1, ...]}`` with exactly ``count`` verdicts."""
    return {
        "type": "object",
        "properties": {
            field: {
                "type": "array",
                "items": {"type": "integer", "enum": [0, 1]},
                "minItems": count,
                "maxItems": count,
            }
        },
        "required": [field],
        "additionalProperties": False,
    }


def context_precision(verdicts: Sequence[int]) -> float:
    """RAGAS's context precision of ranked verdicts (1: the context at that rank is
    relevant): the mean of precision@k over the ranks k holding a relevant context, 0
    when none is.

        >>> context_precision([1, 0, 1])  # (1/1 + 2/3) / 2
        0.8333333333333333
        >>> context_precision([0, 1]), context_precision([0, 0])
        (0.5, 0.0)
    """
    hits = 0
    total = 0.0
    for k, verdict in enumerate(verdicts, start=1):
        if verdict:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def f1_from_counts(tp: int, fp: int, fn: int) -> float:
    """RAGAS's factual F1 of answer correctness: ``TP / (TP + (FP + FN) / 2)``.

    >>> f1_from_counts(2, 1, 1)
    0.6666666666666666
    """
    return tp / (tp + 0.5 * (fp + fn)) if tp else 0.0


def _numbered(items: Sequence[str]) -> str:
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, start=1))


def _cut(text: str, limit: int = _CONTEXT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + " ..."


class _RagMetric:
    """Shared plumbing: options checked, the judge client, contexts, question, reference."""

    name: ClassVar[str]
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": _RAG_OPTIONS,
        "additionalProperties": False,
    }
    needs_reference: ClassVar[bool] = True
    needs_contexts: ClassVar[bool] = True

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
        self.options = options
        self.threshold = float(options.get("threshold", 0.5))
        self.contexts_from: str = options.get("contexts", "retrieved")
        self.reference: str | None = options.get("reference")
        self.client: LLMClient = embedding_client(
            options, response_cache, default_model=DEFAULT_JUDGE
        )
        self.model = embedding_model(self.client)

    def contexts(self, task: Task, response: Response) -> list[str]:
        if self.contexts_from == "task":
            return list(task.context)
        return [item.content for item in response.retrieved]

    def reference_of(self, task: Task) -> str | None:
        if self.reference is not None:
            return self.reference
        expected = task.expected
        if isinstance(expected, list) and expected and all(isinstance(e, str) for e in expected):
            return str(expected[0])
        return expected if isinstance(expected, str) and expected.strip() else None

    async def ask(
        self, prompt: str, schema: Mapping[str, Any], spent: list[Usage], replies: list[str]
    ) -> Any:
        """One verdict in shape; its usage and replies joined to the cell's."""
        try:
            reply = await ask(
                self.client,
                [{"role": "user", "content": prompt}],
                schema,
                name=self.name,
                format_name=self.name,
            )
        except JudgeFailure as failure:
            failure.replies = (*replies, *failure.replies)
            failure.usage = sum(spent, Usage()) + failure.usage
            raise
        spent.append(reply.usage)
        replies.extend(reply.replies)
        return reply.data

    async def supported(
        self,
        whose: str,
        ask: str,
        question: str,
        text: str,
        contexts: list[str],
        spent: list[Usage],
        replies: list[str],
    ) -> tuple[float, str, dict[str, Any]]:
        """The share of ``text``'s claims (``whose``: the reference's or the answer's) the
        judge finds supported by the contexts when asked ``ask`` of each: context recall
        and faithfulness are this measure of two texts. No contexts supports nothing."""
        if not contexts:
            return 0.0, f"no contexts were retrieved: no claim of the {whose} is supported", {}
        claims = await self.statements(question, text, spent, replies)
        verdicts = await self.verdicts(ask, _context_block(contexts), claims, spent, replies)
        found = sum(verdicts)
        return (
            found / len(claims),
            f"{found} of {len(claims)} {whose} claim(s) supported by the contexts",
            {"statements": claims, "verdicts": verdicts},
        )

    async def statements(
        self, question: str, text: str, spent: list[Usage], replies: list[str]
    ) -> list[str]:
        """The claims ``text`` makes, each one standalone sentence (RAGAS's first step)."""
        prompt = (
            "Break the answer below into short standalone statements: each one fact it "
            "states, with pronouns replaced by what they refer to. "
            f"At most {MAX_STATEMENTS} statements.\n\n"
            f"Question: {question}\nAnswer: {text}\n\n"
            'Reply with JSON only: {"statements": ["...", ...]}.'
        )
        data = await self.ask(prompt, STATEMENTS_SCHEMA, spent, replies)
        return [str(s) for s in data["statements"]]

    async def verdicts(
        self,
        instruction: str,
        source: str,
        items: Sequence[str],
        spent: list[Usage],
        replies: list[str],
    ) -> list[int]:
        """A 0/1 verdict on each of ``items`` against ``source``."""
        prompt = (
            f"{instruction}\n\n{source}\n\nStatements:\n{_numbered(items)}\n\n"
            f"Give one verdict per statement, in order: 1 if it holds, 0 if not. Reply "
            f'with JSON only: {{"verdicts": [{", ".join(["0 or 1"] * len(items))}]}}.'
        )
        data = await self.ask(prompt, verdicts_schema(len(items)), spent, replies)
        return [int(v) for v in data["verdicts"]]

    async def evaluate(self, task: Task, response: Response) -> Score:
        reference = self.reference_of(task)
        if self.needs_reference and reference is None:
            return Score(
                self.name,
                None,
                False,
                error=f"{self.name} needs a reference answer: set the 'reference' option or "
                "a string task.expected",
            )
        contexts = self.contexts(task, response) if self.needs_contexts else []
        spent: list[Usage] = []
        replies: list[str] = []
        base: dict[str, Any] = {"model": self.model}
        if self.needs_contexts:
            base["contexts"] = len(contexts)
            base["contexts_from"] = self.contexts_from
        try:
            value, reason, details = await self.measure(
                _text(task.input), _text(response.output), reference or "", contexts, spent, replies
            )
        except JudgeFailure as failure:
            return failure_score(self.name, failure, **base)
        except LLMError as exc:
            return Score(self.name, None, False, error=f"{self.name}: {exc}", details=base)
        return Score(
            self.name,
            value,
            value >= self.threshold,
            reason=reason,
            details={
                **base,
                **details,
                "replies": replies,
                "usage": usage_details(sum(spent, Usage())),
            },
        )

    async def measure(
        self,
        question: str,
        answer: str,
        reference: str,
        contexts: list[str],
        spent: list[Usage],
        replies: list[str],
    ) -> tuple[float, str, dict[str, Any]]:
        raise NotImplementedError

    async def prepare(self) -> None:
        """Start the local model's server before the first cell."""
        await start_client(self.client)

    async def aclose(self) -> None:
        await self.client.aclose()


def _context_block(contexts: Sequence[str]) -> str:
    return "Context:\n" + "\n\n".join(f"[{i}] {_cut(c)}" for i, c in enumerate(contexts, start=1))


class ContextRecall(_RagMetric):
    """The share of the reference answer's claims that the retrieved contexts support
    (RAGAS context recall): the reference is split into statements, and each is judged
    attributable to the contexts or not. In [0, 1].

    .. versionadded:: 0.2.0
    """

    name = "context_recall"

    async def measure(
        self,
        question: str,
        answer: str,
        reference: str,
        contexts: list[str],
        spent: list[Usage],
        replies: list[str],
    ) -> tuple[float, str, dict[str, Any]]:
        return await self.supported(
            "reference",
            "Can each statement be attributed to (inferred from) the context?",
            question,
            reference,
            contexts,
            spent,
            replies,
        )


class ContextPrecision(_RagMetric):
    """Whether the relevant contexts are ranked first (RAGAS context precision, with a
    reference): each retrieved context is judged useful for reaching the reference answer
    or not, and the score is the mean of precision@k over the ranks k of the useful ones
    (:func:`context_precision`). In [0, 1].

    .. versionadded:: 0.2.0
    """

    name = "context_precision"

    async def measure(
        self,
        question: str,
        answer: str,
        reference: str,
        contexts: list[str],
        spent: list[Usage],
        replies: list[str],
    ) -> tuple[float, str, dict[str, Any]]:
        if not contexts:
            return 0.0, "no contexts were retrieved", {}
        verdicts: list[int] = []
        for context in contexts:
            prompt = (
                "Was the context below useful in arriving at the reference answer to the "
                f"question?\n\nQuestion: {question}\nReference answer: {reference}\n\n"
                f"Context: {_cut(context)}\n\n"
                'Reply with JSON only: {"verdicts": [1]} if useful, {"verdicts": [0]} if not.'
            )
            data = await self.ask(prompt, verdicts_schema(1), spent, replies)
            verdicts.append(int(data["verdicts"][0]))
        value = context_precision(verdicts)
        return (
            value,
            f"{sum(verdicts)} of {len(verdicts)} context(s) useful; precision averaged over "
            f"their ranks {value:.3f}",
            {"verdicts": verdicts},
        )


class Faithfulness(_RagMetric):
    """The share of the answer's claims that the contexts support (RAGAS faithfulness):
    the answer is split into statements, and each is judged inferable from the contexts
    or not. In [0, 1]; needs no reference.

    .. versionadded:: 0.2.0
    """

    name = "faithfulness"
    needs_reference = False

    async def measure(
        self,
        question: str,
        answer: str,
        reference: str,
        contexts: list[str],
        spent: list[Usage],
        replies: list[str],
    ) -> tuple[float, str, dict[str, Any]]:
        return await self.supported(
            "answer",
            "Can each statement be inferred from the context alone?",
            question,
            answer,
            contexts,
            spent,
            replies,
        )


class AnswerCorrectness(_RagMetric):
    """RAGAS answer correctness: ``(w1 * F1 + w2 * similarity) / (w1 + w2)``, with the
    weights ``weights`` (default ``[0.75, 0.25]``, ragas's). F1 is the claim-level
    ``TP / (TP + (FP + FN) / 2)``: TP the answer's claims the reference supports, FP
    those it does not, FN the reference's claims the answer does not state; the
    similarity is the cosine of the answer's and the reference's embeddings (as
    ``semantic_similarity``, by ``embedding_model``, default the judge's model when it is
    ``local``, else text-embedding-3-small on the same endpoint). In [0, 1]; needs no
    contexts.

    .. versionadded:: 0.2.0
    """

    name = "answer_correctness"
    needs_contexts = False
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            **{k: v for k, v in _RAG_OPTIONS.items() if k != "contexts"},
            "weights": {
                "type": "array",
                "items": {"type": "number", "minimum": 0, "maximum": 1},
                "minItems": 2,
                "maxItems": 2,
                "description": "[factuality, similarity] weights (default [0.75, 0.25]).",
            },
            "embedding_model": {
                "type": "string",
                "minLength": 1,
                "description": "The embeddings model (default: local, or text-embedding-3-small "
                "with a base_url).",
            },
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
        super().__init__(base_dir=base_dir, response_cache=response_cache, **options)
        weights = options.get("weights", [0.75, 0.25])
        if sum(weights) <= 0:
            raise ConfigError(
                f"evaluator 'answer_correctness': option $.weights: {weights} sum to 0",
                fix="give [factuality, similarity] weights with a positive sum, e.g. [0.75, 0.25].",
            )
        self.weights = (float(weights[0]), float(weights[1]))
        self.embedder = self.client
        if self.weights[1] > 0:
            chosen = options.get("embedding_model")
            if chosen == LOCAL:
                self.embedder = embedding_client(
                    {"cache": options.get("cache", True)}, response_cache
                )
            elif chosen is not None or self.model != LOCAL:
                self.embedder = embedding_client(
                    {**options, "model": chosen or DEFAULT_REMOTE_MODEL}, response_cache
                )

    async def measure(
        self,
        question: str,
        answer: str,
        reference: str,
        contexts: list[str],
        spent: list[Usage],
        replies: list[str],
    ) -> tuple[float, str, dict[str, Any]]:
        w_f1, w_sim = self.weights
        details: dict[str, Any] = {}
        f1 = 0.0
        if w_f1 > 0:
            said = await self.statements(question, answer, spent, replies)
            wanted = await self.statements(question, reference, spent, replies)
            supported = await self.verdicts(
                "Is each statement supported by the reference answer?",
                f"Reference answer: {reference}",
                said,
                spent,
                replies,
            )
            covered = await self.verdicts(
                "Is each statement stated by the answer?",
                f"Answer: {answer}",
                wanted,
                spent,
                replies,
            )
            tp, fp, fn = sum(supported), len(said) - sum(supported), len(wanted) - sum(covered)
            f1 = f1_from_counts(tp, fp, fn)
            details.update(tp=tp, fp=fp, fn=fn, f1=f1, statements=said, reference_statements=wanted)
        similarity_value = 0.0
        if w_sim > 0:
            similarity_value, _, usage = await similarity(self.embedder, answer, [reference])
            spent.append(usage)
            details["similarity"] = similarity_value
        value = (w_f1 * f1 + w_sim * similarity_value) / (w_f1 + w_sim)
        return (
            value,
            f"answer correctness {value:.3f} = ({w_f1:g} x F1 {f1:.3f} + {w_sim:g} x "
            f"similarity {similarity_value:.3f}) / {w_f1 + w_sim:g}",
            details,
        )

    async def aclose(self) -> None:
        await super().aclose()
        if self.embedder is not self.client:
            await self.embedder.aclose()
