"""`python -m benchkit bench run|report`: skillvault's options, outputs and exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchkit.cli import main
from benchkit.formats.skillvault._cli import _encode
from benchkit.store import Store

from ._support import REPO

SUITE = REPO / "benchmarks" / "skillvault-bench-v0"


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "suite"
    shutil.copytree(SUITE, target)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    return target


def set_deterministic(config: Path, value: bool) -> None:
    text = config.read_text().replace("deterministic: true", f"deterministic: {str(value).lower()}")
    config.write_text(text)


def test_a_config_error_exits_2_with_skillvaults_message(tmp_path: Path) -> None:
    config = tmp_path / "bench.yaml"
    config.write_text("conditions:\n  - id: no_skill\ntasks: []\n")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run(
        [sys.executable, "-m", "benchkit", "bench", "run", "--config", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "missing required condition: curated_skill" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_missing_bundle_exits_2(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(suite / "conditions" / "curated-skill")
    assert main(["bench", "run", "--config", str(suite / "bench.yaml")]) == 2
    err = capsys.readouterr().err
    assert "conditions.curated_skill.bundle_path does not exist: " in err
    assert str(suite / "conditions" / "curated-skill") in err


def test_json_goes_to_out_or_stdout(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = suite / "run.json"
    assert main(["bench", "run", "--config", str(suite / "bench.yaml"), "--out", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert main(["bench", "run", "--config", str(suite / "bench.yaml")]) == 0
    assert capsys.readouterr().out == out.read_text()
    run = json.loads(out.read_text())
    assert run["contract_id"] == "skillvault.bench.run.v1"
    assert run["aggregates"]["no_skill"]["pass_count"] == 3  # failing tasks still exit 0


def test_table_mode_without_out_writes_only_the_table(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "run", "--config", str(suite / "bench.yaml"), "--format", "table"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("benchmark_created_at: 1970-01-01T00:00:00.000Z\n")
    assert not list(suite.glob("*.json"))


def test_deterministic_flag_only_switches_it_on(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = suite / "bench.yaml"
    set_deterministic(config, False)
    assert main(["bench", "run", "--config", str(config)]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["run"]["deterministic"] is False
    assert run["created_at"] != "1970-01-01T00:00:00.000Z"
    assert main(["bench", "run", "--config", str(config), "--deterministic"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert (run["run"]["deterministic"], run["created_at"]) == (True, "1970-01-01T00:00:00.000Z")


def test_report_writes_json_or_table_to_out(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = suite / "run.json"
    assert main(["bench", "run", "--config", str(suite / "bench.yaml"), "--out", str(run)]) == 0
    report = suite / "report.txt"
    args = ["bench", "report", "--input", str(run), "--format", "table", "--out", str(report)]
    assert main([*args, "--policy", "policy.yaml"]) == 0  # --policy is accepted and ignored
    assert capsys.readouterr().out == ""
    text = report.read_text()
    assert "comparison | pass_rate_delta | pass_count_delta | avg_duration_ms_delta" in text
    assert "curated_vs_no_skill | +0.4000 | +2 | +0.000" in text
    assert main(["bench", "report", "--input", str(run)]) == 0
    assert json.loads(capsys.readouterr().out)["contract_id"] == "skillvault.bench.report.v1"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "ENOENT: no such file or directory"),
        ("not json", "Failed to parse benchmark result JSON"),
        ('{"contract_id": "other"}', "Unsupported benchmark result contract_id"),
        (
            '{"contract_id": "skillvault.bench.run.v1"}',
            "Benchmark result JSON is missing required arrays (conditions/tasks/results)",
        ),
    ],
)
def test_report_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = tmp_path / "run.json"
    if content is not None:
        path.write_text(content)
    assert main(["bench", "report", "--input", str(path)]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


def test_report_cannot_write_exits_2(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = suite / "run.json"
    assert main(["bench", "run", "--config", str(suite / "bench.yaml"), "--out", str(run)]) == 0
    out = suite / "missing-dir" / "report.json"
    assert main(["bench", "report", "--input", str(run), "--out", str(out)]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_run_cannot_write_exits_1(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = suite / "missing-dir" / "run.json"
    assert main(["bench", "run", "--config", str(suite / "bench.yaml"), "--out", str(out)]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["bench", "run"])
    assert info.value.code == 2
    assert "--config" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["bench", "run", "--config", "x.yaml", "--format", "markdown"])
    assert info.value.code == 2


def test_output_bytes_are_utf8_as_node_writes_them() -> None:
    assert _encode("é|😀") == "é|😀".encode()
    assert _encode("/tmp/caf\udce9") == b"/tmp/caf\xe9"  # a path's undecodable byte, restored
    assert _encode("x\ud83dy") == b"x\xef\xbf\xbdy"  # half an emoji: U+FFFD


def test_bench_run_goes_to_the_run_store_and_keeps_stdout_exact(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    config = str(suite / "bench.yaml")
    assert main(["bench", "run", "--config", config, "--store", str(store)]) == 0
    stored = capsys.readouterr()
    assert main(["bench", "run", "--config", config, "--no-store"]) == 0
    assert capsys.readouterr().out == stored.out
    with Store(store) as opened:
        (summary,) = opened.runs()
    assert f"run {summary.run_id}: stored in {store}" in stored.err
