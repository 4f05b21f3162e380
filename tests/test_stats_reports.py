"""Task-level statistics through aggregation, the reports, the Python API and the CLI.

What issue 13 promises a user: epochs never inflate the evidence, a declared cluster is one
unit, a broken condition is called out instead of compared, and every report says why cells
failed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

import benchkit
from benchkit import reports
from benchkit._aggregate import aggregate_run, task_cluster
from benchkit.errors import ConfigError
from benchkit.model import Task
from benchkit.results import CellResult, RunResult

from ._support import FIXTURES, REPO

PASSAGES = FIXTURES / "stats" / "passages.yaml"


def cell(task: str, cond: str, epoch: int, ok: bool, **extra: object) -> CellResult:
    return CellResult(
        task_id=task,
        condition_id=cond,
        epoch=epoch,
        status="pass" if ok else "fail",
        score=1.0 if ok else 0.0,
        error_category="none" if ok else "assertion_failed",
        error=None if ok else f"{task} answered wrong",
        **extra,  # type: ignore[arg-type]
    )


def demo_cells(epochs: int) -> list[CellResult]:
    """12 tasks; `b` fails 7 of them on every epoch (deterministic systems)."""
    out = []
    for e in range(epochs):
        for t in range(12):
            out.append(cell(f"t{t}", "a", e, True))
            out.append(cell(f"t{t}", "b", e, t >= 7))
    return out


def test_epochs_of_deterministic_systems_do_not_inflate_the_evidence() -> None:
    one = aggregate_run(demo_cells(1), ["a", "b"])
    three = aggregate_run(demo_cells(3), ["a", "b"])
    (c1,), (c3,) = one[2], three[2]
    assert c1.paired.p_value == c3.paired.p_value == pytest.approx(0.015625)
    assert c1.paired.method == c3.paired.method == "mcnemar_exact"
    assert c1.regressed == c3.regressed == tuple(f"t{t}" for t in range(7))
    assert (c3.paired.n_tasks, c3.paired.n_clusters) == (12, 12)
    b1, b3 = one[0][1], three[0][1]
    assert b1.pass_rate_ci.method == "wilson" and b1.pass_rate_ci.n == 12
    assert b3.pass_rate_ci.method == "task_t" and b3.pass_rate_ci.n == 12
    assert b3.pass_rate == b1.pass_rate
    # the task is the unit: 36 cells do not make the interval narrower than 12 tasks do
    assert b3.pass_rate_ci.high - b3.pass_rate_ci.low >= b1.pass_rate_ci.high - b1.pass_rate_ci.low
    assert b3.variance is not None and b3.variance.within == 0.0 and b3.variance.tasks == 12


def test_more_than_two_conditions_get_holm_adjusted_p_values() -> None:
    cells = demo_cells(2) + [cell(f"t{t}", "c", e, t % 2 == 0) for t in range(12) for e in range(2)]
    _, _, comparisons = aggregate_run(cells, ["a", "b", "c"])
    assert len(comparisons) == 3
    for cmp in comparisons:
        assert cmp.p_holm is not None and cmp.paired.p_value is not None
        assert cmp.p_holm >= cmp.paired.p_value
        assert "Holm" in cmp.p_text()
    (only,) = aggregate_run(demo_cells(1), ["a", "b"])[2]
    assert only.p_holm is None and "Holm" not in only.p_text()


def test_pass_at_k_is_compared_per_task() -> None:
    cells = [cell("t0", "a", e, e == 0) for e in range(3)] + [
        cell("t0", "b", e, False) for e in range(3)
    ]
    cells += [cell(f"t{t}", c, e, True) for t in (1, 2) for c in "ab" for e in range(3)]
    aggs, _, (cmp,) = aggregate_run(cells, ["a", "b"], method="pass_at_k", k=2)
    assert aggs[0].score == pytest.approx((2 / 3 + 1 + 1) / 3)  # pass@2 of 1-in-3 is 2/3
    assert aggs[0].score_ci is not None and aggs[0].score_ci.n == 3
    assert cmp.paired.delta == pytest.approx(-2 / 9)
    assert cmp.regressed == ("t0",) and cmp.paired.method == "sign_flip_exact"


def test_declared_clusters_are_the_unit() -> None:
    cells = [
        cell(f"t{t}", c, 0, c == "a" or t >= 4, cluster=f"p{t // 4}")
        for t in range(12)
        for c in "ab"
    ]
    aggs, _, (cmp,) = aggregate_run(cells, ["a", "b"])
    assert (aggs[1].n_tasks, aggs[1].n_clusters) == (12, 3)
    assert aggs[1].pass_rate_ci.method == "cluster_t" and aggs[1].pass_rate_ci.n == 3
    assert cmp.paired.method == "sign_flip_exact"  # not McNemar over 12 tasks
    assert cmp.paired.n_clusters == 3 and cmp.paired.mde is None
    assert "no difference can reach p < 0.05" in cmp.power_text()


def test_task_cluster_reads_dotted_fields_and_names_a_missing_one() -> None:
    task = Task(id="q1", domain="math", metadata={"passage": {"id": 7}})
    assert task_cluster(task, "metadata.passage.id") == "7"
    assert task_cluster(task, "domain") == "math"
    with pytest.raises(ConfigError, match=r"task 'q1' has no field 'metadata\.topic'"):
        task_cluster(task, "metadata.topic")


def broken_run() -> RunResult:
    return benchkit.run(PASSAGES, store=False)


def test_a_broken_condition_is_called_out_not_compared() -> None:
    result = broken_run()
    down = result.aggregate("down")
    assert down.broken and down.errors == down.n == 12
    assert {(c.baseline, c.target) for c in result.comparisons} == {("right", "weak")}
    markdown = reports.to_markdown(result)
    first = markdown.split("\n| condition")[0]
    assert (
        "**Broken:** Condition down errored on every cell (12 of 12; execution_error ×12)" in first
    )
    assert "ConnectionError: cannot reach the model" in first
    assert "down vs" not in markdown and "vs down" not in markdown
    console = Console(record=True, width=200)
    console.print(reports.to_table(result))
    text = console.export_text()
    assert text.index("BROKEN: Condition down") < text.index("condition")
    assert "Broken:</b> Condition down errored" in result._repr_html_()


def test_a_result_renders_itself_as_markdown() -> None:
    # result.to_markdown() is the Markdown report, as reports.to_markdown(result) makes it.
    result = broken_run()
    markdown = result.to_markdown()
    assert markdown == reports.to_markdown(result)
    assert markdown.startswith("# ") and "**Broken:** Condition down errored" in markdown
    assert "| weak | assertion_failed | 4 |" in markdown


def test_every_format_says_why_cells_failed() -> None:
    result = broken_run()
    weak = result.aggregate("weak")
    assert weak.errors_by_category == {"assertion_failed": 4}
    quoted = [(e.category, e.task_id, e.message) for e in weak.failure_examples]
    assert quoted == [
        ("assertion_failed", "p2-a", 'Expected "20" but got "nope"'),
        ("assertion_failed", "p2-b", 'Expected "21" but got "nope"'),
    ]
    markdown = reports.to_markdown(result)
    assert (
        '| weak | assertion_failed | 4 | `p2-a` (epoch 0): Expected "20" but got "nope"' in markdown
    )
    console = Console(record=True, width=300)
    console.print(reports.to_table(result))
    assert 'weak failures: assertion_failed ×4: p2-a (epoch 0): Expected "20"' in (
        console.export_text()
    )
    html = result._repr_html_()
    assert "Why cells failed" in html and "p2-a (epoch 0): Expected &quot;20&quot;" in html
    data = json.loads(reports.to_json(result))
    agg = next(a for a in data["aggregates"] if a["condition_id"] == "weak")
    assert agg["failure_examples"][0]["task_id"] == "p2-a"
    assert agg["pass_rate_ci"]["method"] == "cluster_t" and agg["pass_rate_ci"]["n"] == 3
    assert data["comparisons"][0]["paired"]["method"] == "sign_flip_exact"
    assert RunResult.from_json(reports.to_json(result)) == result


def test_cluster_by_from_yaml_and_from_python() -> None:
    result = broken_run()
    assert result.info.options.cluster_by == "metadata.passage"
    assert {c.cluster for c in result.cells} == {"p1", "p2", "p3"}
    plain = benchkit.run(PASSAGES, store=False, cluster_by="id")
    assert plain.aggregate("weak").n_clusters == 6
    assert plain.comparisons[0].paired.method == "mcnemar_exact"  # 6 independent tasks


def test_a_task_without_the_cluster_field_stops_the_run_before_it_starts() -> None:
    with pytest.raises(ConfigError, match=r"has no field 'metadata\.author'"):
        benchkit.run(PASSAGES, store=False, cluster_by="metadata.author")


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(
        [sys.executable, "-m", "benchkit", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_cli_cluster_by_and_runs_show_cells(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    ran = cli(
        "run", str(PASSAGES), "--cluster-by", "id", "--no-progress", "--store", store,
        "-f", "json", cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["info"]["options"]["cluster_by"] == "id"
    run_id = result["info"]["run_id"]
    shown = cli(
        "runs", "show", run_id, "--store", store, "--cells", "--status", "fail",
        "--condition", "weak", "--task", "p2-*", "-f", "json", cwd=tmp_path,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)
    assert [(r["task"], r["epoch"], r["status"]) for r in rows] == [
        ("p2-a", 0, "fail"),
        ("p2-a", 1, "fail"),
        ("p2-b", 0, "fail"),
        ("p2-b", 1, "fail"),
    ]
    assert rows[0]["reason"] == 'Expected "20" but got "nope"'
    errors = cli("runs", "show", run_id, "--store", store, "--cells", "--status", "error",
                 cwd=tmp_path)  # fmt: skip
    assert errors.returncode == 0 and "12 cells of run" in errors.stdout
    assert "ConnectionError" in errors.stdout
    table = cli("runs", "show", run_id, "--store", store, cwd=tmp_path)
    assert "BROKEN: Condition down errored on every cell" in table.stdout
    wrong = cli("runs", "show", run_id, "--store", store, "--status", "fail", cwd=tmp_path)
    assert wrong.returncode == 2 and "add --cells" in wrong.stderr
    unknown = cli("runs", "show", run_id, "--store", store, "--cells", "--condition", "x",
                  cwd=tmp_path)  # fmt: skip
    assert unknown.returncode == 2 and "no condition 'x'" in unknown.stderr


def test_compare_runs_uses_the_task_level_test_and_holm() -> None:
    from benchkit.store._compare import compare_runs, to_markdown

    base = benchkit.run(PASSAGES, store=False, cluster_by="id", epochs=1)
    again = benchkit.run(PASSAGES, store=False, cluster_by="id", epochs=3)
    cmp = compare_runs(base, again, pairs=[("right", "weak"), ("weak", "right")])
    first, second = (c.comparison for c in cmp.conditions)
    assert first is not None and second is not None
    assert first.paired.method == "mcnemar_exact" and first.regressed == ("p2-a", "p2-b")
    assert first.p_holm == pytest.approx(min(1.0, 2 * (first.paired.p_value or 0)))
    markdown = to_markdown(cmp)
    assert "| p (test) |" in markdown and "(McNemar; Holm 1.0000)" in markdown
    assert "right → weak regressed (pass → fail): p2-a, p2-b" in markdown
