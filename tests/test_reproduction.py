"""Reproducing a published number (#37): the reproduction computed from the cells (the
task the unit, Wilson or cluster t), carried in the JSON, printed by every report and
served to the explorer; end to end from a dataset file through the CLI against a fake
log-probability server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import benchkit
from benchkit import (
    Benchmark,
    CellResult,
    ConditionInfo,
    ConfigError,
    Reproduces,
    RunInfo,
    RunOptions,
    RunResult,
    Score,
    Store,
)
from benchkit.reports._text import to_markdown, to_table
from benchkit.reports.html import to_html
from benchkit.stats import wilson_interval

from ._logprob_server import LogprobServer
from ._support import REPO

PUBLISHED = Reproduces(metric="acc", value=0.6, source="a paper, table 2")


def _cell(
    task: str, acc: float, norm: float, condition: str = "m", status: str = "pass"
) -> CellResult:
    details = {"metrics": {"acc": acc, "acc_norm": norm}}
    score = Score("multiple_choice", acc, acc == 1.0, details=details)
    return CellResult(task, condition, 0, status, scores=(score,), score=acc)  # type: ignore[arg-type]


def _result(cells: list[CellResult], reproduces: Reproduces | None = PUBLISHED) -> RunResult:
    conditions = tuple(ConditionInfo(c) for c in dict.fromkeys(cell.condition_id for cell in cells))
    info = RunInfo(
        "run_x", "b", None, "0", None, "dataset", conditions, RunOptions(), reproduces=reproduces
    )
    return RunResult(info, tuple(cells))


def test_the_reproduction_is_computed_from_the_cells() -> None:
    accs = [1, 1, 1, 0, 1, 0, 1, 1, 0, 1]  # 7 of 10
    norms = [1, 0, 1, 0, 1, 0, 1, 1, 0, 0]  # 5 of 10
    result = _result(
        [_cell(f"t{i}", a, n) for i, (a, n) in enumerate(zip(accs, norms, strict=True))]
    )
    reproduction = result.reproduction
    assert reproduction is not None
    assert (reproduction.metric, reproduction.published, reproduction.source) == (
        "acc",
        0.6,
        "a paper, table 2",
    )
    (row,) = reproduction.rows
    wilson = wilson_interval(7, 10)
    assert row.value == pytest.approx(0.7)
    assert (row.ci.low, row.ci.high, row.ci.method, row.ci.n) == (
        wilson.low,
        wilson.high,
        "wilson",
        10,
    )
    assert row.difference == pytest.approx(0.1)
    assert (row.difference_low, row.difference_high) == pytest.approx(
        (wilson.low - 0.6, wilson.high - 0.6)
    )
    assert row.inside
    assert [(m.name, round(m.value, 3)) for m in row.metrics] == [("acc", 0.7), ("acc_norm", 0.5)]
    line, metrics = reproduction.lines()
    assert line == (
        f"reproduction (m): acc published 0.600 (a paper, table 2), ours 0.700 "
        f"[{wilson.low:.3f}, {wilson.high:.3f}] (Wilson, n=10 tasks); difference +0.100 "
        f"[{wilson.low - 0.6:+.3f}, {wilson.high - 0.6:+.3f}]; the published value lies inside "
        "our 95 % interval"
    )
    assert metrics.startswith("metrics (m): acc 0.700 [") and " · acc_norm 0.500 [" in metrics


def test_a_published_value_outside_the_interval_is_not_reproduced_and_errors_count_zero() -> None:
    cells = [_cell(f"t{i}", 1, 1) for i in range(40)]
    cells += [CellResult(f"e{i}", "m", 0, "error", error="boom") for i in range(10)]
    reproduction = _result(cells).reproduction
    assert reproduction is not None
    (row,) = reproduction.rows
    assert row.value == pytest.approx(0.8) and row.ci.n == 50  # the 10 errors count 0
    assert not row.inside and "OUTSIDE our 95 % interval: not reproduced" in reproduction.lines()[0]


def test_epochs_make_the_interval_a_t_interval_over_tasks() -> None:
    cells = [_cell(f"t{i % 6}", float(i % 3 != 0), 1.0) for i in range(12)]
    cells = [
        CellResult(c.task_id, "m", i // 6, c.status, scores=c.scores, score=c.score)
        for i, c in enumerate(cells)
    ]
    reproduction = _result(cells).reproduction
    assert reproduction is not None
    assert reproduction.rows[0].ci.method == "task_t" and reproduction.rows[0].ci.n == 6


def test_a_metric_may_be_an_evaluators_score_or_the_pass_rate() -> None:
    cells = [
        CellResult(
            f"t{i}", "m", 0, "pass" if i else "fail", scores=(Score("judge", 0.5 * i, True),)
        )
        for i in range(3)
    ]
    by_score = _result(cells, Reproduces("judge", 0.5)).reproduction
    by_rate = _result(cells, Reproduces("pass_rate", 0.5)).reproduction
    assert by_score is not None and by_score.rows[0].value == pytest.approx(0.5)
    assert by_rate is not None and by_rate.rows[0].value == pytest.approx(2 / 3)
    assert _result(cells, Reproduces("f1", 0.5)).reproduction is None  # no cell carries it


def test_the_published_value_is_a_fraction() -> None:
    with pytest.raises(ConfigError, match=r"write a published 66\.3 % as 0\.663"):
        Reproduces("acc", 66.3)


def test_json_carries_the_reproduction_and_reads_it_back() -> None:
    result = _result([_cell("a", 1, 1), _cell("b", 0, 1)])
    data = json.loads(result.to_json())
    assert data["reproduction"]["rows"][0]["value"] == 0.5
    assert data["info"]["reproduces"] == {
        "metric": "acc",
        "value": 0.6,
        "source": "a paper, table 2",
        "condition": None,
    }
    assert RunResult.from_json(result.to_json()) == result
    plain = json.loads(_result([_cell("a", 1, 1)], reproduces=None).to_json())
    assert "reproduction" not in plain and "reproduces" not in plain["info"]


def test_every_report_prints_the_same_lines() -> None:
    result = _result([_cell("a", 1, 1), _cell("b", 0, 1), _cell("c", 1, 0)])
    assert result.reproduction is not None
    lines = result.reproduction.lines()
    markdown = to_markdown(result)
    assert "## Reproduction" in markdown and all(f"- {line}" in markdown for line in lines)
    caption = str(to_table(result).caption)
    assert all(line in caption for line in lines)
    page = to_html(result)
    assert "<h2>Reproduction</h2>" in page and "lies inside our 95 % interval" in page


def test_the_explorer_api_serves_the_lines(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from benchkit.serve import create_app

    from ._serve import running

    suite = benchkit.Suite(
        Benchmark(
            "b",
            tasks=[benchkit.Task(f"t{i}", input=str(i), expected=str(i)) for i in range(4)],
            evaluators=[benchkit.EvaluatorSpec("exact")],
            reproduces=Reproduces("pass_rate", 0.9, "x"),
        ),
        conditions=[
            benchkit.Condition("echo", benchkit.CallableProvider(lambda s: s if s != "3" else "no"))
        ],
    )
    with Store(tmp_path / "store.db") as store:
        result = benchkit.run(suite, store=store)
    assert result.reproduction is not None and result.reproduction.rows[0].value == 0.75
    app = create_app(store=tmp_path / "store.db", root=tmp_path)
    with running(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        detail = client.get(f"/api/runs/{result.run_id}").json()
    assert detail["reproduction"]["lines"] == result.reproduction.lines()
    assert detail["info"]["reproduces"]["value"] == 0.9
    assert "reproductionSection" in (REPO / "src/benchkit/serve/static/app.js").read_text()


def test_a_dataset_file_reproduces_a_number_through_the_cli(tmp_path: Path) -> None:
    rows = [
        {"q": f"Is {w} cold?", "a": "yes", "b": "no way at all", "answer": i % 2}
        for i, w in enumerate("abcdefgh")
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with LogprobServer() as server:
        (tmp_path / "mc.yaml").write_text(
            "dataset: {path: data.jsonl}\nid: mc\n"
            'prompt: {input: "Question: {q}\\nAnswer:", choices: ["{a}", "{b}"], target: answer}\n'
            f"conditions: [{{id: fake, provider: {{type: chat, model: fake, base_url: '{server.url}'}}}}]\n"
            "reproduces: {metric: acc, value: 0.5, source: coin}\n"
        )
        out = tmp_path / "mc.json"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchkit",
                "run",
                str(tmp_path / "mc.yaml"),
                "--no-store",
                "--no-progress",
                "--format",
                "table",
                "-o",
                str(out),
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr
    assert "reproduction (fake): acc published 0.500 (coin), ours 0.500" in proc.stdout
    assert "acc_norm" in proc.stdout
    data = json.loads(out.read_text())
    # the fake model prefers the shorter answer ("yes"): right on the even rows only
    assert data["reproduction"]["rows"][0]["value"] == 0.5
    assert data["reproduction"]["rows"][0]["inside"] is True


def test_a_native_file_declares_it_too_and_writes_it_back(tmp_path: Path) -> None:
    from benchkit.formats.native import dump

    path = tmp_path / "n.yaml"
    path.write_text(
        "benchkit: 1\nid: n\nreproduces: {metric: pass_rate, value: 0.5, source: x}\n"
        "tasks: [{id: a}]\n"
    )
    bench = benchkit.load(path).benchmark
    assert bench.reproduces == Reproduces("pass_rate", 0.5, "x")
    assert dump(bench)["reproduces"] == {
        "metric": "pass_rate",
        "value": 0.5,
        "source": "x",
        "condition": None,
    }
    path.write_text(
        "benchkit: 1\nid: n\nreproduces: {metric: acc, value: 66.3}\ntasks: [{id: a}]\n"
    )
    with pytest.raises(benchkit.FormatError, match=r"reproduces\.value"):
        benchkit.load(path)
