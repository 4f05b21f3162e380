"""Trajectory scorers over agents' trajectories (and any response's tool calls), and
CodeForge's tool_correctness over a whole multi-turn trajectory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import benchkit
from benchkit import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    Response,
    Score,
    Suite,
    Task,
    ToolCall,
)
from benchkit.errors import ConfigError
from benchkit.providers import AgentProvider
from benchkit.registry import default_registries
from benchkit.trajectory import ToolStep, Trajectory, Turn

from ._llm_server import FakeOpenAI, Reply


def trajectory(*turns: list[tuple[str, dict[str, Any]]]) -> Response:
    """A response holding an agent's trajectory: one list of calls per turn, then an answer."""
    made = [
        Turn(i + 1, None, tuple(ToolStep(n, a, f"c{i}{j}") for j, (n, a) in enumerate(calls)))
        for i, calls in enumerate(turns)
    ]
    made.append(Turn(len(turns) + 1, "done"))
    kept = Trajectory(tuple(made), "answered", "done")
    return Response(output="done", metadata={"trajectory": kept.to_dict()})


def score(kind: str, response: Response, task: Task | None = None, **options: Any) -> Score:
    evaluator = default_registries().evaluators.build(kind, options)
    found = evaluator.evaluate(task or Task("t"), response)
    assert isinstance(found, Score)
    return found


PATH = trajectory(
    [
        ("lookup", {"table": "prices_usd", "key": "coffee"}),
        ("lookup", {"table": "prices_usd", "key": "bread"}),
    ],
    [("calculate", {"expression": "3 * 3.75 + 2 * 2.25"})],
)


@pytest.mark.parametrize(
    ("options", "passed"),
    [
        ({"tool": "calculate"}, True),
        ({"tool": "convert"}, False),
        ({"tool": "lookup", "min": 2}, True),
        ({"tool": "lookup", "max": 1}, False),
        ({"tool": "lookup", "arguments": {"key": "bread"}}, True),
        ({"tool": "lookup", "arguments": {"key": "milk"}}, False),
        ({"tool": "lookup", "arguments": {"key": "bread"}, "match": "exact"}, False),
        ({"tool": "calculate", "schema": {"required": ["expression"]}}, True),
        ({"tool": "calculate", "schema": {"properties": {"expression": {"maxLength": 3}}}}, False),
    ],
)
def test_tool_called(options: dict[str, Any], passed: bool) -> None:
    found = score("tool_called", PATH, **options)
    assert (found.passed, found.value) == (passed, 1.0 if passed else 0.0)
    if not passed:
        assert found.reason and options["tool"] in found.reason


@pytest.mark.parametrize(
    ("options", "passed"),
    [
        ({"tools": ["lookup", "calculate"]}, True),
        ({"tools": ["calculate", "lookup"]}, False),
        ({"tools": ["lookup", "lookup", "calculate"], "mode": "strict"}, True),
        ({"tools": ["lookup", "calculate"], "mode": "strict"}, False),
        ({"tools": [{"name": "lookup", "arguments": {"key": "bread"}}, "calculate"]}, True),
        ({"tools": [{"name": "lookup", "arguments": {"key": "bread"}}, "lookup"]}, False),
    ],
)
def test_tool_order(options: dict[str, Any], passed: bool) -> None:
    assert score("tool_order", PATH, **options).passed is passed


def test_tool_order_defaults_to_the_tasks_expected_calls() -> None:
    task = Task("t", expected_tool_calls=[ToolCall("lookup"), ToolCall("calculate")])
    assert score("tool_order", PATH, task).passed
    missing = score("tool_order", PATH, Task("t"))
    assert missing.value is None and missing.error and "expected_tool_calls" in missing.error


def test_forbidden_tools_and_max_steps() -> None:
    assert score("forbidden_tools", PATH, tools=["delete"]).passed
    bad = score("forbidden_tools", PATH, tools=["calculate", "delete"])
    assert not bad.passed and bad.reason and "calculate(" in bad.reason
    assert score("max_steps", PATH, max=3).passed
    assert not score("max_steps", PATH, max=2).passed
    assert score("max_steps", PATH, max=3, count="turns").passed
    assert not score("max_steps", PATH, max=2, count="turns").passed


def test_any_response_reads_as_one_turn() -> None:
    single = Response(output="x", tool_calls=[ToolCall("search", {"q": "a"})])
    assert score("tool_called", single, tool="search", arguments={"q": "a"}).passed
    assert score("max_steps", single, max=1, count="turns").passed


@pytest.mark.parametrize(
    ("kind", "options", "message"),
    [
        ("tool_called", {}, "missing a required argument: .tool."),
        ("tool_called", {"tool": "a", "match": "fuzzy"}, "match 'fuzzy' is unknown"),
        ("tool_called", {"tool": "a", "min": -1}, "min must be >= 0"),
        ("tool_called", {"tool": "a", "schema": {"type": 3}}, "not a valid JSON Schema"),
        ("tool_order", {"tools": "lookup"}, "tools must be a list"),
        ("tool_order", {"tools": [3]}, "is not a tool name"),
        ("forbidden_tools", {"tools": []}, "must be a list of tool names"),
        ("max_steps", {"max": 1.5}, "must be a whole number"),
    ],
)
def test_bad_options_are_errors_when_built(
    kind: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        default_registries().evaluators.build(kind, options)


@given(
    st.lists(st.lists(st.sampled_from(["a", "b", "c"]), max_size=3), max_size=4),
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=4),
)
def test_strict_order_implies_subsequence_and_equal_length(
    turns: list[list[str]], wanted: list[str]
) -> None:
    empty: dict[str, Any] = {}
    response = trajectory(*[[(name, empty) for name in turn] for turn in turns])
    calls = [name for turn in turns for name in turn]
    strict = score("tool_order", response, tools=wanted, mode="strict").passed
    loose = score("tool_order", response, tools=wanted).passed
    assert strict == (calls == wanted)
    assert not strict or loose
    # a subsequence: the wanted names in order within the calls
    it = iter(calls)
    assert loose == all(name in it for name in wanted)


def test_codeforge_tool_correctness_scores_the_whole_trajectory(llm_server: FakeOpenAI) -> None:
    """Two turns of calls, then the answer: CodeForge's metric sees every call, in order."""

    def lookup(key: str) -> str:
        """Look a price up."""
        return {"coffee": "3.75", "bread": "2.25"}[key]

    def calculate(expression: str) -> str:
        """Compute."""
        return "15.75"

    def calls(*items: tuple[str, Mapping[str, Any]]) -> Reply:
        return Reply.tools(*({"name": n, "arguments": dict(a)} for n, a in items))

    llm_server.queue(
        calls(("lookup", {"key": "coffee"}), ("lookup", {"key": "bread"})),
        calls(("calculate", {"expression": "3*3.75+2*2.25"})),
        Reply.text("15.75"),
    )
    expected = [
        ToolCall("lookup", {"key": "coffee"}),
        ToolCall("lookup", {"key": "bread"}),
        ToolCall("calculate", {"expression": "3*3.75+2*2.25"}),
    ]
    provider = AgentProvider(
        model="m", base_url=llm_server.url, api_key_env=[], cache=False, tools=[lookup, calculate]
    )
    suite = Suite(
        Benchmark(
            "cf",
            tasks=[
                Task(
                    "t",
                    input="3 coffees and 2 breads?",
                    expected="15.75",
                    expected_tool_calls=expected,
                )
            ],
            evaluators=[
                EvaluatorSpec("codeforge_tool_correctness", {"mode": "exact"}),
                EvaluatorSpec("tool_order", {"mode": "strict", "match": "exact"}),
                EvaluatorSpec("exact"),
            ],
        ),
        conditions=[Condition("agent", provider)],
    )
    cell = benchkit.run(suite, store=False).cells[0]
    assert cell.status == "pass", (cell.error, cell.scores)
    assert [s.name for s in cell.scores] == ["tool_correctness", "tool_order", "exact"]
