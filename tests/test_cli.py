"""``python -m benchkit``: run, validate, list, report; exit codes; Ctrl-C keeps results."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import benchkit
from benchkit import RunResult, Suite
from benchkit.cli import main
from benchkit.registry import Registries
from benchkit.store import Store
from benchkit.tools import Tool

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

    # --no-store writes nothing: no store, and no .benchkit/runs/<id>/result.json either.
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    proc = run_cli("run", str(CLI / "ok.yaml"), "--no-store", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "4/4" in proc.stdout
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .endswith(": not stored (--no-store; --output FILE writes the result JSON)")
    )
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert not (tmp_path / ".benchkit" / "runs").exists()

    # --output still writes the result and its cells, with or without the store.
    out = tmp_path / "out" / "result.json"
    proc = run_cli("run", str(CLI / "ok.yaml"), "--no-store", "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"results in {out}" in proc.stderr
    result = RunResult.from_json(out.read_text())
    assert result.aggregate("right").passed == 4
    lines = (out.parent / "result.cells.jsonl").read_text().splitlines()
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


def test_list_says_what_sets_the_conditions_a_file_leaves_out(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # eval-skills and CodeForge files name no conditions (nor does CodeForge a version):
    # the row says which option sets them instead of a bare 0.
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["list", str(REPO / "benchmarks")]) == 0
    rows = {
        cells[0]: cells[1:]
        for line in capsys.readouterr().out.splitlines()
        if len(cells := [c.strip() for c in line.strip("│ ").split("│")]) == 6
    }
    assert rows["coding-easy"][:4] == ["eval-skills", "2.0.0", "18", "set by --skills"]
    assert rows["basic-coding"][:4] == ["codeforge", "", "5", "set by --model"]
    assert rows["demo-arithmetic"][:4] == ["native", "1.0.0", "12", "2"]


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


def _wait_for_cells(cells: Path, count: int, proc: subprocess.Popen[str]) -> None:
    """Until ``count`` cells are in the file (the run is past its set-up), or fail."""
    deadline = time.monotonic() + 120
    while cells.read_text().count('{"cell"') < count if cells.exists() else True:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run did not get going"
        time.sleep(0.05)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_keeps_finished_cells_and_the_run_resumes(
    tmp_path: Path, signum: int, code: int
) -> None:
    # slow.yaml answers t0-t3, then blocks in t4 until the process ends: the signal can
    # only arrive mid-run (the handlers are installed before the first cell), never after.
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), BENCHKIT_TEST_BLOCK="1")
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
    _wait_for_cells(cells, 4, proc)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr
    assert cells.read_text().count('{"cell"') == 4
    assert "interrupted: signal; 6 cells did not run; 4 finished cells kept in " in stderr
    assert "--resume" in stderr
    result = RunResult.from_json(out.read_text())
    assert result.interrupted and [c.task_id for c in result.cells] == ["t0", "t1", "t2", "t3"]
    assert "slow" in stdout

    resumed = run_cli("run", str(CLI / "slow.yaml"), "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "4 finished cells kept" in resumed.stderr
    assert "resuming run" in resumed.stderr
    assert "│ slow      │  10/10 │" in resumed.stdout


def test_a_second_signal_exits_at_once_with_one_line(tmp_path: Path) -> None:
    # A sink's close hangs, so the graceful stop never ends by itself. "started" is printed
    # by the first cell, when the handlers are surely installed.
    script = tmp_path / "hangs_on_close.py"
    script.write_text(
        """
import anyio, sys
from benchkit import Benchmark, Condition, Response, Runner, Suite, Task
from benchkit.cli_toolkit import run_until_signalled

class Hangs:
    async def invoke(self, request):
        sys.stdout.write("started\\n"); sys.stdout.flush()
        await anyio.sleep_forever()

class HangingSink:
    async def open(self, info): pass
    async def write(self, cell): pass
    async def close(self, result):
        sys.stdout.write("closing\\n"); sys.stdout.flush()
        await anyio.sleep_forever()

runner = Runner(sinks=[HangingSink()])
suite = Suite(Benchmark("b", tasks=(Task("t0"),)), conditions=(Condition("c", Hangs()),))
run_until_signalled(runner, lambda: runner.run(suite))
"""
    )
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "started\n"
    proc.send_signal(signal.SIGINT)
    assert proc.stdout.readline() == "closing\n"  # the graceful stop has begun, and hangs
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert stderr.splitlines() == [
        "benchkit: stopping; finished cells are kept (again to quit at once)",
        "benchkit: stopped at once (second signal)",
    ]


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

    def suite(self, suite: Suite, args: argparse.Namespace) -> Suite | None:
        return suite.with_options(epochs=2) if args.twice else None

    def after(self, result: RunResult, suite: Suite, args: argparse.Namespace) -> None:
        self.seen.append(len(result.cells))


DOUBLED = _Doubled()


def test_a_tool_contributes_run_options_through_its_declared_hook(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The generic ``run`` knows no tool's flags: a tool declares its hook and the options
    it adds (``Tool.run_hook``, ``Tool.run_options``); the hook makes the suite when they
    are given and reports after the run."""
    registries = Registries.create()
    registries.add_tool(
        Tool(
            name="doubler",
            title="Doubler",
            package=__name__,
            run_hook=f"{__name__}:DOUBLED",
            run_options=("--twice",),
        )
    )
    monkeypatch.setattr(benchkit.registry, "_DEFAULT", registries)
    assert main(["run", str(CLI / "ok.yaml"), "--no-store", "-f", "json", "--twice"]) == 0
    assert DOUBLED.seen == [16]
    assert len(json.loads(capsys.readouterr().out)["cells"]) == 16
    assert main(["run", str(CLI / "ok.yaml"), "--no-store", "-f", "json"]) == 0
    assert DOUBLED.seen == [16], "not its run: the hook's after() is not called"
    monkeypatch.setattr(benchkit.registry, "_DEFAULT", Registries.create())
    with pytest.raises(SystemExit):
        main(["run", str(CLI / "ok.yaml"), "--twice"])
    assert "unrecognized arguments: --twice" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("selection", "cells"),
    [
        (["--limit", "2"], {("t0", "right"), ("t1", "right"), ("t0", "half"), ("t1", "half")}),
        (["-k", "t3", "--condition", "half"], {("t3", "half")}),
        (["-k", "t[02]", "--condition", "right"], {("t0", "right"), ("t2", "right")}),
        (["--tag", "odd", "--condition", "right"], {("t1", "right"), ("t3", "right")}),
    ],
)
def test_select_what_runs(
    tmp_path: Path, selection: list[str], cells: set[tuple[str, str]]
) -> None:
    out = tmp_path / "r.json"
    args = ["run", str(CLI / "ok.yaml"), "--no-store", "-o", str(out), *selection]
    assert main(args) == 0
    result = RunResult.from_json(out.read_text())
    assert {(c.task_id, c.condition_id) for c in result.cells} == cells


def test_a_selection_that_matches_nothing_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(CLI / "ok.yaml"), "--no-store", "-k", "nope"]) == 2
    assert "no task of 'cli-ok' matches the selection" in capsys.readouterr().err
    assert main(["run", str(CLI / "ok.yaml"), "--no-store", "--condition", "wrong"]) == 2
    assert "use one of: right, half" in capsys.readouterr().err


def test_junit_xml_has_a_test_case_per_cell(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    junit = tmp_path / "ci" / "junit.xml"
    args = ["run", str(CLI / "ok.yaml"), "--no-store", "-o", str(tmp_path / "r.json")]
    assert main([*args, "--junit-xml", str(junit)]) == 0
    root = ET.parse(junit).getroot()
    assert (root.tag, root.get("tests"), root.get("failures"), root.get("errors")) == (
        "testsuites",
        "8",
        "2",
        "0",
    )
    suites = {s.get("name"): s for s in root}
    assert set(suites) == {"cli-ok.right", "cli-ok.half"}
    half = suites["cli-ok.half"]
    failed = {c.get("name"): c.find("failure") for c in half}
    assert [name for name, f in failed.items() if f is not None] == ["t1", "t3"]
    assert failed["t1"] is not None and failed["t1"].get("type") == "assertion_failed"


def test_run_parses_its_file_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file is loaded once and the tools' run hooks get it as loaded: no hook parses
    it again to see whether it is its own (#41: every run parsed its file twice)."""
    from benchkit.formats import _source

    parsed: list[str] = []
    real = _source.read_document

    def counting(path: object, **kwargs: object) -> object:
        parsed.append(Path(str(path)).name)
        return real(path, **kwargs)  # type: ignore[arg-type]

    from benchkit.formats.codeforge import _loader as codeforge_loader

    monkeypatch.setattr(_source, "read_document", counting)
    monkeypatch.setattr(codeforge_loader, "read_document", counting)  # bound at import there
    assert main(["run", str(CLI / "ok.yaml"), "--no-store", "-f", "json"]) == 0
    assert parsed == ["ok.yaml"]
    parsed.clear()
    dataset = REPO / "benchmarks" / "codeforge" / "basic-coding.yaml"
    assert main(["run", str(dataset), "--model", "m", "--metrics", "nope", "--no-store"]) == 2
    assert "unknown metric 'nope'" in capsys.readouterr().err
    assert parsed == ["basic-coding.yaml"]
