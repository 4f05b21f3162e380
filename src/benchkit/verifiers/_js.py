"""The JavaScript semantics that skillvault's verifiers and contracts depend on.

skillvault is written in TypeScript, and its outputs carry JavaScript's rules: ``trim()``
removes a different set of characters than Python's :meth:`str.strip`; ``length`` and
``slice`` count UTF-16 code units, not code points; numbers print as ``1`` (not ``1.0``)
and ``1e-7``; ``Math.round`` rounds halves up and ``toFixed`` rounds the exact binary value
half up. These helpers reproduce each, so that excerpts, trimmed config values, rounded
statistics and rendered numbers are byte for byte the ones the original produces.

    >>> js_trim("\\u00a0 answer.txt\\n")
    'answer.txt'
    >>> utf16_len("a😀")
    3
    >>> utf16_prefix("a😀b", 2)
    'a'
    >>> js_number(1.0), js_number(1e-7), js_round(0.00005, 4), to_fixed(0.03125, 4)
    ('1', '1e-7', 0.0001, '0.0313')

One deliberate difference: JavaScript can cut a surrogate pair in half and carry a lone
surrogate on; :func:`utf16_prefix` never does (it stops before the pair), because a lone
surrogate is not Unicode and cannot be written as UTF-8.
"""

from __future__ import annotations

import decimal
import math

__all__ = [
    "EXCERPT_LIMIT",
    "excerpt",
    "js_number",
    "js_round",
    "js_trim",
    "to_fixed",
    "utf16_len",
    "utf16_prefix",
]

#: What ``String.prototype.trim`` removes: ECMAScript WhiteSpace (TAB, VT, FF, SP, NBSP,
#: ZWNBSP and every Unicode "Zs" space) and LineTerminator (LF, CR, LS, PS).
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)

#: skillvault keeps this many UTF-16 code units of a command's stdout and of its stderr.
EXCERPT_LIMIT = 300


def js_trim(text: str) -> str:
    """``text.trim()`` as JavaScript does it (Python's ``strip()`` removes other characters)."""
    return text.strip(_JS_WHITESPACE)


def utf16_len(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units (a non-BMP character counts 2)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def utf16_prefix(text: str, units: int) -> str:
    """The longest prefix of ``text`` that fits in ``units`` UTF-16 code units.

    Like JavaScript's ``text.slice(0, units)``, except that a surrogate pair straddling the
    cut is left out whole instead of being split.
    """
    if len(text) * 2 <= units:  # cannot be too long, whatever it holds
        return text
    count = 0
    for index, ch in enumerate(text):
        count += 2 if ord(ch) > 0xFFFF else 1
        if count > units:
            return text[:index]
    return text


def excerpt(text: str) -> str | None:
    """skillvault's excerpt: trimmed, None when empty, 297 units plus "..." when over 300."""
    trimmed = js_trim(text)
    if not trimmed:
        return None
    if utf16_len(trimmed) <= EXCERPT_LIMIT:
        return trimmed
    return utf16_prefix(trimmed, EXCERPT_LIMIT - 3) + "..."


# --------------------------------------------------------------------------- numbers

_SAFE_INTEGER = 2**53


def js_number(value: float) -> str:
    """``String(value)`` / ``JSON.stringify(value)`` for a finite number, as JavaScript does.

    Integers print without a fraction (``1``, not ``1.0``); the shortest round-trip digits
    are used (the same digits as Python's ``repr``), laid out by ECMAScript's
    ``Number::toString``: plain notation from 1e-6 up to 1e21, exponent form (``1e-7``,
    ``1.5e+21``) outside. Integers beyond 2**53 are first rounded to the nearest double, as
    a JavaScript number would be. NaN and the infinities give ``NaN`` / ``Infinity``.
    """
    if isinstance(value, int):
        if abs(value) < _SAFE_INTEGER:
            return str(value)
        value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"  # and -0 too
    sign = "-" if value < 0 else ""
    digits, point = _shortest_digits(abs(value))
    k = len(digits)
    if k <= point <= 21:
        return sign + digits + "0" * (point - k)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    exponent = point - 1
    mark = "+" if exponent >= 0 else "-"
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{mark}{abs(exponent)}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """``(digits, point)`` with ``value == 0.<digits> * 10**point``, shortest round trip."""
    mantissa, _, exp = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0"), point


def _math_round(value: float) -> float:
    """``Math.round``: the nearest integer, halves towards +infinity, -0 kept."""
    if not math.isfinite(value) or value == 0:
        return value
    floor = math.floor(value)
    result = floor + 1 if value - floor >= 0.5 else floor
    if result == 0 and value < 0:
        return -0.0
    return float(result)


def js_round(value: float, digits: int) -> float:
    """skillvault's ``round(v, d) = Math.round(v * 10**d) / 10**d``, in IEEE doubles.

    Unlike Python's :func:`round` it rounds halves up, and it rounds the product as
    computed in floating point (so 1.005 rounds to 1, like in JavaScript).
    """
    scale = float(10**digits)
    return _math_round(float(value) * scale) / scale


def to_fixed(value: float, digits: int) -> str:
    """``value.toFixed(digits)``: the exact binary value rounded half up (away from zero).

    Python's ``f"{v:.4f}"`` rounds ties to even and prints ``-0.0000`` for -0; JavaScript
    gives ``0.0313`` for 0.03125 and ``0.0000`` for -0. From 1e21 up it is ``String(v)``.
    """
    if not math.isfinite(value) or abs(value) >= 1e21:
        return js_number(value)
    with decimal.localcontext() as ctx:
        ctx.prec = 64
        quantum = decimal.Decimal(1).scaleb(-digits)
        fixed = abs(decimal.Decimal(value)).quantize(quantum, rounding=decimal.ROUND_HALF_UP)
    return ("-" if value < 0 else "") + f"{fixed:f}"
