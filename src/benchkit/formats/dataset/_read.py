"""Rows of a data file: JSONL, CSV, Parquet, or a Hugging Face dataset saved to disk.

Each row is a mapping of field names to values, with where it came from (:class:`Row`:
the file and its line, or its row number where a file has no lines) so a bad value is
an error naming the file, the line and the field. Parquet needs ``pyarrow`` (extra
``benchkit[dataset]``); a saved Hugging Face dataset needs the ``datasets`` library.
Labels may come from a file of their own, one a line, aligned with the rows (as PIQA
ships them).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from benchkit.errors import ConfigError, FormatError
from benchkit.formats._source import decode, read_regular

__all__ = ["DATA_SUFFIXES", "Row", "read_labels", "read_rows"]

DATA_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".parquet")
"""The data files :func:`read_rows` reads (and a directory a Hugging Face dataset was
saved to)."""


@attrs.frozen
class Row:
    """One record: its fields, its position among the rows, and where it is."""

    fields: Mapping[str, Any]
    index: int
    file: Path
    line: int | None = None

    def error(
        self, message: str, field: str | None = None, *, fix: str | None = None
    ) -> FormatError:
        """A FormatError naming the file, the line (or row) and the field."""
        where = f"row {self.index}" if self.line is None else None
        path = "$" + (f".{field}" if field else "")
        return FormatError(
            f"{where + ': ' if where else ''}{message}",
            file=self.file,
            line=self.line,
            json_path=path if field else None,
            fix=fix,
        )


def read_rows(path: Path, *, split: str | None = None) -> list[Row]:
    """Every row of the data at ``path`` (see the module)."""
    if path.is_dir():
        return _hugging_face(path, split)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return _jsonl(path)
    if suffix == ".csv":
        return _csv(path)
    if suffix == ".parquet":
        return _parquet(path)
    raise FormatError(
        f"cannot read a {suffix or 'suffix-less'} file as data",
        file=path,
        fix="give a .jsonl, .csv or .parquet file, or a directory a Hugging Face dataset "
        "was saved to (Dataset.save_to_disk).",
    )


def _text(path: Path) -> str:
    try:
        return decode(read_regular(path), path)
    except FileNotFoundError:
        raise FormatError("no such data file", file=path, fix="check the path.") from None
    except IsADirectoryError:
        raise FormatError("expected a file, found a directory", file=path) from None
    except OSError as exc:
        raise FormatError(f"cannot read the file: {exc.strerror}", file=path) from exc


def _jsonl(path: Path) -> list[Row]:
    rows: list[Row] = []
    for number, line in enumerate(_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise FormatError(
                f"not JSON: {exc}", file=path, line=number, fix="write one JSON object a line."
            ) from None
        if not isinstance(value, dict):
            raise FormatError(
                f"a line holds {type(value).__name__}, not a JSON object",
                file=path,
                line=number,
                fix='write one object a line, e.g. {"question": "...", "answer": 0}.',
            )
        rows.append(Row(value, len(rows), path, number))
    return rows


def _csv(path: Path) -> list[Row]:
    reader = csv.DictReader(io.StringIO(_text(path), newline=""))
    rows: list[Row] = []
    try:
        for record in reader:
            if None in record:
                raise FormatError(
                    f"the record has more values than the header has names ({len(reader.fieldnames or [])})",
                    file=path,
                    line=reader.line_num,
                    fix="quote values that hold commas.",
                )
            rows.append(Row(dict(record), len(rows), path, reader.line_num))
    except csv.Error as exc:
        raise FormatError(f"not CSV: {exc}", file=path, line=reader.line_num) from None
    return rows


def _parquet(path: Path) -> list[Row]:
    try:
        import pyarrow.parquet as parquet  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        raise ConfigError(
            f"reading {path.name} needs pyarrow, which is not installed",
            fix="pip install 'benchkit[dataset]'",
        ) from None
    try:
        table = parquet.read_table(path)
    except (OSError, ValueError) as exc:
        raise FormatError(f"not a Parquet file: {exc}", file=path) from None
    return [Row(record, i, path) for i, record in enumerate(table.to_pylist())]


def _hugging_face(path: Path, split: str | None) -> list[Row]:
    if not any((path / name).is_file() for name in ("dataset_info.json", "dataset_dict.json")):
        raise FormatError(
            "a directory that no Hugging Face dataset was saved to",
            file=path,
            fix="give a data file, or the directory of Dataset.save_to_disk().",
        )
    try:
        import datasets  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        raise ConfigError(
            f"{path} is a saved Hugging Face dataset, and the datasets library is not installed",
            fix="pip install 'benchkit[hf]' (the datasets library)",
        ) from None
    found: Any = datasets.load_from_disk(str(path))
    if isinstance(found, datasets.DatasetDict):
        if split is None or split not in found:
            raise ConfigError(
                f"{path} holds the splits {', '.join(sorted(found))}; name one",
                fix="add split: NAME beside the path.",
            )
        found = found[split]
    return [Row(dict(record), i, path) for i, record in enumerate(found)]


def read_labels(path: Path, count: int, data: Path) -> list[str]:
    """The labels of ``path``, one a line, checked to be as many as the rows."""
    lines = _text(path).splitlines()
    if lines and not lines[-1].strip():
        lines = lines[:-1]
    if len(lines) != count:
        raise FormatError(
            f"{len(lines)} labels for {count} rows of {data.name}",
            file=path,
            fix="give one label a line, in the rows' order.",
        )
    return [line.strip() for line in lines]
