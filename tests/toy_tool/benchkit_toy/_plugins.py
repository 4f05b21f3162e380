"""The toy tool's provider (a calculator for ``a + b`` and ``a - b``) and its evaluator."""

from benchkit import Request, Response, Score, Task


class Calculator:
    """Answers ``a + b`` and ``a - b``; anything else is an execution error."""

    async def invoke(self, request: Request) -> Response:
        parts = str(request.task.input).split()
        if len(parts) != 3 or parts[1] not in "+-":
            raise ValueError(f"cannot compute {request.task.input!r}")
        a, op, b = int(parts[0]), parts[1], int(parts[2])
        return Response(output=str(a + b if op == "+" else a - b))


class WithinOne:
    """Passes when the output is a number within 1 of the expected one."""

    def evaluate(self, task: Task, response: Response) -> Score:
        try:
            ok = abs(float(str(response.output)) - float(str(task.expected))) <= 1
        except ValueError:
            ok = False
        return Score(name="toy-within-one", value=float(ok), passed=ok)
