"""``python -m benchkit memory list|eval``: MemoryBench's command line on benchkit's engine.

``memory list`` shows the benchmarks found under ``benchmarks/`` (``**/manifest.json``)
and the memory providers (LocalBaseline, entry points ``benchkit.memory_providers``,
``--provider-module`` files, ``--http`` services). ``memory eval`` plans the providers ×
benchmarks cross product, skips (and names) the pairs whose provider lacks a required
capability, runs each benchmark with its eligible providers as conditions, prints
benchkit's table and the MemoryBench summary, and writes ``results.jsonl`` (MemoryBench's
records) beside benchkit's own ``<benchmark>.result.json`` and cells JSONL.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from benchkit._builtins import benchmarks_dir
from benchkit._limits import MAX_CONCURRENCY
from benchkit.cli_toolkit import (
    EXIT_OK,
    ModelChoice,
    Parser,
    ProgressBar,
    add_model_options,
    add_store_options,
    apply_models,
    bounded,
    console,
    explorer_app,
    model_choice,
    open_store,
    progress_for,
    resume_command,
    say_interrupted,
    signals_cancel,
    stored_run,
)
from benchkit.errors import ConfigError
from benchkit.formats.memorybench._evaluate import PASS_CORRECTNESS, PASS_FAITHFULNESS
from benchkit.memory import missing_capabilities, skip_message
from benchkit.model import Suite

__all__ = ["add_commands"]

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def add_commands(subparsers: Any) -> None:
    """Add ``memory`` with its ``list`` and ``eval`` subcommands."""
    memory = subparsers.add_parser(
        "memory", help="MemoryBench benchmarks against memory providers (list, eval, explore)"
    )
    sub = memory.add_subparsers(dest="memory_command", required=True, parser_class=Parser)

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--benchmarks-dir",
            type=Path,
            default=benchmarks_dir(),
            help="where to look (./benchmarks, else the built-in benchmarks)",
        )
        parser.add_argument(
            "--provider-module",
            action="append",
            default=[],
            metavar="MODULE",
            help="a module or .py file defining MEMORY_PROVIDERS = {name: factory}",
        )
        parser.add_argument(
            "--http",
            action="append",
            default=[],
            metavar="NAME=URL",
            help="a memory service speaking benchkit's JSON contract",
        )

    listing = sub.add_parser("list", help="list MemoryBench benchmarks and memory providers")
    common(listing)
    listing.add_argument("--json", action="store_true", help="print JSON instead of tables")
    listing.set_defaults(func=_cmd_list)

    evaluate = sub.add_parser("eval", help="run benchmarks against memory providers")
    common(evaluate)
    evaluate.add_argument("-p", "--providers", nargs="+", required=True, metavar="NAME")
    evaluate.add_argument("-b", "--benchmarks", nargs="+", required=True, metavar="NAME")
    evaluate.add_argument("-c", "--concurrency", type=int, default=1, help="cases at once")
    evaluate.add_argument("-o", "--output-dir", type=Path, help="default .benchkit/runs/<run id>")
    evaluate.add_argument("--pass-correctness", type=bounded(float, 0, 1), default=PASS_CORRECTNESS)
    evaluate.add_argument(
        "--pass-faithfulness", type=bounded(float, 0, 1), default=PASS_FAITHFULNESS
    )
    add_model_options(
        evaluate,
        model_help="the model that answers the questions of llm-as-judge benchmarks from "
        "the memories retrieved, over the manifest's (local: the embedded model, offline; "
        "benchkit[local])",
        judge_help="the model that judges the answers of llm-as-judge benchmarks, over the "
        "manifest's; the answering model stays the manifest's unless --model is given "
        "(local: the embedded model)",
    )
    evaluate.add_argument(
        "-d", "--deterministic", action="store_true", help="stable run id, no timings"
    )
    evaluate.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress (a bar on a terminal, else a line every 5 s on stderr)",
    )
    add_store_options(evaluate)
    evaluate.set_defaults(func=_cmd_eval)
    _add_explore(sub)


def _add_explore(sub: Any) -> None:
    """``memory explore``: the original's explorer API for a stored run, on its own server
    (the server's toolkit is imported here and when it runs, never with the package)."""
    from benchkit.serve_toolkit import TOKEN_ENV

    parser = sub.add_parser(
        "explore",
        help="serve MemoryBench's explorer API for a stored run",
        description="Serve GET /api/data, /api/runs and /api/run/<id> (MemoryBench's "
        "explorer API) for a run in the store.",
    )
    parser.add_argument("--run", "-r", required=True, metavar="RUN_ID", help="the run to show")
    parser.add_argument("--port", type=int, default=3000, help="port (3000; 0 picks one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--store", metavar="PATH", help="the run store")
    parser.add_argument("--token", help=f"require this bearer token (default: ${TOKEN_ENV})")
    parser.set_defaults(func=_cmd_explore)


def _cmd_explore(args: argparse.Namespace) -> int:
    from benchkit.serve_toolkit import require_serve

    require_serve()
    from benchkit.serve_toolkit import is_loopback, serve_app, token_for
    from benchkit.store import Store

    store = Store(args.store)
    summary = store.summary(args.run)  # an unknown run fails here, before the server starts
    app = explorer_app(
        args,
        run_id=summary.run_id,
        store=store,
        token=token_for(args.host, args.token),
        loopback_origins=is_loopback(args.host),
        tool="memorybench",
    )
    return serve_app(app, args.host, args.port, what=f"exploring run {summary.run_id}", page="/")


# --------------------------------------------------------------------------- providers


@attrs.frozen
class _Provider:
    """A named way to make fresh stores, and where the name came from."""

    name: str
    make: Callable[[], Awaitable[Any]]
    source: str


def _providers(args: argparse.Namespace) -> dict[str, _Provider]:
    from benchkit.memory import HttpMemoryProvider, build_memory_provider, load_provider_module
    from benchkit.registry import default_registries

    builtins = default_registries().memory_providers
    registry = builtins.copy()
    origin: dict[str, str] = {}
    for spec in args.provider_module:
        for name in load_provider_module(spec, registry, base_dir=Path.cwd()):
            origin[name] = f"module {spec}"

    def from_registry(name: str) -> Callable[[], Awaitable[Any]]:
        async def make() -> Any:
            return build_memory_provider(name, registry)

        return make

    def from_url(name: str, url: str) -> Callable[[], Awaitable[Any]]:
        async def make() -> Any:  # the service says what it can do
            return await HttpMemoryProvider.discover(url, name=name)

        return make

    found: dict[str, _Provider] = {}
    for name in registry.names():
        source = origin.get(name) or ("built-in" if builtins.is_builtin(name) else "entry point")
        found[name] = _Provider(name, from_registry(name), source)
    for item in args.http:
        name, sep, url = item.partition("=")
        if not sep or not name or not url:
            raise ConfigError(
                f"--http {item!r} is not NAME=URL", fix="e.g. --http mystore=http://127.0.0.1:8080"
            )
        found[name] = _Provider(name, from_url(name, url), f"http {url}")
    return found


async def _close(store: Any) -> None:
    closer = getattr(store, "aclose", None)
    if closer is not None:
        await closer()


# --------------------------------------------------------------------------- list


def _cmd_list(args: argparse.Namespace) -> int:
    import anyio

    from benchkit.formats.memorybench import discover

    discovery = discover(args.benchmarks_dir)
    providers = _providers(args)

    async def capabilities() -> dict[str, str]:
        shown: dict[str, str] = {}
        for name, provider in providers.items():
            try:
                store = await provider.make()
            except Exception as exc:  # a broken plug-in is listed, not fatal
                shown[name] = f"unavailable: {exc}"
                continue
            shown[name] = ", ".join(sorted(store.capabilities))
            await _close(store)
        return shown

    caps = anyio.run(capabilities)
    rows = []
    for name, suite in discovery.benchmarks.items():
        meta = suite.benchmark.metadata["memorybench"]
        manifest = meta["manifest"]
        strategy = meta["strategy"]
        if strategy == "session-based":
            strategy += f" ({manifest['ingestion']['mode']})"
        count = suite.benchmark.task_count
        rows.append(
            {
                "name": name,
                "version": suite.benchmark.version,
                "cases": count,
                "ingestion": strategy,
                "protocol": meta["protocol"],
                "requires": ", ".join(meta["required_capabilities"]),
                "path": str(discovery.paths[name]),
            }
        )
    problems = [{"path": str(path), "error": str(error)} for path, error in discovery.problems]
    notes = _manifest_warnings(discovery.benchmarks.values())
    provider_rows = [
        {"name": name, "capabilities": caps[name], "source": providers[name].source}
        for name in providers
    ]
    if args.json:
        data = {
            "benchmarks": rows,
            "providers": provider_rows,
            "problems": problems,
            "warnings": notes,
        }
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    from rich.table import Table

    out = console(sys.stdout)
    table = Table(title=f"MemoryBench benchmarks under {args.benchmarks_dir}", title_justify="left")
    for column in ("name", "version", "cases", "ingestion", "protocol", "requires", "path"):
        table.add_column(column)
    for row in rows:
        table.add_row(*("?" if row[c] is None else str(row[c]) for c in row))
    out.print(table)
    for problem in problems:
        out.print(f"[yellow]skipped[/] {problem['path']}: {problem['error']}")
    for note in notes:
        sys.stderr.write(f"benchkit: warning: {note}\n")
    table = Table(title="memory providers", title_justify="left")
    for column in ("name", "capabilities", "source"):
        table.add_column(column)
    for row in provider_rows:
        table.add_row(row["name"], row["capabilities"], row["source"])
    out.print(table)
    return EXIT_OK


# --------------------------------------------------------------------------- eval


def _manifest_warnings(suites: Iterable[Suite]) -> list[str]:
    """The warnings loading these manifests gave (unknown keys, a missing
    ``type_instructions_file``), as ``validate`` shows them."""
    return [
        str(note)
        for suite in suites
        for note in suite.benchmark.metadata["memorybench"].get("warnings", ())
    ]


def _pick(names: Sequence[str], available: Mapping[str, Any], what: str) -> list[str]:
    missing = [n for n in names if n not in available]
    if missing:
        shown = "', '".join(missing)
        raise ConfigError(
            f"{what}(s) '{shown}' not found. Available: {', '.join(sorted(available)) or '(none)'}",
            fix=f"use `python -m benchkit memory list` to see the {what}s.",
        )
    return sorted(dict.fromkeys(names))


def _with_models(suite: Suite, choice: ModelChoice) -> Suite:
    """``suite`` with ``--model`` as its llm-as-judge answer model and ``--judge`` as its
    judge, each over the manifest's (the other keeps the manifest's); the manifest's
    backend stays, and without one the model named is an OpenAI-compatible one. Benchmarks
    that use no model are returned as they are."""
    benchmark = suite.benchmark
    meta = dict(benchmark.metadata["memorybench"])
    if meta["answer"] != "llm":
        return suite
    if choice.model is not None:
        # the manifest's backend stays; without one, the model is an OpenAI-compatible one
        meta["answer_options"] = {
            "judge_backend": "openai",
            **meta["answer_options"],
            "model": choice.model,
        }
        metadata = {**benchmark.metadata, "memorybench": meta}
        suite = attrs.evolve(suite, benchmark=attrs.evolve(benchmark, metadata=metadata))
    if choice.judge is not None:
        suite = apply_models(suite, ModelChoice(judge=choice.judge), where=benchmark.id)
        evaluators = tuple(
            attrs.evolve(spec, options={"judge_backend": "openai", **spec.options})
            if spec.options.get("model") == choice.judge
            else spec
            for spec in suite.benchmark.evaluators
        )
        suite = attrs.evolve(suite, benchmark=attrs.evolve(suite.benchmark, evaluators=evaluators))
    return suite


def _cmd_eval(args: argparse.Namespace) -> int:
    import anyio

    from benchkit.formats.memorybench import discover

    if not 1 <= args.concurrency <= MAX_CONCURRENCY:
        raise ConfigError(
            f"--concurrency must be >= 1 and <= {MAX_CONCURRENCY:,}, got {args.concurrency}",
            fix="pass a number of cases to run at once in that range (docs/limits.md).",
        )
    discovery = discover(
        args.benchmarks_dir,
        pass_correctness=args.pass_correctness,
        pass_faithfulness=args.pass_faithfulness,
    )
    err = sys.stderr
    for path, error in discovery.problems:
        err.write(f"benchkit: warning: skipped {path}: {error}\n")
    providers = _providers(args)
    benchmark_names = _pick(args.benchmarks, discovery.benchmarks, "Benchmark")
    provider_names = _pick(args.providers, providers, "Provider")
    suites = {name: discovery.benchmarks[name] for name in benchmark_names}
    choice = model_choice(args)
    if choice.model is not None or choice.judge is not None:
        suites = {name: _with_models(suite, choice) for name, suite in suites.items()}
        if all(s.benchmark.metadata["memorybench"]["answer"] != "llm" for s in suites.values()):
            raise ConfigError(
                f"--model and --judge name the models of llm-as-judge benchmarks, and "
                f"{', '.join(suites)} use none",
                fix="drop them, or choose an llm-as-judge benchmark (memory list shows them).",
            )
    for note in _manifest_warnings(suites.values()):
        err.write(f"benchkit: warning: {note}\n")
    _check_early(suites)
    stop = _Stop()
    with signals_cancel(stop.signal) as received:
        code: int = anyio.run(_evaluate, args, suites, [providers[n] for n in provider_names], stop)
    return 128 + received[0] if received else code


class _Stop:
    """A signal's stop of ``memory eval``: the run in progress is cancelled (its finished
    cells kept), and no further benchmark starts."""

    def __init__(self) -> None:
        self.stopped = False
        self.runner: Any = None

    def signal(self, signum: int) -> None:
        self.stopped = True
        runner = self.runner
        if runner is not None:
            runner.cancel_threadsafe("signal")

    def watch(self, runner: Any) -> None:
        """``runner`` runs now: a signal cancels it (one that came before, at once)."""
        self.runner = runner
        if self.stopped:
            runner.cancel_threadsafe("signal")


def _check_early(suites: Mapping[str, Any]) -> None:
    """Build every evaluator and answer generator now: a benchmark that cannot run (an
    llm-as-judge one before the LLM client exists) stops the command before any cell."""
    from benchkit.memory import answer_generator
    from benchkit.registry import default_registries

    evaluators = default_registries().evaluators
    for suite in suites.values():
        for spec in suite.benchmark.evaluators:
            evaluators.build(spec.type, spec.options, base_dir=suite.base_dir)
        meta = suite.benchmark.metadata["memorybench"]
        answer_generator(meta["answer"], meta["answer_options"])


async def _evaluate(
    args: argparse.Namespace,
    suites: Mapping[str, Any],
    providers: Sequence[_Provider],
    stop: _Stop,
) -> int:
    from benchkit import reports
    from benchkit.formats.memorybench._export import MemoryBenchSink, summarize_records
    from benchkit.memory import MemoryPipeline
    from benchkit.model import Condition
    from benchkit.protocols import ResultSink
    from benchkit.runner import new_run_id
    from benchkit.store import JsonlSink

    err = sys.stderr
    capabilities: dict[str, frozenset[str]] = {}
    for provider in providers:
        probe = await provider.make()
        capabilities[provider.name] = frozenset(probe.capabilities)
        await _close(probe)
    plan: dict[str, list[_Provider]] = {}
    skipped: list[str] = []
    for name, suite in suites.items():
        required = suite.benchmark.metadata["memorybench"]["required_capabilities"]
        plan[name] = []
        for provider in providers:
            missing = missing_capabilities(required, capabilities[provider.name])
            if missing:
                skipped.append(f"{skip_message(provider.name, missing)} (benchmark '{name}')")
            else:
                plan[name].append(provider)
    for line in skipped:
        err.write(f"skipped: {line}\n")
    first = next(iter(suites.values()))
    # One run, one id: the first benchmark's run is stored under the id the records carry
    # and the command prints; each further benchmark is a run of its own (the store keeps
    # one benchmark per run), stored as `<id>-<benchmark>`, which the explorer's
    # MemoryBench API shows as part of run `<id>`.
    run_id = new_run_id(first.with_options(deterministic=args.deterministic))
    stored_ids: list[str] = []
    out_dir: Path = args.output_dir or Path(".benchkit") / "runs" / run_id
    results_path = out_dir / "results.jsonl"
    if not args.resume:  # the sinks append: start this run's file afresh (a resume adds)
        results_path.unlink(missing_ok=True)
    out = console(sys.stdout)
    with open_store(args) as cache:
        for name, suite in suites.items():
            if not plan[name] or stop.stopped:
                continue
            stores = [await provider.make() for provider in plan[name]]
            meta = suite.benchmark.metadata["memorybench"]
            conditions = tuple(
                Condition(
                    provider.name,
                    MemoryPipeline(
                        store,
                        answer=meta["answer"],
                        answer_options=meta["answer_options"],
                        response_cache=cache,
                    ),
                )
                for provider, store in zip(plan[name], stores, strict=True)
            )
            prepared = attrs.evolve(
                suite.with_options(concurrency=args.concurrency, deterministic=args.deterministic),
                conditions=conditions,
            )
            stem = _SAFE.sub("_", name)
            this_id = f"{run_id}-{stem}" if stored_ids else run_id
            sinks: list[ResultSink] = [
                JsonlSink(
                    out_dir / f"{stem}.cells.jsonl", result_path=out_dir / f"{stem}.result.json"
                ),
                MemoryBenchSink(results_path, run_id=run_id),
            ]
            total = prepared.benchmark.task_count
            progress = progress_for(
                None if total is None else total * len(conditions) * prepared.options.epochs,
                quiet=args.no_progress,
            )
            bar = progress if isinstance(progress, ProgressBar) else None
            try:
                # A deterministic run's id is derived: running it again replaces it.
                with (
                    stored_run(
                        args,
                        prepared,
                        store=cache,
                        run_id=this_id,
                        replace=args.deterministic,
                        sinks=sinks,
                        progress=progress,
                    ) as stored,
                    bar or contextlib.nullcontext(),
                ):
                    stored_ids.append(stored.run_id)
                    stop.watch(stored.runner)
                    result = await stored.arun()
                    stop.runner = None
            finally:
                for store in stores:
                    await _close(store)
            out.print(reports.to_table(result))
            if result.interrupted:
                where = f"in {cache.path} as run {stored.run_id}" if cache is not None else ""
                say_interrupted(
                    result,
                    resumable=cache is not None,
                    err=err,
                    command=None
                    if cache is None
                    else resume_command(
                        args,
                        cache,
                        # the records of the cells kept are in this directory
                        extra=() if args.output_dir else ("--output-dir", str(out_dir)),
                    ),
                    where=where,
                )
    if results_path.is_file():
        with results_path.open(encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle if line.strip()]
        _print_summary(out, summarize_records(records))
        shown = stored_ids[0] if stored_ids else run_id  # a resume: the run it resumed
        err.write(f"run {shown}: MemoryBench results in {results_path}; reports in {out_dir}\n")
    else:
        err.write("nothing ran: every provider × benchmark pair was skipped\n")
    return EXIT_OK


def _print_summary(out: Any, summaries: Sequence[Any]) -> None:
    """Counts per provider × benchmark, then each score's mean over the cases that have it."""
    from rich.table import Table

    counts = Table(title="MemoryBench summary", title_justify="left")
    scores = Table(
        title="MemoryBench scores (mean over the cases that report each)", title_justify="left"
    )
    for column in ("provider", "benchmark", "cases", "pass", "fail", "errors", "duration ms"):
        counts.add_column(
            column, justify="left" if column in ("provider", "benchmark") else "right"
        )
    for column in ("provider", "benchmark", "score", "mean", "cases"):
        scores.add_column(column, justify="right" if column in ("mean", "cases") else "left")
    for summary in summaries:
        counts.add_row(
            summary.provider_name,
            summary.benchmark_name,
            str(summary.cases),
            str(summary.passed),
            str(summary.failed),
            str(summary.errors),
            str(summary.duration_ms),
        )
        for name, mean in summary.score_averages.items():
            scores.add_row(
                summary.provider_name,
                summary.benchmark_name,
                name,
                f"{mean:.3f}",
                str(summary.score_counts[name]),
            )
    out.print(counts)
    out.print(scores)
