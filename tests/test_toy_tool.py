"""A sixth tool, installed as its own distribution (tests/toy_tool), is found through the
entry-point group ``benchkit.tools`` alone and shows up wherever a built-in tool does."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchkit.errors import RegistryError
from benchkit.registry import Registries, default_registries
from benchkit.tools import Tool, ToolWarning

from ._toy import TOY_LINES, fake_distribution, toy_benchkit, toy_env

pytestmark = pytest.mark.slow


def test_the_toy_tool_is_listed_with_its_formats_of_any_file_type(
    toy_site: Path, toy_work: Path
) -> None:
    """``.toy`` files are plain text: the toy's second format declares the suffix, so
    ``list`` finds them (and runs them) like YAML and JSON files."""
    (toy_work / "more.toy").write_text(TOY_LINES, encoding="utf-8")
    (toy_work / "notes.txt").write_text("2 + 2 = 4\n", encoding="utf-8")  # no format's
    proc = toy_benchkit(toy_site, toy_work, "list", ".")
    assert proc.returncode == 0, proc.stderr
    rows = {
        line.split("│")[6].strip(): line.split("│")
        for line in proc.stdout.splitlines()
        if "│" in line and ("sums" in line or ".toy" in line or ".txt" in line)
    }
    assert set(rows) == {"sums.json", "more.toy"}
    assert rows["sums.json"][2].strip() == "toy" and rows["more.toy"][2].strip() == "toy-lines"
    assert rows["more.toy"][4].strip() == "3"
    ran = toy_benchkit(toy_site, toy_work, "run", "more.toy", "--no-store", "-f", "json")
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["info"]["source_format"] == "toy-lines"
    assert [c["status"] for c in result["cells"]] == ["pass", "pass", "error"]


def test_a_toy_benchmark_runs_with_the_tools_provider_and_evaluator(
    toy_site: Path, toy_work: Path
) -> None:
    proc = toy_benchkit(toy_site, toy_work, "run", "sums.json", "--no-store", "-o", "out.json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads((toy_work / "out.json").read_text(encoding="utf-8"))
    statuses = {c["task_id"]: c["status"] for c in result["cells"]}
    assert statuses == {"sum-1": "pass", "sum-2": "pass", "sum-3": "pass", "sum-4": "error"}
    names = {s["name"] for c in result["cells"] for s in c.get("scores", ())}
    assert names == {"exact", "toy-within-one"}


def test_the_toy_tool_is_read_from_its_entry_point_only(toy_site: Path, toy_work: Path) -> None:
    """The toy is a tool only where its distribution is installed, and a third party's;
    whatever else is installed beside benchkit does not matter here."""
    check = (
        "from benchkit.registry import default_registries as d; r = d(); "
        "print(sorted(r.tools.names())); print(r.tools.is_builtin('toy'), "
        "r.tools.is_builtin('codeforge'), r.evaluators.is_builtin('toy-within-one'))"
    )
    without = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, env=toy_env(toy_work)
    )
    proc = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, env=toy_env(toy_site)
    )
    assert proc.returncode == 0 and without.returncode == 0, proc.stderr + without.stderr
    names, builtin = proc.stdout.splitlines()
    names_without = without.stdout.splitlines()[0]
    assert set(ast.literal_eval(names)) - set(ast.literal_eval(names_without)) == {"toy"}
    assert {"codeforge", "eval-skills", "memorybench", "native", "skillvault"} <= set(
        ast.literal_eval(names)
    )
    assert builtin == "False True False"


def test_built_in_tools_are_found_through_the_same_group() -> None:
    registries = default_registries()
    assert set(registries.tools.names()) >= {
        "native",
        "eval-skills",
        "skillvault",
        "memorybench",
        "codeforge",
    }
    assert all(registries.tools.is_builtin(t.name) for t in registries.all_tools())
    # what a built-in tool contributes is built in: a plug-in cannot replace it by accident
    with pytest.raises(RegistryError, match="is built in"):
        registries.copy().evaluators.add("codeforge_correctness", "x:y")


def test_a_tool_added_in_code_contributes_to_a_copy_only() -> None:
    mine = default_registries().copy()
    tool = Tool(
        name="inline",
        title="Inline",
        package="benchkit",
        evaluators={"inline-exact": "benchkit.evaluators._basic:ExactEvaluator"},
    )
    mine.add_tool(tool)
    assert mine.tools.get("inline") is tool
    assert mine.evaluators.get("inline-exact").__name__ == "ExactEvaluator"
    assert "inline-exact" not in default_registries().evaluators
    assert "inline" not in default_registries().tools.names()


def test_a_malformed_tool_is_refused_when_defined() -> None:
    with pytest.raises(RegistryError, match="not a short lower-case name"):
        Tool(name="Bad Name", title="x", package="x")
    with pytest.raises(RegistryError, match=r"evaluators\.e.*'module:attribute'"):
        Tool(name="bad", title="x", package="x", evaluators={"e": "no colon"})
    with pytest.raises(RegistryError, match="add_tool"):
        Registries.create().add_tool("toy")  # type: ignore[arg-type]


def test_an_entry_point_that_is_not_a_tool_is_skipped_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_distribution(
        tmp_path,
        "not-a-tool",
        tools={"odd": "not_a_tool:THING"},
        files={"not_a_tool.py": "THING = 42\n"},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registries = Registries.create()
    with pytest.warns(ToolWarning, match=r"tool 'odd' \(distribution not-a-tool 1.0\) is not "):
        assert "odd" not in registries.tools.names()
    with pytest.raises(RegistryError, match="unknown tool 'odd'"):
        registries.tools.get("odd")
    (record,) = [r for r in registries.tools.records() if r.name == "odd"]
    assert record.status == "broken" and "'int', not a benchkit.tools.Tool" in str(record.problem)
    monkeypatch.delitem(sys.modules, "not_a_tool", raising=False)
