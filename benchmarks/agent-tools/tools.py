"""The tools of the agent-tools benchmark: a calculator, a lookup table and a unit converter.

Plain typed functions: benchkit derives each tool's JSON Schema from its annotations and its
docstring (docs/agents.md). Nothing here imports benchkit.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Literal

_OPERATORS: dict[type, Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
    ast.FloorDiv: operator.floordiv,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _value(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 100:
            raise ValueError("exponent too large")
        return _OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_value(node.operand))
    raise ValueError(f"not arithmetic: {ast.unparse(node)}")


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression: numbers, + - * / ** % // and parentheses.

    Args:
        expression: the expression, e.g. "3 * 3.75 + 2 * 2.25"
    """
    if len(expression) > 200:
        raise ValueError("the expression is longer than 200 characters")
    result = _value(ast.parse(expression.replace("^", "**"), mode="eval").body)
    if isinstance(result, float) and result.is_integer():
        return str(int(result))
    return str(round(result, 6))


TABLES: dict[str, dict[str, str]] = {
    "capitals": {
        "australia": "Canberra",
        "canada": "Ottawa",
        "japan": "Tokyo",
        "kenya": "Nairobi",
        "peru": "Lima",
    },
    "elements": {"hydrogen": "1", "carbon": "6", "oxygen": "8", "iron": "26", "gold": "79"},
    "prices_usd": {"apple": "0.50", "bread": "2.25", "coffee": "3.75", "milk": "1.20"},
}


def lookup(table: Literal["capitals", "elements", "prices_usd"], key: str) -> str:
    """Look a key up in a table: a country's capital, an element's atomic number, or the
    price of a grocery item in US dollars.

    Args:
        table: which table to read
        key: the country, element or item, in lower case (e.g. "japan", "gold", "bread")
    """
    rows = TABLES[table]
    found = rows.get(key.strip().lower())
    if found is None:
        raise KeyError(f"{key!r} is not in {table}; it has {', '.join(sorted(rows))}")
    return found


_LINEAR = {
    ("km", "mi"): 0.621371,
    ("mi", "km"): 1.609344,
    ("kg", "lb"): 2.204623,
    ("lb", "kg"): 0.453592,
    ("m", "ft"): 3.280840,
    ("ft", "m"): 0.304800,
    ("l", "gal"): 0.264172,
    ("gal", "l"): 3.785412,
}

Unit = Literal["km", "mi", "kg", "lb", "m", "ft", "l", "gal", "c", "f"]


def convert(value: float, source: Unit, target: Unit) -> float:
    """Convert a quantity between units: km/mi, kg/lb, m/ft, l/gal, c/f (degrees Celsius
    and Fahrenheit). The result is rounded to 4 decimals.

    Args:
        value: the quantity in the source unit
        source: the unit of the value
        target: the unit wanted
    """
    if (source, target) == ("c", "f"):
        return round(value * 9 / 5 + 32, 4)
    if (source, target) == ("f", "c"):
        return round((value - 32) * 5 / 9, 4)
    if source == target:
        return value
    factor = _LINEAR.get((source, target))
    if factor is None:
        raise ValueError(f"cannot convert {source} to {target}")
    return round(value * factor, 4)
