"""An eval-skills skill's entrypoint as an argv: the subprocess sandbox's checks, MCP's split.

:func:`check_entrypoint` applies eval-skills' sandbox rules to a ``subprocess`` skill's
entrypoint (an allow-listed interpreter, no shell syntax, no system paths, no forbidden
commands, paths inside the skill's directory); :func:`mcp_command` splits an ``mcp``
skill's stdio-server command. Both raise ConfigError, at load time.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

from benchkit.errors import ConfigError

ALLOWED_EXECUTABLES = frozenset(
    {
        "python",
        "python3",
        "python3.10",
        "python3.11",
        "python3.12",
        "node",
        "node18",
        "node20",
        "ruby",
        "ruby3",
        "php",
        "php8",
        "java",
        "bun",
        "deno",
        "bash",
        "sh",
    }
)
"""The interpreters eval-skills' sandbox lets an entrypoint start (by basename)."""

_SHELL_SYNTAX = re.compile(r"[;&|`$(){}\[\]<>]")
_SYSTEM_PATHS = ("/etc/", "/proc/", "/sys/")
_FORBIDDEN_COMMANDS = re.compile(r"\b(sudo|chmod|chown|kill|pkill|curl|wget)\b")
_RM_RF = re.compile(r"\brm\b.*-rf")
_PATH_LIKE = re.compile(r"[./\\]")


def mcp_command(entrypoint: str, *, python: str | None = None) -> tuple[str, ...]:
    """The argv of an ``mcp`` skill's stdio server, or ``()`` for an ``http(s)://`` one.

    The entrypoint is split as the original splits it — on spaces, double quotes kept
    together (:func:`shlex.split`) — and never run by a shell. The subprocess sandbox's
    allow-list does not apply (MCP servers are commonly started by ``npx``, ``uvx`` or
    ``docker``); a bare ``python`` / ``python3`` runs as benchkit's interpreter, as for
    subprocess skills. Any other ``scheme://`` — the ``mcp://`` of eval-skills' own
    template — is a ConfigError: no transport serves it.
    """
    text = entrypoint.strip()
    if re.match(r"https?://", text, re.IGNORECASE):
        return ()
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", text)
    if scheme is not None:
        template = " (the placeholder of eval-skills' mcp_tool template)"
        raise ConfigError(
            f"entrypoint {entrypoint!r} is a {scheme.group(1)}:// URL, which no MCP transport "
            f"serves{template if scheme.group(1).lower() == 'mcp' else ''}",
            fix="give the http(s):// URL of a running MCP server (streamable HTTP or SSE), "
            "or the command that starts the server over stdio, e.g. python3 server.py.",
        )
    try:
        args = shlex.split(text)
    except ValueError as exc:
        raise ConfigError(
            f"cannot split entrypoint {entrypoint!r}: {exc}", fix="balance the quotes."
        ) from exc
    if not args:
        raise ConfigError("the entrypoint is empty", fix="write e.g. `python3 server.py`.")
    if args[0] in _python_names():
        args[0] = python or sys.executable
    return tuple(args)


def check_entrypoint(entrypoint: str, root: Path, *, python: str | None = None) -> tuple[str, ...]:
    """The argv for a subprocess skill's ``entrypoint``, after eval-skills' sandbox checks.

    The entrypoint is split on whitespace (no shell, no quoting). It is rejected when it
    holds shell syntax (``; & | ` $ ( ) { } [ ] < >``), ``..``, ``/etc/``, ``/proc/`` or
    ``/sys/``, the commands sudo, chmod, chown, kill, pkill, curl or wget, or ``rm ... -rf``;
    when the executable's basename is not in :data:`ALLOWED_EXECUTABLES`; or when an
    argument that looks like a path (holds ``.``, ``/`` or ``\\``) resolves outside
    ``root``. A bare ``python``, ``python3`` or ``python3.N`` of the running minor version
    becomes ``python`` (default :data:`sys.executable`). Raises ConfigError.
    """
    args = entrypoint.split()
    if not args:
        raise ConfigError("the entrypoint is empty", fix="write e.g. `python3 skill.py`.")
    fix = (
        "name an allowed interpreter and a script in the skill's directory, e.g. python3 skill.py."
    )
    shell = _SHELL_SYNTAX.search(entrypoint)
    if shell is not None:
        raise ConfigError(
            f"entrypoint {entrypoint!r} holds {shell.group()!r}: skills run without a shell",
            fix=fix,
        )
    if ".." in entrypoint:
        raise ConfigError(
            f"entrypoint {entrypoint!r} holds '..': it may not climb out of the skill's directory",
            fix=fix,
        )
    for system in _SYSTEM_PATHS:
        if system in entrypoint:
            raise ConfigError(
                f"entrypoint {entrypoint!r} touches {system}, which the sandbox forbids", fix=fix
            )
    command = _FORBIDDEN_COMMANDS.search(entrypoint)
    if command is not None:
        raise ConfigError(
            f"entrypoint {entrypoint!r} runs {command.group()!r}, which the sandbox forbids",
            fix=fix,
        )
    if _RM_RF.search(entrypoint):
        raise ConfigError(
            f"entrypoint {entrypoint!r} runs `rm -rf`, which the sandbox forbids", fix=fix
        )
    executable = args[0]
    base = os.path.basename(executable)
    if base not in ALLOWED_EXECUTABLES:
        raise ConfigError(
            f"executable {executable!r} is not one the sandbox allows",
            fix=f"start the skill with one of: {', '.join(sorted(ALLOWED_EXECUTABLES))}.",
        )
    for arg in args[1:]:
        if _PATH_LIKE.search(arg) and not _inside(arg, root):
            raise ConfigError(
                f"argument {arg!r} points outside the skill's directory {str(root)!r}",
                fix="keep the skill's files in its directory and name them relatively.",
            )
    if executable in _python_names():
        args[0] = python or sys.executable
    return tuple(args)


def _python_names() -> frozenset[str]:
    return frozenset({"python", "python3", f"python3.{sys.version_info.minor}"})


def _inside(arg: str, root: Path) -> bool:
    resolved = Path(os.path.normpath(root / arg))
    return resolved.is_relative_to(root)
