"""``python -m benchkit eval``: eval-skills' ``eval`` command, run by benchkit's Runner.

    python -m benchkit eval --skills benchmarks/skills/calculator --benchmark coding-easy

Loads the benchmark (an id in ``--benchmarks-dir``, a ``.json`` file or a directory), finds
the skills (``skill.json`` under each ``--skills`` path), runs every task against every
skill ``--runs`` times, and writes the eval-skills report (``--format``: json, markdown,
html, csv) to ``--output-dir`` as ``eval-result-<timestamp>.<ext>``, with benchkit's own
result beside it (``benchkit-result-<timestamp>.json``, and ``.cells.jsonl`` written as
cells finish). The terminal shows benchkit's table — pass rates with Wilson intervals and
the paired comparisons between skills — and the original's one-line summary per skill.
``-k``/``--tag``/``--condition`` (a skill id)/``--limit`` run part of it and
``--junit-xml`` writes JUnit XML, the same options as ``run`` (from the CLI toolkit).

Exit status: 0; 1 with ``--exit-on-fail`` when a skill's completion rate is below
``--min-completion``; 2 for bad input; 130 when interrupted (finished cells are kept).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from benchkit._limits import (
    MAX_CONCURRENCY,
    MAX_EPOCHS,
    MAX_RETRIES,
    MAX_SEED,
    MAX_TIMEOUT_S,
    MIN_SEED,
)
from benchkit.cli_toolkit import (
    ModelChoice,
    add_junit_option,
    add_select_options,
    add_store_options,
    apply_models,
    bounded,
    select,
    stored_run,
    write_junit,
)
from benchkit.errors import ConfigError

if TYPE_CHECKING:
    from rich.table import Table

    from benchkit.results import RunResult

__all__ = ["add_commands"]

_DEFAULT_FORMATS = ("json", "markdown")


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add the ``eval`` command to ``python -m benchkit``."""
    from benchkit.formats.eval_skills.report import FORMATS

    parser = subparsers.add_parser(
        "eval",
        help="evaluate eval-skills skills against an eval-skills benchmark",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument(
        "--skills",
        nargs="+",
        required=True,
        metavar="PATH",
        help="skill dirs or skill.json files (or the name of a built-in skill: calculator)",
    )
    parser.add_argument(
        "--benchmark", default="coding-easy", metavar="ID|PATH", help="default: coding-easy"
    )
    parser.add_argument(
        "--benchmarks-dir",
        type=Path,
        metavar="DIR",
        help="where ids are looked up (./benchmarks, else the built-ins)",
    )
    parser.add_argument(
        "--runs", type=_positive_int(MAX_EPOCHS), default=1, help="runs per task (epochs)"
    )
    parser.add_argument(
        "--k",
        type=_positive_int(MAX_EPOCHS),
        default=1,
        help="k of pass_at_k benchmarks (<= --runs)",
    )
    parser.add_argument(
        "--concurrency", type=_positive_int(MAX_CONCURRENCY), default=4, help="tasks at once"
    )
    parser.add_argument(
        "--timeout", type=_positive_ms, default=30000.0, metavar="MS", help="per-task timeout"
    )
    parser.add_argument(
        "--retries",
        type=_non_negative_int(MAX_RETRIES),
        default=0,
        help="retries of failed invocations",
    )
    parser.add_argument(
        "--format",
        nargs="+",
        choices=tuple(FORMATS),
        default=list(_DEFAULT_FORMATS),
        help="report formats (json markdown)",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=Path(".benchkit") / "reports",  # never an untracked folder in a checkout
        metavar="DIR",
        help="where the reports go (default .benchkit/reports)",
    )
    parser.add_argument(
        "--min-completion", type=_rate, default=0.7, metavar="X", help="for --exit-on-fail"
    )
    parser.add_argument(
        "--exit-on-fail", action="store_true", help="exit 1 if a completion rate is below X"
    )
    parser.add_argument(
        "--seed",
        type=bounded(int, MIN_SEED, MAX_SEED),
        default=0,
        help="seed for the bootstrap intervals",
    )
    parser.add_argument(
        "--judge",
        metavar="MODEL",
        help="the llm_judge tasks' model (local: the embedded model, offline; benchkit[local])",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_junit_option(parser)
    add_store_options(parser)
    add_select_options(parser)  # condition ids are the skill ids
    parser.set_defaults(func=_cmd_eval)


def _at_most(value: float, high: float, text: str) -> None:
    """A usage error when ``value`` (parsed from ``text``) is past its bound."""
    if value > high:
        raise argparse.ArgumentTypeError(
            f"expected at most {high:,}, got {text!r} (docs/limits.md lists the bounds)"
        )


def _positive_int(high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
        _at_most(value, high, text)
        return value

    return parse


def _non_negative_int(high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < 0:
            raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
        _at_most(value, high, text)
        return value

    return parse


def _positive_ms(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected milliseconds > 0, got {text!r}")
    _at_most(value, MAX_TIMEOUT_S * 1000, text)
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a rate between 0 and 1, got {text!r}")
    return value


def _cmd_eval(args: argparse.Namespace) -> int:

    from benchkit._js import to_fixed
    from benchkit.cli_toolkit import (
        EXIT_FAIL_UNDER,
        EXIT_OK,
        ProgressBar,
        console,
        progress_for,
        resume_command,
        run_until_signalled,
        say_interrupted,
    )
    from benchkit.formats.eval_skills import load_benchmark
    from benchkit.formats.eval_skills.report import (
        build_reports,
        iso_timestamp,
        report_stem,
        write_reports,
    )
    from benchkit.formats.eval_skills.skills import conditions, discover, versions
    from benchkit.model import ScoringSpec, Suite
    from benchkit.reports import to_table
    from benchkit.store import JsonlSink

    loaded = load_benchmark(args.benchmark, benchmarks_dir=args.benchmarks_dir)
    skills = discover(args.skills)
    benchmark = loaded.benchmark
    if benchmark.scoring.method == "pass_at_k":
        if args.k > args.runs:
            raise ConfigError(
                f"pass@{args.k} needs at least {args.k} runs per task, got --runs {args.runs}",
                fix=f"run with --runs {args.k} or more, or lower --k.",
            )
        benchmark = attrs.evolve(benchmark, scoring=ScoringSpec("pass_at_k", args.k))
    timeout = args.timeout / 1000.0
    longest = max([timeout, *(t.timeout for t in benchmark.iter_tasks() if t.timeout)])
    options = attrs.evolve(
        loaded.options,
        concurrency=args.concurrency,
        timeout=timeout,
        retries=args.retries,
        epochs=args.runs,
        seed=args.seed,
    )
    suite = Suite(benchmark, conditions(skills, timeout=longest + 1.0), options, loaded.base_dir)
    suite = apply_models(suite, ModelChoice(judge=args.judge), where=str(args.benchmark))
    suite = select(suite, args)

    timestamp = iso_timestamp()
    native = "benchkit-result-" + report_stem(timestamp).removeprefix("eval-result-")
    output_dir: Path = args.output_dir
    result_path = output_dir / f"{native}.json"
    cells_path = output_dir / f"{native}.cells.jsonl"
    total = (suite.benchmark.task_count or 0) * len(suite.conditions) * args.runs
    # A bar on a terminal; in CI or a pipe, a plain line every few seconds.
    progress = progress_for(total, quiet=args.no_progress)
    bar = progress if isinstance(progress, ProgressBar) else None
    with (
        stored_run(
            args,
            suite,
            sinks=[JsonlSink(cells_path, result_path=result_path)],
            progress=progress,
        ) as stored,
        bar or contextlib.nullcontext(),
    ):
        result, stopped_by = run_until_signalled(stored.runner, stored.arun)
    interrupted = stopped_by is not None
    store = stored.store

    reports = build_reports(
        result,
        benchmark=suite.benchmark,
        versions=versions(skills),
        timeout_ms=args.timeout,
        timestamp=timestamp,
        seed=args.seed,
    )
    written = write_reports(reports, output_dir, args.format, timestamp=timestamp)
    write_junit(result, args)

    out = console(sys.stdout)
    out.print(to_table(result))
    if result.comparisons:
        out.print(_comparisons(result))
    for report in sorted(reports, key=lambda r: -r["summary"]["compositeScore"]):
        summary = report["summary"]
        out.print(
            f"{report['skillId']} — CR: {to_fixed(summary['completionRate'] * 100, 1)}% | "
            f"ER: {to_fixed(summary['errorRate'] * 100, 1)}% | "
            f"Score: {to_fixed(summary['compositeScore'], 3)}"
        )
    err = sys.stderr
    if interrupted or result.interrupted:
        say_interrupted(
            result,
            resumable=store is not None,
            err=err,
            command=None if store is None else resume_command(args, store),
            where="" if store is None else f"in {store.path} as run {result.run_id}",
        )
    err.write(f"reports: {', '.join(str(p) for p in written)}\n")
    err.write(f"benchkit result: {result_path} (cells: {cells_path})\n")
    if stopped_by is not None:
        return stopped_by
    if args.exit_on_fail:
        low = [r for r in reports if r["summary"]["completionRate"] < args.min_completion]
        if low:
            names = ", ".join(str(r["skillId"]) for r in low)
            err.write(f"{len(low)} skill(s) below threshold ({args.min_completion}): {names}\n")
            return EXIT_FAIL_UNDER
    return EXIT_OK


def _comparisons(result: RunResult) -> Table:
    """The paired comparisons between skills: Δ pass rate, Δ score with its task-level
    paired interval, the tasks that improved or regressed, and the p-value with its test."""
    from rich.table import Table

    table = Table(title="paired comparisons (target vs baseline)", title_justify="left")
    for header in ("comparison", "Δ pass rate", "Δ score [95% CI]", "improved", "regressed"):
        table.add_column(header, justify="left" if header == "comparison" else "right")
    table.add_column("p (test)", justify="right")
    for cmp in result.comparisons:
        iv = cmp.paired.interval
        table.add_row(
            f"{cmp.target} vs {cmp.baseline}",
            f"{cmp.pass_rate_delta:+.3f}",
            f"{cmp.paired.delta:+.3f} [{iv.low:+.3f}, {iv.high:+.3f}]",
            str(len(cmp.improved)),
            str(len(cmp.regressed)),
            cmp.p_text(),
        )
    return table
