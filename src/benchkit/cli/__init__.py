"""``python -m benchkit``: the command line, a package of its own.

* :mod:`benchkit.cli._main` — the parser, the generic commands (``run``, ``validate``,
  ``list``, ``report``) and :func:`main`, the console entry point;
* :mod:`benchkit.cli.toolkit` — what every command module shares (exit codes, console,
  progress bar, store options and wiring); tool packages import it, never ``_main``;
* :mod:`benchkit.cli._store` — the run-store commands (``runs``, ``show``, ``compare``, …).

Each tool package contributes its own commands from its ``_cli`` module.
"""

from __future__ import annotations

from benchkit.cli._main import main
from benchkit.cli.toolkit import (
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
