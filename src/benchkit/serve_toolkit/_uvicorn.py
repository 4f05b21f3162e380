"""uvicorn as the server runs it: with a deadline on reading a request's headers.

uvicorn (0.54) has no header-read timeout: ``timeout_keep_alive`` only closes a connection
that is idle *between* requests, and any byte received cancels it. A client that connects
and sends nothing, or sends its headers one byte at a time, holds the connection for as
long as it likes. :class:`HeaderTimeoutH11Protocol` arms a timer when a connection opens
and whenever a new request may begin, and closes the connection when the request's
headers are not complete in time; the timer is disarmed once they are (a body's own
deadline is :data:`benchkit.serve_toolkit._http.BODY_TIMEOUT`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEADER_TIMEOUT", "HeaderTimeoutH11Protocol", "uvicorn_config"]

#: Seconds a client has to send a request's headers, from the connection (or the end of
#: its previous response) on.
HEADER_TIMEOUT = 10.0


class HeaderTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's headers."""

    header_timeout = HEADER_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _watch(self) -> None:
        """Armed while the connection waits for a request's headers, else disarmed."""
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._arm()
        else:
            self._disarm()

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._expired)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expired(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def uvicorn_config(app: Any, *, header_timeout: float = HEADER_TIMEOUT, **options: Any) -> Any:
    """A :class:`uvicorn.Config` for ``app`` with the header deadline (``options`` are
    uvicorn's own, e.g. ``log_level``)."""
    protocol = type(
        "HeaderTimeoutH11Protocol", (HeaderTimeoutH11Protocol,), {"header_timeout": header_timeout}
    )
    return uvicorn.Config(app, http=protocol, **options)
