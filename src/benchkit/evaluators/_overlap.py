"""Text-similarity evaluators backed by well-kept libraries, from the extra
``benchkit[metrics]``: ``edit_similarity`` (``rapidfuzz``), ``rouge`` (Google's
``rouge-score``), ``bleu`` and ``chrf`` (``sacrebleu``).

Each library is imported when its evaluator is built — never by ``import benchkit`` — and
a missing one is one ConfigError naming ``pip install 'benchkit[metrics]'`` then, at suite
build time, before any task runs. References and options work as in
:mod:`benchkit.evaluators._text`: the ``references`` option, else ``task.expected``;
options checked against the class's ``options_schema``; a ``threshold`` decides ``passed``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from benchkit.errors import ConfigError
from benchkit.evaluators._text import _REFERENCES, _THRESHOLD, _ReferenceEvaluator, normalize_answer

__all__ = ["BleuEvaluator", "ChrfEvaluator", "EditSimilarityEvaluator", "RougeEvaluator"]


def _missing(library: str, evaluator: str) -> ConfigError:
    """The error of an evaluator whose library (from the extra) is not installed."""
    return ConfigError(
        f"evaluator {evaluator!r} needs {library}, which is not installed",
        fix="pip install 'benchkit[metrics]'",
    )


class EditSimilarityEvaluator(_ReferenceEvaluator):
    """Normalised Levenshtein similarity, ``1 - distance / max(len(a), len(b))`` in [0, 1]
    (1 for two empty texts), the best over the references; passes at ``threshold``
    (default 0.8).

    Counts single-character insertions, deletions and substitutions through ``rapidfuzz``'s
    ``Levenshtein.normalized_similarity``. Use it for outputs that must be nearly a given
    string (identifiers, file names, short transcriptions) where a typo deserves partial
    credit; ``normalize`` applies SQuAD's normalisation to both sides first.

    .. versionadded:: 0.2.0
    """

    name = "edit_similarity"
    default_threshold = 0.8
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "references": _REFERENCES,
            "threshold": _THRESHOLD,
            "normalize": {
                "type": "boolean",
                "description": "Normalise both sides as SQuAD does first (default false).",
            },
        },
        "additionalProperties": False,
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.normalize: bool = options.get("normalize", False)
        try:
            from rapidfuzz.distance import Levenshtein
        except ImportError:
            raise _missing("rapidfuzz", self.name) from None
        self._similarity = Levenshtein.normalized_similarity

    def score(self, prediction: str, reference: str) -> float:
        if self.normalize:
            prediction, reference = normalize_answer(prediction), normalize_answer(reference)
        return float(self._similarity(prediction, reference))


_ROUGE_VARIANTS = ("rouge1", "rouge2", "rougeL")
_MEASURES = ("fmeasure", "precision", "recall")


class RougeEvaluator(_ReferenceEvaluator):
    """ROUGE-1, ROUGE-2 or ROUGE-L (``variant``, default ``rougeL``) through Google's
    ``rouge-score``, the F-measure by default (``measure``), the best over the references;
    passes at ``threshold`` (default 0.5). ``details["rouge"]`` holds all three variants'
    F-measures against the best reference.

    ROUGE counts shared unigrams, bigrams or the longest common subsequence of words: use
    it for summaries and other long free text. rouge-score's tokenizer keeps only ASCII
    letters and digits (lower-cased), so text in other scripts scores 0: use ``chrf`` there.
    ``use_stemmer`` applies the Porter stemmer (``jumps`` = ``jump``).

    .. versionadded:: 0.2.0
    """

    name = "rouge"
    default_threshold = 0.5
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "references": _REFERENCES,
            "threshold": _THRESHOLD,
            "variant": {"enum": list(_ROUGE_VARIANTS), "description": "Default rougeL."},
            "measure": {"enum": list(_MEASURES), "description": "Default fmeasure."},
            "use_stemmer": {"type": "boolean", "description": "Porter stemming (default false)."},
        },
        "additionalProperties": False,
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.variant: str = options.get("variant", "rougeL")
        self.measure: str = options.get("measure", "fmeasure")
        try:
            from rouge_score import rouge_scorer  # type: ignore[import-not-found,import-untyped,unused-ignore]
        except ImportError:
            raise _missing("rouge-score", self.name) from None
        self._scorer: Any = rouge_scorer.RougeScorer(
            list(_ROUGE_VARIANTS), use_stemmer=bool(options.get("use_stemmer", False))
        )

    def scores(self, prediction: str, reference: str) -> dict[str, Any]:
        """rouge-score's three scores (precision, recall, fmeasure) of each variant."""
        return dict(self._scorer.score(reference, prediction))

    def score(self, prediction: str, reference: str) -> float:
        return float(getattr(self.scores(prediction, reference)[self.variant], self.measure))

    def more_details(self, prediction: str, reference: str) -> dict[str, Any]:
        scores = self.scores(prediction, reference)
        return {"rouge": {variant: float(scores[variant].fmeasure) for variant in scores}}


class _SacrebleuEvaluator(_ReferenceEvaluator):
    """A sacrebleu sentence metric: every reference at once, the 0-100 score scaled to [0, 1]."""

    default_threshold = 0.5
    metric: Any

    def judge(self, prediction: str, references: tuple[str, ...]) -> tuple[float, str | None]:
        value = self.metric.sentence_score(prediction, list(references)).score / 100
        return min(max(float(value), 0.0), 1.0), None


class BleuEvaluator(_SacrebleuEvaluator):
    """Sentence BLEU through ``sacrebleu`` (its default 13a tokenizer and exponential
    smoothing, effective n-gram order as sacrebleu advises for single sentences), scaled to
    [0, 1]; several references count together, as BLEU defines; passes at ``threshold``
    (default 0.5).

    BLEU is the modified n-gram precision (n = 1..4) with a brevity penalty: use it for
    translation-like outputs compared with references; it is harsh on single short
    sentences, where ``chrf`` is steadier.

    .. versionadded:: 0.2.0
    """

    name = "bleu"
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "references": _REFERENCES,
            "threshold": _THRESHOLD,
            "tokenize": {
                "enum": ["13a", "intl", "char", "none", "zh"],
                "description": "sacrebleu's tokenizer (default 13a).",
            },
            "lowercase": {"type": "boolean", "description": "Default false."},
            "smooth_method": {
                "enum": ["exp", "floor", "add-k", "none"],
                "description": "Default exp.",
            },
        },
        "additionalProperties": False,
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        try:
            from sacrebleu.metrics.bleu import BLEU  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise _missing("sacrebleu", self.name) from None
        self.metric = BLEU(
            tokenize=options.get("tokenize", "13a"),
            lowercase=bool(options.get("lowercase", False)),
            smooth_method=options.get("smooth_method", "exp"),
            effective_order=True,
        )


class ChrfEvaluator(_SacrebleuEvaluator):
    """chrF (``word_order: 2`` gives chrF++) through ``sacrebleu``, scaled to [0, 1];
    passes at ``threshold`` (default 0.5).

    The F-score (β = ``beta``, default 2) of character n-grams up to ``char_order`` (default
    6): robust to inflection and tokenisation, any script; use it for translation and short
    generated text where BLEU is too coarse.

    .. versionadded:: 0.2.0
    """

    name = "chrf"
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "references": _REFERENCES,
            "threshold": _THRESHOLD,
            "char_order": {"type": "integer", "minimum": 1, "maximum": 10},
            "word_order": {"type": "integer", "minimum": 0, "maximum": 4},
            "beta": {"type": "integer", "minimum": 1, "maximum": 10},
            "lowercase": {"type": "boolean"},
        },
        "additionalProperties": False,
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        try:
            from sacrebleu.metrics.chrf import CHRF  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise _missing("sacrebleu", self.name) from None
        self.metric = CHRF(
            char_order=options.get("char_order", 6),
            word_order=options.get("word_order", 0),
            beta=options.get("beta", 2),
            lowercase=bool(options.get("lowercase", False)),
        )
