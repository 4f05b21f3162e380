"""``python -m benchkit bench run|report``: skillvault's bench commands, same options and codes.

    python -m benchkit bench run --config bench.yaml [--format json|table] [--out FILE]
                                 [--deterministic]
    python -m benchkit bench report --input run.json [--format json|table] [--out FILE]

``bench run`` runs the suite and writes the ``skillvault.bench.run.v1`` JSON to ``--out``
or stdout; with ``--format table`` the table goes to stdout and the JSON, when ``--out`` is
given, to that file. It exits 0 even when tasks fail, and 2 with the message on stderr for
a config error (a missing bundle included). ``--deterministic`` can only switch
deterministic mode on; otherwise the config's ``execution.deterministic`` applies.

``bench report`` reads a run JSON and writes the ``skillvault.bench.report.v1`` JSON or
table to ``--out`` or stdout; any error exits 2. ``--policy`` is accepted and ignored, as
skillvault's global option is by these commands.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchkit.cli_toolkit import (
    ProgressBar,
    add_store_options,
    progress_for,
    resume_command,
    run_until_signalled,
    say_interrupted,
    stored_run,
)

if TYPE_CHECKING:
    pass

__all__ = ["add_commands"]

_EXIT_OK = 0
_EXIT_FAILED = 1


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=("json", "table"), default="json", help="output format (json)"
    )
    parser.add_argument("--out", type=Path, help="write the output to this file")
    parser.add_argument(
        "--deterministic",
        action="store_true",
        help="freeze timestamps and durations (only switches it on)",
    )
    parser.add_argument("--policy", help=argparse.SUPPRESS)


def add_commands(subparsers: Any) -> None:
    """Add ``bench`` (with ``run`` and ``report``) to the ``python -m benchkit`` parser."""
    bench = subparsers.add_parser(
        "bench",
        help="skillvault bench v0: run a suite, report a run (skillvault's own contracts)",
        description="Benchmark task outcomes across no_skill / curated_skill / "
        "self_generated_skill conditions, with skillvault's run and report contracts.",
    )
    commands = bench.add_subparsers(dest="bench_command", required=True)
    run = commands.add_parser(
        "run", help="run a suite from its config and write the run (skillvault.bench.run.v1)"
    )
    run.add_argument("--config", required=True, help="the bench config (YAML or JSON)")
    _common(run)
    run.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress (a bar on a terminal, else a line every 5 s on stderr)",
    )
    add_store_options(run)
    run.set_defaults(func=_cmd_run)
    report = commands.add_parser(
        "report", help="render the report (skillvault.bench.report.v1) of a saved run"
    )
    report.add_argument("--input", required=True, help="the run JSON written by `bench run`")
    _common(report)
    report.set_defaults(func=_cmd_report)


def _encode(text: str) -> bytes:
    """UTF-8 bytes of ``text``, as Node writes a string.

    Undecodable bytes of a path (Python's surrogate escapes) are written back as they were;
    any other lone surrogate becomes U+FFFD, as Node writes it.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:
        units = text.encode("utf-16-le", errors="surrogatepass")
        return units.decode("utf-16-le", errors="replace").encode("utf-8")


def _write_stdout(text: str) -> None:
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(text)
    else:
        buffer.write(_encode(text))
        buffer.flush()


def _write_file(path: Path, text: str) -> None:
    path.write_bytes(_encode(text))


def _cmd_run(args: argparse.Namespace) -> int:
    from benchkit.formats import skillvault
    from benchkit.formats.skillvault.report import build_run, dumps, render_run_table

    loaded = skillvault.load_config(args.config)
    suite = skillvault.to_suite(loaded, deterministic=True if args.deterministic else None)

    total = suite.benchmark.task_count
    # A bar on a terminal; in CI or a pipe, a plain line every few seconds.
    progress = progress_for(
        None if total is None else total * len(suite.conditions) * suite.options.epochs,
        quiet=args.no_progress,
    )
    bar = progress if isinstance(progress, ProgressBar) else None
    with stored_run(args, suite, progress=progress) as stored, bar or contextlib.nullcontext():
        result, stopped_by = run_until_signalled(stored.runner, stored.arun)
    if stopped_by is not None:  # the run JSON of a part would read as a whole run's
        store = stored.store
        say_interrupted(
            result,
            resumable=store is not None,
            err=sys.stderr,
            command=None if store is None else resume_command(args, store),
            where="" if store is None else f"in {store.path} as run {result.run_id}",
        )
        return stopped_by
    run = build_run(loaded, result, git_commit=skillvault.git_commit(loaded.config_dir))
    text = dumps(run)
    try:
        if args.format == "table":
            if args.out is not None:
                _write_file(args.out, text)
            _write_stdout(render_run_table(run))
        elif args.out is not None:
            _write_file(args.out, text)
        else:
            _write_stdout(text)
    except OSError as exc:  # skillvault rethrows anything but a config error: exit 1
        sys.stderr.write(f"benchkit: cannot write {exc.filename or args.out}: {exc.strerror}\n")
        return _EXIT_FAILED
    if result.budget is not None:  # the run JSON above is of the cells its budget allowed
        store = stored.store
        say_interrupted(
            result,
            resumable=store is not None,
            err=sys.stderr,
            command=None if store is None else resume_command(args, store),
            where="" if store is None else f"in {store.path} as run {result.run_id}",
        )
    return _EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    from benchkit.formats.skillvault.report import (
        BenchRunError,
        build_report,
        condition_order,
        dumps,
        read_run,
        render_report_table,
    )

    run = read_run(args.input)
    report = build_report(run)
    if args.format == "table":
        text = render_report_table(report, condition_order(run))
    else:
        text = dumps(report)
    try:
        if args.out is not None:
            _write_file(args.out, text)
        else:
            _write_stdout(text)
    except OSError as exc:  # skillvault's report turns every error into exit 2
        raise BenchRunError(
            f"cannot write {exc.filename or args.out}: {exc.strerror}",
            fix="check that --out names a writable file in an existing directory",
        ) from exc
    return _EXIT_OK
