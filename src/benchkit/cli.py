"""``python -m benchkit``: the minimal command line.

Commands: ``run PATH``, ``validate PATH``, ``list DIR``, ``report RESULT``. Bad input exits
with status 2 and a one-paragraph message (no traceback); ``run --fail-under X`` exits 1
when a condition's pass rate is below X; Ctrl-C keeps what finished and exits 130.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from benchkit._version import __version__
from benchkit.errors import BenchkitError, ConfigError, FormatError

if TYPE_CHECKING:
    from rich.console import Console

    from benchkit.model import Suite
    from benchkit.protocols import ResultSink
    from benchkit.results import CellResult, RunResult
    from benchkit.runner import Progress
    from benchkit.store import PreparedRun, Store

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAIL_UNDER",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "INTERRUPTS",
    "Parser",
    "ProgressBar",
    "add_store_options",
    "console",
    "load_result",
    "main",
    "stored_run",
]

EXIT_OK, EXIT_FAIL_UNDER, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
FORMATS = ("table", "json", "markdown")

#: What Ctrl-C surfaces as from ``anyio.run``: KeyboardInterrupt, or on Python 3.10 (where
#: asyncio's runner cancels the main task) the CancelledError of that task.
INTERRUPTS = (KeyboardInterrupt, asyncio.CancelledError)

#: Subcommands that live with their feature, as "module:function"; each function takes the
#: argparse subparsers object, adds its parsers and sets ``func`` (returning an exit code).
_FEATURE_COMMANDS: tuple[str, ...] = (
    "benchkit.store._cli:add_commands",
    "benchkit.formats._eval_skills_cli:add_commands",
    "benchkit.formats._skillvault_cli:add_commands",
    "benchkit.formats._codeforge_cli:add_commands",
    "benchkit.formats._memorybench_cli:add_commands",
    "benchkit.serve._cli:add_commands",
)


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in benchkit's one-paragraph style (exit 2)."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_BAD_INPUT, f"benchkit: error: {message} (see `{self.prog} --help`)\n")


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m benchkit", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"benchkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    run = sub.add_parser("run", help="run a benchmark file or directory")
    run.add_argument("path", help="benchmark file or directory")
    run.add_argument("-c", "--concurrency", type=int, help="cells running at once")
    run.add_argument("-t", "--timeout", type=float, help="per-cell timeout in seconds")
    run.add_argument("-r", "--retries", type=int, help="retries for execution errors")
    run.add_argument("-e", "--epochs", type=int, help="times each task runs per condition")
    run.add_argument("--seed", type=int, help="seed for every random choice")
    run.add_argument(
        "-d", "--deterministic", action="store_true", default=None, help="stable byte output"
    )
    run.add_argument("-o", "--output", type=Path, help="where to write the result JSON")
    run.add_argument("-f", "--format", choices=FORMATS, default="table", help="stdout format")
    run.add_argument(
        "--fail-under", type=float, metavar="RATE", help="exit 1 if a pass rate is below RATE"
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument(
        "--store",
        metavar="PATH",
        help="the run store (default: $BENCHKIT_STORE, else .benchkit/benchkit.db)",
    )
    run.add_argument("--no-store", action="store_true", help="do not write to the run store")
    run.add_argument(
        "--resume",
        action="store_true",
        help="continue the latest run of this suite (or --run-id): only unfinished cells run",
    )
    run.add_argument(
        "--retry-errors",
        action="store_true",
        help="with --resume, also run errored and timed-out cells again (implies --resume)",
    )
    run.add_argument(
        "--run-id", metavar="ID", help="the run's id (with --resume: the run to resume)"
    )
    chat = run.add_argument_group(
        "chat models (CodeForge datasets)",
        "Run a dataset of prompts against a chat model and score it with judge metrics.",
    )
    chat.add_argument("--model", help="the chat model under test")
    chat.add_argument("--base-url", help="its OpenAI-compatible endpoint")
    chat.add_argument("--metrics", help="comma-separated metric names (e.g. correctness)")
    chat.add_argument("--judge-model", help="the judge model (default gpt-4o)")
    chat.add_argument("--judge-base-url", help="the judges' endpoint")
    chat.add_argument("--export", type=Path, metavar="FILE", help="CodeForge-shaped results")

    validate = sub.add_parser("validate", help="check a benchmark file without running it")
    validate.add_argument("path")

    listing = sub.add_parser("list", help="list the benchmarks found under a directory")
    listing.add_argument("directory", nargs="?", default="benchmarks")

    report = sub.add_parser("report", help="render a saved result (result JSON or cells JSONL)")
    report.add_argument("result", type=Path)
    report.add_argument("-f", "--format", choices=FORMATS, default="table")

    run.set_defaults(func=_cmd_run)
    validate.set_defaults(func=_cmd_validate)
    listing.set_defaults(func=_cmd_list)
    report.set_defaults(func=_cmd_report)
    for target in _FEATURE_COMMANDS:
        module_name, _, attr = target.partition(":")
        getattr(importlib.import_module(module_name), attr)(sub)
    return parser


def console(stream: TextIO) -> Console:
    """A rich console on ``stream`` (no highlighting; wide when not a terminal)."""
    from rich.console import Console

    # Not a terminal (a pipe, a CI log): wide enough that tables never wrap their cells.
    width = None if stream.isatty() else 160
    return Console(file=stream, highlight=False, soft_wrap=True, width=width)


def _emit(result: RunResult, fmt: str, out: TextIO) -> None:
    from benchkit import reports

    if fmt == "json":
        out.write(reports.to_json(result) + "\n")
    elif fmt == "markdown":
        out.write(reports.to_markdown(result))
    else:
        console(out).print(reports.to_table(result))


def _apply_options(suite: Suite, args: argparse.Namespace) -> Suite:
    changes = {
        name: getattr(args, name)
        for name in ("concurrency", "timeout", "retries", "epochs", "seed", "deterministic")
        if getattr(args, name) is not None
    }
    if not changes:
        return suite
    try:
        return suite.with_options(**changes)
    except ValueError as exc:
        raise ConfigError(str(exc), fix="pass a positive value.") from exc


def add_store_options(parser: argparse.ArgumentParser) -> None:
    """``--store PATH`` and ``--no-store``, for every command that runs a suite."""
    parser.add_argument(
        "--store",
        metavar="PATH",
        help="the run store (default: $BENCHKIT_STORE, else .benchkit/benchkit.db)",
    )
    parser.add_argument("--no-store", action="store_true", help="do not write to the run store")


@contextmanager
def stored_run(args: argparse.Namespace, suite: Suite) -> Iterator[tuple[list[ResultSink], str]]:
    """Open the run store (unless ``--no-store``), start a run of ``suite`` in it, and yield
    the sinks to give the Runner and the run id; the store is closed afterwards and the
    run id printed on stderr, so every command's results end up in the run history."""
    from benchkit.runner import new_run_id

    if args.no_store:
        yield [], new_run_id(suite)
        return
    from benchkit.store import Store

    store = Store(args.store)
    try:
        prepared = store.prepare(suite)
        yield [prepared.sink], prepared.run_id
        sys.stderr.write(f"run {prepared.run_id}: stored in {store.path}\n")
    finally:
        store.close()


class ProgressBar:
    """A rich progress bar on stderr: cells done, errors, rate and ETA (a progress callback)."""

    def __init__(self, total: int | None) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]running"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("errors {task.fields[errors]}"),
            TextColumn("{task.fields[rate]:.1f} cells/s"),
            TimeRemainingColumn(),
            console=console(sys.stderr),
            transient=True,
        )
        self._task = self._progress.add_task("run", total=total, errors=0, rate=0.0)
        self._last = 0.0

    def __enter__(self) -> ProgressBar:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def __call__(self, event: Progress) -> None:
        now = time.monotonic()
        if now - self._last < 0.1 and event.done != event.total:
            return
        self._last = now
        self._progress.update(
            self._task, completed=event.done, errors=event.errors, rate=event.rate
        )


def _cmd_run(args: argparse.Namespace) -> int:
    import anyio

    from benchkit.formats import load
    from benchkit.runner import Runner, new_run_id
    from benchkit.store import JsonlSink

    chat = _chat_suite(args)
    suite = _apply_options(chat if chat is not None else load(args.path), args)
    sinks: list[ResultSink] = []
    done: tuple[CellResult, ...] = ()
    store: Store | None = None
    if args.no_store:
        if args.resume or args.retry_errors:
            raise ConfigError(
                "--resume and --retry-errors need the run store, and --no-store turns it off",
                fix="drop --no-store.",
            )
        run_id = args.run_id or new_run_id(suite)
    else:
        from benchkit.store import Store

        store = Store(args.store)
        try:
            prepared = store.prepare(
                suite, run_id=args.run_id, resume=args.resume, retry_errors=args.retry_errors
            )
        except BaseException:
            store.close()
            raise
        run_id, done = prepared.run_id, prepared.done
        sinks.append(prepared.sink)
        _say_prepared(prepared, store, args, sys.stderr)
    result_path: Path | None = args.output
    if result_path is None and store is None:
        result_path = Path(".benchkit") / "runs" / run_id / "result.json"
    cells_path = None
    if result_path is not None:
        cells_path = result_path.with_name(result_path.stem + ".cells.jsonl")
        sinks.append(JsonlSink(cells_path, result_path=result_path))
    show_progress = not args.no_progress and sys.stderr.isatty()
    bar = ProgressBar(_total(suite)) if show_progress else None
    runner = Runner(sinks=sinks, progress=bar)

    async def main() -> RunResult:
        return await runner.run(suite, run_id=run_id, done=done)

    interrupted = False
    try:
        if bar is not None:
            with bar:
                result = anyio.run(main)
        else:
            result = anyio.run(main)
    except INTERRUPTS:
        if runner.last_result is None:
            raise
        result, interrupted = runner.last_result, True
    finally:
        if store is not None:
            store.close()

    _emit(result, args.format, sys.stdout)
    if chat is not None:
        _chat_report(result, suite, args)
    err = sys.stderr
    if interrupted or result.interrupted:
        err.write(f"interrupted: {result.not_run} cells did not run; ")
        err.write(f"{len(result.cells)} finished cells kept.")
        if store is not None:
            err.write(" To continue it, run the same command with --resume.")
        err.write("\n")
    where = []
    if store is not None:
        where.append(f"stored in {store.path}")
    if result_path is not None:
        where.append(f"results in {result_path} (cells: {cells_path})")
    err.write(f"run {result.run_id}: {'; '.join(where)}\n")
    if interrupted:
        return EXIT_INTERRUPTED
    if args.fail_under is not None:
        low = [a for a in result.aggregates if a.pass_rate < args.fail_under]
        if low:
            names = ", ".join(f"{a.condition_id} ({a.pass_rate:.3f})" for a in low)
            err.write(f"pass rate below {args.fail_under}: {names}\n")
            return EXIT_FAIL_UNDER
    return EXIT_OK


def _chat_suite(args: argparse.Namespace) -> Suite | None:
    """The suite for a CodeForge dataset run against ``--model``, or None for other files."""
    from benchkit.formats import detect_format

    chat_options = ("model", "base_url", "metrics", "judge_model", "judge_base_url", "export")
    given = [name for name in chat_options if getattr(args, name) is not None]
    if not given and detect_format(args.path) != "codeforge":
        return None
    if args.model is None or args.metrics is None:
        raise ConfigError(
            f"{args.path} is run against a chat model: it needs --model and --metrics",
            fix="add e.g. --model gpt-4o-mini --metrics correctness,answer_relevancy.",
        )
    from benchkit.formats.codeforge import codeforge_suite

    return codeforge_suite(
        args.path,
        model=args.model,
        metrics=args.metrics,
        base_url=args.base_url,
        judge_model=args.judge_model,
        judge_base_url=args.judge_base_url,
    )


def _chat_report(result: RunResult, suite: Suite, args: argparse.Namespace) -> None:
    """Per-metric means with intervals and the per-difficulty breakdown; the export."""
    from benchkit.formats._codeforge_cli import summary_table
    from benchkit.formats.codeforge import summary, write_results

    if args.format == "table":
        console(sys.stdout).print(summary_table(summary(result)))
    if args.export is not None:
        path = write_results(result, args.export, suite)
        sys.stderr.write(f"CodeForge results: {path}\n")


def _say_prepared(
    prepared: PreparedRun, store: Store, args: argparse.Namespace, err: TextIO
) -> None:
    """Tell the user what the store decided: a resume (and what it keeps), or a new run."""
    if prepared.resumed:
        redo = []
        if prepared.retried:
            redo.append(f"{prepared.retried} errored cells run again")
        if prepared.dropped:
            redo.append(f"{prepared.dropped} cells whose task or condition changed run again")
        extra = f" ({'; '.join(redo)})" if redo else ""
        err.write(
            f"resuming run {prepared.run_id}: {len(prepared.done)} finished cells kept{extra}\n"
        )
    elif args.resume or args.retry_errors:
        what = f"no run {args.run_id!r}" if args.run_id else "no earlier run of this suite"
        err.write(f"nothing to resume ({what} in {store.path}): starting run {prepared.run_id}\n")
    elif prepared.replaced:
        err.write(f"replacing the stored run {prepared.run_id} (deterministic run ids repeat)\n")


def _total(suite: Suite) -> int | None:
    count = suite.benchmark.task_count
    if count is None:
        return None
    return count * len(suite.conditions) * suite.options.epochs


def _cmd_validate(args: argparse.Namespace) -> int:
    from benchkit.formats import load

    suite = load(args.path)
    bench = suite.benchmark
    count = bench.task_count
    tasks = f"{count} tasks" if count is not None else "streamed tasks"
    if count is None:
        tasks = f"{sum(1 for _ in bench.iter_tasks())} tasks (streamed)"
    sys.stdout.write(
        f"ok: {bench.source.format} benchmark {bench.id!r} v{bench.version}: {tasks}, "
        f"{len(suite.conditions)} conditions ({bench.source.path})\n"
    )
    return EXIT_OK


def _cmd_list(args: argparse.Namespace) -> int:
    from benchkit.formats import discover

    root = Path(args.directory)
    if not root.is_dir():
        raise ConfigError(f"{str(root)!r} is not a directory", fix="pass a directory to list.")
    found, problems = discover(root)
    from rich.table import Table

    table = Table(title=f"benchmarks under {root}", title_justify="left")
    for column in ("id", "format", "version", "tasks", "conditions", "path"):
        table.add_column(column)
    for path, suite in found:
        bench = suite.benchmark
        count = bench.task_count
        table.add_row(
            bench.id,
            bench.source.format,
            bench.version,
            "?" if count is None else str(count),
            str(len(suite.conditions)),
            str(path),
        )
    out = console(sys.stdout)
    out.print(table)
    for path, error in problems:
        out.print(f"[yellow]skipped[/] {path}: {error}")
    return EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    result = load_result(args.result)
    _emit(result, args.format, sys.stdout)
    return EXIT_OK


def load_result(path: Path) -> RunResult:
    """A RunResult from a result JSON file, or rebuilt from a cells JSONL file."""
    from benchkit.results import RunResult

    if not path.is_file():
        raise ConfigError(f"no result file at {str(path)!r}", fix="pass a result.json path.")
    if path.suffix == ".jsonl":
        return _from_jsonl(path)
    try:
        return RunResult.from_json(path.read_bytes())
    except ValueError as exc:
        raise FormatError(
            f"not a benchkit result: {exc}",
            file=path,
            fix="pass the result.json written by `benchkit run` (or its .cells.jsonl).",
        ) from exc
    except Exception as exc:  # cattrs raises ClassValidationError / KeyError on bad shapes
        raise FormatError(
            f"not a benchkit result ({type(exc).__name__})",
            file=path,
            fix="pass the result.json written by `benchkit run` (or its .cells.jsonl).",
        ) from exc


def _from_jsonl(path: Path) -> RunResult:
    from benchkit._aggregate import aggregate_run
    from benchkit.results import RunResult
    from benchkit.store import read_jsonl

    info, cells = read_jsonl(path)
    if info is None:
        raise FormatError("no run header line", file=path, line=1, fix="pass a cells JSONL file.")
    aggregates, groups, comparisons = aggregate_run(
        cells,
        [c.id for c in info.conditions],
        method=info.scoring_method,
        k=info.scoring_k,
        errors_as=info.options.errors_as,
        seed=info.options.seed,
    )
    total = info.total_cells
    return RunResult(
        info=info,
        cells=tuple(cells),
        aggregates=aggregates,
        groups=groups,
        comparisons=comparisons,
        interrupted=total is not None and len(cells) < total,
        not_run=0 if total is None else max(0, total - len(cells)),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except BenchkitError as exc:
        sys.stderr.write(f"benchkit: error: {exc}\n")
        return EXIT_BAD_INPUT
    except INTERRUPTS:
        sys.stderr.write("benchkit: interrupted\n")
        return EXIT_INTERRUPTED
