"""``python -m benchkit runs list|show|export|delete`` and ``python -m benchkit compare``.

Each command takes ``--store PATH`` (default: ``$BENCHKIT_STORE``, else
``.benchkit/benchkit.db``) and accepts a unique prefix of a run id, or `latest` / `-1` (the newest run), `-2` (the one before), ...
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchkit._limits import MAX_COUNT
from benchkit.cli_toolkit import (
    EXIT_OK,
    FORMATS,
    Parser,
    add_margin_option,
    bounded,
    console,
    emit,
    report_regressions,
)

if TYPE_CHECKING:
    from benchkit.model import EvaluatorSpec
    from benchkit.results import CellResult, RunResult
    from benchkit.store import Store

__all__ = ["add_commands"]


def _store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="PATH",
        help="the run store (default: $BENCHKIT_STORE, else .benchkit/benchkit.db)",
    )


def add_commands(sub: Any) -> None:
    """Add ``runs`` (with list, show, export, delete, rescore) and ``compare`` to the CLI."""
    runs = sub.add_parser("runs", help="the runs in the run store: list, show, export, delete")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True, parser_class=Parser)

    listing = runs_sub.add_parser("list", help="the stored runs, newest first")
    _store_option(listing)
    listing.add_argument("--benchmark", metavar="ID", help="only runs of this benchmark")
    listing.add_argument(
        "-n", "--limit", type=bounded(int, 0, MAX_COUNT), metavar="N", help="at most N runs"
    )
    listing.add_argument("-f", "--format", choices=("table", "json"), default="table")
    listing.set_defaults(func=_cmd_list)

    show = runs_sub.add_parser("show", help="a stored run's results and sessions")
    show.add_argument("run", help="run id, a unique prefix, latest, -1, -2, ...")
    _store_option(show)
    show.add_argument(
        "-f",
        "--format",
        choices=(*FORMATS, "html"),
        default="table",
        help="html: one self-contained page (charts, failing cells) for CI artifacts and email",
    )
    show.add_argument(
        "-o", "--output", metavar="FILE", help="write the report to FILE (with --format html)"
    )
    show.add_argument(
        "--cells",
        action="store_true",
        help="list cells with their status and reason (default: those that did not pass)",
    )
    show.add_argument(
        "--status",
        choices=("pass", "fail", "error"),
        action="append",
        help="with --cells: only cells of this status (error includes timeout; repeatable)",
    )
    show.add_argument(
        "--judges",
        action="store_true",
        help="how far the run's evaluators can be trusted: agreement with human ratings "
        "and between evaluators, flip rate of repeats, position bias (docs/statistics.md)",
    )
    show.add_argument("--condition", action="append", metavar="C", help="with --cells: only C")
    show.add_argument(
        "--task", metavar="PATTERN", help="with --cells: task ids matching a glob (sum-*)"
    )
    show.add_argument(
        "--cell",
        metavar="TASK/CONDITION[/EPOCH]",
        help="one cell: its task, result, attempts and transcript (e.g. t1/baseline/0)",
    )
    show.add_argument(
        "--attempt", type=int, metavar="N", help="with --cell: attempt N (default: the latest)"
    )
    show.set_defaults(func=_cmd_show)

    export = runs_sub.add_parser("export", help="write a stored run as JSON or JSON Lines")
    export.add_argument("run", help="run id, a unique prefix, latest, -1, -2, ...")
    _store_option(export)
    export.add_argument("--format", choices=("json", "jsonl"), default="json")
    export.add_argument("-o", "--output", type=Path, help="file to write (default: stdout)")
    export.set_defaults(func=_cmd_export)

    delete = runs_sub.add_parser("delete", help="delete stored runs and their cells")
    delete.add_argument("run", nargs="+", help="run ids, unique prefixes, latest, -1, -2, ...")
    _store_option(delete)
    delete.set_defaults(func=_cmd_delete)

    rescore = runs_sub.add_parser(
        "rescore",
        help="grade a stored run's outputs again with other evaluators, as a new run "
        "(no call to the system under test; judges through the reply cache)",
    )
    rescore.add_argument("run", help="run id, a unique prefix, latest, -1, -2, ...")
    rescore.add_argument(
        "--evaluator",
        action="append",
        required=True,
        metavar="SPEC",
        help="an evaluator: its type (exact) or a YAML/JSON mapping with its options "
        "('{type: contains, case_sensitive: true}'); repeatable",
    )
    rescore.add_argument(
        "--judge",
        metavar="MODEL",
        help="the model of every judge among the evaluators (llm_rubric, ...; local: the "
        "embedded model)",
    )
    rescore.add_argument("--run-id", metavar="ID", help="the new run's id (default: a fresh one)")
    _store_option(rescore)
    rescore.add_argument("-f", "--format", choices=FORMATS, default="table")
    rescore.set_defaults(func=_cmd_rescore)

    compare = sub.add_parser(
        "compare", help="compare two stored runs task by task (deltas, flips, McNemar)"
    )
    compare.add_argument("run_a", help="the baseline run (id, unique prefix, latest, -2, ...)")
    compare.add_argument("run_b", help="the run compared with it")
    _store_option(compare)
    compare.add_argument(
        "--pair",
        action="append",
        metavar="COND_A:COND_B",
        help="conditions to compare (repeatable; default: the condition ids both runs have)",
    )
    compare.add_argument(
        "--condition",
        action="append",
        metavar="C",
        help="only the pairs of condition C (repeatable; Holm's adjustment covers those kept)",
    )
    compare.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when run B is worse than run A by more than --margin with the paired "
        "test significant after Holm (docs/ci.md); else say how small a regression was "
        "detectable",
    )
    add_margin_option(compare)
    compare.add_argument(
        "-f",
        "--format",
        choices=FORMATS,
        default="table",
        help="markdown: a pull-request comment (verdict first, flipped tasks collapsed)",
    )
    compare.set_defaults(func=_cmd_compare)


def _store(args: argparse.Namespace) -> Store:
    from benchkit.store import Store

    return Store(args.store)


def _cmd_list(args: argparse.Namespace) -> int:
    from benchkit.serde import dumps

    with _store(args) as store:
        runs = store.runs(benchmark=args.benchmark, limit=args.limit)
    if args.format == "json":
        sys.stdout.write(dumps(runs) + "\n")
        return EXIT_OK
    from rich.table import Table

    table = Table(title=f"runs in {store.path}", title_justify="left")
    for column in ("run", "benchmark", "status", "cells", "errors", "started (UTC)", "sessions"):
        table.add_column(column)
    for run in runs:
        table.add_row(
            run.run_id,
            f"{run.benchmark_id} v{run.benchmark_version}",
            run.status_text,
            f"{run.cells}/{run.total_cells}",
            str(run.errors),
            run.started_at.replace("T", " ").rstrip("Z"),
            str(len(run.sessions)),
        )
    out = console(sys.stdout)
    out.print(table)
    if not runs:
        out.print("no runs yet: `python -m benchkit run PATH` stores one.")
    return EXIT_OK


def _selected_cells(result: RunResult, args: argparse.Namespace) -> list[CellResult]:
    """The cells ``runs show --cells`` lists, filtered by status, condition and task glob."""
    import fnmatch

    statuses = set(args.status or ("fail", "error"))
    if "error" in statuses:
        statuses.add("timeout")
    known = [c.id for c in result.info.conditions]
    for cond in args.condition or ():
        if cond not in known:
            from benchkit.errors import ConfigError

            raise ConfigError(
                f"run {result.run_id!r} has no condition {cond!r}",
                fix="pick from: " + ", ".join(known) + ".",
            )
    return [
        c
        for c in result.cells
        if c.status in statuses
        and (not args.condition or c.condition_id in args.condition)
        and (args.task is None or fnmatch.fnmatchcase(c.task_id, args.task))
    ]


def _show_cells(result: RunResult, args: argparse.Namespace) -> int:
    """``runs show RUN --cells``: one line per selected cell with its reason."""
    from benchkit.serde import dumps

    cells = _selected_cells(result, args)
    records = [
        {
            "task": c.task_id,
            "condition": c.condition_id,
            "epoch": c.epoch,
            "status": c.status,
            "category": c.error_category,
            "score": c.score,
            "reason": c.error,
        }
        for c in cells
    ]
    rows = [
        tuple(
            ""
            if v is None
            else f"{v:.3f}"
            if isinstance(v, float)
            else str(v).strip().replace("\n", " ")[:300]
            for v in record.values()
        )
        for record in records
    ]
    headers = ("task", "condition", "epoch", "status", "category", "score", "reason")
    if args.format == "json":
        sys.stdout.write(dumps(records, indent=2) + "\n")
    elif args.format == "markdown":
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(v.replace("|", "\\|") for v in row) + " |" for row in rows]
        sys.stdout.write("\n".join(lines) + "\n")
    else:
        from rich.table import Table

        table = Table(title=f"{len(rows)} cells of run {result.run_id}", title_justify="left")
        for header in headers:
            table.add_column(header, overflow="fold")
        for row in rows:
            table.add_row(*row)
        console(sys.stdout).print(table)
    return EXIT_OK


def _ratings(store: Store, run_id: str) -> Mapping[tuple[str, str, int], bool | float] | None:
    """The people's ratings of the run's cells, keyed ``(task, condition, epoch)``; None
    when nobody rated any."""
    labels = store.rating_labels(run_id)
    return labels or None


def _show_judges(
    result: RunResult,
    ratings: Mapping[tuple[str, str, int], bool | float] | None,
    args: argparse.Namespace,
) -> int:
    """``runs show RUN --judges``: the judge report, in words or as JSON."""
    report = result.judge_report(ratings)
    if args.format == "json":
        from benchkit.serde import dumps

        sys.stdout.write(dumps(report, indent=2) + "\n")
        return EXIT_OK
    lines = report.lines()
    if not lines:
        lines = [
            "nothing to measure: no human ratings, one evaluator, no repeats "
            "(run with --judge-repeats N) and no pairwise judge"
        ]
    sys.stdout.write(f"judges of run {result.run_id} ({report.ratings} rated cells)\n")
    sys.stdout.write("".join(f"- {line}\n" for line in lines))
    return EXIT_OK


def _show_cell(store: Store, args: argparse.Namespace) -> int:
    """``runs show RUN --cell TASK/CONDITION/EPOCH``: the task, the cell's verdict and its
    transcript as a timeline (or all of it as JSON with ``--format json``)."""
    from benchkit.errors import ConfigError
    from benchkit.serde import dumps, unstructure
    from benchkit.store._story import parse_cell_ref

    task_id, condition_id, epoch = parse_cell_ref(args.cell)
    summary = store.summary(args.run)
    attempts = store.cell_attempts(summary.run_id, task_id, condition_id, epoch)
    if not attempts:
        raise ConfigError(
            f"run {summary.run_id} has no cell {task_id}/{condition_id}/{epoch}",
            fix=f"`python -m benchkit runs show {summary.run_id} --cells --status pass "
            "--status fail --status error` lists its cells.",
        )
    number = len(attempts) - 1 if args.attempt is None else args.attempt
    if not 0 <= number < len(attempts):
        raise ConfigError(
            f"cell {args.cell} has {len(attempts)} attempt(s): 0..{len(attempts) - 1}",
            fix="give --attempt within that range, or leave it out for the latest.",
        )
    cell = attempts[number]
    story = store.transcript(summary.run_id, task_id, condition_id, epoch, attempt=number)
    task = store.task(summary.run_id, task_id)
    if args.format == "json":
        record = {
            "run_id": summary.run_id,
            "attempt": number,
            "attempts": len(attempts),
            "task": task,
            "cell": unstructure(cell),
            "transcript": None if story is None else story.to_dict(),
        }
        sys.stdout.write(dumps(record, indent=2) + "\n")
        return EXIT_OK
    out = sys.stdout.write
    out(
        f"cell {task_id}/{condition_id}/{epoch} of run {summary.run_id} · attempt {number} "
        f"of {len(attempts)} · {cell.status}"
        + (f" ({cell.error_category})" if cell.error_category != "none" else "")
        + ("" if cell.score is None else f" · score {cell.score:.3f}")
        + "\n"
    )
    if task is not None:
        out(f"  input:    {_short(task.get('input'))}\n")
        out(f"  expected: {_short(task.get('expected'))}\n")
    if cell.response is not None:
        out(f"  output:   {_short(cell.response.output)}\n")
    reasons = [s.reason for s in cell.scores if s.reason]
    if cell.error or reasons:
        out(f"  reason:   {_short(cell.error or '; '.join(reasons))}\n")
    if story is None:
        out("transcript: nothing was recorded\n")
        return EXIT_OK
    from benchkit.reports._conversation import conversation_lines

    for line in conversation_lines(story.events):  # an agent's cell: its turns first
        out(line + "\n")
    out(
        f"transcript: {len(story.events)} event(s), {story.bytes} bytes"
        + (" (truncated)" if story.truncated else "")
        + "\n"
    )
    for event in story.events:
        took = "" if event.duration is None else f" ({event.duration * 1000:.0f} ms)"
        out(f"  {event.t:9.3f}s  {event.kind:<15} {event.title}{took}\n")
        if event.data is not None:
            out(f"              {_short(event.data, 400)}\n")
    return EXIT_OK


def _short(value: object, limit: int = 200) -> str:
    """A value on one line, cut at ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cmd_show(args: argparse.Namespace) -> int:
    from benchkit.cli_toolkit import emit

    if args.cell is not None:
        if args.format not in ("table", "json"):
            from benchkit.errors import ConfigError

            raise ConfigError("--cell prints a table or JSON", fix="use --format table or json.")
        with _store(args) as store:
            return _show_cell(store, args)
    if args.attempt is not None:
        from benchkit.errors import ConfigError

        raise ConfigError("--attempt picks an attempt of --cell", fix="add --cell TASK/COND/EPOCH.")
    with _store(args) as store:
        summary = store.summary(args.run)
        # The table and Markdown print aggregates only: a finished run's stored outcome,
        # read without its cells. JSON is the whole RunResult, cells included, and the
        # HTML report lists failing cells and per-metric means.
        cells = args.cells or args.judges or args.format in ("json", "html")
        result = store.load(summary.run_id, cells=cells)
        ratings = _ratings(store, summary.run_id) if args.judges else None
    if args.judges:
        return _show_judges(result, ratings, args)
    if args.cells:
        return _show_cells(result, args)
    if args.status or args.condition or args.task:
        from benchkit.errors import ConfigError

        raise ConfigError(
            "--status, --condition and --task filter the cell list",
            fix="add --cells: python -m benchkit runs show RUN --cells --status fail",
        )
    if args.format == "html":
        from benchkit.reports.html import to_html

        page = to_html(result, status=summary.status, stored_at=summary.started_at)
        if args.output:
            Path(args.output).write_text(page, encoding="utf-8")
            sys.stderr.write(f"benchkit: wrote {args.output}\n")
        else:
            sys.stdout.write(page)
        return EXIT_OK
    if args.output:
        from benchkit.errors import ConfigError

        raise ConfigError(
            "--output writes the HTML report", fix="add --format html, or drop --output."
        )
    if args.format == "table":
        out = console(sys.stdout)
        out.print(
            f"run {summary.run_id} · {summary.status_text} · {summary.cells}/"
            f"{summary.total_cells} cells · {summary.errors} errors · store {store.path}"
        )
        if summary.budget is not None:
            out.print(summary.budget.text)
        for session in summary.sessions:
            ended = session.ended_at or "—"
            out.print(
                f"  {session.kind:6} {session.started_at} → {ended}  {session.status}: "
                f"{session.reused} reused, {session.written} written "
                f"(pid {session.pid} on {session.host}, benchkit {session.benchkit})"
            )
        source = result.info.source_path
        if summary.status != "finished" and summary.status != "running" and source:
            out.print(
                f"continue it: python -m benchkit run {source} --resume --run-id "
                f"{summary.run_id} (with the options it was started with)"
            )
    if args.format == "markdown":
        from benchkit.reports import to_markdown

        sys.stdout.write(to_markdown(result, stored_at=summary.started_at))
        return EXIT_OK
    emit(result, args.format, sys.stdout)
    return EXIT_OK


def _cmd_export(args: argparse.Namespace) -> int:
    with _store(args) as store:
        if args.output is None:
            try:
                store.export(args.run, sys.stdout, format=args.format)
                sys.stdout.flush()
            except BrokenPipeError:  # `... | head`: the reader has all it wanted
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_OK
        target: Path = args.output
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        try:
            with tmp.open("w", encoding="utf-8") as out:
                store.export(args.run, out, format=args.format)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    sys.stderr.write(f"wrote {target}\n")
    return EXIT_OK


def _cmd_delete(args: argparse.Namespace) -> int:
    with _store(args) as store:
        for ref in args.run:
            run_id = store.summary(ref).run_id
            cells = store.delete(run_id)
            sys.stdout.write(f"deleted run {run_id} ({cells} cells)\n")
    return EXIT_OK


def _evaluator_spec(text: str) -> EvaluatorSpec:
    """``--evaluator SPEC``: a type name, or a mapping with ``type`` and its options (and
    ``name``), as a benchmark file writes one."""
    from benchkit.errors import ConfigError
    from benchkit.model import EvaluatorSpec

    if not text.lstrip().startswith("{"):
        if not text.strip():
            raise ConfigError("--evaluator names no evaluator", fix="write --evaluator exact.")
        return EvaluatorSpec(text.strip())
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        data = YAML(typ="safe").load(text)
    except YAMLError as exc:
        raise ConfigError(
            f"--evaluator {text!r} is not a YAML mapping: {str(exc).splitlines()[0]}",
            fix="write --evaluator '{type: contains, case_sensitive: true}'.",
        ) from None
    kind = data.pop("type", None) if isinstance(data, dict) else None
    if not isinstance(kind, str) or not kind:
        raise ConfigError(
            f"--evaluator {text!r} has no `type`",
            fix="write --evaluator '{type: contains, case_sensitive: true}'.",
        )
    name = data.pop("name", None)
    return EvaluatorSpec(kind, data, name=None if name is None else str(name))


def _cmd_rescore(args: argparse.Namespace) -> int:
    specs = [_evaluator_spec(text) for text in args.evaluator]
    if args.judge is not None:
        from benchkit.cli_toolkit import judge_specs

        specs = list(judge_specs(specs, args.judge, where="the --evaluator list"))
    with _store(args) as store:
        result = store.rescore(args.run, specs, run_id=args.run_id)
        path = store.path
    emit(result, args.format, sys.stdout)
    sys.stderr.write(
        f"run {result.run_id}: stored in {path} (rescored from run {result.info.parent_run_id}; "
        f"compare them: python -m benchkit compare {result.info.parent_run_id} {result.run_id})\n"
    )
    return EXIT_OK


def _cmd_compare(args: argparse.Namespace) -> int:
    from benchkit.errors import ConfigError
    from benchkit.serde import dumps
    from benchkit.store._compare import (
        check_regressions,
        only_conditions,
        to_markdown,
        to_table,
    )

    pairs: list[tuple[str, str]] | None = None
    if args.pair:
        pairs = []
        for spec in args.pair:
            a, sep, b = spec.partition(":")
            if not a:
                raise ConfigError(
                    f"--pair {spec!r} names no condition",
                    fix="write --pair CONDITION_A:CONDITION_B (or one id for both).",
                )
            pairs.append((a, b if sep and b else a))
    if args.margin is not None and not args.fail_on_regression:
        raise ConfigError(
            "--margin is the regression margin of --fail-on-regression, which is not given",
            fix="add --fail-on-regression, or drop --margin.",
        )
    with _store(args) as store:
        result = store.compare(args.run_a, args.run_b, pairs=pairs)
    if args.condition:
        result = only_conditions(result, args.condition)
    check = (
        check_regressions(result, margin=args.margin or 0.0) if args.fail_on_regression else None
    )
    if args.format == "json":
        sys.stdout.write(dumps(result) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(to_markdown(result, check))
    else:
        console(sys.stdout).print(to_table(result))
    return EXIT_OK if check is None else report_regressions(check, sys.stderr)
