"""The toy's part of benchkit's server: a job kind ``toy`` (sums given in the request, no
file) and one route, ``GET /toy/hello``. Imported only when a server is built."""

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from benchkit import Benchmark, Condition, EvaluatorSpec, FormatError, ProviderSpec, Suite, Task
from benchkit.serve_toolkit import (
    ANY,
    JobBuilder,
    JobContext,
    ServeState,
    ToolRoutes,
    json_response,
    operation,
    state_of,
)

#: The body of ``POST /api/runs`` of kind ``toy`` (beside ``"kind": "toy"``).
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["sums"],
    "properties": {
        "sums": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1000,
            "items": {"type": "string", "pattern": "^[^=]+=[^=]+$"},
        },
        "name": {"type": "string", "minLength": 1, "maxLength": 100},
    },
}


def build(spec: Any, context: JobContext) -> Suite:
    """The suite of a toy job: one task per sum, answered by the toy calculator."""
    tasks = []
    for i, line in enumerate(spec["sums"], 1):
        question, _, answer = str(line).partition("=")
        if not question.strip() or not answer.strip():
            raise FormatError(
                f"sums[{i - 1}] {line!r} is not 'QUESTION = ANSWER'",
                fix="write each sum as '2 + 3 = 5'.",
                json_path=f"sums.{i - 1}",
            )
        tasks.append(Task(f"sum-{i}", input=question.strip(), expected=answer.strip()))
    return Suite(
        Benchmark(
            spec.get("name") or "toy-request",
            tasks=tasks,
            evaluators=[EvaluatorSpec("exact"), EvaluatorSpec("toy-within-one")],
        ),
        conditions=[Condition("calculator", ProviderSpec("toy-calculator"))],
    )


JOB = JobBuilder(
    build=build, schema=SCHEMA, summary="Toy: the sums given, by the calculator", format="toy"
)


async def hello(request: Request) -> Response:
    """What the toy says: its server setting ``toy_greeting`` (default ``hello``)."""
    state = state_of(request)
    return json_response({"tool": "toy", "greeting": state.settings.get("toy_greeting", "hello")})


def routes(state: ServeState) -> list[BaseRoute]:
    return [Route("/toy/hello", hello, methods=["GET"])]


def openapi() -> dict[str, Any]:
    return {
        "/toy/hello": {"get": operation("Toy: a greeting", {200: ("greeting", ANY)}, tag="toy")}
    }


ROUTES = ToolRoutes(routes=routes, openapi=openapi)
