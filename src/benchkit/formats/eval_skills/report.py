"""The eval-skills report: one ``SkillCompletionReport`` per skill, as the original writes it.

:func:`build_reports` is a pure function of a :class:`~benchkit.results.RunResult` (plus
the benchmark, the skills' versions and the run's ``--timeout``): it returns the list of
per-skill report dicts with the original's keys, key order and arithmetic —

* ``completionRate`` = passes / results, ``errorRate`` = (errors + timeouts) / results;
* ``partialScore`` by the benchmark's ``scoringMethod``: ``mean`` of the scores,
  ``weighted_mean`` by task weight, or ``pass_at_k`` (the unbiased estimator per task over
  the runs, averaged over tasks);
* ``consistencyScore`` = max(0, 1 − population std-dev of the per-run pass rates), 1 with
  one run;
* latency p50 / p95 / p99 by nearest rank over the latencies > 0, then ``Math.round``;
* ``compositeScore`` = 0.5·CR + 0.2·(1 − clamp(p95 / maxLatencyMs, 0, 1)) + 0.3·(1 − ER),
  with maxLatencyMs = the benchmark's, else the run's timeout;
* CR, partial, ER and composite rounded half-up to 4 digits (``Math.round(x·1e4)/1e4``);
* ``confidenceInterval`` (from 10 results on): benchkit's seeded bootstrap of the scores.

:func:`to_json`, :func:`to_markdown`, :func:`to_html` and :func:`to_csv` render the list
byte for byte as eval-skills does (numbers and ``toFixed`` the JavaScript way), and
:func:`write_reports` writes ``eval-result-<timestamp>.{json,md,html,csv}``.

    >>> reports = build_reports(result, benchmark=bench, versions={"calc": "1.0.0"},
    ...                         timeout_ms=30000)                        # doctest: +SKIP
    >>> print(to_markdown(reports))                                      # doctest: +SKIP
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import attrs

from benchkit import stats
from benchkit._js import (
    math_round,
    number_to_string,
    reduce_sum,
    round_to,
    stringify,
    to_fixed,
)
from benchkit.errors import ConfigError
from benchkit.model import Benchmark, Task
from benchkit.results import CellResult, RunResult

__all__ = [
    "FORMATS",
    "build_reports",
    "iso_timestamp",
    "report_stem",
    "to_csv",
    "to_html",
    "to_json",
    "to_markdown",
    "write_reports",
]

FORMATS: Mapping[str, str] = {"json": "json", "markdown": "md", "html": "html", "csv": "csv"}
"""Report formats and their file extensions."""

_SCORER_TYPES = {
    "exact": "exact_match",
    "contains": "contains",
    "json_schema": "json_schema",
    "regex": "regex",
    "llm_judge": "llm_judge",
}
_BOOTSTRAP_RESAMPLES = 1000
_CI_MIN_RESULTS = 10


# --------------------------------------------------------------------------- building


def iso_timestamp(when: datetime | None = None) -> str:
    """``new Date().toISOString()``: UTC with milliseconds, e.g. ``2026-01-01T00:00:00.000Z``."""
    moment = (when or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def build_reports(
    result: RunResult,
    *,
    benchmark: Benchmark,
    versions: Mapping[str, str],
    timeout_ms: float,
    timestamp: str | None = None,
    seed: int | None = None,
) -> list[dict[str, Any]]:
    """One eval-skills ``SkillCompletionReport`` dict per condition of ``result``.

    ``benchmark`` gives ``maxLatencyMs`` (its metadata) and each task's scorer type and
    written weight; ``versions`` maps condition ids to skill versions (``skillVersion``,
    left out for a condition without one); ``timeout_ms`` is the run's ``--timeout``, the
    composite's latency scale when the benchmark sets none. ``timestamp`` defaults to now
    (:func:`iso_timestamp`); ``seed`` (default: the run's) seeds the bootstrap. Task
    results are in run-major order (run 1's tasks, then run 2's, ...).
    """
    stamp = timestamp if timestamp is not None else iso_timestamp()
    info = result.info
    max_latency = benchmark.metadata.get("maxLatencyMs", timeout_ms)
    tasks = {task.id: task for task in benchmark.iter_tasks()}
    by_condition: dict[str, list[CellResult]] = {c.id: [] for c in info.conditions}
    for cell in result.cells:
        by_condition.setdefault(cell.condition_id, []).append(cell)
    rng_seed = info.options.seed if seed is None else seed
    reports: list[dict[str, Any]] = []
    for condition_id, cells in by_condition.items():
        ordered = sorted(cells, key=lambda c: (c.epoch, c.index))
        task_results = [_task_result(cell, tasks.get(cell.task_id)) for cell in ordered]
        summary, latency = _summary(
            task_results, info.scoring_method, info.scoring_k, max_latency, rng_seed
        )
        report: dict[str, Any] = {"skillId": condition_id}
        if condition_id in versions:
            report["skillVersion"] = versions[condition_id]
        report.update(benchmarkId=info.benchmark_id, timestamp=stamp)
        report.update(summary=summary, latency=latency)
        token_cost = _token_cost(task_results)
        if token_cost is not None:
            report["tokenCost"] = token_cost
        report.update(taskResults=task_results, evaluatorMetadata={})
        reports.append(report)
    return reports


def _scorer_type(task: Task | None) -> str:
    if task is None:
        return "unknown"
    written = task.metadata.get("scorerType")
    if isinstance(written, str):
        return written
    if task.evaluators:
        kind = task.evaluators[0].type
        return _SCORER_TYPES.get(kind, kind)
    return "unknown"


def _weight(cell: CellResult, task: Task | None) -> float | None:
    """The weight a TaskResult shows: the one the benchmark wrote (None when it wrote none)."""
    if task is not None and "weight" in task.metadata:
        written: float = task.metadata["weight"]
        return written
    return cell.weight if cell.weight != 1.0 else None


def _reason(cell: CellResult) -> str | None:
    for score in cell.scores:
        if cell.status == "pass" or not score.passed:
            return score.reason
    return None


def _task_result(cell: CellResult, task: Task | None) -> dict[str, Any]:
    """One TaskResult with the original's keys in the original's order."""
    row: dict[str, Any] = {
        "taskId": cell.task_id,
        "skillId": cell.condition_id,
        "status": cell.status,
    }
    response = cell.response
    if cell.status in ("pass", "fail"):
        score = cell.score if cell.score is not None else float(cell.status == "pass")
        row["score"] = score
        row["latencyMs"] = (response.latency_ms or 0) if response is not None else 0
        row["output"] = response.output if response is not None else None
        row["scorerType"] = _scorer_type(task)
        reason = _reason(cell)
        if reason is not None:
            row["reason"] = reason
        row["runId"] = cell.epoch + 1
        if response is not None and response.usage is not None:
            usage = response.usage
            row["usage"] = {
                "promptTokens": usage.prompt_tokens,
                "completionTokens": usage.completion_tokens,
                "totalTokens": usage.total_tokens,
            }
    else:
        row["score"] = 0
        if response is not None:  # the skill answered; judging it failed
            row["latencyMs"] = response.latency_ms or 0
        elif cell.status == "timeout":
            row["latencyMs"] = cell.duration_ms
        else:
            row["latencyMs"] = 0
        row["error"] = cell.error or cell.error_category
        row["scorerType"] = _scorer_type(task)
        row["runId"] = cell.epoch + 1
    weight = _weight(cell, task)
    if weight is not None:
        row["weight"] = weight
    return row


def _summary(
    rows: Sequence[Mapping[str, Any]], method: str, k: int, max_latency: float, seed: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    total = len(rows)
    if total == 0:
        zero: dict[str, Any] = {
            "completionRate": 0,
            "partialScore": 0,
            "errorRate": 0,
            "consistencyScore": 1,
            "compositeScore": 0,
        }
        return zero, {"p50Ms": 0, "p95Ms": 0, "p99Ms": 0}
    passed = sum(1 for r in rows if r["status"] == "pass")
    errored = sum(1 for r in rows if r["status"] in ("error", "timeout"))
    completion = passed / total
    error_rate = errored / total
    latencies = sorted(r["latencyMs"] for r in rows if r["latencyMs"] > 0)
    p50, p95, p99 = (_nearest_rank(latencies, p) for p in (0.5, 0.95, 0.99))
    composite = (
        0.5 * completion + 0.2 * (1 - min(max(p95 / max_latency, 0), 1)) + 0.3 * (1 - error_rate)
    )
    summary: dict[str, Any] = {
        "completionRate": round_to(completion, 4),
        "partialScore": round_to(_partial(rows, method, k), 4),
        "errorRate": round_to(error_rate, 4),
        "consistencyScore": _consistency(rows),
        "compositeScore": round_to(composite, 4),
    }
    if total >= _CI_MIN_RESULTS:
        scores = [float(r["score"]) for r in rows]
        interval = stats.bootstrap_interval(scores, resamples=_BOOTSTRAP_RESAMPLES, seed=seed)
        summary["confidenceInterval"] = {
            "lower": interval.low,
            "upper": interval.high,
            "mean": stats.mean(scores),
            "level": interval.level,
        }
    return summary, {"p50Ms": p50, "p95Ms": p95, "p99Ms": p99}


def _nearest_rank(ordered: Sequence[float], p: float) -> int:
    """``sorted[clamp(ceil(p·n) − 1, 0, n − 1)]``, then ``Math.round``; 0 when empty."""
    n = len(ordered)
    if n == 0:
        return 0
    index = min(max(math.ceil(p * n) - 1, 0), n - 1)
    return int(math_round(ordered[index]))


def _partial(rows: Sequence[Mapping[str, Any]], method: str, k: int) -> float:
    if method == "weighted_mean":
        weighted = 0.0
        weights = 0.0
        for row in rows:
            w = row.get("weight", 1)
            weighted += row["score"] * w
            weights += w
        return weighted / weights if weights > 0 else 0.0
    if method == "pass_at_k":
        counts: dict[str, list[int]] = {}
        for row in rows:
            n_c = counts.setdefault(row["taskId"], [0, 0])
            n_c[0] += 1
            n_c[1] += row["status"] == "pass"
        estimates = [_pass_at_k(n, c, k) for n, c in counts.values()]
        return reduce_sum(estimates) / len(estimates)
    return reduce_sum(row["score"] for row in rows) / len(rows)


def _pass_at_k(n: int, c: int, k: int) -> float:
    """1 − C(n−c, k) / C(n, k), with the original's shortcuts for c = 0 and c = n."""
    if c == 0:
        return 0.0
    if c >= n or n - c < k:
        return 1.0
    return 1 - math.comb(n - c, k) / math.comb(n, k)


def _consistency(rows: Sequence[Mapping[str, Any]]) -> float:
    runs: dict[int, list[int]] = {}
    for row in rows:
        counts = runs.setdefault(row["runId"], [0, 0])
        counts[0] += 1
        counts[1] += row["status"] == "pass"
    if len(runs) <= 1:
        return 1.0
    rates = [passed / count for count, passed in runs.values()]
    mean = reduce_sum(rates) / len(rates)
    variance = reduce_sum((r - mean) * (r - mean) for r in rates) / len(rates)
    return max(0.0, 1 - math.sqrt(variance))


def _token_cost(rows: Sequence[Mapping[str, Any]]) -> dict[str, int] | None:
    prompt = completion = 0
    for row in rows:
        usage = row.get("usage")
        if usage is not None:
            prompt += usage["promptTokens"]
            completion += usage["completionTokens"]
    if prompt + completion <= 0:
        return None
    return {
        "promptTokens": prompt,
        "completionTokens": completion,
        "totalTokens": prompt + completion,
    }


# --------------------------------------------------------------------------- rendering


@attrs.frozen
class _Heading:
    level: int
    text: str


@attrs.frozen
class _Paragraph:
    text: str


@attrs.frozen
class _Table:
    header: tuple[str, ...]
    separator: str  # the Markdown alignment row, written as the original writes it
    centered: tuple[bool, ...]
    rows: tuple[tuple[str, ...], ...]


_Block = _Heading | _Paragraph | _Table

_STATUS = {
    "pass": "\u2705 PASS",
    "fail": "\u274c FAIL",
    "error": "\u26a0\ufe0f ERROR",
    "timeout": "\u23f1\ufe0f TIMEOUT",
}
_TITLE = "eval-skills Report"


def _percent(value: float) -> str:
    return f"{to_fixed(value * 100, 1)}%"


def _ms(value: float) -> str:
    if value >= 1000:
        return f"{to_fixed(value / 1000, 1)}s"
    return f"{number_to_string(math_round(value))}ms"


def _blocks(reports: Sequence[Mapping[str, Any]]) -> list[_Block]:
    """The report as headings, paragraphs and tables, for Markdown and HTML alike."""
    if not reports:
        return [_Heading(1, _TITLE), _Paragraph("No evaluation results.")]
    first = reports[0]
    blocks: list[_Block] = [
        _Heading(1, _TITLE),
        _Paragraph(f"Generated: {first['timestamp']} | Benchmark: {first['benchmarkId']}"),
        _Heading(2, "Summary"),
    ]
    ranked = sorted(reports, key=lambda r: -r["summary"]["compositeScore"])
    blocks.append(
        _Table(
            ("Skill", "Completion Rate", "Error Rate", "P95 Latency", "Composite Score"),
            "|-------|:--------------:|:----------:|:-----------:|:---------------:|",
            (False, True, True, True, True),
            tuple(
                (
                    str(r["skillId"]),
                    _percent(r["summary"]["completionRate"]),
                    _percent(r["summary"]["errorRate"]),
                    _ms(r["latency"]["p95Ms"]),
                    to_fixed(r["summary"]["compositeScore"], 3),
                )
                for r in ranked
            ),
        )
    )
    for report in ranked:
        results = report["taskResults"]
        version = report.get("skillVersion", "undefined")
        blocks += [
            _Heading(2, f"Details: {report['skillId']}"),
            _Paragraph(f"Version: {version} | Tasks: {len(results)}"),
            _Heading(3, "Task Results"),
            _Table(
                ("Task ID", "Status", "Score", "Latency"),
                "|---------|--------|-------|---------|",
                (False, False, False, False),
                tuple(
                    (
                        str(t["taskId"]),
                        _STATUS.get(t["status"], str(t["status"])),
                        to_fixed(t["score"], 2),
                        _ms(t["latencyMs"]),
                    )
                    for t in results
                ),
            ),
        ]
    return blocks


def _markdown_lines(block: _Block) -> list[str]:
    if isinstance(block, _Heading):
        return ["#" * block.level + " " + block.text]
    if isinstance(block, _Paragraph):
        return [block.text]
    rows = [block.header, *block.rows]
    lines = ["| " + " | ".join(cells) + " |" for cells in rows]
    return [lines[0], block.separator, *lines[1:]]


def to_markdown(reports: Sequence[Mapping[str, Any]]) -> str:
    """The original's Markdown report: summary table by composite score, then per skill."""
    lines: list[str] = []
    for block in _blocks(reports):
        lines += [*_markdown_lines(block), ""]
    return "\n".join(lines)


_CSS = """\
body{font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;\
max-width:1100px;margin:2rem auto;padding:0 1rem;color:#24292f;line-height:1.5}
h1{border-bottom:1px solid #d0d7de;padding-bottom:.3em}
h2{border-bottom:1px solid #d0d7de;padding-bottom:.3em;margin-top:2em}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #d0d7de;padding:6px 13px}
th{background:#f6f8fa}
tr:nth-child(2n) td{background:#f6f8fa}
"""


def _html_block(block: _Block) -> str:
    if isinstance(block, _Heading):
        return f"<h{block.level}>{html.escape(block.text)}</h{block.level}>"
    if isinstance(block, _Paragraph):
        return f"<p>{html.escape(block.text)}</p>"

    def cell(tag: str, text: str, centered: bool) -> str:
        style = ' style="text-align:center"' if centered else ""
        return f"<{tag}{style}>{html.escape(text)}</{tag}>"

    head = "".join(cell("th", t, c) for t, c in zip(block.header, block.centered, strict=True))
    body = "\n".join(
        "<tr>"
        + "".join(cell("td", t, c) for t, c in zip(row, block.centered, strict=True))
        + "</tr>"
        for row in block.rows
    )
    return f"<table>\n<thead>\n<tr>{head}</tr>\n</thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def to_html(reports: Sequence[Mapping[str, Any]]) -> str:
    """The Markdown report's content as one standalone HTML page with inline CSS."""
    body = "\n".join(_html_block(block) for block in _blocks(reports))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_TITLE}</title>\n<style>\n{_CSS}</style>\n</head>\n<body>\n"
        f"{body}\n</body>\n</html>\n"
    )


_CSV_HEADER = "skillId,benchmarkId,completionRate,partialScore,errorRate,p50Ms,p95Ms,compositeScore"


def _csv_field(value: str) -> str:
    if any(c in value for c in ',"\n\r'):
        return '"' + value.replace('"', '""') + '"'
    return value


def to_csv(reports: Sequence[Mapping[str, Any]]) -> str:
    """One line per skill: ids, rates (4 decimals) and p50/p95; no trailing newline."""
    lines = [_CSV_HEADER]
    for r in reports:
        s, lat = r["summary"], r["latency"]
        lines.append(
            ",".join(
                (
                    _csv_field(str(r["skillId"])),
                    _csv_field(str(r["benchmarkId"])),
                    to_fixed(s["completionRate"], 4),
                    to_fixed(s["partialScore"], 4),
                    to_fixed(s["errorRate"], 4),
                    number_to_string(lat["p50Ms"]),
                    number_to_string(lat["p95Ms"]),
                    to_fixed(s["compositeScore"], 4),
                )
            )
        )
    return "\n".join(lines)


def to_json(reports: Sequence[Mapping[str, Any]]) -> str:
    """``JSON.stringify(reports, null, 2)``: the array of reports, no trailing newline."""
    return stringify(list(reports), 2)


_RENDERERS = {"json": to_json, "markdown": to_markdown, "html": to_html, "csv": to_csv}


def report_stem(timestamp: str) -> str:
    """``eval-result-<timestamp with ':' and '.' replaced by '-'>``, the files' name."""
    return "eval-result-" + timestamp.replace(":", "-").replace(".", "-")


def write_reports(
    reports: Sequence[Mapping[str, Any]],
    output_dir: str | os.PathLike[str],
    formats: Iterable[str],
    *,
    timestamp: str,
) -> list[Path]:
    """Write ``reports`` in each of ``formats`` (json, markdown, html, csv) to
    ``output_dir/eval-result-<timestamp>.<ext>``; the paths written, in order."""
    directory = Path(output_dir)
    directory.mkdir(parents=True, exist_ok=True)
    stem = report_stem(timestamp)
    written: list[Path] = []
    for name in dict.fromkeys(formats):
        if name not in _RENDERERS:
            raise ConfigError(
                f"unknown report format {name!r}", fix=f"use one of: {', '.join(FORMATS)}."
            )
        path = directory / f"{stem}.{FORMATS[name]}"
        with path.open("w", encoding="utf-8", newline="") as out:
            out.write(_RENDERERS[name](reports))
        written.append(path)
    return written
