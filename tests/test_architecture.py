"""The layer contracts: import-linter keeps them, a broken one names the import, and
docs/architecture.md's layer table is the contract the configuration checks."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ._support import REPO

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(*, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def contracts() -> list[dict[str, object]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    found: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return found


def test_the_source_keeps_every_contract() -> None:
    proc = lint_imports()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout and "BROKEN" not in proc.stdout
    kinds = {str(c["type"]) for c in contracts()}
    assert kinds == {"layers", "independence", "forbidden", "acyclic_siblings"}
    assert len(contracts()) == 5


@pytest.mark.slow
def test_a_backward_import_fails_naming_it(tmp_path: Path) -> None:
    """A copy of the package where the core imports the store and a tool's commands import
    the CLI's main module (inside functions, as lazy imports would) breaks the contracts,
    and the report names each import."""
    copy = tmp_path / "benchkit"
    shutil.copytree(REPO / "src" / "benchkit", copy, ignore=shutil.ignore_patterns("__pycache__"))
    model = copy / "model.py"
    model.write_text(
        model.read_text(encoding="utf-8")
        + "\n\ndef _sneaky() -> object:\n    from benchkit.store import Store\n\n    return Store\n",
        encoding="utf-8",
    )
    tool_cli = copy / "formats" / "codeforge" / "_cli.py"
    tool_cli.write_text(
        tool_cli.read_text(encoding="utf-8")
        + "\n\ndef _reach_up() -> object:\n    from benchkit.cli import _main\n\n    return _main\n",
        encoding="utf-8",
    )
    proc = lint_imports(pythonpath=tmp_path)
    assert proc.returncode != 0
    assert "The core imports no tool package, no store, no CLI BROKEN" in proc.stdout
    assert "benchkit.model -> benchkit.store" in proc.stdout
    assert "Tool packages import no CLI module but the toolkit BROKEN" in proc.stdout
    assert "benchkit.formats.codeforge._cli -> benchkit.cli._main" in proc.stdout


def _doc_layers() -> list[str]:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"\| \d+ \|", line)]
    layers = []
    for row in rows:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        layers.append(cells[2].strip("`").replace("\\|", "|"))
    return layers


def test_the_docs_layer_table_is_the_checked_contract() -> None:
    (layers,) = [c for c in contracts() if c["type"] == "layers"]
    assert _doc_layers() == layers["layers"]
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    (independent,) = [c for c in contracts() if c["type"] == "independence"]
    for module in independent["modules"]:  # type: ignore[attr-defined]
        assert f"`{module}`" in doc
