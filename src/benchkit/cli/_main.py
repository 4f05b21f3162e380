"""``python -m benchkit``: the minimal command line.

Commands: ``run PATH``, ``validate PATH``, ``list DIR``, ``report RESULT``. Bad input exits
with status 2 and a one-paragraph message (no traceback); ``run --fail-under X`` exits 1
when a condition's pass rate is below X; Ctrl-C keeps what finished and exits 130.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from benchkit import _limits
from benchkit._builtins import benchmarks_dir
from benchkit._progress import ProgressLines
from benchkit._version import __version__
from benchkit.cli_toolkit import (
    EXIT_BAD_INPUT,
    EXIT_FAIL_UNDER,
    EXIT_INTERRUPTED,
    EXIT_OK,
    FORMATS,
    INTERRUPTS,
    Parser,
    ProgressBar,
    RunHook,
    add_junit_option,
    add_select_options,
    bounded,
    console,
    emit,
    load_result,
    run_until_signalled,
    select,
    write_junit,
)
from benchkit.errors import BenchkitError, ConfigError

if TYPE_CHECKING:
    from benchkit.executors import Executor
    from benchkit.model import Suite
    from benchkit.protocols import ResultSink
    from benchkit.registry import Registry
    from benchkit.results import CellResult, RunInfo, RunResult
    from benchkit.store import PreparedRun, Store

__all__ = ["main"]

#: Generic subcommands that live with their feature, as "module:function"; each function
#: takes the argparse subparsers object, adds its parsers and sets ``func`` (returning an
#: exit code). The store's come first, then every installed tool's (:func:`_tool_commands`),
#: then these others.
_STORE_COMMANDS: tuple[str, ...] = ("benchkit.cli._store:add_commands",)
_FEATURE_COMMANDS: tuple[str, ...] = (
    "benchkit.cli._mcp:add_commands",
    "benchkit.serve._cli:add_commands",
)


def _import(target: str) -> Callable[[Any], None]:
    module_name, _, attr = target.partition(":")
    adder: Callable[[Any], None] = getattr(importlib.import_module(module_name), attr)
    return adder


def _tool_commands() -> list[Callable[[Any], None]]:
    """Every installed tool's ``add_commands`` functions (:attr:`benchkit.tools.Tool.commands`),
    tool by tool in name order: the CLI lists no tool, it asks the registry."""
    from benchkit.registry import default_registries

    return [tool.load(ref) for tool in default_registries().all_tools() for ref in tool.commands]


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m benchkit", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"benchkit {__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log what happens on stderr: -v retries, rate-limit waits and memory steps "
        "(add_memory ...), -vv also every provider call; may also follow the command",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    run = sub.add_parser("run", help="run a benchmark file or directory")
    run.add_argument("path", help="benchmark file or directory")
    run.add_argument(
        "-c",
        "--concurrency",
        type=bounded(int, 1, _limits.MAX_CONCURRENCY),
        help="cells running at once",
    )
    run.add_argument(
        "-t",
        "--timeout",
        type=bounded(float, 0, _limits.MAX_TIMEOUT_S, above=True),
        help="per-cell timeout in seconds",
    )
    run.add_argument(
        "-r",
        "--retries",
        type=bounded(int, 0, _limits.MAX_RETRIES),
        help="retries for execution errors",
    )
    run.add_argument(
        "-e",
        "--epochs",
        type=bounded(int, 1, _limits.MAX_EPOCHS),
        help="times each task runs per condition",
    )
    run.add_argument(
        "--seed",
        type=bounded(int, _limits.MIN_SEED, _limits.MAX_SEED),
        help="seed for every random choice",
    )
    run.add_argument(
        "--cluster-by",
        metavar="FIELD",
        help="task field whose value groups tasks into one statistical unit "
        "(e.g. metadata.passage)",
    )
    run.add_argument(
        "--until-decided",
        action="store_true",
        default=None,
        help="run tasks in random order and stop once every comparison is decided by an "
        "anytime-valid test (docs/statistics.md)",
    )
    run.add_argument(
        "--margin",
        type=float,
        metavar="D",
        help="with --until-decided: also stop once a difference is shown to lie within ±D",
    )
    run.add_argument(
        "--judge-repeats",
        type=int,
        metavar="N",
        help="ask every evaluator N times per cell: majority verdict, mean score, flip rate",
    )
    run.add_argument(
        "-d", "--deterministic", action="store_true", default=None, help="stable byte output"
    )
    run.add_argument("-o", "--output", type=Path, help="where to write the result JSON")
    add_junit_option(run)
    run.add_argument("-f", "--format", choices=FORMATS, default="table", help="stdout format")
    run.add_argument(
        "--fail-under",
        type=bounded(float, 0, 1),
        metavar="RATE",
        help="exit 1 if a pass rate is below RATE",
    )
    run.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress (a bar on a terminal, else a line every 5 s on stderr)",
    )
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
    add_select_options(run)
    scale = run.add_argument_group(
        "scale out (docs/scale-out.md)",
        "Run the cells on a Ray cluster; this process still writes every result.",
    )
    scale.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where cells run: in this process (default) or on Ray actors (benchkit[ray])",
    )
    scale.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="the Ray cluster: auto (started with `ray start` here) or ray://HOST:10001 "
        "(default: $RAY_ADDRESS, else a local Ray)",
    )
    scale.add_argument(
        "--workers",
        type=bounded(int, 1, _limits.MAX_CONCURRENCY),
        metavar="N",
        help="Ray actors (default: one per cluster CPU)",
    )
    scale.add_argument(
        "--concurrency-per-worker",
        type=bounded(int, 1, _limits.MAX_CONCURRENCY),
        metavar="N",
        help="cells one Ray actor runs at once (default: the file's, else --concurrency "
        "divided over the workers); the run's --concurrency still caps the cluster",
    )
    scale.add_argument(
        "--ship-files",
        action="store_true",
        help="send the benchmark's directory to the nodes (no shared filesystem needed)",
    )

    validate = sub.add_parser("validate", help="check a benchmark file without running it")
    validate.add_argument("path")

    listing = sub.add_parser("list", help="list the benchmarks found under a directory")
    listing.add_argument(
        "directory", nargs="?", help="default: ./benchmarks, else the built-in benchmarks"
    )

    report = sub.add_parser("report", help="render a saved result (result JSON or cells JSONL)")
    report.add_argument("result", type=Path)
    report.add_argument("-f", "--format", choices=FORMATS, default="table")

    run.set_defaults(func=_cmd_run)
    validate.set_defaults(func=_cmd_validate)
    listing.set_defaults(func=_cmd_list)
    report.set_defaults(func=_cmd_report)
    adders = [
        *map(_import, _STORE_COMMANDS),
        *_tool_commands(),
        *map(_import, _FEATURE_COMMANDS),
    ]
    for add_commands in adders:
        add_commands(sub)
    return parser


def _apply_options(suite: Suite, args: argparse.Namespace) -> Suite:
    changes = {
        name: getattr(args, name)
        for name in (
            "concurrency",
            "timeout",
            "retries",
            "epochs",
            "seed",
            "deterministic",
            "cluster_by",
            "until_decided",
            "margin",
            "judge_repeats",
        )
        if getattr(args, name, None) is not None
    }
    if not changes:
        return suite
    try:
        return suite.with_options(**changes)
    except ValueError as exc:
        raise ConfigError(str(exc), fix="pass a positive value.") from exc


_LOCAL_OPTIONS = ("temperature", "max_tokens", "system", "tools", "seed", "timeout", "cache")


def _with_model(suite: Suite, model: str | None, path: str) -> Suite:
    """``--model M`` on a benchmark file: every ``chat`` condition asks M instead (``local``:
    the embedded model, keeping the options it shares with the chat provider)."""
    if model is None:
        return suite
    import attrs

    from benchkit.llm import LOCAL
    from benchkit.model import ProviderSpec

    # local:PATH.gguf names a file from the working directory, not the benchmark's folder.
    if model.startswith(LOCAL + ":"):
        model = f"{LOCAL}:{Path(model[len(LOCAL) + 1 :]).expanduser().resolve()}"

    conditions = []
    changed = False
    for condition in suite.conditions:
        spec = condition.provider
        if isinstance(spec, ProviderSpec) and spec.type == "chat":
            if model == LOCAL:
                kept = {k: v for k, v in spec.options.items() if k in _LOCAL_OPTIONS}
                spec = ProviderSpec("local", kept)
            else:
                spec = ProviderSpec("chat", {**spec.options, "model": model})
            condition = attrs.evolve(condition, provider=spec)
            changed = True
        conditions.append(condition)
    if not changed:
        raise ConfigError(
            f"--model names the chat model of {path}'s chat conditions, and it has none",
            fix="drop --model, or give the file a condition with `provider: {type: chat}`.",
        )
    return attrs.evolve(suite, conditions=tuple(conditions))


def _executor(args: argparse.Namespace) -> Executor | None:
    """The executor ``--executor`` names (None: the Runner's in-process default)."""
    if args.executor == "local":
        ray_only = (args.ray_address, args.workers, args.concurrency_per_worker)
        if any(v is not None for v in ray_only) or args.ship_files:
            raise ConfigError(
                "--ray-address, --workers, --concurrency-per-worker and --ship-files are for "
                "the Ray executor, and the executor is local",
                fix="add --executor ray (or drop those options).",
            )
        return None
    from benchkit.executors import RayExecutor

    return RayExecutor(
        args.ray_address,
        workers=args.workers,
        concurrency_per_worker=args.concurrency_per_worker,
        ship_files=args.ship_files,
    )


def _cmd_run(args: argparse.Namespace) -> int:

    from benchkit.formats import load
    from benchkit.registry import default_registries
    from benchkit.runner import Runner, new_run_id
    from benchkit.store import JsonlSink

    hook, built = _hooked_suite(args)
    if built is None:
        built = _with_model(load(args.path), getattr(args, "model", None), args.path)
    suite = _apply_options(built, args)
    suite = select(suite, args)
    executor = _executor(args)
    if executor is not None:  # refuse what cannot travel before the store records a run
        executor.check(suite, default_registries())
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
        # Said once the store's sink has opened the run: a second process resuming the
        # same run at the same moment is refused there, before it claims to resume.
        sinks.append(
            _Announced(prepared.sink, functools.partial(_say_prepared, prepared, store, args))
        )
    result_path: Path | None = args.output  # --no-store without --output writes no file
    cells_path = None
    if result_path is not None and result_path.is_dir():
        raise ConfigError(
            f"--output {str(result_path)!r} is a directory",
            fix=f"name the result file, e.g. --output {result_path / 'result.json'}.",
        )
    if result_path is not None:
        cells_path = result_path.with_name(result_path.stem + ".cells.jsonl")
        sinks.append(JsonlSink(cells_path, result_path=result_path))
    show_progress = not args.no_progress and sys.stderr.isatty()
    bar = ProgressBar(_total(suite)) if show_progress else None
    # Not a terminal (CI, a pipe): a plain line every few seconds instead of a bar.
    lines = None if bar is not None or args.no_progress else ProgressLines(interval=5.0)
    runner = Runner(sinks=sinks, progress=bar or lines, response_cache=store, executor=executor)

    async def main() -> RunResult:
        return await runner.run(suite, run_id=run_id, done=done)

    try:
        if bar is not None:
            with bar:
                result, stopped_by = run_until_signalled(runner, main)
        else:
            result, stopped_by = run_until_signalled(runner, main)
    finally:
        if store is not None:
            store.close()
    interrupted = stopped_by is not None

    emit(result, args.format, sys.stdout)
    write_junit(result, args)
    if hook is not None:
        hook.after(result, suite, args)
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
    if not where:
        where.append("not stored (--no-store; --output FILE writes the result JSON)")
    err.write(f"run {result.run_id}: {'; '.join(where)}\n")
    if stopped_by is not None:
        return stopped_by
    if args.fail_under is not None:
        low = [a for a in result.aggregates if a.pass_rate < args.fail_under]
        if low:
            names = ", ".join(f"{a.condition_id} ({a.pass_rate:.3f})" for a in low)
            err.write(f"pass rate below {args.fail_under}: {names}\n")
            return EXIT_FAIL_UNDER
    return EXIT_OK


def _hooked_suite(args: argparse.Namespace) -> tuple[RunHook | None, Suite | None]:
    """The first tool hook that builds this run's suite, and the suite (or None, None)."""
    for hook in getattr(args, "run_hooks", ()):
        suite = hook.suite(args)
        if suite is not None:
            return hook, suite
    return None, None


class _Announced:
    """A result sink that says something on stderr once ``sink`` has opened the run."""

    def __init__(self, sink: ResultSink, say: Callable[[TextIO], None]) -> None:
        self.sink = sink
        self.say = say

    async def open(self, info: RunInfo) -> None:
        await self.sink.open(info)
        self.say(sys.stderr)

    async def write(self, cell: CellResult) -> None:
        await self.sink.write(cell)

    async def close(self, result: RunResult) -> None:
        await self.sink.close(result)


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
    from benchkit.registry import default_registries
    from benchkit.runner import check_suite
    from benchkit.store._keys import suite_keys

    suite = load(args.path)
    if suite.conditions:  # build the plug-ins as `run` would: reject what it would reject
        check_suite(suite)
    bench = suite.benchmark
    # what a run checks before its first cell, over every task (streamed lines too)
    count = suite_keys(suite, default_registries()).task_count
    tasks = f"{count} tasks" if isinstance(bench.tasks, tuple) else f"{count} tasks (streamed)"
    sys.stdout.write(
        f"ok: {bench.source.format} benchmark {bench.id!r} v{bench.version}: {tasks}, "
        f"{len(suite.conditions)} conditions ({bench.source.path})\n"
    )
    return EXIT_OK


def _cmd_list(args: argparse.Namespace) -> int:
    from benchkit.formats import discover
    from benchkit.registry import default_registries

    root = Path(args.directory) if args.directory is not None else benchmarks_dir()
    if not root.is_dir():
        raise ConfigError(f"{str(root)!r} is not a directory", fix="pass a directory to list.")
    found, problems = discover(root)
    from rich.table import Table

    table = Table(title=f"benchmarks under {root}", title_justify="left")
    for column in ("id", "format", "version", "tasks", "conditions", "path"):
        table.add_column(column)
    formats = default_registries().formats
    for path, suite in found:
        bench = suite.benchmark
        count = bench.task_count
        table.add_row(
            bench.id,
            bench.source.format,
            "" if bench.version == "0" else bench.version,  # "0": the file gives none
            "?" if count is None else str(count),
            _conditions_cell(suite, formats),
            str(path),
        )
    out = console(sys.stdout)
    out.print(table)
    for path, error in problems:
        out.print(f"[yellow]skipped[/] {path}: {error}")
    return EXIT_OK


def _conditions_cell(suite: Suite, formats: Registry[Any]) -> str:
    """``list``'s conditions column: the count, or for a file that brings none, the option
    that sets them (a format's ``conditions_from``, e.g. ``--skills``), else nothing."""
    if suite.conditions:
        return str(len(suite.conditions))
    name = suite.benchmark.source.format
    hint = getattr(formats.get(name), "conditions_from", None) if name in formats else None
    return f"set by {hint}" if hint else ""


def _cmd_report(args: argparse.Namespace) -> int:
    result = load_result(args.result)
    emit(result, args.format, sys.stdout)
    return EXIT_OK


def _verbosity(argv: Sequence[str]) -> tuple[list[str], int]:
    """``-v`` / ``-vv`` / ``--verbose`` anywhere on the line (they are global options)."""
    rest: list[str] = []
    level = 0
    for i, arg in enumerate(argv):
        if arg == "--":
            rest.extend(argv[i:])
            break
        if arg == "--verbose":
            level += 1
        elif len(arg) > 1 and arg[0] == "-" and set(arg[1:]) == {"v"}:
            level += len(arg) - 1
        else:
            rest.append(arg)
    return rest, level


@contextmanager
def _logging(level: int) -> Iterator[None]:
    """Log benchkit's records on stderr for one command: INFO with -v, DEBUG with -vv."""
    if not level:
        yield
        return
    import logging

    logger = logging.getLogger("benchkit")
    previous = logger.level
    logger.setLevel(logging.INFO if level == 1 else logging.DEBUG)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """benchkit's own warnings (a manifest's unknown key) as one line, like its errors."""
    if category.__module__.startswith("benchkit"):
        (file or sys.stderr).write(f"benchkit: warning: {message}\n")
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


_default_showwarning = warnings.showwarning


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    rest, verbose = _verbosity(list(sys.argv[1:] if argv is None else argv))
    try:
        parser = _parser()
    except BenchkitError as exc:  # an installed tool whose commands cannot be imported
        sys.stderr.write(f"benchkit: error: {exc}\n")
        return EXIT_BAD_INPUT
    args = parser.parse_args(rest)
    args.verbose = verbose
    try:
        with _logging(verbose), warnings.catch_warnings():
            warnings.showwarning = _show_warning
            code: int = args.func(args)
        return code
    except BenchkitError as exc:
        sys.stderr.write(f"benchkit: error: {exc}\n")
        return EXIT_BAD_INPUT
    except INTERRUPTS:
        sys.stderr.write("benchkit: interrupted\n")
        return EXIT_INTERRUPTED
