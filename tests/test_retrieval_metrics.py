"""benchkit.metrics.retrieval: definitions, options, properties, and agreement with pytrec_eval."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchkit.errors import ConfigError
from benchkit.metrics import RetrievalEvaluator
from benchkit.metrics.retrieval import (
    METRICS,
    MetricSummary,
    coverage,
    evaluate,
    evaluate_query,
    f1,
    map_at_k,
    ndcg,
    precision,
    ranked_ids,
    recall,
    summarize,
)
from benchkit.model import Response, RetrievedItem, Task
from benchkit.registry import default_registries

pytestmark = pytest.mark.anyio

# --------------------------------------------------------------------------- definitions


def test_each_metric_by_hand() -> None:
    ranking = ["d1", "d2", "d3", "d4"]
    qrels = {"d1": 1, "d3": 2, "d9": 1}
    assert precision(ranking, qrels, 2) == 0.5
    assert precision(ranking, qrels, 4) == 0.5
    assert recall(ranking, qrels, 2) == pytest.approx(1 / 3)
    assert recall(ranking, qrels, 4) == pytest.approx(2 / 3)
    assert f1(ranking, qrels, 4) == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert coverage(ranking, qrels, 1) == 1.0
    assert coverage(["d2"], qrels, 1) == 0.0
    # AP@4: relevant at ranks 1 and 3 -> (1/1 + 2/3) / 3 relevant
    assert map_at_k(ranking, qrels, 4) == pytest.approx((1 + 2 / 3) / 3)
    # graded nDCG@3: gains 1 (rank 1) + 2 (rank 3); ideal 2, 1, 1
    dcg = 1 / math.log2(2) + 2 / math.log2(4)
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg(ranking, qrels, 3) == pytest.approx(dcg / ideal)
    binary_ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg(ranking, qrels, 3, gains="binary") == pytest.approx((1 + 1 / 2) / binary_ideal)


def test_precision_denominator_k_or_retrieved() -> None:
    assert precision(["d1"], {"d1": 1}, 10) == 0.1
    assert precision(["d1"], {"d1": 1}, 10, denominator="retrieved") == 1.0
    assert precision([], {"d1": 1}, 10, denominator="retrieved") == 0.0
    # duplicates collapse in the "retrieved" denominator, not in "k"
    assert precision(["d1", "d1", "d2"], {"d1": 1}, 3, denominator="retrieved") == 0.5
    assert precision(["d1", "d1", "d2"], {"d1": 1}, 3) == pytest.approx(1 / 3)


def test_duplicates_count_once_but_keep_their_rank() -> None:
    qrels = {"a": 1, "b": 1}
    assert evaluate_query(["a", "a", "b"], qrels, 3, ["map", "recall"]) == {
        "map": pytest.approx((1 + 2 / 3) / 2),
        "recall": 1.0,
    }
    assert ndcg(["a", "a", "b"], qrels, 3) == ndcg(["a", "x", "b"], qrels, 3)


def test_no_relevant_items_are_undefined_or_zero() -> None:
    qrels = {"a": 0, "b": -1}
    values = evaluate_query(["a", "b"], qrels, 2)
    assert values == {
        "precision": 0.0,
        "recall": None,
        "f1": None,
        "coverage": 0.0,
        "ndcg": None,
        "map": None,
    }
    zeros = evaluate_query(["a", "b"], qrels, 2, no_relevant="zero")
    assert set(zeros.values()) == {0.0}


def test_relevance_level_applies_to_binary_measures_only() -> None:
    qrels = {"a": 1, "b": 2}
    assert recall(["a", "b"], qrels, 2, relevance_level=2) == 1.0
    assert precision(["a", "b"], qrels, 2, relevance_level=2) == 0.5
    # nDCG keeps grade-1 gains even when grade 1 is not "relevant"
    assert ndcg(["a", "b"], qrels, 2, relevance_level=2) == ndcg(["a", "b"], qrels, 2)
    assert recall(["a"], {"a": 1}, 1, relevance_level=2) is None


def test_tie_orders() -> None:
    scores = {"b": 1.0, "a": 1.0, "c": 2.0}
    assert ranked_ids(scores) == ["c", "b", "a"]  # ties keep the mapping's order
    assert ranked_ids(scores, ties="trec") == ["c", "b", "a"]  # then id descending
    assert ranked_ids({"a": 1.0, "b": 1.0}) == ["a", "b"]
    assert ranked_ids({"a": 1.0, "b": 1.0}, ties="trec") == ["b", "a"]
    assert ranked_ids(("x", "y")) == ["x", "y"]
    assert precision({"a": 1.0, "b": 1.0}, {"a": 1}, 1) == 1.0
    assert precision({"a": 1.0, "b": 1.0}, {"a": 1}, 1, ties="trec") == 0.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: precision(["a"], {}, 0), "k must be an integer >= 1"),
        (lambda: evaluate_query(["a"], {}, 1, ["mrr"]), "unknown retrieval metric 'mrr'"),
        (lambda: evaluate_query(["a"], {}, 1, []), "no metrics asked for"),
        (lambda: ranked_ids(["a"], ties="trec"), "sequence of ids without scores"),
        (lambda: ranked_ids({"a": 1.0}, ties="random"), "ties must be"),  # type: ignore[arg-type]
        (lambda: precision(["a"], {}, 1, denominator="all"), "denominator"),  # type: ignore[arg-type]
        (lambda: recall(["a"], {}, 1, relevance_level=0), "relevance_level"),
        (lambda: recall(["a"], {}, 1, no_relevant="nan"), "no_relevant"),  # type: ignore[arg-type]
        (lambda: ndcg(["a"], {}, 1, gains="exp"), "gains"),  # type: ignore[arg-type]
        (lambda: evaluate_query(["a"], {}, None, ["ndcg"]), "has no cutoff and k was not"),
        (lambda: evaluate_query(["a"], {}, 5, ["ndcg@0"]), "cutoff after @ must be an integer"),
        (lambda: evaluate_query(["a"], {}, 5, ["ndcg@x"]), "cutoff after @ must be an integer"),
        (lambda: evaluate_query(["a"], {}, 5, ["mrr@5"]), "unknown retrieval metric 'mrr'"),
    ],
)
def test_bad_arguments_are_config_errors(call: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        call()


def test_batch_api_and_summary() -> None:
    run: dict[str, list[str] | dict[str, float]] = {
        "q1": {"a": 3.0, "b": 2.0},
        "q2": ["x"],
        "q3": [],
    }
    qrels = {"q1": {"b": 1}, "q2": {"x": 1, "y": 1}}
    per_query = evaluate(run, qrels, 2, ["recall", "map"])
    assert per_query == {
        "q1": {"recall": 1.0, "map": 0.5},
        "q2": {"recall": 0.5, "map": 0.5},
        "q3": {"recall": None, "map": None},  # not in qrels: nothing relevant
    }
    assert summarize(per_query) == {
        "recall": MetricSummary(mean=0.75, n=2, undefined=1),
        "map": MetricSummary(mean=0.5, n=2, undefined=1),
    }
    assert summarize({"q": {"ndcg": None}}) == {"ndcg": MetricSummary(None, 0, 1)}


# --------------------------------------------------------------------------- properties

ids = st.sampled_from([f"d{i}" for i in range(8)])
rankings = st.lists(ids, max_size=12)
qrels_st = st.dictionaries(ids, st.integers(-1, 3), max_size=8)
cutoffs = st.integers(1, 12)


@given(rankings, qrels_st, cutoffs)
@settings(max_examples=200)
def test_every_value_is_in_the_unit_interval(
    ranking: list[str], qrels: dict[str, int], k: int
) -> None:
    for value in evaluate_query(ranking, qrels, k).values():
        assert value is None or 0.0 <= value <= 1.0 + 1e-12


@given(rankings, qrels_st, cutoffs)
def test_recall_and_coverage_grow_with_k(ranking: list[str], qrels: dict[str, int], k: int) -> None:
    small = evaluate_query(ranking, qrels, k, ["recall", "coverage"])
    large = evaluate_query(ranking, qrels, k + 1, ["recall", "coverage"])
    assert (large["coverage"] or 0) >= (small["coverage"] or 0)
    if small["recall"] is not None:
        assert large["recall"] is not None and large["recall"] >= small["recall"]


@given(rankings, qrels_st, cutoffs, st.data())
def test_a_duplicate_is_a_non_relevant_result_at_its_rank(
    ranking: list[str], qrels: dict[str, int], k: int, data: st.DataObject
) -> None:
    if not ranking:
        return
    position = data.draw(st.integers(0, len(ranking)))
    copied = data.draw(st.sampled_from(ranking[: max(position, 1)]))
    with_duplicate = [*ranking[:position], copied, *ranking[position:]]
    with_filler = [*ranking[:position], "unjudged", *ranking[position:]]
    if copied in ranking[:position]:
        metrics = ["recall", "coverage", "ndcg", "map"]  # precision's "retrieved" differs
        assert evaluate_query(with_duplicate, qrels, k, metrics) == evaluate_query(
            with_filler, qrels, k, metrics
        )


@given(qrels_st, cutoffs)
def test_the_ideal_ranking_scores_one(qrels: dict[str, int], k: int) -> None:
    ideal = sorted((d for d, g in qrels.items() if g > 0), key=lambda d: -qrels[d])
    values = evaluate_query(ideal, qrels, k, ["ndcg", "map", "recall"])
    relevant = sum(1 for g in qrels.values() if g >= 1)
    if values["ndcg"] is not None:
        assert values["ndcg"] == pytest.approx(1.0)
    if relevant and relevant <= k:
        assert values["map"] == pytest.approx(1.0)
        assert values["recall"] == 1.0


@given(rankings, qrels_st, cutoffs)
def test_retrieved_precision_is_never_below_precision_at_k(
    ranking: list[str], qrels: dict[str, int], k: int
) -> None:
    assert precision(ranking, qrels, k, denominator="retrieved") >= precision(ranking, qrels, k)


# --------------------------------------------------------------------------- pytrec_eval


def _generated(
    seed: int, queries: int
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """Runs with many tied scores, some empty; qrels with graded, zero and negative grades,
    some queries with nothing relevant and some relevant documents never retrieved."""
    rng = random.Random(seed)
    pool = [f"doc{i:02d}" for i in range(40)]
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(queries):
        qid = f"q{q}"
        retrieved = rng.sample(pool, rng.choice([0, 1, 3, 8, 15, 25]))
        run[qid] = {doc: float(rng.choice([0.5, 1.0, 1.0, 2.0, 3.25, 7.0])) for doc in retrieved}
        judged = rng.sample(pool, rng.randint(1, 12))
        if q % 7 == 0:
            qrels[qid] = dict.fromkeys(judged, 0)  # nothing relevant
        else:
            qrels[qid] = {doc: rng.choice([-1, 0, 1, 1, 2, 3]) for doc in judged}
    return run, qrels


_TREC = {
    "precision": "P",
    "recall": "recall",
    "ndcg": "ndcg_cut",
    "map": "map_cut",
    "coverage": "success",
}


@pytest.mark.parametrize("relevance_level", [1, 2])
def test_values_equal_pytrec_eval_per_query(relevance_level: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run, qrels = _generated(seed=relevance_level, queries=300)
    measures = {f"{name}_{k}" for name in _TREC.values() for k in (1, 5, 10)}
    expected = pytrec_eval.RelevanceEvaluator(
        qrels, measures, relevance_level=relevance_level
    ).evaluate(run)
    compared = 0
    for k in (1, 5, 10):
        ours = evaluate(
            run,
            qrels,
            k,
            list(_TREC),
            ties="trec",
            relevance_level=relevance_level,
            no_relevant="zero",
        )
        for qid, values in ours.items():
            for name, trec_name in _TREC.items():
                assert values[name] == pytest.approx(
                    expected[qid][f"{trec_name}_{k}"], rel=1e-12, abs=1e-15
                ), (qid, name, k)
                compared += 1
    assert compared == 300 * 3 * len(_TREC)


def test_mixed_cutoffs_in_one_evaluation_equal_pytrec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run, qrels = _generated(seed=11, queries=300)
    asked = {
        "precision@10": "P_10",
        "recall@20": "recall_20",
        "ndcg@10": "ndcg_cut_10",
        "map@20": "map_cut_20",
        "coverage@1": "success_1",
        "ndcg@5": "ndcg_cut_5",
    }
    expected = pytrec_eval.RelevanceEvaluator(qrels, set(asked.values())).evaluate(run)
    ours = evaluate(run, qrels, None, list(asked), ties="trec", no_relevant="zero")
    compared = 0
    for qid, values in ours.items():
        assert list(values) == list(asked)
        for name, trec_name in asked.items():
            assert values[name] == pytest.approx(expected[qid][trec_name], rel=1e-12, abs=1e-15), (
                qid,
                name,
            )
            compared += 1
    assert compared == 300 * len(asked)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(rankings, st.dictionaries(ids, st.sampled_from([0.5, 1.0, 2.0]), max_size=12)),
    qrels_st,
    st.lists(st.tuples(st.sampled_from(METRICS), cutoffs), min_size=1),
    st.sampled_from(["k", "retrieved"]),
    st.sampled_from(["graded", "binary"]),
    st.sampled_from(["given", "trec"]),
)
def test_each_cutoff_of_a_mixed_evaluation_equals_its_own_evaluation(
    ranking: Any,
    qrels: dict[str, int],
    asked: list[tuple[str, int]],
    den: str,
    gains: str,
    ties: str,
) -> None:
    # A scored ranking is read by counting each relevant id's rank up to the deepest cutoff
    # (or, with many ties, by sorting its top ids): every cutoff must agree with its own.
    if ties == "trec" and not isinstance(ranking, dict):
        ties = "given"
    options: dict[str, Any] = {"denominator": den, "gains": gains, "ties": ties}
    names = [f"{name}@{k}" for name, k in asked]
    mixed = evaluate_query(ranking, qrels, None, names, **options)
    for name, k in asked:
        alone = evaluate_query(ranking, qrels, k, [name], **options)
        assert mixed[f"{name}@{k}"] == alone[name]


def test_rankings_full_of_ties_are_sorted_and_still_equal_pytrec_eval() -> None:
    # Counting ranks costs a step per tied id looked at; when every score ties and many ids
    # are relevant that would grow as ranking x relevant ids, so such a ranking is sorted.
    from benchkit.metrics.retrieval import _ranked_relevant

    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = random.Random(5)
    run = {
        f"q{q}": {f"d{i:02d}": rng.choice([0.0, 0.0, 0.0, 1.0]) for i in range(40)}
        for q in range(30)
    }
    qrels = {q: {f"d{i:02d}": rng.randint(0, 3) for i in range(0, 40, 2)} for q in run}
    assert all(_ranked_relevant(run[q], qrels[q], 30, True) is None for q in run)
    asked = {"precision@5": "P_5", "recall@30": "recall_30", "ndcg@10": "ndcg_cut_10"}
    asked |= {"map@30": "map_cut_30"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, set(asked.values())).evaluate(run)
    ours = evaluate(run, qrels, None, list(asked), ties="trec", no_relevant="zero")
    for qid, values in ours.items():
        for name, trec_name in asked.items():
            assert values[name] == pytest.approx(expected[qid][trec_name], rel=1e-12), (qid, name)
    for ties in ("given", "trec"):
        for qid, ranking in run.items():
            whole = ranked_ids(ranking, ties=ties)
            assert evaluate_query(ranking, qrels[qid], None, list(asked), ties=ties) == (
                evaluate_query(whole, qrels[qid], None, list(asked))
            )


@pytest.mark.parametrize("ties", ["given", "trec"])
def test_a_nan_score_is_a_config_error_naming_the_id(ties: str) -> None:
    ranking = {"a": 1.0, "b": math.nan, "c": 1.0, "d": math.inf, "e": -math.inf}
    for qrels in ({"a": 1, "c": 2}, {"x": 1}):  # whether or not any retrieved id is relevant
        with pytest.raises(ConfigError, match="'b' is NaN"):
            evaluate_query(ranking, qrels, 3, ties=ties)  # type: ignore[arg-type]
    # infinities rank like any score (their sum is NaN, but no score is)
    del ranking["b"]
    assert evaluate_query(ranking, {"a": 1, "c": 2}, 3, ["recall"], ties=ties) == {  # type: ignore[arg-type]
        "recall": 1.0
    }


def test_undefined_values_are_exactly_where_pytrec_eval_has_no_relevant() -> None:
    run, qrels = _generated(seed=7, queries=200)
    ours = evaluate(run, qrels, 5, ["recall", "map", "ndcg"], ties="trec")
    for qid, values in ours.items():
        relevant = sum(1 for g in qrels[qid].values() if g >= 1)
        assert (values["recall"] is None) == (relevant == 0)
        assert (values["map"] is None) == (relevant == 0)
        assert (values["ndcg"] is None) == (relevant == 0)


def test_given_order_matches_trec_order_without_ties() -> None:
    rng = random.Random(3)
    run = {f"q{i}": {f"d{j}": rng.random() for j in range(20)} for i in range(50)}
    qrels = {q: {f"d{j}": rng.randint(0, 2) for j in range(0, 40, 3)} for q in run}
    assert evaluate(run, qrels, 10) == evaluate(run, qrels, 10, ties="trec")
    as_lists = {q: ranked_ids(r) for q, r in run.items()}
    assert evaluate(as_lists, qrels, 10) == evaluate(run, qrels, 10)


# --------------------------------------------------------------------------- evaluator


def _response(*pairs: tuple[str, float | None]) -> Response:
    return Response(retrieved=tuple(RetrievedItem(i, f"text {i}", s) for i, s in pairs))


async def test_retrieval_evaluator_scores_the_primary_metric() -> None:
    evaluator = default_registries().evaluators.build(
        "retrieval", {"metrics": ["recall", "ndcg"], "k": 2, "threshold": 0.9}
    )
    assert isinstance(evaluator, RetrievalEvaluator)
    task = Task("t", relevant_ids=["b", "c"])
    score = await evaluator.evaluate(task, _response(("a", 2.0), ("b", 1.0), ("c", 0.5)))
    assert score.name == "retrieval"
    assert score.value == 0.5 and not score.passed
    assert score.details["ndcg"] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))


async def test_retrieval_evaluator_uses_graded_relevance_and_trec_ties() -> None:
    evaluator = RetrievalEvaluator(metrics=["ndcg"], k=1, ties="trec")
    task = Task("t", relevant_ids=["a", "b"], metadata={"relevance": {"a": 1, "b": 3}})
    score = await evaluator.evaluate(task, _response(("a", 1.0), ("b", 1.0)))
    assert score.value == 1.0  # b first on the tie, and it has the best grade
    no_score = await evaluator.evaluate(task, _response(("a", None)))
    assert no_score.value is None and no_score.error is not None


async def test_retrieval_evaluator_cannot_judge_without_relevant_ids() -> None:
    score = await RetrievalEvaluator().evaluate(Task("t"), _response(("a", 1.0)))
    assert score.value is None and "no relevant_ids" in (score.error or "")


def test_retrieval_evaluator_checks_its_options_at_once() -> None:
    with pytest.raises(ConfigError, match="primary metric 'map'"):
        RetrievalEvaluator(metrics=["recall"], primary="map")
    with pytest.raises(ConfigError, match="unknown retrieval metric"):
        RetrievalEvaluator(metrics=["hits"])
    assert RetrievalEvaluator().metrics == METRICS


async def test_evaluator_runs_in_a_benchmark() -> None:
    import benchkit
    from benchkit import Benchmark, Condition, EvaluatorSpec, Suite

    def system(_: object) -> Response:
        return _response(("x", 1.0), ("gold", 0.5))

    suite = Suite(
        Benchmark(
            "ir",
            tasks=[Task("t1", relevant_ids=["gold"])],
            evaluators=[EvaluatorSpec("retrieval", {"metrics": ["map"], "k": 5})],
        ),
        conditions=[Condition("s", benchkit.CallableProvider(system))],
    )
    result = await benchkit.arun(suite)
    assert result.cells[0].score == 0.5


@given(
    st.dictionaries(ids, st.sampled_from([0.5, 1.0, 2.0]), max_size=8),
    qrels_st,
    cutoffs,
    st.sampled_from(["given", "trec"]),
)
def test_a_scored_ranking_equals_its_ranked_ids(
    scores: dict[str, float], qrels: dict[str, int], k: int, ties: str
) -> None:
    # evaluate_query orders only the ids that can reach the top k; ranked_ids orders all
    whole = ranked_ids(scores, ties=ties)  # type: ignore[arg-type]
    assert evaluate_query(scores, qrels, k, ties=ties) == evaluate_query(  # type: ignore[arg-type]
        whole, qrels, k, ties="given"
    )
