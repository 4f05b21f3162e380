"""The Runner: matrix, concurrency, timeouts, retries, cancellation, streaming, determinism."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

import benchkit
from benchkit import (
    Benchmark,
    CallableProvider,
    Condition,
    ConfigError,
    EvaluatorSpec,
    InvocationError,
    JsonlSink,
    MockProvider,
    Request,
    Response,
    Runner,
    RunOptions,
    Score,
    ScoringSpec,
    Suite,
    Task,
    Verdict,
    VerifierSpec,
)
from benchkit.store import read_jsonl

from ._support import make_suite

pytestmark = pytest.mark.anyio


def echo_str(request: Request) -> str:
    return str(request.task.input)


async def test_matrix_tasks_conditions_epochs() -> None:
    suite = make_suite(
        {"a": MockProvider(echo_str), "b": MockProvider(lambda r: "wrong")}, n=4, epochs=3
    )
    result = await Runner().run(suite)
    assert len(result.cells) == 4 * 2 * 3
    keys = [c.key for c in result.cells]
    assert keys == [(f"t{i}", c, e) for i in range(4) for c in ("a", "b") for e in range(3)]
    a, b = result.aggregate("a"), result.aggregate("b")
    assert (a.passed, a.n, b.passed, b.failed) == (12, 12, 0, 12)
    assert a.pass_rate == 1.0 and b.pass_rate == 0.0
    assert b.errors_by_category == {"assertion_failed": 12}


async def test_results_ordered_whatever_the_completion_order() -> None:
    rng = random.Random(7)

    async def jittery(request: Request) -> str:
        await anyio.sleep(rng.random() / 200)
        return str(request.task.input)

    suite = make_suite({"x": MockProvider(jittery), "y": MockProvider(jittery)}, n=20, epochs=2)
    finished: list[tuple[str, str, int]] = []
    runner = Runner(progress=lambda ev: finished.append(ev.cell.key))
    result = await runner.run(suite.with_options(concurrency=16))
    ordered = [c.key for c in result.cells]
    assert ordered == sorted(ordered, key=lambda k: (int(k[0][1:]), k[1], k[2]))
    assert finished != ordered, "completion order should differ from matrix order here"
    assert sorted(finished) == sorted(ordered)


async def test_global_concurrency_is_a_fixed_pool() -> None:
    mock = MockProvider(echo_str, delay=0.01)
    result = await Runner().run(make_suite({"m": mock}, n=40, concurrency=5))
    assert mock.max_active == 5
    assert result.aggregate("m").passed == 40


async def test_per_condition_concurrency_cap() -> None:
    capped = MockProvider(echo_str, delay=0.01)
    free = MockProvider(echo_str, delay=0.01)
    suite = Suite(
        Benchmark(
            "b",
            tasks=[Task(f"t{i}", i, str(i)) for i in range(20)],
            evaluators=[EvaluatorSpec("exact")],
        ),
        conditions=(Condition("capped", capped, concurrency=2), Condition("free", free)),
        options=RunOptions(concurrency=10),
    )
    await Runner().run(suite)
    assert capped.max_active == 2
    assert free.max_active > 2


async def test_timeout_gives_timeout_status() -> None:
    async def slow(request: Request) -> str:
        if request.task.id == "t1":
            await anyio.sleep(5)
        return str(request.task.input)

    with anyio.fail_after(4):
        result = await Runner().run(make_suite({"s": MockProvider(slow)}, n=3, timeout=0.05))
    cell = next(c for c in result.cells if c.task_id == "t1")
    assert (cell.status, cell.error_category) == ("timeout", "timeout")
    assert cell.score is None and cell.error == "timed out after 0.05s"
    agg = result.aggregate("s")
    assert agg.errors == 1 and agg.errors_by_category == {"timeout": 1}
    assert agg.mean_score == pytest.approx(2 / 3)


async def test_task_timeout_overrides_run_timeout() -> None:
    tasks = [Task("quick", 0, "0", timeout=0.02), Task("patient", 1, "1")]
    mock = MockProvider(echo_str, delay=0.06)
    result = await Runner().run(make_suite({"m": mock}, tasks, timeout=1.0))
    assert [c.status for c in result.cells] == ["timeout", "pass"]


async def test_retries_execution_errors_with_backoff_but_not_failed_assertions() -> None:
    calls: dict[str, int] = {}

    def flaky(request: Request) -> str:
        calls[request.task.id] = calls.get(request.task.id, 0) + 1
        if request.task.id == "t0" and request.attempt < 3:
            raise ConnectionError("transient")
        if request.task.id == "t1":
            return "wrong answer"
        return str(request.task.input)

    suite = make_suite({"f": MockProvider(flaky)}, n=3, retries=3, backoff_base=0.001)
    result = await Runner().run(suite)
    by_id = {c.task_id: c for c in result.cells}
    assert (by_id["t0"].status, by_id["t0"].attempts) == ("pass", 3)
    assert (by_id["t1"].status, by_id["t1"].attempts) == ("fail", 1)
    assert calls == {"t0": 3, "t1": 1, "t2": 1}


async def test_retries_stop_at_the_limit_and_report_the_last_error() -> None:
    attempts: list[int] = []

    def broken(request: Request) -> str:
        attempts.append(request.attempt)
        raise RuntimeError(f"boom {request.attempt}")

    result = await Runner().run(
        make_suite({"b": MockProvider(broken)}, n=1, retries=2, backoff_base=0.0)
    )
    cell = result.cells[0]
    assert attempts == [1, 2, 3]
    assert (cell.status, cell.error_category, cell.attempts) == ("error", "execution_error", 3)
    assert cell.error == "RuntimeError: boom 3"


async def test_non_retryable_invocation_error_is_not_retried() -> None:
    def answer_error(request: Request) -> str:
        raise InvocationError("JSON-RPC error -32000: bad input", retryable=False)

    result = await Runner().run(make_suite({"e": MockProvider(answer_error)}, n=1, retries=3))
    assert result.cells[0].attempts == 1
    assert result.cells[0].error == "JSON-RPC error -32000: bad input"


async def test_retry_on_any_retries_failed_assertions_too() -> None:
    def second_time_lucky(request: Request) -> str:
        return str(request.task.input) if request.attempt == 2 else "no"

    suite = make_suite(
        {"l": MockProvider(second_time_lucky)},
        n=2,
        retries=1,
        retry_on=frozenset({"any"}),
        backoff_base=0.0,
    )
    result = await Runner().run(suite)
    assert [(c.status, c.attempts) for c in result.cells] == [("pass", 2), ("pass", 2)]


async def test_runner_cancel_keeps_finished_cells_and_counts_the_rest(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path / "cells.jsonl", result_path=tmp_path / "result.json")
    runner = Runner(sinks=[sink])

    async def slow_after_ten(request: Request) -> str:
        if int(request.task.input) >= 10:
            await anyio.sleep(10)
        return str(request.task.input)

    suite = make_suite({"m": MockProvider(slow_after_ten)}, n=100, concurrency=4)

    def stop_when_ten_done(event: benchkit.Progress) -> None:
        if event.done == 10:
            runner.cancel()

    runner.progress = stop_when_ten_done
    with anyio.fail_after(5):
        result = await runner.run(suite)
    assert result.interrupted
    assert len(result.cells) == 10
    assert result.not_run == 90
    info, cells = read_jsonl(tmp_path / "cells.jsonl")
    assert info is not None and info.run_id == result.run_id
    assert sorted(c.key for c in cells) == sorted(c.key for c in result.cells)
    saved = benchkit.RunResult.from_json((tmp_path / "result.json").read_text())
    assert saved.interrupted and saved.not_run == 90


async def test_outer_cancel_scope_propagates_but_keeps_results(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path / "cells.jsonl")
    runner = Runner(sinks=[sink])

    async def slow_after_five(request: Request) -> str:
        if int(request.task.input) >= 5:
            await anyio.sleep(10)
        return str(request.task.input)

    with anyio.move_on_after(0.5) as scope:
        await runner.run(make_suite({"m": MockProvider(slow_after_five)}, n=50, concurrency=3))
    assert scope.cancelled_caught
    partial = runner.last_result
    assert partial is not None and partial.interrupted
    assert len(partial.cells) == 5 and partial.not_run == 45
    lines = (tmp_path / "cells.jsonl").read_text().splitlines()
    assert json.loads(lines[-1]) == {"end": {"interrupted": True, "not_run": 45}}
    assert sum(1 for line in lines if line.startswith('{"cell"')) == 5


async def test_stream_yields_cells_as_they_finish() -> None:
    suite = make_suite({"a": MockProvider(echo_str), "b": MockProvider(echo_str)}, n=6)
    seen = []
    async with Runner().stream(suite) as cells:
        async for cell in cells:
            seen.append(cell.key)
    assert len(seen) == 12 and len(set(seen)) == 12
    assert cells.result is not None and cells.result.aggregate("a").passed == 6


async def test_breaking_out_of_a_stream_stops_the_run() -> None:
    mock = MockProvider(echo_str, delay=0.001)
    async with Runner().stream(make_suite({"m": mock}, n=200, concurrency=2)) as cells:
        async for _cell in cells:
            break
    assert cells.result is not None
    assert cells.result.interrupted
    assert len(mock.requests) < 200


async def test_two_runs_share_one_event_loop() -> None:
    results = {}

    async def go(name: str, answer_right: bool) -> None:
        def handler(request: Request) -> str:
            return str(request.task.input) if answer_right else "x"

        suite = make_suite({name: MockProvider(handler, delay=0.001)}, n=30, concurrency=4)
        results[name] = await Runner().run(suite)

    async with anyio.create_task_group() as tg:
        tg.start_soon(go, "good", True)
        tg.start_soon(go, "bad", False)
    assert results["good"].aggregate("good").passed == 30
    assert results["bad"].aggregate("bad").passed == 0
    assert results["good"].run_id != results["bad"].run_id
    assert {c.condition_id for c in results["good"].cells} == {"good"}


async def test_deterministic_runs_are_byte_identical() -> None:
    def seeded(request: Request) -> Response:
        rng = random.Random(request.seed)
        value = str(request.task.input) if rng.random() < 0.7 else "miss"
        return Response(output=value, latency_ms=rng.random() * 100)

    async def once() -> str:
        suite = make_suite(
            {"r": MockProvider(seeded)}, n=30, epochs=3, concurrency=7, deterministic=True, seed=11
        )
        return (await Runner().run(suite)).to_json()

    first, second = await once(), await once()
    assert first == second
    data = json.loads(first)
    assert data["info"]["created_at"] == "1970-01-01T00:00:00Z"
    assert all(c.get("duration_ms", 0) == 0 and c.get("started_at", 0) == 0 for c in data["cells"])
    assert {c["response"].get("latency_ms", 0) for c in data["cells"]} == {0}
    passes = sum(c["status"] == "pass" for c in data["cells"])
    assert 0 < passes < 90, "the seeded provider should both pass and miss"


async def test_cell_seed_depends_on_the_cell_and_the_run_seed() -> None:
    seeds: dict[tuple[str, int], list[int]] = {}

    def record(request: Request) -> str:
        seeds.setdefault((request.task.id, request.epoch), []).append(request.seed)
        return str(request.task.input)

    for run_seed in (1, 1, 2):
        await Runner().run(make_suite({"s": MockProvider(record)}, n=2, epochs=2, seed=run_seed))
    for values in seeds.values():
        assert values[0] == values[1] != values[2]
    assert len({v[0] for v in seeds.values()}) == 4


async def test_evaluator_exception_is_an_evaluation_error_not_a_zero() -> None:
    class Broken:
        async def evaluate(self, task: Task, response: Response) -> Score:
            raise ValueError("judge reply unparseable")

    registries = benchkit.default_registries().copy()
    registries.evaluators.add("broken", Broken)
    suite = make_suite({"m": MockProvider(echo_str)}, n=2, evaluator="broken")
    result = await Runner(registries=registries).run(suite)
    cell = result.cells[0]
    assert (cell.status, cell.error_category) == ("error", "evaluation_error")
    assert cell.score is None and cell.scores[0].value is None
    assert "judge reply unparseable" in (cell.error or "")
    assert "broken" not in benchkit.default_registries().evaluators


async def test_a_hanging_evaluator_gets_the_cells_timeout_as_its_deadline() -> None:
    class Hangs:
        async def evaluate(self, task: Task, response: Response) -> Score:
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

    registries = benchkit.default_registries().copy()
    registries.evaluators.add("hangs", Hangs)
    suite = make_suite({"m": MockProvider(echo_str)}, n=2, evaluator="hangs", timeout=0.2)
    with anyio.fail_after(20):
        result = await Runner(registries=registries).run(suite)
    for cell in result.cells:
        assert (cell.status, cell.error_category) == ("error", "evaluation_error")
        assert cell.error == "evaluator 'hangs' timed out after 1.2s"  # + GRADER_GRACE


async def test_a_hanging_verifier_gives_a_timeout_verdict() -> None:
    class Hangs:
        async def verify(self, task: Task, response: Response, context: object) -> Verdict:
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

    registries = benchkit.default_registries().copy()
    registries.verifiers.add("hangs", Hangs)
    tasks = [Task("t0", input=0, expected="0", verifiers=(VerifierSpec("hangs"),))]
    suite = make_suite({"m": MockProvider(echo_str)}, tasks, timeout=0.2)
    with anyio.fail_after(20):
        result = await Runner(registries=registries).run(suite)
    (cell,) = result.cells
    assert (cell.status, cell.error_category) == ("timeout", "timeout")
    assert cell.verdicts[0].message == "verifier 'hangs' timed out after 1.2s"


async def test_a_cell_error_is_cut_to_an_excerpt() -> None:
    def shouts(request: Request) -> str:
        raise InvocationError("x" * 1_000_000, retryable=False)

    result = await Runner().run(make_suite({"m": MockProvider(shouts)}, n=1))
    (cell,) = result.cells
    assert cell.error is not None and len(cell.error) < 2100
    assert cell.error.endswith("(1000000 characters)")


async def test_unknown_evaluator_is_a_config_error_not_an_exception_group() -> None:
    suite = make_suite({"m": MockProvider(echo_str)}, n=3, evaluator="no_such_evaluator")
    with pytest.raises(benchkit.RegistryError, match="unknown evaluator 'no_such_evaluator'"):
        await Runner().run(suite)


async def test_suite_without_conditions_is_rejected() -> None:
    with pytest.raises(ConfigError, match="no conditions"):
        await Runner().run(Suite(Benchmark("b", tasks=[Task("t")])))


async def test_pass_at_k_needs_enough_epochs() -> None:
    suite = make_suite({"m": MockProvider(echo_str)}, n=1, epochs=2)
    suite = Suite(
        Benchmark("b", tasks=suite.benchmark.tasks, scoring=ScoringSpec("pass_at_k", k=3)),
        suite.conditions,
        suite.options,
    )
    with pytest.raises(ConfigError, match="pass@3 needs at least 3 epochs"):
        await Runner().run(suite)


async def test_pass_at_k_aggregate_over_epochs() -> None:
    def two_of_four(request: Request) -> str:
        return str(request.task.input) if request.epoch < 2 else "no"

    tasks = tuple(Task(f"t{i}", i, str(i)) for i in range(3))
    suite = Suite(
        Benchmark(
            "b",
            tasks=tasks,
            scoring=ScoringSpec("pass_at_k", k=2),
            evaluators=[EvaluatorSpec("exact")],
        ),
        (Condition("m", MockProvider(two_of_four)),),
        RunOptions(epochs=4),
    )
    agg = (await Runner().run(suite)).aggregate("m")
    assert agg.score == pytest.approx(1 - 1 / 6)  # 1 - C(2,2)/C(4,2)
    assert (agg.scoring_method, agg.k, agg.pass_rate) == ("pass_at_k", 2, 0.5)


async def test_errors_as_exclude_leaves_errored_cells_out_of_scores() -> None:
    def half_broken(request: Request) -> str:
        if request.task.input % 2:
            raise RuntimeError("down")
        return str(request.task.input)

    zero = (await Runner().run(make_suite({"m": MockProvider(half_broken)}, n=4))).aggregate("m")
    excl = (
        await Runner().run(make_suite({"m": MockProvider(half_broken)}, n=4, errors_as="exclude"))
    ).aggregate("m")
    assert (zero.mean_score, zero.scored_cells) == (0.5, 4)
    assert (excl.mean_score, excl.scored_cells, excl.errors_as) == (1.0, 2, "exclude")
    assert zero.pass_rate == excl.pass_rate == 0.5


async def test_comparison_pairs_tasks_and_lists_flips() -> None:
    def base(request: Request) -> str:
        return str(request.task.input) if request.task.input < 5 else "x"

    def better(request: Request) -> str:
        return str(request.task.input) if request.task.input != 0 else "x"

    result = await Runner().run(
        make_suite({"base": MockProvider(base), "better": MockProvider(better)}, n=10)
    )
    (cmp,) = result.comparisons
    assert (cmp.baseline, cmp.target) == ("base", "better")
    assert cmp.improved == ("t5", "t6", "t7", "t8", "t9")
    assert cmp.regressed == ("t0",)
    assert cmp.pass_rate_delta == pytest.approx(0.4)
    assert cmp.paired.mcnemar_p == pytest.approx(benchkit.stats.mcnemar_exact(1, 5))
    assert cmp.paired.interval.low <= cmp.paired.delta <= cmp.paired.interval.high


async def test_lazy_tasks_stream_through_a_run() -> None:
    produced: list[int] = []

    def factory() -> Iterator[Task]:
        for i in range(50):
            produced.append(i)
            yield Task(f"t{i}", i, str(i))

    suite = make_suite({"m": MockProvider(echo_str)}, tasks=(), concurrency=3)
    suite = Suite(
        Benchmark("lazy", tasks=benchkit.LazyTasks(factory), evaluators=[EvaluatorSpec("exact")]),
        suite.conditions,
        suite.options,
    )
    result = await Runner().run(suite)
    assert result.info.total_cells is None
    assert len(result.cells) == 50 and produced == list(range(50))


async def test_progress_reports_counts_rate_and_eta() -> None:
    events: list[benchkit.Progress] = []
    suite = make_suite({"a": MockProvider(echo_str), "b": CallableProvider(lambda x: 1 / 0)}, n=5)
    await Runner(progress=events.append).run(suite)
    assert [e.done for e in events] == list(range(1, 11))
    assert events[-1].total == 10 and events[-1].errors == 5
    assert events[-1].eta == 0 and events[-1].rate > 0


async def test_provider_raw_payload_dropped_unless_kept() -> None:
    def with_raw(request: Request) -> Response:
        return Response(output=str(request.task.input), raw={"big": "payload"})

    dropped = await Runner().run(make_suite({"m": MockProvider(with_raw)}, n=1))
    kept = await Runner(keep_raw=True).run(make_suite({"m": MockProvider(with_raw)}, n=1))
    assert dropped.cells[0].response is not None and dropped.cells[0].response.raw is None
    assert kept.cells[0].response is not None and kept.cells[0].response.raw == {"big": "payload"}


async def test_sync_run_works_inside_a_running_event_loop() -> None:
    suite = make_suite({"m": MockProvider(echo_str)}, n=3)
    result = benchkit.run(suite)  # blocks this loop briefly; runs on a fresh loop in a thread
    assert result.aggregate("m").passed == 3


def test_sync_run_without_a_loop_and_with_trio() -> None:
    suite = make_suite({"m": MockProvider(echo_str)}, n=3)
    assert benchkit.run(suite).aggregate("m").passed == 3
    assert benchkit.run(suite, backend="trio").aggregate("m").passed == 3
    assert benchkit.run(suite, epochs=2).aggregate("m").n == 6


async def test_done_cells_are_not_run_again_and_not_rewritten(tmp_path: Path) -> None:
    first = MockProvider(echo_str)
    suite = make_suite({"m": first}, n=6, epochs=2, deterministic=True)
    full = await Runner().run(suite)
    done = [c for c in full.cells if c.task_id in ("t0", "t3")]
    second = MockProvider(echo_str)
    sink = JsonlSink(tmp_path / "resume.jsonl")
    resumed = await Runner(sinks=[sink]).run(
        make_suite({"m": second}, n=6, epochs=2, deterministic=True), run_id=full.run_id, done=done
    )
    assert sorted((r.task.id, r.epoch) for r in second.requests) == sorted(
        (f"t{i}", e) for i in (1, 2, 4, 5) for e in range(2)
    )
    assert resumed.to_json() == full.to_json()
    _, written = read_jsonl(tmp_path / "resume.jsonl")
    assert len(written) == 8


def test_callable_provider_config_hash_follows_the_code() -> None:
    def answer(x: int) -> str:
        return str(x)

    def other(x: int) -> str:
        return str(x + 1)

    same = CallableProvider(answer).config_hash()
    assert same == CallableProvider(answer).config_hash()
    assert same != CallableProvider(other).config_hash()
    assert same != CallableProvider(answer, pass_request=True).config_hash()
    assert CallableProvider(str.upper).config_hash()  # builtins have no code object


class _Session:
    """A provider that keeps a session: the Runner must enter it for the whole run."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.open = False

    async def __aenter__(self) -> _Session:
        self.events.append("enter")
        self.open = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.events.append("exit")
        self.open = False

    async def invoke(self, request: Request) -> Response:
        return Response(output=str(request.task.input) if self.open else "closed")


def test_async_context_providers_are_entered_once_for_the_whole_run() -> None:
    shared = _Session()
    result = benchkit.run(make_suite({"a": shared, "b": shared}, n=3))
    assert shared.events == ["enter", "exit"]
    assert [c.response.output for c in result.cells if c.response] == ["0", "0", "1", "1", "2", "2"]
