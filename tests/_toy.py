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


def install_toy(site: Path) -> Path:
    """Build and install the toy tool's distribution into ``site``; returns ``site``."""
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
            str(TOY_PROJECT),
        ],
        check=True,
        capture_output=True,
    )
    return site


def toy_env(site: Path, **extra: str) -> dict[str, str]:
    """The environment of a subprocess that has the toy tool installed."""
    path = os.pathsep.join([str(site), str(REPO / "src")])
    return dict(os.environ, PYTHONPATH=path, **extra)
