"""The agent loop against a scripted OpenAI-compatible server on 127.0.0.1: exact multi-turn
tool-calling conversations (parallel calls, a tool error, every limit, bad calls), and what
a cell keeps of them (the trajectory, the transcript)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import pytest

import benchkit
from benchkit import Benchmark, CellResult, Condition, EvaluatorSpec, Suite, Task
from benchkit.errors import ConfigError
from benchkit.llm import LLMClient
from benchkit.providers import AgentProvider, agent_tool
from benchkit.trajectory import Trajectory

from ._llm_server import FakeOpenAI, Reply

pytestmark = pytest.mark.anyio


def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: the first number
        b: the second number
    """
    return a + b


def agent(server: FakeOpenAI, tools: Sequence[Any] = (add,), **options: Any) -> AgentProvider:
    return AgentProvider(
        model="fake-model", base_url=server.url, api_key_env=[], cache=False, tools=tools, **options
    )


def run_one(provider: AgentProvider, task: Task | None = None, **run: Any) -> CellResult:
    task = task or Task("t1", input="What is 2 + 3?", expected="5")
    suite = Suite(
        Benchmark("agent", tasks=[task], evaluators=[EvaluatorSpec("exact")]),
        conditions=[Condition("agent", provider)],
    )
    result = benchkit.run(suite, store=False, **run)
    return result.cells[0]


def calls(*items: tuple[str, Mapping[str, Any]]) -> Reply:
    return Reply.tools(*({"name": n, "arguments": dict(a)} for n, a in items))


def kinds(cell: CellResult) -> list[str]:
    assert cell.transcript is not None
    return [e.kind for e in cell.transcript.events]


def test_two_turns_a_call_then_the_answer(llm_server: FakeOpenAI) -> None:
    llm_server.queue(calls(("add", {"a": 2, "b": 3})), Reply.text("5"))
    cell = run_one(agent(llm_server))
    assert (cell.status, cell.error_category) == ("pass", "none")
    assert cell.response is not None
    assert [(c.name, dict(c.arguments)) for c in cell.response.tool_calls] == [
        ("add", {"a": 2, "b": 3})
    ]
    # the second request carries the call and its result back to the model
    second = llm_server.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    assert second[1]["tool_calls"][0]["function"]["name"] == "add"
    assert second[2] == {"role": "tool", "tool_call_id": "call_0", "content": "5"}
    tools = llm_server.requests[0].body["tools"]
    assert tools[0]["function"]["parameters"]["required"] == ["a", "b"]
    trajectory = Trajectory.of(cell.response)
    assert trajectory.ending == "answered" and trajectory.final == "5"
    assert [len(t.tools) for t in trajectory.turns] == [1, 0]
    assert trajectory.tool_steps()[0].result == "5"
    assert trajectory.usage.total_tokens == 30  # two replies of 10 + 5
    assert kinds(cell) == ["request", "message", "response", "tool_call", "tool_result", "response"]


def test_parallel_calls_of_one_turn_run_concurrently(llm_server: FakeOpenAI) -> None:
    """Each tool waits for the other to have started: run one after the other, they would
    both time out."""
    barrier = threading.Barrier(2, timeout=10)
    both: dict[str, anyio.Event] = {}

    def left(x: int) -> int:
        """Left."""
        barrier.wait()  # a sync tool, in a worker thread
        return x

    def right(x: int) -> int:
        """Right."""
        barrier.wait()
        return -x

    async def first(x: int) -> str:
        """First."""
        both.setdefault("a", anyio.Event()).set()
        with anyio.fail_after(10):
            await both.setdefault("b", anyio.Event()).wait()
        return "a"

    async def second(x: int) -> str:
        """Second."""
        both.setdefault("b", anyio.Event()).set()
        with anyio.fail_after(10):
            await both.setdefault("a", anyio.Event()).wait()
        return "b"

    llm_server.queue(
        calls(("left", {"x": 1}), ("right", {"x": 2}), ("first", {"x": 0}), ("second", {"x": 0})),
        Reply.text("5"),
    )
    cell = run_one(agent(llm_server, tools=[left, right, first, second]))
    assert cell.status == "pass", cell.error
    assert cell.response is not None
    steps = Trajectory.of(cell.response).tool_steps()
    assert [(s.name, s.result, s.error) for s in steps] == [
        ("left", "1", None),
        ("right", "-2", None),
        ("first", "a", None),
        ("second", "b", None),
    ]
    # results go back in the order of the calls, each with its id
    told = llm_server.requests[1].body["messages"][2:]
    assert [m["tool_call_id"] for m in told] == ["call_0", "call_1", "call_2", "call_3"]


def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


def test_a_tool_that_raises_is_told_to_the_model(llm_server: FakeOpenAI) -> None:
    llm_server.queue(
        calls(("divide", {"a": 1, "b": 0})),
        calls(("divide", {"a": 10, "b": 2})),
        Reply.text("5.0"),
    )
    cell = run_one(agent(llm_server, tools=[divide]), Task("t", input="?", expected="5.0"))
    assert cell.status == "pass", cell.error
    told = llm_server.requests[1].body["messages"][-1]
    assert told["role"] == "tool"
    assert told["content"] == "error: divide raised ZeroDivisionError: division by zero"
    assert cell.response is not None
    steps = Trajectory.of(cell.response).tool_steps()
    assert steps[0].error is not None and steps[1].result == "5.0"


def test_a_tool_error_can_end_the_cell_keeping_the_trajectory(llm_server: FakeOpenAI) -> None:
    llm_server.queue(calls(("divide", {"a": 1, "b": 0})), Reply.text("never asked"))
    cell = run_one(agent(llm_server, tools=[divide], on_tool_error="end"))
    assert (cell.status, cell.error_category) == ("error", "tool_error")
    assert "ZeroDivisionError" in (cell.error or "")
    assert cell.response is not None  # the trajectory so far
    trajectory = Trajectory.of(cell.response)
    assert trajectory.ending == "tool_error" and len(trajectory.turns) == 1
    assert len(llm_server.requests) == 1
    assert "error" in kinds(cell)


def test_a_tool_that_hangs_times_out_and_the_model_is_told(llm_server: FakeOpenAI) -> None:
    async def slow(x: int) -> int:
        """Never answers in time."""
        await anyio.sleep(30)
        return x

    llm_server.queue(calls(("slow", {"x": 1})), Reply.text("5"))
    cell = run_one(agent(llm_server, tools=[agent_tool(slow, timeout=0.2)]))
    assert cell.status == "pass"
    told = llm_server.requests[1].body["messages"][-1]["content"]
    assert told == "error: slow timed out after 0.2 s"


def counting(server: FakeOpenAI) -> None:
    """A model that never answers: it calls add with a new argument every turn."""
    turn = {"n": 0}

    def respond(body: Mapping[str, Any]) -> Reply:
        turn["n"] += 1
        return calls(("add", {"a": turn["n"], "b": 1}))

    server.respond = respond


@pytest.mark.parametrize(
    ("limits", "price", "category", "turns"),
    [
        ({"turns": 3}, None, "turn_limit", 3),
        ({"tool_calls": 2}, None, "tool_call_limit", 3),
        ({"tokens": 40}, None, "token_limit", 3),  # 15 tokens a reply: over after the third
        ({"cost_usd": 0.0002}, [10.0, 10.0], "cost_limit", 2),  # $0.00015 a reply
        ({"seconds": 2}, None, "time_limit", 1),
    ],
)
def test_each_limit_ends_the_cell_with_its_category_and_keeps_the_turns(
    llm_server: FakeOpenAI,
    limits: dict[str, Any],
    price: list[float] | None,
    category: str,
    turns: int,
) -> None:
    counting(llm_server)
    tools: list[Any] = [add]
    if category == "time_limit":

        async def add_slowly(a: float, b: float) -> float:
            """Add, never in time."""
            await anyio.sleep(3600)
            return a + b

        tools = [agent_tool(add_slowly, name="add")]
    provider = agent(llm_server, tools=tools, limits={"repeats": None, **limits}, price=price)
    cell = run_one(provider)
    assert (cell.status, cell.error_category) == ("error", category), cell.error
    assert cell.response is not None
    trajectory = Trajectory.of(cell.response)
    assert trajectory.ending == category and trajectory.reason == cell.error
    assert len(trajectory.turns) == turns, "the turns before the limit are kept"
    assert cell.transcript is not None
    ends = [e for e in cell.transcript.events if e.kind == "error" and "turn" in (e.data or {})]
    assert ends and ends[0].data["ending"] == category


def test_a_loop_of_the_same_call_is_its_own_outcome(llm_server: FakeOpenAI) -> None:
    llm_server.respond = lambda body: calls(("add", {"a": 1, "b": 1}))
    cell = run_one(agent(llm_server))
    assert cell.error_category == "tool_loop"
    assert len(llm_server.requests) == 3  # limits.repeats


@pytest.mark.parametrize(
    ("reply", "category", "message"),
    [
        (calls(("subtract", {"a": 1})), "unknown_tool", "there is no tool 'subtract'"),
        (calls(("add", {"a": "two", "b": 3})), "invalid_arguments", "'two' is not of type"),
        (calls(("add", {"a": 1})), "invalid_arguments", "'b' is a required property"),
        (
            Reply.tools({"name": "add", "arguments": "{not json"}),
            "invalid_arguments",
            "are not JSON",
        ),
    ],
)
def test_bad_calls_end_the_cell_clearly(
    llm_server: FakeOpenAI, reply: Reply, category: str, message: str
) -> None:
    llm_server.queue(reply)
    cell = run_one(agent(llm_server))
    assert (cell.status, cell.error_category) == ("error", category)
    assert message in (cell.error or "")


def test_bad_calls_can_be_told_to_the_model_instead(llm_server: FakeOpenAI) -> None:
    llm_server.queue(
        calls(("subtract", {"a": 1})), calls(("add", {"a": 2, "b": 3})), Reply.text("5")
    )
    cell = run_one(agent(llm_server, on_invalid_call="message"))
    assert cell.status == "pass"
    told = llm_server.requests[1].body["messages"][-1]["content"]
    assert told.startswith("error: there is no tool 'subtract'")


def test_the_cell_timeout_cancels_a_running_tool(llm_server: FakeOpenAI) -> None:
    started, stopped = threading.Event(), threading.Event()

    async def forever(x: int) -> int:
        """Waits forever."""
        started.set()
        try:
            await anyio.sleep(3600)
        finally:
            stopped.set()
        return x

    llm_server.queue(calls(("forever", {"x": 1})))
    # Long enough for the model's first reply to arrive on a loaded machine, so that the
    # timeout finds the tool running.
    cell = run_one(agent(llm_server, tools=[forever]), timeout=5.0)
    assert cell.status == "timeout"
    assert started.is_set() and stopped.is_set()
    assert "tool_call" in kinds(cell)


def no_annotation(x):  # type: ignore[no-untyped-def]
    """Untyped."""
    return x


class Point:
    pass


def takes_a_point(p: Point) -> str:
    """Needs a Point."""
    return ""


def star(*numbers: int) -> int:
    """Variadic."""
    return 0


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (no_annotation, "parameter 'x' has no type annotation"),
        (takes_a_point, "cannot derive a JSON Schema from Point"),
        (star, r"parameter \*numbers has no schema"),
    ],
)
def test_a_schema_that_cannot_be_derived_stops_before_any_cell(
    llm_server: FakeOpenAI, fn: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        agent(llm_server, tools=[fn])
    assert llm_server.requests == []


def test_the_final_answer_is_scored_by_any_evaluator(llm_server: FakeOpenAI) -> None:
    llm_server.queue(calls(("add", {"a": 2, "b": 3})), Reply.text("The sum is 5."))
    provider = agent(llm_server)
    suite = Suite(
        Benchmark(
            "agent",
            tasks=[Task("t1", input="2+3?", expected="5")],
            evaluators=[EvaluatorSpec("contains", {"keywords": ["5"]})],
        ),
        conditions=[Condition("agent", provider)],
    )
    cell = benchkit.run(suite, store=False).cells[0]
    assert cell.status == "pass" and cell.response is not None
    assert cell.response.output == "The sum is 5."


async def test_the_loop_runs_on_both_backends(llm_server: FakeOpenAI) -> None:
    llm_server.queue(
        calls(("add", {"a": 1, "b": 1}), ("add", {"a": 2, "b": 2})), Reply.text("2, 4")
    )
    provider = agent(llm_server)
    request = benchkit.Request(Task("t", input="sums"), Condition("c", provider))
    response = await provider.invoke(request)
    assert response.output == "2, 4"
    assert [s.result for s in Trajectory.of(response).tool_steps()] == ["2", "4"]


def test_a_long_result_is_cut_for_the_model_and_more_for_the_cell(llm_server: FakeOpenAI) -> None:
    def dump(n: int) -> str:
        """A long text."""
        return "x" * n

    llm_server.queue(calls(("dump", {"n": 50_000})), Reply.text("done"))
    cell = run_one(agent(llm_server, tools=[dump], max_result_chars=30_000), Task("t", "?", "done"))
    told = llm_server.requests[1].body["messages"][-1]["content"]
    assert told == "x" * 30_000 + "…[truncated 20000 characters]"
    assert cell.response is not None
    kept = Trajectory.of(cell.response).tool_steps()[0].result
    assert kept == "x" * 2_000 + "…[truncated 28029 characters]"


def test_a_cost_limit_ends_the_cell_when_the_cost_is_unknown(llm_server: FakeOpenAI) -> None:
    counting(llm_server)
    client = LLMClient(base_url=llm_server.url, model="fake-model", api_key_env=[])
    provider = AgentProvider(client=client, tools=[add], limits={"cost_usd": 1.0}, cache=False)
    cell = run_one(provider)
    assert (cell.status, cell.error_category) == ("error", "cost_limit"), cell.error
    assert "unknown cost" in (cell.error or "")
    assert cell.response is not None
    assert len(Trajectory.of(cell.response).turns) == 1, "no tokens spent at no price go uncounted"
