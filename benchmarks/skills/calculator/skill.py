"""Calculator skill: one JSON-RPC 2.0 request on stdin, one response on stdout.

``{"expression": "2+3*4"}`` evaluates arithmetic (numbers, + - * / // % **, unary signs,
parentheses) by walking Python's syntax tree — never ``eval`` — and ``{"expression": "5!"}``
is a factorial. ``{"operation": "reverse" | "is_palindrome", "input": "..."}`` works on
text. The answer is ``{"result": str(value)}``, so ``100/4`` gives ``"25.0"``.
Errors: -32601 for an unknown method, -32602 for bad params, -32000 when evaluation fails.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import sys
from collections.abc import Callable
from typing import Any

MAX_FACTORIAL = 1000
MAX_RESULT_BITS = 100_000
MAX_EXPRESSION = 1_000

BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


class SkillError(Exception):
    """A request the skill cannot answer; ``code`` is the JSON-RPC error code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def evaluate(node: ast.AST) -> Any:
    """The value of an arithmetic syntax tree; anything else is rejected."""
    if isinstance(node, ast.Expression):
        return evaluate(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        return UNARY[type(node.op)](evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        left, right = evaluate(node.left), evaluate(node.right)
        if isinstance(node.op, ast.Pow) and too_big(left, right):
            raise SkillError(-32000, "the power is too large")
        value = BINARY[type(node.op)](left, right)
        if isinstance(value, int) and value.bit_length() > MAX_RESULT_BITS:
            raise SkillError(-32000, "the result is too large")
        return value
    raise SkillError(-32000, f"unsupported syntax: {type(node).__name__}")


def too_big(base: Any, exponent: Any) -> bool:
    """Whether ``base ** exponent`` would be an integer of more than MAX_RESULT_BITS bits."""
    if not isinstance(base, int) or not isinstance(exponent, int) or abs(base) < 2:
        return False
    return exponent > 0 and (abs(base).bit_length() - 1) * exponent > MAX_RESULT_BITS


def calculate(expression: str) -> str:
    text = expression.strip()
    if len(text) > MAX_EXPRESSION:
        raise SkillError(-32602, "expression is too long")
    if text.endswith("!"):
        operand = text[:-1].strip()
        if not operand.isdigit():
            raise SkillError(-32602, f"factorial needs a whole number, got {operand!r}")
        if int(operand) > MAX_FACTORIAL:
            raise SkillError(-32000, f"factorial of more than {MAX_FACTORIAL} is not supported")
        return str(math.factorial(int(operand)))
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise SkillError(-32602, f"not an arithmetic expression: {exc.msg}") from None
    try:
        return str(evaluate(tree))
    except (ZeroDivisionError, OverflowError, ValueError) as exc:
        raise SkillError(-32000, str(exc)) from None


def invoke(params: Any) -> str:
    if not isinstance(params, dict):
        raise SkillError(-32602, "params must be an object")
    operation = params.get("operation")
    if operation is not None:
        text = params.get("input")
        if not isinstance(text, str):
            raise SkillError(-32602, "`input` must be a string")
        if operation == "reverse":
            return text[::-1]
        if operation == "is_palindrome":
            return "true" if text == text[::-1] else "false"
        raise SkillError(-32602, f"unknown operation {operation!r}")
    expression = params.get("expression")
    if not isinstance(expression, str):
        raise SkillError(-32602, "give an `expression`, or an `operation` and its `input`")
    return calculate(expression)


def handle(request: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request.get("id")}
    method = request.get("method")
    try:
        if method == "healthcheck":
            reply["result"] = {"status": "ok"}
        elif method == "invoke":
            reply["result"] = {"result": invoke(request.get("params"))}
        else:
            raise SkillError(-32601, f"method not found: {method}")
    except SkillError as exc:
        reply["error"] = {"code": exc.code, "message": str(exc)}
    return reply


def main() -> None:
    try:
        request = json.loads(sys.stdin.readline())
    except ValueError:
        request = None
    if isinstance(request, dict):
        reply = handle(request)
    else:
        error = {"code": -32700, "message": "parse error: expected one JSON-RPC request"}
        reply = {"jsonrpc": "2.0", "id": None, "error": error}
    print(json.dumps(reply))


if __name__ == "__main__":
    main()
