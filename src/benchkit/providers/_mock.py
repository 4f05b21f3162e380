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

#: ``default`` when none is given: a task that ``outputs`` does not name errors.
_NO_DEFAULT: Any = object()

Handler = Callable[[Request], "Response | Any | Awaitable[Response | Any]"]


@public("benchkit.providers")
class MockProvider:
    """Answers from a handler function or a table, and records every request it saw.

    ``handler(request)`` (sync or async) returns a Response or an output value, or raises.
    Alternatively ``outputs`` maps task ids to outputs; an exception instance as a value is
    raised. ``default`` is the output of every task ``outputs`` does not name (without it,
    such a task's cell errors). ``delay`` sleeps that many seconds first (for timeout and
    concurrency tests). ``outputs``, ``default`` and ``delay`` are plain values, so a mock
    is written in a benchmark file or a server request as well as in Python:
    ``{"type": "mock", "options": {"outputs": {"t1": "42"}, "default": "0"}}``.

        >>> provider = MockProvider(outputs={"t1": "42"}, default="0")

    .. versionchanged:: 0.2.0
       ``default``.
    """

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        outputs: Mapping[str, Any] | None = None,
        default: Any = _NO_DEFAULT,
        delay: float = 0.0,
    ) -> None:
        if handler is None and outputs is None and default is _NO_DEFAULT:
            raise ConfigError(
                "a mock provider needs outputs (task id -> output), a default output, or a handler",
                fix='give its options outputs and/or default, e.g. {"type": "mock", '
                '"options": {"outputs": {"t1": "42"}, "default": "0"}}; from Python, '
                "MockProvider(outputs={...}) or MockProvider(lambda request: ...).",
            )
        if outputs is not None and not isinstance(outputs, Mapping):
            raise ConfigError(
                f"outputs must map task ids to outputs, not {type(outputs).__name__}",
                fix='write outputs as a mapping: {"t1": "42", "t2": "7"}.',
            )
        problem = out_of_bounds(delay, 0, MAX_WAIT_S)
        if problem is not None:
            raise ConfigError(
                f"delay {problem}",
                fix=f"give delay a number of seconds from 0 to {MAX_WAIT_S:,} (docs/limits.md).",
            )
        self.handler = handler
        self.outputs = dict(outputs or {})
        # a flag, not the sentinel: a pickled mock (a worker process's) keeps its meaning
        self.has_default = default is not _NO_DEFAULT
        self.default = default if self.has_default else None
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
                    if self.has_default:
                        return Response(output=self.default)
                    raise InvocationError(
                        f"MockProvider has no output for task {request.task.id!r}",
                        retryable=False,
                    ) from None
                if isinstance(result, BaseException):
                    raise result
        finally:
            self.active -= 1
        return result if isinstance(result, Response) else Response(output=result)
