"""``python -m benchkit``: run, validate, list, report; exit codes; Ctrl-C keeps results."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

import benchkit
from benchkit import RunResult, Suite
from benchkit.cli import _main as cli_main
from benchkit.cli import main
from benchkit.cli.toolkit import add_run_hook
from benchkit.store import Store

from ._support import FIXTURES, REPO, one_paragraph_error

CLI = FIXTURES / "cli"


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


def test_run_prints_table_and_writes_results(tmp_path: Path) -> None:
    proc = run_cli("run", str(CLI / "ok.yaml"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "right" in proc.stdout and "half" in proc.stdout
    assert "4/4" in proc.stdout and "2/4" in proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    run_id, _, store = last.removeprefix("run ").partition(": stored in ")
    with Store(store) as opened:  # every run goes to the run store
        stored = opened.load(run_id)
    assert stored.aggregate("right").passed == 4 and len(stored.cells) == 8

    proc = run_cli("run", str(CLI / "ok.yaml"), "--no-store", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / ".benchkit" / "runs").iterdir()
    assert f"run {run_dir.name}: results in" in proc.stderr
    result = RunResult.from_json((run_dir / "result.json").read_text())
    assert result.aggregate("right").passed == 4
    lines = (run_dir / "result.cells.jsonl").read_text().splitlines()
    assert sum(1 for line in lines if line.startswith('{"cell"')) == 8


def test_run_json_and_markdown_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    assert main(["run", str(CLI / "ok.yaml"), "-f", "json", "-o", str(out), "-d"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["info"]["created_at"] == "1970-01-01T00:00:00Z"
    assert json.loads(out.read_text()) == printed
    assert main(["run", str(CLI / "ok.yaml"), "-f", "markdown", "-o", str(out)]) == 0
    markdown = capsys.readouterr().out
    assert markdown.startswith("# CLI test v2.0.0")
    assert "| half vs right |" in markdown
    assert "## Failures by category" in markdown


def test_options_override_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    code = main(
        [
            "run",
            str(CLI / "ok.yaml"),
            "-e",
            "3",
            "-c",
            "2",
            "--seed",
            "5",
            "-f",
            "json",
            "-o",
            str(out),
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["info"]["options"]["epochs"] == 3
    assert data["info"]["options"]["concurrency"] == 2
    assert data["info"]["options"]["seed"] == 5
    assert len(data["cells"]) == 24


def test_fail_under_sets_exit_code_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "r.json")
    assert main(["run", str(CLI / "ok.yaml"), "--fail-under", "0.5", "-o", out]) == 0
    assert main(["run", str(CLI / "ok.yaml"), "--fail-under", "0.75", "-o", out]) == 1
    assert "pass rate below 0.75: half (0.500)" in capsys.readouterr().err


def test_validate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(CLI / "ok.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: native benchmark 'cli-ok' v2.0.0: 4 tasks, 2 conditions")


def test_bad_input_exits_2_with_one_paragraph_and_no_traceback(tmp_path: Path) -> None:
    proc = run_cli("run", str(CLI / "bad_evaluator.yaml"), cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("benchkit: error: ")
    assert "bad_evaluator.yaml:9" in proc.stderr
    assert "exakt" in proc.stderr and "exact" in proc.stderr
    assert proc.stderr.count("\n") == 1

    missing = run_cli("validate", "no/such/file.yaml", cwd=tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr

    usage = run_cli("run", cwd=tmp_path)
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_list_shows_benchmarks_and_skips_broken_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", str(CLI)]) == 0
    out = capsys.readouterr().out
    assert "cli-ok" in out and "cli-slow" in out
    assert "skipped" in out and "bad_evaluator.yaml" in out
    assert main(["list", str(CLI / "nope")]) == 2


def test_report_renders_saved_result_and_cells(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    assert main(["run", str(CLI / "ok.yaml"), "-o", str(out), "-f", "json"]) == 0
    capsys.readouterr()
    assert main(["report", str(out), "-f", "markdown"]) == 0
    from_json = capsys.readouterr().out
    assert main(["report", str(tmp_path / "r.cells.jsonl"), "-f", "markdown"]) == 0
    from_cells = capsys.readouterr().out
    assert "| right | 4/4 |" in from_json
    assert from_json == from_cells

    garbage = tmp_path / "garbage.json"
    garbage.write_text('{"not": "a result"}')
    assert main(["report", str(garbage)]) == 2
    assert "not a benchkit result" in capsys.readouterr().err


def test_ctrl_c_keeps_finished_cells_and_says_how_many_did_not_run(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    out = tmp_path / "r.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchkit", "run", str(CLI / "slow.yaml"), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    cells = tmp_path / "r.cells.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if cells.exists() and cells.read_text().count('{"cell"') >= 4:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    finished = cells.read_text().count('{"cell"')
    assert 4 <= finished < 10
    assert f"interrupted: {10 - finished} cells did not run" in stderr
    result = RunResult.from_json(out.read_text())
    assert result.interrupted and len(result.cells) == finished
    assert "slow" in stdout


def test_markdown_lists_flipped_tasks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["run", str(CLI / "ok.yaml"), "-f", "markdown", "-o", str(tmp_path / "r.json")]) == 0
    )
    markdown = capsys.readouterr().out
    assert "### Flipped tasks" in markdown
    assert "- **half vs right**\n  - pass → fail: `t1`, `t3`" in markdown


def test_output_into_an_unusable_place_is_one_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = run_cli(
        "run", str(CLI / "ok.yaml"), "--no-store", "-o", str(blocker / "r.json"), cwd=tmp_path
    )
    assert f"cannot write results to '{blocker / 'r.cells.jsonl'}'" in one_paragraph_error(proc)

    proc = run_cli("run", str(CLI / "ok.yaml"), "--no-store", "-o", str(tmp_path), cwd=tmp_path)
    assert "is a directory" in one_paragraph_error(proc)
    assert (
        not list(tmp_path.glob("*.cells.jsonl"))
        and not (tmp_path.parent / f"{tmp_path.name}.cells.jsonl").exists()
    )


def test_the_cells_file_is_not_executable(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main(["run", str(CLI / "ok.yaml"), "--no-store", "-o", str(out)]) == 0
    assert (tmp_path / "r.cells.jsonl").stat().st_mode & 0o777 == 0o644 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize(
    ("source", "where", "message"),
    [
        ("def answer(x):\n    return x +\n", ":2:", "syntax error: invalid syntax"),
        ("import no_such_module_xyz\n", ":1:", "ModuleNotFoundError: No module named"),
        ("X = 1\nraise RuntimeError('boom')\n", ":2:", "RuntimeError: boom"),
    ],
)
def test_a_broken_python_provider_file_names_its_file_and_line(
    tmp_path: Path, source: str, where: str, message: str
) -> None:
    (tmp_path / "prov.py").write_text(source)
    bench = tmp_path / "b.yaml"
    bench.write_text(
        "benchkit: 1\nid: p\nevaluators: [exact]\ntasks: [{id: a, input: 1, expected: '1'}]\n"
        "conditions:\n  - {id: c, provider: {type: python, file: prov.py, function: answer}}\n"
    )
    error = one_paragraph_error(run_cli("run", str(bench), "--no-store", cwd=tmp_path))
    assert f"{tmp_path / 'prov.py'}{where}" in error and message in error


class _Doubled:
    """A tool's run hook as a plug-in writes one: ``--twice`` runs the file with 2 epochs."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def add_options(self, run: argparse.ArgumentParser) -> None:
        run.add_argument("--twice", action="store_true")

    def suite(self, args: argparse.Namespace) -> Suite | None:
        return benchkit.load(args.path).with_options(epochs=2) if args.twice else None

    def after(self, result: RunResult, suite: Suite, args: argparse.Namespace) -> None:
        self.seen.append(len(result.cells))


def test_a_tool_contributes_run_options_through_its_commands_hook(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The generic ``run`` knows no tool's flags: a tool's ``add_commands`` adds them with
    ``add_run_hook``, builds the suite when they are given, and reports after the run."""
    hook = _Doubled()
    module = types.ModuleType("benchkit_test_hook")
    module.add_commands = lambda sub: add_run_hook(sub, hook)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    commands = (*cli_main._FEATURE_COMMANDS, f"{module.__name__}:add_commands")
    monkeypatch.setattr(cli_main, "_FEATURE_COMMANDS", commands)
    assert main(["run", str(CLI / "ok.yaml"), "--no-store", "-f", "json", "--twice"]) == 0
    assert hook.seen == [16]
    assert len(json.loads(capsys.readouterr().out)["cells"]) == 16
    assert main(["run", str(CLI / "ok.yaml"), "--no-store", "-f", "json"]) == 0
    assert hook.seen == [16], "not its run: the hook's after() is not called"
    monkeypatch.setattr(cli_main, "_FEATURE_COMMANDS", ())
    with pytest.raises(SystemExit):
        main(["run", str(CLI / "ok.yaml"), "--model", "m"])
    assert "unrecognized arguments: --model m" in capsys.readouterr().err
