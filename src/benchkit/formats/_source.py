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
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Literal, Protocol

from benchkit._jsonschema import JsonPath, render_path
from benchkit._limits import MAX_ALIAS_CHARS, MAX_ALIAS_VALUES, MAX_DEPTH
from benchkit.errors import FormatError

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
    doc = _parse_json(text, p, first_line) if kind == "json" else _parse_yaml(text, p, first_line)
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


class _Locator(Protocol):
    def locate(self, path: JsonPath, key: bool) -> Position | None: ...


# --------------------------------------------------------------------------- JSON

_WS = re.compile(r"[ \t\n\r]*")


class _DuplicateKeyError(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


class _ConstantError(Exception):
    def __init__(self, name: str) -> None:
        self.name = name


def _no_constant(name: str) -> Any:
    """``json``'s hook for ``NaN``, ``Infinity`` and ``-Infinity``: not JSON, refused."""
    raise _ConstantError(name)


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
        data = json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_no_constant)
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
        raise _found_error(
            text,
            first_line,
            path,
            _find_duplicate_key(text),
            f"duplicate key {exc.key!r}",
            "keep one of the two entries (JSON readers disagree on which one wins).",
        ) from None
    except _ConstantError as exc:
        raise _found_error(
            text,
            first_line,
            path,
            _find_constant(text),
            f"{exc.name} is not a JSON number (JSON has no NaN or infinities)",
            "write a finite number (or null, or a quoted string).",
        ) from None
    except RecursionError:
        raise FormatError(
            f"the JSON nests deeper than {MAX_DEPTH} levels", file=path, fix=_DEPTH_FIX
        ) from None
    doc = Document(path, data, "json", _JsonLocator(text, first_line))
    deep = _too_deep(data)
    if deep is not None:
        raise doc.error(f"the JSON nests deeper than {MAX_DEPTH} levels", deep, fix=_DEPTH_FIX)
    return doc


_DEPTH_FIX = "flatten the data; benchmark files never need such depth."


def _too_deep(data: Any) -> JsonPath | None:
    """The path of the first list or mapping nested past :data:`MAX_DEPTH`, or None.

    Iterative, containers only (~1 % of a big file's load); the path is worked out only
    when there is one to report.
    """
    stack: list[tuple[Any, int]] = [(data, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        value, depth = pop()
        children = value.values() if type(value) is dict else value if type(value) is list else ()
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                if depth >= MAX_DEPTH:
                    return _path_to(data, child)
                push((child, depth + 1))
    return None


def _path_to(data: Any, target: Any) -> JsonPath:
    """The path from ``data`` to the object ``target`` (by identity)."""
    stack: list[tuple[Any, JsonPath]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if value is target:
            return path
        if isinstance(value, dict):
            stack.extend((v, (*path, k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value))
    return ()


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


def _found_error(
    text: str,
    first_line: int,
    path: Path,
    found: tuple[int, JsonPath] | None,
    message: str,
    fix: str,
) -> FormatError:
    """A FormatError at what a walk over JSON ``text`` found (offset and path), if it did."""
    line, column = _JsonLocator(text, first_line).position(found[0]) if found else (None, None)
    return FormatError(
        message,
        file=path,
        line=line,
        column=column,
        json_path=render_path(found[1]) if found else None,
        fix=fix,
    )


def _find_duplicate_key(text: str) -> tuple[int, JsonPath] | None:
    """Offset and path of the first repeated key in (valid) JSON ``text``."""
    return _find(text, duplicates=True)


_CONSTANTS = ("NaN", "Infinity", "-Infinity")


def _find_constant(text: str) -> tuple[int, JsonPath] | None:
    """Offset and path of the first ``NaN`` / ``Infinity`` / ``-Infinity`` value in JSON
    ``text`` (which ``json`` read without error up to it)."""
    return _find(text, duplicates=False)


def _find(text: str, *, duplicates: bool) -> tuple[int, JsonPath] | None:
    """One walk over JSON ``text`` for the first repeated key (``duplicates``) or else the
    first non-finite constant: its offset and path, or None."""
    decode = _json_decoder().raw_decode

    def walk(i: int, path: JsonPath) -> tuple[int, tuple[int, JsonPath] | None]:
        opener = text[i]
        if opener == "{":
            seen: set[str] = set()
            j = _skip_ws(text, i + 1)
            while text[j] == '"':
                name, end = decode(text, j)
                if duplicates and name in seen:
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
        if not duplicates and text.startswith(_CONSTANTS, i):
            return i, (i, path)
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


_STR = "tag:yaml.org,2002:str"
_MERGE: Any = object()  # a plain `<<` key
_NO_KEY: Any = object()  # a mapping waiting for its next key
_ITEM: Any = object()  # the "key" of a list: its items are appended


@functools.cache
def _yaml_tools() -> tuple[Any, Any, dict[str, list[tuple[str, Any]]]]:
    """The C event parser (None without ruamel's libyaml extension), ruamel's round-trip
    constructor (for ints and floats) and the YAML 1.2 resolver table."""
    from ruamel.yaml import YAML
    from ruamel.yaml.resolver import VersionedResolver

    try:
        from ruamel.yaml import cyaml
    except ImportError:  # ruamel.yaml.clibz (the `libyaml` extra) is not installed
        c_parser = None
    else:
        c_parser = cyaml.CParser  # type: ignore[attr-defined]

    rt = YAML(typ="rt", pure=True)
    table = VersionedResolver(version=(1, 2)).versioned_resolver
    return c_parser, rt.constructor, table


def _c_events(text: str) -> Iterator[Any]:
    parser = _yaml_tools()[0](text)
    while parser.check_event():
        yield parser.get_event()


def _pure_events(text: str) -> Iterator[Any]:
    """Events from ruamel's pure-Python parser: a fresh one each time, since one left half
    way through a document (an error) keeps its state and fails the next parse."""
    from ruamel.yaml import YAML

    yield from YAML(typ="safe", pure=True).parse(text)


def _parse_yaml(text: str, path: Path, first_line: int) -> Document:
    """Parse YAML 1.2 straight from parser events into plain data, in one pass.

    The C parser (ruamel's libyaml extension) reads the file when it is installed; when it
    refuses a document, the pure-Python parser reads it again so that syntax errors carry
    ruamel's messages. No node tree is kept: line and column data is rebuilt from the
    events only when an error must be located (see :class:`_YamlLocator`).
    """
    from ruamel.yaml.error import YAMLError

    c_error: YAMLError | None = None
    if _yaml_tools()[0] is not None:
        try:
            data = _YamlBuilder(path, first_line, len(text)).build(_c_events(text))
        except YAMLError as exc:
            c_error = exc
        else:
            return Document(path, data, "yaml", _YamlLocator(text, first_line, _c_events))
    try:
        data = _YamlBuilder(path, first_line, len(text)).build(_pure_events(text))
    except FormatError:
        raise
    except YAMLError as exc:
        raise _yaml_error(exc, text, path, first_line) from None
    except (IndexError, KeyError, AttributeError, TypeError, ValueError) as exc:
        # ruamel's pure-Python parser crashes on some malformed input; libyaml's own
        # complaint (when there is one) still says where the document goes wrong
        if c_error is not None:
            raise _yaml_error(c_error, text, path, first_line) from None
        raise FormatError(
            f"invalid YAML (the parser failed with {type(exc).__name__})",
            file=path,
            fix=_yaml_fix(""),
        ) from None
    return Document(path, data, "yaml", _YamlLocator(text, first_line, _pure_events))


def _yaml_error(exc: Any, text: str, path: Path, first_line: int) -> FormatError:
    """A FormatError at the position a ruamel (or libyaml) parser error marks."""
    from ruamel.yaml.error import MarkedYAMLError

    if isinstance(exc, MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        context = f" ({exc.context})" if exc.context and exc.problem else ""
        return FormatError(
            f"invalid YAML: {problem}{context}",
            file=path,
            line=first_line + mark.line if mark is not None else None,
            column=mark.column + 1 if mark is not None else None,
            fix=_yaml_fix(problem),
        )
    offset = getattr(exc, "position", None)  # e.g. a ReaderError: a character YAML refuses
    line = column = None
    if isinstance(offset, int):
        line = first_line + text.count("\n", 0, offset)
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return FormatError(
        f"invalid YAML: {str(exc).splitlines()[0]}",
        file=path,
        line=line,
        column=column,
        fix="remove the control character, or write it as an escape in a double-quoted string.",
    )


class _Frame:
    """A list or mapping being built: its value, JSON path, size and pending key."""

    __slots__ = ("anchor", "height", "key", "key_mark", "merges", "path", "size", "value")

    def __init__(self, value: Any, path: JsonPath, anchor: str | None) -> None:
        self.value = value
        self.path = path
        self.anchor = anchor
        self.size = 1
        self.height = 1
        self.key: Any = _ITEM if isinstance(value, list) else _NO_KEY
        self.key_mark: Any = None
        self.merges: list[tuple[Any, Any]] = []


class _YamlBuilder:
    """Turns a stream of ruamel parser events into plain data (see :func:`_parse_yaml`).

    Refuses what benchmark files never need and what would hurt later: non-string keys,
    duplicate keys, tags other than the core schema's, more than one document, nesting
    past :data:`MAX_DEPTH` and aliases that add more than :data:`MAX_ALIAS_VALUES` values
    or more than :data:`MAX_ALIAS_CHARS` characters (ten times the document's length when
    that is more).
    """

    def __init__(self, path: Path, first_line: int, length: int = 0) -> None:
        self.path = path
        self.first_line = first_line
        # value, size, height, characters (worked out when an alias first repeats it)
        self.anchors: dict[str, list[Any]] = {}
        self.expanded = 0
        self.expanded_chars = 0
        self.max_chars = max(MAX_ALIAS_CHARS, 10 * length)

    def error(self, message: str, mark: Any, json_path: JsonPath, fix: str) -> FormatError:
        return FormatError(
            message,
            file=self.path,
            line=self.first_line + mark.line,
            column=mark.column + 1,
            json_path=render_path(json_path),
            fix=fix,
        )

    def build(self, events: Iterable[Any]) -> Any:
        from ruamel.yaml import events as ev

        stack: list[_Frame] = []
        documents = 0
        result: Any = None
        for event in events:
            kind = type(event)
            if kind is ev.ScalarEvent:
                if event.tag is None and not event.implicit[0]:  # quoted: a string
                    value = event.value
                else:
                    value = self._scalar(event, stack)
                size, height, anchor = 1, 0, event.anchor
            elif kind is ev.MappingStartEvent or kind is ev.SequenceStartEvent:
                path = self._child_path(stack)
                self._check_collection(event, kind is ev.MappingStartEvent, stack, path)
                container: Any = {} if kind is ev.MappingStartEvent else []
                stack.append(_Frame(container, path, event.anchor))
                continue
            elif kind is ev.MappingEndEvent or kind is ev.SequenceEndEvent:
                frame = stack.pop()
                value = self._merged(frame, event) if frame.merges else frame.value
                size, height, anchor = frame.size, frame.height, frame.anchor
            elif kind is ev.AliasEvent:
                value, size, height = self._alias(event, stack)
                anchor = None
            elif kind is ev.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise self.error(
                        "invalid YAML: expected a single document in the stream "
                        "(but found another document)",
                        event.start_mark,
                        (),
                        "keep one document per file (remove the extra '---').",
                    )
                continue
            else:
                continue
            if anchor is not None:
                self.anchors[anchor] = [value, size, height, None]
            if not stack:
                result = value
                continue
            parent = stack[-1]
            parent.size += size
            if height + 1 > parent.height:
                parent.height = height + 1
            if parent.key is _NO_KEY:
                self._take_key(parent, value, event)
            elif parent.key is _ITEM:
                parent.value.append(value)
            else:
                key, parent.key = parent.key, _NO_KEY
                if key is _MERGE:
                    parent.merges.append((value, parent.key_mark))
                else:
                    parent.value[key] = value
        return result

    def _child_path(self, stack: list[_Frame]) -> JsonPath:
        if not stack:
            return ()
        parent = stack[-1]
        if isinstance(parent.value, list):
            return (*parent.path, len(parent.value))
        if _wants_key(parent) or parent.key is _MERGE:
            return parent.path
        return (*parent.path, parent.key)

    def _check_collection(self, event: Any, mapping: bool, stack: list[_Frame], path: Any) -> None:
        if stack and _wants_key(stack[-1]):
            raise self.error(
                "mapping keys must be strings, got a " + ("mapping" if mapping else "list"),
                event.start_mark,
                path,
                "use a plain string as the key.",
            )
        tag = event.tag
        wanted = "tag:yaml.org,2002:map" if mapping else "tag:yaml.org,2002:seq"
        if tag is not None and tag not in ("!", wanted):
            raise self.error(
                f"unsupported YAML tag {tag}",
                event.start_mark,
                path,
                "remove the tag; benchmark files hold plain JSON-like data.",
            )
        if len(stack) >= MAX_DEPTH:
            raise self.error(
                f"the YAML nests deeper than {MAX_DEPTH} levels",
                event.start_mark,
                path,
                _DEPTH_FIX,
            )

    def _take_key(self, parent: _Frame, key: Any, event: Any) -> None:
        mark = event.start_mark
        if key is not _MERGE and not isinstance(key, str):
            raise self.error(
                f"mapping keys must be strings, got {key!r}",
                mark,
                parent.path,
                f"quote the key: '{key}'.",
            )
        if key is not _MERGE and key in parent.value:
            raise self.error(
                f"invalid YAML: duplicate key {key!r}",
                mark,
                (*parent.path, key),
                "keep one of the two entries.",
            )
        parent.key = key
        parent.key_mark = mark

    def _merged(self, frame: _Frame, event: Any) -> dict[str, Any]:
        """A mapping with its ``<<`` merges: its own keys win, then earlier merges."""
        out: dict[str, Any] = frame.value
        for value, mark in frame.merges:
            sources = value if isinstance(value, list) else [value]
            for source in sources:
                if not isinstance(source, dict):
                    raise self.error(
                        "a '<<' merge takes a mapping or a list of mappings",
                        mark,
                        frame.path,
                        "merge an anchored mapping: '<<: *defaults'.",
                    )
                for key, item in source.items():
                    out.setdefault(key, item)
        return out

    def _alias(self, event: Any, stack: list[_Frame]) -> tuple[Any, int, int]:
        path = self._child_path(stack)
        found = self.anchors.get(event.anchor)
        if found is None:
            raise self.error(
                f"invalid YAML: found undefined alias {event.anchor!r}",
                event.start_mark,
                path,
                _yaml_fix("undefined alias"),
            )
        value, size, height, chars = found
        self.expanded += size
        if self.expanded > MAX_ALIAS_VALUES:
            raise self.error(
                f"aliases expand to more than {MAX_ALIAS_VALUES:,} values",
                event.start_mark,
                path,
                "write the repeated data out, or nest fewer aliases inside each other.",
            )
        if chars is None:
            chars = found[3] = _chars(value)
        self.expanded_chars += chars
        if self.expanded_chars > self.max_chars:
            raise self.error(
                f"aliases expand to more than {self.max_chars:,} characters (this one repeats "
                f"{chars:,})",
                event.start_mark,
                path,
                "repeat less text through aliases: an alias copies everything its anchor "
                "holds; keep a long text once, or in a file the benchmark names.",
            )
        if len(stack) + height > MAX_DEPTH:
            raise self.error(
                f"the YAML nests deeper than {MAX_DEPTH} levels (through this alias)",
                event.start_mark,
                path,
                _DEPTH_FIX,
            )
        return _copy(value), size, height

    def _scalar(self, event: Any, stack: list[_Frame]) -> Any:
        value: str = event.value
        tag = event.tag
        if tag is None:
            tag = _resolve(value)
            if tag == "tag:yaml.org,2002:merge":
                return _MERGE if stack and _wants_key(stack[-1]) else value
        elif tag == "!":
            return value
        if tag == _STR or tag == "tag:yaml.org,2002:timestamp":  # dates stay strings
            return value
        if tag == "tag:yaml.org,2002:null":
            return None
        if tag == "tag:yaml.org,2002:bool":
            return value.lower() == "true"
        from ruamel.yaml.nodes import ScalarNode

        constructor = _yaml_tools()[1]
        try:
            if tag == "tag:yaml.org,2002:int":
                return int(constructor.construct_yaml_int(ScalarNode(tag, value)))
            if tag == "tag:yaml.org,2002:float":
                return float(constructor.construct_yaml_float(ScalarNode(tag, value)))
        except (ValueError, TypeError, IndexError):
            raise self.error(
                f"{value!r} is not a valid {tag.rsplit(':', 1)[-1]}",
                event.start_mark,
                self._child_path(stack),
                "write a number, or drop the tag.",
            ) from None
        raise self.error(
            f"unsupported YAML tag {tag}",
            event.start_mark,
            self._child_path(stack),
            "remove the tag; benchmark files hold plain JSON-like data.",
        )


def _wants_key(frame: _Frame) -> bool:
    return frame.key is _NO_KEY


def _resolve(value: str) -> str:
    """The YAML 1.2 tag of a plain scalar, by ruamel's own resolver table."""
    candidates = _yaml_tools()[2].get(value[:1])
    if not candidates:
        return _STR
    for tag, regexp in candidates:
        if regexp.match(value):
            return str(tag)
    return _STR


def _chars(value: Any) -> int:
    """The size an alias of ``value`` adds: the characters of its strings (keys too), one
    for every other scalar."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            total += sum(map(len, item))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            total += 1
    return total


def _copy(value: Any) -> Any:
    """A fresh copy of plain data (what an alias repeats; depth is bounded by MAX_DEPTH)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


class _YamlLocator:
    """Finds where values sit by reading the parser events again, on first use only.

    Positions are built into a tree of ``(position, children)``: a mapping's children map
    each key to ``(key position, value position, subtree)``, a list's are
    ``(position, subtree)`` per item. A value repeated by an alias has the alias's position
    and no subtree; a key merged by ``<<`` has none (its nearest ancestor's is reported).
    """

    __slots__ = ("_first_line", "_root", "_source", "_text")

    def __init__(self, text: str, first_line: int, source: Callable[[str], Iterator[Any]]):
        self._text = text
        self._first_line = first_line
        self._source = source
        self._root: Any = None

    def _tree(self) -> Any:
        from ruamel.yaml import events as ev

        if self._root is not None:
            return self._root
        stack: list[list[Any]] = []  # [position, children, pending key]
        root: Any = [(0, 0), None]
        for event in self._source(self._text):
            kind = type(event)
            mark = event.start_mark
            if kind is ev.MappingStartEvent or kind is ev.SequenceStartEvent:
                node: Any = [
                    (mark.line, mark.column),
                    {} if kind is ev.MappingStartEvent else [],
                    None,
                ]
            elif kind is ev.ScalarEvent or kind is ev.AliasEvent:
                node = [(mark.line, mark.column), None, None]
            elif kind is ev.MappingEndEvent or kind is ev.SequenceEndEvent:
                stack.pop()
                continue
            else:
                continue
            if not stack:
                root = node
            else:
                parent = stack[-1]
                children = parent[1]
                if isinstance(children, list):
                    children.append(node)
                elif parent[2] is None:
                    parent[2] = (event.value if kind is ev.ScalarEvent else None, node[0])
                    if node[1] is not None:  # a collection as a key: its items are not located
                        stack.append(node)
                    continue
                else:
                    key, key_pos = parent[2]
                    parent[2] = None
                    if isinstance(key, str) and key not in children:
                        children[key] = (key_pos, node)
            if node[1] is not None:
                stack.append(node)
        self._root = root
        return root

    def locate(self, path: JsonPath, key: bool) -> Position | None:
        node = self._tree()
        where: tuple[int, int] = node[0]
        for depth, step in enumerate(path):
            children = node[1]
            if isinstance(children, dict) and isinstance(step, str) and step in children:
                key_pos, node = children[step]
                where = key_pos if (key and depth == len(path) - 1) else node[0]
            elif isinstance(children, list) and isinstance(step, int) and 0 <= step < len(children):
                node = children[step]
                where = node[0]
            else:
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
