"""Progress as plain text lines: for CI logs, pipes and notebooks, where a live bar cannot be.

``benchkit.run(suite, progress=True)`` and the CLI (when stderr is not a terminal) use
:class:`ProgressLines`: one line every ``interval`` seconds, and one when the last cell is
done, with done/total, errors, rate and the time left::

    benchkit: 1200/5000 cells (24%), 3 errors, 410.2 cells/s, ETA 0:00:09
"""

from __future__ import annotations

import sys
import time
from typing import Protocol, TextIO


class Progress(Protocol):
    """What a line needs of :class:`benchkit.Progress` (this module sits below the runner)."""

    @property
    def done(self) -> int: ...
    @property
    def total(self) -> int | None: ...
    @property
    def errors(self) -> int: ...
    @property
    def rate(self) -> float: ...
    @property
    def eta(self) -> float | None: ...


__all__ = ["ProgressLines", "format_progress"]


def _clock(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def format_progress(event: Progress) -> str:
    """One line: ``done/total cells (percent), errors, rate, ETA``."""
    if event.total:
        done = f"{event.done}/{event.total} cells ({100 * event.done / event.total:.0f}%)"
    else:
        done = f"{event.done} cells"
    eta = event.eta
    tail = f", ETA {_clock(eta)}" if eta is not None and event.done != event.total else ""
    errors = f"{event.errors} error{'' if event.errors == 1 else 's'}"
    return f"benchkit: {done}, {errors}, {event.rate:.1f} cells/s{tail}"


class ProgressLines:
    """A progress callback that writes a line at most every ``interval`` seconds."""

    def __init__(self, stream: TextIO | None = None, *, interval: float = 5.0) -> None:
        self.stream = stream
        self.interval = interval
        self._next = time.monotonic() + interval

    def __call__(self, event: Progress) -> None:
        now = time.monotonic()
        last = event.total is not None and event.done >= event.total
        if now < self._next and not last:
            return
        self._next = now + self.interval
        stream = self.stream if self.stream is not None else sys.stderr
        stream.write(format_progress(event) + "\n")
        stream.flush()
