"""Building blocks of the OpenAPI 3.1 document: one operation, and the schemas every
route family refers to. The server's ``/openapi.json`` joins benchkit's paths and each
tool's (``ToolRoutes.openapi``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["ANY", "ARRAY", "ERROR", "RUN_ID", "operation"]

#: The schema of every error body (``{code?, error, details?}``).
ERROR = {"$ref": "#/components/schemas/Error"}
#: Any JSON object.
ANY = {"type": "object"}
#: A JSON array of objects.
ARRAY = {"type": "array", "items": {"type": "object"}}
#: The ``{run_id}`` path parameter.
RUN_ID = ("run_id", "path", "the run's id")


def operation(
    summary: str,
    responses: dict[int, tuple[str, Any]],
    *,
    body: Any | None = None,
    params: Sequence[tuple[str, str, str]] = (),
    tag: str,
) -> dict[str, Any]:
    """One OpenAPI operation: ``responses`` maps a status to (description, schema or None,
    or ``"sse"`` for an event stream); ``params`` are (name, ``path`` or ``query``,
    description); ``tag`` groups it (benchkit's, or the tool's name)."""
    found: dict[str, Any] = {"summary": summary, "tags": [tag], "responses": {}}
    if params:
        found["parameters"] = [
            {
                "name": name,
                "in": where,
                "required": where == "path",
                "schema": {"type": "string"},
                "description": text,
            }
            for name, where, text in params
        ]
    if body is not None:
        found["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": body}},
        }
    for status, (text, schema) in responses.items():
        entry: dict[str, Any] = {"description": text}
        if schema is not None:
            kind = "text/event-stream" if schema == "sse" else "application/json"
            entry["content"] = {kind: {"schema": {"type": "string"} if schema == "sse" else schema}}
        found["responses"][str(status)] = entry
    return found
