"""How far a run's judges can be trusted (issue 26): agreement with people and between
evaluators, self-consistency, and position bias of the pairwise judge — from Python, the
reports and ``runs show --judges``."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import benchkit
from benchkit import Benchmark, Condition, EvaluatorSpec, Suite, Task
from benchkit.judges import (
    INFORMATIVE,
    Agreement,
    CorrectedRate,
    HumanAgreement,
    JudgeReport,
    combine_repeats,
    judge_report,
)
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
    report = judge_report(cells, ratings)
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
    # 8 tasks: below the 20 an agreement interval needs to cover, so none, and why
    assert h.kappa.interval is None
    assert h.kappa.note == "no interval with 8 tasks: below 20 none covers near 95 %"
    assert h.sensitivity == pytest.approx(6 / 7) and h.specificity == pytest.approx(7 / 9)
    rate_a, rate_b = h.pass_rates
    se, sp = 6 / 7, 7 / 9
    assert rate_a.raw == rate_b.raw == 0.5  # 4 of 8 cells each
    assert rate_a.corrected == rate_b.corrected == pytest.approx((0.5 + sp - 1) / (se + sp - 1))
    # 16 rated cells: the corrected rate has its profile-likelihood interval, around it
    iv = rate_b.interval
    assert iv is not None and iv.method == "profile_likelihood" and iv.n == 8
    assert 0.0 <= iv.low < rate_b.corrected < iv.high <= 1.0  # type: ignore[operator]
    assert rate_b.youden == pytest.approx(se + sp - 1) and rate_b.note == ""
    lines = report.lines()
    assert any(
        "judge vs people: Cohen's κ 0.62 (16 cells, 8 tasks); no interval with 8 tasks" in line
        for line in lines
    )
    assert any("corrected for its error rates (Rogan-Gladen)" in line for line in lines)


def test_score_ratings_use_a_weighted_kappa_or_spearman() -> None:
    cells = [_cell(f"t{i}", "a", 0, judge=v) for i, v in enumerate([0.0, 0.5, 1.0, 1.0, 0.5])]
    few = {c.key: v for c, v in zip(cells, [0.0, 0.5, 1.0, 0.5, 0.5], strict=True)}
    (h,) = judge_report(cells, few).humans
    assert h.scores is not None and h.scores.statistic == "weighted_kappa"
    many_cells = [_cell(f"t{i}", "a", 0, judge=i / 20) for i in range(20)]
    many = {c.key: (i / 20) ** 2 for i, c in enumerate(many_cells)}
    (h2,) = judge_report(many_cells, many).humans
    assert h2.scores is not None and h2.scores.statistic == "spearman_rho"
    assert h2.scores.value == pytest.approx(1.0)


def test_a_corrected_rate_always_has_its_interval_or_the_reason_it_has_none() -> None:
    def run(rated: int, se: float, sp: float) -> CorrectedRate:
        rng = random.Random(3)
        cells, ratings = [], {}
        for i in range(40):
            human = rng.random() < 0.5
            judge = (rng.random() < se) if human else (rng.random() >= sp)
            cell = _cell(f"t{i}", "a", 0, judge=judge)
            cells.append(cell)
            if i < rated:
                ratings[cell.key] = human
        (h,) = judge_report(cells, ratings).humans
        (rate,) = h.pass_rates
        return rate

    few = run(6, 0.9, 0.9)
    assert few.corrected is None and few.interval is None
    assert few.note.startswith("no correction: 6 rated cells measure the judge's error rates")
    good = run(30, 0.9, 0.9)
    assert good.interval is not None and good.corrected is not None and good.note == ""
    assert good.interval.low <= good.corrected <= good.interval.high
    coin = run(40, 0.6, 0.55)
    assert coin.youden is not None and coin.youden < INFORMATIVE
    assert coin.note.startswith("not informative: sensitivity") and coin.interval is not None
    line = next(x for x in JudgeReport(40, humans=(_human_with(coin),)).lines() if "pass rate" in x)
    assert "corrected for its error rates (Rogan-Gladen); not informative:" in line


def _human_with(rate: CorrectedRate) -> HumanAgreement:
    kappa = Agreement("cohen_kappa", 0.1, None, 40, 40)
    confusion = dict.fromkeys(
        (
            "judge_pass_human_pass",
            "judge_pass_human_fail",
            "judge_fail_human_pass",
            "judge_fail_human_fail",
        ),
        10,
    )
    return HumanAgreement("judge", 40, 40, kappa, None, confusion, None, None, (rate,))


def test_a_clipped_correction_still_has_an_interval_that_holds_it() -> None:
    # the judge passes fewer cells than its false-pass rate alone explains: Rogan-Gladen
    # clips at 0, and the interval reaches from 0 up, never the point [0.000, 0.000]
    cells, ratings = [], {}
    for i in range(30):
        human = i < 12  # 12 human passes, 18 fails among the rated cells
        judge = (i < 10) if human else (i % 6 == 0)  # Se 10/12, Sp 15/18
        cell = _cell(f"r{i}", "a", 0, judge=judge)
        cells.append(cell)
        ratings[cell.key] = human
    cells += [_cell(f"u{i}", "b", 0, judge=False) for i in range(30)]
    (h,) = judge_report(cells, ratings).humans
    rate_b = next(r for r in h.pass_rates if r.condition_id == "b")
    assert rate_b.corrected == 0.0 and rate_b.interval is not None
    assert rate_b.interval.low == 0.0 and rate_b.interval.high > 0.02


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
    report = judge_report(cells)
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


def test_combine_repeats_takes_the_majority_and_breaks_ties_by_the_declared_rule() -> None:
    def score(value: float, usage: int) -> Score:
        details = {"usage": {"prompt_tokens": usage, "completion_tokens": 1}}
        return Score("j", value, value >= 0.5, reason="judged", details=details)

    odd = combine_repeats([score(0.9, 10), score(0.2, 20), score(0.45, 30)])
    assert not odd.passed and odd.value == pytest.approx((0.2 + 0.45) / 2)  # fail side
    assert odd.details["mean"] == pytest.approx((0.9 + 0.2 + 0.45) / 3)
    assert odd.details["usage"] == {"prompt_tokens": 60, "completion_tokens": 3}
    assert "tie_rule" not in odd.details and odd.reason == "judged — 1 of 3 repeats passed"
    even = combine_repeats([score(1.0, 1), score(0.0, 1)])
    assert not even.passed and even.value == 0.0 and even.details["tie_rule"] == "fail"
    for found in ([score(1.0, 1)] * 2, [score(0.7, 1), score(0.6, 1), score(0.1, 1)]):
        both = combine_repeats(found)
        assert both.passed and both.value is not None and both.value >= 0.5  # never disagree


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
    result = benchkit.run(_pairwise_suite(llm_server, {"sys": "a wrong answer"}), store=False)
    assert len(llm_server.requests) == 12  # both orders, every cell
    for cell in result.cells:
        (score,) = cell.scores
        assert score.details["orders"] == ["response", "reference"]
        assert score.details["position_inconsistent"] is True
        # a failure with its reason, not a 0.5 tie that passes at the default threshold
        assert not score.passed and score.value == 0.0
        assert (score.reason or "").startswith("position_inconsistent: ")
        assert cell.status == "fail"
    assert result.aggregates[0].passed == 0  # none of the 6 wrong answers passes
    (bias,) = result.judge_report().position
    assert (bias.n, bias.order_dependent, bias.first_won, bias.second_won) == (6, 6, 6, 0)
    assert bias.rate == 1.0
    assert "6 of 6 verdicts depended on the order" in to_markdown(result)
    assert "each failed as position_inconsistent" in to_markdown(result)


def test_the_pairwise_judge_can_be_asked_in_one_order(llm_server: FakeOpenAI) -> None:
    llm_server.respond = lambda body: "A"
    suite = _pairwise_suite(llm_server, {"sys": "an answer"})
    (spec,) = suite.benchmark.evaluators
    one = EvaluatorSpec("llm_pairwise", options={**spec.options, "both_orders": False})
    suite = Suite(
        Benchmark("pairwise", tasks=suite.benchmark.tasks, evaluators=[one]),
        suite.conditions,
    )
    result = benchkit.run(suite, store=False)
    assert len(llm_server.requests) == 6  # one order: half the calls, no bias measured
    for cell in result.cells:
        (score,) = cell.scores
        assert score.details["orders"] == ["response"] and score.passed
        assert score.reason == "response preferred with the response first"
    assert result.judge_report().position == ()


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
    assert "significance follows the test" not in html  # the interval agrees with the test
