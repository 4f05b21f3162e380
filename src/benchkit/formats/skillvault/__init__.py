"""skillvault bench v0: ``skillvault.bench.config.v1`` files as benchkit suites.

skillvault compares a task suite under three conditions — ``no_skill``, ``curated_skill``
and ``self_generated_skill`` — each a bundle directory that function verifiers
(``bundle_file_exists``, ``bundle_file_contains``) or shell-command verifiers check. This
module reads its config files exactly as skillvault does and maps them onto the core
model; :mod:`benchkit.formats.skillvault.report` turns a run back into skillvault's byte-exact
``skillvault.bench.run.v1`` / ``skillvault.bench.report.v1`` JSON and tables. The full
reference is ``docs/formats/skillvault.md``.

    >>> import benchkit
    >>> suite = benchkit.load("benchmarks/skillvault-bench-v0/bench.yaml")  # doctest: +SKIP
    >>> [c.id for c in suite.conditions]                                     # doctest: +SKIP
    ['no_skill', 'curated_skill', 'self_generated_skill']

Reading follows skillvault to the letter, because its messages and defaults are part of
the contract:

* the file is YAML 1.2 (core schema, as the npm ``yaml`` package reads it: ``yes`` and
  ``1_000`` are strings, ``010`` is 10, ``1e3`` is 1000) or JSON;
* checks run in skillvault's order — the root, ``schema``, ``metadata``, ``execution``,
  ``conditions``, ``tasks`` — and the first failure is raised as a
  :class:`BenchConfigError` whose message is skillvault's own (``duplicate task id: t``),
  with the file, line, column and JSON path added around it, and a fix;
* bundles resolve against the config file's directory (the ``stub`` adapter's
  ``options.bundle_path`` only for ``self_generated_skill``) and must exist.

The mapping onto the core model: every condition plays through the ``bundle`` provider
(its answer is its bundle directory), every task carries one verifier spec and its
``timeout_ms``, and the run options are skillvault's — sequential, ``retries`` extra
attempts on any failure without backoff, its ``seed`` and ``deterministic`` flag.
"""

from __future__ import annotations

import functools
import math
import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, Union

import attrs
import cattrs

from benchkit import serde
from benchkit._js import MISSING, as_doubles, trim
from benchkit._limits import MAX_SEED, MAX_TIMEOUT_S, MIN_SEED
from benchkit.errors import ConfigError, FormatError
from benchkit.formats._source import (
    Document,
    JsonPath,
    parse_document,
    read_regular,
    render_path,
)
from benchkit.model import (
    Benchmark,
    Condition,
    ProviderSpec,
    RunOptions,
    Source,
    Suite,
    Task,
    VerifierSpec,
)

__all__ = [
    "CONFIG_SCHEMA",
    "FORMAT",
    "FUNCTION_VERIFIERS",
    "REQUIRED_CONDITIONS",
    "BenchAdapter",
    "BenchCondition",
    "BenchConfig",
    "BenchConfigError",
    "BenchExecution",
    "BenchMetadata",
    "BenchTask",
    "CommandVerifierConfig",
    "FunctionVerifierConfig",
    "LoadedBenchConfig",
    "SkillvaultFormat",
    "bundle_path",
    "detect",
    "git_commit",
    "load",
    "load_config",
    "parse_config",
    "to_suite",
]

CONFIG_SCHEMA = "skillvault.bench.config.v1"
"""The only config ``schema`` skillvault accepts (and the default when it is left out)."""

REQUIRED_CONDITIONS = ("no_skill", "curated_skill", "self_generated_skill")
"""The conditions every config must define, in the order skillvault checks them."""

FUNCTION_VERIFIERS = ("bundle_file_exists", "bundle_file_contains")
"""The function verifiers a task may name."""

_FIX_HINT = "see docs/formats/skillvault.md"

ParseReason = Literal["BENCH_CONFIG_PARSE_ERROR", "BENCH_CONFIG_INVALID"]


class BenchConfigError(FormatError):
    """A skillvault config that cannot be read, does not validate, or names a missing bundle.

    ``message`` is skillvault's own message, word for word; ``reason`` its error code
    (``BENCH_CONFIG_PARSE_ERROR`` or ``BENCH_CONFIG_INVALID``) and ``field`` the field it
    names (``tasks[0].timeout_ms``). The file, line, column, JSON path and fix come on top.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: ParseReason = "BENCH_CONFIG_INVALID",
        field: str | None = None,
        **where: Any,
    ) -> None:
        self.reason = reason
        self.field = field
        super().__init__(message, **where)


# --------------------------------------------------------------------------- the config


@attrs.frozen
class BenchMetadata:
    """Labels recorded with a run (trimmed; None when the config leaves them out)."""

    suite: str | None = None
    model_label: str | None = None
    environment_label: str | None = None


@attrs.frozen
class BenchExecution:
    """``execution``: extra attempts (0..10), the seed (reaches commands only), determinism."""

    retries: int = 0
    seed: int = 0
    deterministic: bool = False


@attrs.frozen
class BenchAdapter:
    """A condition's ``adapter``: ``stub`` points ``self_generated_skill`` at a bundle;
    any other id is recorded and otherwise ignored."""

    id: str
    options: Mapping[str, Any] | None = None


@attrs.frozen
class BenchCondition:
    """One condition as written: its id, ``bundle_path`` and ``adapter``."""

    id: str
    bundle_path: str | None = None
    adapter: BenchAdapter | None = None


@attrs.frozen
class FunctionVerifierConfig:
    """``verifier: {function: bundle_file_exists|bundle_file_contains, args: {...}}``."""

    function: str
    args: Mapping[str, Any] | None = None
    type: Literal["function"] = "function"

    @property
    def label(self) -> str:
        return self.function


@attrs.frozen
class CommandVerifierConfig:
    """``verifier: {command: <shell command>}``."""

    command: str
    type: Literal["command"] = "command"

    @property
    def label(self) -> str:
        return self.command


VerifierConfig = Union[FunctionVerifierConfig, CommandVerifierConfig]  # noqa: UP007 - runtime alias on 3.10


@attrs.frozen
class BenchTask:
    """One task: id, domain, timeout in milliseconds and its verifier."""

    id: str
    domain: str
    timeout_ms: int
    verifier: VerifierConfig


@attrs.frozen
class BenchConfig:
    """A validated ``skillvault.bench.config.v1`` document, defaults filled in."""

    schema: str
    metadata: BenchMetadata
    execution: BenchExecution
    conditions: tuple[BenchCondition, ...]
    tasks: tuple[BenchTask, ...]


@attrs.frozen
class LoadedBenchConfig:
    """A config read from ``config_path`` (absolute, as given: symlinks are not resolved).

    ``bundle_paths`` holds each condition's resolved bundle directory (None without one),
    in the order of ``config.conditions``; every one of them existed when it was loaded.
    """

    config_path: str
    config_dir: str
    config: BenchConfig
    bundle_paths: tuple[str | None, ...]


# --------------------------------------------------------------------------- YAML 1.2 core

_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
_ANCHOR = re.compile(r"&\S+\s+")
_TOKEN = re.compile(r"[^\s,\[\]{}#]+")
_CORE_INT = re.compile(r"[-+]?[0-9]+")
_CORE_OCT = re.compile(r"0o([0-7]+)")
_CORE_HEX = re.compile(r"0x([0-9a-fA-F]+)")
_CORE_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_CORE_INF = re.compile(r"([-+]?)\.(?:inf|Inf|INF)")
_CORE_NAN = re.compile(r"\.(?:nan|NaN|NAN)")


def _core_number(token: str) -> int | float | None:
    """The number a plain YAML 1.2 core-schema scalar denotes, or None for a string."""
    if _CORE_INT.fullmatch(token):
        return int(token)
    if match := _CORE_OCT.fullmatch(token):
        return int(match.group(1), 8)
    if match := _CORE_HEX.fullmatch(token):
        return int(match.group(1), 16)
    if match := _CORE_INF.fullmatch(token):
        return -math.inf if match.group(1) == "-" else math.inf
    if _CORE_NAN.fullmatch(token):
        return math.nan
    if _CORE_FLOAT.fullmatch(token):
        return float(token)
    return None


def _core_yaml(doc: Document, text: str) -> Any:
    """``doc.data`` with its plain scalars resolved as the npm ``yaml`` package does.

    ruamel's YAML 1.2 mode still reads ``1_000``, ``0b101``, ``0x_1F`` and ``-0x1F`` as
    numbers and ``.5e3`` as a string; the YAML 1.2 core schema (and skillvault) says the
    opposite. Each scalar's source token is found through the document's positions and
    resolved again; quoted, tagged, block and merged scalars keep their value.
    """
    lines = _LINE_BREAK.split(text)

    def token_at(path: JsonPath) -> str | None:
        where = doc.locate(path)
        # A value with no position of its own (from a `<<` merge) reports its parent's.
        if where is None or where == doc.locate(path[:-1]) or where[0] > len(lines):
            return None
        rest = lines[where[0] - 1][where[1] - 1 :]
        if anchor := _ANCHOR.match(rest):
            rest = rest[anchor.end() :]
        if not rest or rest[0] in "'\"!*|>":
            return None
        match = _TOKEN.match(rest)
        return match.group(0) if match else None

    def walk(value: Any, path: JsonPath) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, (*path, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, (*path, i)) for i, v in enumerate(value)]
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, (int, float)):
            token = token_at(path)
            if token is None:
                return as_doubles(value, integral_as_int=True)
            number = _core_number(token)
            return token if number is None else as_doubles(number, integral_as_int=True)
        if isinstance(value, str) and (token := token_at(path)) == value:
            number = _core_number(token)
            return value if number is None else as_doubles(number, integral_as_int=True)
        return value

    return walk(doc.data, ())


# --------------------------------------------------------------------------- validation


def _is_record(value: Any) -> bool:
    return isinstance(value, dict)


def _is_integer(value: Any) -> bool:
    """``Number.isInteger`` on a value normalised by ``as_doubles(..., integral_as_int=True)``."""
    return isinstance(value, int) and not isinstance(value, bool)


def _get(mapping: Mapping[str, Any], key: str) -> Any:
    return mapping.get(key, MISSING)


@attrs.define
class _Checker:
    """skillvault's ``parseBenchConfig``: the same checks, order, messages and defaults.

    Produces plain data (defaults filled in, strings trimmed) that cattrs structures into
    a :class:`BenchConfig`. ``doc`` (when the data came from a file) locates errors.
    """

    doc: Document | None = None

    def fail(
        self,
        message: str,
        path: JsonPath,
        *,
        fix: str,
        field: str | None = None,
        reason: ParseReason = "BENCH_CONFIG_INVALID",
    ) -> BenchConfigError:
        where: dict[str, Any] = {"json_path": render_path(path)}
        if self.doc is not None:
            position = self.doc.locate(path)
            where["file"] = self.doc.path
            if position is not None:
                where["line"], where["column"] = position
        return BenchConfigError(
            message,
            reason=reason,
            field=field,
            fix=f"{fix}; {_FIX_HINT}",
            **where,
        )

    # -- primitives (readString / readOptionalString / readInteger) ---------------------

    def string(self, value: Any, field: str, path: JsonPath) -> str:
        if not isinstance(value, str) or not trim(value):
            raise self.fail(
                f"{field} must be a non-empty string",
                path,
                field=field,
                fix="write a non-empty string",
            )
        return trim(value)

    def optional_string(self, value: Any, field: str, path: JsonPath) -> str | None:
        if value is MISSING or value is None:
            return None
        return self.string(value, field, path)

    def integer(
        self,
        value: Any,
        field: str,
        path: JsonPath,
        *,
        low: int | None = None,
        high: int | None = None,
    ) -> int:
        if not _is_integer(value):
            raise self.fail(
                f"{field} must be an integer",
                path,
                field=field,
                fix="write a whole number without quotes",
            )
        if low is not None and value < low:
            raise self.fail(
                f"{field} must be >= {low}", path, field=field, fix=f"use a value >= {low}"
            )
        if high is not None and value > high:
            raise self.fail(
                f"{field} must be <= {high}", path, field=field, fix=f"use a value <= {high}"
            )
        result: int = value
        return result

    def record(self, value: Any, field: str, path: JsonPath) -> dict[str, Any]:
        if not _is_record(value):
            raise self.fail(
                f"{field} must be an object",
                path,
                field=field,
                fix="write a mapping of keys to values",
            )
        result: dict[str, Any] = value
        return result

    def array(self, value: Any, field: str, path: JsonPath, example: str) -> list[Any]:
        if not isinstance(value, list) or not value:
            raise self.fail(
                f"{field} must be a non-empty array",
                path,
                field=field,
                fix=f"write a list with at least one item, e.g. `- {example}`",
            )
        return value

    # -- the document -------------------------------------------------------------------

    def config(self, data: Any) -> dict[str, Any]:
        if not _is_record(data):
            raise self.fail(
                "benchmark config must be an object",
                (),
                field="root",
                fix="write a mapping with conditions: and tasks: at the top level",
            )
        schema = _get(data, "schema")
        if schema is not MISSING:
            schema = self.string(schema, "schema", ("schema",))
        if schema is not MISSING and schema != CONFIG_SCHEMA:
            raise self.fail(
                f"schema must be {CONFIG_SCHEMA}",
                ("schema",),
                field="schema",
                fix=f"set schema: {CONFIG_SCHEMA}, or leave it out",
            )
        return {
            "schema": CONFIG_SCHEMA,
            "metadata": self.metadata(_get(data, "metadata")),
            "execution": self.execution(_get(data, "execution")),
            "conditions": self.conditions(_get(data, "conditions")),
            "tasks": self.tasks(_get(data, "tasks")),
        }

    def metadata(self, value: Any) -> dict[str, Any]:
        if value is MISSING:
            return {}
        record = self.record(value, "metadata", ("metadata",))
        out: dict[str, Any] = {}
        for key in ("suite", "model_label", "environment_label"):
            text = self.optional_string(_get(record, key), f"metadata.{key}", ("metadata", key))
            if text is not None:
                out[key] = text
        return out

    def execution(self, value: Any) -> dict[str, Any]:
        if value is MISSING:
            return {"retries": 0, "seed": 0, "deterministic": False}
        record = self.record(value, "execution", ("execution",))
        deterministic = _get(record, "deterministic")
        if deterministic is MISSING:
            deterministic = False
        elif not isinstance(deterministic, bool):
            raise self.fail(
                "execution.deterministic must be boolean",
                ("execution", "deterministic"),
                field="execution.deterministic",
                fix="write true or false, without quotes",
            )
        retries, seed = _get(record, "retries"), _get(record, "seed")
        return {
            "retries": 0
            if retries is MISSING
            else self.integer(
                retries, "execution.retries", ("execution", "retries"), low=0, high=10
            ),
            "seed": 0
            if seed is MISSING
            else self.integer(
                seed, "execution.seed", ("execution", "seed"), low=MIN_SEED, high=MAX_SEED
            ),
            "deterministic": deterministic,
        }

    def conditions(self, value: Any) -> list[dict[str, Any]]:
        items = self.array(value, "conditions", ("conditions",), "id: no_skill")
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for index, item in enumerate(items):
            path: JsonPath = ("conditions", index)
            prefix = f"conditions[{index}]"
            record = self.record(item, prefix, path)
            ident = self.string(_get(record, "id"), f"{prefix}.id", (*path, "id"))
            if ident in seen:
                raise self.fail(
                    f"duplicate condition id: {ident}",
                    (*path, "id"),
                    field=f"{prefix}.id",
                    fix="give every condition a unique id",
                )
            seen.add(ident)
            adapter = self.adapter(_get(record, "adapter"), prefix, path)
            bundle = self.optional_string(
                _get(record, "bundle_path"), f"{prefix}.bundle_path", (*path, "bundle_path")
            )
            if ident == "self_generated_skill" and not bundle:
                self.stub_rule(adapter, prefix, path)
            out.append({"id": ident, "bundle_path": bundle, "adapter": adapter})
        for required in REQUIRED_CONDITIONS:
            if required not in seen:
                raise self.fail(
                    f"missing required condition: {required}",
                    ("conditions",),
                    field="conditions",
                    fix=f"add a condition `- id: {required}` (no_skill, curated_skill and "
                    "self_generated_skill are all required)",
                )
        return out

    def adapter(self, value: Any, prefix: str, path: JsonPath) -> dict[str, Any] | None:
        if value is MISSING:
            return None
        field = f"{prefix}.adapter"
        record = self.record(value, field, (*path, "adapter"))
        options = _get(record, "options")
        if options is not MISSING and not _is_record(options):
            raise self.fail(
                f"{field}.options must be an object",
                (*path, "adapter", "options"),
                field=f"{field}.options",
                fix="write a mapping, e.g. options: {bundle_path: ./bundle}",
            )
        ident = self.string(_get(record, "id"), f"{field}.id", (*path, "adapter", "id"))
        return {"id": ident, "options": dict(options) if _is_record(options) else None}

    def stub_rule(self, adapter: dict[str, Any] | None, prefix: str, path: JsonPath) -> None:
        """``self_generated_skill`` needs a bundle_path or the stub adapter with one."""
        if adapter is None or adapter["id"] != "stub":
            raise self.fail(
                f"{prefix} requires either bundle_path or adapter.id=stub",
                path,
                field=prefix,
                fix="give it bundle_path: ./dir, or adapter: {id: stub, options: "
                "{bundle_path: ./dir}}",
            )
        stub_bundle = (adapter["options"] or {}).get("bundle_path")
        if not isinstance(stub_bundle, str) or not trim(stub_bundle):
            raise self.fail(
                f"{prefix}.adapter.options.bundle_path must be a non-empty string when "
                "adapter.id=stub",
                (*path, "adapter", "options", "bundle_path"),
                field=f"{prefix}.adapter.options.bundle_path",
                fix="give the stub adapter options: {bundle_path: ./dir}",
            )

    def tasks(self, value: Any) -> list[dict[str, Any]]:
        items = self.array(value, "tasks", ("tasks",), "id: my_task")
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for index, item in enumerate(items):
            path: JsonPath = ("tasks", index)
            prefix = f"tasks[{index}]"
            record = self.record(item, prefix, path)
            ident = self.string(_get(record, "id"), f"{prefix}.id", (*path, "id"))
            if ident in seen:
                raise self.fail(
                    f"duplicate task id: {ident}",
                    (*path, "id"),
                    field=f"{prefix}.id",
                    fix="give every task a unique id",
                )
            seen.add(ident)
            out.append(
                {
                    "id": ident,
                    "domain": self.string(
                        _get(record, "domain"), f"{prefix}.domain", (*path, "domain")
                    ),
                    "timeout_ms": self.integer(
                        _get(record, "timeout_ms"),
                        f"{prefix}.timeout_ms",
                        (*path, "timeout_ms"),
                        low=1,
                        high=MAX_TIMEOUT_S * 1000,
                    ),
                    "verifier": self.verifier(
                        _get(record, "verifier"), f"{prefix}.verifier", (*path, "verifier")
                    ),
                }
            )
        return out

    def verifier(self, value: Any, field: str, path: JsonPath) -> dict[str, Any]:
        record = self.record(value, field, path)
        kind = record.get("type")
        if isinstance(kind, str) and kind not in ("command", "function"):
            raise self.fail(
                f"{field}.type must be command|function",
                (*path, "type"),
                field=f"{field}.type",
                fix="use type: command or type: function (or leave type out)",
            )
        command = _get(record, "command")
        if kind == "command" or command is not MISSING:
            return {
                "type": "command",
                "command": self.string(command, f"{field}.command", (*path, "command")),
            }
        function = _get(record, "function")
        if kind == "function" or function is not MISSING:
            name = self.string(function, f"{field}.function", (*path, "function"))
            if name not in FUNCTION_VERIFIERS:
                raise self.fail(
                    f"{field}.function must be one of {', '.join(FUNCTION_VERIFIERS)}",
                    (*path, "function"),
                    field=f"{field}.function",
                    fix="use bundle_file_exists or bundle_file_contains, or a command verifier",
                )
            args = _get(record, "args")
            if args is not MISSING and not _is_record(args):
                raise self.fail(
                    f"{field}.args must be an object",
                    (*path, "args"),
                    field=f"{field}.args",
                    fix="write a mapping, e.g. args: {path: answer.txt}",
                )
            return {
                "type": "function",
                "function": name,
                "args": dict(args) if _is_record(args) else None,
            }
        raise self.fail(
            f"{field} requires either a command or function verifier",
            path,
            field=field,
            fix="add command: <shell command>, or function: bundle_file_exists or "
            "bundle_file_contains",
        )


@functools.cache
def _converter() -> cattrs.Converter:
    """serde's converter, plus the verifier union told apart by its ``type``."""
    conv = serde.converter.copy()

    def verifier(value: Mapping[str, Any], _: Any) -> VerifierConfig:
        if value["type"] == "command":
            return conv.structure(value, CommandVerifierConfig)
        return conv.structure(value, FunctionVerifierConfig)

    conv.register_structure_hook(VerifierConfig, verifier)
    return conv


def parse_config(data: Any, *, document: Document | None = None) -> BenchConfig:
    """Validate parsed config data as skillvault does and return the typed config.

    ``data`` is what a YAML / JSON parser produced; its numbers are taken as JavaScript
    numbers (``5.0`` is the integer 5). ``document`` locates errors in the file it came
    from. Raises :class:`BenchConfigError` at the first problem, in skillvault's order.
    """
    plain = _Checker(document).config(as_doubles(data, integral_as_int=True))
    config: BenchConfig = _converter().structure(plain, BenchConfig)
    return config


# --------------------------------------------------------------------------- loading


def _resolve(config_dir: str, path: str) -> str:
    """Node's ``path.resolve(config_dir, path)``: joined and normalised, symlinks kept."""
    return os.path.normpath(os.path.join(config_dir, path))


def bundle_path(condition: BenchCondition, config_dir: str) -> str | None:
    """The condition's bundle directory, resolved as skillvault resolves it.

    ``bundle_path`` wins; otherwise only ``self_generated_skill`` with the ``stub`` adapter
    takes ``adapter.options.bundle_path``. Any other adapter is informational.
    """
    if condition.bundle_path:
        return _resolve(config_dir, condition.bundle_path)
    adapter = condition.adapter
    if condition.id == "self_generated_skill" and adapter is not None and adapter.id == "stub":
        configured = (adapter.options or {}).get("bundle_path")
        if isinstance(configured, str) and trim(configured):
            return _resolve(config_dir, configured)
    return None


def _bundle_json_path(config: BenchConfig, index: int) -> JsonPath:
    condition = config.conditions[index]
    if condition.bundle_path:
        return ("conditions", index, "bundle_path")
    return ("conditions", index, "adapter", "options", "bundle_path")


def _read_text(path: Path, shown: str) -> str:
    """The file's text as Node reads it (bad UTF-8 bytes replaced), without a BOM."""
    try:
        raw = read_regular(path)
    except OSError as exc:
        raise BenchConfigError(
            f"Failed to read benchmark config: {shown}",
            reason="BENCH_CONFIG_PARSE_ERROR",
            file=path,
            fix=f"{exc.strerror or exc}: check the path (relative paths start at the "
            "current directory)",
        ) from None
    text = raw.decode("utf-8", errors="replace")
    return text[1:] if text.startswith("\ufeff") else text


def load_config(path: str | os.PathLike[str]) -> LoadedBenchConfig:
    """Read, validate and resolve a ``skillvault.bench.config.v1`` file (YAML or JSON).

    Bundles are resolved against the file's directory and must exist (files or
    directories, as skillvault's ``fs.access`` check allows). Raises
    :class:`BenchConfigError` for an unreadable file, a parse error ("Failed to parse
    benchmark config", with the parser's own explanation as the fix), an invalid config
    or a missing bundle — everything skillvault reports before a run starts.
    """
    config_path = os.path.abspath(os.fspath(path))
    file = Path(path)
    text = _read_text(file, config_path)
    kind: Literal["yaml", "json"] = "json" if file.suffix.lower() == ".json" else "yaml"
    try:
        doc = parse_document(text, path=file, kind=kind)
    except FormatError as exc:
        raise BenchConfigError(
            "Failed to parse benchmark config",
            reason="BENCH_CONFIG_PARSE_ERROR",
            file=file,
            line=exc.line,
            column=exc.column,
            json_path=exc.json_path,
            fix=f"{exc.message}: {exc.fix or 'fix the syntax'}",
        ) from None
    data = _core_yaml(doc, text) if kind == "yaml" else doc.data
    config = parse_config(data, document=doc)
    config_dir = os.path.dirname(config_path)
    bundles: list[str | None] = []
    for index, condition in enumerate(config.conditions):
        bundle = bundle_path(condition, config_dir)
        if bundle is not None and not _exists(bundle):
            field = f"conditions.{condition.id}.bundle_path"
            raise _Checker(doc).fail(
                f"{field} does not exist: {bundle}",
                _bundle_json_path(config, index),
                field=field,
                fix="create the bundle directory, or fix the path (it is relative to the "
                "config file's directory)",
            )
        bundles.append(bundle)
    return LoadedBenchConfig(config_path, config_dir, config, tuple(bundles))


def _exists(path: str) -> bool:
    """``fs.access(path)``: anything that exists, a file or a directory."""
    try:
        return os.access(path, os.F_OK)
    except (OSError, ValueError):
        return False


def git_commit(directory: str | os.PathLike[str]) -> str | None:
    """``git rev-parse --short HEAD`` in ``directory``, or None (no git, no repository).

    What skillvault records as ``run.git_commit``, in every mode (deterministic too).
    """
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    commit = trim(done.stdout)
    return commit if done.returncode == 0 and commit else None


def _verifier_spec(task: BenchTask) -> VerifierSpec:
    verifier = task.verifier
    if isinstance(verifier, CommandVerifierConfig):
        return VerifierSpec("command", {"command": verifier.command, "timeout_ms": task.timeout_ms})
    args = verifier.args or {}
    keys = ("path", "contains") if verifier.function == "bundle_file_contains" else ("path",)
    return VerifierSpec(verifier.function, {k: args[k] for k in keys if k in args})


def _tasks(config: BenchConfig) -> Iterator[Task]:
    for task in config.tasks:
        yield Task(
            id=task.id,
            domain=task.domain,
            timeout=task.timeout_ms / 1000,
            verifiers=(_verifier_spec(task),),
            metadata={
                "timeout_ms": task.timeout_ms,
                "verifier": {"type": task.verifier.type, "label": task.verifier.label},
            },
        )


def to_suite(
    loaded: LoadedBenchConfig, *, deterministic: bool | None = None, concurrency: int = 1
) -> Suite:
    """The :class:`~benchkit.model.Suite` that runs ``loaded`` as skillvault would.

    Conditions play through the ``bundle`` provider; each task has one verifier and its
    ``timeout_ms``; the options are ``retries`` extra attempts on any non-pass, no backoff,
    the config's seed, and ``deterministic`` unless overridden here. skillvault runs one
    cell at a time; ``concurrency`` may raise that (results keep config order anyway).
    """
    config = loaded.config
    metadata = config.metadata
    conditions = tuple(
        Condition(
            id=condition.id,
            provider=ProviderSpec("bundle"),
            bundle=Path(bundle) if bundle is not None else None,
            options={"adapter_id": condition.adapter.id} if condition.adapter else {},
        )
        for condition, bundle in zip(config.conditions, loaded.bundle_paths, strict=True)
    )
    labels = {
        k: v
        for k, v in (
            ("model_label", metadata.model_label),
            ("environment_label", metadata.environment_label),
        )
        if v is not None
    }
    benchmark = Benchmark(
        id=metadata.suite or os.path.basename(loaded.config_dir) or "skillvault",
        name=metadata.suite,
        tasks=tuple(_tasks(config)),
        metadata=labels,
        source=Source(path=loaded.config_path, format="skillvault"),
    )
    execution = config.execution
    options = RunOptions(
        concurrency=concurrency,
        retries=execution.retries,
        retry_on=frozenset({"any"}),
        backoff_base=0.0,
        seed=execution.seed,
        deterministic=execution.deterministic if deterministic is None else deterministic,
    )
    return Suite(benchmark, conditions, options, base_dir=Path(loaded.config_dir))


# --------------------------------------------------------------------------- the format


def detect(path: Path, head: Any | None) -> bool:
    """True for a mapping whose ``schema`` names a skillvault bench config, or — with no
    ``schema`` (skillvault's default) — that has ``conditions`` and ``tasks`` lists with
    ``verifier`` entries. Never true for a native file (a ``benchkit`` key)."""
    if not isinstance(head, dict) or "benchkit" in head:
        return False
    schema = head.get("schema")
    if isinstance(schema, str):
        return trim(schema).startswith("skillvault.bench.config")
    if "schema" in head:
        return False
    tasks = head.get("tasks")
    return (
        isinstance(head.get("conditions"), list)
        and isinstance(tasks, list)
        and any(isinstance(task, dict) and "verifier" in task for task in tasks)
    )


def load(
    path: str | os.PathLike[str],
    *,
    deterministic: bool | None = None,
    concurrency: int = 1,
) -> Suite:
    """Load a skillvault config as a :class:`~benchkit.model.Suite` (see :func:`to_suite`)."""
    return to_suite(load_config(path), deterministic=deterministic, concurrency=concurrency)


class SkillvaultFormat:
    """The ``skillvault`` entry of the formats registry (see :mod:`benchkit.formats`)."""

    name = "skillvault"

    def __repr__(self) -> str:
        return "<format skillvault>"

    def detect(self, path: Path, head: Any | None) -> bool:
        return detect(path, head)

    def load(
        self,
        path: Path,
        *,
        deterministic: bool | None = None,
        concurrency: int = 1,
        **options: Any,
    ) -> Suite:
        if options:
            raise ConfigError(
                f"the skillvault format takes no options {sorted(options)}",
                fix="load it without keyword options.",
            )
        return load(path, deterministic=deterministic, concurrency=concurrency)


FORMAT = SkillvaultFormat()
