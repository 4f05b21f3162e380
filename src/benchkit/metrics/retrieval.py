"""Retrieval metrics at a cutoff: precision, recall, F1, coverage, nDCG and AP (MAP).

Pure functions over a ranking and its relevance judgements (qrels), usable on their own
for any run — no benchkit run needed::

    >>> qrels = {"d1": 1, "d3": 2}
    >>> precision(["d1", "d2", "d3"], qrels, 2)
    0.5
    >>> round(ndcg(["d1", "d2", "d3"], qrels, 3), 4)
    0.7602
    >>> evaluate({"q1": ["d3", "d1"]}, {"q1": qrels}, 2, ["recall", "map"])
    {'q1': {'recall': 1.0, 'map': 1.0}}

**Several cutoffs in one evaluation.** A metric named ``name@n`` is taken at cutoff n
instead of ``k`` — ``evaluate(run, qrels, None, ["precision@10", "recall@100", "ndcg@10",
"map@100"])`` reads each ranking once for all four (trec_eval's ``P_10``, ``recall_100``,
``ndcg_cut_10``, ``map_cut_100``). A scored ranking is never sorted whole: each relevant
id's rank is counted from the sorted scores (or, when so many relevant ids tie that
counting would cost more, only the ids that can reach the deepest cutoff are sorted).

**Rankings.** A sequence of ids is already ranked: its order is used as is (duplicates
after the first occurrence count as non-relevant, but keep their rank). A mapping
``id -> score`` is ranked by score, descending; tied scores keep the mapping's order
(``ties="given"``, the default) or follow trec_eval (``ties="trec"``: score descending,
then id descending). A NaN score ranks nowhere: scoring a ranking with one is a
:class:`ConfigError` naming the id.

**Relevance.** ``qrels`` maps ids to grades. Binary measures (precision, recall, F1,
coverage, AP) count an id as relevant when its grade is at least ``relevance_level``
(default 1, as trec_eval). nDCG uses the grades themselves as gains (``gains="graded"``,
trec_eval's ``ndcg_cut``; grades <= 0 gain nothing) or 1 per relevant id
(``gains="binary"``); the ideal DCG is taken over the best ``k`` gains.

**Definitions at cutoff k** (``hits`` = distinct relevant ids among the first k,
``R`` = relevant ids in qrels):

* precision = hits / k (``denominator="k"``, trec_eval's ``P_k``), or hits / distinct ids
  among the first k (``denominator="retrieved"``, 0 when nothing was retrieved);
* recall = hits / R (``recall_k``); F1 = their harmonic mean (0 when both are 0);
* coverage = 1 when any relevant id is among the first k, else 0 (``success_k``);
* ndcg = DCG@k / ideal DCG@k with discount 1 / log2(rank + 1) (``ndcg_cut_k``);
* map = the sum of precision at the rank of each relevant id in the first k, divided by R
  (average precision at k, trec_eval's ``map_cut_k``; its mean over queries is MAP).

**Queries with nothing relevant.** Recall, F1, AP and (when every gain is 0) nDCG are
undefined there: they are ``None`` by default (``no_relevant="none"``), so a mean never
averages in a silent 0 — :func:`summarize` says over how many queries each mean is taken.
``no_relevant="zero"`` reports 0 instead, which is what trec_eval prints. Precision and
coverage are always defined.

With ``ties="trec"`` and ``no_relevant="zero"`` every value equals pytrec_eval's
(``P_k``, ``recall_k``, ``ndcg_cut_k``, ``map_cut_k``, ``success_k``); the test suite
checks that on generated runs with ties, empty results and queries without relevant items.
"""

from __future__ import annotations

import math
import operator
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

import attrs

from benchkit.errors import ConfigError

__all__ = [
    "METRICS",
    "MetricSummary",
    "coverage",
    "evaluate",
    "evaluate_query",
    "f1",
    "map_at_k",
    "ndcg",
    "precision",
    "ranked_ids",
    "recall",
    "summarize",
]

Ranking = Sequence[str] | Mapping[str, float]
Qrels = Mapping[str, float]
TieOrder = Literal["given", "trec"]
Denominator = Literal["k", "retrieved"]
Gains = Literal["graded", "binary"]
NoRelevant = Literal["none", "zero"]


METRICS: tuple[str, ...] = ("precision", "recall", "f1", "coverage", "ndcg", "map")
"""Every metric name :func:`evaluate_query` and :func:`evaluate` accept, in report order."""


@attrs.frozen
class MetricSummary:
    """The mean of one metric over the queries where it is defined.

    ``n`` counts those queries; ``undefined`` counts the queries left out (no relevant
    item). ``mean`` is None when no query defines the metric.
    """

    mean: float | None
    n: int
    undefined: int = 0


_DISCOUNTS: tuple[float, ...] = ()


def _discounts(n: int) -> tuple[float, ...]:
    """``1 / log2(rank + 1)`` for ranks 1..m, some m >= n: the module's table, grown when
    a query needs more of it.

    Callers size ``n`` by what a query has (its ranked and relevant ids), never by its
    cutoff alone: ``k`` may be a file's ``retrieval_limit`` of a billion. The table grows
    to ``n`` rounded up to a power of two, so it is rarely rebuilt; a new, longer tuple
    replaces it, so a reader in another thread never sees it half built.
    """
    global _DISCOUNTS
    if len(_DISCOUNTS) < n:
        size = 1 << max(n - 1, 0).bit_length()
        _DISCOUNTS = tuple(1.0 / math.log2(rank + 1) for rank in range(1, size + 1))
    return _DISCOUNTS


def _trec_order(ranking: Mapping[str, float]) -> list[str]:
    """Score descending, then id descending: two C-level sorts, the second one stable."""
    ids = sorted(ranking, reverse=True)
    ids.sort(key=ranking.__getitem__, reverse=True)
    return ids


def _top(ranking: Mapping[str, float], k: int, trec: bool) -> list[str]:
    """The first ``k`` ids of a scored ranking in rank order (a few more on a tie at the
    cut-off): only the ids scoring at least the k-th best score are sorted."""
    if len(ranking) > k:
        threshold = sorted(ranking.values(), reverse=True)[k - 1]
        ids = [doc for doc, score in ranking.items() if score >= threshold]
    else:
        ids = list(ranking)
    if trec:
        ids.sort(reverse=True)
    ids.sort(key=ranking.__getitem__, reverse=True)  # stable: ties keep the order above
    return ids


def ranked_ids(ranking: Ranking, *, ties: TieOrder = "given") -> list[str]:
    """The ids of ``ranking`` in rank order (see the module docstring for tie orders).

    A sequence is returned as is; ``ties="trec"`` needs scores, so it needs a mapping.
    """
    if isinstance(ranking, Mapping):
        if ties == "trec":
            return _trec_order(ranking)
        if ties != "given":
            raise _bad_ties(ties)
        # sorted() is stable and reverse=True keeps equal keys in their original order.
        return sorted(ranking, key=ranking.__getitem__, reverse=True)
    if ties == "trec":
        raise ConfigError(
            "ties='trec' orders by score, but the ranking is a sequence of ids without scores",
            fix="pass a mapping id -> score, or keep the sequence's order with ties='given'.",
        )
    if ties != "given":
        raise _bad_ties(ties)
    return ranking if isinstance(ranking, list) else list(ranking)


def _bad_ties(ties: object) -> ConfigError:
    return ConfigError(f"ties must be 'given' or 'trec', got {ties!r}", fix="use ties='given'.")


@attrs.frozen
class _Plan:
    """The checked options of one evaluation, shared by every query.

    ``metrics`` are (name asked for, metric, cutoff); ``cutoffs`` the distinct cutoffs,
    ascending.
    """

    metrics: tuple[tuple[str, str, int], ...]
    cutoffs: tuple[int, ...]
    ties: TieOrder
    denominator: Denominator
    graded: bool
    level: float
    zero: bool

    @property
    def depth(self) -> int:
        """How deep a ranking is read: the largest cutoff."""
        return self.cutoffs[-1]


def _check_k(k: object, what: str) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"{what} must be an integer >= 1, got {k!r}", fix="e.g. k=10.")
    return k


def _parse_metric(name: object, k: int | None) -> tuple[str, str, int]:
    """``"ndcg"`` (at ``k``) or ``"ndcg@10"`` -> (name, metric, cutoff)."""
    if not isinstance(name, str):
        raise ConfigError(f"a metric name must be a string, got {name!r}")
    metric, at, cutoff = name.partition("@")
    if metric not in METRICS:
        raise ConfigError(
            f"unknown retrieval metric {metric!r}",
            fix=f"use some of: {', '.join(METRICS)} (with @k for a cutoff of its own).",
        )
    if not at:
        if k is None:
            raise ConfigError(
                f"metric {name!r} has no cutoff and k was not given",
                fix=f"pass k, or name the cutoff: {metric}@10.",
            )
        return name, metric, k
    if not cutoff.isdigit() or cutoff.startswith("0"):
        raise ConfigError(
            f"metric {name!r}: the cutoff after @ must be an integer >= 1",
            fix=f"e.g. {metric}@10.",
        )
    return name, metric, int(cutoff)


def _plan(
    k: int | None,
    metrics: Iterable[str],
    ties: str,
    denominator: str,
    gains: str,
    relevance_level: float,
    no_relevant: str,
) -> _Plan:
    if k is not None:
        _check_k(k, "k")
    names = (metrics,) if isinstance(metrics, str) else tuple(metrics)
    if not names:
        raise ConfigError("no metrics asked for", fix=f"use some of: {', '.join(METRICS)}.")
    parsed = tuple(_parse_metric(name, k) for name in names)
    if ties not in ("given", "trec"):
        raise _bad_ties(ties)
    if denominator not in ("k", "retrieved"):
        raise ConfigError(
            f"denominator must be 'k' or 'retrieved', got {denominator!r}",
            fix="'k' is trec_eval's P_k; 'retrieved' divides by what was retrieved.",
        )
    if gains not in ("graded", "binary"):
        raise ConfigError(f"gains must be 'graded' or 'binary', got {gains!r}")
    if (
        isinstance(relevance_level, bool)
        or not isinstance(relevance_level, (int, float))
        or not relevance_level > 0
    ):
        raise ConfigError(
            f"relevance_level must be a number > 0, got {relevance_level!r}",
            fix="trec_eval's default is 1: grades >= 1 are relevant.",
        )
    if no_relevant not in ("none", "zero"):
        raise ConfigError(f"no_relevant must be 'none' or 'zero', got {no_relevant!r}")
    return _Plan(
        parsed,
        tuple(sorted({cutoff for _, _, cutoff in parsed})),
        ties,  # type: ignore[arg-type]
        denominator,  # type: ignore[arg-type]
        gains == "graded",
        float(relevance_level),
        no_relevant == "zero",
    )


def _check_no_nan(ranking: Mapping[str, float]) -> None:
    """A NaN score has no rank (it compares false with every score): say which id has one."""
    for doc, score in ranking.items():
        if score != score:
            raise ConfigError(
                f"the score of retrieved id {doc!r} is NaN, which ranks nowhere",
                fix="give every retrieved id a number, or leave out the ids without one.",
            )


def _ranked_relevant(
    ranking: Mapping[str, float], qrels: Qrels, depth: int, trec: bool
) -> list[tuple[int, float]] | None:
    """(rank, grade) of each id with a positive grade that ranks within ``depth``, by rank;
    None when ties would make counting cost more than sorting (see below).

    Nothing is sorted but the scores: an id's rank is the number of higher scores (a
    bisection) plus, on a tie, the tied ids that come first — those with a greater id
    (``trec``) or earlier in the mapping (given order). An id that the higher scores
    alone push below ``depth`` is dropped before its ties are looked at; the tied ids
    are found by C-level searches of the scores (``list.index``, ``list.count``), not a
    Python loop over the ranking. The order of the other ids does not matter to any
    metric. Each tied id looked at costs a step; past twice the ranking's length (many
    relevant ids in large ties, e.g. every score 0) the caller sorts instead
    (:func:`_top`), so no ranking costs more than a sort and a few scans.
    """
    if math.isnan(sum(ranking.values())):  # one C-level pass; NaN (or inf - inf) somewhere
        _check_no_nan(ranking)
    found = [(doc, grade) for doc, grade in qrels.items() if grade > 0 and doc in ranking]
    if not found:
        return []
    scores = sorted(ranking.values())
    n = len(scores)
    budget = 2 * n
    keys: list[str] = []
    values: list[float] = []
    out: list[tuple[int, float]] = []
    for doc, grade in found:
        score = ranking[doc]
        high = bisect_right(scores, score)
        rank = n - high
        if rank >= depth:
            continue
        tied = high - bisect_left(scores, score)
        if tied > 1:
            budget -= tied
            if budget < 0:
                return None
            if not keys:
                keys = list(ranking)
                values = list(ranking.values())
            if trec:
                at = -1
                for _ in range(tied):
                    at = values.index(score, at + 1)
                    if keys[at] > doc:
                        rank += 1
            else:
                rank += values[: keys.index(doc)].count(score)
            if rank >= depth:
                continue
        out.append((rank, grade))
    out.sort()
    return out


def _listed_relevant(ids: Sequence[str], qrels: Qrels, depth: int) -> list[tuple[int, float]]:
    """(rank, grade) of each id with a positive grade among the first ``depth`` of a ranked
    list, in rank order; a duplicate counts at its first rank only."""
    out: list[tuple[int, float]] = []
    seen: set[str] | None = None
    get = qrels.get
    for rank, doc in enumerate(ids[:depth] if len(ids) > depth else ids):
        grade = get(doc)
        if grade is None or grade <= 0:
            continue
        # Only ids with a positive grade are tracked, so a duplicate costs nothing else.
        if seen is None:
            seen = {doc}
        elif doc in seen:
            continue
        else:
            seen.add(doc)
        out.append((rank, grade))
    return out


def _score(
    relevant: list[tuple[int, float]],
    retrieved: int | Callable[[int], int],
    qrels: Qrels,
    plan: _Plan,
) -> dict[str, float | None]:
    """Every requested metric of one query at every cutoff, from the ranks and grades of
    its relevant ids (:func:`_ranked_relevant`): one pass over them, a snapshot of the
    running counts at each cutoff. ``retrieved`` is how many ids the ranking has, or a
    function giving the distinct ids among the first k (a list may repeat ids)."""
    level = plan.level
    graded = plan.graded
    positive = [grade for grade in qrels.values() if grade > 0]
    # Usually every positive grade reaches the level (grades 1..3, level 1): no second pass.
    if positive and min(positive) < level:
        n_relevant = len([grade for grade in positive if grade >= level])
    else:
        n_relevant = len(positive)
    if graded:
        positive.sort(reverse=True)
    # Discounts are read at the relevant ids' ranks and, for the ideal DCG, at the first
    # len(positive) ranks: no further, whatever the cutoff.
    needed = min(plan.depth, max(len(positive), relevant[-1][0] + 1 if relevant else 0))
    discount = _DISCOUNTS if needed <= len(_DISCOUNTS) else _discounts(needed)
    hits = 0
    dcg = 0.0
    ap = 0.0
    at: dict[int, tuple[int, float, float]] = {}
    position = 0
    count = len(relevant)
    for cutoff in plan.cutoffs:
        while position < count:
            rank, grade = relevant[position]
            if rank >= cutoff:
                break
            position += 1
            if grade >= level:
                hits += 1
                ap += hits / (rank + 1)
                dcg += grade * discount[rank] if graded else discount[rank]
            elif graded:
                dcg += grade * discount[rank]
        at[cutoff] = (hits, dcg, ap)

    undefined: float | None = 0.0 if plan.zero else None
    out: dict[str, float | None] = {}
    for name, metric, k in plan.metrics:
        hits, dcg, ap = at[k]
        if metric in ("precision", "f1"):
            if plan.denominator == "k":
                p_value = hits / k
            else:
                distinct = min(retrieved, k) if isinstance(retrieved, int) else retrieved(k)
                p_value = hits / distinct if distinct else 0.0
            if metric == "precision":
                out[name] = p_value
            elif n_relevant:
                r_value = hits / n_relevant
                total = p_value + r_value
                out[name] = 2 * p_value * r_value / total if total > 0 else 0.0
            else:
                out[name] = undefined
        elif metric == "recall":
            out[name] = hits / n_relevant if n_relevant else undefined
        elif metric == "coverage":
            out[name] = 1.0 if hits else 0.0
        elif metric == "ndcg":
            if graded:
                ideal = sum(map(operator.mul, positive[:k], discount))  # stops at the shorter
            else:
                ideal = sum(discount[: min(n_relevant, k)])
            out[name] = dcg / ideal if ideal > 0 else undefined
        else:  # "map": checked by _plan
            out[name] = ap / n_relevant if n_relevant else undefined
    return out


def _score_ranking(ranking: Ranking, qrels: Qrels, plan: _Plan) -> dict[str, float | None]:
    """The metrics of one ranking, a mapping id -> score or a ranked sequence of ids."""
    if type(ranking) is dict or isinstance(ranking, Mapping):  # the common case first
        depth = plan.depth
        trec = plan.ties == "trec"
        relevant = _ranked_relevant(ranking, qrels, depth, trec)
        if relevant is None:  # so many ties that sorting the top ids is cheaper
            relevant = _listed_relevant(_top(ranking, depth, trec), qrels, depth)
        return _score(relevant, len(ranking), qrels, plan)
    ids = ranked_ids(ranking, ties=plan.ties)
    return _score(
        _listed_relevant(ids, qrels, plan.depth),
        lambda k: len(set(ids[:k])),
        qrels,
        plan,
    )


def evaluate_query(
    ranking: Ranking,
    qrels: Qrels,
    k: int | None,
    metrics: Iterable[str] = METRICS,
    *,
    ties: TieOrder = "given",
    denominator: Denominator = "k",
    gains: Gains = "graded",
    relevance_level: float = 1,
    no_relevant: NoRelevant = "none",
) -> dict[str, float | None]:
    """The ``metrics`` of one query at cutoff ``k``, in the order asked for.

    A metric named ``name@n`` (``"recall@100"``) is taken at cutoff n instead of ``k``, so
    one call computes several cutoffs from one reading of the ranking; ``k`` may then be
    None. The result uses the names as asked for.

    >>> evaluate_query(["a", "b", "c"], {"c": 1}, 2, ["precision", "recall", "coverage"])
    {'precision': 0.0, 'recall': 0.0, 'coverage': 0.0}
    """
    plan = _plan(k, metrics, ties, denominator, gains, relevance_level, no_relevant)
    return _score_ranking(ranking, qrels, plan)


def evaluate(
    run: Mapping[str, Ranking],
    qrels: Mapping[str, Qrels],
    k: int | None,
    metrics: Iterable[str] = METRICS,
    *,
    ties: TieOrder = "given",
    denominator: Denominator = "k",
    gains: Gains = "graded",
    relevance_level: float = 1,
    no_relevant: NoRelevant = "none",
) -> dict[str, dict[str, float | None]]:
    """Per-query metrics for every query of ``run`` (query id -> ranking).

    A query of the run without an entry in ``qrels`` is scored against no relevant items
    (trec_eval leaves such queries out). Queries in ``qrels`` but not in the run are not
    reported. Options (and ``name@n`` cutoffs) as for :func:`evaluate_query`; they are
    checked once::

        >>> evaluate({"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.1}}, {"q1": {"d3": 1}}, None,
        ...          ["precision@2", "recall@3"])
        {'q1': {'precision@2': 0.0, 'recall@3': 1.0}}
    """
    plan = _plan(k, metrics, ties, denominator, gains, relevance_level, no_relevant)
    empty: Qrels = {}
    return {
        qid: _score_ranking(ranking, qrels.get(qid, empty), plan) for qid, ranking in run.items()
    }


def summarize(per_query: Mapping[str, Mapping[str, float | None]]) -> dict[str, MetricSummary]:
    """The mean of each metric over the queries that define it (``map`` becomes MAP).

    >>> summarize({"q1": {"recall": 1.0}, "q2": {"recall": None}, "q3": {"recall": 0.5}})
    {'recall': MetricSummary(mean=0.75, n=2, undefined=1)}
    """
    totals: dict[str, list[float]] = {}
    missing: dict[str, int] = {}
    for values in per_query.values():
        for name, value in values.items():
            if value is None:
                missing[name] = missing.get(name, 0) + 1
                totals.setdefault(name, [])
            else:
                totals.setdefault(name, []).append(value)
    return {
        name: MetricSummary(
            mean=math.fsum(values) / len(values) if values else None,
            n=len(values),
            undefined=missing.get(name, 0),
        )
        for name, values in totals.items()
    }


def _single(
    metric: str,
    ranking: Ranking,
    qrels: Qrels,
    k: int,
    ties: TieOrder,
    relevance_level: float,
    no_relevant: NoRelevant,
    *,
    denominator: Denominator = "k",
    gains: Gains = "graded",
) -> float | None:
    return evaluate_query(
        ranking,
        qrels,
        k,
        (metric,),
        ties=ties,
        denominator=denominator,
        gains=gains,
        relevance_level=relevance_level,
        no_relevant=no_relevant,
    )[metric]


def precision(
    ranking: Ranking,
    qrels: Qrels,
    k: int,
    *,
    ties: TieOrder = "given",
    denominator: Denominator = "k",
    relevance_level: float = 1,
) -> float:
    """Relevant ids among the first ``k``, over ``k`` (or over what was retrieved)."""
    value = _single(
        "precision", ranking, qrels, k, ties, relevance_level, "zero", denominator=denominator
    )
    assert value is not None
    return value


def recall(
    ranking: Ranking,
    qrels: Qrels,
    k: int,
    *,
    ties: TieOrder = "given",
    relevance_level: float = 1,
    no_relevant: NoRelevant = "none",
) -> float | None:
    """Relevant ids among the first ``k``, over all relevant ids (None when there are none)."""
    return _single("recall", ranking, qrels, k, ties, relevance_level, no_relevant)


def f1(
    ranking: Ranking,
    qrels: Qrels,
    k: int,
    *,
    ties: TieOrder = "given",
    denominator: Denominator = "k",
    relevance_level: float = 1,
    no_relevant: NoRelevant = "none",
) -> float | None:
    """The harmonic mean of :func:`precision` and :func:`recall` at ``k``."""
    return _single(
        "f1", ranking, qrels, k, ties, relevance_level, no_relevant, denominator=denominator
    )


def coverage(
    ranking: Ranking,
    qrels: Qrels,
    k: int,
    *,
    ties: TieOrder = "given",
    relevance_level: float = 1,
) -> float:
    """1.0 when any relevant id is among the first ``k`` (trec_eval's ``success_k``)."""
    value = _single("coverage", ranking, qrels, k, ties, relevance_level, "zero")
    assert value is not None
    return value


def ndcg(
    ranking: Ranking,
    qrels: Qrels,
    k: int,
    *,
    ties: TieOrder = "given",
    gains: Gains = "graded",
    relevance_level: float = 1,
    no_relevant: NoRelevant = "none",
) -> float | None:
    """Normalised discounted cumulative gain at ``k`` (None when no id has a gain)."""
    return _single("ndcg", ranking, qrels, k, ties, relevance_level, no_relevant, gains=gains)


def map_at_k(
    ranking: Ranking,
    qrels: Qrels,
    k: int,
    *,
    ties: TieOrder = "given",
    relevance_level: float = 1,
    no_relevant: NoRelevant = "none",
) -> float | None:
    """Average precision at ``k`` divided by all relevant ids (trec_eval's ``map_cut_k``)."""
    return _single("map", ranking, qrels, k, ties, relevance_level, no_relevant)
