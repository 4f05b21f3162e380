"""Every third-party module benchkit imports is declared in pyproject.toml: in the core
dependencies, or in the extra of the part that imports it (#41).

A module found only as another package's dependency (h11 under uvicorn, referencing under
jsonschema) works until that package drops it; so each import — at the top of a module,
inside a function, under ``if TYPE_CHECKING:`` or through ``importlib.import_module`` with
a literal name — must resolve to the standard library, benchkit, or a distribution named
for that module.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._support import REPO

SRC = REPO / "src" / "benchkit"

#: The parts of benchkit whose imports come from an extra (paths under src/benchkit, glob
#: patterns); everything else may import the core dependencies only.
EXTRA_OF = {
    "serve": ("serve/*", "serve_toolkit/*", "formats/*/_serve.py"),
    "ray": ("executors/_ray.py",),
    "mcp": ("providers/_mcp.py",),
    "otel": ("traces/_decode.py",),
    "local": ("llm/_local_server.py", "llm/_scorer.py"),
    "dataset": ("formats/dataset/_read.py",),
    "hf": ("formats/dataset/_read.py",),
    "pandas": ("results.py",),  # RunResult.to_pandas
}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert found is not None, requirement
    return _normal(found.group(0))


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


@functools.cache
def _declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {_requirement_name(r) for r in project["dependencies"]}
    extras = {
        extra: {_requirement_name(r) for r in requirements}
        for extra, requirements in project["optional-dependencies"].items()
    }
    return core, extras


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, top-level module) of every absolute import in ``path``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.partition(".")[0]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value.partition(".")[0]


def _extras_of(relative: str) -> list[str]:
    return [
        extra
        for extra, patterns in EXTRA_OF.items()
        if any(fnmatch.fnmatch(relative, pattern) for pattern in patterns)
    ]


def _third_party(name: str) -> bool:
    return name not in sys.stdlib_module_names and name not in ("benchkit", "__future__")


def _undeclared(path: Path) -> list[str]:
    core, extras = _declared()
    relative = str(path.relative_to(SRC))
    allowed = set(core)
    for extra in _extras_of(relative):
        allowed |= extras[extra]
    distributions = _distributions()
    problems = []
    for line, name in _imports(path):
        if not _third_party(name):
            continue
        # An extra that is not installed here (pandas) is looked for under its own name.
        names = {_normal(d) for d in distributions.get(name, [name])}
        if not names & allowed:
            problems.append(f"{relative}:{line}: {name} (distribution {', '.join(sorted(names))})")
    return problems


FILES = sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_every_import_is_declared(path: Path) -> None:
    assert _undeclared(path) == []


def test_the_check_sees_every_kind_of_import(tmp_path: Path) -> None:
    """An undeclared module is caught at the top, in a function, under TYPE_CHECKING and
    through import_module; the extras' parts may import their extra only."""
    core, extras = _declared()
    assert {"attrs", "cattrs", "jsonschema", "ruamel-yaml", "anyio", "httpx", "rich"} <= core
    assert set(EXTRA_OF) <= set(extras)
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import json, numpy\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from torch import nn\n"
        "def f():\n    import importlib, yaml\n    return importlib.import_module('ray')\n",
        encoding="utf-8",
    )
    assert [name for _, name in _imports(sample) if _third_party(name)] == [
        "numpy",
        "torch",
        "yaml",
        "ray",
    ]
    assert _extras_of("executors/_ray.py") == ["ray"] and _extras_of("runner/_cells.py") == []
    assert _extras_of("formats/skillvault/_serve.py") == ["serve"]


def test_a_part_outside_an_extra_may_not_import_it() -> None:
    core, extras = _declared()
    assert "starlette" in extras["serve"] and "starlette" not in core
    assert "ray" in extras["ray"] and "ray" not in core
