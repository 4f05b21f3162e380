"""CodeForge on the command line: ``datasets list`` and the chat-model options of ``run``.

``python -m benchkit datasets list [DIR]``: the CodeForge datasets in a directory.

    python -m benchkit datasets list                      # benchmarks/codeforge
    python -m benchkit datasets list configs/benchmarks --format json

Shows each dataset's id (file stem, what a run is addressed by), name, file, task count
and difficulty mix. Files that cannot be read or are not valid datasets are listed after
the table with their error — never skipped in silence. Exit status 0; 2 when the
directory does not exist.

``python -m benchkit run DATASET --model M --metrics correctness,...``: a dataset run
against a chat model (the generic ``--model``) and scored by judge metrics
(:class:`ChatRun`, the tool's run hook, ``RUN_HOOK``), then the per-metric summary and,
with ``--export FILE``, CodeForge-shaped results.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchkit.cli_toolkit import console, model_choice
from benchkit.errors import ConfigError

if TYPE_CHECKING:
    from rich.table import Table

    from benchkit.formats.codeforge import MetricSummary, Summary
    from benchkit.model import Suite
    from benchkit.results import RunResult

__all__ = ["RUN_HOOK", "ChatRun", "add_commands", "summary_table"]

_CHAT_OPTIONS = ("base_url", "metrics", "judge_base_url", "export")


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


class ChatRun:
    """The ``run`` command's CodeForge part: ``--metrics`` and the judges' settings build
    the suite of a dataset against the chat model ``--model`` names (the generic option);
    the summary table and the ``--export`` file follow the generic report."""

    def add_options(self, run: argparse.ArgumentParser) -> None:
        chat = run.add_argument_group(
            "CodeForge datasets (with --model)",
            "Run a dataset of prompts against a chat model and score it with judge metrics.",
        )
        chat.add_argument("--base-url", help="the model's OpenAI-compatible endpoint")
        chat.add_argument("--metrics", help="comma-separated metric names (e.g. correctness)")
        chat.add_argument("--judge-model", metavar="MODEL", help="deprecated: the same as --judge")
        chat.add_argument("--judge-base-url", help="the judges' endpoint")
        chat.add_argument("--export", type=Path, metavar="FILE", help="CodeForge-shaped results")

    def suite(self, suite: Suite, args: argparse.Namespace) -> Suite | None:
        """The suite of a CodeForge dataset run against ``--model``, or None for other files."""
        from benchkit.formats.codeforge import FORMAT

        _judge_alias(args)
        given = [name for name in _CHAT_OPTIONS if getattr(args, name) is not None]
        if suite.benchmark.source.format != FORMAT.name:
            if given:
                flags = ", ".join("--" + name.replace("_", "-") for name in given)
                raise ConfigError(
                    f"{flags}: options of CodeForge datasets, and {args.path} is not one",
                    fix="drop them, or run a CodeForge dataset.",
                )
            return None  # another format's file
        model = model_choice(args).model
        if model is None or args.metrics is None:
            raise ConfigError(
                f"{args.path} is run against a chat model: it needs --model and --metrics",
                fix="add e.g. --model gpt-4o-mini --metrics correctness,answer_relevancy.",
            )
        from benchkit.formats.codeforge import codeforge_suite

        return codeforge_suite(
            suite,
            model=model,
            metrics=args.metrics,
            base_url=args.base_url,
            judge_model=model_choice(args).judge,
            judge_base_url=args.judge_base_url,
        )

    def after(self, result: RunResult, suite: Suite, args: argparse.Namespace) -> None:
        """Per-metric means with intervals and the per-difficulty breakdown; the export."""
        from benchkit.formats.codeforge import summary, write_results

        if args.format == "table":
            console(sys.stdout).print(summary_table(summary(result)))
        if args.export is not None:
            path = write_results(result, args.export, suite)
            sys.stderr.write(f"CodeForge results: {path}\n")


def _judge_alias(args: argparse.Namespace) -> None:
    """``--judge-model``, CodeForge's old name, as ``--judge`` (with a one-line note): one
    way to name a judge on every command and every file."""
    old = args.judge_model
    if old is None:
        return
    sys.stderr.write("benchkit: --judge-model is deprecated; it is --judge now (same meaning)\n")
    if args.judge is not None and args.judge != old:
        raise ConfigError(
            f"--judge {args.judge} and --judge-model {old} name two judges",
            fix="give --judge alone.",
        )
    args.judge, args.judge_model = old, None


#: The run hook the Tool names (``Tool.run_hook``).
RUN_HOOK = ChatRun()


def _mix(difficulties: Mapping[str, int]) -> str:
    from benchkit.formats.codeforge import DIFFICULTIES

    order = [d for d in DIFFICULTIES if d in difficulties]
    order += sorted(d for d in difficulties if d not in DIFFICULTIES)
    return ", ".join(f"{difficulties[d]} {d}" for d in order) or "–"


def _cmd_list(args: argparse.Namespace) -> int:
    from benchkit.cli_toolkit import EXIT_OK
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
