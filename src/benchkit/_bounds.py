"""Bounds on what a call may bring back: reply bodies read up to a cap, texts cut with a mark.

Every HTTP client in benchkit (the LLM client, the ``http`` provider, the HTTP memory
store) reads a reply through :func:`read_capped`, so an endless or huge body is refused
after ``limit`` bytes instead of being buffered whole; :func:`clip` cuts a text that is
to be stored or shown and says how much it left out, and :func:`clip_json` does so for
every string inside a JSON value (the Runner bounds each cell it records with them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

__all__ = ["BodyTooLarge", "clip", "clip_json", "read_capped"]


class BodyTooLarge(Exception):
    """A reply body over its cap; ``seen`` says how that was known."""

    def __init__(self, limit: int, seen: str) -> None:
        super().__init__(f"reply exceeded {limit} bytes ({seen})")
        self.limit = limit
        self.seen = seen


async def read_capped(response: httpx.Response, limit: int, *, keep: bool = False) -> bytes:
    """The body of a streamed ``response``, refused once it passes ``limit`` bytes.

    A ``Content-Length`` over the limit is refused before anything is read. With
    ``keep=True`` a body over the limit is not an error: its first ``limit`` bytes are
    returned (for an error reply, of which only an excerpt is wanted).
    """
    declared = response.headers.get("content-length", "")
    if not keep and declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit, f"Content-Length {declared}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            if keep:
                chunks.append(chunk[: len(chunk) - (size - limit)])
                break
            raise BodyTooLarge(limit, f"{size}+ bytes read")
        chunks.append(chunk)
    return b"".join(chunks)


#: How :func:`clip` marks a cut: the count is of the characters left out.
MARK = "…[truncated {} characters]"


def clip(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters, else its start and a visible mark
    saying how many characters were cut (``"…[truncated N characters]"``)."""
    if len(text) <= limit:
        return text
    return text[:limit] + MARK.format(len(text) - limit)


def clip_json(value: Any, limit: int, depth: int = 0) -> Any:
    """``value`` with every string in it longer than ``limit`` cut by :func:`clip`.

    Returns ``value`` itself when nothing needed cutting (no copy on the common path);
    containers that held a cut string come back as a new dict or list. Nesting deeper than
    100 levels is left as it is.
    """
    kind = type(value)
    if kind is str or isinstance(value, str):
        return value if len(value) <= limit else clip(value, limit)
    if kind in _SCALARS or depth > 100:
        return value
    if kind is dict or isinstance(value, Mapping):
        changed: dict[Any, Any] | None = None
        for key, item in value.items():
            if type(item) in _SCALARS:
                continue
            new = clip_json(item, limit, depth + 1)
            if new is not item:
                if changed is None:
                    changed = dict(value)
                changed[key] = new
        return value if changed is None else changed
    if kind is list or kind is tuple or isinstance(value, (list, tuple)):
        items: list[Any] | None = None
        for i, item in enumerate(value):
            if type(item) in _SCALARS:
                continue
            new = clip_json(item, limit, depth + 1)
            if new is not item:
                if items is None:
                    items = list(value)
                items[i] = new
        return value if items is None else items
    return value


_SCALARS = frozenset({int, float, bool, type(None)})
