"""Rate limits for one endpoint: requests/minute and tokens/minute buckets, a concurrency cap.

anyio primitives belong to the event loop that first uses them, while a client may be
used from several loops over its life (``benchkit.run`` inside Jupyter runs on a fresh loop
in a thread). So the loop-bound state is created lazily per loop; the limits themselves
are plain numbers.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import attrs

from benchkit.errors import ConfigError

_log = logging.getLogger("benchkit.llm")

__all__ = ["RateLimiter", "RateLimits"]


def _positive_or_none(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, (int, float)) or value <= 0):
        raise ConfigError(
            f"{attribute.name} must be a positive number or None, got {value!r}",
            fix=f"set {attribute.name} to e.g. 60, or None for no limit.",
        )


@attrs.frozen
class RateLimits:
    """The limits of an endpoint. None means unlimited.

    Each per-minute limit is a token bucket that refills continuously at ``limit/60`` per
    second and holds at most ``burst_seconds`` worth of refill (at least one request), so
    a limit of 600 requests/minute lets 10 requests start at once and then 10 per second.

        >>> RateLimits(requests_per_minute=600, max_concurrency=8).requests_per_minute
        600
    """

    requests_per_minute: float | None = attrs.field(default=None, validator=_positive_or_none)
    tokens_per_minute: float | None = attrs.field(default=None, validator=_positive_or_none)
    max_concurrency: int | None = attrs.field(default=16, validator=_positive_or_none)
    burst_seconds: float = attrs.field(default=1.0, validator=_positive_or_none)


class _Bucket:
    """A token bucket; ``take`` waits until ``amount`` tokens are there (FIFO via a lock)."""

    def __init__(self, per_minute: float, burst_seconds: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_seconds)
        self.tokens = self.capacity
        self.updated = time.monotonic()
        self.lock = anyio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    async def take(self, amount: float) -> None:
        # A request larger than the bucket waits for a full bucket and overdraws it, so it
        # still goes through and the debt slows the requests after it.
        need = min(amount, self.capacity)
        async with self.lock:
            while True:
                self._refill()
                if self.tokens >= need:
                    self.tokens -= amount
                    return
                wait = (need - self.tokens) / self.rate
                _log.info("rate limit: waiting %.2fs (%g per minute)", wait, self.rate * 60)
                await anyio.sleep(wait)

    def adjust(self, delta: float) -> None:
        """Correct an estimate afterwards: positive ``delta`` takes more, negative gives back."""
        self._refill()
        self.tokens = min(self.capacity, self.tokens - delta)


class _LoopState:
    def __init__(self, limits: RateLimits) -> None:
        self.requests = (
            _Bucket(limits.requests_per_minute, limits.burst_seconds)
            if limits.requests_per_minute
            else None
        )
        self.tokens = (
            _Bucket(limits.tokens_per_minute, limits.burst_seconds)
            if limits.tokens_per_minute
            else None
        )
        self.slots = (
            anyio.CapacityLimiter(limits.max_concurrency) if limits.max_concurrency else None
        )


class RateLimiter:
    """Applies :class:`RateLimits`; share one instance between clients of one endpoint.

    ``async with limiter.slot(estimated_tokens) as settle:`` waits for a concurrency slot,
    a request token and the estimated tokens; call ``settle(actual_tokens)`` once the reply
    says how many tokens were really used, so the token bucket is corrected.
    """

    def __init__(self, limits: RateLimits | None = None) -> None:
        self.limits = limits or RateLimits()
        self._token: object | None = None
        self._state: _LoopState | None = None

    def __repr__(self) -> str:
        return f"RateLimiter({self.limits!r})"

    def _current(self) -> _LoopState:
        token = anyio.lowlevel.current_token()
        if self._state is None or self._token != token:
            self._state = _LoopState(self.limits)
            self._token = token
        return self._state

    @asynccontextmanager
    async def slot(self, estimated_tokens: int = 0) -> AsyncIterator[_Settle]:
        state = self._current()
        settle = _Settle(state, estimated_tokens)
        if state.slots is None:
            await self._admit(state, estimated_tokens)
            yield settle
            return
        async with state.slots:
            await self._admit(state, estimated_tokens)
            yield settle

    @staticmethod
    async def _admit(state: _LoopState, estimated_tokens: int) -> None:
        if state.requests is not None:
            await state.requests.take(1)
        if state.tokens is not None and estimated_tokens > 0:
            await state.tokens.take(estimated_tokens)


class _Settle:
    def __init__(self, state: _LoopState, estimated: int) -> None:
        self._state = state
        self._estimated = estimated

    def __call__(self, actual_tokens: int) -> None:
        if self._state.tokens is not None and not math.isclose(actual_tokens, self._estimated):
            self._state.tokens.adjust(actual_tokens - self._estimated)
            self._estimated = actual_tokens
