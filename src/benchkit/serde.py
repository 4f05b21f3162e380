"""The one (de)serialisation path: a cattrs converter for every model and result class.

``unstructure`` turns model objects into JSON-ready builtins; ``structure`` does the
reverse; ``dumps`` / ``loads`` add the JSON text step. Cell-level classes omit fields that
hold their default, which keeps JSONL result lines short; run-level metadata is written in
full so a file read by a later version means what it meant when written.

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

import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

from benchkit import model, results

__all__ = ["converter", "dumps", "loads", "structure", "unstructure"]

T = TypeVar("T")


def _is_frozenset(t: Any) -> bool:
    return bool(get_origin(t) is frozenset or t is frozenset)


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    conv.register_unstructure_hook(Path, str)
    conv.register_structure_hook(Path, lambda v, _: Path(v))
    conv.register_unstructure_hook_func(_is_frozenset, lambda v: sorted(v))
    compact = (
        model.ToolCall,
        model.RetrievedItem,
        model.Usage,
        model.Response,
        results.Score,
        results.Verdict,
        results.CellResult,
    )
    for cls in compact:
        # A cell's transcript is not part of its JSON (the run store keeps it apart).
        omit: dict[str, Any] = (
            {"transcript": override(omit=True)} if cls is results.CellResult else {}
        )
        conv.register_unstructure_hook(
            cls, make_dict_unstructure_fn(cls, conv, _cattrs_omit_if_default=True, **omit)
        )
    # Written only when a benchmark declares a published figure: other runs' JSON is as
    # it was before these fields existed.
    conv.register_unstructure_hook(
        results.RunInfo,
        make_dict_unstructure_fn(results.RunInfo, conv, reproduces=override(omit_if_default=True)),
    )
    conv.register_unstructure_hook(
        results.RunResult,
        make_dict_unstructure_fn(
            results.RunResult, conv, reproduction=override(omit_if_default=True)
        ),
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
