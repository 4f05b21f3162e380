"""Text-similarity evaluators backed by well-kept libraries, from the extra
``benchkit[metrics]``: ``edit_similarity`` (``rapidfuzz``).

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

__all__ = ["EditSimilarityEvaluator"]


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
