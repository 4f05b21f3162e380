"""Plug-ins are checked when built, before the first cell; bad outputs are clear cell errors."""

from __future__ import annotations

from typing import Any

import pytest

from benchkit import (
    CallableProvider,
    ConfigError,
    RegistryError,
    Response,
    Runner,
    Score,
    Task,
)
from benchkit.registry import Registries, default_registries

from ._support import make_suite

pytestmark = pytest.mark.anyio


def registries_with(**evaluators: Any) -> Registries:
    regs = default_registries().copy()
    for name, factory in evaluators.items():
        regs.evaluators.add(name, factory)
    return regs


class NoEvaluate:
    def score(self, task: Task, response: Response) -> Score:
        return Score(name="x", value=1.0, passed=True)


class ReturnsFloat:
    async def evaluate(self, task: Task, response: Response) -> float:
        return 1.0


class BrokenInit:
    def __init__(self, threshold: float = 0.5) -> None:
        self.threshold = float(len(threshold))  # type: ignore[arg-type]  # its own bug


async def test_an_evaluator_without_evaluate_stops_the_run_before_any_cell() -> None:
    calls: list[int] = []

    def system(x: int) -> str:
        calls.append(x)
        return str(x)

    suite = make_suite({"s": CallableProvider(system)}, evaluator="no_evaluate")
    with pytest.raises(RegistryError, match=r"'no_evaluate' built 'NoEvaluate'.*no evaluate\(\)"):
        await Runner(registries=registries_with(no_evaluate=NoEvaluate)).run(suite)
    assert calls == []


async def test_an_evaluator_returning_a_non_score_stops_the_run_naming_it() -> None:
    suite = make_suite({"s": CallableProvider(str)}, n=20, evaluator="floaty", concurrency=1)
    runner = Runner(registries=registries_with(floaty=ReturnsFloat))
    with pytest.raises(ConfigError, match=r"evaluator 'floaty': evaluate\(\) returned float"):
        await runner.run(suite)
    assert runner.last_result is not None and len(runner.last_result.cells) == 0


def test_a_plugins_own_type_error_is_not_called_rejected_options() -> None:
    regs = registries_with(broken=BrokenInit)
    with pytest.raises(ConfigError, match="failed while being built: TypeError") as info:
        regs.evaluators.build("broken", {"threshold": 0.9})
    assert "rejected its options" not in str(info.value)
    with pytest.raises(ConfigError, match="rejected its options"):
        regs.evaluators.build("broken", {"treshold": 0.9})


def test_registering_cannot_replace_a_built_in_by_accident() -> None:
    regs = default_registries().copy()
    with pytest.raises(RegistryError, match="'exact' is built in"):
        regs.evaluators.add("exact", ReturnsFloat)
    regs.evaluators.add("exact", ReturnsFloat, replace=True)
    assert regs.evaluators.get("exact") is ReturnsFloat
    assert default_registries().evaluators.get("exact") is not ReturnsFloat
    regs.evaluators.add("mine", NoEvaluate)
    regs.evaluators.add("mine", ReturnsFloat)  # one's own name: a notebook cell run twice
    assert regs.evaluators.get("mine") is ReturnsFloat


async def test_a_provider_output_that_is_not_json_is_a_clear_cell_error() -> None:
    outputs: dict[int, Any] = {0: object(), 1: {"answer": {1, 2}}, 2: "2", 3: ["3", None]}
    provider = CallableProvider(lambda x: outputs[x], thread=False)
    result = await Runner().run(make_suite({"s": provider}, n=4, concurrency=1))
    by_id = {c.task_id: c for c in result.cells}
    assert by_id["t0"].status == "error"
    assert "output is a object" in (by_id["t0"].error or "")
    assert "not a string or a JSON value" in (by_id["t1"].error or "")
    assert by_id["t2"].status == "pass"
    assert by_id["t3"].status == "fail"  # a JSON list: judged, not refused
