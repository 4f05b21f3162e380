"""The toy sixth tool (tests/toy_tool), installed as its own distribution, reaches the CLI
and the reports the way a built-in tool does: its subcommand is on the command line and its
section is in a run's HTML and Markdown reports, with neither layer naming it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ._toy import TOY_BENCHMARK, toy_env

pytestmark = pytest.mark.slow


def _benchkit(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchkit", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=toy_env(site),
        timeout=120,
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "sums.json").write_text(TOY_BENCHMARK, encoding="utf-8")
    return tmp_path


def test_the_toy_tools_subcommand_runs(toy_site: Path, work: Path) -> None:
    proc = _benchkit(toy_site, work, "toy", "sums", "sums.json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["2 + 3 = 5", "10 - 4 = 6", "7 + 0 = 7", "6 * 7 = 42"]
    helped = _benchkit(toy_site, work, "--help")
    assert "toy arithmetic benchmarks" in helped.stdout


def test_without_the_toy_installed_there_is_no_toy_command(work: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchkit", "toy", "sums", "sums.json"],
        capture_output=True,
        text=True,
        cwd=work,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "invalid choice: 'toy'" in proc.stderr


def test_a_tool_whose_commands_cannot_be_imported_is_named(tmp_path: Path) -> None:
    """The CLI asks every installed tool for its commands; one that names a missing module
    is a one-paragraph error naming the tool (exit 2), not a traceback."""
    site = tmp_path / "site"
    dist = site / "broken_tool-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-tool\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[benchkit.tools]\nbroken = broken_tool:TOOL\n")
    (site / "broken_tool.py").write_text(
        "from benchkit.tools import Tool\n"
        "TOOL = Tool(name='broken', title='Broken', package='broken_tool',\n"
        "            commands=('broken_tool_gone._cli:add_commands',))\n"
    )
    proc = _benchkit(site, tmp_path, "list", ".")
    assert proc.returncode == 2
    assert proc.stderr.startswith("benchkit: error: tool 'broken':"), proc.stderr
    assert "broken_tool_gone._cli:add_commands" in proc.stderr
    assert "Traceback" not in proc.stderr
