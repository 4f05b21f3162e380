"""docs/plugins.md: its examples run as written, and it lists every built-in's options."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from benchkit.registry import default_registries

from ._llm_server import FakeOpenAI
from ._support import REPO
from ._toy import pip_install_into

DOC = REPO / "docs" / "plugins.md"
_FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
_FROM_CODE = {"self", "base_dir", "client", "fn", "handler", "response_cache", "registries"}


def runnable_blocks() -> list[tuple[int, str]]:
    text = DOC.read_text(encoding="utf-8")
    out = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        if before != "<!-- run: skip -->":
            out.append((text.count("\n", 0, match.start()) + 2, match.group(1)))
    return out


@pytest.mark.parametrize(("line", "code"), runnable_blocks(), ids=lambda v: str(v)[:20])
def test_the_example_runs(line: int, code: str, tmp_path: Path) -> None:
    # In a fresh interpreter: the examples register plug-ins in the default registries.
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert proc.returncode == 0, f"docs/plugins.md:{line}\n{proc.stderr}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["example.py"]  # store=False


def test_every_built_in_and_each_of_its_options_is_listed() -> None:
    text = DOC.read_text(encoding="utf-8")
    text = text[text.index("## Built-in plug-ins") : text.index("## MCP")]
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([\w-]+)` \| (.*) \|$", text, re.M)}
    registries = default_registries()
    for kind in ("providers", "evaluators", "verifiers"):
        registry = getattr(registries, kind)
        for name in sorted(registry._builtins):
            assert name in rows, f"{kind[:-1]} {name!r} is not in docs/plugins.md"
            params = inspect.signature(registry.get(name)).parameters.values()
            for param in params:
                if param.name in _FROM_CODE or param.kind in (
                    param.VAR_KEYWORD,
                    param.VAR_POSITIONAL,
                ):
                    continue
                assert f"`{param.name}`" in rows[name], f"{name}: option {param.name!r} missing"


def test_the_tool_walkthrough_shows_the_toy_tools_files_as_they_are() -> None:
    """Each block of "Writing a tool" headed by a file of tests/toy_tool is that file."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Writing a tool") : text.index("## A memory provider")]
    shown = re.findall(r"^```py\n# (tests/toy_tool/\S+)\n(.*?)^```", section, re.M | re.S)
    assert {name for name, _ in shown} >= {
        "tests/toy_tool/benchkit_toy/_format.py",
        "tests/toy_tool/benchkit_toy/_cli.py",
        "tests/toy_tool/benchkit_toy/_report.py",
        "tests/toy_tool/benchkit_toy/_tool.py",
    }
    for name, body in shown:
        assert body == (REPO / name).read_text(encoding="utf-8"), f"{name} differs from the doc"
    toml = (REPO / "tests/toy_tool/pyproject.toml").read_text(encoding="utf-8")
    assert '[project.entry-points."benchkit.tools"]\ntoy = "benchkit_toy._tool:TOOL"\n' in toml
    assert '[project.entry-points."benchkit.tools"]\ntoy = "benchkit_toy._tool:TOOL"\n' in section


#: The blocks of "A seventh tool" headed by a file of the tool's own directory.
_SEVENTH = re.compile(r"^```\w+\n# (csv-qa/\S+)\n(.*?)^```", re.M | re.S)


def _answer(body: Mapping[str, Any]) -> str:
    """The model under test, as the seventh tool's run asks it: right about France (in its
    own words), wrong about Italy."""
    question = str(body["messages"][-1]["content"])
    return " paris. " if "France" in question else "Milan"


@pytest.mark.slow
def test_the_seventh_tool_builds_from_this_page_and_runs(
    tmp_path: Path, llm_server: FakeOpenAI
) -> None:
    """The walkthrough's files, taken from the page itself, make a distribution that pip
    installs; benchkit then lists its CSV file, lists the tool, and runs the file with the
    tool's format and evaluator against a (stand-in) chat model."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## A seventh tool") : text.index("## A memory provider")]
    files = dict(_SEVENTH.findall(section))
    assert set(files) == {
        "csv-qa/pyproject.toml",
        "csv-qa/csv_qa/__init__.py",
        "csv-qa/csv_qa/_tool.py",
        "csv-qa/csv_qa/_format.py",
        "csv-qa/csv_qa/_match.py",
        "csv-qa/capitals.csv",
    }
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body, encoding="utf-8")
    site = pip_install_into(tmp_path / "site", tmp_path / "csv-qa")
    llm_server.respond = _answer
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(site), str(REPO / "src")]),
        OPENAI_BASE_URL=llm_server.url,
        OPENAI_API_KEY="sk-doc",
        BENCHKIT_STORE=str(tmp_path / "runs.db"),
    )

    def benchkit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "benchkit", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=120,
        )

    tools = benchkit("tools", "-f", "json")
    assert tools.returncode == 0 and tools.stderr == "", tools.stderr
    (row,) = [r for r in json.loads(tools.stdout)["tools"] if r["name"] == "csv-qa"]
    assert (row["distribution"], row["version"], row["status"]) == ("benchkit-csv-qa", "0.1", "ok")
    assert row["parts"] == ["formats: csv-qa", "evaluators: csv-qa-match"]
    listed = benchkit("list", "csv-qa")
    assert listed.returncode == 0, listed.stderr
    (line,) = [line for line in listed.stdout.splitlines() if "capitals.csv" in line]
    assert [cell.strip() for cell in line.split("│")[1:5]] == ["capitals", "csv-qa", "", "2"]
    ran = benchkit("run", "csv-qa/capitals.csv", "--model", "stand-in", "-f", "json")
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["info"]["source_format"] == "csv-qa"
    assert [(c["task_id"], c["status"]) for c in result["cells"]] == [
        ("q1", "pass"),
        ("q2", "fail"),
    ]
    assert {s["name"] for c in result["cells"] for s in c["scores"]} == {"csv-qa-match"}
    asked = [r.body for r in llm_server.requests]
    assert [b["model"] for b in asked] == ["stand-in", "stand-in"]
    assert asked[0]["messages"][0] == {"role": "system", "content": "Answer in one word."}
