"""LLM judges against the local OpenAI-compatible server: prompts, parsing, errors."""

from __future__ import annotations

import pytest

from benchkit import (
    Benchmark,
    Condition,
    ConfigError,
    EvaluatorSpec,
    MockProvider,
    Request,
    Response,
    Runner,
    RunOptions,
    Suite,
    Task,
)
from benchkit.evaluators._judge import RubricJudge
from benchkit.formats.eval_skills._judge import (
    EVAL_SKILLS_SYSTEM_PROMPT,
    EvalSkillsJudge,
    eval_skills_user_prompt,
)
from benchkit.llm import LLMClient

from ._llm_server import FakeOpenAI, Reply

pytestmark = pytest.mark.anyio


def client(server: FakeOpenAI) -> LLMClient:
    return LLMClient(
        base_url=server.url, model="judge", cache=None, backoff_base=0.01, max_retries=1
    )


async def test_eval_skills_prompts_are_the_originals(llm_server: FakeOpenAI) -> None:
    llm_server.queue(Reply.text("8"), Reply.text("7"))
    judge = EvalSkillsJudge(judge_prompt="Rate relevance", client=client(llm_server))
    with_ref = await judge.evaluate(Task("t", expected="Paris"), Response("It is Paris"))
    without = await judge.evaluate(Task("t"), Response({"result": "x"}))
    first, second = (r.body["messages"] for r in llm_server.requests)
    assert first[0] == {"role": "system", "content": EVAL_SKILLS_SYSTEM_PROMPT}
    assert first[1]["content"] == (
        "Judge Criteria: Rate relevance\nReference Answer: Paris\nActual Output: It is Paris\n\n"
        "Score the actual output from 0 to 10 based on the criteria and reference.\n"
        "Respond with ONLY a number."
    )
    assert second[1]["content"] == (
        'Judge Criteria: Rate relevance\nActual Output: {"result":"x"}\n\n'
        "Score the actual output from 0 to 10 based on the criteria.\n"
        "Respond with ONLY a number."
    )
    assert (with_ref.value, with_ref.passed) == (0.8, True)
    assert (without.value, without.passed) == (0.7, True)
    assert llm_server.requests[0].body["temperature"] == 0.0


def test_default_criteria_and_falsy_reference() -> None:
    prompt = eval_skills_user_prompt(None, 0, "out")
    assert prompt.startswith("Judge Criteria: Evaluate the quality of the output.\nActual Output")
    assert "Reference" not in eval_skills_user_prompt({"k": 1}, "", "out")
    assert eval_skills_user_prompt({"k": 1}, "", "o").startswith('Judge Criteria: {"k":1}')


@pytest.mark.parametrize(
    ("reply", "value", "passed"),
    [
        ("8", 0.8, True),
        ("  8/10", 0.8, True),
        ('{"score": 7}', 0.7, True),
        ('```json\n{"score": 3}\n```', 0.3, False),
        (".5", 0.05, False),
        ("-3", 0.0, False),
        ('{"score": 1e3}', 1.0, True),
        ("**5**", 0.5, True),
    ],
)
async def test_eval_skills_reads_a_verdict_in_shape(
    llm_server: FakeOpenAI, reply: str, value: float, passed: bool
) -> None:
    llm_server.queue(Reply.text(reply))
    score = await EvalSkillsJudge(client=client(llm_server)).evaluate(Task("t"), Response("x"))
    assert score.value == pytest.approx(value)
    assert score.passed is passed and score.error is None
    sent = llm_server.requests[0].body["response_format"]["json_schema"]["schema"]
    assert sent["properties"]["score"]["enum"] == list(range(11))


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ("8, but the output is wrong", "not_json"),
        ("Score: 8 of 10 legs", "not_json"),
        ("", "empty_reply"),
        ("eight", "not_json"),
        ('{"rating": 8}', "schema_mismatch"),
    ],
)
async def test_a_reply_out_of_shape_is_a_judge_error_not_a_zero(
    llm_server: FakeOpenAI, reply: str, kind: str
) -> None:
    llm_server.respond = lambda body: reply
    score = await EvalSkillsJudge(client=client(llm_server)).evaluate(Task("t"), Response("x"))
    assert score.value is None and not score.passed
    assert score.details["judge_error"] == kind
    assert score.details["replies"] == [reply, reply]
    assert score.error is not None and score.error.startswith("judge reply could not be used")


async def test_a_retry_with_the_complaint_recovers_a_verdict(llm_server: FakeOpenAI) -> None:
    llm_server.queue(Reply.text("I would give it 8."), Reply.text('{"score": 8}'))
    score = await EvalSkillsJudge(client=client(llm_server)).evaluate(Task("t"), Response("x"))
    assert score.value == pytest.approx(0.8) and score.error is None
    assert score.details["replies"] == ["I would give it 8.", '{"score": 8}']
    retry = llm_server.requests[1].body["messages"]
    assert "the reply is not JSON" in retry[-1]["content"]


async def test_api_failure_is_a_judge_error(llm_server: FakeOpenAI) -> None:
    llm_server.queue(Reply.error(500), Reply.error(500))
    score = await EvalSkillsJudge(client=client(llm_server)).evaluate(Task("t"), Response("x"))
    assert score.value is None
    assert score.details["judge_error"] == "request_failed"
    assert score.error is not None and score.error.startswith("judge request failed: HTTP 500")


async def test_an_endpoint_refusing_json_schema_is_asked_without(llm_server: FakeOpenAI) -> None:
    llm_server.queue(
        Reply(
            status=400,
            json_body={"error": {"message": "response_format json_schema is not supported"}},
        ),
        Reply.text("7"),
        Reply.text("6"),
    )
    judge = EvalSkillsJudge(client=client(llm_server))
    first = await judge.evaluate(Task("t"), Response("x"))
    second = await judge.evaluate(Task("t"), Response("y"))
    assert first.value == pytest.approx(0.7) and second.value == pytest.approx(0.6)
    sent = ["response_format" in r.body for r in llm_server.requests]
    assert sent == [True, False, False]  # refused once, remembered


def test_missing_judge_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EVAL_SKILLS_LLM_KEY", "OPENAI_API_KEY", "OPENAI_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(
        ConfigError, match="set EVAL_SKILLS_LLM_KEY or OPENAI_API_KEY or OPENAI_KEY"
    ):
        EvalSkillsJudge()
    monkeypatch.setenv("EVAL_SKILLS_LLM_KEY", "k1")
    monkeypatch.setenv("OPENAI_API_KEY", "k2")
    judge = EvalSkillsJudge(cache=False)
    assert judge.client.endpoint.api_key == "k1"
    assert judge.client.model == "gpt-4o"


async def test_missing_key_stops_the_run_before_any_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EVAL_SKILLS_LLM_KEY", "OPENAI_API_KEY", "OPENAI_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    provider = MockProvider(lambda r: "answer")
    suite = Suite(
        Benchmark(
            "b",
            tasks=[Task("t0"), Task("t1", evaluators=(EvaluatorSpec("llm_judge"),))],
            evaluators=[EvaluatorSpec("exact", {"value": "answer"})],
        ),
        (Condition("m", provider),),
    )
    with pytest.raises(ConfigError, match="no API key"):
        await Runner().run(suite)
    assert provider.requests == []


def _down_on_x(request: Request) -> str:
    if request.task.input == "x":
        raise RuntimeError("model down")
    return str(request.task.input)


async def test_judge_errors_are_counted_apart_in_a_run(llm_server: FakeOpenAI) -> None:
    replies = {"good": "9", "bad": "no idea"}
    llm_server.respond = lambda body: next(
        v for k, v in replies.items() if f"Actual Output: {k}" in body["messages"][1]["content"]
    )
    judge_spec = EvaluatorSpec(
        "llm_judge", {"base_url": llm_server.url, "model": "j", "cache": False}
    )
    tasks = [Task("t-good", input="good"), Task("t-bad", input="bad"), Task("t-boom", input="x")]
    suite = Suite(
        Benchmark("b", tasks=tasks, evaluators=[judge_spec]),
        (Condition("m", MockProvider(_down_on_x)),),
        RunOptions(concurrency=2),
    )
    result = await Runner().run(suite)
    by_id = {c.task_id: c for c in result.cells}
    assert by_id["t-good"].status == "pass" and by_id["t-good"].score == 0.9
    assert (by_id["t-bad"].status, by_id["t-bad"].error_category) == ("error", "judge_error")
    assert by_id["t-bad"].score is None
    assert by_id["t-boom"].error_category == "execution_error"
    agg = result.aggregate("m")
    assert agg.errors_by_category == {"execution_error": 1, "judge_error": 1}
    # the pass rate is the system's over the judged cells, the unjudged one beside it
    assert (agg.passed, agg.unjudged, agg.judged, agg.pass_rate) == (1, 1, 2, 0.5)
    assert agg.pass_rate_ci.n == 2
    assert any("gave no verdict on 1 of 2 cells" in w for w in result.warnings)
    # errors_as="zero" (the default) scores the system's failure as 0, never the judge's
    assert (agg.errors_as, agg.scored_cells) == ("zero", 2)
    assert agg.mean_score == pytest.approx(0.45)


@pytest.mark.parametrize("errors_as", ["zero", "exclude"])
async def test_judge_errors_stay_out_of_every_average(
    llm_server: FakeOpenAI, errors_as: str
) -> None:
    llm_server.respond = lambda body: "8" if "Actual Output: good" in str(body) else "??"
    judge_spec = EvaluatorSpec(
        "llm_judge", {"base_url": llm_server.url, "model": "j", "cache": False}
    )
    tasks = [Task("t1", input="good", tags=("x",)), Task("t2", input="bad", tags=("x",))]
    suite = Suite(
        Benchmark("b", tasks=tasks, evaluators=[judge_spec]),
        (Condition("a", MockProvider(_down_on_x)), Condition("b", MockProvider(_down_on_x))),
        RunOptions(errors_as=errors_as),  # type: ignore[arg-type]
    )
    result = await Runner().run(suite)
    agg = result.aggregate("a")
    assert (agg.mean_score, agg.scored_cells, agg.score) == (0.8, 1, 0.8)
    assert agg.errors_by_category == {"judge_error": 1}
    (group,) = [g for g in result.groups if g.condition_id == "a"]
    assert group.mean_score == 0.8
    assert (group.passed, group.unjudged, group.pass_rate) == (1, 1, 1.0)


async def test_rubric_judge_number_scale_and_threshold(llm_server: FakeOpenAI) -> None:
    llm_server.queue(Reply.text("I'd say 4 out of 5."), Reply.text('{"score": 4, "reason": "ok"}'))
    judge = RubricJudge(
        prompt="Q: {input}\nA: {output}\nExpected: {expected}\nContext: {context}\nRate 1-5.",
        system="Be strict.",
        scale=[1, 5],
        threshold=0.8,
        client=client(llm_server),
    )
    score = await judge.evaluate(
        Task("t", input="2+2?", expected="4", context=("math", "facts")), Response("4")
    )
    first, retry = (r.body for r in llm_server.requests)
    messages = first["messages"]
    assert messages[0] == {"role": "system", "content": "Be strict."}
    assert messages[1]["content"] == "Q: 2+2?\nA: 4\nExpected: 4\nContext: math\n\nfacts\nRate 1-5."
    sent = first["response_format"]["json_schema"]["schema"]
    assert sent["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    # free text is no verdict (not "the first number"): asked again, with the complaint
    assert retry["messages"][-2] == {"role": "assistant", "content": "I'd say 4 out of 5."}
    assert "the reply is not JSON" in retry["messages"][-1]["content"]
    assert score.value == pytest.approx(0.75) and not score.passed
    assert score.details["replies"] == ["I'd say 4 out of 5.", '{"score": 4, "reason": "ok"}']


@pytest.mark.parametrize(
    "reply", ["The answer is incorrect: '7 times 6' is 42.", "80 legs", "Score: 7 because"]
)
async def test_rubric_judge_never_takes_a_number_out_of_free_text(
    llm_server: FakeOpenAI, reply: str
) -> None:
    llm_server.respond = lambda body: reply
    judge = RubricJudge(prompt="Rate {output}", client=client(llm_server))
    score = await judge.evaluate(Task("t"), Response("x"))
    assert score.value is None and not score.passed
    assert score.details["judge_error"] == "not_json"
    assert score.details["replies"] == [reply, reply]  # every reply kept, whole
    assert len(llm_server.requests) == 2  # one retry, no more


async def test_rubric_judge_json_with_schema(llm_server: FakeOpenAI) -> None:
    llm_server.queue(
        Reply.text('```json\n{"score": 9, "reason": "good"}\n```'),
        Reply.text('{"reason": "forgot the score"}'),
        Reply.text('{"reason": "forgot it again"}'),
    )
    judge = RubricJudge(prompt="Rate {output}", parse="json", client=client(llm_server))
    good = await judge.evaluate(Task("t"), Response("x"))
    bad = await judge.evaluate(Task("t"), Response("x"))
    assert good.value == pytest.approx(0.9) and good.passed
    assert llm_server.requests[0].body["response_format"]["type"] == "json_schema"
    assert bad.value is None
    assert bad.error is not None and "does not match the schema" in bad.error
    assert "forgot it again" in bad.error
    assert bad.details["judge_error"] == "schema_mismatch"
    assert bad.details["replies"] == [
        '{"reason": "forgot the score"}',
        '{"reason": "forgot it again"}',
    ]


async def test_rubric_judge_samples_report_agreement(llm_server: FakeOpenAI) -> None:
    llm_server.queue(Reply.text("8"), Reply.text("9"), Reply.text("2"))
    judge = RubricJudge(prompt="Rate {output}", samples=3, client=client(llm_server))
    score = await judge.evaluate(Task("t"), Response("x"))
    assert score.value == pytest.approx((0.8 + 0.9 + 0.2) / 3)
    assert score.details["samples"] == pytest.approx([0.8, 0.9, 0.2])
    assert score.details["agreement"] == pytest.approx(2 / 3)
    assert [r.body["seed"] for r in llm_server.requests] == [0, 1, 2]


def test_rubric_judge_rejects_bad_options() -> None:
    with pytest.raises(ConfigError, match="scale"):
        RubricJudge(prompt="x", scale=[5, 1], base_url="http://127.0.0.1:1/v1", model="m")
    with pytest.raises(ConfigError, match="parse"):
        RubricJudge(prompt="x", parse="xml", base_url="http://127.0.0.1:1/v1", model="m")


def test_prompt_values_are_written_as_javascript_writes_them() -> None:
    prompt = eval_skills_user_prompt("c", None, {"result": 25.0, "ok": True})
    assert 'Actual Output: {"result":25,"ok":true}' in prompt
    assert "Actual Output: 0.5\n" in eval_skills_user_prompt("c", None, 0.5)


async def test_judge_usage_is_summed_per_condition(llm_server: FakeOpenAI) -> None:
    llm_server.respond = lambda body: Reply.text("7", prompt_tokens=100, completion_tokens=1)
    spec = EvaluatorSpec("llm_judge", {"base_url": llm_server.url, "model": "j", "cache": False})
    suite = Suite(
        Benchmark("b", tasks=[Task(f"t{i}", input=i) for i in range(3)], evaluators=[spec]),
        (Condition("m", MockProvider(lambda r: "out")),),
    )
    agg = (await Runner().run(suite)).aggregate("m")
    assert agg.judge_usage is not None
    assert (agg.judge_usage.prompt_tokens, agg.judge_usage.completion_tokens) == (300, 3)
    assert agg.usage is None


async def test_an_evaluators_prepare_runs_once_before_the_first_cell() -> None:
    """A judge on the local model starts its server in ``prepare``: outside every cell's
    deadline, so a slow start is not a cell's timeout."""
    import benchkit
    from benchkit.results import Score

    order: list[str] = []

    class Prepared:
        async def prepare(self) -> None:
            order.append("prepare")

        async def evaluate(self, task: Task, response: Response) -> Score:
            order.append("evaluate")
            return Score("prepared", 1.0, True)

    registries = benchkit.default_registries().copy()
    registries.evaluators.add("prepared", Prepared)
    suite = Suite(
        Benchmark(
            "b", tasks=[Task(f"t{i}") for i in range(3)], evaluators=[EvaluatorSpec("prepared")]
        ),
        (Condition("m", MockProvider(lambda r: "x")),),
    )
    result = await Runner(registries=registries).run(suite)
    assert result.aggregate("m").passed == 3
    assert order == ["prepare", "evaluate", "evaluate", "evaluate"]
