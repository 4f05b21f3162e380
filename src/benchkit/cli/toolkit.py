"""The CLI toolkit's former address: :mod:`benchkit.cli_toolkit`, re-exported.

Tools written against ``benchkit.cli.toolkit`` keep working; new code (benchkit's own tool
packages included) imports :mod:`benchkit.cli_toolkit`, which is outside the ``cli``
package, so a tool's commands do not import the CLI that loads them.
"""

from __future__ import annotations

from benchkit.cli_toolkit import (
    EXIT_BAD_INPUT,
    EXIT_FAIL_UNDER,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    FORMATS,
    INTERRUPTS,
    Parser,
    ProgressBar,
    RunHook,
    add_junit_option,
    add_run_hook,
    add_select_options,
    add_store_options,
    bounded,
    console,
    emit,
    load_result,
    open_store,
    run_until_signalled,
    select,
    stored_run,
    write_junit,
)

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAIL_UNDER",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "FORMATS",
    "INTERRUPTS",
    "Parser",
    "ProgressBar",
    "RunHook",
    "add_junit_option",
    "add_run_hook",
    "add_select_options",
    "add_store_options",
    "bounded",
    "console",
    "emit",
    "load_result",
    "open_store",
    "run_until_signalled",
    "select",
    "stored_run",
    "write_junit",
]
