"""Run a command under resource limits: the launcher :class:`SubprocessProvider` uses.

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

__all__ = ["main", "parse_args"]

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
