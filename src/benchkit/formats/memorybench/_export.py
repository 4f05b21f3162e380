"""MemoryBench-shaped results: one ``results.jsonl`` record per case, and their summary.

A record has the original's keys and order — ``run_id``, ``provider_name``,
``benchmark_name``, ``case_id``, ``status`` (pass / fail / error), ``scores``,
``duration_ms`` (integer), ``error`` (``{message, category}``, errors only) and
``artifacts`` (``generatedAnswer``, ``reasoning``, ``ingestedCount``, ``retrievedCount``).
``scores`` merges the numeric details of the case's scores: the manifest's metrics plus
the protocol's extra scores (see :mod:`benchkit.formats.memorybench._evaluate`).

:class:`MemoryBenchSink` writes the records as cells finish, beside benchkit's own report.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from benchkit.errors import ConfigError
from benchkit.results import CellResult, RunInfo, RunResult

__all__ = ["CombinationSummary", "MemoryBenchSink", "result_record", "summarize_records"]

_STATUS = {"pass": "pass", "fail": "fail", "error": "error", "timeout": "error"}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def result_record(cell: CellResult, *, run_id: str, benchmark: str) -> dict[str, Any]:
    """The MemoryBench record of one cell (``epoch`` is added only for epochs after 0)."""
    scores: dict[str, float] = {}
    reasoning: str | None = None
    for score in cell.scores:
        scores.update((k, v) for k, v in score.details.items() if _number(v))
        # The protocol's reasoning: the first score that judged (reports have no value).
        if reasoning is None and (score.value is not None or score.error is not None):
            reasoning = score.reason or score.error
    record: dict[str, Any] = {
        "run_id": run_id,
        "provider_name": cell.condition_id,
        "benchmark_name": benchmark,
        "case_id": cell.task_id,
        "status": _STATUS[cell.status],
        "scores": scores,
        "duration_ms": round(cell.duration_ms),
    }
    if cell.epoch:
        record["epoch"] = cell.epoch
    if cell.errored:
        record["error"] = {"message": cell.error or cell.status, "category": cell.error_category}
    response = cell.response
    if response is not None:
        artifacts: dict[str, Any] = {
            "generatedAnswer": response.output,
            "reasoning": reasoning,
            "ingestedCount": response.metadata.get("ingested_count"),
            "retrievedCount": len(response.retrieved),
        }
        record["artifacts"] = {k: v for k, v in artifacts.items() if v is not None}
    return record


class MemoryBenchSink:
    """A result sink appending one MemoryBench record per finished cell to ``path``.

    Several runs may share one file (``memory eval`` writes every benchmark of a run to
    one ``results.jsonl``): lines are appended, each in one unbuffered write. ``run_id``
    is the MemoryBench run id the records carry (default: the benchkit run's own).
    """

    def __init__(self, path: str | os.PathLike[str], *, run_id: str | None = None) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._fixed_run_id = run_id
        self._run_id = ""
        self._benchmark = ""

    def __repr__(self) -> str:
        return f"MemoryBenchSink({str(self.path)!r})"

    async def open(self, info: RunInfo) -> None:
        self._run_id = self._fixed_run_id or info.run_id
        self._benchmark = info.benchmark_name or info.benchmark_id
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise ConfigError(
                f"cannot write MemoryBench results to {str(self.path)!r}: {exc.strerror or exc}",
                fix="choose a writable output directory (--output-dir).",
            ) from exc

    async def write(self, cell: CellResult) -> None:
        assert self._fd is not None, "MemoryBenchSink.open() was not called"
        record = result_record(cell, run_id=self._run_id, benchmark=self._benchmark)
        data = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode()
        while data:
            data = data[os.write(self._fd, data) :]

    async def close(self, result: RunResult) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@attrs.frozen
class CombinationSummary:
    """Counts and score means of one provider × benchmark, as the original summarises.

    ``score_averages[k]`` is the mean over the cases whose scores hold ``k`` (errored
    cases and cases without gold ids are left out, not counted as 0);
    ``score_counts[k]`` says how many cases that is.
    """

    provider_name: str
    benchmark_name: str
    cases: int
    passed: int
    failed: int
    skipped: int
    errors: int
    duration_ms: int
    score_averages: Mapping[str, float]
    score_counts: Mapping[str, int]


def summarize_records(records: Iterable[Mapping[str, Any]]) -> list[CombinationSummary]:
    """One summary per (provider, benchmark), sorted by provider then benchmark."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for record in records:
        key = (record["provider_name"], record["benchmark_name"])
        groups.setdefault(key, []).append(record)
    out: list[CombinationSummary] = []
    for (provider, benchmark), members in sorted(groups.items()):
        totals: dict[str, float] = {}
        counts: dict[str, int] = {}
        for record in members:
            for name, value in record.get("scores", {}).items():
                totals[name] = totals.get(name, 0.0) + value
                counts[name] = counts.get(name, 0) + 1
        statuses = [record["status"] for record in members]
        out.append(
            CombinationSummary(
                provider_name=provider,
                benchmark_name=benchmark,
                cases=len(members),
                passed=statuses.count("pass"),
                failed=statuses.count("fail"),
                skipped=statuses.count("skip"),
                errors=statuses.count("error"),
                duration_ms=sum(int(record.get("duration_ms", 0)) for record in members),
                score_averages={k: totals[k] / counts[k] for k in totals},
                score_counts=counts,
            )
        )
    return out
