"""A deliberately fallible "model": right on small sums, sloppy on the rest.

Used by the demo as the second condition, so the report has something to compare.
"""


def guess(task_input):
    expression = task_input["expression"].replace(" ", "")
    if expression.endswith("!"):
        return {"result": "I don't know"}
    for op in "+-":
        left, sep, right = expression.partition(op)
        if sep and left.isdigit() and right.isdigit():
            value = int(left) + int(right) if op == "+" else int(left) - int(right)
            return {"result": str(value)}
    if "*" in expression:
        left, _, right = expression.partition("*")
        if left.isdigit() and right.isdigit():
            return {"result": str(int(left) * int(right) + (1 if int(right) > 9 else 0))}
    return {"result": "42"}
