"""CodeForge's tool-call comparison: expected against actual calls, deterministically.

:func:`compare_tool_calls` scores the calls a model made against a task's expected calls
(``exact``, ``ordered``, ``unordered`` or ``f1``, with ``exact`` / ``subset`` / ``ignore``
argument matching); :class:`~benchkit.formats.codeforge._metrics.ToolCorrectness` reports
it as an evaluator. docs/metrics.md has the definitions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from benchkit.errors import ConfigError
from benchkit.evaluators._trajectory import json_equal, json_subset
from benchkit.model import ToolCall

TOOL_MODES = ("exact", "ordered", "unordered", "f1", "judge")
"""How tool calls are scored: one of the four comparisons, or ``judge`` (an LLM decides)."""
ARGUMENT_MATCHING = ("exact", "subset", "ignore")
"""How a call's arguments must match the expected call's."""


def _matches(expected: ToolCall, actual: ToolCall, arguments: str) -> bool:
    if expected.name != actual.name:
        return False
    if arguments == "ignore":
        return True
    if arguments == "subset":
        return json_subset(expected.arguments, actual.arguments)
    return json_equal(expected.arguments, actual.arguments)


def _max_matching(
    expected: Sequence[ToolCall], actual: Sequence[ToolCall], arguments: str
) -> dict[int, int]:
    """A maximum one-to-one matching expected index → actual index (Kuhn's augmenting
    paths; tool lists are short)."""
    edges = [[j for j, a in enumerate(actual) if _matches(e, a, arguments)] for e in expected]
    owner: dict[int, int] = {}  # actual index → expected index

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(expected)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


def _in_order(expected: Sequence[ToolCall], actual: Sequence[ToolCall], arguments: str) -> bool:
    """Whether the expected calls appear in order within the actual ones (other calls may
    come between). Matching each expected call to the earliest possible actual call is
    optimal, whatever the matching rule."""
    position = 0
    for e in expected:
        while position < len(actual) and not _matches(e, actual[position], arguments):
            position += 1
        if position == len(actual):
            return False
        position += 1
    return True


def _call_dict(call: ToolCall) -> dict[str, Any]:
    return {"name": call.name, "arguments": dict(call.arguments)}


@attrs.frozen
class ToolComparison:
    """Expected against actual tool calls, under one argument-matching rule.

    ``matched`` is the size of a maximum one-to-one matching between the two lists;
    ``precision`` = matched / actual calls and ``recall`` = matched / expected calls (1.0
    for an empty list), ``f1`` their harmonic mean (1.0 when both lists are empty, 0 when
    only one is). ``exact``: same calls in the same order; ``ordered``: the expected calls
    appear in order among the actual ones; ``unordered``: the same calls in any order.
    ``missing`` and ``unexpected`` are the calls the matching left over on each side.
    ``value`` is the score of the chosen ``mode``.
    """

    mode: str
    arguments: str
    value: float
    exact: bool
    ordered: bool
    unordered: bool
    matched: int
    precision: float
    recall: float
    f1: float
    missing: tuple[ToolCall, ...]
    unexpected: tuple[ToolCall, ...]

    def details(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "arguments": self.arguments,
            "exact": self.exact,
            "ordered": self.ordered,
            "unordered": self.unordered,
            "matched": self.matched,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "missing": [_call_dict(c) for c in self.missing],
            "unexpected": [_call_dict(c) for c in self.unexpected],
        }


def compare_tool_calls(
    expected: Sequence[ToolCall],
    actual: Sequence[ToolCall],
    *,
    mode: str = "exact",
    arguments: str = "exact",
) -> ToolComparison:
    """Compare tool calls: ``mode`` is ``exact`` | ``ordered`` | ``unordered`` (1.0 or 0.0)
    or ``f1`` (graded); ``arguments`` is ``exact`` (equal as JSON), ``subset`` (the expected
    arguments are contained in the actual ones) or ``ignore`` (names only).

        >>> calls = [ToolCall("read", {"path": "a"}), ToolCall("write", {"path": "b"})]
        >>> compare_tool_calls(calls, calls[::-1], mode="unordered").value
        1.0
        >>> compare_tool_calls(calls, calls[:1], mode="f1").f1
        0.6666666666666666
    """
    if mode not in TOOL_MODES or mode == "judge":
        raise ConfigError(
            f"tool comparison mode {mode!r} is not one of exact, ordered, unordered, f1"
        )
    if arguments not in ARGUMENT_MATCHING:
        raise ConfigError(
            f"argument matching {arguments!r} is not one of {', '.join(ARGUMENT_MATCHING)}"
        )
    pairs = _max_matching(expected, actual, arguments)
    matched = len(pairs)
    precision = matched / len(actual) if actual else 1.0
    recall = matched / len(expected) if expected else 1.0
    if not expected and not actual:
        f1 = 1.0
    elif matched == 0:
        f1 = 0.0
    else:
        f1 = 2 * precision * recall / (precision + recall)
    exact = len(expected) == len(actual) and all(
        _matches(e, a, arguments) for e, a in zip(expected, actual, strict=True)
    )
    unordered = matched == len(expected) == len(actual)
    ordered = _in_order(expected, actual, arguments)
    value = {"exact": exact, "ordered": ordered, "unordered": unordered}.get(mode, f1)
    used = set(pairs.values())
    return ToolComparison(
        mode=mode,
        arguments=arguments,
        value=float(value),
        exact=exact,
        ordered=ordered,
        unordered=unordered,
        matched=matched,
        precision=precision,
        recall=recall,
        f1=f1,
        missing=tuple(e for i, e in enumerate(expected) if i not in pairs),
        unexpected=tuple(a for j, a in enumerate(actual) if j not in used),
    )


def describe(calls: Sequence[ToolCall]) -> str:
    """The calls as ``name({...})``, comma-separated, for a score's reason."""
    return ", ".join(
        f"{c.name}({json.dumps(dict(c.arguments), ensure_ascii=False, sort_keys=True)})"
        for c in calls
    )
