"""A MemoryBench manifest read and checked: its JSON Schema, unknown keys, metrics, capabilities.

Every schema problem is reported at once in one :class:`ManifestError`, with the
original's dotted paths; unknown keys, metrics and capabilities are a
:class:`ManifestWarning` (the original drops them silently).
"""

from __future__ import annotations

import functools
import json
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from benchkit import serde
from benchkit._jsonschema import (
    SchemaValidator,
    describe,
    did_you_mean,
    load_schema,
    make_validator,
)
from benchkit.errors import FormatError
from benchkit.formats._source import Document, JsonPath, read_document, render_path
from benchkit.formats.memorybench._evaluate import PROTOCOL_METRICS, RETRIEVAL_METRICS
from benchkit.formats.memorybench._manifest import (
    AddDeleteVerifyIngestion,
    DeletionCheckEvaluation,
    ExactMatchEvaluation,
    Flatten,
    LlmJudgeEvaluation,
    Manifest,
    Query,
    SessionIngestion,
    SimpleIngestion,
)
from benchkit.memory import capability

MANIFEST_FILE = "manifest.json"
"""The file name discovery looks for (``benchmarks/**/manifest.json``)."""

KNOWN_METRICS = (
    "correctness",
    "faithfulness",
    *RETRIEVAL_METRICS,
    "deletion_success",
    "leakage_rate",
)
"""The metric names a manifest may list; others are accepted with a warning."""

_FIX_HINT = "see docs/formats/memorybench.md"
_TOP_ORDER = (
    "manifest_version",
    "name",
    "version",
    "description",
    "source",
    "data_file",
    "flatten",
    "ingestion",
    "query",
    "evaluation",
    "metrics",
    "required_capabilities",
)
_VARIANTS: dict[str, dict[str, type]] = {
    "ingestion": {
        "simple": SimpleIngestion,
        "session-based": SessionIngestion,
        "add-delete-verify": AddDeleteVerifyIngestion,
    },
    "evaluation": {
        "exact-match": ExactMatchEvaluation,
        "llm-as-judge": LlmJudgeEvaluation,
        "deletion-check": DeletionCheckEvaluation,
    },
}
_DISCRIMINATOR = {"ingestion": "strategy", "evaluation": "protocol"}


class ManifestWarning(UserWarning):
    """A manifest problem that does not stop loading (an unknown key, metric or capability)."""


class ManifestError(FormatError):
    """An invalid manifest. ``problems`` lists every ``(dotted path, message)``, as the
    original's validator reports them; the error itself points at the most relevant one."""

    def __init__(
        self, message: str, *, problems: Sequence[tuple[str, str]] = (), **where: Any
    ) -> None:
        self.problems = tuple(problems)
        super().__init__(message, **where)


def schema() -> dict[str, Any]:
    """The manifest's JSON Schema (Draft 2020-12), as shipped in the package."""
    return load_schema("memorybench")


@functools.cache
def _validator() -> SchemaValidator:
    return make_validator(schema())


def _dotted(path: JsonPath) -> str:
    return ".".join(str(part) for part in path)


def _problems(doc: Document) -> list[tuple[JsonPath, str, str | None]]:
    """Every schema violation as (path, message, fix), in the manifest's key order."""
    found: list[tuple[JsonPath, str, str | None]] = []
    for error in _validator().iter_errors(doc.data):
        path: JsonPath = tuple(error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            # jsonschema reports each missing key as its own error, all with the full list.
            for key in error.validator_value:
                problem = ((*path, key), f"missing required key `{key}`", f"add `{key}`")
                if key not in error.instance and problem not in found:
                    found.append(problem)
        elif error.validator == "pattern" and path == ("version",):
            shown = json.dumps(error.instance, ensure_ascii=False)
            found.append((path, f"{shown} is not a version MAJOR.MINOR.PATCH", 'e.g. "1.0.0"'))
        else:
            message, where, fix, _ = describe(error)
            found.append((where, message, fix))

    def order(item: tuple[JsonPath, str, str | None]) -> int:
        head = item[0][0] if item[0] else ""
        return _TOP_ORDER.index(head) if head in _TOP_ORDER else -1

    found.sort(key=order)
    return found


def _check(doc: Document) -> None:
    problems = _problems(doc)
    if not problems:
        return
    from jsonschema.exceptions import best_match

    best = best_match(_validator().iter_errors(doc.data))
    best_path: JsonPath = tuple(best.absolute_path) if best is not None else ()
    first = next((p for p in problems if p[0][: len(best_path)] == best_path), problems[0])
    listed = [(_dotted(path) or "(top level)", message) for path, message, _ in problems]
    text = "; ".join(f"{where}: {message}" for where, message in listed)
    count = f"{len(listed)} problems" if len(listed) > 1 else "1 problem"
    fix = f"{first[2]}; {_FIX_HINT}" if first[2] else _FIX_HINT
    where = doc.locate(first[0])
    raise ManifestError(
        f"invalid MemoryBench manifest ({count}): {text}",
        problems=listed,
        file=doc.path,
        line=where[0] if where else None,
        column=where[1] if where else None,
        json_path=render_path(first[0]),
        fix=fix,
    )


def _known_keys(cls: type) -> frozenset[str]:
    return frozenset(attrs.fields_dict(cls))


def _unknown_keys(data: Mapping[str, Any]) -> list[tuple[JsonPath, list[str]]]:
    """(path of the unknown key, the keys allowed there) for every key the schema ignores."""
    found: list[tuple[JsonPath, list[str]]] = []
    sections: list[tuple[JsonPath, Any, type]] = [
        ((), data, Manifest),
        (("flatten",), data.get("flatten"), Flatten),
        (("query",), data.get("query"), Query),
    ]
    for key, variants in _VARIANTS.items():
        section = data.get(key)
        if isinstance(section, dict):
            chosen = variants.get(str(section.get(_DISCRIMINATOR[key])))
            if chosen is not None:
                sections.append(((key,), section, chosen))
    for path, section, cls in sections:
        if isinstance(section, dict):
            known = _known_keys(cls)
            found.extend(((*path, k), sorted(known)) for k in section if k not in known)
    return found


def warn(doc: Document, path: JsonPath, message: str, sink: list[str]) -> None:
    where = doc.locate(path, key=True) if path else None
    location = f"{doc.path}:{where[0]}:{where[1]}" if where else str(doc.path)
    text = (
        f"{location}: {_dotted(path) or '(top level)'}: {message}"
        if path
        else f"{location}: {message}"
    )
    sink.append(text)
    warnings.warn(ManifestWarning(text), stacklevel=4)


def _structure(doc: Document) -> Manifest:
    try:
        manifest: Manifest = serde.structure(doc.data, Manifest)
    except Exception as exc:  # cattrs' validation errors: the schema should have caught it
        raise doc.error(f"invalid MemoryBench manifest: {exc}", fix=_FIX_HINT) from exc
    return manifest


def manifest_file(path: Path) -> Path:
    if path.is_dir():
        found = path / MANIFEST_FILE
        if not found.is_file():
            raise FormatError(
                f"no {MANIFEST_FILE} in this directory",
                file=path,
                fix=f"add a {MANIFEST_FILE} (see docs/formats/memorybench.md).",
            )
        return found
    return path


def read_manifest(
    path: Path, document: Document | None, sink: list[str]
) -> tuple[Manifest, Document]:
    doc = document if document is not None else read_document(path)
    _check(doc)
    data: dict[str, Any] = doc.data
    for where, allowed in _unknown_keys(data):
        close = did_you_mean(str(where[-1]), allowed)
        hint = f" (did you mean `{close}`?)" if close else ""
        warn(doc, where, f"unknown key `{where[-1]}` is ignored{hint}", sink)
    return _structure(doc), doc


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """The validated manifest at ``path`` (a ``manifest.json`` or its directory), with every
    default filled in. Problems raise :class:`ManifestError`; unknown keys warn."""
    manifest, _ = read_manifest(manifest_file(Path(path)), None, [])
    return manifest


def check_semantics(doc: Document, manifest: Manifest, sink: list[str]) -> list[str]:
    """Warnings for metrics and capabilities; the effective required capabilities."""
    ingestion = manifest.ingestion
    if isinstance(ingestion, SessionIngestion):
        try:
            re.compile(f"^{ingestion.session_key_prefix}[0-9]+$")
        except re.error as exc:
            raise doc.error(
                f"session_key_prefix {ingestion.session_key_prefix!r} is not a valid "
                f"regular expression prefix: {exc}",
                ("ingestion", "session_key_prefix"),
                fix="escape regular-expression characters, or use a plain prefix such as session_.",
            ) from None
    produced = set(PROTOCOL_METRICS[manifest.evaluation.protocol])
    if isinstance(ingestion, SessionIngestion):
        produced.update(RETRIEVAL_METRICS)
    for i, name in enumerate(manifest.metrics):
        if name not in KNOWN_METRICS:
            close = did_you_mean(name, KNOWN_METRICS)
            hint = f" (did you mean `{close}`?)" if close else ""
            warn(doc, ("metrics", i), f"unknown metric {name!r} is not reported{hint}", sink)
        elif name not in produced:
            why = (
                "retrieval metrics need session-based ingestion (gold session ids)"
                if name in RETRIEVAL_METRICS
                else f"the {manifest.evaluation.protocol} protocol does not produce it"
            )
            warn(doc, ("metrics", i), f"metric {name!r} is not reported: {why}", sink)
    required = list(manifest.required_capabilities)
    for i, name in enumerate(required):
        if capability(name) is None:
            warn(
                doc,
                ("required_capabilities", i),
                f"unknown capability {name!r}: no provider has it, so every run is skipped",
                sink,
            )
    have = {capability(name) for name in required}
    if isinstance(ingestion, AddDeleteVerifyIngestion) and "delete" not in have:
        required.append("delete_memory")
    return required
