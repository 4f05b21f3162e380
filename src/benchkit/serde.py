"""The one (de)serialisation path: a cattrs converter for every model and result class.

``unstructure`` turns model objects into JSON-ready builtins; ``structure`` does the
reverse; ``dumps`` / ``loads`` add the JSON text step. Cell-level classes omit fields that
hold their default, which keeps JSONL result lines short; run-level metadata is written in
full so a file read by a later version means what it meant when written. Which classes are
cell-level, and which of their fields stay out of the JSON, the classes say themselves
(``__serde_compact__``, a field's ``metadata={"serde": "omit"}``): this module imports no
other of benchkit's, so the model and the results may use it without a cycle.

    >>> from benchkit.model import ToolCall
    >>> dumps(ToolCall("search", {"q": "x"}), indent=None)
    '{"name": "search", "arguments": {"q": "x"}}'
    >>> loads('{"name": "search"}', ToolCall)
    ToolCall(name='search', arguments={}, id=None)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar, get_origin

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

__all__ = ["converter", "dumps", "loads", "structure", "unstructure"]

T = TypeVar("T")


def _is_frozenset(t: Any) -> bool:
    return bool(get_origin(t) is frozenset or t is frozenset)


def _is_compact(cls: Any) -> bool:
    """A cell-level class: it says so with ``__serde_compact__ = True`` (so this module
    needs to know no model or result type, and imports none)."""
    return attrs.has(cls) and getattr(cls, "__serde_compact__", False) is True


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    conv.register_unstructure_hook(Path, str)
    conv.register_structure_hook(Path, lambda v, _: Path(v))
    conv.register_unstructure_hook_func(_is_frozenset, lambda v: sorted(v))

    def omitted(cls: Any) -> dict[str, Any]:
        # A field marked ``metadata={"serde": "omit"}`` is not part of the JSON (a cell's
        # transcript: the run store keeps it apart; a run's registries: where its reports
        # look, not data); one marked ``"omit_if_default"`` is written only when it is set
        # (a field added later, so that other JSON stays as it was before it existed).
        overrides = {"omit": override(omit=True), "omit_if_default": override(omit_if_default=True)}
        return {
            a.name: overrides[a.metadata["serde"]]
            for a in attrs.fields(cls)
            if a.metadata.get("serde") in overrides
        }

    def compact(cls: Any) -> Any:
        return make_dict_unstructure_fn(cls, conv, _cattrs_omit_if_default=True, **omitted(cls))

    def has_omitted(cls: Any) -> bool:
        return attrs.has(cls) and not _is_compact(cls) and bool(omitted(cls))

    conv.register_unstructure_hook_factory(_is_compact, compact)
    conv.register_unstructure_hook_factory(
        has_omitted, lambda cls: make_dict_unstructure_fn(cls, conv, **omitted(cls))
    )
    conv.register_structure_hook_factory(
        has_omitted, lambda cls: make_dict_structure_fn(cls, conv, **omitted(cls))
    )
    return conv


converter = _make_converter()


def unstructure(obj: Any) -> Any:
    """The JSON-ready builtins (dicts, lists, strings, numbers) for ``obj``."""
    return converter.unstructure(obj)


def structure(data: Any, cls: type[T]) -> T:
    """Build a ``cls`` from builtins; raises cattrs' ClassValidationError on bad data."""
    return converter.structure(data, cls)


def dumps(obj: Any, *, indent: int | None = 2) -> str:
    """JSON text for ``obj`` (UTF-8, non-ASCII kept as is)."""
    return json.dumps(converter.unstructure(obj), indent=indent, ensure_ascii=False)


def loads(text: str | bytes, cls: type[T]) -> T:
    """Parse JSON text into a ``cls``."""
    return converter.structure(json.loads(text), cls)
