"""skillvault bench v0 end to end: benchkit's example suite against its golden files.

The golden files (tests/fixtures/skillvault/golden) are what benchkit wrote for
benchmarks/skillvault-bench-v0, with the config directory written as ``<CONFIG_DIR>`` and
``git_commit`` null (the run was outside a git work tree): a regression guard. The tests
run a copy of the suite in a temporary directory that git is told not to look above, so
``git_commit`` is null here too, wherever the temporary directory lives. The same checks
against the original tool's own outputs are in tests/conformance.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import benchkit
from benchkit.cli import main
from benchkit.formats import detect_format, skillvault
from benchkit.formats.skillvault.report import (
    build_report,
    build_run,
    condition_order,
    dumps,
    render_report_table,
    render_run_table,
)
from benchkit.reports import to_markdown

from ._support import FIXTURES, REPO

SUITE = REPO / "benchmarks" / "skillvault-bench-v0"
GOLDEN = FIXTURES / "skillvault" / "golden"


def copy_outside_git(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A writable copy of the suite at ``source`` where `git rev-parse` finds no repository."""
    target = tmp_path / "suite"
    shutil.copytree(source, target, copy_function=shutil.copyfile)
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # the source may be read-only
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("GIT_DIR", "GIT_WORK_TREE"):
        monkeypatch.delenv(name, raising=False)
    return target


@pytest.fixture
def suite_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the shipped suite where `git rev-parse` finds no repository."""
    return copy_outside_git(SUITE, tmp_path, monkeypatch)


def read_golden(golden_dir: Path, name: str, config_dir: Path) -> str:
    """A golden file with its ``<CONFIG_DIR>`` placeholder filled in."""
    text = (golden_dir / name).read_text(encoding="utf-8")
    return text.replace("<CONFIG_DIR>", str(config_dir))


def golden(name: str, config_dir: Path) -> str:
    return read_golden(GOLDEN, name, config_dir)


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    return subprocess.run(
        [sys.executable, "-m", "benchkit", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def assert_cli_matches(golden_dir: Path, suite_dir: Path) -> None:
    """`bench run` (table and --out JSON) and `bench report` (JSON and table) write exactly
    the golden files of ``golden_dir``."""
    out = suite_dir.parent / "run.json"
    proc = run_cli(
        "bench",
        "run",
        "--config",
        "suite/bench.yaml",
        "--format",
        "table",
        "--out",
        str(out),
        cwd=suite_dir.parent,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == read_golden(golden_dir, "run.table.txt", suite_dir)
    assert out.read_bytes() == read_golden(golden_dir, "run.deterministic.json", suite_dir).encode()

    report = run_cli("bench", "report", "--input", str(out), cwd=suite_dir.parent)
    assert report.returncode == 0, report.stderr
    assert report.stdout == read_golden(golden_dir, "report.json", suite_dir)
    table = run_cli(
        "bench", "report", "--input", str(out), "--format", "table", cwd=suite_dir.parent
    )
    assert table.returncode == 0, table.stderr
    assert table.stdout == read_golden(golden_dir, "report.table.txt", suite_dir)


def assert_builders_match(golden_dir: Path, suite_dir: Path, concurrency: int = 1) -> None:
    """The library's run/report builders and table renderers give the golden files too."""
    loaded = skillvault.load_config(suite_dir / "bench.yaml")
    result = benchkit.run(skillvault.to_suite(loaded, concurrency=concurrency))
    run = build_run(loaded, result, git_commit=skillvault.git_commit(loaded.config_dir))
    assert dumps(run) == read_golden(golden_dir, "run.deterministic.json", suite_dir)
    assert render_run_table(run) == read_golden(golden_dir, "run.table.txt", suite_dir)
    report = build_report(run)
    assert dumps(report) == read_golden(golden_dir, "report.json", suite_dir)
    assert render_report_table(report, condition_order(run)) == read_golden(
        golden_dir, "report.table.txt", suite_dir
    )


def test_cli_run_and_report_equal_the_golden_files_byte_for_byte(suite_dir: Path) -> None:
    assert_cli_matches(GOLDEN, suite_dir)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_library_builders_equal_the_golden_files(suite_dir: Path, concurrency: int) -> None:
    assert_builders_match(GOLDEN, suite_dir, concurrency)


def test_two_deterministic_runs_are_byte_identical(
    suite_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(suite_dir / "bench.yaml")
    assert main(["bench", "run", "--config", config]) == 0
    first = capsys.readouterr().out
    assert main(["bench", "run", "--config", config]) == 0
    assert capsys.readouterr().out == first
    assert json.loads(first)["created_at"] == "1970-01-01T00:00:00.000Z"


@pytest.mark.parametrize("concurrency", [1, 4])
def test_results_follow_config_order_whatever_the_concurrency(
    suite_dir: Path, concurrency: int
) -> None:
    loaded = skillvault.load_config(suite_dir / "bench.yaml")
    result = benchkit.run(skillvault.to_suite(loaded, concurrency=concurrency))
    run = build_run(loaded, result, git_commit=None)
    order = [(r["condition_id"], r["task_id"]) for r in run["results"]]
    conditions = ["no_skill", "curated_skill", "self_generated_skill"]
    tasks = [
        "writes_notes",
        "flags_breaking_changes",
        "cites_issues",
        "stays_short",
        "settles_on_retry",
    ]
    assert order == [(c, t) for c in conditions for t in tasks]
    assert dumps(run) == golden("run.deterministic.json", suite_dir)


def test_a_non_deterministic_run_has_a_real_timestamp(suite_dir: Path) -> None:
    loaded = skillvault.load_config(suite_dir / "bench.yaml")
    result = benchkit.run(skillvault.to_suite(loaded, deterministic=False))
    run = build_run(loaded, result, git_commit=None)
    assert run["run"]["deterministic"] is False
    assert run["created_at"] != "1970-01-01T00:00:00.000Z"
    assert run["created_at"].endswith("Z") and len(run["created_at"]) == 24
    assert all(isinstance(r["duration_ms"], int) for r in run["results"])
    report = build_report(run, now=lambda: "2030-01-02T03:04:05.678Z")
    assert report["created_at"] == "2030-01-02T03:04:05.678Z"
    assert report["source_created_at"] == run["created_at"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_commit_is_the_short_head_of_the_config_directory(suite_dir: Path) -> None:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "suite"]):
        subprocess.run(["git", *args], cwd=suite_dir, check=True, env=env, capture_output=True)
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=suite_dir,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert skillvault.git_commit(suite_dir / "conditions") == head
    loaded = skillvault.load_config(suite_dir / "bench.yaml")
    run = build_run(loaded, benchkit.run(skillvault.to_suite(loaded)), git_commit=head)
    assert f"git_commit: {head}\n" in render_run_table(run)
    assert f'"git_commit": "{head}"' in dumps(run)


def test_git_commit_is_none_outside_a_repository(suite_dir: Path) -> None:
    assert skillvault.git_commit(suite_dir) is None
    assert skillvault.git_commit(suite_dir / "no-such-directory") is None


def test_the_shipped_suite_runs_from_the_repository_root(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = run_cli(
        "bench",
        "run",
        "--config",
        "benchmarks/skillvault-bench-v0/bench.yaml",
        "--format",
        "table",
        "--out",
        str(out),
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    config_dir = REPO / "benchmarks" / "skillvault-bench-v0"
    run = json.loads(out.read_text())
    commit = run["run"]["git_commit"]
    expected = golden("run.table.txt", config_dir)
    if commit is not None:  # a checkout: skillvault records the short HEAD
        expected = expected.replace("git_commit: -", f"git_commit: {commit}")
    assert proc.stdout == expected


def test_benchkit_load_detects_the_format_and_the_native_report_compares(
    suite_dir: Path,
) -> None:
    config = suite_dir / "bench.yaml"
    assert detect_format(config) == "skillvault"
    suite = benchkit.load(config)
    assert suite.benchmark.source.format == "skillvault"
    assert suite.base_dir == suite_dir
    result = benchkit.run(suite)
    pairs = {(c.baseline, c.target): c for c in result.comparisons}
    curated = pairs[("no_skill", "curated_skill")]
    assert curated.improved == ("flags_breaking_changes", "cites_issues")
    assert curated.regressed == ()
    assert curated.paired.mcnemar_p == 0.5  # 2 flips, both one way: 2 * (1/2)**2
    assert (
        curated.paired.interval.method == "paired_score"
    )  # inverts the exact McNemar test (3 tasks)
    assert curated.paired.interval.low <= curated.paired.delta <= curated.paired.interval.high
    # the same pass rate as no_skill, but not the same tasks: the flips show it
    same_rate = pairs[("no_skill", "self_generated_skill")]
    assert same_rate.paired.delta == 0
    assert same_rate.improved == ("flags_breaking_changes",)
    assert same_rate.regressed == ("stays_short",)
    markdown = to_markdown(result)
    assert "| curated_skill vs no_skill | +0.400 |" in markdown
    assert "0.5000" in markdown
    native = json.loads(result.to_json())
    assert native["comparisons"][0]["improved"] == ["flags_breaking_changes", "cites_issues"]
    retried = {(c.condition_id, c.task_id): c.attempts for c in result.cells}
    assert retried[("curated_skill", "settles_on_retry")] == 2
    assert retried[("curated_skill", "writes_notes")] == 1


def test_native_cli_runs_a_skillvault_config(suite_dir: Path) -> None:
    proc = run_cli(
        "run",
        "suite/bench.yaml",
        "--format",
        "markdown",
        "--no-progress",
        "-o",
        str(suite_dir.parent / "native.json"),
        cwd=suite_dir.parent,
    )
    assert proc.returncode == 0, proc.stderr
    assert "| curated_skill vs no_skill |" in proc.stdout
    assert "| no_skill | 3/5 |" in proc.stdout
