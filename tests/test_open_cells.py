"""``benchkit.runner.open_cells``: the seam through which an executor runs a run's cells in
another process gives the cells the Runner makes in its own (#41)."""

from __future__ import annotations

from types import TracebackType

import pytest

import benchkit
from benchkit import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    MockProvider,
    Request,
    Response,
    Runner,
    RunOptions,
    Suite,
    Task,
)
from benchkit.runner import open_cells

pytestmark = pytest.mark.anyio


class Session:
    """A provider keeping a session: entered for the cells, closed after them."""

    def __init__(self) -> None:
        self.events: list[str] = []

    async def __aenter__(self) -> Session:
        self.events.append("enter")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.events.append("exit")

    async def invoke(self, request: Request) -> Response:
        assert self.events == ["enter"], "a cell ran outside the session"
        return Response(output=str(request.task.input).upper())


def suite_of(*conditions: Condition) -> Suite:
    tasks = [Task(f"t{i}", input=f"x{i}", expected=f"X{i}") for i in range(3)]
    bench = Benchmark("open", tasks=tasks, evaluators=[EvaluatorSpec("exact")])
    return Suite(bench, conditions=conditions, options=RunOptions(deterministic=True, epochs=2))


async def test_cells_opened_here_are_the_cells_the_runner_makes() -> None:
    upper = MockProvider(lambda r: str(r.task.input).upper())
    echo = MockProvider(lambda r: str(r.task.input))
    suite = suite_of(Condition("upper", upper), Condition("echo", echo))
    expected = await Runner().run(suite, run_id="r1")
    tasks = list(suite.benchmark.iter_tasks())
    async with open_cells(suite, run_id="r1") as cells:
        got = [
            await cells.run(index, tasks[index], cond_index, epoch)
            for index in range(len(tasks))
            for cond_index in range(len(suite.conditions))
            for epoch in range(suite.options.epochs)
        ]
    assert got == list(expected.cells)
    assert [c.status for c in got].count("pass") == 6  # `upper` passes, `echo` fails


async def test_a_session_provider_is_entered_around_the_cells_and_left_after() -> None:
    session = Session()
    suite = suite_of(Condition("s", session))
    async with open_cells(suite, run_id="r") as cells:
        cell = await cells.run(0, Task("t0", input="a", expected="A"), 0, 0)
        assert session.events == ["enter"]
    assert session.events == ["enter", "exit"]
    assert cell.status == "pass"


async def test_a_bad_spec_raises_on_opening_before_any_cell() -> None:
    bench = Benchmark("b", tasks=[Task("t")], evaluators=[EvaluatorSpec("no_such_evaluator")])
    suite = Suite(bench, conditions=[Condition("c", MockProvider(lambda r: "x"))])
    with pytest.raises(benchkit.RegistryError, match="unknown evaluator 'no_such_evaluator'"):
        async with open_cells(suite, run_id="r"):
            pytest.fail("the cells opened")
