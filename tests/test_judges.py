"""How far a run's judges can be trusted (issue 26): agreement with people and between
evaluators, self-consistency, and position bias of the pairwise judge — from Python, the
reports and ``runs show --judges``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import benchkit
from benchkit import Benchmark, Condition, EvaluatorSpec, Suite, Task
from benchkit.judges import judge_report
from benchkit.reports import to_markdown
from benchkit.reports.html import to_html
from benchkit.results import CellResult, Score

from ._llm_server import FakeOpenAI
from ._support import REPO


def _cell(task: str, cond: str, epoch: int, **verdicts: bool | float) -> CellResult:
    scores = tuple(
        Score(name, float(v), bool(v >= 0.5) if isinstance(v, float) else bool(v))
        for name, v in verdicts.items()
    )
    return CellResult(task, cond, epoch, "pass", score=0.0, scores=scores)


# 8 tasks, two conditions; the judge's verdicts and a person's on each cell:
#   judge/human pass/pass 6, pass/fail 2, fail/pass 1, fail/fail 7 (16 cells)
T, F = True, False
JUDGE = [T, T, T, F, T, F, F, F, T, T, T, F, F, F, F, T]
HUMAN = [T, T, T, T, F, F, F, F, T, T, T, F, F, F, F, F]


def _rated() -> tuple[list[CellResult], dict[tuple[str, str, int], bool]]:
    cells: list[CellResult] = []
    ratings: dict[tuple[str, str, int], bool] = {}
    for i, (j, h) in enumerate(zip(JUDGE, HUMAN, strict=True)):
        cond = "a" if i < 8 else "b"
        cell = _cell(f"t{i % 8}", cond, 0, judge=j)
        cells.append(cell)
        ratings[cell.key] = h
    return cells, ratings


def test_agreement_with_people_counts_kappa_confusion_and_error_rates() -> None:
    cells, ratings = _rated()
    report = judge_report(cells, ratings, resamples=300)
    (h,) = report.humans
    assert h.n == 16 and h.n_tasks == 8 and report.ratings == 16
    assert dict(h.confusion) == {
        "judge_pass_human_pass": 6,
        "judge_pass_human_fail": 2,
        "judge_fail_human_pass": 1,
        "judge_fail_human_fail": 7,
    }
    # p_o = 13/16; judge passes 8/16, people 7/16: p_e = 0.5·7/16 + 0.5·9/16 = 0.5
    assert h.kappa.value == pytest.approx((13 / 16 - 0.5) / 0.5)
    assert h.kappa.interval is not None and h.kappa.interval.n == 8
    assert h.kappa.value is not None
    assert h.kappa.interval.low <= h.kappa.value <= h.kappa.interval.high
    assert h.sensitivity == pytest.approx(6 / 7) and h.specificity == pytest.approx(7 / 9)
    rate_a, rate_b = h.pass_rates
    se, sp = 6 / 7, 7 / 9
    assert rate_a.raw == rate_b.raw == 0.5  # 4 of 8 cells each
    assert rate_a.corrected == rate_b.corrected == pytest.approx((0.5 + sp - 1) / (se + sp - 1))
    assert rate_b.interval is not None and rate_b.interval.method == "task_bootstrap"
    lines = report.lines()
    assert any("judge vs people: Cohen's κ 0.62" in line for line in lines)
    assert any("corrected for its error rates (Rogan-Gladen)" in line for line in lines)


def test_score_ratings_use_a_weighted_kappa_or_spearman() -> None:
    cells = [_cell(f"t{i}", "a", 0, judge=v) for i, v in enumerate([0.0, 0.5, 1.0, 1.0, 0.5])]
    few = {c.key: v for c, v in zip(cells, [0.0, 0.5, 1.0, 0.5, 0.5], strict=True)}
    (h,) = judge_report(cells, few, resamples=100).humans
    assert h.scores is not None and h.scores.statistic == "weighted_kappa"
    many_cells = [_cell(f"t{i}", "a", 0, judge=i / 20) for i in range(20)]
    many = {c.key: (i / 20) ** 2 for i, c in enumerate(many_cells)}
    (h2,) = judge_report(many_cells, many, resamples=100).humans
    assert h2.scores is not None and h2.scores.statistic == "spearman_rho"
    assert h2.scores.value == pytest.approx(1.0)


def test_a_rating_outside_the_unit_range_is_refused() -> None:
    cells = [_cell("t0", "a", 0, judge=True)]
    with pytest.raises(benchkit.errors.StatsError, match="scaled onto"):
        judge_report(cells, {("t0", "a", 0): 4.0})


def test_agreement_between_judges_per_pair_and_fleiss_over_three() -> None:
    a = [True, True, False, False, True, False, True, False]
    b = [True, False, False, False, True, False, True, True]
    c = [True, True, False, True, True, False, True, False]
    cells = [
        _cell(f"t{i}", "x", 0, one=x, two=y, three=z)
        for i, (x, y, z) in enumerate(zip(a, b, c, strict=True))
    ]
    report = judge_report(cells, resamples=200)
    pairs = {(p.a, p.b): p for p in report.pairs}
    assert set(pairs) == {("one", "two"), ("one", "three"), ("two", "three")}
    assert pairs[("one", "two")].kappa.value == pytest.approx(benchkit.agreement.cohen_kappa(a, b))
    assert pairs[("one", "two")].alpha.value == pytest.approx(
        benchkit.agreement.krippendorff_alpha(list(zip(a, b, strict=True)))
    )
    assert report.fleiss is not None and report.fleiss_judges == ("one", "two", "three")
    assert report.fleiss.value == pytest.approx(
        benchkit.agreement.fleiss_kappa([list(t) for t in zip(a, b, c, strict=True)])
    )
    assert not report.humans and report.ratings == 0


def _pairwise_suite(server: FakeOpenAI, outputs: Mapping[str, str]) -> Suite:
    judge = EvaluatorSpec("llm_pairwise", options={"base_url": server.url, "model": "judge"})
    tasks = [Task(f"q{i}", input=f"question {i}", expected="a fair answer") for i in range(6)]
    return Suite(
        Benchmark("pairwise", tasks=tasks, evaluators=[judge]),
        conditions=[
            Condition(cid, benchkit.CallableProvider(lambda _x, out=out: out))
            for cid, out in outputs.items()
        ],
    )


def test_a_judge_that_always_picks_the_first_answer_is_caught(llm_server: FakeOpenAI) -> None:
    llm_server.respond = lambda body: "A"
    result = benchkit.run(_pairwise_suite(llm_server, {"sys": "an answer"}), store=False)
    assert len(llm_server.requests) == 12  # both orders, every cell
    for cell in result.cells:
        (score,) = cell.scores
        assert score.details["orders"] == ["response", "reference"]
        assert score.value == 0.5 and "followed the position" in (score.reason or "")
    (bias,) = result.judge_report().position
    assert (bias.n, bias.order_dependent, bias.first_won, bias.second_won) == (6, 6, 6, 0)
    assert bias.rate == 1.0
    assert "6 of 6 verdicts depended on the order" in to_markdown(result)


def test_a_judge_that_reads_the_answers_is_consistent(llm_server: FakeOpenAI) -> None:
    def prefer_good(body: Mapping[str, Any]) -> str:  # good > fair > meh, whatever the order
        text = body["messages"][-1]["content"]
        a, rest = text.split("Answer A:\n", 1)[1].split("\n\nAnswer B:\n", 1)
        b = rest.split("\n\n", 1)[0]
        rank = {"good": 2, "fair": 1}

        def quality(answer: str) -> int:
            return max((v for k, v in rank.items() if k in answer), default=0)

        return "A" if quality(a) > quality(b) else "B"

    llm_server.respond = prefer_good
    result = benchkit.run(
        _pairwise_suite(llm_server, {"good": "a good answer", "bad": "meh"}), store=False
    )
    values = {c.condition_id: c.score for c in result.cells}
    assert values == {"good": 1.0, "bad": 0.0}
    (bias,) = result.judge_report().position
    assert bias.order_dependent == 0 and bias.n == 12


def test_runs_show_judges_and_the_reports_say_it(tmp_path: Path) -> None:
    (tmp_path / "answers.py").write_text(
        "def answer(x):\n    return str(x) if x % 3 else f'{x}!'\n", encoding="utf-8"
    )
    tasks = "\n".join(f'  - {{id: t{i}, input: {i}, expected: "{i}"}}' for i in range(12))
    (tmp_path / "bench.yaml").write_text(
        textwrap.dedent(
            """\
            benchkit: 1
            id: two-graders
            version: "1"
            evaluators:
              - exact
              - {type: contains, keywords: ["!"], name: bang}
            conditions:
              - id: one
                provider: {type: python, file: answers.py, function: answer}
              - id: two
                provider: {type: python, file: answers.py, function: answer}
            tasks:
            """
        )
        + tasks
        + "\n",
        encoding="utf-8",
    )
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}
    store = str(tmp_path / "runs.db")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "benchkit", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=120,
        )

    ran = cli("run", "bench.yaml", "--store", store, "--judge-repeats", "2", "-f", "markdown")
    assert ran.returncode in (0, 1), ran.stderr
    assert "## Judges" in ran.stdout and "exact vs bang" in ran.stdout
    shown = cli("runs", "show", "latest", "--store", store, "--judges")
    assert shown.returncode == 0, shown.stderr
    assert "exact vs bang: Cohen's κ" in shown.stdout
    assert "exact asked 2 times: verdict flipped on 0 of 24 cells" in shown.stdout
    as_json = json.loads(
        cli("runs", "show", "latest", "--store", store, "--judges", "-f", "json").stdout
    )
    assert as_json["pairs"][0]["a"] == "exact" and as_json["pairs"][0]["n"] == 24
    html = cli("runs", "show", "latest", "--store", store, "-f", "html").stdout
    assert "<h2>Judges</h2>" in html and "exact vs bang" in html


def test_the_html_report_says_whether_each_comparison_is_significant() -> None:
    cells = [CellResult(f"t{i}", "a", 0, "fail", score=0.0) for i in range(5)] + [
        CellResult(f"t{i}", "b", 0, "pass", score=1.0) for i in range(5)
    ]
    from benchkit._aggregate import aggregate_run

    aggregates, groups, comparisons = aggregate_run(cells, ["a", "b"])
    info = benchkit.RunInfo("r", "b", None, "1", None, "native", (), benchkit.RunOptions())
    result = benchkit.RunResult(info, tuple(cells), aggregates, groups, comparisons)
    html = to_html(result)
    assert "with 5 tasks no result can reach p &lt; 0.05" in html
    assert "none detectable with 5 tasks" in html
    assert "significance follows the test" in html
