"""The ``multiple_choice`` evaluator: scores a model's log-likelihood of every choice the
way published benchmarks do.

The task's input is a :class:`~benchkit.llm.ChoiceQuestion`, the provider's output the
log-probability (and token count) of each choice after the question (the ``chat`` and
``local`` providers answer such an input that way), and ``task.expected`` the right
choice: its index, its letter (``"B"``) or its text. The metrics are
lm-evaluation-harness's:

* ``acc`` — the choice with the highest summed log-probability;
* ``acc_norm`` — the highest log-probability divided by the choice's length in characters
  (the choice's own text: the space that joins it to the question is not counted);
* ``acc_bytes`` — the same, divided by its length in UTF-8 bytes;
* ``acc_mutual_info`` — the highest log P(choice | question) − log P(choice), when the
  question asked for the choices without the context too (``unconditional``).

Ties go to the first choice. Each cell's score keeps every metric and every choice's
log-probability in its details.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchkit.errors import ConfigError
from benchkit.llm._loglik import ChoiceQuestion
from benchkit.results import Score

if TYPE_CHECKING:
    from benchkit.model import Response, Task

__all__ = ["METRICS", "MultipleChoiceEvaluator", "choose", "target_index"]

METRICS = ("acc", "acc_norm", "acc_bytes", "acc_mutual_info")
"""The metrics ``multiple_choice`` computes (``acc_mutual_info`` only when the question
asked for unconditional log-probabilities)."""


def choose(values: Sequence[float]) -> int:
    """The index of the highest value; the first of equal ones.

    >>> choose([-3.0, -1.0, -1.0])
    1
    """
    best = 0
    for i, value in enumerate(values):
        if value > values[best]:
            best = i
    return best


def target_index(expected: Any, choices: Sequence[str]) -> int:
    """The index of the right choice from ``expected``: an index, the choice's text, or its
    letter (``A`` is the first). ValueError when it names none of them.

        >>> target_index("B", ["yes", "no"]), target_index("no", ["yes", "no"]), target_index(0, ["a"])
        (1, 1, 0)
    """
    if isinstance(expected, bool):
        raise ValueError(f"the answer {expected!r} is not an index, a letter or a choice")
    if isinstance(expected, int):
        if 0 <= expected < len(choices):
            return expected
        raise ValueError(f"the answer index {expected} is not one of 0..{len(choices) - 1}")
    if isinstance(expected, str):
        if expected in choices:
            return list(choices).index(expected)
        letters = string.ascii_uppercase[: len(choices)]
        if len(expected) == 1 and expected.upper() in letters:
            return letters.index(expected.upper())
        raise ValueError(
            f"the answer {expected!r} is neither one of the {len(choices)} choices nor a "
            f"letter {letters[0]}-{letters[-1]}"
        )
    raise ValueError(f"the answer {expected!r} is not an index, a letter or a choice")


def _numbers(output: Mapping[str, Any], key: str, n: int) -> list[float] | None:
    values = output.get(key)
    if not isinstance(values, Sequence) or isinstance(values, str) or len(values) != n:
        return None
    found = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if not math.isfinite(value):
            return None
        found.append(float(value))
    return found


def _normalised(lengths: Sequence[int]) -> Callable[[Sequence[float]], list[float]] | None:
    """Divide by each choice's length (None when a choice is empty: nothing to divide by)."""
    if min(lengths) <= 0:
        return None
    return lambda values: [v / n for v, n in zip(values, lengths, strict=True)]


class MultipleChoiceEvaluator:
    """Scores a multiple-choice answer from the log-likelihood of every choice (see the
    module). ``metric`` is the one the score passes on (``acc`` by default); the details
    carry all of them:

        >>> import anyio
        >>> from benchkit.llm import ChoiceQuestion
        >>> from benchkit.model import Response, Task
        >>> question = ChoiceQuestion("Q:", ("a short one", "long"))
        >>> task = Task("q", input=question.to_input(), expected=1)
        >>> response = Response({"logprobs": [-4.0, -3.0], "tokens": [3, 1]})
        >>> score = anyio.run(MultipleChoiceEvaluator(metric="acc_norm").evaluate, task, response)
        >>> score.passed, score.details["metrics"]
        (False, {'acc': 1.0, 'acc_norm': 0.0, 'acc_bytes': 0.0})

    .. versionadded:: 0.2.0
    """

    def __init__(self, *, metric: str = "acc") -> None:
        if metric not in METRICS:
            raise ConfigError(
                f"multiple_choice has no metric {metric!r}",
                fix=f"use one of: {', '.join(METRICS)}.",
            )
        self.metric = metric

    def __repr__(self) -> str:
        return f"MultipleChoiceEvaluator(metric={self.metric!r})"

    async def evaluate(self, task: Task, response: Response) -> Score:
        return self.judge(task, response)

    def judge(self, task: Task, response: Response) -> Score:
        name = "multiple_choice"
        try:
            question = ChoiceQuestion.of(task.input)
        except ValueError as exc:
            return Score(name=name, value=None, passed=False, error=f"task input: {exc}")
        if question is None:
            return Score(
                name=name,
                value=None,
                passed=False,
                error="the task's input is not a multiple-choice question "
                '({"kind": "loglikelihood", "context": ..., "choices": [...]})',
            )
        choices = question.choices
        try:
            target = target_index(task.expected, choices)
        except ValueError as exc:
            return Score(name=name, value=None, passed=False, error=str(exc))
        output = response.output if isinstance(response.output, Mapping) else {}
        logprobs = _numbers(output, "logprobs", len(choices))
        if logprobs is None:
            return Score(
                name=name,
                value=None,
                passed=False,
                error=f"the output has no {len(choices)} finite log-probabilities "
                "(output.logprobs): was the model asked for log-likelihoods?",
            )
        scores: dict[str, list[float]] = {"acc": logprobs}
        by_chars = _normalised([len(c) for c in choices])
        if by_chars is not None:
            scores["acc_norm"] = by_chars(logprobs)
        by_bytes = _normalised([len(c.encode("utf-8")) for c in choices])
        if by_bytes is not None:
            scores["acc_bytes"] = by_bytes(logprobs)
        unconditional = _numbers(output, "unconditional", len(choices))
        if unconditional is not None:
            scores["acc_mutual_info"] = [
                c - u for c, u in zip(logprobs, unconditional, strict=True)
            ]
        predicted = {metric: choose(values) for metric, values in scores.items()}
        metrics = {metric: 1.0 if p == target else 0.0 for metric, p in predicted.items()}
        details: dict[str, Any] = {
            "metrics": metrics,
            "predicted": predicted,
            "target": target,
            "logprobs": logprobs,
        }
        tokens = output.get("tokens")
        if isinstance(tokens, list):
            details["tokens"] = tokens
        if unconditional is not None:
            details["unconditional"] = unconditional
        if self.metric not in metrics:
            why = (
                "the question did not ask for unconditional log-probabilities "
                "(unconditional: true; a dataset file's metrics: [acc_mutual_info])"
                if self.metric == "acc_mutual_info"
                else "a choice is empty, so it has no length to divide by"
            )
            return Score(
                name=name,
                value=None,
                passed=False,
                details=details,
                error=f"no {self.metric}: {why}",
            )
        value = metrics[self.metric]
        chosen = predicted[self.metric]
        reason = None
        if value != 1.0:
            reason = (
                f"{self.metric} chose {_letter(chosen)} ({_excerpt(choices[chosen])}), "
                f"the answer is {_letter(target)} ({_excerpt(choices[target])})"
            )
        return Score(name=name, value=value, passed=value == 1.0, reason=reason, details=details)


def _letter(index: int) -> str:
    return string.ascii_uppercase[index] if index < 26 else str(index)


def _excerpt(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
