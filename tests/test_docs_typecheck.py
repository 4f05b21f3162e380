"""Every Python example in README.md and docs/ type-checks under ``mypy --strict``, and a
misspelt public name (``benchkit.Runer``) is a type error, not a silent ``Any``.

A block that is deliberately partial (a fragment of a larger program) is marked with an
HTML comment on the line before its fence: ``<!-- typecheck: skip -->``.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ._support import REPO

pytestmark = pytest.mark.slow

_FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
_SKIP = "<!-- typecheck: skip -->"


def python_blocks() -> list[tuple[str, int, str]]:
    """(document, line, code) for every ```python block not marked to skip."""
    found = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            if before.strip() == _SKIP:
                continue
            line = text.count("\n", 0, match.start()) + 2
            found.append((str(doc.relative_to(REPO)), line, match.group(1)))
    return found


def mypy(files: list[Path], cwd: Path) -> str:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            # Examples may await at the top level, as in a notebook or `python -m asyncio`.
            "--disable-error-code",
            "top-level-await",
            "--cache-dir",
            str(REPO / ".mypy_cache"),
            *map(str, files),
        ],
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    return proc.stdout + proc.stderr


def test_every_python_example_in_the_docs_type_checks(tmp_path: Path) -> None:
    blocks = python_blocks()
    assert len(blocks) >= 5  # the README and the docs do have examples
    files = []
    where = {}
    for i, (doc, line, code) in enumerate(blocks):
        compile(code, f"{doc}:{line}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        path = tmp_path / f"example_{i}.py"
        path.write_text(code, encoding="utf-8")
        files.append(path)
        where[path.name] = f"{doc}:{line}"
    # The typo check rides along in the same mypy run (one start-up, one cache).
    typo = tmp_path / "typo.py"
    typo.write_text(
        "import benchkit\nimport benchkit.metrics\n\nrunner = benchkit.Runer()\n"
        "metric = benchkit.metrics.RetrievalEvalutor\n"
    )
    output = mypy([*files, typo], tmp_path)
    errors = [line for line in output.splitlines() if ": error:" in line]
    typo_errors = [e for e in errors if e.startswith("typo.py")]
    assert any('has no attribute "Runer"' in e for e in typo_errors), output
    assert any('has no attribute "RetrievalEvalutor"' in e for e in typo_errors), output
    wrong = [
        f"{where[e.split(':', 1)[0]]} (+{e.split(':')[1]} lines): {e.split(':', 2)[2].strip()}"
        for e in errors
        if not e.startswith("typo.py")
    ]
    assert not wrong, "\n".join(wrong)
