"""A recorded cell is bounded: a huge judge reply, output or message is cut with a visible
mark, while a normal cell is recorded exactly as before (the same objects, the same JSON)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from benchkit import (
    Benchmark,
    CallableProvider,
    Condition,
    EvaluatorSpec,
    MockProvider,
    Response,
    Runner,
    Score,
    Suite,
    Task,
    Verdict,
)
from benchkit._bounds import clip, clip_json
from benchkit._celljson import cell_json
from benchkit.runner import MAX_OUTPUT_CHARS, MAX_TEXT_CHARS
from benchkit.runner._bounded import bounded_response, bounded_scores, bounded_verdicts
from benchkit.store._records import ENCODER as STORE_ENCODER

from ._llm_server import FakeOpenAI, Reply

pytestmark = pytest.mark.anyio


async def test_a_huge_unparseable_judge_reply_is_not_copied_whole(llm_server: FakeOpenAI) -> None:
    reply = "no score here " * 200_000  # 2.8 MB, under the client's reply cap
    llm_server.respond = lambda body: Reply.text(reply)
    spec = EvaluatorSpec("llm_judge", {"base_url": llm_server.url, "model": "j", "cache": False})
    suite = Suite(
        Benchmark("b", tasks=[Task(f"t{i}", input=i) for i in range(2)], evaluators=[spec]),
        (Condition("m", MockProvider(lambda r: "out")),),
    )
    result = await Runner().run(suite)
    for cell in result.cells:
        assert cell.status == "error" and cell.error_category == "judge_error"
        [score] = cell.scores
        for raw in score.details["replies"]:  # the reply and its retry's
            assert raw.startswith("no score here") and len(raw) < MAX_TEXT_CHARS + 100
            assert re.search(r"…\[truncated 27\d{5} characters\]$", raw)
        assert len(cell_json(cell, STORE_ENCODER)) < 3 * MAX_TEXT_CHARS


async def test_a_huge_output_is_cut_after_the_evaluators_saw_it_whole() -> None:
    big = "x" * (MAX_OUTPUT_CHARS + 5)
    task = Task("t", input=None, expected=big)
    suite = Suite(
        Benchmark("b", tasks=[task], evaluators=[EvaluatorSpec("exact")]),
        (Condition("c", CallableProvider(lambda x: big)),),
    )
    [cell] = (await Runner().run(suite)).cells
    assert cell.status == "pass"  # `exact` compared the whole output
    assert cell.response is not None
    assert cell.response.output == "x" * MAX_OUTPUT_CHARS + "…[truncated 5 characters]"


def test_normal_cells_are_recorded_as_they_are() -> None:
    response = Response(output={"a": ["b", 1]}, metadata={"text": "t"}, raw={"r": "s"})
    scores = (Score("s", 1.0, True, reason="ok", details={"replies": ["7"]}),)
    verdicts = (Verdict("v", True, message="fine", stdout_excerpt="out", details={"k": "v"}),)
    assert bounded_response(response) is response
    assert bounded_scores(scores) is scores
    assert bounded_verdicts(verdicts) is verdicts


def test_long_texts_in_scores_and_verdicts_are_cut_with_a_mark() -> None:
    long = "e" * (MAX_TEXT_CHARS + 10)
    mark = "…[truncated 10 characters]"
    short = Score("ok", 1.0, True, reason="fine")
    [first, second] = bounded_scores(
        (short, Score("s", None, False, reason=long, error=long, details={"x": [long]}))
    )
    assert first is short
    assert second.reason == second.error == second.details["x"][0] == long[:MAX_TEXT_CHARS] + mark
    [verdict] = bounded_verdicts((Verdict("v", False, message=long, stderr_excerpt=long),))
    assert verdict.message == verdict.stderr_excerpt == long[:MAX_TEXT_CHARS] + mark
    response = bounded_response(Response(output="o", metadata={"text": long}))
    assert response.metadata["text"].endswith(mark) and response.output == "o"
    json.dumps(response.metadata)  # still JSON


def test_clip_json_copies_only_what_it_cuts() -> None:
    value: dict[str, Any] = {"keep": {"a": "short"}, "cut": ["abcdefghi", 1, None]}
    clipped = clip_json(value, 6)
    assert clipped["keep"] is value["keep"]
    assert clipped["cut"] == ["abcdef…[truncated 3 characters]", 1, None]
    assert value["cut"][0] == "abcdefghi"  # the original is untouched
    assert clip("abc", 3) == "abc"
