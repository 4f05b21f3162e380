"""uvicorn as the server runs it: with a deadline on reading a request's headers, on
uvicorn's fastest parts that are installed.

uvicorn (0.54) has no header-read timeout: ``timeout_keep_alive`` only closes a connection
that is idle *between* requests, and any byte received cancels it. A client that connects
and sends nothing, or sends its headers one byte at a time, holds the connection for as
long as it likes. The protocols here arm a timer when a connection opens and whenever a
new request may begin, and close the connection when the request's headers are not
complete in time; the timer is disarmed once they are (a body's own deadline is
:data:`benchkit.serve_toolkit._http.BODY_TIMEOUT`).

With ``httptools`` installed (the ``serve`` extra brings it, with ``uvloop``) requests are
parsed by its C parser (:func:`httptools_protocol`), else by h11
(:class:`HeaderTimeoutH11Protocol`); uvicorn's ``loop="auto"`` picks uvloop when it is
installed. Under 50 clients the C parts halve what uvicorn costs a request (perf/RESULTS.md).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEADER_TIMEOUT", "HeaderTimeoutH11Protocol", "httptools_protocol", "uvicorn_config"]

#: Seconds a client has to send a request's headers, from the connection (or the end of
#: its previous response) on.
HEADER_TIMEOUT = 10.0


class _HeaderDeadline:
    """The deadline both protocols share: a timer armed when a connection opens and while
    it waits for a request's headers, closing the connection when it fires
    (``_still_waiting`` says whether it still waits then). It comes first in a protocol's
    bases, so its ``connection_made`` and ``connection_lost`` wrap the protocol's."""

    header_timeout = HEADER_TIMEOUT
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]  # the protocol's, next in the MRO
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._expired)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expired(self) -> None:
        self._header_timer = None
        if self._still_waiting() and not self.transport.is_closing():
            self.transport.close()

    def _still_waiting(self) -> bool:
        return True


class HeaderTimeoutH11Protocol(_HeaderDeadline, H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's headers."""

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _watch(self) -> None:
        """Armed while the connection waits for a request's headers, else disarmed."""
        if self._still_waiting() and not self.transport.is_closing():
            self._arm()
        else:
            self._disarm()

    def _still_waiting(self) -> bool:
        return self.conn.their_state is h11.IDLE


def httptools_protocol() -> type[Any] | None:
    """uvicorn's httptools protocol with a deadline on each request's headers; None when
    httptools is not installed."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return None

    class HeaderTimeoutHttpToolsProtocol(_HeaderDeadline, HttpToolsProtocol):
        """Armed from the connection (or the end of a response with no request waiting
        behind it) until a request's headers are complete."""

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            waiting = not self.pipeline  # else the next request's headers are in already
            super().on_response_complete()
            if waiting and not self.transport.is_closing():
                self._arm()

    return HeaderTimeoutHttpToolsProtocol


def uvicorn_config(
    app: Any,
    *,
    header_timeout: float = HEADER_TIMEOUT,
    parser: Literal["auto", "h11", "httptools"] = "auto",
    **options: Any,
) -> Any:
    """A :class:`uvicorn.Config` for ``app`` with the header deadline, parsing requests
    with httptools when it is installed (``parser="auto"``), else with h11 (``options``
    are uvicorn's own, e.g. ``log_level``)."""
    base = httptools_protocol() if parser != "h11" else None
    if base is None:
        if parser == "httptools":
            raise ImportError("httptools is not installed")
        base = HeaderTimeoutH11Protocol
    protocol = type(base.__name__, (base,), {"header_timeout": header_timeout})
    return uvicorn.Config(app, http=protocol, **options)
