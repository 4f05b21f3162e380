"""MemoryBench's evaluation protocols as benchkit evaluators.

Score layout (one Score per evaluator; the cell's headline score is the protocol's value):

* ``exact-match`` (``memory_exact_match``): value = correctness; passes when correctness
  >= ``pass_correctness`` (0.7) and faithfulness >= ``pass_faithfulness`` (0.5);
  details = the listed metrics among ``correctness`` / ``faithfulness``, plus the
  original's extra scores ``similarity``, ``isExactMatch``, ``isContained``.
* ``deletion-check`` (``deletion_check``): value = ``deletion_success`` (1 or 0); details
  = ``deletion_success``, ``leakage_rate``, and ``leaked`` (the ids that came back).
* ``retrieval`` (``memory_retrieval``): the listed ``retrieval_*`` metrics in details and
  no value of its own (``value=None`` without ``error``): retrieval quality is reported,
  it does not decide pass or fail — as in the original — and it does not dilute the
  cell's score. A case with no gold session ids has no retrieval metrics (empty details).

The MemoryBench ``scores`` of a case are the numeric details of its scores, merged
(:mod:`benchkit.formats.memorybench._export`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

import attrs

from benchkit._js import MISSING, WHITESPACE_RUN, to_string, trim
from benchkit.errors import ConfigError
from benchkit.formats.memorybench._case import MemoryCase
from benchkit.memory import tokenize
from benchkit.metrics import RetrievalEvaluator
from benchkit.metrics.retrieval import METRICS
from benchkit.results import Score

if TYPE_CHECKING:
    from benchkit.model import Response, RetrievedItem, Task

__all__ = [
    "DeletionCheck",
    "ExactMatchResult",
    "MemoryExactMatch",
    "MemoryRetrieval",
    "exact_match",
    "leaked_items",
    "pass_rule",
    "session_id",
    "similarity",
]

PASS_CORRECTNESS = 0.7
PASS_FAITHFULNESS = 0.5
RETRIEVAL_METRICS = tuple(f"retrieval_{m}" for m in METRICS)
PROTOCOL_METRICS = {
    "exact-match": ("correctness", "faithfulness"),
    "llm-as-judge": ("correctness", "faithfulness"),
    "deletion-check": ("deletion_success", "leakage_rate"),
}
_SESSION_HEADER = re.compile(r"=== Session: ([^\s=]+) ===")


def _threshold(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def _metrics(value: Iterable[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset((value,))
    return frozenset(value)


def pass_rule(
    correctness: float,
    faithfulness: float,
    pass_correctness: float = PASS_CORRECTNESS,
    pass_faithfulness: float = PASS_FAITHFULNESS,
) -> str | None:
    """None when a case passes MemoryBench's rule, else why it does not."""
    why = []
    if correctness < pass_correctness:
        why.append(f"correctness {correctness:.3f} < {pass_correctness:g}")
    if faithfulness < pass_faithfulness:
        why.append(f"faithfulness {faithfulness:.3f} < {pass_faithfulness:g}")
    return " and ".join(why) or None


# --------------------------------------------------------------------------- exact-match


def _normalize(text: str, case_sensitive: bool, normalize_whitespace: bool) -> str:
    text = trim(text)
    if normalize_whitespace:
        text = WHITESPACE_RUN.sub(" ", text)
    return text if case_sensitive else text.lower()


def similarity(a: str, b: str) -> float:
    """The original's "similarity": Jaccard of the whitespace-separated token *sets*.

    >>> similarity("the cat sat", "the cat ran")
    0.5
    """
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    first = set(WHITESPACE_RUN.split(a))
    second = set(WHITESPACE_RUN.split(b))
    union = len(first | second)
    return len(first & second) / union if union else 0.0


def _percent(value: float) -> str:
    """``(value * 100).toFixed(1)`` — rounding the exact double half up, as JavaScript does."""
    return str(Decimal(value * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


@attrs.frozen
class ExactMatchResult:
    """Everything the original's exact-match protocol computes for one answer."""

    correctness: float
    faithfulness: float
    similarity: float
    is_exact_match: bool
    is_contained: bool
    reasoning: str


def exact_match(
    expected: str,
    generated: str,
    contexts: Sequence[str],
    *,
    case_sensitive: bool = False,
    normalize_whitespace: bool = True,
) -> ExactMatchResult:
    """The original's exact-match protocol (notes A.7).

    Correctness: 1.0 for an exact match, 0.9 when the expected answer is contained in the
    generated one, 0.7 at similarity >= 0.8, 0.5 at >= 0.5, else half the similarity.
    Faithfulness: the best context — 1.0 when it contains the expected answer, else its
    similarity to it; 0 with no context.

        >>> r = exact_match("Paris", "The capital is Paris.", ["Paris is in France."])
        >>> r.correctness, r.faithfulness, r.reasoning
        (0.9, 1.0, 'Expected answer is contained within generated answer.')
    """
    want = _normalize(expected, case_sensitive, normalize_whitespace)
    got = _normalize(generated, case_sensitive, normalize_whitespace)
    exact = want == got
    contained = want in got
    sim = similarity(want, got)
    faithfulness = 0.0
    for context in contexts:
        text = _normalize(context, case_sensitive, normalize_whitespace)
        if want in text:
            faithfulness = 1.0
            break
        faithfulness = max(faithfulness, similarity(text, want))
    if exact:
        correctness, reasoning = 1.0, "Exact match between expected and generated answer."
    elif contained:
        correctness, reasoning = 0.9, "Expected answer is contained within generated answer."
    elif sim >= 0.8:
        correctness = 0.7
        reasoning = f"High similarity ({_percent(sim)}%) between expected and generated."
    elif sim >= 0.5:
        correctness = 0.5
        reasoning = f"Partial similarity ({_percent(sim)}%) between expected and generated."
    elif sim > 0:
        correctness = sim * 0.5
        reasoning = f"Low similarity ({_percent(sim)}%) between expected and generated."
    else:
        correctness, reasoning = 0.0, "No match between expected and generated answer."
    return ExactMatchResult(correctness, faithfulness, sim, exact, contained, reasoning)


def _answer_text(value: Any) -> str:
    """``String(value ?? "")``: what the original compares."""
    return "" if value is None or value is MISSING else to_string(value)


class MemoryExactMatch:
    """The ``exact-match`` protocol as an evaluator (``memory_exact_match``).

    ``metrics`` lists what the manifest asks for (None: everything); the pass rule uses
    correctness and faithfulness whether they are listed or not.
    """

    def __init__(
        self,
        *,
        case_sensitive: bool = False,
        normalize_whitespace: bool = True,
        pass_correctness: float = PASS_CORRECTNESS,
        pass_faithfulness: float = PASS_FAITHFULNESS,
        metrics: Iterable[str] | None = None,
    ) -> None:
        if not isinstance(case_sensitive, bool) or not isinstance(normalize_whitespace, bool):
            raise ConfigError("case_sensitive and normalize_whitespace must be true or false")
        self.case_sensitive = case_sensitive
        self.normalize_whitespace = normalize_whitespace
        self.pass_correctness = _threshold("pass_correctness", pass_correctness)
        self.pass_faithfulness = _threshold("pass_faithfulness", pass_faithfulness)
        self.metrics = _metrics(metrics)

    async def evaluate(self, task: Task, response: Response) -> Score:
        result = exact_match(
            _answer_text(task.expected),
            _answer_text(response.output),
            [item.content for item in response.retrieved],
            case_sensitive=self.case_sensitive,
            normalize_whitespace=self.normalize_whitespace,
        )
        listed = self.metrics
        details: dict[str, Any] = {
            k: v
            for k, v in (("correctness", result.correctness), ("faithfulness", result.faithfulness))
            if listed is None or k in listed
        }
        details["similarity"] = result.similarity
        details["isExactMatch"] = 1 if result.is_exact_match else 0
        details["isContained"] = 1 if result.is_contained else 0
        why = pass_rule(
            result.correctness, result.faithfulness, self.pass_correctness, self.pass_faithfulness
        )
        reason = result.reasoning if why is None else f"{result.reasoning} Fails: {why}."
        return Score(
            name="exact-match",
            value=result.correctness,
            passed=why is None,
            reason=reason,
            details=details,
        )


# --------------------------------------------------------------------------- deletion-check


def leaked_items(
    deleted: Sequence[str],
    contents: Sequence[str],
    *,
    fuzzy: bool = False,
    threshold: float = 0.8,
) -> list[int]:
    """Indexes of the ``contents`` that carry any of the ``deleted`` texts.

    Exact: the normalised content (trimmed, whitespace collapsed, lower-cased) contains
    the normalised deleted text. Fuzzy: at least ``threshold`` of the deleted text's
    distinct tokens (MemoryBench's tokenizer) appear in the content.

        >>> leaked_items(["Code is 4512."], ["the CODE is 4512. ok", "nothing"])
        [0]
        >>> leaked_items(["code is 4512"], ["4512 was the code"], fuzzy=True, threshold=0.5)
        [0]
    """
    wanted = [want for text in deleted if (want := _normalize(text, False, True))]
    tokens = [set(tokenize(want)) for want in wanted]
    found: list[int] = []
    for index, content in enumerate(contents):
        text = _normalize(content, False, True)
        have = set(tokenize(text)) if fuzzy else set()
        for want, need in zip(wanted, tokens, strict=True):
            # Fuzzy needs tokens; a deleted text too short to have any is matched exactly.
            if (len(need & have) / len(need) >= threshold) if fuzzy and need else want in text:
                found.append(index)
                break
    return found


class DeletionCheck:
    """The ``deletion-check`` protocol (``deletion_check``): deleted content must not
    come back for the verification query, and the store must confirm every delete.

    The deleted texts come from the task's :class:`MemoryCase` (``deleted``). ``fuzzy_match``
    switches from containment to token overlap (at ``fuzzy_threshold``).
    """

    def __init__(
        self,
        *,
        fuzzy_match: bool = False,
        fuzzy_threshold: float = 0.8,
        metrics: Iterable[str] | None = None,
    ) -> None:
        if not isinstance(fuzzy_match, bool):
            raise ConfigError(f"fuzzy_match must be true or false, got {fuzzy_match!r}")
        self.fuzzy_match = fuzzy_match
        self.fuzzy_threshold = _threshold("fuzzy_threshold", fuzzy_threshold)
        self.metrics = _metrics(metrics)

    async def evaluate(self, task: Task, response: Response) -> Score:
        deleted = MemoryCase.of(task).deleted
        if deleted is None or not any(isinstance(d, str) and trim(d) for d in deleted):
            return Score(
                name="deletion-check",
                value=None,
                passed=False,
                error=f"case {task.id!r} names no deleted content to look for",
            )
        items: Sequence[RetrievedItem] = response.retrieved
        leaked = leaked_items(
            [d for d in deleted if isinstance(d, str)],
            [item.content for item in items],
            fuzzy=self.fuzzy_match,
            threshold=self.fuzzy_threshold,
        )
        unconfirmed = response.metadata.get("unconfirmed_deletes") or []
        success = 0.0 if leaked or unconfirmed else 1.0
        rate = len(leaked) / len(items) if items else 0.0
        if leaked:
            ids = ", ".join(items[i].id for i in leaked)
            reason = f"Deleted content came back in {len(leaked)} of {len(items)} results ({ids})."
        elif unconfirmed:
            reason = f"The store did not confirm deleting: {', '.join(map(str, unconfirmed))}."
        else:
            reason = f"Deleted content did not come back ({len(items)} results checked)."
        listed = self.metrics
        details: dict[str, Any] = {
            k: v
            for k, v in (("deletion_success", success), ("leakage_rate", rate))
            if listed is None or k in listed
        }
        details["leaked"] = [items[i].id for i in leaked]
        return Score(
            name="deletion-check",
            value=success,
            passed=success == 1.0,
            reason=reason,
            details=details,
        )


# --------------------------------------------------------------------------- retrieval


def session_id(item: RetrievedItem) -> str:
    """The id a retrieved memory is judged by: its ``_sessionId`` metadata, else the
    ``=== Session: <id> ===`` header in its text, else its record id."""
    from_metadata = item.metadata.get("_sessionId")
    if isinstance(from_metadata, str) and from_metadata:
        return from_metadata
    match = _SESSION_HEADER.search(item.content)
    return match.group(1) if match else item.id


class MemoryRetrieval(RetrievalEvaluator):
    """MemoryBench's retrieval metrics (``memory_retrieval``), decision 8 of the notes.

    ``metrics`` are the manifest's ``retrieval_*`` names. At cutoff ``k`` (the manifest's
    ``retrieval_limit``), in the order the store returned: precision over the distinct
    ids retrieved, binary gains, AP divided by all relevant ids. Items are identified by
    :func:`session_id`. Reports only; it never fails a case.
    """

    name = "retrieval"

    def __init__(self, *, metrics: Iterable[str] = RETRIEVAL_METRICS, k: int = 10) -> None:
        names = (metrics,) if isinstance(metrics, str) else tuple(metrics)
        unknown = [m for m in names if m not in RETRIEVAL_METRICS]
        if unknown:
            raise ConfigError(
                f"unknown retrieval metric {unknown[0]!r}",
                fix=f"use some of: {', '.join(RETRIEVAL_METRICS)}.",
            )
        super().__init__(
            metrics=[m.removeprefix("retrieval_") for m in names],
            k=k,
            denominator="retrieved",
            gains="binary",
            primary=None,
        )

    def item_id(self, item: RetrievedItem) -> str:
        return session_id(item)

    def detail_key(self, metric: str) -> str:
        return f"retrieval_{metric}"

    def no_relevant(self, task: Task) -> Score:
        return Score(
            name=self.name,
            value=None,
            passed=True,
            reason="no gold session ids: no retrieval metrics for this case",
        )
