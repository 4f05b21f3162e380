"""Read YAML / JSON documents and remember where every value came from.

Every format loader starts here. :func:`read_document` parses a file into plain Python
data (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``) and keeps enough
of the source to answer "which line and column holds ``$.tasks[3].timeout``?" — so that a
loader can raise a :class:`~benchkit.errors.FormatError` that points at the offending
node. JSON Schema validation of a document (:func:`benchkit._jsonschema.validate`) turns
the most relevant violation into such an error, with a concrete fix.

    >>> doc = parse_document('{"tasks": [{"id": 1}]}', path="b.json", kind="json")
    >>> doc.locate(("tasks", 0, "id"))
    (1, 19)
    >>> print(doc.error("expected a string", ("tasks", 0, "id"), fix="quote it"))
    b.json:1:19: $.tasks[0].id: expected a string Fix: quote it

Conventions:

* Lines and columns are **1-based**; a column counts characters (a tab is one column),
  the same as Python's ``json`` module reports.
* JSON paths are tuples of mapping keys (``str``) and list indexes (``int``), rendered by
  :func:`render_path` as ``$.tasks[3].evaluators[0].type``.
* YAML is YAML 1.2 (``yes``/``no``/``on`` are strings). Timestamps stay strings, so a
  document means the same as its JSON twin. Mapping keys must be strings; duplicate keys
  are an error in both YAML and JSON (where ``json`` would silently keep the last one).

``ruamel.yaml`` is imported on first use, keeping ``import benchkit`` fast.

The parsers are :mod:`._json_source` and :mod:`._yaml_source`; the shared
:class:`Document` type is :mod:`._document`. This module reads files and dispatches.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from benchkit._jsonschema import JsonPath, render_path
from benchkit._limits import MAX_ALIAS_CHARS, MAX_ALIAS_VALUES, MAX_DEPTH
from benchkit.errors import FormatError
from benchkit.formats._document import Document, Kind
from benchkit.formats._json_source import parse_json

# The YAML reader's parts, where tests reach them (they compare the C and pure parsers).
from benchkit.formats._yaml_source import _c_events as _c_events
from benchkit.formats._yaml_source import _pure_events as _pure_events
from benchkit.formats._yaml_source import _yaml_tools as _yaml_tools
from benchkit.formats._yaml_source import _YamlBuilder as _YamlBuilder
from benchkit.formats._yaml_source import _YamlLocator as _YamlLocator
from benchkit.formats._yaml_source import parse_yaml

__all__ = [
    "MAX_ALIAS_CHARS",
    "MAX_ALIAS_VALUES",
    "MAX_DEPTH",
    "Document",
    "JsonPath",
    "decode",
    "open_regular",
    "parse_document",
    "read_document",
    "read_regular",
    "render_path",
    "unique_ids",
]

_JSON_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson"})


# --------------------------------------------------------------------------- reading


def read_document(path: str | os.PathLike[str], *, kind: Kind | None = None) -> Document:
    """Parse a YAML or JSON file into a :class:`Document`.

    ``kind`` defaults from the suffix: ``.json`` (and ``.jsonl`` / ``.ndjson``) are JSON,
    everything else is YAML. A missing file, undecodable bytes or a syntax error raise
    :class:`FormatError` with the file, line and column and a fix.
    """
    p = Path(path)
    try:
        raw = read_regular(p)
    except FileNotFoundError:
        raise FormatError(
            "file not found", file=p, fix="check the path (relative paths start at the cwd)."
        ) from None
    except IsADirectoryError:
        raise FormatError(
            "expected a file, found a directory", file=p, fix="pass the benchmark file."
        ) from None
    except OSError as exc:
        raise FormatError(f"cannot read the file: {exc.strerror}", file=p) from exc
    text = decode(raw, p)
    if kind is None:
        kind = "json" if p.suffix.lower() in _JSON_SUFFIXES else "yaml"
    return parse_document(text, path=p, kind=kind)


def open_regular(path: Path) -> BinaryIO:
    """The regular file ``path``, opened for reading in binary. Anything else is refused
    without blocking: a directory is :class:`IsADirectoryError`, and a FIFO, socket or
    device (whose read could wait forever) a :class:`FormatError`; a missing or unreadable
    file is the :class:`OSError` of opening it, as ``open`` raises it."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(mode):
            raise FormatError(
                "not a regular file (a FIFO, socket or device)",
                file=path,
                fix="point at a file; benchkit does not read pipes or devices.",
            )
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    return handle


def read_regular(path: Path) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_regular`)."""
    with open_regular(path) as handle:
        return handle.read()


def decode(raw: bytes, path: str | os.PathLike[str], *, first_line: int = 1) -> str:
    """UTF-8 text of ``raw`` (a leading BOM dropped); FormatError at the first bad byte."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = first_line + raw.count(b"\n", 0, exc.start)
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise FormatError(
            f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
            file=Path(path),
            line=line,
            column=column,
            fix="save the file as UTF-8.",
        ) from None


def parse_document(
    text: str, *, path: str | os.PathLike[str], kind: Kind, first_line: int = 1
) -> Document:
    """Parse ``text`` as ``kind``. ``first_line`` is the line ``text`` starts on in ``path``
    (for one line of a JSONL file), so reported positions are those of the real file."""
    p = Path(path)
    doc = parse_json(text, p, first_line) if kind == "json" else parse_yaml(text, p, first_line)
    if _SURROGATE_ESCAPE.search(text):  # only an escape can make a lone surrogate
        where = _lone_surrogate(doc.data)
        if where is not None:
            raise doc.error(
                "a string holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), "
                "which no UTF-8 file or report can hold",
                where[0],
                key=where[1],
                fix="escape a whole character (a surrogate pair), or remove the escape.",
            )
    return doc


_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F]")


def _lone_surrogate(data: Any) -> tuple[JsonPath, bool] | None:
    """The path of the first string (value, or key when the flag is set) that cannot be
    encoded as UTF-8, or None."""
    stack: list[tuple[Any, JsonPath]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return path, False
        elif isinstance(value, dict):
            for key, item in value.items():
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return (*path, key), True
                stack.append((item, (*path, key)))
        elif isinstance(value, list):
            stack.extend((item, (*path, i)) for i, item in enumerate(value))
    return None


def unique_ids(
    doc: Document, items: Sequence[Any], *, at: JsonPath = ("tasks",), field: str = "id"
) -> None:
    """Raise a FormatError at the first item whose ``field`` repeats an earlier item's,
    naming where the id was first used. Items are mappings that passed the schema."""
    seen: dict[Any, int] = {}
    for index, item in enumerate(items):
        ident = item[field]
        if ident in seen:
            first = render_path((*at, seen[ident]))
            raise doc.error(
                f"duplicate task id {ident!r} (first used at {first})",
                (*at, index, field),
                fix="give every task a unique id.",
            )
        seen[ident] = index
