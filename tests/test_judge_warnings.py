"""Weak judges are called weak at run time: benchkit.judges.judge_warnings in every report."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from benchkit import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    MockProvider,
    Request,
    Runner,
    RunOptions,
    Suite,
    Task,
)
from benchkit.judges import judge_warnings
from benchkit.reports import to_markdown
from benchkit.results import RunResult

from ._llm_server import FakeOpenAI

pytestmark = pytest.mark.anyio

#: Ten tasks; the system answers the even ones right.
TASKS = [Task(f"t{i}", input=str(i), expected="yes") for i in range(10)]


def _system(request: Request) -> str:
    return "yes" if int(str(request.task.input)) % 2 == 0 else "no"


async def _run(server: FakeOpenAI) -> RunResult:
    judge = EvaluatorSpec(
        "llm_rubric",
        {
            "prompt": "Answer: {output}. Rate 0-10.",
            "base_url": server.url,
            "model": "j",
            "cache": False,
        },
    )
    exact = EvaluatorSpec("exact", {"value": "yes"})
    suite = Suite(
        Benchmark("b", tasks=TASKS, evaluators=[exact, judge]),
        (Condition("m", MockProvider(_system)),),
        RunOptions(concurrency=2),
    )
    return await Runner().run(suite)


def _score(body: Mapping[str, Any], right: int, wrong: int) -> str:
    answer = body["messages"][-1]["content"]
    return json.dumps({"score": right if "Answer: yes." in answer else wrong, "reason": "r"})


async def test_a_judge_agreeing_with_exact_is_not_called_weak(llm_server: FakeOpenAI) -> None:
    llm_server.respond = lambda body: _score(body, 9, 1)
    result = await _run(llm_server)
    assert result.warnings == ()


async def test_a_judge_at_chance_is_called_weak_in_every_report(llm_server: FakeOpenAI) -> None:
    llm_server.respond = lambda body: json.dumps({"score": 8, "reason": "always"})  # all pass
    result = await _run(llm_server)
    (line,) = result.warnings
    # 10 tasks: below the 20 an agreement interval needs to cover, so none, and it says so
    assert line == (
        "the judge llm_rubric agreed with exact on 5 of 10 cells, κ 0.00 "
        "(10 tasks, too few for an interval): its scores are not evidence"
    )
    assert f"**Warning:** {line}" in to_markdown(result)


async def test_a_judge_that_often_gives_no_verdict_is_called_weak(llm_server: FakeOpenAI) -> None:
    llm_server.respond = lambda body: (
        "I cannot say" if "Answer: no." in body["messages"][0]["content"] else _score(body, 9, 1)
    )
    result = await _run(llm_server)
    agg = result.aggregate("m")
    assert (agg.unjudged, agg.passed, agg.pass_rate) == (5, 5, 1.0)
    assert any(
        w.startswith("the judge llm_rubric gave no verdict on 5 of 10 cells (not_json ×5)")
        for w in result.warnings
    )


async def test_a_judge_alone_that_gives_every_cell_one_score_is_called_weak(
    llm_server: FakeOpenAI,
) -> None:
    # a run of judges only (no exact to agree with), the local model's failure offline:
    # the same score for every answer, right or wrong
    llm_server.respond = lambda body: json.dumps({"score": 7, "reason": "fine"})
    judge = EvaluatorSpec(
        "llm_rubric",
        {
            "prompt": "Answer: {output}. Rate 0-10.",
            "base_url": llm_server.url,
            "model": "j",
            "cache": False,
        },
    )
    suite = Suite(
        Benchmark("b", tasks=TASKS, evaluators=[judge]),
        (Condition("m", MockProvider(_system)),),
        RunOptions(concurrency=2),
    )
    result = await Runner().run(suite)
    assert result.warnings == (
        "the judge llm_rubric gave all 10 cells it judged the same score, 0.70: it told no "
        "answer from another, so its scores are not evidence unless every answer deserved "
        "that score (rate a few cells to know which)",
    )
    # nine cells are too few to say it; a judge whose scores vary is not called out
    assert judge_warnings(result.cells[:9]) == ()
    llm_server.respond = lambda body: _score(body, 9, 1)
    assert (await Runner().run(suite)).warnings == ()
