"""Where results go as cells finish.

:class:`JsonlSink` appends one JSON line per finished cell (flushed at once, so a crash
loses nothing that finished) and writes the final :class:`~benchkit.results.RunResult`
beside it. :func:`read_jsonl` reads such a file back.
"""

from __future__ import annotations

from benchkit.store._jsonl import JsonlSink, read_jsonl

__all__ = ["JsonlSink", "read_jsonl"]
