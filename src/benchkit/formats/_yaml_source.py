"""YAML documents: plain data straight from parser events, positions only on error.

:func:`parse_yaml` reads YAML 1.2 with ruamel's C event parser (libyaml) when it is
installed — the pure-Python parser re-reads a document the C one refuses, for ruamel's
messages — and builds plain data in one pass (:class:`_YamlBuilder`), refusing what
benchmark files never need: non-string keys, duplicate keys, unknown tags, more than one
document, nesting and alias expansion past the limits of :mod:`benchkit._limits`.
:class:`_YamlLocator` reads the events again, on first use only, to say where a value sat.

``ruamel.yaml`` is imported on first use, keeping ``import benchkit`` fast.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from benchkit._jsonschema import JsonPath, render_path
from benchkit._limits import MAX_ALIAS_CHARS, MAX_ALIAS_VALUES, MAX_DEPTH
from benchkit.errors import FormatError
from benchkit.formats._document import DEPTH_FIX, Document, Position

__all__ = ["parse_yaml"]


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


def parse_yaml(text: str, path: Path, first_line: int) -> Document:
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
    """Turns a stream of ruamel parser events into plain data (see :func:`parse_yaml`).

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
        # Plain scalars repeat (every task's keys, its tags, small numbers): each distinct
        # one is resolved once. Only short ones are kept, and only so many.
        plain: dict[str, Any] = {}
        for event in events:
            kind = type(event)
            if kind is ev.ScalarEvent:
                if event.tag is None:
                    if not event.implicit[0]:  # quoted: a string
                        value = event.value
                    else:
                        value = plain.get(event.value, _NO_KEY)
                        if value is _NO_KEY:
                            value = self._scalar(event, stack)
                            text = event.value
                            if len(text) <= 64 and len(plain) < 4096 and text != "<<":
                                plain[text] = value
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
                DEPTH_FIX,
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
                DEPTH_FIX,
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
