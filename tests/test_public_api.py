"""The public API as a newcomer and a type checker meet it: lists in, tuples stored, hashable."""

from __future__ import annotations

import pytest

import benchkit
from benchkit import (
    Benchmark,
    CallableProvider,
    Condition,
    EvaluatorSpec,
    Response,
    RetrievedItem,
    RunOptions,
    SetupStep,
    Suite,
    Task,
    ToolCall,
    VerifierSpec,
)


def test_collection_fields_take_lists_and_store_tuples() -> None:
    task = Task(
        "t1",
        input={"q": [1, 2]},  # any JSON value, even an unhashable one
        evaluators=[EvaluatorSpec("exact")],
        verifiers=[VerifierSpec("command", options={"run": "true"})],
        expected_tool_calls=[ToolCall("add", {"a": 1})],
        setup=[SetupStep("add", content="fact")],
        metadata={"k": "v"},
    )
    bench = Benchmark("b", tasks=[task], evaluators=[EvaluatorSpec("exact")])
    suite = Suite(bench, conditions=[Condition("c", CallableProvider(str))])
    response = Response("x", tool_calls=[ToolCall("add")], retrieved=[RetrievedItem("r", "c")])
    options = RunOptions(retry_on=["timeout", "execution_error"])
    assert type(task.evaluators) is tuple and type(task.verifiers) is tuple
    assert type(task.expected_tool_calls) is tuple and type(task.setup) is tuple
    assert type(bench.tasks) is tuple and type(bench.evaluators) is tuple
    assert type(suite.conditions) is tuple
    assert type(response.tool_calls) is tuple and type(response.retrieved) is tuple
    assert options.retry_on == frozenset({"timeout", "execution_error"})


def test_frozen_objects_hash_and_equal_objects_hash_equal() -> None:
    def make() -> Suite:
        return Suite(
            Benchmark(
                "b",
                tasks=[Task("t1", input=[1], expected={"a": 1}, metadata={"m": [1]})],
                evaluators=[EvaluatorSpec("contains", options={"values": ["a"]})],
            ),
            conditions=[Condition("c", CallableProvider(str))],
        )

    one, two = make(), make()
    assert {one.benchmark: 1}[two.benchmark] == 1
    assert hash(one.benchmark.tasks[0]) == hash(two.benchmark.tasks[0])
    assert len({Task("a"), Task("a"), Task("b")}) == 2
    assert hash(Response({"unhashable": []})) == hash(Response({"other": []}))


def test_lazy_public_names_resolve_and_unknown_ones_raise() -> None:
    assert benchkit.Store.__name__ == "Store"
    assert benchkit.CallableProvider.__name__ == "CallableProvider"
    with pytest.raises(AttributeError, match="Runer"):
        benchkit.Runer  # type: ignore[attr-defined]  # noqa: B018
