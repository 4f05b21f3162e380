"""``run --until-decided`` (issues 26, 43): sequential stopping, by Monte-Carlo and end to end.

A run that knows its number of tasks N is group-sequential (a look after every tenth,
O'Brien-Fleming alpha spending); the open-ended confidence sequence looks after every task.
The Monte-Carlo checks: with no true difference (unequal difficulty, rare discordance,
correlated epochs, systems good at different tasks) the chance of ever declaring one stays
at or below alpha; with a real one the group-sequential run has nearly the power of the
fixed test of all N tasks while stopping early on the right side. Bands allow a few
binomial standard errors of the simulation; seeds are fixed, so nothing flakes.
perf/sequential_savings.py prints the figures docs/statistics.md records.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

import benchkit
from benchkit import Benchmark, Condition, EvaluatorSpec, Request, Suite, Task
from benchkit._aggregate import aggregate_run
from benchkit.errors import ConfigError
from benchkit.judges import TIE_RULE
from benchkit.llm import MemoryCache
from benchkit.reports import to_markdown, to_table
from benchkit.reports.html import to_html
from benchkit.results import CellResult, RunInfo, RunResult
from benchkit.runner import sync_run
from benchkit.sequential import (
    ALPHA,
    ConfidenceSequence,
    GroupSequentialDesign,
    StoppingPolicy,
    look_points,
    obrien_fleming_spending,
    schedule,
)

from ._llm_server import FakeOpenAI
from ._montecarlo import (
    TaskDraw,
    correlated_epochs,
    different_strengths,
    rare_discordance,
    sequential_run,
    shifted_task,
)
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


def test_the_confidence_sequence_p_value_is_below_alpha_exactly_when_0_is_out() -> None:
    rng = random.Random(11)
    for delta in (0.0, 0.3):
        cs = ConfidenceSequence(ALPHA, grid=3)
        for _ in range(150):
            cs.update(_difference(rng, delta))
            assert (cs.p_value <= ALPHA) == cs.excluded(0.0)


def test_the_group_sequential_boundaries_are_the_published_ones() -> None:
    # Lan-DeMets O'Brien-Fleming-type spending, 5 equally spaced looks, two-sided 0.05
    # (Jennison and Turnbull 2000; gsDesign's sfLDOF): 4.877, 3.357, 2.680, 2.290, 2.031
    design = GroupSequentialDesign(5, 0.05)
    assert [round(c, 3) for c in design.boundaries] == [4.877, 3.357, 2.68, 2.29, 2.031]
    ten = GroupSequentialDesign(10, 0.05)
    for k, (t, c) in enumerate(zip(ten.fractions, ten.boundaries, strict=True), 1):
        # stopping right at look k's boundary has spent exactly alpha(t_k)
        assert ten.p_value(k, c) == pytest.approx(obrien_fleming_spending(t, 0.05), abs=2e-5)
        assert ten.p_value(k, c * 1.01) < obrien_fleming_spending(t, 0.05)
    assert ten.p_value(10, 1.0) > 0.05 and ten.nominal(10) < 0.05
    assert look_points(200) == tuple(range(20, 201, 20)) and look_points(25)[-1] == 25


def _rate(outcomes: list[int]) -> tuple[float, float]:
    """A share and its binomial standard error."""
    n = len(outcomes)
    share = sum(outcomes) / n
    return share, (max(share * (1 - share), ALPHA * (1 - ALPHA)) / n) ** 0.5


def _declared(draw: TaskDraw, runs: int, seed: int) -> tuple[float, float]:
    rng = random.Random(seed)
    return _rate([sequential_run(draw, 200, rng).sign != 0 for _ in range(runs)])


def test_with_no_difference_the_group_sequential_design_keeps_alpha() -> None:
    rate, se = _declared(shifted_task(0.0), 300, 43)
    assert rate <= ALPHA + 2 * se, rate


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "draw"),
    [
        ("unequal difficulty", shifted_task(0.0)),
        ("rare discordance", rare_discordance(0.1)),
        ("correlated epochs", correlated_epochs(5)),
        ("good at different tasks", different_strengths()),
    ],
)
def test_no_null_of_these_kinds_declares_a_difference_more_than_alpha(
    name: str, draw: TaskDraw
) -> None:
    rate, se = _declared(draw, 600, 44)
    assert rate <= ALPHA + 2 * se, (name, rate)


@pytest.mark.parametrize("delta", [0.2, pytest.param(0.15, marks=pytest.mark.slow)])
def test_the_group_sequential_design_has_the_fixed_tests_power_and_stops_early(
    delta: float,
) -> None:
    runs = 250 if delta == 0.2 else 600
    rng = random.Random(45)
    outcomes = [sequential_run(shifted_task(delta), 200, rng) for _ in range(runs)]
    power = sum(o.sign > 0 for o in outcomes) / runs
    fixed = sum(o.fixed_sign > 0 for o in outcomes) / runs
    # the two tests see the same runs: the error of their difference is that of the
    # share of runs on which they disagree
    disagree = sum((o.sign > 0) != (o.fixed_sign > 0) for o in outcomes) / runs
    assert power >= fixed - 0.03 - 2 * (disagree / runs) ** 0.5, (power, fixed)
    assert not any(o.sign < 0 for o in outcomes)  # never on the wrong side
    if delta == 0.2:
        tasks = sum(o.tasks for o in outcomes) / runs
        assert tasks <= 0.8 * 200, tasks


def _run_cells(
    rng: random.Random, chances: dict[str, list[float]], epochs: int = 1
) -> list[CellResult]:
    cells = []
    for cond, probs in chances.items():
        for t, p in enumerate(probs):
            for e in range(epochs):
                ok = rng.random() < p
                cells.append(
                    CellResult(f"t{t}", cond, e, "pass" if ok else "fail", index=t, score=float(ok))
                )
    return cells


def _sequential_result(seed: int, delta: float, conditions: int, tasks: int) -> RunResult:
    """One seeded ``--until-decided`` run through the StoppingPolicy and the aggregation
    every report uses; the cells are those fed before every comparison was decided."""
    rng = random.Random(seed)
    base = [rng.uniform(0.2, 0.6) for _ in range(tasks)]
    chances = {
        f"c{i}": [p + i * delta + rng.uniform(-0.1, 0.1) for p in base] for i in range(conditions)
    }
    cells = _run_cells(rng, chances)
    ids = list(chances)
    order = schedule(tasks, seed)

    def reduce(found: list[CellResult]) -> float | None:
        return found[0].score if found else None

    policy = StoppingPolicy(ids, 1, order, reduce, horizon=tasks, seed=seed)
    by_index: dict[int, list[CellResult]] = {}
    for cell in cells:
        by_index.setdefault(cell.index, []).append(cell)
    ran: list[CellResult] = []
    for index in order:
        ran += by_index[index]
        if any(policy.observe(c) for c in by_index[index]):
            break
    stop = policy.result()
    aggregates, groups, comparisons = aggregate_run(ran, ids, early_stop=stop)
    options = benchkit.RunOptions(until_decided=True, seed=seed)
    info = RunInfo(
        "r", "b", None, "1", None, "native", tuple(benchkit.ConditionInfo(c) for c in ids), options
    )
    return RunResult(info, tuple(ran), aggregates, groups, comparisons, early_stop=stop)


def _terminal_text(result: RunResult) -> str:
    """The table report as a terminal shows it, on a terminal wide enough that the
    caption's lines are not wrapped."""
    from rich.console import Console

    table = to_table(result)
    table.expand = True
    with open(os.devnull, "w") as sink:
        console = Console(record=True, width=1000, file=sink)
        console.print(table)
    return console.export_text()


def _comparison_block(text: str, target: str, baseline: str) -> str:
    """The table caption's lines about one comparison: its own line and the indented ones
    under it, joined into one line."""
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith(f"{target} vs {baseline}: Δ"))
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        block.append(line)
    return " ".join(" ".join(block).split())


#: "significant" not preceded by "not " nor followed by "?" (a yes).
_SAYS_SIGNIFICANT = re.compile(r"(?<!not )\bsignificant\b(?!\?)")


def test_no_report_ever_says_both_undecided_and_significant() -> None:
    seen = {"differs": 0, "undecided": 0}
    for seed in range(48):
        delta = (0.0, 0.1, 0.15, 0.3)[seed % 4]
        result = _sequential_result(seed, delta, 2 + seed % 2, 60)
        stop = result.early_stop
        assert stop is not None and stop.design == "group_sequential"
        data = json.loads(result.to_json())
        markdown = to_markdown(result)
        html = to_html(result)
        terminal = _terminal_text(result)
        for cmp, js in zip(result.comparisons, data["comparisons"], strict=True):
            found = stop.decision(cmp.baseline, cmp.target)
            assert found is not None
            seen[found.decision] = seen.get(found.decision, 0) + 1
            differs = found.decision == "differs"
            # one verdict: the procedure's, in the object, the JSON and every rendering
            assert cmp.significant is differs and js["significant"] is differs
            assert cmp.paired.method == js["paired"]["method"] == "group_sequential"
            assert cmp.paired.mde is None and cmp.p_holm is None
            iv = cmp.paired.interval
            assert (iv.low, iv.high) == (found.low, found.high)
            assert (iv.low > 0 or iv.high < 0) == differs  # the interval agrees
            p = cmp.paired.p_value
            assert p is None or (p < found.alpha) == differs
            assert cmp.verdict.startswith("significant" if differs else "not significant")
            row = f"| {cmp.target} vs {cmp.baseline} |"
            line = next(r for r in markdown.splitlines() if r.startswith(row))
            assert ("| yes |" in line) is differs
            if not differs:
                assert "undecided" in stop.text() or found.decision == "within_margin"
            assert cmp.verdict in markdown and cmp.verdict.replace("'", "&#x27;") in html
            # the terminal table: the verdict, and nothing under it that says otherwise
            block = _comparison_block(terminal, cmp.target, cmp.baseline)
            assert cmp.verdict in block
            assert bool(_SAYS_SIGNIFICANT.search(block)) is differs, block
            assert ("not significant" in block) is not differs, block
    assert seen["differs"] > 10 and seen["undecided"] > 10  # both kinds were seen


def test_a_run_without_a_horizon_is_the_open_ended_confidence_sequence() -> None:
    rng = random.Random(5)
    cells = _run_cells(rng, {"a": [0.2] * 80, "b": [0.9] * 80})

    def reduce(found: list[CellResult]) -> float | None:
        return found[0].score if found else None

    policy = StoppingPolicy(["a", "b"], 1, list(range(80)), reduce)
    for cell in sorted(cells, key=lambda c: c.index):
        if policy.observe(cell):
            break
    stop = policy.result()
    assert stop.design == "confidence_sequence" and stop.looks == ()
    (found,) = stop.decisions
    assert found.decision == "differs" and found.p_value is not None
    assert found.p_value <= ALPHA and found.low > 0
    assert "anytime-valid test after each task" in stop.text()


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
    # the comparison says what the procedure decided, with its p-value and interval
    (cmp,) = result.comparisons
    assert cmp.significant and cmp.paired.method == "group_sequential"
    assert (cmp.paired.interval.low, cmp.paired.interval.high) == (decision.low, decision.high)
    assert decision.p_value is not None and decision.p_value < ALPHA
    assert cmp.paired.p_value == decision.p_value
    assert cmp.paired.n_tasks == decision.tasks  # the tasks it had seen when it decided
    with store:
        assert store.load(result.run_id).early_stop == stop
        assert store.load(result.run_id, cells=False).early_stop == stop
        assert store.load(result.run_id).comparisons == result.comparisons


def test_a_cells_file_of_an_until_decided_run_replays_its_verdict(tmp_path: Path) -> None:
    # the toolkit's reports rebuild a result from a run's cells JSONL: its comparison
    # must be the procedure's verdict, not fixed-size figures on tasks chosen by looking
    from benchkit.cli_toolkit import load_result
    from benchkit.store import JsonlSink

    suite = _suite({"base": 0.3, "tuned": 0.85}, until_decided=True, seed=4)
    cells = tmp_path / "cells.jsonl"
    result = benchkit.run(suite, store=False, sinks=[JsonlSink(cells)])
    assert result.early_stop is not None and result.early_stop.stopped
    loaded = load_result(cells)
    assert loaded.early_stop == result.early_stop
    assert loaded.comparisons == result.comparisons
    assert not loaded.interrupted and loaded.not_run == 0  # it stopped: it had decided
    (cmp,) = loaded.comparisons
    assert cmp.paired.method == "group_sequential" and cmp.paired.mde is None


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
    judge = EvaluatorSpec(  # the input in the prompt: the two tasks never share a reply
        "llm_rubric",
        options={
            "prompt": "Rate {output} to {input}",
            "base_url": llm_server.url,
            "model": "judge",
        },
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
        # the majority's verdict, valued at the mean of the repeats that gave it
        assert score.passed and score.value == pytest.approx(0.8)
        assert score.details["mean"] == pytest.approx((0.8 + 0.3 + 0.8) / 3)
        assert [r["passed"] for r in score.details["repeats"]] == [True, False, True]
        assert score.details["usage"]["prompt_tokens"] == 30
    (consistency,) = result.judge_report().consistency
    assert consistency.repeats == 3 and consistency.flipped == 2 and consistency.flip_rate == 1.0


def test_an_even_split_of_repeats_breaks_by_the_tie_rule(llm_server: FakeOpenAI) -> None:
    # two repeats: 8 (pass) on the first request, 3 (fail) with seed 1 — a tie, which fails,
    # and whose value is the failing side's (0.3), not a 0.55 that reads as a pass
    llm_server.respond = lambda body: "3" if body.get("seed") == 1 else "8"
    judge = EvaluatorSpec(
        "llm_rubric",
        options={"prompt": "Rate {output}", "base_url": llm_server.url, "model": "judge"},
    )
    suite = Suite(
        Benchmark("tie", tasks=[Task("t0", input=0)], evaluators=[judge]),
        conditions=[Condition("c", benchkit.CallableProvider(lambda x: "answer"))],
        options=benchkit.RunOptions(judge_repeats=2),
    )
    (cell,) = sync_run(suite, runner=benchkit.Runner(response_cache=MemoryCache())).cells
    (score,) = cell.scores
    assert not score.passed and score.value == pytest.approx(0.3)
    assert score.details["tie_rule"] == TIE_RULE == "fail"
    assert "1 of 2 repeats passed: a tie, which fails (the tie rule)" in (score.reason or "")
    assert cell.status == "fail"


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
