"""``python -m benchkit``: the minimal command line.

Commands: ``run PATH``, ``validate PATH``, ``list DIR``, ``report RESULT``. Bad input exits
with status 2 and a one-paragraph message (no traceback); ``run --fail-under X`` exits 1
when a condition's pass rate is below X; Ctrl-C keeps what finished and exits 130.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from benchkit import _limits
from benchkit._builtins import benchmarks_dir
from benchkit._version import __version__
from benchkit.cli_toolkit import (
    BUDGET_OPTIONS,
    EXIT_BAD_INPUT,
    EXIT_FAIL_UNDER,
    EXIT_INTERRUPTED,
    EXIT_OK,
    FORMATS,
    INTERRUPTS,
    Parser,
    ProgressBar,
    RunHook,
    add_baseline_options,
    add_budget_options,
    add_junit_option,
    add_model_options,
    add_select_options,
    apply_models,
    baseline_id,
    bounded,
    compare_with_baseline,
    console,
    emit,
    finish_command,
    load_result,
    model_choice,
    progress_for,
    resume_command,
    run_until_signalled,
    say_interrupted,
    select,
    write_junit,
)
from benchkit.errors import BenchkitError, ConfigError, RegistryError

if TYPE_CHECKING:
    from benchkit.executors import Executor
    from benchkit.model import Suite
    from benchkit.protocols import ResultSink
    from benchkit.registry import Registry
    from benchkit.store import PreparedRun, Store

__all__ = ["main"]

#: Generic subcommands that live with their feature, as "module:function"; each function
#: takes the argparse subparsers object, adds its parsers and sets ``func`` (returning an
#: exit code). The store's come first, then every loaded tool's (:func:`_add_tool_commands`),
#: then these others.
_STORE_COMMANDS: tuple[str, ...] = ("benchkit.cli._store:add_commands",)
_FEATURE_COMMANDS: tuple[str, ...] = (
    "benchkit.cli._mcp:add_commands",
    "benchkit.serve._cli:add_commands",
    "benchkit.cli._tools:add_commands",
)


def _import(target: str) -> Callable[[Any], None]:
    module_name, _, attr = target.partition(":")
    adder: Callable[[Any], None] = getattr(importlib.import_module(module_name), attr)
    return adder


def _chosen(argv: Sequence[str]) -> str | None:
    """The command word of a command line: its first argument that is not an option (the
    parser's own options take no value)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def _add_tool_commands(sub: argparse._SubParsersAction[Any], chosen: str | None) -> None:
    """Every loaded tool's commands (:attr:`benchkit.tools.Tool.commands`), tool by tool in
    name order: the CLI lists no tool, it asks the registry. Only the chosen command's
    module is imported; the others are listed by the name and help their Tool declares."""
    from benchkit.registry import default_registries

    for tool in default_registries().all_tools():
        for command in tool.commands:
            if command.name != chosen:
                sub.add_parser(command.name, help=command.help)
                continue
            before = set(sub.choices)
            tool.load(command.add)(sub)
            added = set(sub.choices) - before
            if added != {command.name}:
                raise RegistryError(
                    f"tool {tool.name!r}: {command.add!r} added the commands "
                    f"{sorted(added)}, and the tool declares {command.name!r}",
                    fix="add exactly the command the Tool's Command names.",
                )


def _add_run_hooks(run: argparse.ArgumentParser) -> None:
    """The loaded tools' run hooks (:attr:`benchkit.tools.Tool.run_hook`), each adding the
    options its tool declares. A hook that cannot be imported, or adds other options than
    it declares, is left out with one warning: ``run`` works without it."""
    from benchkit.registry import default_registries
    from benchkit.tools import ToolWarning

    hooks: list[RunHook] = []
    for tool in default_registries().all_tools():
        if tool.run_hook is None:
            continue
        try:
            hook: RunHook = tool.load(tool.run_hook)
            scratch = argparse.ArgumentParser(add_help=False)
            hook.add_options(scratch)
        except Exception as exc:  # a plug-in's hook may fail in any way
            text = (
                exc.render() if isinstance(exc, BenchkitError) else f"{type(exc).__name__}: {exc}"
            )
            warnings.warn(
                ToolWarning(f"tool {tool.name!r}: its run options are left out: {text}"),
                stacklevel=2,
            )
            continue
        added = {flag for action in scratch._actions for flag in action.option_strings}
        if added != set(tool.run_options):
            warnings.warn(
                ToolWarning(
                    f"tool {tool.name!r}: its run options are left out: its hook adds "
                    f"{sorted(added)}, and the tool declares {sorted(tool.run_options)}. "
                    "Fix: declare in Tool.run_options exactly the options the hook adds."
                ),
                stacklevel=2,
            )
            continue
        hook.add_options(run)
        hooks.append(hook)
    run.set_defaults(run_hooks=tuple(hooks))


def _parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; only the ``chosen`` command's tool modules are imported."""
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
    add_model_options(run)
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
    add_budget_options(run)
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
    add_baseline_options(run)
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
    run.add_argument(
        "--require-isolation",
        action="store_true",
        help="refuse to run model-written code where the sandbox cannot cut the network "
        "(sets BENCHKIT_REQUIRE_ISOLATION=1; docs/code.md)",
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

    run.set_defaults(func=_cmd_run, run_hooks=())
    validate.set_defaults(func=_cmd_validate)
    listing.set_defaults(func=_cmd_list)
    report.set_defaults(func=_cmd_report)
    if chosen == "run":
        _add_run_hooks(run)
    for target in _STORE_COMMANDS:
        _import(target)(sub)
    _add_tool_commands(sub, chosen)
    for target in _FEATURE_COMMANDS:
        _import(target)(sub)
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
            *BUDGET_OPTIONS,
        )
        if getattr(args, name, None) is not None
    }
    if not changes:
        return suite
    try:
        return suite.with_options(**changes)
    except ValueError as exc:
        raise ConfigError(str(exc), fix="pass a positive value.") from exc


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
    from benchkit._stored import StoredRun
    from benchkit.formats import load
    from benchkit.store import JsonlSink

    if args.require_isolation:  # read by every sandbox this process builds (docs/code.md)
        os.environ["BENCHKIT_REQUIRE_ISOLATION"] = "1"

    loaded = load(args.path)  # the file is parsed here, once
    hook, built = _hooked_suite(loaded, args)
    models = apply_models(built, model_choice(args), where=args.path)
    suite = select(_apply_options(models, args), args)
    result_path: Path | None = args.output  # --no-store without --output writes no file
    sinks: list[ResultSink] = []
    cells_path = None
    if result_path is not None and result_path.is_dir():
        raise ConfigError(
            f"--output {str(result_path)!r} is a directory",
            fix=f"name the result file, e.g. --output {result_path / 'result.json'}.",
        )
    if result_path is not None:
        cells_path = result_path.with_name(result_path.stem + ".cells.jsonl")
        sinks.append(JsonlSink(cells_path, result_path=result_path))
    baseline = baseline_id(args)  # before the run: `latest` is not this run
    # A bar on a terminal; in CI or a pipe, a plain line every few seconds.
    progress = progress_for(_total(suite), quiet=args.no_progress)
    bar = progress if isinstance(progress, ProgressBar) else None
    stored = StoredRun(
        suite,
        store=False if args.no_store else args.store,
        run_id=args.run_id,
        resume=args.resume,
        retry_errors=args.retry_errors,
        sinks=sinks,
        progress=progress,
        executor=_executor(args),
        announce=functools.partial(_say_prepared, args=args, err=sys.stderr),
    )
    with stored, bar or contextlib.nullcontext():
        result, stopped_by = run_until_signalled(stored.runner, stored.arun)
    store = stored.store
    interrupted = stopped_by is not None

    emit(result, args.format, sys.stdout)
    write_junit(result, args)
    if hook is not None:
        hook.after(result, suite, args)
    err = sys.stderr
    if interrupted or result.interrupted:
        say_interrupted(
            result,
            resumable=store is not None,
            err=err,
            command=None if store is None else resume_command(args, store, run_id=result.run_id),
            where="" if store is None else f"in {store.path} as run {result.run_id}",
        )
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
    code = compare_with_baseline(args, baseline, result, sys.stdout, err)
    if result.budget is not None:  # stopped by its budget: a threshold, as --fail-under
        code = EXIT_FAIL_UNDER
    if args.fail_under is not None:
        low = [a for a in result.aggregates if a.pass_rate < args.fail_under]
        if low:
            names = ", ".join(f"{a.condition_id} ({a.pass_rate:.3f})" for a in low)
            err.write(f"pass rate below {args.fail_under}: {names}\n")
            return EXIT_FAIL_UNDER
    return code


def _hooked_suite(loaded: Suite, args: argparse.Namespace) -> tuple[RunHook | None, Suite]:
    """The first tool hook that makes this run's suite of the file as loaded, and that
    suite (no hook: None and the file's own suite)."""
    for hook in args.run_hooks:
        suite = hook.suite(loaded, args)
        if suite is not None:
            return hook, suite
    return None, loaded


def _say_prepared(
    prepared: PreparedRun, store: Store, *, args: argparse.Namespace, err: TextIO
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
    from benchkit.llm._local import INSTALL_HINT, MissingExtra
    from benchkit.registry import default_registries
    from benchkit.runner import check_suite
    from benchkit.store._keys import suite_keys

    suite = load(args.path)
    note = ""
    try:
        if suite.conditions:  # build the plug-ins as `run` would: reject what it would reject
            check_suite(suite)
    except MissingExtra:  # the file is fine; this machine cannot run `local` yet
        note = f"note: it names the embedded model `local`; to run it here: {INSTALL_HINT}\n"
    bench = suite.benchmark
    # what a run checks before its first cell, over every task (streamed lines too)
    count = suite_keys(suite, default_registries()).task_count
    tasks = f"{count} tasks" if isinstance(bench.tasks, tuple) else f"{count} tasks (streamed)"
    sys.stdout.write(
        f"ok: {bench.source.format} benchmark {bench.id!r} v{bench.version}: {tasks}, "
        f"{len(suite.conditions)} conditions ({bench.source.path})\n"
    )
    sys.stdout.write(note)
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
            bench.source.format or "built in code",
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
    found = formats.find(name) if name is not None else None
    hint = getattr(found, "conditions_from", None)
    return f"set by {hint}" if hint else ""


def _explorer_app(**options: Any) -> Any:
    """The server of one run, imported when a command serves one (``benchkit[serve]``)."""
    from benchkit.serve import create_explorer_app

    return create_explorer_app(**options)


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

    from benchkit._secrets import LogFilter

    logger = logging.getLogger("benchkit")
    previous = logger.level
    logger.setLevel(logging.INFO if level == 1 else logging.DEBUG)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    handler.addFilter(LogFilter())  # no secret reaches the log
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
    chosen = _chosen(rest)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning  # a tool that cannot load: one line each
        try:
            parser = _parser(chosen)
        except BenchkitError as exc:  # the chosen tool command cannot be imported
            sys.stderr.write(f"benchkit: error: {exc}\n")
            return EXIT_BAD_INPUT
        args = parser.parse_args(rest)
        args.verbose = verbose
        args.argv = rest  # the command as given: what a resume hint repeats
        args.explorer_app = _explorer_app  # what cli_toolkit.explorer_app hands a command
        try:
            with _logging(verbose):
                code: int = finish_command(args, args.func(args))
            return code
        except BenchkitError as exc:
            sys.stderr.write(f"benchkit: error: {exc}\n")
            return EXIT_BAD_INPUT
        except INTERRUPTS:
            sys.stderr.write("benchkit: interrupted\n")
            return EXIT_INTERRUPTED
