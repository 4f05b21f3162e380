"""CodeForge metrics against the local OpenAI-compatible server: scores from scripted judge
replies, judge failures as errors, empty outputs, and the tool-call comparison modes."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchkit.errors import ConfigError
from benchkit.formats.codeforge._metrics import (
    CORRECTNESS_CRITERIA,
    TOOL_CORRECTNESS_CRITERIA,
    AnswerRelevancy,
    ContextualPrecision,
    Faithfulness,
    GEvalMetric,
    ToolCorrectness,
    compare_tool_calls,
    judge_client,
    render_prompt,
    weighted_precision,
)
from benchkit.llm import LLMClient
from benchkit.model import Response, Task, ToolCall
from benchkit.registry import default_registries
from benchkit.results import Score

from ._llm_server import FakeOpenAI, Reply

pytestmark = pytest.mark.anyio

QUESTION = "Write `add(a, b)` in Python."
EXPECTED = "def add(a, b):\n    return a + b\n"
ANSWER = "def add(a, b):\n    return a + b"
CONTEXT = ("Python functions are defined with def.", "The + operator adds numbers.", "Cats purr.")
TASK = Task("t1", input=QUESTION, expected=EXPECTED, context=CONTEXT)


def client(server: FakeOpenAI) -> LLMClient:
    return LLMClient(
        base_url=server.url, model="judge", cache=None, backoff_base=0.01, max_retries=1
    )


def reply(data: Any) -> Reply:
    return Reply.text(json.dumps(data))


def prompt_of(server: FakeOpenAI, index: int) -> str:
    content: str = server.requests[index].body["messages"][0]["content"]
    return content


def schema_name(server: FakeOpenAI, index: int) -> str:
    name: str = server.requests[index].body["response_format"]["json_schema"]["name"]
    return name


# --------------------------------------------------------------------------- G-Eval


async def test_correctness_generates_steps_then_scores(llm_server: FakeOpenAI) -> None:
    llm_server.queue(
        reply({"steps": ["Compare the code", "Check the return value"]}),
        reply({"score": 7, "reason": "Close, but the newline differs."}),
    )
    metric = GEvalMetric(client=client(llm_server))
    score = await metric.evaluate(TASK, Response(ANSWER))
    assert (score.name, score.value, score.passed) == ("correctness", 0.7, True)
    assert score.reason == "Close, but the newline differs." and score.error is None
    assert score.details["raw_score"] == 7
    assert score.details["evaluation_steps"] == ["Compare the code", "Check the return value"]
    assert score.details["usage"] == {"prompt_tokens": 20, "completion_tokens": 10}
    assert [schema_name(llm_server, i) for i in (0, 1)] == ["codeforge_steps", "codeforge_score"]
    steps_prompt, score_prompt = prompt_of(llm_server, 0), prompt_of(llm_server, 1)
    assert CORRECTNESS_CRITERIA in steps_prompt
    assert "the Actual Output and Expected Output" in steps_prompt
    assert "1. Compare the code\n2. Check the return value" in score_prompt
    assert f"Actual Output:\n{ANSWER}\n\nExpected Output:\n{EXPECTED}" in score_prompt
    assert QUESTION not in score_prompt  # correctness shows the judge the outputs only
    body = llm_server.requests[1].body
    assert body["temperature"] == 0.0
    # bounded for a grammar: the score one of 0..10, the reason of limited length
    sent = body["response_format"]["json_schema"]["schema"]
    assert sent["properties"]["score"] == {"type": "integer", "enum": list(range(11))}
    assert sent["properties"]["reason"]["maxLength"] > 0


def steps_or_full_marks(body: Mapping[str, Any]) -> Reply:
    """Steps that differ from the first (queued) ones, so a second generation would show."""
    if body["response_format"]["json_schema"]["name"] == "codeforge_steps":
        return reply({"steps": ["asked again"]})
    return reply({"score": 10, "reason": "ok"})


async def _evaluate_into(metric: GEvalMetric, scores: list[Score]) -> None:
    scores.append(await metric.evaluate(TASK, Response(ANSWER)))


async def test_steps_are_generated_once_for_the_run(llm_server: FakeOpenAI) -> None:
    llm_server.queue(Reply.text('{"steps": ["only once"]}', delay=0.05))
    llm_server.respond = steps_or_full_marks
    metric = GEvalMetric(client=client(llm_server))
    scores: list[Score] = []
    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(_evaluate_into, metric, scores)
    names = [schema_name(llm_server, i) for i in range(len(llm_server.requests))]
    assert names.count("codeforge_steps") == 1 and names.count("codeforge_score") == 5
    assert all(s.value == 1.0 and s.details["evaluation_steps"] == ["only once"] for s in scores)


async def test_given_steps_skip_generation(llm_server: FakeOpenAI) -> None:
    llm_server.queue(reply({"score": 3, "reason": "weak"}))
    metric = GEvalMetric(
        evaluation_steps=["Is it polite?"],
        params=["input", "actual_output"],
        name="politeness",
        threshold=0.5,
        client=client(llm_server),
    )
    score = await metric.evaluate(TASK, Response("no"))
    assert (score.name, score.value, score.passed) == ("politeness", 0.3, False)
    assert len(llm_server.requests) == 1
    assert f"Input:\n{QUESTION}\n\nActual Output:\nno" in prompt_of(llm_server, 0)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('```json\n{"score": 9, "reason": "fine"}\n```', 0.9),
        ('Here you go: {"score": 0, "reason": "wrong"} Hope it helps.', 0.0),
        ('{"score": 10.0, "reason": "integral float"}', 1.0),
    ],
)
async def test_json_may_be_fenced_or_wrapped(
    llm_server: FakeOpenAI, text: str, value: float
) -> None:
    llm_server.queue(Reply.text(text))
    metric = GEvalMetric(evaluation_steps=["s"], client=client(llm_server))
    score = await metric.evaluate(TASK, Response(ANSWER))
    assert score.value == value and score.error is None


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("Score: 8", "the reply is not JSON"),
        ('{"score": 8}', "'reason' is a required property"),
        ('{"score": 11, "reason": "x"}', "at $.score: 11 is greater than the maximum of 10"),
        ('{"score": 7.5, "reason": "x"}', "at $.score: 7.5 is not of type 'integer'"),
        ('{"score": "8", "reason": "x"}', "is not of type 'integer'"),
        ("", "the reply is empty"),
    ],
)
async def test_malformed_judge_json_is_a_judge_error(
    llm_server: FakeOpenAI, text: str, why: str
) -> None:
    llm_server.queue(Reply.text(text), Reply.text(text))
    metric = GEvalMetric(evaluation_steps=["s"], client=client(llm_server))
    score = await metric.evaluate(TASK, Response(ANSWER))
    assert score.value is None and not score.passed
    assert score.error is not None and score.error.startswith("judge reply could not be used")
    assert why in score.error and f'"{text}"' in score.error
    assert score.details["replies"] == [{"prompt": "geval_score", "reply": text}] * 2
    assert score.details["judge_error"] in ("not_json", "schema_mismatch", "empty_reply")
    retry = llm_server.requests[1].body["messages"]
    assert why in retry[-1]["content"]  # asked once more, shown the complaint


async def test_bad_steps_are_an_error_and_are_asked_for_again(llm_server: FakeOpenAI) -> None:
    llm_server.queue(
        reply({"steps": []}),
        reply({"steps": []}),
        reply({"steps": ["s"]}),
        reply({"score": 5, "reason": ""}),
    )
    metric = GEvalMetric(client=client(llm_server))
    first = await metric.evaluate(TASK, Response(ANSWER))
    assert first.value is None and first.error is not None
    assert "schema at $.steps" in first.error
    second = await metric.evaluate(TASK, Response(ANSWER))
    assert second.value == 0.5 and len(llm_server.requests) == 4


async def test_a_failed_request_is_a_judge_error(llm_server: FakeOpenAI) -> None:
    llm_server.queue(Reply.error(500), Reply.error(500))
    metric = GEvalMetric(evaluation_steps=["s"], client=client(llm_server))
    score = await metric.evaluate(TASK, Response(ANSWER))
    assert score.value is None and score.error is not None
    assert score.error.startswith("judge request failed: HTTP 500")
    assert score.error.endswith("(geval_score)")
    assert score.details["judge_error"] == "request_failed"


@pytest.mark.parametrize(
    "make",
    [
        lambda c: GEvalMetric(client=c),
        lambda c: Faithfulness(client=c),
        lambda c: AnswerRelevancy(client=c),
    ],
)
@pytest.mark.parametrize("output", ["", "  \n", None])
async def test_empty_output_scores_zero_without_asking(
    llm_server: FakeOpenAI, make: Any, output: str | None
) -> None:
    metric = make(client(llm_server))
    score = await metric.evaluate(TASK, Response(output))
    assert (score.value, score.passed, score.error) == (0.0, False, None)
    assert score.reason is not None and score.reason.startswith("empty actual output")
    assert score.details == {"empty_output": True}
    assert llm_server.requests == []


# --------------------------------------------------------------------------- faithfulness


async def test_faithfulness_counts_claims_not_contradicted(llm_server: FakeOpenAI) -> None:
    claims = ["add is defined with def", "it returns a + b", "it prints", "cats bark"]
    llm_server.queue(
        reply({"claims": claims}),
        reply({"truths": ["Functions are defined with def.", "+ adds numbers.", "Cats purr."]}),
        reply(
            {
                "verdicts": [
                    {"verdict": "yes"},
                    {"verdict": "IDK", "reason": "not covered"},
                    {"verdict": "idk"},
                    {"verdict": " No ", "reason": "cats purr"},
                ]
            }
        ),
    )
    score = await Faithfulness(client=client(llm_server)).evaluate(TASK, Response(ANSWER))
    assert (score.name, score.value, score.passed) == ("faithfulness", 0.75, True)
    assert score.reason == "3 of 4 claims are not contradicted by the retrieval context"
    assert score.details["contradicted"] == [{"claim": "cats bark", "reason": "cats purr"}]
    assert [schema_name(llm_server, i) for i in range(3)] == [
        "codeforge_claims",
        "codeforge_truths",
        "codeforge_verdicts",
    ]
    assert ANSWER in prompt_of(llm_server, 0)
    assert json.dumps(list(CONTEXT), indent=2) in prompt_of(llm_server, 1)
    verdict_prompt = prompt_of(llm_server, 2)
    assert "Give exactly 4 verdicts" in verdict_prompt
    assert '"Cats purr."' in verdict_prompt and '"cats bark"' in verdict_prompt


async def test_faithfulness_without_claims_is_one(llm_server: FakeOpenAI) -> None:
    llm_server.queue(reply({"claims": []}))
    score = await Faithfulness(client=client(llm_server)).evaluate(TASK, Response(ANSWER))
    assert score.value == 1.0 and len(llm_server.requests) == 1


async def test_faithfulness_needs_context_and_matching_verdicts(llm_server: FakeOpenAI) -> None:
    metric = Faithfulness(client=client(llm_server))
    score = await metric.evaluate(Task("t", input="q"), Response(ANSWER))
    assert score.value is None and score.error is not None
    assert "no retrieval context" in score.error and llm_server.requests == []
    llm_server.queue(
        reply({"claims": ["a", "b"]}),
        reply({"truths": []}),
        reply({"verdicts": [{"verdict": "yes"}]}),
        reply({"verdicts": [{"verdict": "yes"}]}),
    )
    score = await metric.evaluate(TASK, Response(ANSWER))
    assert score.value is None and score.error is not None
    assert "it gives 1 verdicts for 2 items" in score.error
    assert score.error.endswith("(faithfulness_verdicts)")
    assert score.details["judge_error"] == "invalid_verdict"
    assert len(score.details["replies"]) == 4
    sent = llm_server.requests[2].body["response_format"]["json_schema"]["schema"]
    assert (
        sent["properties"]["verdicts"]["minItems"]
        == sent["properties"]["verdicts"]["maxItems"]
        == 2
    )


async def test_verdicts_outside_the_scale_are_errors(llm_server: FakeOpenAI) -> None:
    llm_server.queue(
        reply({"claims": ["a"]}),
        reply({"truths": []}),
        reply({"verdicts": [{"verdict": "maybe"}]}),
        reply({"verdicts": [{"verdict": "maybe"}]}),
    )
    score = await Faithfulness(client=client(llm_server)).evaluate(TASK, Response(ANSWER))
    assert score.value is None and score.error is not None
    assert "$.verdicts[0].verdict: 'maybe' is not one of ['yes', 'no', 'idk']" in score.error


# --------------------------------------------------------------------------- answer relevancy


async def test_answer_relevancy_counts_relevant_statements(llm_server: FakeOpenAI) -> None:
    statements = ["Here is add.", "def add(a, b): return a + b", "Paris is in France."]
    llm_server.queue(
        reply({"statements": statements}),
        reply(
            {
                "verdicts": [
                    {"verdict": "idk"},
                    {"verdict": "yes"},
                    {"verdict": "no", "reason": "off topic"},
                ]
            }
        ),
    )
    score = await AnswerRelevancy(client=client(llm_server)).evaluate(TASK, Response(ANSWER))
    assert score.value == pytest.approx(2 / 3) and score.passed
    assert score.details["irrelevant"] == [
        {"statement": "Paris is in France.", "reason": "off topic"}
    ]
    assert QUESTION in prompt_of(llm_server, 1) and "Give exactly 3 verdicts" in prompt_of(
        llm_server, 1
    )
    assert EXPECTED not in prompt_of(llm_server, 1)


async def test_answer_relevancy_without_statements_is_one(llm_server: FakeOpenAI) -> None:
    llm_server.queue(reply({"statements": []}))
    score = await AnswerRelevancy(client=client(llm_server)).evaluate(TASK, Response("..."))
    assert score.value == 1.0 and score.reason == "the output makes no statement"


# --------------------------------------------------------------------------- contextual precision


@pytest.mark.parametrize(
    ("verdicts", "value"),
    [
        (["yes", "no", "yes"], (1 + 2 / 3) / 2),
        (["no", "yes", "yes"], (1 / 2 + 2 / 3) / 2),
        (["Yes", "yes", "NO"], 1.0),
        (["no", "no", "no"], 0.0),
    ],
)
async def test_contextual_precision_is_rank_weighted(
    llm_server: FakeOpenAI, verdicts: list[str], value: float
) -> None:
    llm_server.queue(reply({"verdicts": [{"verdict": v, "reason": "r"} for v in verdicts]}))
    score = await ContextualPrecision(client=client(llm_server)).evaluate(TASK, Response(""))
    assert score.value == pytest.approx(value) and score.error is None
    prompt = prompt_of(llm_server, 0)
    assert QUESTION in prompt and EXPECTED in prompt and "Give exactly 3 verdicts" in prompt
    assert schema_name(llm_server, 0) == "codeforge_relevance"


async def test_contextual_precision_errors(llm_server: FakeOpenAI) -> None:
    metric = ContextualPrecision(client=client(llm_server))
    no_context = await metric.evaluate(Task("t", input="q", expected="a"), Response("x"))
    assert no_context.error is not None and "no retrieval context" in no_context.error
    llm_server.queue(*[reply({"verdicts": [{"verdict": "yes"}]})] * 2)
    short = await metric.evaluate(TASK, Response("x"))
    assert short.error is not None and "it gives 1 verdicts for 3 items" in short.error
    llm_server.queue(*[reply({"verdicts": [{"verdict": "idk"}] * 3})] * 2)
    idk = await metric.evaluate(TASK, Response("x"))
    assert idk.error is not None and "is not one of ['yes', 'no']" in idk.error


@given(st.lists(st.booleans(), max_size=12), st.data())
def test_weighted_precision_rewards_relevant_items_ranked_first(
    relevant: list[bool], data: st.DataObject
) -> None:
    value = weighted_precision(relevant)
    assert 0.0 <= value <= 1.0
    hits = sum(relevant)
    assert (value == 0.0) == (hits == 0)
    assert weighted_precision(sorted(relevant, reverse=True)) == (1.0 if hits else 0.0)
    # moving a relevant item one rank up never lowers the score
    swaps = [i for i in range(1, len(relevant)) if relevant[i] and not relevant[i - 1]]
    if swaps:
        i = data.draw(st.sampled_from(swaps))
        better = relevant.copy()
        better[i - 1], better[i] = True, False
        assert weighted_precision(better) >= value


# --------------------------------------------------------------------------- tool calls

READ = ToolCall("read_file", {"path": "a.py"})
WRITE = ToolCall("write_file", {"path": "b.txt", "content": "x"})
SEARCH = ToolCall("search", {"query": "py"})


@pytest.mark.parametrize(
    ("expected", "actual", "exact", "ordered", "unordered", "f1"),
    [
        ([READ, WRITE], [READ, WRITE], 1, 1, 1, 1.0),
        ([READ, WRITE], [WRITE, READ], 0, 0, 1, 1.0),
        ([READ, WRITE], [READ, SEARCH, WRITE], 0, 1, 0, 0.8),
        ([READ, WRITE], [READ], 0, 0, 0, 2 / 3),
        ([READ], [SEARCH], 0, 0, 0, 0.0),
        ([], [], 1, 1, 1, 1.0),
        ([], [READ], 0, 1, 0, 0.0),
        ([READ], [], 0, 0, 0, 0.0),
        ([READ, READ], [READ], 0, 0, 0, 2 / 3),
    ],
)
def test_tool_comparison_modes(
    expected: list[ToolCall],
    actual: list[ToolCall],
    exact: int,
    ordered: int,
    unordered: int,
    f1: float,
) -> None:
    for mode, value in (("exact", exact), ("ordered", ordered), ("unordered", unordered)):
        assert compare_tool_calls(expected, actual, mode=mode).value == value, mode
    assert compare_tool_calls(expected, actual, mode="f1").value == pytest.approx(f1)


def test_argument_matching() -> None:
    made = ToolCall("read_file", {"path": "a.py", "encoding": "utf-8", "opts": {"x": 1, "y": 2}})
    wanted = ToolCall("read_file", {"path": "a.py", "opts": {"x": 1.0}})
    assert compare_tool_calls([wanted], [made], arguments="exact").value == 0.0
    assert compare_tool_calls([wanted], [made], arguments="subset").value == 1.0
    assert compare_tool_calls([ToolCall("read_file")], [made], arguments="ignore").value == 1.0
    assert compare_tool_calls([ToolCall("other")], [made], arguments="ignore").value == 0.0
    # JSON equality: 1 == 1.0, but true is not 1 and "1" is not 1
    assert compare_tool_calls([ToolCall("f", {"n": 1})], [ToolCall("f", {"n": 1.0})]).value == 1
    assert compare_tool_calls([ToolCall("f", {"n": 1})], [ToolCall("f", {"n": True})]).value == 0
    assert compare_tool_calls([ToolCall("f", {"n": 1})], [ToolCall("f", {"n": "1"})]).value == 0
    assert (
        compare_tool_calls(
            [ToolCall("f", {"n": [1]})], [ToolCall("f", {"n": [1, 2]})], arguments="subset"
        ).value
        == 0
    )


def test_unknown_modes_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="mode 'fuzzy' is not known"):
        ToolCorrectness(mode="fuzzy")
    with pytest.raises(ConfigError, match="arguments 'loose' is not known"):
        ToolCorrectness(arguments="loose")
    with pytest.raises(ConfigError, match="G-Eval params"):
        GEvalMetric(
            params=["output"],
            client=LLMClient(base_url="http://127.0.0.1:1/v1", model="m", cache=None),
        )


tool_calls = st.lists(
    st.builds(
        ToolCall,
        st.sampled_from(["a", "b", "c"]),
        st.dictionaries(st.sampled_from(["x", "y"]), st.integers(0, 2), max_size=2),
    ),
    max_size=5,
)


@settings(max_examples=200)
@given(tool_calls, tool_calls, st.sampled_from(["exact", "subset", "ignore"]), st.randoms())
def test_tool_comparison_properties(
    expected: list[ToolCall], actual: list[ToolCall], arguments: str, rnd: Any
) -> None:
    result = compare_tool_calls(expected, actual, mode="f1", arguments=arguments)
    assert 0.0 <= result.f1 <= 1.0
    assert result.matched + len(result.missing) == len(expected)
    assert result.matched + len(result.unexpected) == len(actual)
    assert result.exact <= result.ordered and result.exact <= result.unordered
    assert result.unordered == (result.f1 == 1.0)
    # order never matters to unordered and f1
    shuffled = actual.copy()
    rnd.shuffle(shuffled)
    again = compare_tool_calls(expected, shuffled, mode="f1", arguments=arguments)
    assert (again.f1, again.unordered, again.matched) == (
        result.f1,
        result.unordered,
        result.matched,
    )
    # a list always matches itself; adding calls keeps it in order but not exact
    assert compare_tool_calls(expected, expected, mode="exact", arguments=arguments).value == 1.0
    extended = compare_tool_calls(
        expected, [*expected, *actual], mode="ordered", arguments=arguments
    )
    assert extended.value == 1.0
    # looser argument rules match at least as much
    looser = compare_tool_calls(expected, actual, mode="f1", arguments="ignore")
    assert looser.matched >= result.matched


async def test_tool_correctness_scores_the_response_calls() -> None:
    task = Task("t", input="q", expected_tool_calls=(READ, WRITE))
    response = Response("", tool_calls=(WRITE, ToolCall("read_file", {"path": "z.py"})))
    score = await ToolCorrectness(mode="f1").evaluate(task, response)
    assert score.value == 0.5 and score.passed
    assert score.details["missing"] == [{"name": "read_file", "arguments": {"path": "a.py"}}]
    assert score.details["unexpected"] == [{"name": "read_file", "arguments": {"path": "z.py"}}]
    assert score.reason is not None and "missing read_file" in score.reason
    swapped = await ToolCorrectness().evaluate(task, Response("", tool_calls=(WRITE, READ)))
    assert swapped.value == 0.0 and not swapped.passed
    assert swapped.reason is not None and swapped.reason.endswith("the calls are out of order")
    assert swapped.details["unordered"] is True


async def test_tool_correctness_judge_mode_shows_both_lists(llm_server: FakeOpenAI) -> None:
    llm_server.queue(
        reply({"steps": ["Compare names"]}), reply({"score": 6, "reason": "args differ"})
    )
    metric = ToolCorrectness(mode="judge", client=client(llm_server))
    task = Task("t", input="Read a.py", expected_tool_calls=(READ,))
    made = ToolCall("read_file", {"path": "b.py"})
    score = await metric.evaluate(task, Response("", tool_calls=(made,)))
    assert (score.name, score.value, score.reason) == ("tool_correctness", 0.6, "args differ")
    assert TOOL_CORRECTNESS_CRITERIA in prompt_of(llm_server, 0)
    prompt = prompt_of(llm_server, 1)
    assert "Input:\nRead a.py" in prompt
    assert re.search(r"Expected Tool Calls:\n\[\s*\{\s*\"name\": \"read_file\"", prompt)
    assert '"path": "a.py"' in prompt and '"path": "b.py"' in prompt
    assert "Actual Tool Calls:" in prompt


# --------------------------------------------------------------------------- plumbing


def test_registered_names_build_the_metrics() -> None:
    registry = default_registries().evaluators
    expected = {
        "codeforge_correctness": GEvalMetric,
        "codeforge_tool_correctness": ToolCorrectness,
        "codeforge_faithfulness": Faithfulness,
        "codeforge_answer_relevancy": AnswerRelevancy,
        "codeforge_contextual_precision": ContextualPrecision,
    }
    for name, cls in expected.items():
        assert registry.get(name) is cls
    built = registry.build(
        "codeforge_faithfulness",
        {"base_url": "http://127.0.0.1:9/v1", "model": "j", "cache": False},
    )
    assert isinstance(built, Faithfulness) and built.client.model == "j"


@pytest.mark.parametrize(
    ("name", "fields"),
    [
        ("geval_steps", ("criteria", "parameters")),
        ("geval_score", ("steps", "parameters", "test_case")),
        ("faithfulness_claims", ("actual_output",)),
        ("faithfulness_truths", ("context",)),
        ("faithfulness_verdicts", ("truths", "claims", "count")),
        ("answer_relevancy_statements", ("actual_output",)),
        ("answer_relevancy_verdicts", ("input", "statements", "count")),
        ("contextual_precision_verdicts", ("input", "expected_output", "context", "count")),
    ],
)
def test_prompts_take_exactly_their_fields(name: str, fields: tuple[str, ...]) -> None:
    # each value holds a placeholder of its own: filling is one pass, so it stays as is
    values = {f: f"<{f} {{{{input}}}}>" for f in fields}
    text = render_prompt(name, **values)
    assert all(v in text for v in values.values())
    assert re.findall(r"\{\{(\w+)\}\}", text) == ["input"] * len(fields)
    with pytest.raises(KeyError, match=f"needs the field '{fields[-1]}'"):
        render_prompt(name, **dict.fromkeys(fields[:-1], ""))


def test_judge_endpoint_comes_from_codeforge_variables_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("CODEFORGE_JUDGE_MODEL", "LITELLM_BASE_URL", "LITELLM_MASTER_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:7/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    plain = judge_client(cache=False)
    assert (plain.endpoint.base_url, plain.model, plain.endpoint.key_source) == (
        "http://127.0.0.1:7/v1",
        "gpt-4o",
        "OPENAI_API_KEY",
    )
    monkeypatch.setenv("CODEFORGE_JUDGE_MODEL", "openai/gpt-4o-mini")
    monkeypatch.setenv("LITELLM_BASE_URL", "http://127.0.0.1:4000/v1")
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-litellm")
    forge = judge_client(cache=False)
    assert (forge.endpoint.base_url, forge.model, forge.endpoint.key_source) == (
        "http://127.0.0.1:4000/v1",
        "openai/gpt-4o-mini",
        "LITELLM_MASTER_KEY",
    )
    given_ = judge_client(model="m", base_url="http://127.0.0.1:9/v1", cache=False)
    assert (given_.endpoint.base_url, given_.model) == ("http://127.0.0.1:9/v1", "m")
