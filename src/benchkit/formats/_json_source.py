"""JSON documents: parse with the C decoder, and find where a value sits on demand.

:func:`parse_json` reads JSON text into plain data, refusing what ``json`` would accept
silently (a repeated key, ``NaN`` / ``Infinity``) and nesting past
:data:`~benchkit._limits.MAX_DEPTH`. Positions are not recorded while parsing:
:class:`JsonLocator` walks the text again, skipping siblings with the C decoder, only when
an error must be located.
"""

from __future__ import annotations

import functools
import json
import re
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
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKeyError(k)
        out[k] = v
    return out


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

    Iterative, containers only (~1 % of a big file's load); the path is worked out only
    when there is one to report.
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
