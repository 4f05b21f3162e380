"""skillvault's ``parseBenchConfig``: the checks, their order, messages and defaults.

:func:`parse_config` turns parsed YAML / JSON data into a typed
:class:`~benchkit.formats.skillvault._model.BenchConfig`, raising skillvault's own message
at the first problem (see ``docs/formats/skillvault.md``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

from benchkit import serde
from benchkit._js import MISSING, as_doubles, trim
from benchkit._limits import MAX_SEED, MAX_TIMEOUT_S, MIN_SEED
from benchkit.formats._source import Document, JsonPath, render_path
from benchkit.formats.skillvault._model import (
    CONFIG_SCHEMA,
    FUNCTION_VERIFIERS,
    REQUIRED_CONDITIONS,
    BenchConfig,
    BenchConfigError,
    CommandVerifierConfig,
    FunctionVerifierConfig,
    ParseReason,
    VerifierConfig,
)

_FIX_HINT = "see docs/formats/skillvault.md"


def _is_record(value: Any) -> bool:
    return isinstance(value, dict)


def _is_integer(value: Any) -> bool:
    """``Number.isInteger`` on a value normalised by ``as_doubles(..., integral_as_int=True)``."""
    return isinstance(value, int) and not isinstance(value, bool)


def _get(mapping: Mapping[str, Any], key: str) -> Any:
    return mapping.get(key, MISSING)


@attrs.define
class ConfigChecker:
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
    plain = ConfigChecker(document).config(as_doubles(data, integral_as_int=True))
    config: BenchConfig = _converter().structure(plain, BenchConfig)
    return config
