"""``python -m benchkit datasets list [DIR]``: the CodeForge datasets in a directory.

    python -m benchkit datasets list                      # benchmarks/codeforge
    python -m benchkit datasets list configs/benchmarks --format json

Shows each dataset's id (file stem, what a run is addressed by), name, file, task count
and difficulty mix. Files that cannot be read or are not valid datasets are listed after
the table with their error — never skipped in silence. Exit status 0; 2 when the
directory does not exist.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table

    from benchkit.formats.codeforge import MetricSummary, Summary

__all__ = ["add_commands", "summary_table"]


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add the ``datasets`` command (with its ``list`` subcommand) to ``python -m benchkit``."""
    parser = subparsers.add_parser(
        "datasets", help="CodeForge datasets", description="Work with CodeForge datasets."
    )
    commands = parser.add_subparsers(dest="datasets_command", required=True)
    listing = commands.add_parser(
        "list",
        help="list the CodeForge datasets in a directory",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    listing.add_argument(
        "directory",
        nargs="?",
        type=Path,
        help="where the datasets are (default: $CODEFORGE_BENCHMARK_DATASETS_DIR, else "
        "benchmarks/codeforge)",
    )
    listing.add_argument(
        "-f", "--format", choices=("table", "json"), default="table", help="output format"
    )
    listing.set_defaults(func=_cmd_list)


def _mix(difficulties: Mapping[str, int]) -> str:
    from benchkit.formats.codeforge import DIFFICULTIES

    order = [d for d in DIFFICULTIES if d in difficulties]
    order += sorted(d for d in difficulties if d not in DIFFICULTIES)
    return ", ".join(f"{difficulties[d]} {d}" for d in order) or "–"


def _cmd_list(args: argparse.Namespace) -> int:
    from benchkit.cli.toolkit import EXIT_OK, console
    from benchkit.formats.codeforge import discover_datasets, resolve_datasets_dir

    root = resolve_datasets_dir(args.directory)
    found, problems = discover_datasets(root)
    if args.format == "json":
        document = {
            "directory": str(root),
            "datasets": [
                {
                    "id": info.id,
                    "name": info.name,
                    "description": info.description,
                    "task_count": info.task_count,
                    "path": info.path,
                    "difficulties": dict(info.difficulties),
                }
                for info in found
            ],
            "problems": [{"path": str(path), "error": str(error)} for path, error in problems],
        }
        sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK

    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"CodeForge datasets in {root}", title_justify="left")
    for column in ("id", "name", "file", "tasks", "difficulty"):
        table.add_column(column)
    for info in found:
        table.add_row(
            escape(info.id),
            escape(info.name),
            escape(info.path),
            str(info.task_count),
            _mix(info.difficulties),
        )
    out = console(sys.stdout)
    out.print(table)
    for path, error in problems:
        out.print(f"[yellow]unreadable[/] {escape(str(path))}: {escape(str(error))}")
    return EXIT_OK


def _mean(metric: MetricSummary | None, *, interval: bool = True) -> str:
    if metric is None or metric.mean is None:
        return "–"
    if not interval or metric.interval is None:
        return f"{metric.mean:.3f}"
    return f"{metric.mean:.3f} [{metric.interval.low:.3f}, {metric.interval.high:.3f}]"


def summary_table(summary: Summary) -> Table:
    """A rich table of a CodeForge run's summary: one row per condition and metric, with
    the mean and its 95 % interval, the counts behind it, and the mean per difficulty."""
    from rich.table import Table

    from benchkit.formats.codeforge import DIFFICULTIES

    levels = [d for d in DIFFICULTIES if any(m.difficulty == d for m in summary.by_difficulty)]
    levels += sorted(
        {m.difficulty for m in summary.by_difficulty if m.difficulty is not None} - set(levels)
    )
    table = Table(title="CodeForge metrics", title_justify="left")
    for column in ("condition", "metric", "mean [95% CI]", "n", "judge errors", "cell errors"):
        table.add_column(column)
    for level in levels:
        table.add_column(level)
    index = {(m.condition_id, m.metric, m.difficulty): m for m in summary.by_difficulty}
    for metric in summary.metrics:
        table.add_row(
            metric.condition_id,
            metric.metric,
            _mean(metric),
            str(metric.n),
            str(metric.errors),
            str(metric.cell_errors),
            *(
                _mean(index.get((metric.condition_id, metric.metric, level)), interval=False)
                for level in levels
            ),
        )
    cost = "unknown" if summary.cost_usd is None else f"${summary.cost_usd:.4f}"
    table.caption = (
        f"model tokens {summary.tokens_in} in / {summary.tokens_out} out, cost {cost}; "
        f"judge tokens {summary.judge_tokens_in} in / {summary.judge_tokens_out} out"
    )
    return table
