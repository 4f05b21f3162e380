"""A calculator skill speaking JSON-RPC 2.0 on stdin/stdout (the eval-skills contract).

Reads one request line, evaluates ``params.expression`` with a safe AST walker (no eval),
and prints one response line. Log lines before the response are allowed.
"""

import ast
import json
import math
import operator
import sys

OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def evaluate(node):
    if isinstance(node, ast.Expression):
        return evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in OPS:
        return OPS[type(node.op)](evaluate(node.left), evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in OPS:
        return OPS[type(node.op)](evaluate(node.operand))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "sqrt":
        return math.sqrt(evaluate(node.args[0]))
    raise ValueError(f"unsupported expression: {ast.dump(node)[:60]}")


def answer(expression):
    expression = expression.strip()
    if expression.endswith("!"):
        return str(math.factorial(int(expression[:-1])))
    value = evaluate(ast.parse(expression, mode="eval"))
    return str(value)


def main():
    request = json.loads(sys.stdin.readline())
    print("calculator: received request", file=sys.stderr)
    try:
        result = {"result": answer(request["params"]["expression"])}
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    except Exception as exc:  # report, do not crash: a JSON-RPC error is an answer
        reply = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32000, "message": str(exc)}}
    print(json.dumps(reply))


if __name__ == "__main__":
    main()
