"""``python -m benchkit``: the command line, a package of its own.

* :mod:`benchkit.cli._main` — the parser, the generic commands (``run``, ``validate``,
  ``list``, ``report``) and the command line proper;
* :mod:`benchkit.cli._store` — the run-store commands (``runs``, ``show``, ``compare``, …);
* :mod:`benchkit.cli._mcp` — ``mcp tools``;
* :mod:`benchkit.cli._tools` — ``tools``: the tools found and whether each loaded.

What every command module shares (exit codes, console, progress bar, store options and
wiring) is :mod:`benchkit.cli_toolkit`, outside this package. Each loaded tool contributes
its own commands (:attr:`benchkit.tools.Tool.commands`, imported only when chosen); the
CLI names none.

:func:`main` answers ``--version`` before importing anything else (perf/cli_startup.py
measures it against ``import benchkit``); the rest is imported on first use.
"""

from __future__ import annotations

import sys

from benchkit._lazy import lazy_getattr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point (``python -m benchkit``, the ``benchkit`` script); returns the exit
    status. ``--version`` (before any command) is answered here, reading no tool."""
    args = list(sys.argv[1:] if argv is None else argv)
    for arg in args:
        if arg == "--version":
            from benchkit._version import __version__

            sys.stdout.write(f"benchkit {__version__}\n")
            return 0
        if not arg.startswith("-"):
            break
    from benchkit.cli._main import main as run

    return run(args)


if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(
        __name__, {name: "benchkit.cli_toolkit" for name in __all__ if name != "main"}
    )
