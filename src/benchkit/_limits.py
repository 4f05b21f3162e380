"""benchkit's limits: the bounds on what a file, a request or the command line may ask for,
and the launcher that runs a command under resource limits.

**Bounds.** Every count, size and duration read from a benchmark file, a request or a
command-line option is checked against one of the constants below, so that a few bytes
cannot ask for a million workers, a 1e30-item list or an endless sleep. They are generous
for real use; docs/limits.md lists them (a test keeps that table, the shipped JSON Schemas
and these constants in step). A value beyond its bound, or a non-finite number, is an
error naming where it came from and the fix.

**The launcher.** Run a command under resource limits: what :class:`SubprocessProvider` uses.

``anyio.open_process`` has no ``preexec_fn``, so the limits are set in this tiny Python
process, which then replaces itself with the command (limits survive ``exec``). It imports
nothing from benchkit, so it runs as a plain script path with no ``PYTHONPATH``::

    python -I -S _limits.py --as 268435456 --cpu 10 -- /usr/bin/skill --flag

``--as`` caps the address space in bytes (RLIMIT_AS), ``--cpu`` the CPU time in seconds
(RLIMIT_CPU: SIGXCPU at the limit, SIGKILL one second later). Core dumps are always
disabled, so a skill killed by a limit leaves no core file in its working directory.
"""

from __future__ import annotations

import os
import resource
import sys
from typing import NoReturn

__all__ = [
    "BOUNDS",
    "MAX_ALIAS_CHARS",
    "MAX_ALIAS_VALUES",
    "MAX_CONCURRENCY",
    "MAX_COUNT",
    "MAX_DEPTH",
    "MAX_EPOCHS",
    "MAX_MEMORY_MB",
    "MAX_RETRIES",
    "MAX_RETRIEVAL_LIMIT",
    "MAX_SEED",
    "MAX_TIMEOUT_S",
    "MAX_WAIT_S",
    "MAX_WEIGHT",
    "MIN_SEED",
    "main",
    "out_of_bounds",
    "parse_args",
]

# --------------------------------------------------------------------------- bounds
# Plain constants only: this file also runs as a script with no benchkit on the path.

#: Cells (cases, tasks) running at once: ``run.concurrency``, a condition's
#: ``concurrency``, ``--concurrency``, ``--workers``, an MCP server's ``max_in_flight``.
MAX_CONCURRENCY = 1_000
#: Repeats of every task x condition (``run.epochs``, ``--epochs``, ``--runs``), and so
#: the ``k`` of pass@k.
MAX_EPOCHS = 1_000
#: Retries of one cell (``run.retries``, ``--retries``), reconnects of an MCP server.
MAX_RETRIES = 100
#: The longest time limit of one cell or call, in seconds (one day): ``timeout``,
#: ``--timeout``, ``timeoutMs``, ``timeout_ms``, an MCP server's CPU seconds.
MAX_TIMEOUT_S = 86_400
#: The longest wait benchkit is told to make, in seconds (one hour): retry backoff,
#: a setup step's ``delay_ms``, MemoryBench's ``phase_delay_ms``, a kill grace.
MAX_WAIT_S = 3_600
#: The largest task weight (``weight``): a sum of weights stays far from overflowing.
MAX_WEIGHT = 1_000_000
#: Memories fetched per query (MemoryBench ``query.retrieval_limit``).
MAX_RETRIEVAL_LIMIT = 10_000
#: Any other count a file or an option names (``--limit``, ``flatten.max_items``,
#: ``shared_sample_size``, ``runs list -n``): a cap on a slice, never an allocation.
MAX_COUNT = 1_000_000_000
#: The largest budget a run may name, in US dollars (``run.max_cost``, ``--max-cost``).
MAX_COST_USD = 1_000_000
#: An MCP server's address-space cap, in MiB (1 TiB).
MAX_MEMORY_MB = 1_048_576
#: Seeds are signed 64-bit integers, as the store keeps them.
MIN_SEED, MAX_SEED = -(2**63), 2**63 - 1

#: Lists and mappings nested deeper than this are refused: no benchmark needs them, and
#: every later walker (schemas, JavaScript semantics) recurses.
MAX_DEPTH = 100
#: Values that YAML aliases (``*name``) may add to a document by repeating what their
#: anchor holds, in all. A few hundred bytes of nested aliases can otherwise expand to
#: billions.
MAX_ALIAS_VALUES = 1_000_000
#: Characters (of strings and scalars) that YAML aliases may add to a document, in all, or
#: ten times the document's own size when that is more: a 1 MB string repeated by a
#: thousand aliases would otherwise take gigabytes.
MAX_ALIAS_CHARS = 10_000_000

#: Every bound above with its unit and what it bounds: the table docs/limits.md shows.
BOUNDS: dict[str, tuple[int, str, str]] = {
    "MAX_CONCURRENCY": (MAX_CONCURRENCY, "cells", "cells (cases, tasks) running at once"),
    "MAX_EPOCHS": (MAX_EPOCHS, "epochs", "repeats of every task x condition; pass@k's k"),
    "MAX_RETRIES": (MAX_RETRIES, "retries", "retries of a cell, reconnects of a server"),
    "MAX_TIMEOUT_S": (MAX_TIMEOUT_S, "seconds", "a cell's or a call's time limit"),
    "MAX_WAIT_S": (MAX_WAIT_S, "seconds", "a wait: retry backoff, delays between steps"),
    "MAX_WEIGHT": (MAX_WEIGHT, "", "a task's weight"),
    "MAX_RETRIEVAL_LIMIT": (MAX_RETRIEVAL_LIMIT, "memories", "memories fetched per query"),
    "MAX_COUNT": (MAX_COUNT, "items", "any other count (a cap on a slice)"),
    "MAX_COST_USD": (MAX_COST_USD, "USD", "a run's cost budget"),
    "MAX_MEMORY_MB": (MAX_MEMORY_MB, "MiB", "a server's address-space cap"),
    "MAX_SEED": (MAX_SEED, "", "seeds (from MIN_SEED): signed 64-bit"),
    "MAX_DEPTH": (MAX_DEPTH, "levels", "lists and mappings nested in a file"),
    "MAX_ALIAS_VALUES": (MAX_ALIAS_VALUES, "values", "values YAML aliases add to a file"),
    "MAX_ALIAS_CHARS": (MAX_ALIAS_CHARS, "characters", "characters YAML aliases add"),
}


def out_of_bounds(
    value: object, low: float, high: float, *, above: bool = False, integer: bool = False
) -> str | None:
    """Why ``value`` is not a number from ``low`` (excluded when ``above``) to ``high``, as
    the end of a sentence ("must be <= 1,000, got 1e+30"); None when it is one.

    NaN and the infinities are never numbers here; with ``integer`` a value must be a
    whole number (a float such as ``3.0`` is one, as JSON Schema counts it).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be a number, got {value!r}"
    if value != value or value in (float("inf"), float("-inf")):
        return f"must be a finite number, got {value!r}"
    if integer and isinstance(value, float) and not value.is_integer():
        return f"must be a whole number, got {value!r}"
    if (value <= low) if above else (value < low):
        return f"must be {'>' if above else '>='} {low:,}, got {value!r}"
    if value > high:
        return f"must be <= {high:,}, got {value!r}"
    return None


# --------------------------------------------------------------------------- the launcher

_FLAGS = {"--as": resource.RLIMIT_AS, "--cpu": resource.RLIMIT_CPU}


def parse_args(argv: list[str]) -> tuple[dict[int, int], list[str]]:
    """Split ``[--as N] [--cpu N] -- command...`` into ``({resource: limit}, command)``."""
    limits: dict[int, int] = {}
    rest = list(argv)
    while rest and rest[0] in _FLAGS and len(rest) >= 2:
        limits[_FLAGS[rest[0]]] = int(rest[1])
        rest = rest[2:]
    if not rest or rest[0] != "--" or len(rest) < 2:
        raise ValueError("usage: _limits.py [--as BYTES] [--cpu SECONDS] -- command [args...]")
    return limits, rest[1:]


def _set_limit(kind: int, soft: int, hard: int) -> None:
    _, current_hard = resource.getrlimit(kind)
    if current_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    resource.setrlimit(kind, (soft, hard))


def main(argv: list[str]) -> NoReturn:
    """Apply the limits in ``argv`` and exec the command; exit 127 when it cannot run."""
    try:
        limits, command = parse_args(argv)
    except ValueError as exc:
        print(f"benchkit launcher: {exc}", file=sys.stderr)
        sys.exit(2)
    _set_limit(resource.RLIMIT_CORE, 0, 0)
    for kind, value in limits.items():
        _set_limit(kind, value, value + 1 if kind == resource.RLIMIT_CPU else value)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"benchkit launcher: cannot run {command[0]!r}: {exc}", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
