"""The generic layers name no tool: everything a tool brings reaches them through its
:class:`~benchkit.tools.Tool` (issue #28).

The registry, the CLI and the server (their toolkits, the explorer's static files) and the
reports are searched for every built-in tool's name, title and package — the strings a
tool-specific branch or a hard-wired module path would contain. A new tool then needs no
edit outside its own folder.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchkit.registry import default_registries

from ._support import REPO

SRC = REPO / "src" / "benchkit"

#: The generic layers, as files and directories under src/benchkit.
GENERIC = ("registry.py", "tools.py", "cli", "cli_toolkit.py", "serve", "serve_toolkit", "reports")


def _files() -> list[Path]:
    found: list[Path] = []
    for entry in GENERIC:
        path = SRC / entry
        if path.is_file():
            found.append(path)
        else:
            found.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.is_file() and p.suffix in {".py", ".js", ".html", ".css", ".json"}
            )
    return found


def _tool_strings() -> set[str]:
    strings: set[str] = set()
    for tool in default_registries().all_tools():
        if not default_registries().tools.is_builtin(tool.name):
            continue
        strings.add(tool.package)
        if tool.name != "native":  # "native" is also benchkit's word for its own files
            strings.update({tool.name, tool.name.replace("-", "_"), tool.title})
    return strings


def test_every_built_in_tool_is_searched_for() -> None:
    strings = _tool_strings()
    assert {"codeforge", "skillvault", "memorybench", "eval-skills", "eval_skills"} <= strings
    assert "benchkit.formats.native" in strings
    assert len(_files()) > 10


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(SRC)))
def test_a_generic_layer_names_no_tool(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    pattern = re.compile("|".join(re.escape(s) for s in sorted(_tool_strings())), re.IGNORECASE)
    hits = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        if pattern.search(line)
    ]
    assert hits == []
