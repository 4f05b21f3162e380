"""The LLM response cache: a re-run of a temperature-0 request costs no call.

A cache maps a key — the SHA-256 of the endpoint, the model, the messages and every
parameter that changes the reply — to the reply's JSON text. The embedded store keeps it
in its own table; :class:`MemoryCache` serves tests and short scripts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from benchkit.protocols import ResponseCache

__all__ = ["MemoryCache", "ResponseCache", "cache_key"]


class MemoryCache:
    """An in-process cache (a dict); counts its hits, for tests and notebooks."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}
        self.hits = 0

    def __repr__(self) -> str:
        return f"MemoryCache({len(self.entries)} entries, {self.hits} hits)"

    def cache_get(self, key: str) -> str | None:
        value = self.entries.get(key)
        if value is not None:
            self.hits += 1
        return value

    def cache_put(self, key: str, value: str) -> None:
        self.entries[key] = value


def cache_key(base_url: str, model: str, body: Mapping[str, Any]) -> str:
    """The cache key of a request: never includes the API key, always the endpoint."""
    material = {"endpoint": base_url.rstrip("/"), "model": model, "request": body}
    text = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
