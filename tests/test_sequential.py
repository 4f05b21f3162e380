"""``run --until-decided`` (issue 26): anytime-valid stopping, by Monte-Carlo and end to end.

The Monte-Carlo checks look after every task, as the Runner does: with no true difference
the chance of *ever* declaring one stays at or below alpha; with a real one the run stops
early, on the right side. Seeds are fixed, so nothing flakes. perf/sequential_savings.py
records the average share of tasks saved.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

import benchkit
from benchkit import Benchmark, Condition, EvaluatorSpec, Request, Suite, Task
from benchkit.errors import ConfigError
from benchkit.llm import MemoryCache
from benchkit.reports import to_markdown
from benchkit.runner import sync_run
from benchkit.sequential import ALPHA, ConfidenceSequence, schedule

from ._llm_server import FakeOpenAI
from ._support import REPO, one_paragraph_error


def _difference(rng: random.Random, delta: float) -> float:
    """One task's paired pass/fail difference: p_a ~ U(0.2, 0.6), p_b = p_a + delta + noise
    (as tests/_montecarlo.shifted), so the true mean difference is exactly delta."""
    pa = rng.uniform(0.2, 0.6)
    pb = pa + delta + rng.uniform(-0.15, 0.15)
    return float(rng.random() < pb) - float(rng.random() < pa)


def _run(
    delta: float, tasks: int, rng: random.Random, margin: float | None = None
) -> tuple[str, int]:
    extra = () if margin is None else (-margin, margin)
    cs = ConfidenceSequence(ALPHA, extra=extra, grid=3 if margin is None else 201)
    for t in range(tasks):
        cs.update(_difference(rng, delta))
        if cs.excluded(0.0):
            return ("b" if cs.mean > 0 else "a"), t + 1
        if margin is not None and cs.excluded(-margin) and cs.excluded(margin):
            low, high = cs.bounds()
            if -margin < low and high < margin:
                return "within", t + 1
    return "undecided", tasks


def test_with_no_difference_looking_after_every_task_keeps_the_error_below_alpha() -> None:
    runs, tasks = 600, 200
    rng = random.Random(26)
    declared = sum(_run(0.0, tasks, rng)[0] in ("a", "b") for _ in range(runs))
    assert declared / runs <= ALPHA, declared / runs


def test_a_fixed_sample_test_repeated_after_every_task_would_not() -> None:
    # the contrast: a z test at 1.96 after every task declares a difference far too often
    runs, tasks = 300, 200
    rng = random.Random(5)
    declared = 0
    for _ in range(runs):
        total = total_sq = 0.0
        for t in range(1, tasks + 1):
            d = _difference(rng, 0.0)
            total += d
            total_sq += d * d
            var = (total_sq - total * total / t) / max(t - 1, 1)
            if t >= 10 and var > 0 and abs(total / t) / (var / t) ** 0.5 > 1.96:
                declared += 1
                break
    assert declared / runs > 3 * ALPHA


def test_a_real_difference_stops_early_on_the_right_side() -> None:
    runs, tasks = 200, 200
    rng = random.Random(7)
    outcomes = [_run(0.2, tasks, rng) for _ in range(runs)]
    right = sum(side == "b" for side, _ in outcomes)
    wrong = sum(side == "a" for side, _ in outcomes)
    saved = sum(1 - used / tasks for _, used in outcomes) / runs
    assert wrong == 0
    assert right / runs > 0.8
    assert saved > 0.3, saved


def test_no_difference_is_shown_within_a_margin() -> None:
    rng = random.Random(3)
    outcomes = [_run(0.0, 400, rng, margin=0.3) for _ in range(40)]
    within = [used for side, used in outcomes if side == "within"]
    assert len(within) >= 36
    assert max(within) < 400


def test_the_schedule_is_a_seeded_permutation() -> None:
    assert sorted(schedule(50, 1)) == list(range(50))
    assert schedule(50, 1) == schedule(50, 1)
    assert schedule(50, 1) != schedule(50, 2)


def _suite(chances: dict[str, float], tasks: int = 200, **options: object) -> Suite:
    def system(chance: float) -> benchkit.CallableProvider:
        def respond(request: Request) -> str:
            return "yes" if random.Random(request.seed).random() < chance else "no"

        return benchkit.CallableProvider(respond, pass_request=True)

    return Suite(
        Benchmark(
            "decide",
            tasks=[Task(f"q{i}", input=i, expected="yes") for i in range(tasks)],
            evaluators=[EvaluatorSpec("exact")],
        ),
        conditions=[Condition(cid, system(p)) for cid, p in chances.items()],
        options=benchkit.RunOptions(**options),  # type: ignore[arg-type]
    )


def test_a_run_stops_early_says_so_and_a_stored_run_replays_it(tmp_path: Path) -> None:
    store = benchkit.Store(tmp_path / "runs.db")
    suite = _suite({"base": 0.3, "tuned": 0.85}, until_decided=True, seed=4)
    result = benchkit.run(suite, store=store)
    stop = result.early_stop
    assert stop is not None and stop.stopped
    assert stop.tasks < 200 and stop.total_tasks == 200
    (decision,) = stop.decisions
    assert decision.decision == "differs" and decision.low > 0
    assert len(result.cells) < 400 and not result.interrupted
    text = stop.text()
    assert text.startswith(f"Stopped early after {stop.tasks} of 200 tasks")
    assert "differs" in text
    assert text in to_markdown(result)
    # the run's tasks ran in the schedule's order, not the file's
    first = [c.index for c in result.cells if c.condition_id == "base"]
    assert set(first) >= set(schedule(200, 4)[: stop.tasks])
    with store:
        assert store.load(result.run_id).early_stop == stop
        assert store.load(result.run_id, cells=False).early_stop == stop


def test_identical_systems_run_every_task_and_say_undecided() -> None:
    suite = _suite({"a": 0.5, "b": 0.5}, tasks=30, until_decided=True)
    same = suite.conditions[0].provider
    suite = Suite(
        suite.benchmark,
        [Condition("a", same), Condition("b", same)],
        suite.options,
    )
    result = benchkit.run(suite, store=False)
    assert result.early_stop is not None
    assert not result.early_stop.stopped
    assert result.early_stop.decisions[0].decision == "undecided"
    assert len(result.cells) == 60
    assert "without stopping early" in result.early_stop.text()


@pytest.mark.parametrize(
    ("conditions", "options", "message"),
    [
        ({"a": 0.5}, {"until_decided": True}, "one condition"),
        ({"a": 0.5, "b": 0.5}, {"margin": 0.1}, "until_decided, which is off"),
        (
            {"a": 0.5, "b": 0.5},
            {"until_decided": True, "cluster_by": "id"},
            "cluster_by says",
        ),
    ],
)
def test_until_decided_refuses_what_it_cannot_decide(
    conditions: dict[str, float], options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        benchkit.run(_suite(conditions, tasks=5, **options), store=False)


def test_judge_repeats_ask_again_report_the_flips_and_take_the_majority(
    llm_server: FakeOpenAI,
) -> None:
    # the judge says 8 (pass) without a seed and with seed 2, 3 (fail) with seed 1
    llm_server.respond = lambda body: "3" if body.get("seed") == 1 else "8"
    judge = EvaluatorSpec(
        "llm_rubric",
        options={"prompt": "Rate {output}", "base_url": llm_server.url, "model": "judge"},
    )
    suite = Suite(
        Benchmark("rep", tasks=[Task("t0", input=0), Task("t1", input=1)], evaluators=[judge]),
        conditions=[Condition("c", benchkit.CallableProvider(lambda x: "answer"))],
        options=benchkit.RunOptions(judge_repeats=3),
    )
    result = sync_run(suite, runner=benchkit.Runner(response_cache=MemoryCache()))
    seeds = sorted(r.body.get("seed", 0) for r in llm_server.requests)
    assert seeds == [0, 0, 1, 1, 2, 2]  # each repeat its own request, never the cached first
    for cell in result.cells:
        (score,) = cell.scores
        assert score.passed and score.value == pytest.approx((0.8 + 0.3 + 0.8) / 3)
        assert [r["passed"] for r in score.details["repeats"]] == [True, False, True]
        assert score.details["usage"]["prompt_tokens"] == 30
    (consistency,) = result.judge_report().consistency
    assert consistency.repeats == 3 and consistency.flipped == 2 and consistency.flip_rate == 1.0


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchkit", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )


def test_the_cli_and_the_yaml_run_block_stop_early_and_say_why(tmp_path: Path) -> None:
    (tmp_path / "answers.py").write_text(
        "def right(x):\n    return str(x)\n\ndef wrong(x):\n    return 'no'\n", encoding="utf-8"
    )
    tasks = "\n".join(f'  - {{id: t{i}, input: {i}, expected: "{i}"}}' for i in range(80))
    (tmp_path / "bench.yaml").write_text(
        "benchkit: 1\nid: decide\nversion: '1'\nevaluators: [exact]\n"
        "run: {until_decided: true, margin: 0.05, seed: 3}\n"
        "conditions:\n"
        "  - {id: old, provider: {type: python, file: answers.py, function: wrong}}\n"
        "  - {id: new, provider: {type: python, file: answers.py, function: right}}\n"
        "tasks:\n" + tasks + "\n",
        encoding="utf-8",
    )
    suite = benchkit.load(tmp_path / "bench.yaml")
    assert suite.options.until_decided and suite.options.margin == 0.05
    ran = _cli(tmp_path, "run", "bench.yaml", "--no-store", "-o", "r.json", "-f", "markdown")
    assert ran.returncode in (0, 1), ran.stderr
    assert "**Until decided:** Stopped early after" in ran.stdout
    saved = benchkit.RunResult.from_json((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert saved.early_stop is not None and saved.early_stop.stopped
    assert saved.early_stop.decisions[0].decision == "differs"
    refused = _cli(tmp_path, "run", "bench.yaml", "--no-store", "--margin", "0.1", "-c", "1")
    assert refused.returncode == 0  # the file's run block asks for until_decided
    plain = tmp_path / "plain.yaml"
    plain.write_text(
        (tmp_path / "bench.yaml")
        .read_text(encoding="utf-8")
        .replace("run: {until_decided: true, margin: 0.05, seed: 3}\n", ""),
        encoding="utf-8",
    )
    error = one_paragraph_error(
        _cli(tmp_path, "run", "plain.yaml", "--no-store", "--margin", "0.1")
    )
    assert "margin" in error and "--until-decided" in error
