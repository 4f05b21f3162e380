"""The toy sixth tool (tests/toy_tool), installed as its own distribution for the tests.

It is built with the test environment's hatchling and installed with pip into a directory
of its own (never into the test environment), once per test session; a subprocess given
:func:`toy_env` finds it exactly as an installed third-party tool: through its
``benchkit.tools`` entry point.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ._support import REPO

TOY_PROJECT = REPO / "tests" / "toy_tool"

#: A benchmark in the toy format: three sums the calculator gets right, one it cannot do.
TOY_BENCHMARK = '{"toy": 1, "sums": ["2 + 3 = 5", "10 - 4 = 6", "7 + 0 = 7", "6 * 7 = 42"]}\n'
#: A ``.toy`` text file (the toy's ``toy-lines`` format): one sum a line.
TOY_LINES = "1 + 1 = 2\n\n9 - 3 = 6\n2 * 2 = 4\n"


def pip_install_into(site: Path, project: Path) -> Path:
    """Build ``project`` with the test environment's hatchling (no download) and install it
    into the directory ``site`` only (never the test environment); returns ``site``."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(project),
        ],
        check=True,
        capture_output=True,
    )
    return site


def install_toy(site: Path) -> Path:
    """Build and install the toy tool's distribution into ``site``; returns ``site``."""
    return pip_install_into(site, TOY_PROJECT)


def toy_env(site: Path, **extra: str) -> dict[str, str]:
    """The environment of a subprocess that has the toy tool installed."""
    path = os.pathsep.join([str(site), str(REPO / "src")])
    return dict(os.environ, PYTHONPATH=path, **extra)


def toy_benchkit(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m benchkit ARGS`` in ``cwd`` with the toy tool installed from ``site``."""
    return subprocess.run(
        [sys.executable, "-m", "benchkit", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=toy_env(site),
        timeout=120,
    )


def fake_distribution(
    site: Path,
    name: str,
    *,
    version: str = "1.0",
    tools: dict[str, str] | None = None,
    entry_points: dict[str, dict[str, str]] | None = None,
    files: dict[str, str] | None = None,
) -> Path:
    """A distribution installed into ``site`` by hand (its ``.dist-info`` and its modules),
    as pip would leave it: cheaper than building one, and exactly what
    ``importlib.metadata`` reads. ``tools`` are its ``benchkit.tools`` entry points
    (``{name: "module:attr"}``), ``entry_points`` those of other groups, ``files`` its
    modules (``{relative path: text}``). Returns ``site``."""
    groups = {"benchkit.tools": tools or {}, **(entry_points or {})}
    dist = site / f"{name.replace('-', '_')}-{version}.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    lines = []
    for group, entries in groups.items():
        if entries:
            lines.append(f"[{group}]")
            lines += [f"{key} = {value}" for key, value in entries.items()]
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for relative, text in (files or {}).items():
        target = site / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return site
