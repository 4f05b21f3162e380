"""A MemoryBench data file read: JSON parsed once, JSONL streamed, ``flatten`` applied."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from benchkit._js import to_string
from benchkit.errors import FormatError
from benchkit.formats._source import (
    Document,
    JsonPath,
    decode,
    open_regular,
    parse_document,
    read_document,
)
from benchkit.formats.memorybench._manifest import Flatten

NO_CASES_FIX = (
    "write the cases (a JSON list of objects, or one object per line of a .jsonl file: "
    '{"question": ..., "answer": ...}), or point data_file at the benchmark\'s data.'
)
"""The fix of a data file that holds no cases."""


def flatten(records: Iterator[dict[str, Any]], rule: Flatten) -> Iterator[dict[str, Any]]:
    """One record per item of ``record[rule.field]`` (decision 3 of the notes).

    A record whose field is not a list passes unchanged; an empty list drops the record;
    ``max_items`` keeps the first items (0 keeps all). Each item gives ``{id:
    "<parent>_<i>", <parent's other fields>, <promoted fields>, _flatten_index: i}``; the
    parent id is ``sample_id``, else ``id``, else ``rec_<records emitted so far>`` — counted
    for each item, as the original computes it inside its item loop (``rec_5_0``,
    ``rec_6_1``).

        >>> rule = Flatten("qa", promote_fields=("q",))
        >>> list(flatten(iter([{"id": "1", "qa": [{"q": "Q1"}, {"q": "Q2", "x": 0}]}]), rule))
        [{'id': '1_0', 'q': 'Q1', '_flatten_index': 0}, {'id': '1_1', 'q': 'Q2', '_flatten_index': 1}]
    """
    emitted = 0
    limit = int(rule.max_items) if rule.max_items else None
    for record in records:
        items = record.get(rule.field)
        if not isinstance(items, list):
            emitted += 1
            yield record
            continue
        parent = {k: v for k, v in record.items() if k != rule.field}
        parent_id = parent.get("sample_id")
        if parent_id is None:
            parent_id = parent.get("id")
        base = {k: v for k, v in parent.items() if k != "id"}
        for i, item in enumerate(items[:limit] if limit is not None else items):
            own = f"rec_{emitted}" if parent_id is None else to_string(parent_id)
            promoted = {
                f: item[f]
                for f in rule.promote_fields
                if isinstance(item, dict) and f in item and f != "id"
            }
            emitted += 1
            yield {"id": f"{own}_{i}", **base, **promoted, "_flatten_index": i}


@attrs.frozen
class Origin:
    """Where a case came from in the data file: a JSON index or a JSONL line."""

    index: int | None = None
    line: int | None = None

    def describe(self) -> str:
        return f"line {self.line}" if self.line is not None else f"$[{self.index}]"


class DataFile:
    """The data file: parsed once for JSON, streamed line by line for JSONL."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.streamed = path.suffix.lower() == ".jsonl"
        self._doc: Document | None = None
        if not self.streamed:
            if path.stat().st_size == 0:
                raise FormatError(
                    "the data file is empty",
                    file=path,
                    fix=NO_CASES_FIX,
                )
            self._doc = read_document(path, kind="json")
            data = self._doc.data
            self._records = data if isinstance(data, list) else [data]

    @property
    def records_read(self) -> int:
        """How many records a JSON data file holds (0 for JSONL, which is streamed)."""
        return len(self._records) if self._doc is not None else 0

    def error(self, message: str, origin: Origin, fix: str | None = None) -> FormatError:
        if self._doc is not None and origin.line is None:
            index = origin.index
            path: JsonPath = (
                (index,) if index is not None and isinstance(self._doc.data, list) else ()
            )
            return self._doc.error(message, path, fix=fix)
        return FormatError(message, file=self.path, line=origin.line, fix=fix)

    def records(self) -> Iterator[tuple[dict[str, Any], Origin]]:
        if self._doc is not None:
            for index, record in enumerate(self._records):
                origin = Origin(index=index)
                yield self._object(record, origin), origin
            return
        try:
            handle = open_regular(self.path)
        except OSError as exc:
            raise FormatError(
                f"cannot read the data file: {exc.strerror}",
                file=self.path,
                fix="the file was there when the benchmark loaded; restore it.",
            ) from None
        with handle:
            first = True
            for number, raw in enumerate(handle, 1):
                if not raw.strip():
                    continue
                text = decode(raw.rstrip(b"\r\n"), self.path, first_line=number)
                try:
                    line_doc = parse_document(text, path=self.path, kind="json", first_line=number)
                except FormatError:
                    if first and text.lstrip()[:1] in ("[", "{"):
                        raise self._not_lines(number) from None
                    raise
                first = False
                origin = Origin(line=number)
                yield self._object(line_doc.data, origin), origin

    def _not_lines(self, number: int) -> FormatError:
        """The error for a ``.jsonl`` file whose first line is the start of a JSON document
        spread over lines (a pretty-printed array or object), not a case of its own."""
        return FormatError(
            "this looks like JSON, not JSON Lines: its first line opens a JSON document "
            "that goes on over several lines",
            file=self.path,
            line=number,
            fix=f"rename it to {self.path.with_suffix('.json').name} (and point the manifest's "
            "data_file at it), or write one case per line.",
        )

    def _object(self, record: Any, origin: Origin) -> dict[str, Any]:
        if not isinstance(record, dict):
            kind = "a list" if isinstance(record, list) else type(record).__name__
            raise self.error(
                f"each case must be a JSON object, got {kind}",
                origin,
                fix='write one object per case ({"question": ..., "answer": ...}).',
            )
        if not record:  # no question, no answer, no sessions: nothing a run could do
            raise self.error(
                "a case is an empty JSON object ({})",
                origin,
                fix="write the case's fields "
                '({"question": ..., "answer": ..., "sessions": [...]}), or delete the line.',
            )
        return record
