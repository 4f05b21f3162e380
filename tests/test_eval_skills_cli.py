"""``python -m benchkit eval``: the shipped benchmarks with the shipped skills, the report
files, the terminal summary, exit codes, and bad input (exit 2, one paragraph)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from benchkit import RunResult
from benchkit.cli import main
from benchkit.store import Store

from ._llm_server import FakeOpenAI, Reply
from ._support import FIXTURES, REPO

BENCHMARKS = REPO / "benchmarks"
SKILLS = BENCHMARKS / "skills"


def evaluate(*args: str, out: Path) -> int:
    return main(
        [
            "eval",
            "--benchmarks-dir",
            str(BENCHMARKS),
            "--output-dir",
            str(out),
            "--no-progress",
            *args,
        ]
    )


def reports_in(directory: Path) -> list[dict[str, Any]]:
    (path,) = directory.glob("eval-result-*.json")
    text = path.read_text(encoding="utf-8")
    assert not text.endswith("\n")
    data: list[dict[str, Any]] = json.loads(text)
    return data


def test_calculator_passes_coding_easy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = evaluate("--skills", str(SKILLS / "calculator" / "skill.json"), out=tmp_path)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    names = sorted(p.name.rsplit(".", 1)[-1] for p in tmp_path.iterdir())
    assert names == ["json", "json", "jsonl", "md"]  # report JSON, benchkit JSON, cells, markdown
    (report,) = reports_in(tmp_path)
    assert (report["skillId"], report["skillVersion"], report["benchmarkId"]) == (
        "calculator",
        "1.0.0",
        "coding-easy",
    )
    summary = report["summary"]
    assert (summary["completionRate"], summary["errorRate"], summary["partialScore"]) == (1, 0, 1)
    # 0.5 CR + 0.2 (1 - p95 / maxLatencyMs) + 0.3 (1 - ER), from the run's own p95: a
    # loaded machine's p95 of 1 s made it 0.9899, so no fixed floor
    bench = json.loads((BENCHMARKS / "coding-easy" / "benchmark.json").read_text("utf-8"))
    latency_term = 0.2 * (1 - min(report["latency"]["p95Ms"] / bench["maxLatencyMs"], 1))
    assert summary["compositeScore"] == pytest.approx(0.8 + latency_term, abs=1e-4)
    rows = {r["taskId"]: r for r in report["taskResults"]}
    assert len(rows) == 18 and {r["status"] for r in rows.values()} == {"pass"}
    assert rows["calc_exact_float"]["output"] == {"result": "6.0"}
    assert "18/18" in captured.out and "1.000 [0.824, 1.000]" in captured.out
    assert "calculator — CR: 100.0% | ER: 0.0% | Score: " in captured.out
    assert "reports: " in captured.err
    (native,) = tmp_path.glob("benchkit-result-*[0-9]Z.json")
    result = RunResult.from_json(native.read_text())
    assert (
        result.info.source_format == "eval-skills" and result.aggregate("calculator").passed == 18
    )


def test_metadata_checker_passes_skill_quality(tmp_path: Path) -> None:
    skill = str(SKILLS / "metadata_checker")
    assert evaluate("--skills", skill, "--benchmark", "skill-quality", out=tmp_path) == 0
    (report,) = reports_in(tmp_path)
    assert report["summary"]["completionRate"] == 1
    assert [r["status"] for r in report["taskResults"]] == ["pass"] * 7
    rows = {r["taskId"]: r for r in report["taskResults"]}
    assert rows["neighbour_without_skill_md"]["output"] == "SKILL.md is missing"


def test_web_search_mock_passes_web_search_basic_with_a_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llm_server: FakeOpenAI
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.url)
    monkeypatch.setenv("EVAL_SKILLS_LLM_KEY", "sk-judge")
    llm_server.queue(Reply.text("8"))
    skill = str(SKILLS / "web_search_mock")
    assert evaluate("--skills", skill, "--benchmark", "web-search-basic", out=tmp_path) == 0
    (report,) = reports_in(tmp_path)
    assert report["summary"]["completionRate"] == 1
    rows = {r["taskId"]: r for r in report["taskResults"]}
    assert len(rows) == 9 and {r["status"] for r in rows.values()} == {"pass"}
    assert rows["judged_wilson"]["score"] == 0.8
    assert rows["unknown_stays_empty"]["output"] == {"result": "", "source": ""}
    (judged,) = llm_server.requests
    assert "Edwin B. Wilson (1927)" in judged.body["messages"][1]["content"]


def test_web_search_basic_without_a_judge_key_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("EVAL_SKILLS_LLM_KEY", "OPENAI_API_KEY", "OPENAI_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    skill = str(SKILLS / "web_search_mock")
    assert evaluate("--skills", skill, "--benchmark", "web-search-basic", out=tmp_path) == 2
    assert "set EVAL_SKILLS_LLM_KEY" in capsys.readouterr().err


def test_the_broken_example_skills_show_an_error_and_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # benchmarks/skills-broken: one skill that crashes, one that answers wrongly (README).
    broken = BENCHMARKS / "skills-broken"
    code = evaluate("--skills", str(SKILLS / "calculator"), str(broken), "--no-store", out=tmp_path)
    out = capsys.readouterr().out
    assert code == 0
    assert "BROKEN: Condition crashing_calculator errored on every cell (18 of 18" in out
    assert 'calc_true_division (epoch 0): Expected "3.5" but got "4"' in out
    assert "sloppy_calculator vs calculator" in out
    reports = {r["skillId"]: r for r in reports_in(tmp_path)}
    assert reports["calculator"]["summary"]["completionRate"] == 1
    assert reports["crashing_calculator"]["summary"]["errorRate"] == 1
    sloppy = {r["taskId"]: r["status"] for r in reports["sloppy_calculator"]["taskResults"]}
    assert sloppy["calc_add"] == "pass" and sloppy["text_reverse"] == "fail"


def test_skills_side_by_side_with_exit_on_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = evaluate(
        "--skills",
        str(SKILLS / "calculator"),
        str(SKILLS / "web_search_mock"),
        "--format",
        "json",
        "html",
        "csv",
        "--exit-on-fail",
        "--min-completion",
        "0.5",
        out=tmp_path,
    )
    captured = capsys.readouterr()
    assert code == 1
    assert "1 skill(s) below threshold (0.5): web_search_mock" in captured.err
    # every cell of web_search_mock errored: one line says so instead of comparing it
    assert "BROKEN: Condition web_search_mock errored on every cell" in captured.out
    assert "web_search_mock vs calculator" not in captured.out
    calculator, mock = reports_in(tmp_path)
    assert (calculator["skillId"], mock["skillId"]) == ("calculator", "web_search_mock")
    assert mock["summary"]["errorRate"] == 1 and mock["summary"]["compositeScore"] == 0.2
    csv = next(tmp_path.glob("*.csv")).read_text().splitlines()
    assert csv[1].startswith("calculator,coding-easy,1.0000,1.0000,0.0000,")
    assert csv[2] == "web_search_mock,coding-easy,0.0000,0.0000,1.0000,0,0,0.2000"
    assert next(tmp_path.glob("*.html")).read_text().startswith("<!DOCTYPE html>")


def test_pass_at_k_over_runs(tmp_path: Path) -> None:
    bench = str(FIXTURES / "eval_skills" / "pass-at-k.json")
    args = ["--skills", str(SKILLS / "calculator"), "--benchmark", bench, "--runs", "2", "--k", "2"]
    assert evaluate(*args, out=tmp_path) == 0
    (report,) = reports_in(tmp_path)
    assert report["summary"]["partialScore"] == 0.6667  # two tasks always pass, one never
    assert report["summary"]["consistencyScore"] == 1
    assert [r["runId"] for r in report["taskResults"]] == [1, 1, 1, 2, 2, 2]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--benchmark", "no-such-benchmark"], "no benchmark 'no-such-benchmark'"),
        (["--runs", "0"], "expected a positive integer"),
        (["--format", "pdf"], "invalid choice: 'pdf'"),
        (["--min-completion", "2"], "expected a rate between 0 and 1"),
        (["--timeout", "-5"], "expected milliseconds > 0"),
        (
            ["--benchmark", str(FIXTURES / "eval_skills" / "pass-at-k.json"), "--k", "3"],
            "pass@3 needs at least 3 runs per task, got --runs 1",
        ),
    ],
)
def test_bad_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    code: str | int | None
    try:
        code = evaluate("--skills", str(SKILLS / "calculator"), *args, out=tmp_path)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert words in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not list(tmp_path.glob("eval-result-*"))


def test_a_sandbox_violation_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skill = tmp_path / "evil"
    skill.mkdir()
    (skill / "skill.json").write_text(
        json.dumps({"id": "evil", "name": "E", "version": "1", "entrypoint": "bash -c wget"})
    )
    assert evaluate("--skills", str(skill), out=tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert f"{skill / 'skill.json'}:1:" in err and "$.entrypoint" in err and "'wget'" in err


def test_eval_runs_go_to_the_run_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "runs.db"
    bench = str(FIXTURES / "eval_skills" / "pass-at-k.json")
    args = ["--skills", str(SKILLS / "calculator"), "--benchmark", bench, "--store", str(store)]
    assert evaluate(*args, out=tmp_path) == 0
    with Store(store) as opened:
        (summary,) = opened.runs()
        loaded = opened.load(summary.run_id)
    assert f"run {summary.run_id}: stored in {store}" in capsys.readouterr().err
    assert len(loaded.cells) == 3 and loaded.aggregates[0].condition_id == "calculator"


def test_eval_writes_nothing_outside_dot_benchkit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A checkout's working tree stays clean: reports go under .benchkit/ unless told.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCHKIT_STORE", raising=False)
    code = main(
        [
            "eval",
            "--benchmarks-dir",
            str(BENCHMARKS),
            "--skills",
            str(SKILLS / "calculator" / "skill.json"),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "benchkit: 18/18 cells (100%), 0 errors" in captured.err  # progress off a terminal
    assert [p.name for p in tmp_path.iterdir()] == [".benchkit"]
    assert len(list((tmp_path / ".benchkit" / "reports").glob("eval-result-*.json"))) == 1


def eval_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    env.pop("BENCHKIT_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "benchkit", "eval", "--benchmarks-dir", str(BENCHMARKS), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_eval_selects_like_run_and_writes_junit_xml(tmp_path: Path) -> None:
    # The same -k/--tag/--condition/--limit and --junit-xml as `run`, in a real process.
    junit = tmp_path / "ci" / "junit.xml"
    proc = eval_process(
        "--skills",
        str(SKILLS / "calculator"),
        str(SKILLS / "web_search_mock"),
        "-k",
        "calc_*",
        "--tag",
        "division",
        "--condition",
        "calculator",
        "--limit",
        "2",
        "--junit-xml",
        str(junit),
        "--output-dir",
        str(tmp_path / "out"),
        "--no-store",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "benchkit: 2/2 cells (100%), 0 errors" in proc.stderr
    root = ET.parse(junit).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "0", "0")
    (suite,) = root
    assert suite.get("name") == "coding-easy.calculator"
    assert [case.get("name") for case in suite] == ["calc_true_division", "calc_exact_float"]
    (report,) = reports_in(tmp_path / "out")
    assert report["skillId"] == "calculator"
    assert {row["taskId"] for row in report["taskResults"]} == {
        "calc_true_division",
        "calc_exact_float",
    }


def test_eval_selection_that_keeps_nothing_exits_2(tmp_path: Path) -> None:
    proc = eval_process(
        "--skills", str(SKILLS / "calculator"), "-k", "no_such_task", "--no-store", cwd=tmp_path
    )
    assert proc.returncode == 2
    assert "no task of 'coding-easy' matches the selection" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / ".benchkit" / "reports").exists()
