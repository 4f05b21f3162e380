"""``python -m benchkit``: the command line, a package of its own.

* :mod:`benchkit.cli._main` — the parser, the generic commands (``run``, ``validate``,
  ``list``, ``report``) and :func:`main`, the console entry point;
* :mod:`benchkit.cli._store` — the run-store commands (``runs``, ``show``, ``compare``, …);
* :mod:`benchkit.cli._mcp` — ``mcp tools``;
* :mod:`benchkit.cli._tools` — ``tools``: the tools found and whether each loaded.

What every command module shares (exit codes, console, progress bar, store options and
wiring) is :mod:`benchkit.cli_toolkit`, outside this package. Each loaded tool contributes
its own commands (:attr:`benchkit.tools.Tool.commands`, imported only when chosen); the
CLI names none.
"""

from __future__ import annotations

from benchkit.cli._main import main
from benchkit.cli_toolkit import (
    EXIT_BAD_INPUT,
    EXIT_FAIL_UNDER,
    EXIT_INTERRUPTED,
    EXIT_OK,
    INTERRUPTS,
    Parser,
    ProgressBar,
    add_store_options,
    console,
    load_result,
    stored_run,
)

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAIL_UNDER",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "INTERRUPTS",
    "Parser",
    "ProgressBar",
    "add_store_options",
    "console",
    "load_result",
    "main",
    "stored_run",
]
