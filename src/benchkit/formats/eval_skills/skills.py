"""eval-skills skills: ``skill.json`` discovery, and each skill as a condition of a run.

A skill is a directory with a ``skill.json`` manifest (``id``, ``name``, ``version``,
``adapterType``, ``entrypoint``, ...). :func:`discover` finds the manifests under the paths
it is given — a directory is searched recursively, a file is one manifest — and
:meth:`Skill.condition` turns each skill into a :class:`~benchkit.model.Condition`, so
several skills run side by side on one benchmark and compare with paired statistics::

    import attrs, benchkit
    from benchkit.formats.eval_skills import load_benchmark
    from benchkit.formats.eval_skills.skills import discover

    suite = load_benchmark("coding-easy", benchmarks_dir="benchmarks")
    skills = discover(["benchmarks/skills"])
    suite = attrs.evolve(suite, conditions=tuple(s.condition() for s in skills))
    result = benchkit.run(suite)

Adapters:

* ``subprocess`` (the default) runs the entrypoint once per task through
  :class:`~benchkit.providers.SubprocessProvider`: JSON-RPC 2.0 on stdin/stdout, no shell,
  a scrubbed environment (plus ``EVAL_SKILLS_SANDBOX=1``), 256 MB of address space, 5 MiB
  per output stream, cwd = the skill's directory, and the whole process group killed when
  the task's time is up. The entrypoint passes eval-skills' sandbox checks at load time
  (:func:`check_entrypoint`): an allow-listed interpreter, no shell syntax, no system
  paths, script arguments inside the skill's directory. ``python`` / ``python3`` run as
  the interpreter benchkit runs under (``python=`` chooses another).
* ``http`` POSTs ``{"skillId", "version", "input"}`` to the entrypoint URL through
  :class:`~benchkit.providers.HttpProvider` (``body="eval-skills"``).
* ``mcp`` calls one tool of an MCP server through :class:`~benchkit.providers.McpProvider`
  (extra ``benchkit[mcp]``), with the original's rules: an ``http(s)://`` entrypoint is a
  remote server (streamable HTTP, falling back to SSE, which the original used), anything
  else the command of a stdio server (split like a shell would, quotes respected, no shell;
  ``python`` / ``python3`` as for subprocess skills; cwd = the skill's directory; the
  scrubbed environment plus ``EVAL_SKILLS_SANDBOX=1``; the process group killed when a
  task's time is up). The tool is ``metadata.toolName``, else the skill's id; its arguments
  are the task's ``inputData``; the output is the text items joined with newlines,
  JSON-parsed when they parse. One server (one session) serves all of a run's tasks. The
  original's template entrypoint ``mcp://...`` names no transport: a ConfigError at load.

A manifest given as a file has its own folder as the skill's directory (the original used
the process's working directory, so such a skill could not find its script).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

from benchkit import _builtins
from benchkit._jsonschema import load_schema, make_validator, validate
from benchkit.errors import ConfigError
from benchkit.formats._source import Document, read_document
from benchkit.formats.eval_skills._entrypoint import (
    ALLOWED_EXECUTABLES,
    check_entrypoint,
    mcp_command,
)
from benchkit.model import Condition, ProviderSpec

__all__ = [
    "ALLOWED_EXECUTABLES",
    "MANIFEST",
    "MAX_OUTPUT_BYTES",
    "MEMORY_MB",
    "Skill",
    "check_entrypoint",
    "conditions",
    "discover",
    "load_skill",
    "mcp_command",
    "versions",
]

MANIFEST = "skill.json"
"""The manifest file :func:`discover` looks for."""

MEMORY_MB = 256
"""The address-space limit of a subprocess skill (eval-skills' ``ulimit -v 262144``)."""

MAX_OUTPUT_BYTES = 5 * 1024 * 1024
"""How much a subprocess skill may write to stdout, and to stderr, before it is killed."""

_FIX_HINT = "see docs/formats/eval-skills.md"
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})

Adapter = Literal["subprocess", "http", "mcp"]


@attrs.frozen
class Skill:
    """One skill: its manifest's fields, its directory, and how to call it.

    ``command`` is the checked argv of a subprocess skill or a stdio MCP server (empty for
    http and remote MCP servers); ``root`` is the directory the skill runs in;
    ``manifest`` the ``skill.json`` it came from.
    """

    id: str
    name: str
    version: str
    entrypoint: str
    root: Path
    adapter: Adapter = "subprocess"
    command: tuple[str, ...] = ()
    manifest: Path | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def label(self) -> str:
        """``name vVERSION``, the condition's label."""
        return f"{self.name} v{self.version}"

    def provider_spec(self, *, timeout: float = 30.0) -> ProviderSpec:
        """The provider that calls this skill. ``timeout`` (seconds) is the HTTP client's
        own limit (for mcp: the time to start the server and open the session); the run's
        per-task timeout applies on top of it."""
        if self.adapter == "mcp":
            return self._mcp_spec(timeout)
        if self.adapter == "http":
            return ProviderSpec(
                "http",
                {
                    "url": self.entrypoint,
                    "body": "eval-skills",
                    "body_options": {"version": self.version},
                    "timeout": timeout,
                },
            )
        return ProviderSpec(
            "subprocess",
            {
                "command": list(self.command),
                "cwd": str(self.root),
                "env": {"EVAL_SKILLS_SANDBOX": "1"},
                "memory_mb": MEMORY_MB,
                "max_output_bytes": MAX_OUTPUT_BYTES,
            },
        )

    def _mcp_spec(self, timeout: float) -> ProviderSpec:
        tool = self.metadata.get("toolName")
        options: dict[str, Any] = {
            "tool": tool if isinstance(tool, str) and tool else self.id,
            "output": "json",
            "connect_timeout": timeout,
        }
        if self.command:
            options.update(
                command=list(self.command),
                cwd=str(self.root),
                env={"EVAL_SKILLS_SANDBOX": "1"},
            )
        else:
            options.update(url=self.entrypoint, transport="auto")
        return ProviderSpec("mcp", options)

    def condition(self, *, timeout: float = 30.0) -> Condition:
        """This skill as one arm of a run: id = the skill's id, label = name and version."""
        return Condition(
            id=self.id,
            provider=self.provider_spec(timeout=timeout),
            label=self.label,
            bundle=self.root,
        )


def conditions(skills: Iterable[Skill], *, timeout: float = 30.0) -> tuple[Condition, ...]:
    """One condition per skill, in order (see :meth:`Skill.condition`)."""
    return tuple(skill.condition(timeout=timeout) for skill in skills)


# --------------------------------------------------------------------------- discovery


def discover(
    paths: Iterable[str | os.PathLike[str]], *, python: str | None = None
) -> tuple[Skill, ...]:
    """Every skill under ``paths``: directories are searched recursively for
    ``skill.json`` (sorted; hidden directories, ``node_modules`` and ``__pycache__``
    skipped), files are manifests themselves; a bare name that is no path names a
    built-in example skill (``calculator``). ConfigError for a missing path, a path with
    no skill, or two skills with one id; manifests are checked by :func:`load_skill`.
    """
    manifests: list[Path] = []
    for entry in paths:
        path = Path(entry)
        if not path.exists():
            path = _builtins.builtin_skill(os.fspath(entry)) or path
        if path.is_dir():
            found = _walk(path)
            if not found:
                raise ConfigError(
                    f"no {MANIFEST} under {str(path)!r}",
                    fix=f"pass a skill directory (holding {MANIFEST}) or the manifest itself.",
                )
            manifests.extend(found)
        elif path.is_file():
            manifests.append(path)
        else:
            raise ConfigError(
                f"skill path {str(path)!r} does not exist",
                fix="pass skill directories or skill.json files (--skills PATH...).",
            )
    skills: list[Skill] = []
    seen_files: set[Path] = set()
    by_id: dict[str, Path] = {}
    for manifest in manifests:
        resolved = manifest.resolve()
        if resolved in seen_files:
            continue
        seen_files.add(resolved)
        skill = load_skill(manifest, python=python)
        if skill.id in by_id:
            raise ConfigError(
                f"two skills have the id {skill.id!r}: {by_id[skill.id]} and {manifest}",
                file=manifest,
                json_path="$.id",
                fix="give every skill a unique id; each is one condition of the run.",
            )
        by_id[skill.id] = manifest
        skills.append(skill)
    return tuple(skills)


def _walk(root: Path) -> list[Path]:
    found: list[Path] = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        if MANIFEST in files:
            found.append(Path(directory) / MANIFEST)
    return found


def load_skill(path: str | os.PathLike[str], *, python: str | None = None) -> Skill:
    """Read and check one ``skill.json``. The skill's directory is the file's folder.

    A manifest that does not parse or match the schema is a FormatError; an entrypoint
    that breaks the sandbox rules, an executable that cannot be found, a bad URL or the
    ``mcp://`` entrypoint of eval-skills' template is a ConfigError — each naming the file,
    line and key. An ``mcp`` skill without the ``mcp`` package is a ProviderError naming
    the extra to install.
    ``python`` is the interpreter that ``python`` / ``python3`` entrypoints run under
    (default: the one running benchkit).
    """
    file = Path(path)
    doc = read_document(file, kind="json")
    validate(doc, _validator(), fix_hint=_FIX_HINT)
    data: dict[str, Any] = doc.data
    root = file.resolve().parent
    adapter = data.get("adapterType", "subprocess")
    entrypoint: str = data["entrypoint"]
    command: tuple[str, ...] = ()
    if adapter == "mcp":
        try:
            command = mcp_command(entrypoint, python=python)
        except ConfigError as exc:
            raise _error(doc, ("entrypoint",), exc.message, exc.fix) from exc
    elif adapter == "subprocess":
        try:
            command = check_entrypoint(entrypoint, root, python=python)
        except ConfigError as exc:
            raise _error(doc, ("entrypoint",), exc.message, exc.fix) from exc
    skill = Skill(
        id=data["id"],
        name=data["name"],
        version=data["version"],
        entrypoint=entrypoint,
        root=root,
        adapter=adapter,
        command=command,
        manifest=file,
        description=data.get("description"),
        tags=tuple(data.get("tags", ())),
        metadata=dict(data.get("metadata", {})),
    )
    _check_provider(doc, skill)
    return skill


@functools.cache
def _validator() -> Any:
    return make_validator(load_schema("eval_skills_skill"))


def _error(doc: Document, path: tuple[str, ...], message: str, fix: str | None) -> ConfigError:
    where = doc.locate(path)
    line, column = where if where is not None else (None, None)
    return ConfigError(
        message,
        file=doc.path,
        line=line,
        column=column,
        json_path="$." + ".".join(path),
        fix=fix,
    )


def _check_provider(doc: Document, skill: Skill) -> None:
    """Build the skill's provider once, so a missing executable or a bad URL is reported
    now, against the manifest, rather than when the run starts."""
    from benchkit.registry import default_registries

    spec = skill.provider_spec()
    try:
        default_registries().providers.build(spec.type, spec.options)
    except ConfigError as exc:
        raise _error(doc, ("entrypoint",), exc.message, exc.fix) from exc


def versions(skills: Sequence[Skill]) -> dict[str, str]:
    """Skill id → version, what the eval-skills report needs to name each skill's version."""
    return {skill.id: skill.version for skill in skills}
