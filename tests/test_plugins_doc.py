"""docs/plugins.md: its examples run as written, and it lists every built-in's options."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchkit.registry import default_registries

from ._support import REPO

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
