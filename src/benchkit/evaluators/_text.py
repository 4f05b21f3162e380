"""Text-overlap evaluators of reading-comprehension benchmarks: ``exact_match_normalized``
and ``token_f1``.

``exact_match_normalized`` and ``token_f1`` are defined as the official SQuAD evaluation
script defines them (Rajpurkar et al., SQuAD v1.1 and v2.0 ``evaluate`` scripts): both texts
are lower-cased, ASCII punctuation (:data:`string.punctuation`) is removed, the articles
``a``, ``an`` and ``the`` are removed as whole words, and runs of whitespace become one
space. Exact match is 1 when the normalised texts are equal; token F1 is the harmonic mean
of the precision and recall of the multiset of whitespace tokens. With several references
the score is the best over them (SQuAD's ``metric_max_over_ground_truths``). When either
side normalises to no tokens, F1 is 1 if both do and 0 otherwise (the v2.0 script's rule;
v1.1 gave 0 even for two empty texts).

Each evaluator reads its references from its ``references`` option, else ``task.expected``
(a string or a list of strings). The output is compared as text: a string as is, anything
else as compact JSON. Options are checked against the class's :attr:`options_schema` (a
JSON Schema) when the evaluator is built, so a typo is a ConfigError naming the option
before any task runs.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from benchkit._jsonschema import make_validator, render_path
from benchkit.errors import ConfigError
from benchkit.evaluators._basic import _clip, _no_expectation, _strings, _text
from benchkit.results import Score

if TYPE_CHECKING:
    from benchkit.model import Response, Task

__all__ = [
    "ExactMatchNormalizedEvaluator",
    "TokenF1Evaluator",
    "normalize_answer",
    "token_f1",
]

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")

_REFERENCES: dict[str, Any] = {
    "description": "The reference answer(s); default: task.expected.",
    "oneOf": [
        {"type": "string"},
        {"type": "array", "items": {"type": "string"}, "minItems": 1},
    ],
}
#: What the registry passes to any factory that takes ``**options`` (not options).
_CONTEXT = frozenset({"base_dir", "response_cache", "registries"})
_THRESHOLD: dict[str, Any] = {
    "type": "number",
    "minimum": 0,
    "maximum": 1,
    "description": "The score at or above which the response passes.",
}


def normalize_answer(text: str) -> str:
    """``text`` normalised as SQuAD's evaluation script does: lower case, no ASCII
    punctuation, no articles (a, an, the), single spaces.

    .. versionadded:: 0.2.0

        >>> normalize_answer("The  Eiffel Tower!")
        'eiffel tower'
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD's token F1 of ``prediction`` against one ``reference`` (both normalised).

    .. versionadded:: 0.2.0

        >>> token_f1("the Denver Broncos", "Denver Broncos won")
        0.8
    """
    predicted = normalize_answer(prediction).split()
    wanted = normalize_answer(reference).split()
    if not predicted or not wanted:
        return float(predicted == wanted)
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if same == 0:
        return 0.0
    precision = same / len(predicted)
    recall = same / len(wanted)
    return 2 * precision * recall / (precision + recall)


def _check_options(name: str, schema: Mapping[str, Any], options: Mapping[str, Any]) -> None:
    """ConfigError naming the first option of ``options`` that ``schema`` refuses."""
    for error in make_validator(schema).iter_errors(dict(options)):
        where = render_path(error.absolute_path)
        raise ConfigError(
            f"evaluator {name!r}: option {where}: {error.message}",
            fix=f"the options {name!r} takes: {', '.join(sorted(schema['properties']))}.",
        )


class _ReferenceEvaluator:
    """Shared plumbing: options checked against the schema, references from the option or
    ``task.expected``, the best score over them."""

    name: ClassVar[str]
    options_schema: ClassVar[dict[str, Any]]
    default_threshold: ClassVar[float] = 1.0

    def __init__(self, **options: Any) -> None:
        options = {k: v for k, v in options.items() if k not in _CONTEXT}
        _check_options(self.name, self.options_schema, options)
        self.references: tuple[str, ...] | None = _strings(options.get("references"))
        self.threshold = float(options.get("threshold", self.default_threshold))

    def score(self, prediction: str, reference: str) -> float:
        """The score of ``prediction`` against one reference."""
        raise NotImplementedError

    def judge(self, prediction: str, references: tuple[str, ...]) -> tuple[float, str | None]:
        """The score against all ``references`` and the reference it comes from: by default
        the best single score. Metrics with a multi-reference definition of their own (BLEU,
        chrF) override this and name no single reference (None)."""
        return max(
            ((self.score(prediction, reference), reference) for reference in references),
            key=lambda pair: pair[0],
        )

    async def evaluate(self, task: Task, response: Response) -> Score:
        references = self.references or _strings(task.expected)
        if not references:
            return _no_expectation(
                self.name, "references", task.expected, "a string or a non-empty list of strings"
            )
        prediction = _text(response.output)
        value, best = self.judge(prediction, references)
        details: dict[str, Any] = {"references": len(references)}
        if best is None:
            reason = f"{self.name} {value:.3f} against {len(references)} reference(s)"
        else:
            reason = f'{self.name} {value:.3f} against "{_clip(best, 200)}"'
            details.update(reference=_clip(best), **self.more_details(prediction, best))
        return Score(
            name=self.name,
            value=value,
            passed=value >= self.threshold,
            reason=reason,
            details=details,
        )

    def more_details(self, prediction: str, reference: str) -> dict[str, Any]:
        """What a metric adds to a score's details about its best reference (nothing)."""
        return {}


class ExactMatchNormalizedEvaluator(_ReferenceEvaluator):
    """1 when the output equals a reference after SQuAD's normalisation, else 0.

    The normalisation (:func:`normalize_answer`) forgives case, ASCII punctuation, the
    articles a/an/the and spacing, and nothing else: use it for short factual answers
    (reading comprehension, closed-book QA) where ``exact`` is too strict.

    .. versionadded:: 0.2.0

        >>> import anyio
        >>> from benchkit.model import Response, Task
        >>> evaluator = ExactMatchNormalizedEvaluator(references=["Denver Broncos"])
        >>> anyio.run(evaluator.evaluate, Task("t"), Response("The Denver Broncos.")).value
        1.0
    """

    name = "exact_match_normalized"
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"references": _REFERENCES},
        "additionalProperties": False,
    }

    def score(self, prediction: str, reference: str) -> float:
        return float(normalize_answer(prediction) == normalize_answer(reference))


class TokenF1Evaluator(_ReferenceEvaluator):
    """SQuAD's token F1 (:func:`token_f1`), the best over the references; passes at
    ``threshold`` (default 0.5).

    Partial credit for answers that share words with a reference in any order: use it for
    extractive QA and short free-text answers; prefer ``rouge`` for longer texts.

    .. versionadded:: 0.2.0

        >>> import anyio
        >>> from benchkit.model import Response, Task
        >>> evaluator = TokenF1Evaluator(references=["Denver Broncos won"])
        >>> anyio.run(evaluator.evaluate, Task("t"), Response("the Denver Broncos")).value
        0.8
    """

    name = "token_f1"
    default_threshold = 0.5
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"references": _REFERENCES, "threshold": _THRESHOLD},
        "additionalProperties": False,
    }

    def score(self, prediction: str, reference: str) -> float:
        return token_f1(prediction, reference)
