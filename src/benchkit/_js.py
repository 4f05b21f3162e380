"""JavaScript's semantics, for the outputs that must match a JavaScript tool's byte for byte.

skillvault, MemoryBench and eval-skills are TypeScript, and what they write carries
JavaScript's rules: ``trim()`` and ``\\s`` know other whitespace than Python; ``length``
and ``slice`` count UTF-16 code units; a number prints as ``1`` (not ``1.0``) and
``1e-7``; ``Math.round`` rounds halves up and ``toFixed`` rounds the exact binary value;
``Number("0x10")`` is 16; ``JSON.stringify`` lists integer-like keys first. The
skillvault, MemoryBench and eval-skills loaders, verifiers, judges and reports all take
these rules from here:

    >>> number_to_string(1.0), number_to_string(1e-7), number_to_string(1e21)
    ('1', '1e-7', '1e+21')
    >>> round_to(0.00005, 4), to_fixed(0.03125, 4), math_round(-2.5)
    (0.0001, '0.0313', -2.0)
    >>> to_number(" 0x10 "), to_number(""), to_string([1, None, 2.0])
    (16.0, 0.0, '1,,2')
    >>> stringify({"b": 1.0, "2": [0.5, "é", float("nan")]})
    '{"2":[0.5,"é",null],"b":1}'
    >>> trim("\\u00a0 answer.txt\\n"), utf16_len("a😀"), utf16_prefix("a😀b", 2)
    ('answer.txt', 3, 'a')

Values are JSON data as Python parses it (``None`` is ``null``); :data:`MISSING` stands
for ``undefined``, a key that is not there.
"""

from __future__ import annotations

import decimal
import json
import math
import re
import struct
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "MISSING",
    "WHITESPACE",
    "WHITESPACE_RUN",
    "as_doubles",
    "math_log",
    "math_round",
    "number_to_string",
    "object_entries",
    "reduce_sum",
    "round_to",
    "stringify",
    "to_fixed",
    "to_number",
    "to_string",
    "trim",
    "truthy",
    "utf16_len",
    "utf16_prefix",
]

# --------------------------------------------------------------------------- undefined


class _Missing:
    """JavaScript's ``undefined``: a key that is not there (``None`` is JSON's ``null``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""JavaScript's ``undefined``, e.g. ``record.get(key, MISSING)`` for ``record[key]``."""


def truthy(value: Any) -> bool:
    """JavaScript truthiness: ``undefined``, ``null``, ``false``, 0, NaN and ``""`` are false.

    Unlike Python's :func:`bool`, empty lists and objects are true.

    >>> [truthy(v) for v in (0, float("nan"), "", None, MISSING, [], {}, "0")]
    [False, False, False, False, False, True, True, True]
    """
    if value is MISSING or value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value == value and value != 0
    if isinstance(value, str):
        return value != ""
    return True


# --------------------------------------------------------------------------- strings

WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""What ``\\s`` matches and ``String.prototype.trim`` removes: ECMAScript WhiteSpace (TAB,
VT, FF, SP, NBSP, ZWNBSP and every Unicode "Zs" space) and LineTerminator (LF, CR, LS, PS).
Python's :meth:`str.strip` also removes U+001C-U+001F and U+0085, and keeps U+FEFF."""

WHITESPACE_RUN = re.compile(f"[{re.escape(WHITESPACE)}]+")
"""A run of JavaScript whitespace: ``/\\s+/``."""


def trim(text: str) -> str:
    """``text.trim()``: strips JavaScript's :data:`WHITESPACE`, not Python's.

    >>> trim("\\ufeff x \\u2028"), trim("\\x1cx\\x85")
    ('x', '\\x1cx\\x85')
    """
    return text.strip(WHITESPACE)


def utf16_len(text: str) -> int:
    """``text.length``: UTF-16 code units, so a character beyond U+FFFF counts 2.

    >>> utf16_len("é😀")
    3
    """
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def utf16_prefix(text: str, units: int, *, split_pairs: bool = False) -> str:
    """``text.slice(0, units)``: the first ``units`` UTF-16 code units of ``text``.

    When the cut falls inside a surrogate pair, the pair is left out whole by default: a
    lone surrogate is not Unicode and cannot be written as UTF-8. ``split_pairs=True`` does
    what JavaScript does and keeps the pair's high half, a lone surrogate.

    >>> utf16_prefix("ab😀c", 3), utf16_prefix("ab😀c", 4), utf16_prefix("ab😀c", 3, split_pairs=True)
    ('ab', 'ab😀', 'ab\\ud83d')
    """
    if len(text) * 2 <= units:  # cannot be too long, whatever it holds
        return text
    count = 0
    for index, ch in enumerate(text):
        code = ord(ch)
        count += 2 if code > 0xFFFF else 1
        if count > units:
            if split_pairs and count - units == 1 and code > 0xFFFF:
                return text[:index] + chr(0xD800 + ((code - 0x10000) >> 10))
            return text[:index]
    return text


# --------------------------------------------------------------------------- numbers

_SAFE_INTEGER = 2**53


def _as_double(value: float) -> float:
    """``value`` as a JavaScript number holds it: the nearest double (±inf past the range)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def as_doubles(value: Any, *, integral_as_int: bool = False) -> Any:
    """JSON data with every number as JavaScript holds it after ``JSON.parse``: a double.

    Integers from 2**53 up become the nearest double (±inf past the double range); the
    rest is kept. With ``integral_as_int``, every finite integral number is then a Python
    ``int`` (``1.0`` reads as ``1``), so that ``isinstance(v, int)`` is ``Number.isInteger``.
    Objects and lists are copied; other values are returned as they are.

    >>> as_doubles({"n": [2**53 + 1, 1.0]}), as_doubles([2**53 + 1, 1.0], integral_as_int=True)
    ({'n': [9007199254740992.0, 1.0]}, [9007199254740992, 1])
    """
    if isinstance(value, dict):
        return {k: as_doubles(v, integral_as_int=integral_as_int) for k, v in value.items()}
    if isinstance(value, list):
        return [as_doubles(v, integral_as_int=integral_as_int) for v in value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if isinstance(value, int):
        if abs(value) < _SAFE_INTEGER:
            return value
        value = _as_double(value)
    if integral_as_int and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def number_to_string(value: float) -> str:
    """``String(value)`` for a number, which ``JSON.stringify`` also writes when it is finite.

    Integers print without a fraction (``1``, not ``1.0``); the shortest round-trip digits
    are used (the same as Python's :func:`repr`), laid out by ``Number::toString``: plain
    from 1e-6 up to 1e21, exponent form outside. An integer from 2**53 up is first rounded
    to the nearest double, as a JavaScript number would be; -0 prints as ``0``.

    >>> [number_to_string(v) for v in (25.0, -0.0, 0.000001, 1.5e-7, 2**60, float("-inf"))]
    ['25', '0', '0.000001', '1.5e-7', '1152921504606847000', '-Infinity']
    """
    if isinstance(value, int) and abs(value) < _SAFE_INTEGER:
        return str(int(value))  # int(): True prints as 1, as Number(true) is 1
    number = _as_double(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    digits, point = _shortest_digits(abs(number))  # number = 0.<digits> * 10**point
    k = len(digits)
    if k <= point <= 21:
        return sign + digits + "0" * (point - k)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    exponent = point - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """``(digits, point)`` with ``value == 0.<digits> * 10**point``, shortest round trip."""
    mantissa, _, exp = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0"), point


# --------------------------------------------------------------------------- Math.log

_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_TWO54 = 1.80143985094819840000e16
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01


def _high_low(x: float) -> tuple[int, int]:
    bits: int = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits >> 32, bits & 0xFFFFFFFF


def _with_high(x: float, high: int) -> float:
    bits: int = struct.unpack("<Q", struct.pack("<d", x))[0]
    value: float = struct.unpack("<d", struct.pack("<Q", (high << 32) | (bits & 0xFFFFFFFF)))[0]
    return value


def math_log(x: float) -> float:
    """``Math.log(x)`` bit for bit as V8 (Node) computes it.

    V8 uses a port of fdlibm's ``e_log.c`` (within 1 ulp, not correctly rounded), while
    :func:`math.log` uses the C library's; about 4 % of inputs differ in the last bit. This
    is the same algorithm, step for step, on the same doubles.

        >>> math_log(1.1612903225806452), math.log(1.1612903225806452)
        (0.1495317339709638, 0.14953173397096384)
    """
    hx, lx = _high_low(x)
    k = 0
    if hx < 0x00100000:  # x < 2**-1022: zero, negative or subnormal
        if ((hx & 0x7FFFFFFF) | lx) == 0:
            return -math.inf
        if hx < 0:
            return math.nan
        k -= 54
        x *= _TWO54
        hx = _high_low(x)[0]
    if hx >= 0x7FF00000:  # inf or NaN
        return x + x
    k += (hx >> 20) - 1023
    hx &= 0x000FFFFF
    i = (hx + 0x95F64) & 0x100000
    x = _with_high(x, hx | (i ^ 0x3FF00000))  # normalise x or x/2
    k += i >> 20
    f = x - 1.0
    if (0x000FFFFF & (2 + hx)) < 3:  # -2**-20 <= f < 2**-20
        if f == 0.0:
            if k == 0:
                return 0.0
            dk = float(k)
            return dk * _LN2_HI + dk * _LN2_LO
        r = f * f * (0.5 - 0.33333333333333333 * f)
        if k == 0:
            return f - r
        dk = float(k)
        return dk * _LN2_HI - ((r - dk * _LN2_LO) - f)
    s = f / (2.0 + f)
    dk = float(k)
    z = s * s
    i = hx - 0x6147A
    w = z * z
    j = 0x6B851 - hx
    t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
    t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    i |= j
    r = t2 + t1
    if i > 0:
        hfsq = 0.5 * f * f
        if k == 0:
            return f - (hfsq - s * (hfsq + r))
        return dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + dk * _LN2_LO)) - f)
    if k == 0:
        return f - s * (f - r)
    return dk * _LN2_HI - ((s * (f - r) - dk * _LN2_LO) - f)


def math_round(value: float) -> float:
    """``Math.round(value)``: the nearest integer, halves towards +∞; -0 and -0.4 give -0.

    Python's :func:`round` rounds halves to even instead.

    >>> math_round(0.5), math_round(2.5), math_round(-1.5), math_round(-0.4)
    (1.0, 3.0, -1.0, -0.0)
    """
    number = _as_double(value)
    if not math.isfinite(number) or number == 0:
        return number
    floor = math.floor(number)
    result = floor + 1 if number - floor >= 0.5 else floor
    if result == 0 and number < 0:
        return -0.0
    return float(result)


def round_to(value: float, digits: int) -> float:
    """``Math.round(value * 10 ** digits) / 10 ** digits``, the usual JavaScript idiom.

    Halves round up, and the product is rounded as computed in doubles, so 1.005 rounds to
    1 at two digits (1.005 * 100 is 100.49999999999999), as in JavaScript.

    >>> round_to(0.03125, 4), round_to(1 / 3, 4), round_to(1.005, 2)
    (0.0313, 0.3333, 1.0)
    """
    scale = float(10**digits)
    return math_round(_as_double(value) * scale) / scale


def to_fixed(value: float, digits: int) -> str:
    """``value.toFixed(digits)``: the exact binary value rounded half away from zero.

    Python's ``f"{v:.4f}"`` rounds ties to even and prints ``-0.0000`` for -0; JavaScript
    gives ``0.0313`` for 0.03125 and ``0.0000`` for -0 (but ``-0.0000`` for -0.00001).
    From 1e21 up, and for NaN and the infinities, it is :func:`number_to_string`.

    >>> to_fixed(0.03125, 4), to_fixed(6.25, 1), to_fixed(-0.0, 2), to_fixed(1e21, 2)
    ('0.0313', '6.3', '0.00', '1e+21')
    """
    number = _as_double(value)
    if not math.isfinite(number) or abs(number) >= 1e21:
        return number_to_string(number)
    with decimal.localcontext() as ctx:
        ctx.prec = 128  # 21 integer digits and up to 100 fraction digits, as toFixed allows
        quantum = decimal.Decimal(1).scaleb(-digits)
        fixed = abs(decimal.Decimal(number)).quantize(quantum, rounding=decimal.ROUND_HALF_UP)
    return ("-" if number < 0 else "") + f"{fixed:f}"


def reduce_sum(values: Iterable[float]) -> float:
    """``values.reduce((a, b) => a + b, 0)``: left to right, rounding after every addition.

    Python 3.12's :func:`sum` compensates for rounding, so it can differ in the last bit.

    >>> reduce_sum([0.1] * 10)
    0.9999999999999999
    """
    total = 0.0
    for value in values:
        total += value
    return total


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_RADIX = {"0x": 16, "0o": 8, "0b": 2}


def to_number(value: Any) -> float:
    """``Number(value)``: NaN for what JavaScript cannot read as a number.

    Strings are trimmed; empty is 0; decimal, ``Infinity`` and unsigned ``0x`` / ``0o`` /
    ``0b`` literals are read (no ``_`` separators, no ``inf``); lists go through
    :func:`to_string`; objects and ``undefined`` are NaN, ``null`` is 0.

    >>> to_number(" 1e-1 "), to_number("0b101"), to_number(None), to_number([7])
    (0.1, 5.0, 0.0, 7.0)
    >>> [math.isnan(to_number(v)) for v in ("1_000", "inf", "-0x10", MISSING, {})]
    [True, True, True, True, True]
    """
    if value is MISSING:
        return math.nan
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return _as_double(value)
    if isinstance(value, (list, tuple)):
        return to_number(to_string(value))
    if not isinstance(value, str):
        return math.nan
    text = trim(value)
    if not text:
        return 0.0
    if text in ("Infinity", "+Infinity"):
        return math.inf
    if text == "-Infinity":
        return -math.inf
    radix = _RADIX.get(text[:2].lower())
    if radix is not None:
        body = text[2:]
        try:
            return float(int(body, radix)) if body.isascii() and body.isalnum() else math.nan
        except ValueError:
            return math.nan
    if _DECIMAL.match(text):
        return float(text)
    return math.nan


def to_string(value: Any) -> str:
    """``String(value)``: numbers as :func:`number_to_string`, lists joined with commas.

    >>> to_string(2.0), to_string(True), to_string(None), to_string(MISSING), to_string({})
    ('2', 'true', 'null', 'undefined', '[object Object]')
    """
    if isinstance(value, str):
        return value
    if value is MISSING:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return number_to_string(value)
    if isinstance(value, (list, tuple)):
        # Array.prototype.join writes null and undefined as empty strings
        return ",".join("" if v is None or v is MISSING else to_string(v) for v in value)
    return "[object Object]"


# --------------------------------------------------------------------------- JSON.stringify

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_ARRAY_INDEX = re.compile(r"(?:0|[1-9][0-9]*)\Z")
_MAX_INDENT = 10


def _quote(text: str) -> str:
    """A JSON string as JavaScript writes it: non-ASCII kept, lone surrogates escaped."""
    # A valid non-BMP character is one code point in Python, so D800-DFFF is unpaired.
    quoted = json.dumps(text, ensure_ascii=False)
    if _LONE_SURROGATE.search(quoted):
        quoted = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)
    return quoted


def _is_array_index(key: str) -> bool:
    return _ARRAY_INDEX.match(key) is not None and int(key) < 2**32 - 1


def object_entries(mapping: Mapping[Any, Any]) -> list[tuple[str, Any]]:
    """``Object.entries(mapping)``: array-index keys (``"0"``, ``"17"``; not ``"01"``)
    ascending, then the other keys in insertion order; a key that is not a string is
    ``String(key)``.

    >>> object_entries({"b": 1, "10": 2, "9": 3, "01": 4})
    [('9', 3), ('10', 2), ('b', 1), ('01', 4)]
    """
    items = [(k if isinstance(k, str) else to_string(k), v) for k, v in mapping.items()]
    indexes = [pair for pair in items if _is_array_index(pair[0])]
    if not indexes:
        return items
    indexes.sort(key=lambda pair: int(pair[0]))
    return indexes + [pair for pair in items if not _is_array_index(pair[0])]


def stringify(value: Any, indent: int | None = None) -> str:
    """``JSON.stringify(value)``, or ``JSON.stringify(value, null, indent)`` with an indent.

    Compact without ``indent``; with it, one member a line, ``indent`` spaces a level (at
    most 10, as in JavaScript), ``{}`` and ``[]`` when empty, and no trailing newline.
    (``indent=0`` breaks lines without indenting, as :func:`json.dumps` does; JavaScript
    would write compact JSON, which ``indent=None`` gives.) Numbers are written by
    :func:`number_to_string`, NaN and the infinities as ``null``; non-ASCII text is kept
    and lone surrogates are escaped; object keys come in JavaScript's order (integer-like
    keys first, ascending); :data:`MISSING` members are left out of objects and are
    ``null`` in lists. Anything else, or :data:`MISSING` itself, raises :exc:`TypeError`.

    >>> stringify({"z": [], "10": {}, "9": -0.0, "a": MISSING})
    '{"9":0,"10":{},"z":[]}'
    >>> print(stringify({"a": [1, "x"]}, 2))
    {
      "a": [
        1,
        "x"
      ]
    }
    """
    step = None if indent is None else " " * min(indent, _MAX_INDENT)
    return _write(value, step, "")


def _write(value: Any, step: str | None, pad: str) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, (int, float)):
        text = number_to_string(value)
        return "null" if text in ("NaN", "Infinity", "-Infinity") else text
    if isinstance(value, Mapping):
        entries = [(k, v) for k, v in object_entries(value) if v is not MISSING]
        if not entries:
            return "{}"
        if step is None:
            return "{" + ",".join(f"{_quote(k)}:{_write(v, None, '')}" for k, v in entries) + "}"
        inner = pad + step
        members = [f"{inner}{_quote(k)}: {_write(v, step, inner)}" for k, v in entries]
        return "{\n" + ",\n".join(members) + f"\n{pad}}}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        if step is None:
            return "[" + ",".join(_item(v, None, "") for v in value) + "]"
        inner = pad + step
        items = [f"{inner}{_item(v, step, inner)}" for v in value]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    what = "undefined" if value is MISSING else f"a {type(value).__name__}"
    raise TypeError(f"cannot write {what} as JSON")


def _item(value: Any, step: str | None, pad: str) -> str:
    """A list item: ``undefined`` is written as ``null`` there."""
    return "null" if value is MISSING else _write(value, step, pad)
