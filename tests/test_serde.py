"""The cattrs converter: every model and result class round-trips through JSON."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchkit import (
    Benchmark,
    EvaluatorSpec,
    FormatError,
    JsonlSink,
    MockProvider,
    Request,
    Response,
    RetrievedItem,
    Runner,
    RunOptions,
    RunResult,
    SetupStep,
    Task,
    ToolCall,
    Usage,
)
from benchkit.serde import dumps, loads, structure, unstructure
from benchkit.store import read_jsonl

from ._support import make_suite

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=75, deadline=None)
@given(
    task_id=st.text(min_size=1, max_size=12),
    value=json_values,
    expected=json_values,
    tags=st.lists(st.text(max_size=6), max_size=3),
    weight=st.floats(0, 10, allow_nan=False),
)
def test_task_round_trips(
    task_id: str, value: object, expected: object, tags: list[str], weight: float
) -> None:
    task = Task(
        task_id,
        input=value,
        expected=expected,
        evaluators=(EvaluatorSpec("contains", {"keywords": ["a"]}, name="kw"),),
        weight=weight,
        tags=tags,
        expected_tool_calls=(ToolCall("search", {"q": value}),),
        setup=(SetupStep("add", content=value, metadata={"s": 1}),),
        context=("ctx",),
    )
    assert loads(dumps(task), Task) == task


def test_response_and_usage_round_trip_and_omit_defaults() -> None:
    response = Response(
        output={"answer": 4},
        latency_ms=12.5,
        usage=Usage(10, 5, 0.01),
        tool_calls=(ToolCall("calc", {"x": 1}, id="c1"),),
        retrieved=(RetrievedItem("d1", "text", 0.5, {"session": "D1"}),),
    )
    data = unstructure(response)
    assert "raw" not in data and "artifacts" not in data
    assert structure(data, Response) == response
    assert unstructure(Response()) == {}


def test_run_options_are_written_in_full() -> None:
    data = unstructure(RunOptions())
    assert data["retry_on"] == ["execution_error"]
    assert set(data) >= {"concurrency", "timeout", "retries", "epochs", "deterministic", "seed"}
    assert structure(data, RunOptions) == RunOptions()


def test_run_result_round_trips(tmp_path: Path) -> None:
    def handler(request: Request) -> Response:
        if request.task.input == 3:
            raise RuntimeError("down")
        return Response(output=str(request.task.input), usage=Usage(3, 4))

    suite = make_suite(
        {"a": MockProvider(handler), "b": MockProvider(lambda r: "x")}, n=5, epochs=2
    )
    sink = JsonlSink(tmp_path / "cells.jsonl")
    result = anyio.run(Runner(sinks=[sink]).run, suite)
    assert RunResult.from_json(result.to_json()) == result
    assert json.loads(result.to_json())["aggregates"][0]["usage"] == {
        "prompt_tokens": 24,
        "completion_tokens": 32,
    }
    info, cells = read_jsonl(tmp_path / "cells.jsonl")
    assert info == result.info
    assert sorted(cells, key=lambda c: c.key) == sorted(result.cells, key=lambda c: c.key)


def test_read_jsonl_ignores_a_torn_last_line_but_not_a_bad_middle_one(tmp_path: Path) -> None:
    suite = make_suite({"a": MockProvider(lambda r: str(r.task.input))}, n=3)
    path = tmp_path / "cells.jsonl"
    anyio.run(Runner(sinks=[JsonlSink(path)]).run, suite)
    lines = path.read_text().splitlines()
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:10])
    _, cells = read_jsonl(torn)
    assert len(cells) == 3
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    with pytest.raises(FormatError, match=r"broken.jsonl:2:2: not a JSON line"):
        read_jsonl(broken)


def test_benchmark_in_code_has_a_title_and_count() -> None:
    bench = Benchmark("b", tasks=[Task("t1"), Task("t2")])
    assert (bench.title, bench.task_count) == ("b", 2)
