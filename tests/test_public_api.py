"""The public API as a newcomer and a type checker meet it: lists in, tuples stored, hashable."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import benchkit
from benchkit import (
    Benchmark,
    CallableProvider,
    Condition,
    EvaluatorSpec,
    MockProvider,
    Response,
    RetrievedItem,
    RunOptions,
    SetupStep,
    Suite,
    Task,
    ToolCall,
    VerifierSpec,
)

from ._support import REPO, tasks_of


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
    assert hash(tasks_of(one.benchmark)[0]) == hash(tasks_of(two.benchmark)[0])
    assert len({Task("a"), Task("a"), Task("b")}) == 2
    assert hash(Response({"unhashable": []})) == hash(Response({"other": []}))


def test_lazy_public_names_resolve_and_unknown_ones_raise() -> None:
    assert benchkit.Store.__name__ == "Store"
    assert benchkit.CallableProvider.__name__ == "CallableProvider"
    assert benchkit.LocalModel.__name__ == "LocalModel"  # the embedded model (#24)
    with pytest.raises(AttributeError, match="Runer"):
        benchkit.Runer  # type: ignore[attr-defined]  # noqa: B018


def test_user_mistakes_raise_benchkit_errors_that_say_the_fix(tmp_path: Path) -> None:
    suite = Suite(
        Benchmark("b", tasks=[Task("t1", input="x", expected="x")]),
        conditions=[Condition("c", CallableProvider(str))],
    )
    bench = REPO / "benchmarks" / "demo" / "benchmark.yaml"
    mistakes: list[tuple[Callable[[], object], str]] = [
        (lambda: RunOptions(concurrency=0), "concurrency must be > 0"),
        (lambda: benchkit.run(suite, store=False, concurency=4), "unknown run option"),
        (lambda: benchkit.load(bench, bogus=1), "takes no options"),
        (lambda: benchkit.run(suite, store=False).aggregate("x"), "no condition 'x'"),
        (lambda: MockProvider(), "a mock provider needs outputs"),
    ]
    for call, message in mistakes:
        with pytest.raises(benchkit.BenchkitError, match=message) as info:
            call()
        assert info.value.fix, message
    # Still the builtin kinds they refine, for callers that do not know benchkit.
    with pytest.raises(KeyError):
        benchkit.run(suite, store=False).aggregate("x")
    with pytest.raises(ValueError, match="concurrency"):
        RunOptions(concurrency=0)


def test_every_error_class_lives_in_benchkit_errors_and_is_exported() -> None:
    import benchkit.errors
    import benchkit.llm
    import benchkit.store

    for name in benchkit.errors.__all__:
        assert getattr(benchkit, name) is getattr(benchkit.errors, name), name
        assert name in benchkit.__all__
    assert benchkit.store.StoreError is benchkit.StoreError
    assert benchkit.llm.LLMError is benchkit.LLMError
    assert benchkit.StoreError.__module__ == "benchkit.errors"


def test_select_keeps_streamed_tasks_streamed() -> None:
    from benchkit import LazyTasks

    def many() -> Iterator[Task]:
        return (Task(f"t{i}", tags=("even",) if i % 2 == 0 else ()) for i in range(1000))

    suite = Suite(
        Benchmark("b", tasks=LazyTasks(many)), conditions=[Condition("c", CallableProvider(str))]
    )
    picked = suite.select(tags=["even"], limit=3)
    assert isinstance(picked.benchmark.tasks, LazyTasks)
    assert [t.id for t in picked.benchmark.iter_tasks()] == ["t0", "t2", "t4"]
    assert [t.id for t in suite.select(tasks=["t99*"]).benchmark.iter_tasks()][:2] == [
        "t99",
        "t990",
    ]
