"""The ``traced`` provider: any provider, with the spans its system exported during each cell.

It starts an :class:`~benchkit.traces.OtlpReceiver` on 127.0.0.1 for the run, gives every
cell a :class:`~benchkit.traces.CellTrace` (the subprocess provider passes it on as the
standard ``OTEL_EXPORTER_OTLP_*`` variables, the HTTP provider as ``traceparent`` and
``X-Benchkit-*`` headers), runs the wrapped provider, and puts the spans that arrived in
the response's ``metadata["spans"]`` (for the span scorers) and the cell's transcript (one
``span`` event each: the explorer's span tree).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.to_thread
import attrs

from benchkit import _limits, _threads, transcript
from benchkit._public import public
from benchkit._reentrant import Reentrant
from benchkit.errors import ConfigError, InvocationError
from benchkit.model import Provider, ProviderSpec, Request, Response
from benchkit.protocols import ResponseCache
from benchkit.traces._receiver import OtlpReceiver
from benchkit.traces._scope import _CELL, CellTrace
from benchkit.traces._span import KEY, Span

if TYPE_CHECKING:
    from benchkit.registry import Registries

__all__ = ["TracedProvider"]

#: How often the cell's spans are looked at while waiting for late ones (seconds).
_POLL = 0.02


@public("benchkit.traces")
class TracedProvider(Reentrant):
    """Runs ``provider`` — a ready provider, or a spec ``{type: subprocess, ...}`` — with
    an OTLP/HTTP receiver for its spans.

    ``port`` is the receiver's (0, the default: a free one; give 4318, OTLP/HTTP's usual
    port, for an agent server started before the run with a fixed endpoint). ``wait``:
    how long to wait after a call for spans still on their way (seconds; None: 0 for a
    ``subprocess`` system, whose spans are all in once it has exited, else 2), ending
    early once the spans form whole trees under the cell's span.

        >>> traced = TracedProvider(provider={"type": "subprocess", "command": "python3 agent.py"})  # doctest: +SKIP

    .. versionadded:: 0.2.0
    """

    def __init__(
        self,
        *,
        provider: Mapping[str, Any] | Provider,
        port: int = 0,
        wait: float | None = None,
        registries: Registries | None = None,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
    ) -> None:
        problem = _limits.out_of_bounds(port, 0, 65_535, integer=True)
        if problem is not None:
            raise ConfigError(f"port {problem}", fix="give a TCP port, or 0 for a free one.")
        if wait is not None:
            problem = _limits.out_of_bounds(wait, 0, _limits.MAX_WAIT_S)
            if problem is not None:
                raise ConfigError(f"wait {problem}", fix="give seconds (docs/limits.md).")
        self.inner = _build(provider, registries, base_dir, response_cache)
        kind = type(self.inner).__name__
        self.wait = (
            float(wait) if wait is not None else (0.0 if kind == "SubprocessProvider" else 2.0)
        )
        self.receiver = OtlpReceiver(port=int(port))
        self._entered: Any = None

    def __repr__(self) -> str:
        return f"TracedProvider({self.inner!r})"

    @property
    def versions(self) -> dict[str, str]:
        versions = getattr(self.inner, "versions", None)
        return dict(versions) if isinstance(versions, Mapping) else {}

    async def _first_enter(self) -> None:
        """Start the receiver (and enter the wrapped provider, when it keeps a session)."""
        await anyio.to_thread.run_sync(self.receiver.start)
        enter = getattr(self.inner, "__aenter__", None)
        if enter is not None and getattr(self.inner, "__aexit__", None) is not None:
            try:
                await enter()
            except BaseException:
                self.receiver.stop()
                raise
            self._entered = self.inner

    async def _last_exit(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        entered, self._entered = self._entered, None
        try:
            if entered is not None:
                await entered.__aexit__(exc_type, exc, tb)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.receiver.stop)

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()

    async def invoke(self, request: Request) -> Response:
        if not self.entered:  # not entered: a receiver for this call alone
            async with self:
                return await self._invoke(request)
        return await self._invoke(request)

    async def _invoke(self, request: Request) -> Response:
        cell = self.receiver.open_cell()
        token = _CELL.set(cell)
        try:
            try:
                response = await self._call(request)
            except InvocationError as exc:
                spans, dropped = await self._collect(cell)
                partial = exc.response if isinstance(exc.response, Response) else Response()
                exc.response = _with_spans(partial, spans, dropped)
                raise
            except BaseException:
                with anyio.CancelScope(shield=True):
                    spans, _ = await self._collect(cell, wait=False)
                raise
            spans, dropped = await self._collect(cell)
            return _with_spans(response, spans, dropped)
        finally:
            _CELL.reset(token)

    async def _call(self, request: Request) -> Response:
        invoke: Any = self.inner.invoke
        if inspect.iscoroutinefunction(invoke):
            return cast(Response, await invoke(request))
        result = await _threads.run_sync(invoke, request)  # a plain def: a worker thread
        if inspect.isawaitable(result):
            result = await result
        return cast(Response, result)

    async def _collect(self, cell: CellTrace, *, wait: bool = True) -> tuple[list[Span], int]:
        """Wait (up to ``wait`` seconds) for the cell's spans to form whole trees, then
        take them, recording each in the transcript."""
        deadline = anyio.current_time() + (self.wait if wait else 0.0)
        while anyio.current_time() < deadline:
            quiet, whole = self.receiver.snapshot(cell)
            if whole and quiet >= 2 * _POLL:
                break
            await anyio.sleep(min(_POLL, max(0.0, deadline - anyio.current_time())))
        spans, dropped = self.receiver.close_cell(cell)
        for span in spans:
            transcript.record(
                "span",
                f"{span.name}{' (error)' if span.is_error else ''}",
                span.to_dict(),
                duration=span.duration_ms / 1000.0,
            )
        if dropped:
            transcript.record(
                "note", f"{dropped} more span(s) not kept (at most {_limits.MAX_SPANS})"
            )
        return spans, dropped


def _with_spans(response: Response, spans: list[Span], dropped: int) -> Response:
    metadata = {**response.metadata, KEY: [s.to_dict() for s in spans]}
    if dropped:
        metadata["spans_dropped"] = dropped
    return attrs.evolve(response, metadata=metadata)


def _build(
    provider: Mapping[str, Any] | Provider,
    registries: Registries | None,
    base_dir: Path | None,
    response_cache: ResponseCache | None,
) -> Provider:
    if isinstance(provider, ProviderSpec):
        provider = {"type": provider.type, **provider.options}
    if not isinstance(provider, Mapping):
        if not callable(getattr(provider, "invoke", None)):
            raise ConfigError(
                f"provider {type(provider).__name__} has no invoke() method",
                fix="give a provider, or its spec {type: subprocess, ...}.",
            )
        return provider
    options = dict(provider)
    kind = options.pop("type", None)
    if not isinstance(kind, str) or not kind:
        raise ConfigError(
            "provider needs a `type`", fix="write e.g. provider: {type: subprocess, command: ...}."
        )
    if kind == "traced":
        raise ConfigError("a traced provider inside a traced provider", fix="trace it once.")
    if registries is None:
        from benchkit.registry import default_registries

        registries = default_registries()
    built: Provider = registries.providers.build(
        kind, options, base_dir=base_dir, response_cache=response_cache, registries=registries
    )
    return built
