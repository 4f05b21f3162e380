"""The ``multiple_choice`` evaluator (#37): lm-evaluation-harness's metrics against values
computed by hand, ties, targets given as index / letter / text, and every way a cell cannot
be scored."""

from __future__ import annotations

import math

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchkit import ConfigError, Response, Task
from benchkit.evaluators._choice import MultipleChoiceEvaluator, choose, target_index
from benchkit.llm import ChoiceQuestion
from benchkit.registry import default_registries


def _score(
    question: ChoiceQuestion, expected: object, output: object, metric: str = "acc"
) -> tuple[bool, dict[str, object], str | None]:
    task = Task("q", input=question.to_input(), expected=expected)
    score = MultipleChoiceEvaluator(metric=metric).judge(task, Response(output))
    return score.passed, dict(score.details), score.error


def test_the_metrics_match_values_computed_by_hand() -> None:
    # choice lengths in characters 3, 12, 6; in bytes 3, 12, 12 ("é" is 2 bytes)
    question = ChoiceQuestion("Q:", ("cat", "a long horse", "éééééé"), unconditional=True)
    output = {
        "logprobs": [-6.0, -12.5, -9.0],
        "tokens": [1, 3, 2],
        "unconditional": [-2.0, -12.0, -5.0],
    }
    # acc: max(-6, -12.5, -9) -> 0
    # acc_norm: -6/3 = -2, -12.5/12 = -1.0417, -9/6 = -1.5 -> 1
    # acc_bytes: -6/3 = -2, -12.5/12 = -1.0417, -9/12 = -0.75 -> 2
    # acc_mutual_info: -6+2 = -4, -12.5+12 = -0.5, -9+5 = -4 -> 1
    passed, details, error = _score(question, 1, output, metric="acc_norm")
    assert error is None and passed
    assert details["predicted"] == {"acc": 0, "acc_norm": 1, "acc_bytes": 2, "acc_mutual_info": 1}
    assert details["metrics"] == {
        "acc": 0.0,
        "acc_norm": 1.0,
        "acc_bytes": 0.0,
        "acc_mutual_info": 1.0,
    }
    assert details["logprobs"] == output["logprobs"] and details["tokens"] == [1, 3, 2]
    assert details["target"] == 1


def test_acc_norm_counts_the_choices_own_characters_not_the_delimiter() -> None:
    # lm-evaluation-harness divides by len(choice): " ab" is scored, 2 characters count
    question = ChoiceQuestion("Q:", ("ab", "abcd"))
    passed, details, _ = _score(question, 1, {"logprobs": [-3.0, -5.0]}, metric="acc_norm")
    # -3/2 = -1.5 < -5/4 = -1.25: the second wins (by 3 and 5 characters it would not)
    assert passed and details["predicted"] == {"acc": 0, "acc_norm": 1, "acc_bytes": 1}


def test_ties_go_to_the_first_choice() -> None:
    assert choose([-1.0, -1.0]) == 0
    assert choose([-2.0, -1.0, -1.0]) == 1
    question = ChoiceQuestion("Q:", ("ab", "cd"))
    passed, details, _ = _score(question, 1, {"logprobs": [-4.0, -4.0]})
    predicted = details["predicted"]
    assert not passed and isinstance(predicted, dict) and predicted["acc"] == 0


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.floats(-100, 0), min_size=1, max_size=8))
def test_choose_picks_a_maximum_and_the_first_of_them(values: list[float]) -> None:
    best = choose(values)
    assert values[best] == max(values)
    assert all(v < values[best] for v in values[:best])


def test_the_answer_may_be_an_index_a_letter_or_the_choices_text() -> None:
    choices = ("yes", "no", "B")
    assert target_index(1, choices) == 1
    assert target_index("no", choices) == 1
    assert target_index("B", choices) == 2  # a choice's text wins over a letter
    assert target_index("c", ("x", "y", "z")) == 2
    for bad in (3, -1, "maybe", True, None, 1.0):
        with pytest.raises(ValueError, match="answer"):
            target_index(bad, choices)


@pytest.mark.parametrize(
    ("task_input", "expected", "output", "says"),
    [
        ("plain text", 0, {"logprobs": [-1.0]}, "not a multiple-choice question"),
        (ChoiceQuestion("Q", ("a", "b")).to_input(), 5, {"logprobs": [-1.0, -2.0]}, "answer index"),
        (ChoiceQuestion("Q", ("a", "b")).to_input(), 0, "a reply", "no 2 finite log-probabilities"),
        (ChoiceQuestion("Q", ("a", "b")).to_input(), 0, {"logprobs": [-1.0]}, "no 2 finite"),
        (ChoiceQuestion("Q", ("a", "b")).to_input(), 0, {"logprobs": [-1.0, math.nan]}, "finite"),
    ],
)
def test_a_cell_that_cannot_be_scored_is_an_error_not_a_zero(
    task_input: object, expected: object, output: object, says: str
) -> None:
    score = MultipleChoiceEvaluator().judge(
        Task("q", input=task_input, expected=expected), Response(output)
    )
    assert score.value is None and not score.passed
    assert says in (score.error or "")


def test_mutual_info_needs_the_unconditional_log_probabilities() -> None:
    question = ChoiceQuestion("Q:", ("a", "b"))
    passed, details, error = _score(
        question, 0, {"logprobs": [-1.0, -2.0]}, metric="acc_mutual_info"
    )
    assert not passed and "unconditional" in (error or "")
    assert details["metrics"] == {"acc": 1.0, "acc_norm": 1.0, "acc_bytes": 1.0}


def test_an_empty_choice_has_no_normalised_metric() -> None:
    question = ChoiceQuestion("Q:", ("", "b"))
    passed, details, error = _score(question, 1, {"logprobs": [-1.0, -2.0]}, metric="acc_norm")
    assert not passed and "empty" in (error or "") and details["metrics"] == {"acc": 0.0}


def test_the_evaluator_is_registered_and_checks_its_metric() -> None:
    registries = default_registries()
    built = registries.evaluators.build("multiple_choice", {"metric": "acc_bytes"})
    assert isinstance(built, MultipleChoiceEvaluator) and built.metric == "acc_bytes"
    with pytest.raises(ConfigError, match="no metric 'f1'"):
        registries.evaluators.build("multiple_choice", {"metric": "f1"})


def test_the_reason_names_both_choices() -> None:
    question = ChoiceQuestion("Q:", ("left", "right"))
    task = Task("q", input=question.to_input(), expected="A")
    score = anyio.run(
        MultipleChoiceEvaluator().evaluate, task, Response({"logprobs": [-3.0, -1.0]})
    )
    assert score.reason == "acc chose B ('right'), the answer is A ('left')"
