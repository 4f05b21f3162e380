"""The toy sixth tool (tests/toy_tool), installed as its own distribution, reaches the CLI
and the reports the way a built-in tool does: its subcommand is on the command line and its
section is in a run's HTML and Markdown reports, with neither layer naming it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import benchkit.registry
from benchkit.registry import default_registries
from benchkit.reports import MARKDOWN_SECTIONS, to_markdown
from benchkit.reports.html import SECTIONS, to_html
from benchkit.results import RunResult
from benchkit.tools import Tool

from ._support import FIXTURES
from ._toy import fake_distribution, toy_benchkit

#: A native benchmark (python provider): its reports have no tool section.
OK_YAML = FIXTURES / "cli" / "ok.yaml"


@pytest.mark.slow
def test_the_toy_tools_subcommand_runs(toy_site: Path, toy_work: Path) -> None:
    proc = toy_benchkit(toy_site, toy_work, "toy", "sums", "sums.json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["2 + 3 = 5", "10 - 4 = 6", "7 + 0 = 7", "6 * 7 = 42"]
    helped = toy_benchkit(toy_site, toy_work, "--help")
    assert "toy arithmetic benchmarks" in helped.stdout


@pytest.mark.slow
def test_without_the_toy_installed_there_is_no_toy_command(toy_work: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchkit", "toy", "sums", "sums.json"],
        capture_output=True,
        text=True,
        cwd=toy_work,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "invalid choice: 'toy'" in proc.stderr


@pytest.mark.slow
def test_a_tool_whose_commands_cannot_be_imported_fails_alone(tmp_path: Path) -> None:
    """A tool's command module is imported only when its command runs: every other command
    works as without it, and the command itself is a one-paragraph error naming the tool
    (exit 2), not a traceback."""
    site = tmp_path / "site"
    fake_distribution(
        site,
        "broken-tool",
        tools={"broken": "broken_tool:TOOL"},
        files={
            "broken_tool.py": "from benchkit.tools import Command, Tool\n"
            "TOOL = Tool(name='broken', title='Broken', package='broken_tool',\n"
            "            commands=(Command(name='broken', help='gone',\n"
            "                              add='broken_tool_gone._cli:add_commands'),))\n"
        },
    )
    listed = toy_benchkit(site, tmp_path, "list", ".")
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr
    proc = toy_benchkit(site, tmp_path, "broken")
    assert proc.returncode == 2
    assert proc.stderr.startswith("benchkit: error: tool 'broken':"), proc.stderr
    assert "broken_tool_gone._cli:add_commands" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_a_toy_runs_reports_carry_the_toys_sections(toy_site: Path, toy_work: Path) -> None:
    """The HTML and Markdown reports find the toy's sections by the run's source format
    (``toy``), through its Tool's ``report_html`` and ``report_markdown``."""
    store = str(toy_work / "runs.db")
    ran = toy_benchkit(toy_site, toy_work, "run", "sums.json", "--store", store, "--run-id", "r1")
    assert ran.returncode == 0, ran.stderr
    page = toy_benchkit(
        toy_site, toy_work, "runs", "show", "r1", "--store", store, "--format", "html"
    )
    assert page.returncode == 0, page.stderr
    assert '<section class="toy-report"><h2>Toy arithmetic</h2>' in page.stdout
    assert "<li>calculator: 3 of 4 sums</li>" in page.stdout
    text = toy_benchkit(
        toy_site, toy_work, "runs", "show", "r1", "--store", store, "-f", "markdown"
    )
    assert text.returncode == 0, text.stderr
    assert "## Toy arithmetic\n\n- calculator: 3 of 4 sums\n" in text.stdout
    # the section sits before the failures, which still close the report
    assert text.stdout.index("## Toy arithmetic") < text.stdout.index("## Failures by category")


@pytest.mark.slow
def test_other_runs_reports_have_no_toy_section(toy_site: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    ran = toy_benchkit(toy_site, tmp_path, "run", str(OK_YAML), "--no-store", "-o", str(out))
    assert ran.returncode == 0, ran.stderr
    text = toy_benchkit(toy_site, tmp_path, "report", str(out), "-f", "markdown")
    assert text.returncode == 0, text.stderr
    assert "Toy arithmetic" not in text.stdout and "| right |" in text.stdout


@pytest.mark.slow
def test_the_notebook_views_are_found_without_results_importing_reports() -> None:
    """``RunResult._repr_html_`` and ``to_markdown`` look their renderers up in
    ``benchkit.results.VIEWS`` (lazy references): importing results loads no report."""
    check = (
        "import sys, benchkit.results as r; "
        "print(any(m.startswith('benchkit.reports') for m in sys.modules)); "
        "print(sorted(r.VIEWS.names()))"
    )
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["False", "['html', 'markdown']"]


def _run_of_format(source_format: str) -> RunResult:
    from benchkit import Benchmark, Condition, ProviderSpec, Source, Suite, Task, run

    suite = Suite(
        Benchmark(
            "b", tasks=[Task("t", input="x", expected="x")], source=Source(format=source_format)
        ),
        conditions=[Condition("echo", ProviderSpec("python", {"callable": "builtins:str"}))],
    )
    return run(suite, store=False)


def section_html(run: object) -> str:
    return "<p>late tool's section</p>"


def section_markdown(run: object) -> str:
    return "late tool's Markdown"


def test_a_tool_added_in_code_after_the_sections_were_read_has_its_sections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The section registries read the tools on their first lookup; a tool added later with
    ``default_registries().add_tool`` (a notebook's) is still found by its format."""
    monkeypatch.setattr(benchkit.registry, "_DEFAULT", default_registries().copy())
    result = _run_of_format("late-format")
    sections = default_registries().report_html
    assert "late-format" not in sections and "late tool" not in to_html(result)  # read already
    default_registries().add_tool(
        Tool(
            name="late",
            title="Late",
            package=__name__,
            formats={"late-format": "benchkit.formats.native:FORMAT"},
            report_html=f"{__name__}:section_html",
            report_markdown=f"{__name__}:section_markdown",
        )
    )
    assert "<p>late tool's section</p>" in to_html(result)
    assert "late tool's Markdown" in to_markdown(result)
    assert "late tool's Markdown" in result.to_markdown()
    assert "late-format" in sections and "late-format" in default_registries().report_markdown
    assert "late-format" not in SECTIONS and "late-format" not in MARKDOWN_SECTIONS


def test_a_run_built_in_code_has_no_format_and_says_so() -> None:
    from benchkit import Benchmark, Condition, ProviderSpec, Suite, Task, run

    suite = Suite(
        Benchmark("b", tasks=[Task("t", input="x", expected="x")]),
        conditions=[Condition("echo", ProviderSpec("python", {"callable": "builtins:str"}))],
    )
    result = run(suite, store=False)
    assert result.info.source_format is None
    assert result.to_dict()["info"]["source_format"] is None
    assert "format built in code" in to_html(result)


def test_a_tool_added_on_a_runs_own_registries_keeps_its_sections() -> None:
    """The reports look in the registries the run used (``RunResult.registries``): a tool
    installed on a copy for one run has its sections there, and nowhere else."""
    import anyio

    from benchkit import Benchmark, Condition, ProviderSpec, Runner, Source, Suite, Task

    mine = default_registries().copy()
    mine.add_tool(
        Tool(
            name="own-copy",
            title="Own copy",
            package=__name__,
            formats={"own-format": "benchkit.formats.native:FORMAT"},
            report_html=f"{__name__}:section_html",
            report_markdown=f"{__name__}:section_markdown",
        )
    )
    suite = Suite(
        Benchmark(
            "b", tasks=[Task("t", input="x", expected="x")], source=Source(format="own-format")
        ),
        conditions=[Condition("echo", ProviderSpec("python", {"callable": "builtins:str"}))],
    )

    async def main() -> RunResult:
        return await Runner(registries=mine).run(suite)

    result = anyio.run(main)
    assert result.registries is mine
    assert "<p>late tool's section</p>" in to_html(result)
    assert "late tool's Markdown" in result.to_markdown()
    assert "own-format" not in default_registries().report_html
    reread = RunResult.from_json(result.to_json())  # a stored run: the default registries
    assert reread == result and "late tool" not in to_html(reread)
