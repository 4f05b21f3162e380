"""What loading and writing a native file share: the format version, the document's
top-level keys, and the cattrs converter between the file's shorthand and the model."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import cattrs
from cattrs.gen import make_dict_unstructure_fn

from benchkit import serde
from benchkit.errors import ConfigError
from benchkit.formats._source import (
    JsonPath,
    render_path,
)
from benchkit.model import (
    Condition,
    EvaluatorSpec,
    ProviderSpec,
    RunOptions,
    ScoringSpec,
    SetupStep,
    Task,
    VerifierSpec,
)

__all__ = ["BENCHMARK_KEYS", "FORMAT_VERSION", "JSONL_SUFFIXES", "converter", "json_ready"]

FORMAT_VERSION = 1
"""The ``benchkit:`` version this module reads and writes."""
JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})
BENCHMARK_KEYS = (
    "id",
    "name",
    "version",
    "domain",
    "description",
    "scoring",
    "reproduces",
    "timeout",
    "evaluators",
    "verifiers",
    "metadata",
)


@functools.cache
def converter() -> cattrs.Converter:
    """serde's converter plus the native file's shorthand for specs and conditions."""
    conv = serde.converter.copy()

    def spec_structure(cls: type[Any]) -> Callable[[Any, Any], Any]:
        def structure(value: Any, _: Any) -> Any:
            if isinstance(value, str):
                return cls(value)
            options = {k: v for k, v in value.items() if k not in ("type", "name")}
            return cls(type=value["type"], options=options, name=value.get("name"))

        return structure

    def spec_unstructure(spec: EvaluatorSpec | VerifierSpec) -> Any:
        if not spec.options and spec.name is None:
            return spec.type
        _no_clash(spec.options, ("type", "name"), spec.type)
        out: dict[str, Any] = {"type": spec.type}
        if spec.name is not None:
            out["name"] = spec.name
        out.update(json_ready(spec.options))
        return out

    def provider_structure(value: Any, _: Any) -> ProviderSpec:
        if isinstance(value, str):
            return ProviderSpec(value)
        return ProviderSpec(value["type"], {k: v for k, v in value.items() if k != "type"})

    def provider_unstructure(spec: ProviderSpec) -> Any:
        _no_clash(spec.options, ("type",), spec.type)
        return {"type": spec.type, **json_ready(spec.options)}

    def condition_structure(value: Any, _: Any) -> Condition:
        # Hand-written: Condition.provider's annotation names a TYPE_CHECKING-only Protocol.
        bundle = value.get("bundle")
        return Condition(
            id=value["id"],
            provider=provider_structure(value["provider"], ProviderSpec),
            label=value.get("label"),
            bundle=Path(bundle) if bundle is not None else None,
            options=dict(value.get("options") or {}),
            concurrency=value.get("concurrency"),
        )

    for cls in (EvaluatorSpec, VerifierSpec):
        conv.register_structure_hook(cls, spec_structure(cls))
        conv.register_unstructure_hook(cls, spec_unstructure)
    conv.register_structure_hook(ProviderSpec, provider_structure)
    conv.register_unstructure_hook(ProviderSpec, provider_unstructure)
    # A predicate hook: registering by class would make cattrs resolve the annotations.
    conv.register_structure_hook_func(lambda t: t is Condition, condition_structure)
    for compact in (SetupStep, ScoringSpec, RunOptions, Task):  # Task last: it uses SetupStep's
        conv.register_unstructure_hook(
            compact, make_dict_unstructure_fn(compact, conv, _cattrs_omit_if_default=True)
        )
    return conv


def _no_clash(options: Mapping[str, Any], reserved: Sequence[str], type_: str) -> None:
    clash = sorted(set(options) & set(reserved))
    if clash:
        raise ConfigError(
            f"spec {type_!r} has options named {clash}, which the native file's flat "
            "spec syntax reserves",
            fix="rename the option in the evaluator / verifier / provider.",
        )


def json_ready(value: Any, path: JsonPath = ()) -> Any:
    """Builtins a YAML or JSON writer accepts: dicts, lists, str, finite numbers, None."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(
                f"{render_path(path)} is {value}, which a native file cannot hold",
                fix="use a finite number or null.",
            )
        return value
    if isinstance(value, Mapping):
        for k in value:
            if not isinstance(k, str):
                raise ConfigError(
                    f"{render_path(path)} has the key {k!r}; a native file's keys are strings",
                    fix=f"use the string {str(k)!r} as the key.",
                )
        return {str(k): json_ready(v, (*path, k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v, (*path, i)) for i, v in enumerate(value)]
    raise ConfigError(
        f"{render_path(path)} holds a {type(value).__name__}, which a native file cannot hold",
        fix="use JSON values: mappings, lists, strings, numbers, booleans, null.",
    )
