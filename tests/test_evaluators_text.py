"""Tests for the text-overlap evaluators (#44): exact_match_normalized, token_f1 and the
ones of the extra benchkit[metrics] (edit_similarity, rouge, bleu, chrf); and
docs/metrics.md (its table of every evaluator, its example).

The expected values follow SQuAD's official evaluation script (``evaluate-v2.0.py``,
https://rajpurkar.github.io/SQuAD-explorer/, functions ``normalize_answer``,
``compute_exact`` and ``compute_f1``) on the inputs written here; the Hugging Face
``evaluate`` metric card of ``squad`` publishes the first case (prediction "1976", answer
"1976": exact_match 100, f1 100).
"""

from __future__ import annotations

import doctest
import json
import os
import re
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchkit.errors import ConfigError
from benchkit.evaluators import _text
from benchkit.evaluators._text import (
    ExactMatchNormalizedEvaluator,
    TokenF1Evaluator,
    normalize_answer,
    token_f1,
)
from benchkit.model import Response, Task
from benchkit.registry import default_registries
from benchkit.results import Score

from ._support import REPO


def _build(name: str, options: dict[str, Any]) -> Any:
    return default_registries().evaluators.build(name, options)


def judge(evaluator: Any, output: Any, expected: Any = None) -> Score:
    score: Score = anyio.run(evaluator.evaluate, Task("t", expected=expected), Response(output))
    return score


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("1976", "1976"),
        ("The Denver Broncos!", "denver broncos"),
        ("  an   apple, a  pear ", "apple pear"),
        ("Theatre of the absurd", "theatre of absurd"),  # articles only as whole words
        ("Saint-Étienne", "saintétienne"),  # ASCII punctuation only; case folded by lower()
        ("A", ""),
    ],
)
def test_normalize_answer_follows_the_squad_script(text: str, normalised: str) -> None:
    assert normalize_answer(text) == normalised


@pytest.mark.parametrize(
    ("prediction", "reference", "f1"),
    [
        ("1976", "1976", 1.0),  # the HF evaluate squad card's example
        ("the Denver Broncos", "Denver Broncos won", 0.8),  # P=2/2, R=2/3
        ("Broncos Denver", "Denver Broncos", 1.0),  # order does not matter
        ("cat cat", "cat", 2 / 3),  # multiset: P=1/2, R=1
        ("dog", "cat", 0.0),
        ("", "", 1.0),  # v2.0's rule for empty answers
        ("the", "cat", 0.0),
    ],
)
def test_token_f1_follows_the_squad_script(prediction: str, reference: str, f1: float) -> None:
    assert token_f1(prediction, reference) == pytest.approx(f1)


def test_both_are_registered_and_take_the_best_reference() -> None:
    registry = default_registries().evaluators
    em = registry.build("exact_match_normalized", {})
    f1 = registry.build("token_f1", {"threshold": 0.9})
    assert isinstance(em, ExactMatchNormalizedEvaluator)
    assert isinstance(f1, TokenF1Evaluator)
    references = ["Denver Broncos won", "the Broncos", "Denver"]
    assert judge(em, "Broncos.", references).value == 1.0
    score = judge(f1, "Denver Broncos", references)
    assert score.value == pytest.approx(0.8)
    assert score.passed is False  # 0.8 < threshold 0.9
    assert score.details is not None and score.details["reference"] == "Denver Broncos won"
    assert judge(TokenF1Evaluator(), "Denver Broncos", references).passed  # default 0.5


def test_the_option_wins_over_task_expected_and_json_outputs_are_text() -> None:
    evaluator = ExactMatchNormalizedEvaluator(references="Paris")
    assert judge(evaluator, "paris", expected="London").passed
    assert judge(ExactMatchNormalizedEvaluator(), 42, expected="42").passed


@pytest.mark.parametrize("expected", [None, [], 3])
def test_nothing_to_compare_is_an_error_score_not_a_zero(expected: Any) -> None:
    score = judge(TokenF1Evaluator(), "x", expected)
    assert score.value is None and score.error


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"threshold": 2}, "threshold"),
        ({"threshold": "high"}, "threshold"),
        ({"references": [1]}, "references"),
        ({"refs": ["x"]}, "refs"),
    ],
)
def test_bad_options_are_config_errors_naming_the_option(
    options: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        TokenF1Evaluator(**options)


def test_exact_match_takes_no_threshold() -> None:
    with pytest.raises(ConfigError, match="threshold"):
        ExactMatchNormalizedEvaluator(threshold=0.5)


_TEXT = st.text(alphabet=string.ascii_letters + string.punctuation + " \t\n", max_size=40)


@settings(max_examples=60, deadline=None)
@given(_TEXT, _TEXT)
def test_token_f1_is_symmetric_in_range_and_one_on_identity(a: str, b: str) -> None:
    value = token_f1(a, b)
    assert 0.0 <= value <= 1.0
    assert value == pytest.approx(token_f1(b, a))
    assert token_f1(a, a) == 1.0
    assert normalize_answer(normalize_answer(a)) == normalize_answer(a)
    exact = judge(ExactMatchNormalizedEvaluator(references=b), a).value
    assert exact == (1.0 if normalize_answer(a) == normalize_answer(b) else 0.0)
    if exact == 1.0:
        assert value == 1.0


def test_doctests() -> None:
    result = doctest.testmod(_text)
    assert result.attempted >= 4 and result.failed == 0


# --------------------------------------------------------------------------- edit_similarity
# Values: rapidfuzz's documentation (Levenshtein.distance("lewenstein", "levenshtein") == 2,
# normalized as 1 - distance / max length) and the textbook kitten/sitting pair (distance 3).


@pytest.mark.parametrize(
    ("prediction", "reference", "similarity"),
    [
        ("lewenstein", "levenshtein", 1 - 2 / 11),
        ("kitten", "sitting", 1 - 3 / 7),
        ("", "", 1.0),
        ("abc", "", 0.0),
        ("same", "same", 1.0),
    ],
)
def test_edit_similarity_is_normalised_levenshtein(
    prediction: str, reference: str, similarity: float
) -> None:
    evaluator = _build("edit_similarity", {"references": reference})
    assert judge(evaluator, prediction).value == pytest.approx(similarity)


def test_edit_similarity_threshold_and_normalize() -> None:
    assert judge(_build("edit_similarity", {"references": "kitten"}), "sitting").passed is False
    lenient = _build("edit_similarity", {"references": "kitten", "threshold": 0.5})
    assert judge(lenient, "sitting").passed
    normalized = _build("edit_similarity", {"references": "The Kitten!", "normalize": True})
    assert judge(normalized, "kitten").value == 1.0
    with pytest.raises(ConfigError, match="normalize"):
        _build("edit_similarity", {"normalize": "yes"})


@settings(max_examples=30, deadline=None)
@given(_TEXT, _TEXT)
def test_edit_similarity_is_symmetric_in_range_and_one_on_identity(a: str, b: str) -> None:
    evaluator = _build("edit_similarity", {"references": b})
    value = judge(evaluator, a).value
    assert value is not None and 0.0 <= value <= 1.0
    assert value == pytest.approx(judge(_build("edit_similarity", {"references": a}), b).value)
    assert judge(_build("edit_similarity", {"references": a}), a).value == 1.0


def test_import_benchkit_imports_no_metrics_library() -> None:
    code = (
        "import json, sys, benchkit; from benchkit.registry import default_registries; "
        "r = default_registries().evaluators; r.build('token_f1', {}); r.names(); "
        "print(json.dumps(sorted(sys.modules)))"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    loaded = set(json.loads(out.stdout))
    assert loaded.isdisjoint({"rapidfuzz", "rouge_score", "sacrebleu", "nltk"})


@pytest.mark.parametrize(
    ("evaluator", "modules"),
    [
        ("edit_similarity", ("rapidfuzz", "rapidfuzz.distance")),
        ("rouge", ("rouge_score",)),
        ("bleu", ("sacrebleu", "sacrebleu.metrics", "sacrebleu.metrics.bleu")),
        ("chrf", ("sacrebleu", "sacrebleu.metrics", "sacrebleu.metrics.chrf")),
    ],
)
def test_a_missing_extra_is_one_config_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, evaluator: str, modules: tuple[str, ...]
) -> None:
    # sys.modules[name] = None makes `import name` raise ImportError, as when not installed.
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ConfigError) as caught:
        _build(evaluator, {"references": "x"})
    assert modules[0].replace("_", "-") in str(caught.value)
    assert "pip install 'benchkit[metrics]'" in str(caught.value.fix)


# --------------------------------------------------------------------------- rouge, bleu, chrf
# rouge: the example of rouge-score's README (target "The quick brown fox jumps over the lazy
# dog", prediction "The quick brown dog jumps on the log."), counted by hand from the ROUGE
# definitions: 6 shared unigrams of 8 and 9 (F 12/17), 2 shared bigrams of 7 and 8 (F 8/30),
# a longest common subsequence of 5 words, "the quick brown jumps the" (F 10/17).
_FOX = "The quick brown fox jumps over the lazy dog"
_DOG = "The quick brown dog jumps on the log."


@pytest.mark.parametrize(
    ("variant", "value"), [("rouge1", 12 / 17), ("rouge2", 8 / 30), ("rougeL", 10 / 17)]
)
def test_rouge_on_the_rouge_score_readme_example(variant: str, value: float) -> None:
    evaluator = _build("rouge", {"references": _FOX, "variant": variant, "use_stemmer": True})
    score = judge(evaluator, _DOG)
    assert score.value == pytest.approx(value)
    assert score.details is not None
    assert score.details["rouge"]["rouge1"] == pytest.approx(12 / 17)
    recall = _build("rouge", {"references": _FOX, "variant": "rouge1", "measure": "recall"})
    assert judge(recall, _DOG).value == pytest.approx(6 / 9)


# sacrebleu's README: this system output against these two reference sets scores corpus
# BLEU 48.53 and chrF2 59.73 with the default settings, which the evaluators use.
_SYS = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
_REFS = [
    ["The dog bit the man.", "It was not unexpected.", "The man bit him first."],
    ["The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."],
]


def test_bleu_and_chrf_use_sacrebleus_published_defaults() -> None:
    bleu = _build("bleu", {})
    chrf = _build("chrf", {})
    assert round(bleu.metric.corpus_score(_SYS, _REFS).score, 2) == 48.53
    assert round(chrf.metric.corpus_score(_SYS, _REFS).score, 2) == 59.73
    # Sentence level: an output equal to one reference is 1; the scale is [0, 1].
    references = [refs[0] for refs in _REFS]
    assert judge(bleu, _SYS[0], references).value == pytest.approx(1.0)
    assert judge(chrf, _SYS[0], references).value == pytest.approx(1.0)
    partial = judge(chrf, _SYS[2], [refs[2] for refs in _REFS])
    expected = chrf.metric.sentence_score(_SYS[2], [refs[2] for refs in _REFS]).score / 100
    assert partial.value == pytest.approx(expected) and 0 < expected < 1
    assert partial.passed == (expected >= 0.5)
    assert partial.reason == f"chrf {expected:.3f} against 2 reference(s)"


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("rouge", {"variant": "rouge3"}),
        ("rouge", {"measure": "f1"}),
        ("bleu", {"tokenize": "moses"}),
        ("chrf", {"char_order": 0}),
        ("chrf", {"threshold": -0.1}),
    ],
)
def test_bad_metric_options_are_config_errors(name: str, options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=next(iter(options))):
        _build(name, options)


@settings(max_examples=20, deadline=None)
@given(_TEXT, _TEXT)
def test_overlap_metrics_stay_in_range_and_identity_gives_one(a: str, b: str) -> None:
    for name in ("rouge", "bleu", "chrf"):
        value = judge(_build(name, {"references": b}), a).value
        assert value is not None and 0.0 <= value <= 1.0, name
    if any(ch.isalnum() for ch in a):
        rouge1 = _build("rouge", {"references": a, "variant": "rouge1"})
        assert judge(rouge1, a).value == pytest.approx(1.0)
        assert judge(_build("chrf", {"references": a}), a).value == pytest.approx(1.0)


# --------------------------------------------------------------------------- docs/metrics.md
_METRICS_DOC = REPO / "docs" / "metrics.md"


def test_the_docs_table_names_every_registered_evaluator() -> None:
    text = _METRICS_DOC.read_text(encoding="utf-8")
    table = text.split("## Every evaluator", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([a-z0-9_]+)` \|", table, flags=re.MULTILINE)
    assert len(listed) == len(set(listed))
    assert set(listed) == set(default_registries().evaluators.names())


def test_the_docs_example_runs(tmp_path: Path) -> None:
    import benchkit

    text = _METRICS_DOC.read_text(encoding="utf-8")
    example = re.search(r"```yaml\n(benchkit: 1\nid: capitals\n.*?)```", text, re.DOTALL)
    assert example is not None
    path = tmp_path / "capitals.yaml"
    path.write_text(example.group(1), encoding="utf-8")
    result = benchkit.run(path, store=False)
    scores = {(cell.task_id, score.name): score for cell in result.cells for score in cell.scores}
    for name in ("exact_match_normalized", "token_f1", "edit_similarity", "rouge"):
        assert scores["france", name].value == 1.0, name
    assert scores["peru", "exact_match_normalized"].value == 0.0
    assert scores["peru", "token_f1"].value == pytest.approx(0.5)
    assert scores["peru", "token_f1"].passed
