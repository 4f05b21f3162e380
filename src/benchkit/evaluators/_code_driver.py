"""The harness that runs a Python program and its tests inside the sandbox.

A plain script, standard library only: the ``code_tests`` evaluator writes it into the
sandbox's directory beside the program and runs ``python -I driver.py PROGRAM RESULT
TIMEOUT``. It runs the program as HumanEval's harness does — ``exec`` of the whole text
(solution, tests, ``check(entry_point)``) in a fresh, empty globals dictionary, under a
``SIGALRM`` timer of TIMEOUT seconds — and writes one JSON object to RESULT:

* ``{"outcome": "passed"}`` when the text ran to its end;
* ``{"outcome": "timeout", ...}`` when the timer fired first;
* ``{"outcome": "failed" | "memory", "exception": ..., "message": ..., "line": ...,
  "source": ...}`` for any exception (``SystemExit`` included, as in HumanEval), naming
  the line of the program where it was raised and that line's text (for a bare ``assert``,
  the failing assertion itself).

It exits 0 only after writing a pass, so a program that ends the process early
(``os._exit(0)``) has no result and fails. The harness guards against accidents, not
against a program written to forge its own result.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from types import TracebackType
from typing import Any

_PROGRAM_NAME = "solution.py"


class TimeoutException(Exception):
    """Raised by the timer (an Exception, as HumanEval's: a bare ``except`` may catch it)."""


def _alarm(signum: int, frame: object) -> None:
    raise TimeoutException("Timed out!")


def _where(tb: TracebackType | None, lines: list[str]) -> tuple[int | None, str | None]:
    """The last line of the program in the traceback, and its text."""
    line = None
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_code.co_filename == _PROGRAM_NAME:
            line = lineno
    if line is None or not 0 < line <= len(lines):
        return line, None
    return line, lines[line - 1].strip()


def _describe(exc: BaseException, lines: list[str]) -> dict[str, Any]:
    line, source = _where(exc.__traceback__, lines)
    outcome = "memory" if isinstance(exc, MemoryError) else "failed"
    try:
        message = str(exc)
    except Exception:  # a str() that raises is the program's, not ours
        message = "(its message could not be read)"
    return {
        "outcome": outcome,
        "exception": type(exc).__name__,
        "message": message[:2000],
        "line": line,
        "source": (source or "")[:500],
    }


def main(argv: list[str]) -> None:
    program_path, result_path, timeout = argv[0], argv[1], float(argv[2])
    with open(program_path, encoding="utf-8") as handle:
        text = handle.read()
    lines = text.split("\n")
    result: dict[str, Any]
    try:
        code = compile(text, _PROGRAM_NAME, "exec")
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            exec(code, {})
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        result = {"outcome": "passed"}
    except TimeoutException:
        result = {"outcome": "timeout", "message": f"timed out after {timeout:g} s"}
    except BaseException as exc:
        result = _describe(exc, lines)
    try:
        with open(result_path, "w", encoding="utf-8") as handle:
            json.dump(result, handle)
    finally:
        os._exit(0 if result["outcome"] == "passed" else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
