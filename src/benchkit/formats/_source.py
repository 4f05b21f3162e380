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
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from benchkit._jsonschema import JsonPath, render_path
from benchkit.errors import FormatError

__all__ = [
    "Document",
    "JsonPath",
    "decode",
    "parse_document",
    "read_document",
    "render_path",
    "unique_ids",
]

Kind = Literal["yaml", "json"]
Position = tuple[int, int]

_JSON_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson"})


class Document:
    """A parsed document: plain ``data`` plus a way to find where each value sits.

    ``path`` is the file the document came from, ``kind`` is ``"yaml"`` or ``"json"``.
    Build one with :func:`read_document` or :func:`parse_document`.
    """

    __slots__ = ("_locator", "data", "kind", "path")

    def __init__(self, path: Path, data: Any, kind: Kind, locator: _Locator) -> None:
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


# --------------------------------------------------------------------------- reading


def read_document(path: str | os.PathLike[str], *, kind: Kind | None = None) -> Document:
    """Parse a YAML or JSON file into a :class:`Document`.

    ``kind`` defaults from the suffix: ``.json`` (and ``.jsonl`` / ``.ndjson``) are JSON,
    everything else is YAML. A missing file, undecodable bytes or a syntax error raise
    :class:`FormatError` with the file, line and column and a fix.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
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
    if kind == "json":
        return _parse_json(text, p, first_line)
    return _parse_yaml(text, p, first_line)


class _Locator(Protocol):
    def locate(self, path: JsonPath, key: bool) -> Position | None: ...


# --------------------------------------------------------------------------- JSON

_WS = re.compile(r"[ \t\n\r]*")


class _DuplicateKeyError(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKeyError(k)
        out[k] = v
    return out


_JSON_FIXES = (
    ("Expecting property name", 'remove the trailing comma, and quote keys with "double"'),
    ("Expecting ',' delimiter", "add the missing comma between items"),
    ("Expecting ':' delimiter", "put a ':' between the key and its value"),
    ("Expecting value", "remove the trailing comma or give the missing value"),
    ("Extra data", "a JSON file holds one value; wrap several in a list"),
    ("Unterminated string", "close the string with a double quote"),
    ("Invalid control character", "escape control characters inside strings (\\n, \\t)"),
)


def _parse_json(text: str, path: Path, first_line: int) -> Document:
    try:
        data = json.loads(text, object_pairs_hook=_unique_pairs)
    except json.JSONDecodeError as exc:
        fix = next((f for prefix, f in _JSON_FIXES if exc.msg.startswith(prefix)), None)
        raise FormatError(
            f"invalid JSON: {exc.msg}",
            file=path,
            line=first_line + exc.lineno - 1,
            column=exc.colno,
            fix=(fix or "fix the JSON syntax") + " at this position.",
        ) from None
    except _DuplicateKeyError as exc:
        found = _find_duplicate_key(text)
        locator = _JsonLocator(text, first_line)
        line, column = locator.position(found[0]) if found else (None, None)
        raise FormatError(
            f"duplicate key {exc.key!r}",
            file=path,
            line=line,
            column=column,
            json_path=render_path(found[1]) if found else None,
            fix="keep one of the two entries (JSON readers disagree on which one wins).",
        ) from None
    except RecursionError:
        raise FormatError("the JSON nests too deeply", file=path) from None
    return Document(path, data, "json", _JsonLocator(text, first_line))


class _JsonLocator:
    """Finds values by walking the JSON text, skipping siblings with the C decoder."""

    __slots__ = ("_first_line", "_text")

    def __init__(self, text: str, first_line: int) -> None:
        self._text = text
        self._first_line = first_line

    def position(self, offset: int) -> Position:
        line = self._first_line + self._text.count("\n", 0, offset)
        column = offset - (self._text.rfind("\n", 0, offset) + 1) + 1
        return line, column

    def locate(self, path: JsonPath, key: bool) -> Position | None:
        offset = self._offset(path, key)
        return None if offset is None else self.position(offset)

    def _offset(self, path: JsonPath, key: bool) -> int | None:
        text = self._text
        decode = _json_decoder().raw_decode
        i = _skip_ws(text, 0)
        if i >= len(text):
            return None
        for depth, step in enumerate(path):
            last = depth == len(path) - 1
            opener = text[i]
            found: int | None = None
            if opener == "{" and isinstance(step, str):
                j = _skip_ws(text, i + 1)
                while j < len(text) and text[j] == '"':
                    name, end = decode(text, j)
                    value = _skip_ws(text, _skip_ws(text, end) + 1)
                    if name == step:
                        found = j if (last and key) else value
                        break
                    j = _next_item(text, decode(text, value)[1])
            elif opener == "[" and isinstance(step, int):
                j = _skip_ws(text, i + 1)
                index = 0
                while j < len(text) and text[j] != "]":
                    if index == step:
                        found = j
                        break
                    j = _next_item(text, decode(text, j)[1])
                    index += 1
            if found is None:
                return i
            i = found
        return i


def _skip_ws(text: str, i: int) -> int:
    match = _WS.match(text, i)
    return match.end() if match else i


def _next_item(text: str, end: int) -> int:
    """After a value ending at ``end``: the start of the next item, or of the closer."""
    j = _skip_ws(text, end)
    if j < len(text) and text[j] == ",":
        j = _skip_ws(text, j + 1)
    return j


@functools.cache
def _json_decoder() -> json.JSONDecoder:
    return json.JSONDecoder()


def _find_duplicate_key(text: str) -> tuple[int, JsonPath] | None:
    """Offset and path of the first repeated key in (valid) JSON ``text``."""
    decode = _json_decoder().raw_decode

    def walk(i: int, path: JsonPath) -> tuple[int, tuple[int, JsonPath] | None]:
        opener = text[i]
        if opener == "{":
            seen: set[str] = set()
            j = _skip_ws(text, i + 1)
            while text[j] == '"':
                name, end = decode(text, j)
                if name in seen:
                    return j, (j, (*path, name))
                seen.add(name)
                end, hit = walk(_skip_ws(text, _skip_ws(text, end) + 1), (*path, name))
                if hit:
                    return end, hit
                j = _next_item(text, end)
            return j + 1, None
        if opener == "[":
            j = _skip_ws(text, i + 1)
            index = 0
            while text[j] != "]":
                end, hit = walk(j, (*path, index))
                if hit:
                    return end, hit
                j = _next_item(text, end)
                index += 1
            return j + 1, None
        return decode(text, i)[1], None

    return walk(_skip_ws(text, 0), ())[1]


# --------------------------------------------------------------------------- YAML


def _yaml_fix(problem: str) -> str:
    if "'\\t'" in problem:
        return "indent with spaces; YAML does not allow tabs for indentation."
    if "duplicate key" in problem:
        return "keep one of the two entries."
    if "mapping values are not allowed" in problem:
        return "check the indentation, or quote a value that contains ': '."
    if "another document" in problem:
        return "keep one document per file (remove the extra '---')."
    if "undefined alias" in problem:
        return "define the anchor (&name) before using it (*name)."
    return "fix the YAML syntax at this position (indentation, quoting, brackets)."


@functools.cache
def _yaml_class() -> Any:
    """A round-trip YAML loader whose timestamps stay strings (JSON has no dates)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import RoundTripConstructor

    class _Constructor(RoundTripConstructor):
        pass

    # add_constructor copies the table onto the subclass, leaving ruamel's own untouched.
    _Constructor.add_constructor(
        "tag:yaml.org,2002:timestamp", RoundTripConstructor.construct_yaml_str
    )

    def make() -> Any:
        yaml = YAML(typ="rt", pure=True)
        yaml.Constructor = _Constructor
        return yaml

    return make


def _parse_yaml(text: str, path: Path, first_line: int) -> Document:
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        root = _yaml_class()().load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        context = f" ({exc.context})" if exc.context and exc.problem else ""
        raise FormatError(
            f"invalid YAML: {problem}{context}",
            file=path,
            line=first_line + mark.line if mark is not None else None,
            column=mark.column + 1 if mark is not None else None,
            fix=_yaml_fix(problem),
        ) from None
    except YAMLError as exc:  # e.g. a ReaderError: a character YAML does not allow
        offset = getattr(exc, "position", None)
        line = column = None
        if isinstance(offset, int):
            line = first_line + text.count("\n", 0, offset)
            column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        raise FormatError(
            f"invalid YAML: {str(exc).splitlines()[0]}",
            file=path,
            line=line,
            column=column,
            fix="remove the control character, or write it as an escape in a double-quoted string.",
        ) from None
    except RecursionError:
        raise FormatError("the YAML nests too deeply", file=path) from None
    locator = _YamlLocator(root, first_line)
    data = _plain(root, (), Document(path, None, "yaml", locator), first_line)
    return Document(path, data, "yaml", locator)


def _plain(node: Any, path: JsonPath, doc: Document, first_line: int) -> Any:
    """ruamel's round-trip nodes → builtins (dict, list, str, int, float, bool, None)."""
    from ruamel.yaml.comments import TaggedScalar
    from ruamel.yaml.scalarbool import ScalarBoolean

    if node is None or type(node) in (str, int, float, bool):
        return node
    if isinstance(node, Mapping):
        out: dict[str, Any] = {}
        for k, v in node.items():
            if not isinstance(k, str):
                pos = node.lc.data.get(k) if hasattr(node, "lc") else None
                where = doc.locate(path)
                raise FormatError(
                    f"mapping keys must be strings, got {k!r}",
                    file=doc.path,
                    # the key itself when known (the locator follows string keys only)
                    line=first_line + pos[0] if pos else (where[0] if where else None),
                    column=pos[1] + 1 if pos else (where[1] if where else None),
                    json_path=render_path(path),
                    fix=f"quote the key: '{k}'.",
                )
            out[k] = _plain(v, (*path, k), doc, first_line)
        return out
    if isinstance(node, list):
        return [_plain(v, (*path, i), doc, first_line) for i, v in enumerate(node)]
    if isinstance(node, ScalarBoolean):
        return bool(node)
    if isinstance(node, bool):
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    if isinstance(node, TaggedScalar):
        tag = str(node.tag.value) if node.tag is not None else ""
        if tag in ("tag:yaml.org,2002:str", "!!str"):
            return str(node.value)
        raise doc.error(
            f"unsupported YAML tag {tag}",
            path,
            fix="remove the tag; benchmark files hold plain JSON-like data.",
        )
    raise doc.error(
        f"unsupported YAML value of type {type(node).__name__}",
        path,
        fix="use plain strings, numbers, booleans, lists and mappings.",
    )


class _YamlLocator:
    """Reads the ``.lc`` line/column data ruamel's round-trip loader keeps on each node."""

    __slots__ = ("_first_line", "_root")

    def __init__(self, root: Any, first_line: int) -> None:
        self._root = root
        self._first_line = first_line

    def locate(self, path: JsonPath, key: bool) -> Position | None:
        node = self._root
        lc = getattr(node, "lc", None)
        # a scalar or empty document has no position data: point at its start
        where: tuple[int, int] = (lc.line, lc.col) if lc is not None else (0, 0)
        for depth, step in enumerate(path):
            lc = getattr(node, "lc", None)
            if lc is None:
                break
            try:
                if isinstance(node, Mapping) and isinstance(step, str):
                    if step not in node:
                        break
                    pos = lc.data[step]  # [key line, key col, value line, value col]
                    last = depth == len(path) - 1
                    where = (pos[0], pos[1]) if (key and last) else (pos[2], pos[3])
                    node = node[step]
                elif isinstance(node, list) and isinstance(step, int):
                    if not 0 <= step < len(node):
                        break
                    pos = lc.data[step]
                    where = (pos[0], pos[1])
                    node = node[step]
                else:
                    break
            except (KeyError, IndexError, TypeError):  # merged keys carry no position
                break
        return self._first_line + where[0], where[1] + 1


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
