"""A skill wrong on purpose: one JSON-RPC 2.0 request on stdin, one response on stdout.

It answers arithmetic like the calculator in ``benchmarks/skills/calculator`` but rounds
every result to a whole number (``7/2`` gives ``"4"``), and answers any text operation with
its input unchanged, so some answers pass and the others fail with their reasons.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import sys
from typing import Any

BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def value(node: ast.AST) -> Any:
    """The value of a small arithmetic syntax tree (no powers: a sloppy skill stays cheap)."""
    if isinstance(node, ast.Expression):
        return value(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -value(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        return BINARY[type(node.op)](value(node.left), value(node.right))
    raise ValueError(f"unsupported syntax: {type(node).__name__}")


def answer(params: dict[str, Any]) -> str:
    if "operation" in params:
        return str(params.get("input", ""))  # the bug: text comes back unchanged
    expression = str(params.get("expression", "")).strip()
    if expression.endswith("!") and expression[:-1].strip().isdigit():
        return str(math.factorial(min(int(expression[:-1]), 100)))
    return str(round(value(ast.parse(expression, mode="eval"))))  # the bug: rounding


def main() -> None:
    request = json.loads(sys.stdin.readline())
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request.get("id")}
    if request.get("method") == "healthcheck":
        reply["result"] = {"status": "ok"}
    else:
        try:
            reply["result"] = {"result": answer(request.get("params") or {})}
        except (ValueError, SyntaxError, ZeroDivisionError) as exc:
            reply["error"] = {"code": -32000, "message": str(exc)}
    print(json.dumps(reply))


if __name__ == "__main__":
    main()
