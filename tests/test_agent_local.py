"""The agent loop against the real local model (SmolLM2-135M through llama.cpp): it ends
within its limits and its cell keeps a whole transcript and trajectory — whatever the tiny
model says, and whether or not it calls the tool well."""

from __future__ import annotations

import os

import pytest

import benchkit
from benchkit import Benchmark, CellResult, Condition, EvaluatorSpec, ProviderSpec, Suite, Task
from benchkit.llm._local import INSTALL_HINT
from benchkit.trajectory import ENDINGS, Trajectory

from ._support import REPO
from .test_local_model import ENV, HAVE_MODEL

CALCULATOR = str(REPO / "benchmarks" / "agent-tools" / "tools.py")


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip (fail in CI) when the embedded model is not installed; short replies."""
    if not HAVE_MODEL:
        if os.environ.get("CI"):
            pytest.fail(f"the local model is not installed: {INSTALL_HINT}")
        pytest.skip(f"the local model is not installed ({INSTALL_HINT})")
    monkeypatch.setenv("BENCHKIT_LOCAL_MAX_TOKENS", ENV["BENCHKIT_LOCAL_MAX_TOKENS"])


def check_whole(cell: CellResult, turns: int) -> Trajectory:
    """The cell ended in a known way within ``turns`` turns, and its transcript holds every
    reply, every call and every result its trajectory says it had."""
    assert cell.error_category in ("none", "assertion_failed", *ENDINGS), cell.error
    assert cell.response is not None, cell.error
    trajectory = Trajectory.of(cell.response)
    assert 1 <= len(trajectory.turns) <= turns
    assert cell.transcript is not None and not cell.transcript.truncated
    kinds = [e.kind for e in cell.transcript.events]
    assert kinds[:2] == ["request", "message"]
    assert kinds.count("response") == len(trajectory.turns)
    steps = trajectory.tool_steps()
    assert kinds.count("tool_call") == len(steps)
    assert kinds.count("tool_result") == len(steps)
    for step in steps:
        assert (step.result is None) != (step.error is None)
    if trajectory.ending == "answered":
        assert cell.response.output == (trajectory.final or "")
    else:
        assert cell.error_category == trajectory.ending
    return trajectory


@pytest.mark.slow
def test_the_loop_with_the_local_model_ends_within_its_limits(model: None) -> None:
    tools = [{"python": f"{CALCULATOR}:calculate"}]
    forced = {"type": "function", "function": {"name": "calculate"}}
    common = {"model": "local", "tools": tools, "max_tokens": 48, "limits": {"turns": 3}}
    suite = Suite(
        Benchmark(
            "agent-local",
            tasks=[Task("mul", input="Use the calculator: what is 12 * 7?", expected="84")],
            evaluators=[EvaluatorSpec("contains", {"keywords": ["84"]})],
        ),
        conditions=[
            # the model may answer at once (its chat template does not show it the tools)
            Condition("free", ProviderSpec("agent", common)),
            # llama.cpp's grammar makes every reply a call: the limits must end the loop
            Condition("forced", ProviderSpec("agent", {**common, "tool_choice": forced})),
        ],
    )
    result = benchkit.run(suite, store=False, timeout=240)
    free, forced_cell = result.cells
    check_whole(free, 3)
    trajectory = check_whole(forced_cell, 3)
    assert trajectory.ending != "answered"
    assert trajectory.tool_steps(), "a forced reply is a tool call"
