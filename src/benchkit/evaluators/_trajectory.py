"""Trajectory scorers: the path an agent took, not only where it ended.

Each reads the response's :class:`~benchkit.trajectory.Trajectory` — the ``agent``
provider's turns, or any other response read as one turn of its ``tool_calls`` — and
passes or fails (value 1 or 0) with a reason that names the calls:

* ``tool_called`` — a tool was called (``min`` to ``max`` times), with ``arguments`` that
  hold the given values (``match: subset``) or equal them (``exact``), or that validate
  against a JSON ``schema``;
* ``tool_order`` — the calls follow an order (``tools``, else the task's
  ``expected_tool_calls``): ``subsequence`` (other calls may come between) or ``strict``
  (exactly these calls, in this order);
* ``forbidden_tools`` — none of these tools was called;
* ``max_steps`` — at most ``max`` tool calls (``count: tool_calls``) or model replies
  (``count: turns``).

The final answer is the response's ``output``: any other evaluator scores it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from benchkit._limits import MAX_COUNT, out_of_bounds
from benchkit.errors import ConfigError
from benchkit.model import ToolCall
from benchkit.results import Score
from benchkit.trajectory import Trajectory

if TYPE_CHECKING:
    from benchkit.model import Response, Task

__all__ = [
    "ForbiddenToolsEvaluator",
    "MaxStepsEvaluator",
    "ToolCalledEvaluator",
    "ToolOrderEvaluator",
    "json_equal",
    "json_subset",
]

_Match = Literal["subset", "exact", "ignore"]
_MATCHES = ("subset", "exact", "ignore")


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``1 == 1.0``, but ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (Mapping, list, tuple)) or isinstance(b, (Mapping, list, tuple)):
        return False
    return bool(a == b)


def json_subset(expected: Any, actual: Any) -> bool:
    """Every key of ``expected`` (recursively, for mappings) is in ``actual`` with an equal
    value; lists and scalars compare whole."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return all(k in actual and json_subset(v, actual[k]) for k, v in expected.items())
    return json_equal(expected, actual)


def _fits(expected: ToolCall, actual: ToolCall, match: str) -> bool:
    if expected.name != actual.name:
        return False
    if match == "ignore":
        return True
    if match == "exact":
        return json_equal(dict(expected.arguments), dict(actual.arguments))
    return json_subset(dict(expected.arguments), dict(actual.arguments))


def _shown(calls: Sequence[ToolCall]) -> str:
    if not calls:
        return "no tool calls"
    return ", ".join(
        f"{c.name}({json.dumps(dict(c.arguments), ensure_ascii=False, sort_keys=True)})"
        for c in calls
    )


def _check_match(match: str) -> None:
    if match not in _MATCHES:
        raise ConfigError(f"match {match!r} is unknown", fix=f"use one of {', '.join(_MATCHES)}.")


def _count(name: str, value: Any, *, optional: bool) -> int | None:
    if value is None and optional:
        return None
    problem = out_of_bounds(value, 0, MAX_COUNT, integer=True)
    if problem is not None:
        raise ConfigError(f"{name} {problem}", fix=f"give {name} a whole number >= 0.")
    return int(value)


def _score(name: str, passed: bool, reason: str | None, **details: Any) -> Score:
    return Score(
        name=name,
        value=1.0 if passed else 0.0,
        passed=passed,
        reason=None if passed else reason,
        details=details,
    )


class ToolCalledEvaluator:
    """``tool_called``: ``tool`` was called between ``min`` (1) and ``max`` (no limit)
    times with fitting arguments — ``arguments`` held in the call's (``match: subset``,
    the default) or equal to them (``exact``), and valid against ``schema`` when given.

    .. versionadded:: 0.2.0
    """

    thread = False

    def __init__(
        self,
        *,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        match: _Match = "subset",
        schema: Mapping[str, Any] | None = None,
        min: int = 1,
        max: int | None = None,
    ) -> None:
        if not isinstance(tool, str) or not tool:
            raise ConfigError(f"tool must be a tool name, got {tool!r}", fix="write tool: add.")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise ConfigError("arguments must be a mapping", fix="write e.g. arguments: {a: 2}.")
        _check_match(match)
        self.tool = tool
        self.arguments = dict(arguments or {})
        self.match = match
        self.min = _count("min", min, optional=False) or 0
        self.max = _count("max", max, optional=True)
        self.validator: Any = None
        if schema is not None:
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(dict(schema))
            except SchemaError as exc:
                raise ConfigError(
                    f"schema is not a valid JSON Schema: {exc.message}",
                    fix="give the arguments' JSON Schema (draft 2020-12).",
                ) from None
            self.validator = Draft202012Validator(dict(schema))

    def evaluate(self, task: Task, response: Response) -> Score:
        calls = Trajectory.of(response).tool_calls()
        named = [c for c in calls if c.name == self.tool]
        wanted = ToolCall(self.tool, self.arguments)
        fitting = [
            c
            for c in named
            if _fits(wanted, c, self.match)
            and (self.validator is None or self.validator.is_valid(dict(c.arguments)))
        ]
        n = len(fitting)
        passed = n >= self.min and (self.max is None or n <= self.max)
        wanted_text = f"{self.tool}({json.dumps(self.arguments, sort_keys=True)})"
        bound = f"at least {self.min}" if self.max is None else f"{self.min} to {self.max}"
        reason = (
            f"{wanted_text} was called {n} time(s), wanted {bound}"
            + (f"; {self.tool} was called with other arguments: {_shown(named)}" if named else "")
            + ("" if named else f"; the calls were: {_shown(calls)}")
        )
        return _score("tool_called", passed, reason, tool=self.tool, matched=n, calls=len(calls))


def _expected(tools: Sequence[Any] | None, task: Task) -> tuple[ToolCall, ...]:
    if tools is None:
        return task.expected_tool_calls
    return tuple(_as_call(t) for t in tools)


def _as_call(item: Any) -> ToolCall:
    if isinstance(item, ToolCall):
        return item
    if isinstance(item, str) and item:
        return ToolCall(item)
    if isinstance(item, Mapping) and isinstance(item.get("name"), str):
        arguments = item.get("arguments", item.get("args", {}))
        if isinstance(arguments, Mapping):
            return ToolCall(item["name"], dict(arguments))
    raise ConfigError(
        f"tools entry {item!r} is not a tool name or {{name, arguments}}",
        fix="write e.g. tools: [lookup, {name: calculate, arguments: {expression: '2+2'}}].",
    )


class ToolOrderEvaluator:
    """``tool_order``: the calls follow ``tools`` (names, or ``{name, arguments}``; default
    the task's ``expected_tool_calls``) — as a ``subsequence`` (the default: other calls
    may come between) or ``strict``ly (exactly these calls in this order). Arguments match
    as ``match`` says (``subset``: the given ones are held; a bare name matches any).

    .. versionadded:: 0.2.0
    """

    thread = False

    def __init__(
        self,
        *,
        tools: Sequence[Any] | None = None,
        mode: Literal["subsequence", "strict"] = "subsequence",
        match: _Match = "subset",
    ) -> None:
        if mode not in ("subsequence", "strict"):
            raise ConfigError(f"mode {mode!r} is unknown", fix="use subsequence or strict.")
        _check_match(match)
        if tools is not None and (
            isinstance(tools, (str, Mapping)) or not isinstance(tools, Sequence)
        ):
            raise ConfigError("tools must be a list", fix="write e.g. tools: [lookup, calculate].")
        self.tools = None if tools is None else tuple(_as_call(t) for t in tools)
        self.mode = mode
        self.match = match

    def evaluate(self, task: Task, response: Response) -> Score:
        expected = _expected(self.tools, task)
        actual = Trajectory.of(response).tool_calls()
        if not expected and self.tools is None:
            return Score(
                name="tool_order",
                value=None,
                passed=False,
                error=f"task {task.id!r} has no expected_tool_calls and the evaluator no `tools`",
            )
        if self.mode == "strict":
            passed = len(expected) == len(actual) and all(
                _fits(e, a, self.match) for e, a in zip(expected, actual, strict=True)
            )
            found = len(expected) if passed else _prefix(expected, actual, self.match)
        else:
            found = _in_order(expected, actual, self.match)
            passed = found == len(expected)
        reason = (
            f"wanted {_shown(expected)} ({self.mode}); the calls were {_shown(actual)}"
            f" — {found} of {len(expected)} in order"
        )
        return _score(
            "tool_order", passed, reason, mode=self.mode, in_order=found, calls=len(actual)
        )


def _in_order(expected: Sequence[ToolCall], actual: Sequence[ToolCall], match: str) -> int:
    """How many of ``expected`` appear in order among ``actual`` (greedy, which is optimal)."""
    position = 0
    for found, e in enumerate(expected):
        while position < len(actual) and not _fits(e, actual[position], match):
            position += 1
        if position == len(actual):
            return found
        position += 1
    return len(expected)


def _prefix(expected: Sequence[ToolCall], actual: Sequence[ToolCall], match: str) -> int:
    n = 0
    for e, a in zip(expected, actual, strict=False):
        if not _fits(e, a, match):
            break
        n += 1
    return n


class ForbiddenToolsEvaluator:
    """``forbidden_tools``: none of ``tools`` was called.

    .. versionadded:: 0.2.0
    """

    thread = False

    def __init__(self, *, tools: Sequence[str]) -> None:
        if isinstance(tools, str) or not tools or not all(isinstance(t, str) for t in tools):
            raise ConfigError(
                f"tools must be a list of tool names, got {tools!r}",
                fix="write e.g. tools: [delete_file].",
            )
        self.tools = frozenset(tools)

    def evaluate(self, task: Task, response: Response) -> Score:
        calls = Trajectory.of(response).tool_calls()
        bad = [c for c in calls if c.name in self.tools]
        return _score(
            "forbidden_tools",
            not bad,
            f"forbidden tool(s) called: {_shown(bad)}",
            forbidden=len(bad),
        )


class MaxStepsEvaluator:
    """``max_steps``: at most ``max`` steps, counted as tool calls (``count: tool_calls``,
    the default) or model replies (``count: turns``).

    .. versionadded:: 0.2.0
    """

    thread = False

    def __init__(self, *, max: int, count: Literal["tool_calls", "turns"] = "tool_calls") -> None:
        if count not in ("tool_calls", "turns"):
            raise ConfigError(f"count {count!r} is unknown", fix="use tool_calls or turns.")
        self.max = _count("max", max, optional=False) or 0
        self.count = count

    def evaluate(self, task: Task, response: Response) -> Score:
        trajectory = Trajectory.of(response)
        n = len(trajectory.tool_calls()) if self.count == "tool_calls" else len(trajectory.turns)
        what = "tool calls" if self.count == "tool_calls" else "turns"
        return _score(
            "max_steps", n <= self.max, f"{n} {what}, more than {self.max}", steps=n, max=self.max
        )
