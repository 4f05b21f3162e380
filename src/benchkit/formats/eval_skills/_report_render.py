"""The eval-skills report rendered: JSON, Markdown, HTML and CSV byte for byte as the original.

Each renderer takes the list
:func:`~benchkit.formats.eval_skills._report_build.build_reports` returns; numbers are
written the JavaScript way (``toFixed``, ``Math.round``, ``JSON.stringify``).
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from benchkit._js import math_round, number_to_string, stringify, to_fixed
from benchkit.errors import ConfigError

FORMATS: Mapping[str, str] = {"json": "json", "markdown": "md", "html": "html", "csv": "csv"}
"""Report formats and their file extensions."""


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
