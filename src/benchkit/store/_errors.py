"""The errors the run store raises: a store that cannot be used, and a run that is not there."""

from __future__ import annotations

from benchkit.errors import BenchkitError

__all__ = ["RunNotFoundError", "StoreError"]


class StoreError(BenchkitError, RuntimeError):
    """The run store cannot be used: damaged, not a benchkit store, written by a newer
    benchkit, not writable, full, or locked by another process for too long.

    benchkit never resets or rewrites a store it cannot read; the message names the file and
    what to do about it.
    """


class RunNotFoundError(BenchkitError, LookupError):
    """No run in the store has this id (or the prefix given matches several runs)."""
