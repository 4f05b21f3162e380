"""YAML 1.2 core-schema scalars, read as skillvault's npm ``yaml`` parser reads them.

ruamel's YAML 1.2 mode resolves a few plain scalars differently from the core schema
(``1_000`` and ``0x_1F`` as numbers, ``.5e3`` as a string); :func:`core_yaml` resolves
every plain scalar of a parsed document again from its source token.
"""

from __future__ import annotations

import math
import re
from typing import Any

from benchkit._js import as_doubles
from benchkit.formats._source import Document, JsonPath

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


def core_yaml(doc: Document, text: str) -> Any:
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
