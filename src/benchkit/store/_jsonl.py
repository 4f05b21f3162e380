"""A JSON Lines result sink: one line per cell, written the moment the cell finishes."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchkit._celljson import cell_json
from benchkit._public import public
from benchkit.errors import ConfigError, FormatError, StoreError
from benchkit.results import CellResult, RunInfo, RunResult
from benchkit.serde import converter

__all__ = ["JsonlSink", "read_jsonl"]

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)


@public("benchkit.store")
class JsonlSink:
    """Appends ``{"cell": ...}`` lines to ``path`` and writes the final result to ``result_path``.

    The first line is ``{"run": <RunInfo>}``; each finished cell follows as
    ``{"cell": <CellResult>}``, handed to the operating system with one unbuffered write,
    so a crash or a SIGKILL of the process loses nothing that finished. When the run ends
    (even when it was interrupted) a last ``{"end": {"interrupted": ..., "not_run": ...}}``
    line is added and, if ``result_path`` is set, the whole :class:`RunResult` is written
    there as JSON (atomically: a temporary file, then a rename).

    Cells arrive in completion order; the result file is in (task, condition, epoch) order.

        >>> sink = JsonlSink("results/cells.jsonl", result_path="results/result.json")
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        result_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.path = Path(path)
        self.result_path = Path(result_path) if result_path is not None else None
        self._fd: int | None = None
        self._broken = False

    def __repr__(self) -> str:
        return f"JsonlSink({str(self.path)!r})"

    async def open(self, info: RunInfo) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND
            self._fd = os.open(self.path, flags, 0o644)  # data, not a program: never 0755
        except OSError as exc:
            raise ConfigError(
                f"cannot write results to {str(self.path)!r}: {exc.strerror or exc}",
                fix="choose a writable output location (--output).",
            ) from exc
        self._line({"run": converter.unstructure(info)})

    async def write(self, cell: CellResult) -> None:
        assert self._fd is not None, "JsonlSink.open() was not called"
        self._write('{"cell":' + cell_json(cell, _ENCODER) + "}\n")

    async def close(self, result: RunResult) -> None:
        if self._fd is None:
            return  # open() failed: it said why, and there is nothing to finish
        try:
            if not self._broken:  # a failed write said why; the run stops with that error
                self._line({"end": {"interrupted": result.interrupted, "not_run": result.not_run}})
        finally:
            os.close(self._fd)
            self._fd = None
        if self._broken:
            return
        if self.result_path is None:
            return
        tmp = self.result_path.with_name(self.result_path.name + ".tmp")
        try:
            self.result_path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(result.to_json() + "\n", encoding="utf-8")
            tmp.replace(self.result_path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise ConfigError(
                f"cannot write the result to {str(self.result_path)!r}: "
                f"{exc.strerror or exc}; every finished cell is kept in {str(self.path)!r}",
                fix="choose a writable output location (--output); `benchkit report` "
                "reads the cells file.",
            ) from exc

    def _line(self, obj: dict[str, Any]) -> None:
        assert self._fd is not None, "JsonlSink.open() was not called"
        self._write(_ENCODER.encode(obj) + "\n")

    def _write(self, line: str) -> None:
        """Append ``line``; a write the system refuses (a full disk, a quota, an I/O
        error) is a :class:`StoreError` naming the file, and the sink writes no more."""
        assert self._fd is not None
        data = line.encode()
        try:
            while data:  # a regular file takes it in one write; loop for the exotic cases
                data = data[os.write(self._fd, data) :]
        except OSError as exc:
            self._broken = True
            raise StoreError(
                f"cannot write results to {str(self.path)!r}: {exc.strerror or exc}; the "
                "cells written before are kept there",
                fix="free some space (or choose another --output) and run again.",
            ) from None


def read_jsonl(path: str | os.PathLike[str]) -> tuple[RunInfo | None, list[CellResult]]:
    """The run metadata and the cells recorded in a :class:`JsonlSink` file.

    A torn last line (the process died mid-write) is ignored; any other bad line is a
    FormatError naming its line number.
    """
    info: RunInfo | None = None
    cells: list[CellResult] = []
    lines = list(_lines(Path(path)))
    for number, line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == lines[-1][0]:
                break
            raise FormatError(
                f"not a JSON line: {exc.msg}", file=Path(path), line=number, column=exc.colno
            ) from exc
        if "run" in record:
            info = converter.structure(record["run"], RunInfo)
        elif "cell" in record:
            cells.append(converter.structure(record["cell"], CellResult))
    return info, cells


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield number, line
