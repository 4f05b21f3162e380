"""Regression gating: ``compare --fail-on-regression`` and ``run --baseline``, end to end
through the CLI with their exit codes, and the verdict's rules (#44)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchkit._aggregate import in_words
from benchkit.cli import main
from benchkit.model import RunOptions
from benchkit.results import Comparison, ConditionInfo, RunInfo
from benchkit.stats import Interval, PairedComparison
from benchkit.store._compare import (
    COMMENT_MARKER,
    ConditionComparison,
    OutlineCell,
    RunComparison,
    check_regressions,
    compare_cells,
)

TASKS = 40

BENCH = """\
benchkit: 1
id: gate
name: Gate
evaluators: [exact]
conditions:
  - id: sys
    provider: {type: python, file: answers.py, function: answer}
tasks:
""" + "".join(f'  - {{id: t{i}, input: {i}, expected: "{i}"}}\n' for i in range(TASKS))

ANSWERS = """\
import os


def answer(task_input: int) -> str:
    broken = int(os.environ.get("GATE_BROKEN", "0"))
    return "nope" if task_input < broken else str(task_input)
"""


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    (tmp_path / "answers.py").write_text(ANSWERS, encoding="utf-8")
    path = tmp_path / "gate.yaml"
    path.write_text(BENCH, encoding="utf-8")
    return path


def _run(
    bench: Path, store: Path, run_id: str, broken: int, monkeypatch: pytest.MonkeyPatch, *more: str
) -> int:
    monkeypatch.setenv("GATE_BROKEN", str(broken))
    return main(
        ["run", str(bench), "--store", str(store), "--run-id", run_id, "--no-progress", *more]
    )


def test_compare_fails_on_a_significant_regression_and_says_why(
    bench: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.db"
    assert _run(bench, store, "base", 0, monkeypatch) == 0
    assert _run(bench, store, "same", 2, monkeypatch) == 0
    assert _run(bench, store, "worse", 10, monkeypatch) == 0
    capsys.readouterr()
    gate = ["--store", str(store), "--fail-on-regression"]

    # 2 of 40 tasks fail: McNemar p = 0.5, not a regression; the power is said.
    assert main(["compare", "base", "same", *gate]) == 0
    err = capsys.readouterr().err
    assert "no regression detectable; smallest detectable difference ±" in err
    assert f"with {TASKS} tasks" in err
    assert "sys is lower by 0.050, not significant" in err

    # 10 of 40 fail: p = 2^-9, worse by 0.25: exit 1, with the figures and the tasks.
    assert main(["compare", "base", "worse", *gate]) == 1
    err = capsys.readouterr().err
    assert err.startswith("benchkit: sys regressed: score 1.000 → 0.750 (Δ -0.250")
    assert "significant at α = 0.05" in err and "t0, t1" in err
    assert len(err.strip().splitlines()) == 1

    # ... but not by more than a margin of 0.3; a named condition; an unknown one is bad input.
    assert main(["compare", "base", "worse", *gate, "--margin", "0.3"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("no regression detectable; smallest detectable difference ±")
    assert err.endswith("(sys is lower by 0.250, within the margin 0.3).\n")
    assert main(["compare", "base", "worse", *gate, "--condition", "sys"]) == 1
    capsys.readouterr()
    assert main(["compare", "base", "worse", *gate, "--condition", "nope"]) == 2
    assert "no condition 'nope'" in capsys.readouterr().err
    assert main(["compare", "base", "worse", "--store", str(store), "--margin", "0.1"]) == 2
    assert "--fail-on-regression" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["compare", "base", "worse", *gate, "--margin", "1.5"])
    assert usage.value.code == 2 and "--margin: must be <= 1" in capsys.readouterr().err
    # Without the flag, compare reports and exits 0 whatever it finds.
    assert main(["compare", "base", "worse", "--store", str(store)]) == 0


def test_markdown_is_a_pull_request_comment(
    bench: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.db"
    assert _run(bench, store, "base", 0, monkeypatch) == 0
    assert _run(bench, store, "worse", 10, monkeypatch) == 0
    capsys.readouterr()
    argv = ["compare", "base", "worse", "--store", str(store), "-f", "markdown"]
    assert main([*argv, "--fail-on-regression"]) == 1
    comment = capsys.readouterr().out
    first, blank, why = comment.splitlines()[:3]
    assert first == "❌ **worse** vs baseline **base**: regression: sys Δ -0.250 " + (
        "(significant, beyond the margin 0)"
    )
    assert (blank, why[:14]) == ("", "sys regressed:")
    details = comment[comment.index("<details>") :]
    assert details.startswith("<details>\n<summary>Flipped tasks: 10 worse, 0 better</summary>")
    assert "- sys regressed (pass → fail): t0, t1, t2" in details
    assert comment.index("| condition |") < comment.index("<details>")
    assert comment.rstrip().endswith(COMMENT_MARKER)

    assert main(argv) == 0  # no gate: the differences, and no verdict
    assert capsys.readouterr().out.startswith(
        "**worse** vs baseline **base**: sys Δ -0.250 (significant)"
    )


def test_run_with_a_baseline_runs_and_gates_in_one_step(
    bench: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.db"
    assert _run(bench, store, "base", 0, monkeypatch) == 0
    # `latest` is resolved before the run starts: the baseline, not this run.
    assert _run(bench, store, "ok", 0, monkeypatch, "--baseline", "latest") == 0
    assert "no regression detectable" in capsys.readouterr().err
    assert _run(bench, store, "bad", 10, monkeypatch, "--baseline", "base", "-f", "markdown") == 1
    captured = capsys.readouterr()
    assert "❌ **bad** vs baseline **base**" in captured.out
    assert "benchkit: sys regressed" in captured.err
    assert (
        _run(
            bench,
            store,
            "tolerated",
            10,
            monkeypatch,
            "--baseline",
            "base",
            "--regression-margin",
            "0.3",
        )
        == 0
    )
    capsys.readouterr()
    # A baseline that is not there stops the run before it starts.
    assert _run(bench, store, "never", 0, monkeypatch, "--baseline", "missing") == 2
    assert "missing" in capsys.readouterr().err
    assert main(["runs", "show", "never", "--store", str(store)]) == 2


# -- the verdict's rules -------------------------------------------------------------------


def _pair(delta: float, p: float, *, n: int = 30) -> ConditionComparison:
    paired = PairedComparison(
        n=n,
        mean_a=0.5,
        mean_b=0.5 + delta,
        delta=delta,
        interval=Interval(delta - 0.1, delta + 0.1, 0.95, "paired_t", n),
        a_only=None,
        b_only=None,
        both=None,
        neither=None,
        mcnemar_p=None,
        p_value=p,
        method="paired_t",
        n_tasks=n,
        n_clusters=n,
        mde=0.12,
    )
    comparison = in_words(Comparison("c", "c", delta, paired, (), ()), 1)
    return ConditionComparison("c", "c", n, 0, 0, 0.5, 0.5 + delta, comparison, n, n)


@given(
    delta=st.floats(-1, 1, allow_nan=False),
    p=st.floats(0, 1, allow_nan=False),
    margin=st.floats(0, 1, allow_nan=False),
)
def test_only_a_significant_drop_beyond_the_margin_fails(
    delta: float, p: float, margin: float
) -> None:
    cmp = RunComparison("a", "b", "x", "x", (_pair(delta, p),))
    check = check_regressions(cmp, margin=margin)
    assert check.failed == (delta < -margin and p < 0.05)
    if not check.failed:
        assert check.message.startswith("no regression detectable; smallest detectable")


def test_a_pair_that_cannot_be_compared_fails_closed() -> None:
    blind = attrs.evolve(_pair(0.0, 1.0), comparison=None)
    check = check_regressions(RunComparison("a", "b", "x", "x", (blind,)))
    assert check.failed and "cannot be checked" in check.message


# -- Monte-Carlo: the gate's error rates -------------------------------------------------


def _outline_run(run_id: str, passed: list[bool]) -> tuple[Any, list[OutlineCell]]:
    info = RunInfo(run_id, "mc", None, "1", None, None, (ConditionInfo("sys"),), RunOptions())
    cells = [
        OutlineCell(f"t{i}", "sys", 0, "pass" if ok else "fail", 1.0 if ok else 0.0)
        for i, ok in enumerate(passed)
    ]
    return info, cells


def _gate_fails(rng: random.Random, tasks: int, rate_a: float, rate_b: float) -> bool:
    """One simulated pair of runs: each task has its own difficulty, and the new system
    passes it with a shifted chance; True when the gate fails the new run."""
    difficulty = [rng.random() for _ in range(tasks)]
    a = [rng.random() < min(1.0, 2 * rate_a * d) for d in difficulty]
    b = [rng.random() < min(1.0, 2 * rate_b * d) for d in difficulty]
    cmp = compare_cells(*_outline_run("a", a), *_outline_run("b", b))
    return check_regressions(cmp).failed


def test_the_gate_rarely_fails_an_equal_system_and_catches_a_real_drop() -> None:
    rng = random.Random(44)
    runs = 400
    false_alarms = sum(_gate_fails(rng, 60, 0.4, 0.4) for _ in range(runs)) / runs
    # A two-sided test at 5% fails an equal system on the "worse" side about 2.5% of the
    # time; the bound leaves room for the simulation's own noise (sd ≈ 0.8%).
    assert false_alarms <= 0.05
    caught = sum(_gate_fails(rng, 60, 0.4, 0.15) for _ in range(runs)) / runs
    assert caught >= 0.8
    improved = sum(_gate_fails(rng, 60, 0.15, 0.4) for _ in range(runs)) / runs
    assert improved <= 0.01  # a better system never fails the gate but by chance
