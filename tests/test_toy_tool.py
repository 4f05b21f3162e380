"""A sixth tool, installed as its own distribution (tests/toy_tool), is found through the
entry-point group ``benchkit.tools`` alone and shows up wherever a built-in tool does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchkit.errors import RegistryError
from benchkit.registry import Registries, default_registries
from benchkit.tools import Tool

from ._toy import toy_benchkit, toy_env

pytestmark = pytest.mark.slow


def test_the_toy_tool_is_listed_with_its_format(toy_site: Path, toy_work: Path) -> None:
    proc = toy_benchkit(toy_site, toy_work, "list", ".")
    assert proc.returncode == 0, proc.stderr
    (row,) = [line for line in proc.stdout.splitlines() if "sums.json" in line]
    assert "toy" in row.split("│")[2]


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
    check = (
        "from benchkit.registry import default_registries as d; r = d(); "
        "print(sorted(r.tools.names())); print(r.tools.is_builtin('toy'), "
        "r.tools.is_builtin('codeforge'), r.evaluators.is_builtin('toy-within-one'))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, env=toy_env(toy_site)
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "['codeforge', 'eval-skills', 'humaneval', 'memorybench', 'native', 'skillvault', 'toy']",
        "False True False",
    ]


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


def test_an_entry_point_that_is_not_a_tool_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = tmp_path / "not_a_tool-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: not-a-tool\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[benchkit.tools]\nodd = not_a_tool:THING\n")
    (tmp_path / "not_a_tool.py").write_text("THING = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registries = Registries.create()
    with pytest.raises(RegistryError, match=r"tool 'odd' is 'int', not a benchkit\.tools\.Tool"):
        registries.tools.get("odd")
    monkeypatch.delitem(sys.modules, "not_a_tool", raising=False)
