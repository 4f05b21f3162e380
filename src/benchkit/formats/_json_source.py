"""JSON documents: parse with the C decoder, and find where a value sits on demand.

:func:`parse_json` reads JSON text into plain data, refusing what ``json`` would accept
silently (a repeated key, ``NaN`` / ``Infinity``) and nesting past
:data:`~benchkit._limits.MAX_DEPTH`. Positions are not recorded while parsing:
:class:`JsonLocator` walks the text again, skipping siblings with the C decoder, only when
an error must be located.
"""

from __future__ import annotations

import functools
import gc
import json
import operator
import re
import sys
from itertools import chain, compress
from pathlib import Path
from typing import Any

from benchkit._jsonschema import JsonPath, render_path
from benchkit._limits import MAX_DEPTH
from benchkit.errors import FormatError
from benchkit.formats._document import DEPTH_FIX, Document, Position

__all__ = ["JsonLocator", "parse_json"]

_WS = re.compile(r"[ \t\n\r]*")


class _DuplicateKeyError(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


class _ConstantError(Exception):
    def __init__(self, name: str) -> None:
        self.name = name


def _no_constant(name: str) -> Any:
    """``json``'s hook for ``NaN``, ``Infinity`` and ``-Infinity``: not JSON, refused."""
    raise _ConstantError(name)


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json``'s hook for every object: a dict, or the first repeated key raised."""
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    seen: set[str] = set()
    for k, _ in pairs:
        if k in seen:
            raise _DuplicateKeyError(k)
        seen.add(k)
    raise AssertionError("unreachable: fewer keys than pairs means a repeat")  # pragma: no cover


_JSON_FIXES = (
    ("Expecting property name", 'remove the trailing comma, and quote keys with "double"'),
    ("Expecting ',' delimiter", "add the missing comma between items"),
    ("Expecting ':' delimiter", "put a ':' between the key and its value"),
    ("Expecting value", "remove the trailing comma or give the missing value"),
    ("Extra data", "a JSON file holds one value; wrap several in a list"),
    ("Unterminated string", "close the string with a double quote"),
    ("Invalid control character", "escape control characters inside strings (\\n, \\t)"),
)


def parse_json(text: str, path: Path, first_line: int) -> Document:
    """Parse JSON ``text`` (line ``first_line`` of ``path``) into a :class:`Document`.

    The C decoder reads the text with no Python call per object; one walk over the result
    (:func:`_scan`, C loops a level at a time) then proves it holds no repeated key and
    nests no deeper than :data:`MAX_DEPTH`. Any doubt, and every error, sends the text down
    :func:`_parse_checked`, which reads it again checking each object as it closes — and
    raises the error it always raised.
    """
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except (json.JSONDecodeError, _ConstantError, RecursionError):
        return _parse_checked(text, path, first_line)
    keys, deep = _scan(data)
    colons = text.count(":")  # each key's separator, and every colon inside a string
    if deep or (colons != keys and ("\\u003" in text or colons != keys + _colons_in_strings(data))):
        return _parse_checked(text, path, first_line)
    return Document(path, data, "json", JsonLocator(text, first_line))


_IS_DICT = frozenset({dict}).__contains__
_IS_LIST = frozenset({list}).__contains__
_IS_STR = frozenset({str}).__contains__
_IS_CONTAINER = frozenset({dict, list}).__contains__
_COUNT_COLONS = operator.methodcaller("count", ":")


def _scan(data: Any) -> tuple[int, bool]:
    """(keys in all the mappings of ``data``, whether it nests past :data:`MAX_DEPTH`).

    A level at a time, each step a C loop (``map``, ``compress``, ``chain``): ~1 µs for a
    task of a big benchmark, against ~1.5 µs for a Python loop over the containers and a
    Python call per object for ``json``'s ``object_pairs_hook``.

    Why the key count proves there is no repeated key: every ``:`` outside a JSON string
    separates a key from its value, so the text's colons are its keys plus the colons
    inside its strings. When the text spells no colon as an escape (``\\u003a``), the
    strings of the parsed data hold those same colons — less those of a value dropped
    with its repeated key — and the data's keys are the text's keys less the repeats. So
    ``colons == keys + colons in the data's strings`` exactly when no key repeats.
    """
    keys = 0
    level: list[Any] = [data] if type(data) is dict or type(data) is list else []
    for _ in range(MAX_DEPTH):
        if not level:
            return keys, False
        keys += sum(map(len, compress(level, map(_IS_DICT, map(type, level)))))
        children = _items(*level)
        level = list(compress(children, map(_IS_CONTAINER, map(type, children))))
    return keys, bool(level)


def _items_walked(*level: Any) -> list[Any]:
    """The values of the mappings and the items of the lists in ``level``."""
    types = list(map(type, level))
    dicts: list[dict[str, Any]] = list(compress(level, map(_IS_DICT, types)))
    return list(
        chain(
            chain.from_iterable(map(dict.values, dicts)),
            chain.from_iterable(compress(level, map(_IS_LIST, types))),
        )
    )


# CPython's collector lists exactly a dict's values (its keys too, unless all are str) and
# a list's items, in one C call; elsewhere, walk them.
_items = gc.get_referents if sys.implementation.name == "cpython" else _items_walked


def _colons_in_strings(data: Any) -> int:
    """The ``:`` characters in every string of ``data``, keys included (see :func:`_scan`;
    ``data`` nests no deeper than :data:`MAX_DEPTH`)."""
    total = 0
    children = [data]
    while children:
        types = list(map(type, children))
        total += sum(map(_COUNT_COLONS, compress(children, map(_IS_STR, types))))
        level = list(compress(children, map(_IS_CONTAINER, types)))
        types = list(map(type, level))
        dicts: list[dict[str, Any]] = list(compress(level, map(_IS_DICT, types)))
        total += sum(map(_COUNT_COLONS, chain.from_iterable(dicts)))
        children = list(
            chain(
                chain.from_iterable(map(dict.values, dicts)),
                chain.from_iterable(compress(level, map(_IS_LIST, types))),
            )
        )
    return total


def _parse_checked(text: str, path: Path, first_line: int) -> Document:
    """Parse JSON ``text`` checking every object as the decoder closes it (a repeated key),
    then the nesting: slower than :func:`parse_json`, and the source of its errors."""
    try:
        data = json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        fix = next((f for prefix, f in _JSON_FIXES if exc.msg.startswith(prefix)), None)
        raise FormatError(
            f"invalid JSON: {exc.msg}",
            file=path,
            line=first_line + exc.lineno - 1,
            column=exc.colno,
            fix=(fix or "fix the JSON syntax") + " at this position.",
        ) from None
    except _DuplicateKeyError as exc:
        raise _found_error(
            text,
            first_line,
            path,
            _find_duplicate_key(text),
            f"duplicate key {exc.key!r}",
            "keep one of the two entries (JSON readers disagree on which one wins).",
        ) from None
    except _ConstantError as exc:
        raise _found_error(
            text,
            first_line,
            path,
            _find_constant(text),
            f"{exc.name} is not a JSON number (JSON has no NaN or infinities)",
            "write a finite number (or null, or a quoted string).",
        ) from None
    except RecursionError:
        raise FormatError(
            f"the JSON nests deeper than {MAX_DEPTH} levels", file=path, fix=DEPTH_FIX
        ) from None
    doc = Document(path, data, "json", JsonLocator(text, first_line))
    deep = _too_deep(data)
    if deep is not None:
        raise doc.error(f"the JSON nests deeper than {MAX_DEPTH} levels", deep, fix=DEPTH_FIX)
    return doc


def _too_deep(data: Any) -> JsonPath | None:
    """The path of the first list or mapping nested past :data:`MAX_DEPTH`, or None.

    Iterative, containers only; the path is worked out only when there is one to report.
    """
    stack: list[tuple[Any, int]] = [(data, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        value, depth = pop()
        children = value.values() if type(value) is dict else value if type(value) is list else ()
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                if depth >= MAX_DEPTH:
                    return _path_to(data, child)
                push((child, depth + 1))
    return None


def _path_to(data: Any, target: Any) -> JsonPath:
    """The path from ``data`` to the object ``target`` (by identity)."""
    stack: list[tuple[Any, JsonPath]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if value is target:
            return path
        if isinstance(value, dict):
            stack.extend((v, (*path, k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value))
    return ()


class JsonLocator:
    """Finds values by walking the JSON text, skipping siblings with the C decoder."""

    __slots__ = ("_first_line", "_text")

    def __init__(self, text: str, first_line: int) -> None:
        self._text = text
        self._first_line = first_line

    def position(self, offset: int) -> Position:
        line = self._first_line + self._text.count("\n", 0, offset)
        column = offset - (self._text.rfind("\n", 0, offset) + 1) + 1
        return line, column

    def locate(self, path: JsonPath, key: bool) -> Position | None:
        offset = self._offset(path, key)
        return None if offset is None else self.position(offset)

    def _offset(self, path: JsonPath, key: bool) -> int | None:
        text = self._text
        decode = _json_decoder().raw_decode
        i = _skip_ws(text, 0)
        if i >= len(text):
            return None
        for depth, step in enumerate(path):
            last = depth == len(path) - 1
            opener = text[i]
            found: int | None = None
            if opener == "{" and isinstance(step, str):
                j = _skip_ws(text, i + 1)
                while j < len(text) and text[j] == '"':
                    name, end = decode(text, j)
                    value = _skip_ws(text, _skip_ws(text, end) + 1)
                    if name == step:
                        found = j if (last and key) else value
                        break
                    j = _next_item(text, decode(text, value)[1])
            elif opener == "[" and isinstance(step, int):
                j = _skip_ws(text, i + 1)
                index = 0
                while j < len(text) and text[j] != "]":
                    if index == step:
                        found = j
                        break
                    j = _next_item(text, decode(text, j)[1])
                    index += 1
            if found is None:
                return i
            i = found
        return i


def _skip_ws(text: str, i: int) -> int:
    match = _WS.match(text, i)
    return match.end() if match else i


def _next_item(text: str, end: int) -> int:
    """After a value ending at ``end``: the start of the next item, or of the closer."""
    j = _skip_ws(text, end)
    if j < len(text) and text[j] == ",":
        j = _skip_ws(text, j + 1)
    return j


@functools.cache
def _json_decoder() -> json.JSONDecoder:
    return json.JSONDecoder()


def _found_error(
    text: str,
    first_line: int,
    path: Path,
    found: tuple[int, JsonPath] | None,
    message: str,
    fix: str,
) -> FormatError:
    """A FormatError at what a walk over JSON ``text`` found (offset and path), if it did."""
    line, column = JsonLocator(text, first_line).position(found[0]) if found else (None, None)
    return FormatError(
        message,
        file=path,
        line=line,
        column=column,
        json_path=render_path(found[1]) if found else None,
        fix=fix,
    )


def _find_duplicate_key(text: str) -> tuple[int, JsonPath] | None:
    """Offset and path of the first repeated key in (valid) JSON ``text``."""
    return _find(text, duplicates=True)


_CONSTANTS = ("NaN", "Infinity", "-Infinity")


def _find_constant(text: str) -> tuple[int, JsonPath] | None:
    """Offset and path of the first ``NaN`` / ``Infinity`` / ``-Infinity`` value in JSON
    ``text`` (which ``json`` read without error up to it)."""
    return _find(text, duplicates=False)


def _find(text: str, *, duplicates: bool) -> tuple[int, JsonPath] | None:
    """One walk over JSON ``text`` for the first repeated key (``duplicates``) or else the
    first non-finite constant: its offset and path, or None."""
    decode = _json_decoder().raw_decode

    def walk(i: int, path: JsonPath) -> tuple[int, tuple[int, JsonPath] | None]:
        opener = text[i]
        if opener == "{":
            seen: set[str] = set()
            j = _skip_ws(text, i + 1)
            while text[j] == '"':
                name, end = decode(text, j)
                if duplicates and name in seen:
                    return j, (j, (*path, name))
                seen.add(name)
                end, hit = walk(_skip_ws(text, _skip_ws(text, end) + 1), (*path, name))
                if hit:
                    return end, hit
                j = _next_item(text, end)
            return j + 1, None
        if opener == "[":
            j = _skip_ws(text, i + 1)
            index = 0
            while text[j] != "]":
                end, hit = walk(j, (*path, index))
                if hit:
                    return end, hit
                j = _next_item(text, end)
                index += 1
            return j + 1, None
        if not duplicates and text.startswith(_CONSTANTS, i):
            return i, (i, path)
        return decode(text, i)[1], None

    return walk(_skip_ws(text, 0), ())[1]
