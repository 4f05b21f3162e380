"""The parsed document every format loader works on: plain data plus where each value sat.

A :class:`Document` holds what :func:`benchkit.formats._source.parse_document` read — plain
Python data (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``) — and a
locator that answers "which line and column holds ``$.tasks[3].timeout``?", so that a
loader can raise a :class:`~benchkit.errors.FormatError` pointing at the offending node.
The locators themselves live with their parsers (:mod:`._json_source`,
:mod:`._yaml_source`); this module only defines the shared type.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from benchkit._jsonschema import JsonPath, render_path
from benchkit.errors import FormatError

__all__ = ["DEPTH_FIX", "Document", "Kind", "Locator", "Position"]

Kind = Literal["yaml", "json"]
Position = tuple[int, int]

DEPTH_FIX = "flatten the data; benchmark files never need such depth."
"""The fix every "nests deeper than MAX_DEPTH levels" error gives, JSON or YAML."""


class Locator(Protocol):
    """Finds the ``(line, column)`` of the value (or, with ``key``, the key) at a path."""

    def locate(self, path: JsonPath, key: bool) -> Position | None: ...


class Document:
    """A parsed document: plain ``data`` plus a way to find where each value sits.

    ``path`` is the file the document came from, ``kind`` is ``"yaml"`` or ``"json"``.
    Build one with :func:`read_document` or :func:`parse_document`.
    """

    __slots__ = ("_locator", "data", "kind", "path")

    def __init__(self, path: Path, data: Any, kind: Kind, locator: Locator) -> None:
        self.path = path
        self.data = data
        self.kind = kind
        self._locator = locator

    def __repr__(self) -> str:
        return f"<Document {self.kind} {str(self.path)!r}>"

    def locate(self, path: Sequence[str | int] = (), *, key: bool = False) -> Position | None:
        """``(line, column)`` (1-based) of the value at ``path``.

        With ``key=True`` and a path ending in a mapping key, the position of the key
        itself. When the path does not exist (a missing key, an index past the end), the
        position of its nearest existing ancestor. None if nothing is known.
        """
        return self._locator.locate(tuple(path), key)

    def error(
        self,
        message: str,
        path: Sequence[str | int] = (),
        *,
        fix: str | None = None,
        key: bool = False,
    ) -> FormatError:
        """A :class:`FormatError` for the node at ``path``: file, line, column, JSON path."""
        where = self.locate(path, key=key)
        line, column = where if where is not None else (None, None)
        return FormatError(
            message,
            file=self.path,
            line=line,
            column=column,
            json_path=render_path(path),
            fix=fix,
        )
