"""A re-entrant async context manager: the first entry opens, the matching last exit closes.

Providers that keep a session for a whole run (an MCP server's connection, an agent's MCP
tool servers, a trace receiver) are entered by the Runner once for the run, and again by
every call made outside a run (``async with provider`` around one cell). Only the
outermost entry opens the session and only its exit closes it; nested entries share it.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["Reentrant"]


class Reentrant:
    """A base counting how deep ``async with`` is nested: :meth:`_first_enter` runs at the first
    entry, :meth:`_last_exit` at the exit that leaves the last one.

    A :meth:`_first_enter` that raises leaves the depth at 0 (it must undo what it did), so the
    next entry opens again.
    """

    _depth: int = 0

    @property
    def entered(self) -> bool:
        """Whether some ``async with`` holds the session open."""
        return self._depth > 0

    async def _first_enter(self) -> None:
        """Open what the outermost entry keeps until its exit (nothing by default)."""

    async def _last_exit(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close what :meth:`_first_enter` opened (the outermost exit's exception is passed on)."""

    async def __aenter__(self) -> Self:
        if self._depth == 0:
            await self._first_enter()
        self._depth += 1
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._depth -= 1
        if self._depth == 0:
            await self._last_exit(exc_type, exc, tb)
