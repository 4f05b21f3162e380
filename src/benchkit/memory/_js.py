"""JavaScript's value coercions, for the places where MemoryBench's output depends on them.

MemoryBench is TypeScript: its answers are ``String(expected)``, its records are
``JSON.stringify``-ed, its judge scores are ``Number(x)``, its whitespace is ``\\s``. These
helpers reproduce those rules on JSON data parsed by Python, so the same file gives the
same strings in benchkit:

    >>> js_string(2022), js_string(2.0), js_string(1e21), js_string([1, None, "a"])
    ('2022', '2', '1e+21', '1,,a')
    >>> js_json({"b": 1.0, "2": [0.5, "é"]})
    '{"2":[0.5,"é"],"b":1}'
    >>> js_number(" 0x10 "), js_number(""), js_number("1_000")
    (16.0, 0.0, nan)
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = [
    "JS_WHITESPACE",
    "MISSING",
    "WHITESPACE_RUN",
    "js_json",
    "js_number",
    "js_string",
    "js_trim",
    "js_truthy",
]

#: The characters JavaScript's ``\\s`` and ``String.prototype.trim`` treat as whitespace.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
WHITESPACE_RUN = re.compile(f"[{re.escape(JS_WHITESPACE)}]+")
"""A run of JavaScript whitespace (``/\\s+/``)."""


class _Missing:
    """JavaScript's ``undefined``: a key that is not there (``None`` is JSON ``null``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def js_trim(text: str) -> str:
    """``text.trim()``: JavaScript's whitespace set, not Python's."""
    return text.strip(JS_WHITESPACE)


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness: ``undefined``, ``null``, ``false``, ``0``, NaN and ``""`` are false."""
    if value is MISSING or value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value == value and value != 0
    if isinstance(value, str):
        return value != ""
    return True


def _number_string(value: float) -> str:
    """ECMAScript Number::toString for a finite or infinite double."""
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    digits_tuple = Decimal(repr(abs(value))).as_tuple()  # repr is the shortest round trip
    digits = "".join(map(str, digits_tuple.digits)).rstrip("0") or "0"
    exponent = int(digits_tuple.exponent)
    trailing = len("".join(map(str, digits_tuple.digits))) - len(digits)
    k = len(digits)
    n = exponent + trailing + k  # value = 0.digits × 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        text = f"{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return sign + text


def _as_double(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def js_string(value: Any) -> str:
    """``String(value)``: numbers as JavaScript prints them, arrays joined with commas."""
    if isinstance(value, str):
        return value
    if value is MISSING:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # Beyond 2**53 JavaScript holds the nearest double, not the integer itself.
        return str(value) if abs(value) <= 2**53 else _number_string(_as_double(value))
    if isinstance(value, float):
        return _number_string(value)
    if isinstance(value, (list, tuple)):
        return ",".join("" if v is None or v is MISSING else js_string(v) for v in value)
    return "[object Object]"


_ARRAY_INDEX = re.compile(r"(?:0|[1-9][0-9]*)\Z")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _key_order(mapping: Mapping[str, Any]) -> list[str]:
    """JavaScript's own-key order: array-index keys ascending, then insertion order."""
    index = [k for k in mapping if _ARRAY_INDEX.match(k) and int(k) < 2**32 - 1]
    if not index:
        return list(mapping)
    index.sort(key=int)
    chosen = set(index)
    return index + [k for k in mapping if k not in chosen]


def _quote(text: str) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    if _LONE_SURROGATE.search(quoted):
        quoted = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)
    return quoted


def js_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact, non-ASCII kept, JavaScript number and key order."""
    if isinstance(value, str):
        return _quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        number = value if isinstance(value, float) else _as_double(value)
        if number != number or math.isinf(number):
            return "null"
        return js_string(value)
    if isinstance(value, Mapping):
        parts = [f"{_quote(str(k))}:{js_json(value[k])}" for k in _key_order(value)]
        return "{" + ",".join(parts) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(js_json(v) for v in value) + "]"
    return _quote(str(value))


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_RADIX = {"0x": 16, "0o": 8, "0b": 2}


def js_number(value: Any) -> float:
    """``Number(value)``; NaN for what JavaScript cannot read as a number."""
    if value is MISSING:
        return math.nan
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, (list, tuple)):
        return js_number(js_string(value))
    if not isinstance(value, str):
        return math.nan
    text = js_trim(value)
    if not text:
        return 0.0
    if text in ("Infinity", "+Infinity"):
        return math.inf
    if text == "-Infinity":
        return -math.inf
    radix = _RADIX.get(text[:2].lower())
    if radix is not None:
        try:
            return float(int(text[2:], radix)) if text[2:].isalnum() else math.nan
        except ValueError:
            return math.nan
    if _DECIMAL.match(text):
        return float(text)
    return math.nan
