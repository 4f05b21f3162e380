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
    assert len(contracts()) == 6


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


SRC = REPO / "src" / "benchkit"
#: The tree's placeholder for "each tool package".
_TOOL = "<tool>"


def _tool_dirs() -> list[Path]:
    return sorted(p.parent for p in (SRC / "formats").glob("*/_tool.py"))


def _exists(path: str) -> bool:
    """Whether ``path`` (relative to src/benchkit, else to the repository; ``<tool>`` for
    any tool package; a bare file name anywhere in the package) names a real file or folder."""
    if _TOOL in path:
        head, _, tail = path.partition(_TOOL + "/")
        assert head == "formats/", path
        return any((tool / tail).exists() for tool in _tool_dirs())
    if any((root / path).exists() for root in (SRC, SRC.parent, REPO)):
        return True
    return "/" not in path.rstrip("/") and any(SRC.rglob(path.rstrip("/")))


def _tree() -> tuple[list[str], list[str]]:
    """The paths the tree of docs/architecture.md names: (those that must exist, those in
    parentheses, which may be absent — modules other branches are adding)."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("## The tree", 1)[1].split("```\n", 2)[1]
    lines = block.splitlines()
    assert lines[0] == "src/benchkit/"
    required: list[str] = []
    optional: list[str] = []
    folders: list[str] = []
    for line in lines[1:]:
        indent = len(line) - len(line.lstrip(" "))
        if indent >= 20 or not line.strip():  # a description's continuation
            continue
        level = indent // 2 - 1
        names, _, description = line.strip().partition("  ")
        folders = folders[:level]
        for token in names.split():
            absent_ok = token.startswith("(") and token.endswith(")")
            name = token.strip("()")
            path = "/".join([*folders, name])
            if description.strip().startswith("(in the wheel only)"):
                path = name  # a copy of the repository's folder of that name
            (optional if absent_ok else required).append(path)
            if name.endswith("/"):
                folders = [*folders[:level], name.rstrip("/")]
    return required, optional


def test_every_module_the_architecture_names_exists() -> None:
    """The tree, and every module path or dotted ``benchkit.`` name in backticks elsewhere
    in docs/architecture.md, names something that exists; only what the tree puts in
    parentheses may be absent."""
    required, optional = _tree()
    assert "tools.py" in required and "formats/<tool>/_tool.py" in required
    missing = [path for path in required if not _exists(path)]
    assert not missing, f"docs/architecture.md's tree names what does not exist: {missing}"
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    prose = text.split("## The tree", 1)[0] + text.split("## Layers", 1)[1]
    paths = set(re.findall(r"`([\w<>./-]+(?:\.py|\.css|\.js|/))`", prose))
    assert "cli_toolkit.py" in paths
    optional_prefixes = tuple(p.rstrip("/") for p in optional)
    missing = [p for p in sorted(paths) if not p.startswith(optional_prefixes) and not _exists(p)]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"
    for dotted in sorted(set(re.findall(r"`(benchkit(?:\.\w+)+)`", prose))):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            base = SRC.parent.joinpath(*parts[:cut])
            module = base.with_suffix(".py") if base.with_suffix(".py").is_file() else None
            module = module or (base / "__init__.py" if (base / "__init__.py").is_file() else None)
            if module is not None:
                break
        assert module is not None, dotted
        rest = parts[cut:]
        if rest:  # an attribute: defined at the module's top level, or exported by name
            source = module.read_text(encoding="utf-8")
            name = re.escape(rest[0])
            pattern = rf'^(?:def |class )?{name}\b|"{name}"'
            assert re.search(pattern, source, re.M), f"{dotted}: no {rest[0]} in {module}"


@pytest.mark.slow
def test_an_import_cycle_between_modules_fails_naming_it(tmp_path: Path) -> None:
    """A copy of the package with two cycles — the model importing the results inside a
    function (the results import the model), and one of the runner's modules importing
    another under ``if TYPE_CHECKING:`` (which imports it back) — breaks the acyclic
    contract at both levels, with no exception to hide either (#41)."""
    copy = tmp_path / "benchkit"
    shutil.copytree(REPO / "src" / "benchkit", copy, ignore=shutil.ignore_patterns("__pycache__"))
    model = copy / "model.py"
    model.write_text(
        model.read_text(encoding="utf-8")
        + "\n\ndef _sneaky() -> object:\n    from benchkit.results import Score\n\n"
        "    return Score\n",
        encoding="utf-8",
    )
    cells = copy / "runner" / "_cells.py"
    cells.write_text(
        cells.read_text(encoding="utf-8")
        + "\n\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from benchkit.runner._state import RunState\n",
        encoding="utf-8",
    )
    proc = lint_imports(pythonpath=tmp_path)
    assert proc.returncode != 0
    out = " ".join(proc.stdout.split())  # the contract's long name is wrapped
    assert "No import cycles between any modules" in out and "BROKEN" in out
    assert "No cycles are allowed in benchkit." in out
    assert "No cycles are allowed in benchkit.runner." in out


def test_the_acyclic_contract_has_no_exception() -> None:
    (acyclic,) = [c for c in contracts() if c["type"] == "acyclic_siblings"]
    assert acyclic["ancestors"] == ["benchkit"] and "ignore_imports" not in acyclic
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["importlinter"]["exclude_type_checking_imports"] is False
