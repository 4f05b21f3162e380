"""benchmarks/agent-tools: its tools, its answers (a scripted model that takes the right
path passes every task; one that answers without tools fails the path scorers), and the
CLI around an agent run: ``--model`` on the file, ``runs show --cell`` as a conversation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest

import benchkit
from benchkit import ProviderSpec, Suite
from benchkit.trajectory import Trajectory

from ._llm_server import FakeOpenAI, Reply
from ._support import REPO

BENCH = REPO / "benchmarks" / "agent-tools"

#: The right path for each question: batches of calls (one batch a turn), then the answer.
PATHS: dict[str, tuple[list[list[tuple[str, dict[str, Any]]]], str]] = {
    "multiply": ([[("calculate", {"expression": "17 * 23"})]], "17 times 23 is 391."),
    "power": ([[("calculate", {"expression": "2 ** 10 - 24"})]], "It is 1000."),
    "capital": ([[("lookup", {"table": "capitals", "key": "australia"})]], "Canberra."),
    "element": ([[("lookup", {"table": "elements", "key": "iron"})]], "Iron is 26."),
    "km-to-miles": ([[("convert", {"value": 10, "source": "km", "target": "mi"})]], "6.21 mi"),
    "fahrenheit": ([[("convert", {"value": 100, "source": "f", "target": "c"})]], "37.8 C"),
    "kilos": ([[("convert", {"value": 72, "source": "kg", "target": "lb"})]], "158.7 lb"),
    "half-marathon": (
        [
            [("convert", {"value": 42.195, "source": "km", "target": "mi"})],
            [("calculate", {"expression": "26.2189 / 2"})],
        ],
        "About 13.11 miles.",
    ),
    "groceries": (
        [
            [
                ("lookup", {"table": "prices_usd", "key": "coffee"}),
                ("lookup", {"table": "prices_usd", "key": "bread"}),
            ],
            [("calculate", {"expression": "3 * 3.75 + 2 * 2.25"})],
        ],
        "$15.75",
    ),
    "two-elements": (
        [
            [
                ("lookup", {"table": "elements", "key": "iron"}),
                ("lookup", {"table": "elements", "key": "gold"}),
            ],
            [("calculate", {"expression": "79 + 26"})],
        ],
        "105",
    ),
}


def _question_of(body: Mapping[str, Any]) -> str:
    return str(next(m["content"] for m in body["messages"] if m["role"] == "user"))


def perfect(questions: Mapping[str, str]) -> Any:
    """A model that takes each task's right path (its step: the replies so far)."""

    def respond(body: Mapping[str, Any]) -> Reply:
        task = questions[_question_of(body)]
        batches, answer = PATHS[task]
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if step < len(batches):
            return Reply.tools(*({"name": n, "arguments": a} for n, a in batches[step]))
        return Reply.text(answer)

    return respond


def scripted(suite: Suite, server: FakeOpenAI) -> Suite:
    (condition,) = suite.conditions
    assert isinstance(condition.provider, ProviderSpec)
    options = {**condition.provider.options, "model": "m", "base_url": server.url}
    options.update(api_key_env=[], cache=False)
    return attrs.evolve(
        suite, conditions=[attrs.evolve(condition, provider=ProviderSpec("agent", options))]
    )


def test_the_tools_answer_the_questions() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import tools  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(BENCH))
    assert tools.calculate("3 * 3.75 + 2 * 2.25") == "15.75"
    assert tools.calculate("2 ^ 10 - 24") == "1000"
    assert tools.lookup("capitals", "Australia") == "Canberra"
    assert tools.convert(100, "f", "c") == 37.7778
    with pytest.raises(ValueError, match="not arithmetic"):
        tools.calculate("__import__('os')")
    with pytest.raises(KeyError, match="has apple, bread"):
        tools.lookup("prices_usd", "caviar")


def test_the_right_path_passes_every_task_and_a_shortcut_fails_the_path(
    llm_server: FakeOpenAI,
) -> None:
    suite = benchkit.load(BENCH)
    questions = {str(t.input): t.id for t in suite.benchmark.iter_tasks()}
    assert len(questions) == 10
    llm_server.respond = perfect(questions)
    result = benchkit.run(scripted(suite, llm_server), store=False)
    failing = {
        c.task_id: (c.error, [s.reason for s in c.scores])
        for c in result.cells
        if c.status != "pass"
    }
    assert failing == {}
    calls = [len(Trajectory.of(c.response).tool_calls()) for c in result.cells if c.response]
    assert sorted(calls) == [1] * 7 + [2] + [3] * 2  # one to three calls a task

    # a model that knows every answer but calls no tool: right answers, wrong path
    llm_server.respond = lambda body: Reply.text(PATHS[questions[_question_of(body)]][1])
    shortcut = benchkit.run(scripted(suite, llm_server), store=False)
    assert all(c.status == "fail" for c in shortcut.cells)
    assert all(
        {s.name: s.passed for s in c.scores}
        == {"contains": True, "tool_order": False, "max_steps": True}
        for c in shortcut.cells
    )


def test_the_cli_runs_it_with_model_and_shows_a_cell_as_a_conversation(
    llm_server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = benchkit.load(BENCH)
    questions = {str(t.input): t.id for t in suite.benchmark.iter_tasks()}
    llm_server.respond = perfect(questions)
    env = {
        **os.environ,
        "OPENAI_BASE_URL": llm_server.url,
        "OPENAI_API_KEY": "test-key",
        "PYTHONPATH": str(REPO / "src"),
    }
    store = str(tmp_path / "s.db")

    def cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "benchkit", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    cli("run", str(BENCH), "--model", "fake-model", "-k", "groceries", "--store", store)
    shown = cli("runs", "show", "latest", "--cell", "groceries/agent/0", "--store", store)
    lines = shown.splitlines()
    start = lines.index("conversation: 3 turns")
    assert lines[start + 1].startswith("  system: You answer with the help of tools.")
    assert lines[start + 2] == "  user: What do 3 coffees and 2 loaves of bread cost in US dollars?"
    assert lines[start + 3].startswith("  turn 1 (10+5 tokens")
    assert lines[start + 4] == '    -> lookup {"table": "prices_usd", "key": "coffee"}'
    assert lines[start + 6].startswith("    <- lookup (") and lines[start + 6].endswith("ms): 3.75")
    assert "    <- calculate" in shown and "): 15.75" in shown
    assert any(
        line.startswith("  turn 3 (10+5 tokens") and line.endswith(": $15.75") for line in lines
    )
    body = json.loads(
        cli(
            "runs",
            "show",
            "latest",
            "--cell",
            "groceries/agent/0",
            "--format",
            "json",
            "--store",
            store,
        )
    )
    assert body["cell"]["status"] == "pass"
