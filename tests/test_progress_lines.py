"""Progress as text lines: the CLI off a terminal, and ``benchkit.run(progress=True)``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import benchkit
from benchkit import CallableProvider, CellResult, Progress
from benchkit._progress import ProgressLines, format_progress
from benchkit.cli import main

from ._support import FIXTURES, make_suite

CELL = CellResult(task_id="t", condition_id="c", epoch=0, status="pass")


def test_a_line_says_done_total_errors_rate_and_eta() -> None:
    line = format_progress(Progress(25, 100, 2, 5.0, CELL))
    assert line == "benchkit: 25/100 cells (25%), 2 errors, 5.0 cells/s, ETA 0:00:15"
    assert format_progress(Progress(7, None, 1, 1.0, CELL)) == (
        "benchkit: 7 cells, 1 error, 7.0 cells/s"
    )
    assert "ETA" not in format_progress(Progress(4, 4, 0, 1.0, CELL))


def test_lines_are_throttled_but_the_last_cell_always_shows() -> None:
    out = io.StringIO()
    lines = ProgressLines(out, interval=3600)
    for done in range(1, 11):
        lines(Progress(done, 10, 0, float(done), CELL))
    assert out.getvalue() == "benchkit: 10/10 cells (100%), 0 errors, 1.0 cells/s\n"
    every = io.StringIO()
    each = ProgressLines(every, interval=0)
    for done in range(1, 4):
        each(Progress(done, 3, 0, 1.0, CELL))
    assert len(every.getvalue().splitlines()) == 3


def test_run_with_progress_true_writes_lines_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    result = benchkit.run(make_suite({"s": CallableProvider(str)}, n=5), store=False, progress=True)
    assert result.aggregate("s").n == 5
    assert "benchkit: 5/5 cells (100%), 0 errors" in capsys.readouterr().err


def test_the_cli_off_a_terminal_prints_progress_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = FIXTURES / "cli" / "ok.yaml"
    assert main(["run", str(ok), "--no-store", "-o", str(tmp_path / "r.json")]) == 0
    assert "benchkit: 8/8 cells (100%), 0 errors" in capsys.readouterr().err
    assert (
        main(["run", str(ok), "--no-store", "--no-progress", "-o", str(tmp_path / "q.json")]) == 0
    )
    assert "cells (100%)" not in capsys.readouterr().err
