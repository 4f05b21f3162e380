"""An in-memory provider for tests, in the spirit of httpx's MockTransport."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from benchkit._limits import MAX_WAIT_S, out_of_bounds
from benchkit._public import public
from benchkit.errors import ConfigError, InvocationError
from benchkit.model import Request, Response

__all__ = ["MockProvider"]

Handler = Callable[[Request], "Response | Any | Awaitable[Response | Any]"]


@public("benchkit.providers")
class MockProvider:
    """Answers from a handler function or a table, and records every request it saw.

    ``handler(request)`` (sync or async) returns a Response or an output value, or raises.
    Alternatively ``outputs`` maps task ids to outputs; an exception instance as a value is
    raised. ``delay`` sleeps that many seconds first (for timeout and concurrency tests).

        >>> provider = MockProvider(outputs={"t1": "42"})
    """

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        outputs: Mapping[str, Any] | None = None,
        delay: float = 0.0,
    ) -> None:
        if handler is None and outputs is None:
            raise ConfigError(
                "MockProvider needs a handler or an outputs mapping",
                fix="write MockProvider(lambda request: ...) or MockProvider(outputs={...}).",
            )
        problem = out_of_bounds(delay, 0, MAX_WAIT_S)
        if problem is not None:
            raise ConfigError(
                f"delay {problem}",
                fix=f"give delay a number of seconds from 0 to {MAX_WAIT_S:,} (docs/limits.md).",
            )
        self.handler = handler
        self.outputs = dict(outputs or {})
        self.delay = delay
        self.requests: list[Request] = []
        self.active = 0
        self.max_active = 0

    async def invoke(self, request: Request) -> Response:
        self.requests.append(request)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            if self.delay:
                await anyio.sleep(self.delay)
            if self.handler is not None:
                result = self.handler(request)
                if isinstance(result, Awaitable):
                    result = await result
            else:
                try:
                    result = self.outputs[request.task.id]
                except KeyError:
                    raise InvocationError(
                        f"MockProvider has no output for task {request.task.id!r}",
                        retryable=False,
                    ) from None
                if isinstance(result, BaseException):
                    raise result
        finally:
            self.active -= 1
        return result if isinstance(result, Response) else Response(output=result)
