"""Rate limits for one endpoint: requests/minute and tokens/minute paces, a concurrency cap.

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


def _not_negative(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(
            f"{attribute.name} must be a number >= 0, got {value!r}",
            fix=f"set {attribute.name} to 0 (an even pace) or a few seconds of allowance.",
        )


def _fraction(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ConfigError(
            f"{attribute.name} must be a fraction in [0, 1), got {value!r}",
            fix=f"set {attribute.name} to e.g. 0.02 (pace 2 % under the limit).",
        )


@attrs.frozen
class RateLimits:
    """The limits of an endpoint. None means unlimited.

    Each per-minute limit paces its starts evenly, ``headroom`` (a fraction) under the
    limit: 600 requests/minute with the default 2 % starts a request every 0.102 s, from the
    first request on, so no one-second window ever sees more than 10 — providers enforce a
    per-minute limit over shorter windows, a client that spends a minute's (or a second's)
    allowance at once draws 429s, and the headroom absorbs the network's jitter (here up to
    20 ms a second) between the client's starts and the server's arrivals.
    ``burst_seconds`` is how far ahead of that even pace a client that was quiet may run
    (0, the default: never); the allowance comes only from time left unused, never at start.

        >>> RateLimits(requests_per_minute=600, max_concurrency=8).requests_per_minute
        600
    """

    requests_per_minute: float | None = attrs.field(default=None, validator=_positive_or_none)
    tokens_per_minute: float | None = attrs.field(default=None, validator=_positive_or_none)
    max_concurrency: int | None = attrs.field(default=16, validator=_positive_or_none)
    burst_seconds: float = attrs.field(default=0.0, validator=_not_negative)
    headroom: float = attrs.field(default=0.02, validator=_fraction)


#: The pacer's clock and wait, module attributes so a test can drive them.
_clock = time.monotonic
_sleep = anyio.sleep


class _Pacer:
    """An even pace of ``per_minute`` units less ``headroom`` (a generic cell rate algorithm).

    ``due`` is when the pace lets the next unit start. ``take(amount)`` waits until
    ``due - tolerance``, then moves ``due`` on by ``amount`` units' worth of time from the
    later of ``due`` and now: a quiet spell banks at most ``tolerance`` seconds, and the
    start banks nothing (``due`` starts ``tolerance`` ahead). With no tolerance, starts are
    at least one interval apart as the clock reads them after each wait — a late wake-up
    is not made up by starting the next one early, so no window of the server's sees a
    catch-up burst. FIFO via a lock. A request larger than the tolerance still goes when
    due, and its debt delays the ones after it.
    """

    def __init__(self, per_minute: float, tolerance: float, headroom: float) -> None:
        self.interval = 60.0 / (per_minute * (1.0 - headroom))
        self.tolerance = tolerance
        self.due: float | None = None
        self.lock = anyio.Lock()

    async def take(self, amount: float) -> None:
        async with self.lock:
            now = _clock()
            if self.due is None:
                self.due = now + self.tolerance  # the start banks nothing
            if self.due - self.tolerance > now:
                wait = self.due - self.tolerance - now
                _log.info("rate limit: waiting %.2fs", wait)
                await _sleep(wait)
                now = _clock()
            self.due = max(self.due, now) + amount * self.interval

    def adjust(self, delta: float) -> None:
        """Correct an estimate afterwards: positive ``delta`` takes more, negative gives back."""
        if self.due is not None:
            self.due += delta * self.interval


class _LoopState:
    def __init__(self, limits: RateLimits) -> None:
        self.requests = (
            _Pacer(limits.requests_per_minute, limits.burst_seconds, limits.headroom)
            if limits.requests_per_minute
            else None
        )
        self.tokens = (
            _Pacer(limits.tokens_per_minute, limits.burst_seconds, limits.headroom)
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
