"""The CLI toolkit: what every command module shares — the generic commands' and the tools'.

It lives outside the :mod:`benchkit.cli` package: a tool's command module imports it, and
the CLI loads the tools' command modules, so a toolkit inside ``cli`` made an import cycle
between the tool packages and the CLI. Tool packages import this module, never
``benchkit.cli``.

Exit codes, the rich console, the one-paragraph argparse ``Parser``, the progress bar, the
``--store`` / ``--no-store`` options and the run-store wiring of a command
(:func:`stored_run`), ``--model`` / ``--judge`` and what they mean (:func:`apply_models`),
a tool's run hook (:class:`RunHook`), and the renderings of a saved result.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import os
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO, TypeVar

import attrs

from benchkit import _limits
from benchkit.errors import BenchkitError, ConfigError, FormatError

if TYPE_CHECKING:
    from rich.console import Console

    from benchkit._progress import ProgressLines
    from benchkit._stored import StoredRun
    from benchkit.model import EvaluatorSpec, Suite
    from benchkit.protocols import ResultSink
    from benchkit.registry import Registries
    from benchkit.results import RunResult
    from benchkit.runner import Progress, ProgressCallback, Runner
    from benchkit.store import Store
    from benchkit.store._compare import RegressionCheck

__all__ = [
    "BUDGET_OPTIONS",
    "EXIT_BAD_INPUT",
    "EXIT_FAIL_UNDER",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_TERMINATED",
    "FORMATS",
    "INTERRUPTS",
    "Parser",
    "ProgressBar",
    "ModelChoice",
    "RunHook",
    "add_baseline_options",
    "add_budget_options",
    "add_junit_option",
    "add_margin_option",
    "baseline_id",
    "compare_with_baseline",
    "add_model_options",
    "add_select_options",
    "add_store_options",
    "apply_models",
    "bounded",
    "console",
    "emit",
    "explorer_app",
    "finish_command",
    "judge_specs",
    "load_result",
    "model_choice",
    "open_store",
    "progress_for",
    "report_regressions",
    "resume_command",
    "run_until_signalled",
    "say_interrupted",
    "select",
    "signals_cancel",
    "stored_run",
    "write_junit",
]

_Number = TypeVar("_Number", int, float)

EXIT_OK, EXIT_FAIL_UNDER, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
#: Run B regressed against its baseline (``compare --fail-on-regression``, ``--baseline``):
#: the same code as ``--fail-under``, a quality gate that did not pass.
EXIT_REGRESSION = EXIT_FAIL_UNDER
#: Stopped by SIGTERM (a CI job cancelled, ``kill``): 128 + 15, as shells report it.
EXIT_TERMINATED = 143
FORMATS = ("table", "json", "markdown")

#: What Ctrl-C surfaces as from ``anyio.run``: KeyboardInterrupt, or on Python 3.10 (where
#: asyncio's runner cancels the main task) the CancelledError of that task.
INTERRUPTS = (KeyboardInterrupt, asyncio.CancelledError)


def bounded(
    kind: Callable[[str], _Number], low: float, high: float, *, above: bool = False
) -> Callable[[str], _Number]:
    """An argparse ``type`` for a number from ``low`` (excluded when ``above``) to ``high``
    — a bound of :mod:`benchkit._limits`. NaN, the infinities and values out of range are
    usage errors (exit 2) naming the option and the range: ``--concurrency 1000000`` never
    reaches the Runner."""
    from benchkit._limits import out_of_bounds

    integer = kind is int
    rule = f"{'>' if above else '>='} {low:,} and <= {high:,}"

    def parse(text: str) -> _Number:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if integer else 'a number'} {rule}, got {text!r}"
            ) from None
        problem = out_of_bounds(value, low, high, above=above, integer=integer)
        if problem is not None:
            problem = problem.rpartition(", got ")[0]
            raise argparse.ArgumentTypeError(
                f"{problem}, got {text!r}: give a value {rule} (docs/limits.md lists the bounds)"
            )
        return value

    parse.__name__ = "int" if integer else "float"
    return parse


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in benchkit's one-paragraph style (exit 2)."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_BAD_INPUT, f"benchkit: error: {message} (see `{self.prog} --help`)\n")


def console(stream: TextIO) -> Console:
    """A rich console on ``stream`` (no highlighting; wide when not a terminal)."""
    from rich.console import Console

    # Not a terminal (a pipe, a CI log): wide enough that tables never wrap their cells.
    width = None if stream.isatty() else 160
    return Console(file=stream, highlight=False, soft_wrap=True, width=width)


def emit(result: RunResult, fmt: str, out: TextIO) -> None:
    from benchkit import reports

    if fmt == "json":
        out.write(reports.to_json(result) + "\n")
    elif fmt == "markdown":
        out.write(reports.to_markdown(result))
    else:
        console(out).print(reports.to_table(result))


class RunHook(Protocol):
    """What a tool adds to the generic ``run`` command: its options, the suite it builds
    from them, and what it prints or writes after the run.

    A tool names its hook in ``Tool.run_hook`` and the options it adds in
    ``Tool.run_options`` (so two tools never add the same option, and ``--help`` of other
    commands imports no hook). For each run, the file is loaded once and the hooks are
    asked in turn; the first that returns a suite runs it (None: not this tool's run), and
    only that hook's :meth:`after` is called. ``--model`` and ``--judge`` are the generic
    command's own (:func:`add_model_options`): a hook reads them, it never adds them.

    .. versionadded:: 0.2.0
    """

    def add_options(self, run: argparse.ArgumentParser) -> None:
        """Add this tool's options (exactly ``Tool.run_options``) to the ``run`` parser."""

    def suite(self, suite: Suite, args: argparse.Namespace) -> Suite | None:
        """The suite to run instead of ``suite`` (the file as loaded), or None."""

    def after(self, result: RunResult, suite: Suite, args: argparse.Namespace) -> None:
        """After the generic report: this tool's own summary, exports."""


_MODEL_HELP = (
    "the model under test: every chat condition of the file asks it (local: the embedded "
    "model, offline; benchkit[local])"
)
_JUDGE_HELP = (
    "the judges' model: every evaluator that asks a model (llm_rubric, llm_pairwise, the "
    "tools' judges) asks it (local: the embedded model)"
)


def add_model_options(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    *,
    model_help: str = _MODEL_HELP,
    judge_help: str = _JUDGE_HELP,
) -> None:
    """Add ``--model`` and ``--judge``: the models of a run, given meaning by
    :func:`apply_models` (and read as :func:`model_choice`). Every command that runs a
    suite against a model takes them under these names.

    .. versionadded:: 0.2.0
    """
    parser.add_argument("--model", metavar="MODEL", help=model_help)
    parser.add_argument("--judge", metavar="MODEL", help=judge_help)


@attrs.frozen
class ModelChoice:
    """The models a command was given: ``--model`` (under test) and ``--judge``.

    .. versionadded:: 0.2.0
    """

    model: str | None = None
    judge: str | None = None


def model_choice(args: argparse.Namespace) -> ModelChoice:
    """The ``--model`` and ``--judge`` of a command (None where not given).

    .. versionadded:: 0.2.0
    """
    return ModelChoice(getattr(args, "model", None), getattr(args, "judge", None))


#: What a chat condition keeps when ``--model local`` makes it the embedded model.
_LOCAL_OPTIONS = ("temperature", "max_tokens", "system", "tools", "seed", "timeout", "cache")


def apply_models(
    suite: Suite,
    choice: ModelChoice,
    *,
    where: str,
    registries: Registries | None = None,
) -> Suite:
    """``suite`` with the models of ``choice``: what ``--model`` and ``--judge`` mean.

    ``model``: every condition whose provider is ``chat`` or ``local`` asks it (``local``:
    the embedded model, keeping the options it shares with the chat provider), and every
    ``agent`` condition runs its loop with it. ``judge``:
    every evaluator whose factory takes a ``model`` option — a judge — asks it, on the
    benchmark and on each task. Either one that ``suite`` (read from ``where``) gives no
    place to is a ConfigError naming the file: it would otherwise be ignored in silence.

    .. versionadded:: 0.2.0
    """
    if choice.model is not None:
        suite = _with_model(suite, choice.model, where)
    if choice.judge is not None:
        suite = _with_judge(suite, choice.judge, where, registries)
    return suite


def _with_model(suite: Suite, model: str, where: str) -> Suite:
    from benchkit.llm import LOCAL
    from benchkit.model import ProviderSpec

    # local:PATH.gguf names a file from the working directory, not the benchmark's folder.
    gguf = model.startswith(LOCAL + ":")
    if gguf:
        model = f"{LOCAL}:{Path(model[len(LOCAL) + 1 :]).expanduser().resolve()}"
    conditions = []
    changed = False
    for condition in suite.conditions:
        spec = condition.provider
        if isinstance(spec, ProviderSpec) and spec.type == "agent":
            # An agent's loop asks the model (``local`` drops the file's endpoint and price).
            changed = True
            drop = ("base_url", "price") if model == LOCAL or gguf else ()
            kept = {k: v for k, v in spec.options.items() if k not in drop}
            spec = ProviderSpec("agent", {**kept, "model": model})
            condition = attrs.evolve(condition, provider=spec)
        elif isinstance(spec, ProviderSpec) and spec.type in ("chat", "local"):
            changed = True
            if spec.options.get("model", LOCAL if spec.type == "local" else None) != model:
                if model == LOCAL or gguf:
                    kept = {k: v for k, v in spec.options.items() if k in _LOCAL_OPTIONS}
                    spec = ProviderSpec("local", {**kept, "model": model} if gguf else kept)
                else:
                    spec = ProviderSpec("chat", {**spec.options, "model": model})
                condition = attrs.evolve(condition, provider=spec)
        conditions.append(condition)
    if not changed:
        raise ConfigError(
            f"--model names the model of {where}'s chat and agent conditions, and it has none",
            fix="drop --model, or give the file a condition with `provider: {type: chat}`.",
        )
    return attrs.evolve(suite, conditions=tuple(conditions))


def _judge_setter(
    judge: str, base_dir: Path | None, registries: Registries | None
) -> tuple[Callable[[tuple[EvaluatorSpec, ...]], tuple[EvaluatorSpec, ...]], dict[str, bool]]:
    """A function giving ``judge`` as the model of every judge among some evaluator specs
    (an evaluator whose factory takes a ``model`` option), and the record of which types
    it found to be judges."""
    from benchkit.registry import default_registries

    evaluators = (registries or default_registries()).evaluators
    found: dict[str, bool] = {}

    def is_judge(spec: EvaluatorSpec) -> bool:
        if spec.type not in found:
            try:
                factory = evaluators.get(spec.type, base_dir=base_dir)
                found[spec.type] = "model" in inspect.signature(factory).parameters
            except (BenchkitError, TypeError, ValueError):
                found[spec.type] = False  # the run itself says what is wrong with it
        return found[spec.type]

    def judged(specs: tuple[EvaluatorSpec, ...]) -> tuple[EvaluatorSpec, ...]:
        return tuple(
            attrs.evolve(spec, options={**spec.options, "model": judge}) if is_judge(spec) else spec
            for spec in specs
        )

    return judged, found


def judge_specs(
    specs: Sequence[EvaluatorSpec], judge: str, *, where: str, registries: Registries | None = None
) -> tuple[EvaluatorSpec, ...]:
    """``specs`` with ``judge`` (``--judge``) as the model of every judge among them; a
    ConfigError naming ``where`` when none is a judge (it would be ignored in silence).

    .. versionadded:: 0.2.0
    """
    judged, found = _judge_setter(judge, None, registries)
    out = judged(tuple(specs))
    if not any(found.values()):
        raise ConfigError(
            f"--judge names the model of {where}'s judges, and it has none",
            fix="drop --judge, or give an evaluator that asks a model (llm_rubric, say).",
        )
    return out


def _with_judge(suite: Suite, judge: str, where: str, registries: Registries | None) -> Suite:
    judged, found = _judge_setter(judge, suite.base_dir, registries)
    benchmark = suite.benchmark
    changes: dict[str, Any] = {"evaluators": judged(benchmark.evaluators)}
    if isinstance(benchmark.tasks, tuple):
        changes["tasks"] = tuple(
            attrs.evolve(task, evaluators=judged(task.evaluators)) if task.evaluators else task
            for task in benchmark.tasks
        )
    if not any(found.values()):
        raise ConfigError(
            f"--judge names the model of {where}'s judges, and it has none",
            fix="drop --judge, or give the file an evaluator that asks a model (llm_rubric, say).",
        )
    return attrs.evolve(suite, benchmark=attrs.evolve(benchmark, **changes))


def add_select_options(parser: argparse.ArgumentParser) -> None:
    """Add ``-k/--task``, ``--tag``, ``--condition`` and ``--limit``: every command that runs
    a suite selects part of it the same way (:func:`select`, :meth:`Suite.select`)."""
    group = parser.add_argument_group("select what runs")
    group.add_argument(
        "-k",
        "--task",
        action="append",
        default=[],
        metavar="PATTERN",
        help="only tasks whose id contains PATTERN (a glob with * ? [); repeat to add",
    )
    group.add_argument(
        "--tag", action="append", default=[], metavar="T", help="only tasks tagged T; repeatable"
    )
    group.add_argument(
        "--condition",
        action="append",
        default=[],
        metavar="C",
        help="only condition C; repeatable",
    )
    group.add_argument(
        "--limit",
        type=bounded(int, 1, _limits.MAX_COUNT),
        metavar="N",
        help="only the first N selected tasks",
    )


def select(suite: Suite, args: argparse.Namespace) -> Suite:
    """The part of ``suite`` that the options of :func:`add_select_options` select."""
    return suite.select(tasks=args.task, tags=args.tag, conditions=args.condition, limit=args.limit)


def add_junit_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--junit-xml PATH`` (written by :func:`write_junit`), so CI shows each cell."""
    parser.add_argument(
        "--junit-xml",
        type=Path,
        metavar="PATH",
        help="also write JUnit XML (one test case per cell) for CI systems",
    )


def write_junit(result: RunResult, args: argparse.Namespace) -> None:
    """Write ``result`` as JUnit XML to ``--junit-xml``, when it was given."""
    if args.junit_xml is None:
        return
    from benchkit.reports import to_junit_xml

    args.junit_xml.parent.mkdir(parents=True, exist_ok=True)
    args.junit_xml.write_text(to_junit_xml(result), encoding="utf-8")


def add_margin_option(parser: argparse.ArgumentParser, *, flag: str = "--margin") -> None:
    """Add the regression margin (``--margin`` on ``compare``): how much worse run B may be
    before a significant difference counts as a regression.

    .. versionadded:: 0.2.0
    """
    parser.add_argument(
        flag,
        dest="margin" if flag == "--margin" else "regression_margin",
        type=bounded(float, 0, 1),
        metavar="M",
        help="a regression is a significant drop of more than M in the score (default 0)",
    )


def add_baseline_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--baseline RUN`` and ``--regression-margin M``: compare the run with a stored
    run once it finishes, with :func:`report_regressions`'s exit rule. Every command that
    runs a suite into the store takes them (``run``, every tool's run commands).

    .. versionadded:: 0.2.0
    """
    parser.add_argument(
        "--baseline",
        metavar="RUN",
        help="compare with this stored run afterwards (id, prefix, latest, -2, ...; resolved "
        "before the run starts) and exit 1 on a significant regression (docs/ci.md)",
    )
    add_margin_option(parser, flag="--regression-margin")


def report_regressions(check: RegressionCheck, err: TextIO) -> int:
    """Say ``check``'s verdict in one paragraph on ``err``; the exit code it means
    (:data:`EXIT_REGRESSION` when run B regressed or could not be checked, else 0).

    .. versionadded:: 0.2.0
    """
    err.write(("benchkit: " if check.failed else "") + check.message + "\n")
    return EXIT_REGRESSION if check.failed else EXIT_OK


def baseline_id(args: argparse.Namespace) -> str | None:
    """The run ``--baseline`` names, resolved now — before the run starts, so ``latest``
    is the newest run before this one — or None without ``--baseline``. The store is the
    one ``--store`` names, read even with ``--no-store`` (which only keeps this run out).

    .. versionadded:: 0.2.0
    """
    ref: str | None = getattr(args, "baseline", None)
    if ref is None:
        return None
    from benchkit.store import Store

    with Store(getattr(args, "store", None)) as store:
        return store.summary(ref).run_id


def compare_with_baseline(
    args: argparse.Namespace, baseline: str | None, result: RunResult, out: TextIO, err: TextIO
) -> int:
    """Compare ``result`` with the stored run ``baseline`` (from :func:`baseline_id`):
    the comparison on ``out`` in ``--format`` (none for json, which holds the run's
    result alone), the verdict on ``err``; the exit code of :func:`report_regressions`
    (0 without a baseline).

    .. versionadded:: 0.2.0
    """
    if baseline is None:
        return EXIT_OK
    from benchkit.store import Store
    from benchkit.store._compare import check_regressions, compare_runs, to_markdown, to_table

    with Store(getattr(args, "store", None)) as store:
        base = store.load(baseline)
    cmp = compare_runs(base, result)
    check = check_regressions(cmp, margin=getattr(args, "regression_margin", None) or 0.0)
    fmt = getattr(args, "format", "table")
    if fmt == "markdown":
        out.write("\n" + to_markdown(cmp, check))
    elif fmt != "json":
        console(out).print(to_table(cmp))
    return report_regressions(check, err)


#: The run options :func:`add_budget_options` adds, by their ``RunOptions`` names.
BUDGET_OPTIONS = ("max_cost", "max_tokens", "max_calls")


def add_budget_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add ``--max-cost USD``, ``--max-tokens N`` and ``--max-calls N``: the run's budget
    (``RunOptions.max_cost`` ... :data:`BUDGET_OPTIONS`). Once the finished cells reach one,
    no more cells start, those in flight are stopped as Ctrl-C stops them, and the run is
    ``interrupted: budget``; ``--resume`` with a higher budget goes on.

    .. versionadded:: 0.2.0
    """
    parser.add_argument(
        "--max-cost",
        type=bounded(float, 0, _limits.MAX_COST_USD, above=True),
        metavar="USD",
        help="stop once the cells have cost this much, in US dollars (system and judges; "
        "a model without a price stops the run: its cost is unknown)",
    )
    parser.add_argument(
        "--max-tokens",
        type=bounded(int, 0, _limits.MAX_COUNT, above=True),
        metavar="N",
        help="stop once the cells have used this many tokens (system and judges)",
    )
    parser.add_argument(
        "--max-calls",
        type=bounded(int, 0, _limits.MAX_COUNT, above=True),
        metavar="N",
        help="stop once this many calls were made (attempts of the system, judge requests)",
    )


def say_interrupted(
    result: RunResult,
    *,
    resumable: bool,
    err: TextIO,
    command: str | None = None,
    where: str = "",
) -> None:
    """The line a command prints when its run stopped early: by a signal, or by its budget
    (``interrupted: budget`` with the figures) — what did not run and what was kept
    (``where``: e.g. ``in STORE as run ID``) — then, when the run can be resumed, the
    command that resumes it (``command``, from :func:`resume_command`), ready to paste.

    .. versionadded:: 0.2.0
    """
    if result.budget is not None:
        err.write(f"{result.budget.text}; {result.not_run} cells did not run; ")
    else:
        why = f": {result.stopped_by}" if result.stopped_by else ""
        err.write(f"interrupted{why}; {result.not_run} cells did not run; ")
    err.write(f"{len(result.cells)} finished cells kept{' ' + where if where else ''}.")
    if resumable:
        more = " with a higher budget" if result.budget is not None else ""
        if command is None:
            err.write(f" To continue it, run the same command with --resume{more}.")
        else:
            err.write(f"\nto continue it{more}: {command}")
    err.write("\n")


def _program() -> list[str]:
    """How this process was started, as a shell would run it again: ``python -m benchkit``
    (the interpreter by its full path unless ``python`` on the PATH is this one), or the
    console script by name when the PATH finds it, else by its path."""
    import shutil

    script = sys.argv[0] if sys.argv else ""
    name = os.path.basename(script)
    if script and name not in ("__main__.py", "-c", "-m", "") and not name.endswith(".py"):
        found = shutil.which(name)
        same = found is not None and os.path.abspath(found) == os.path.abspath(script)
        return [name if same else os.path.abspath(script)]
    python = shutil.which("python")
    same = python is not None and os.path.abspath(python) == os.path.abspath(sys.executable)
    return ["python" if same else sys.executable, "-m", "benchkit"]


def resume_command(
    args: argparse.Namespace,
    store: Store | None,
    *,
    run_id: str | None = None,
    extra: Sequence[str] = (),
) -> str:
    """The command line that resumes this command's run, to print after a stop: the
    command as it was given (``args.argv``, which :func:`benchkit.cli.main` records) with
    every option it was started with, ``--store`` naming the store the run is in (when
    the command did not name one, so ``$BENCHKIT_STORE`` or the working directory need not
    be the same), ``--run-id`` when given (``run``), ``extra`` (options the command
    chose for itself, e.g. its output directory), and ``--resume``.

    .. versionadded:: 0.2.0
    """
    import shlex

    words = list(getattr(args, "argv", None) or ())

    def has(flag: str) -> bool:
        return any(w == flag or w.startswith(flag + "=") for w in words)

    if store is not None and not has("--store"):
        words += ["--store", str(store.path)]
    if run_id is not None and not has("--run-id"):
        words += ["--run-id", run_id]
    words += extra
    if not has("--resume"):
        words.append("--resume")
    return shlex.join([*_program(), *words])


@contextmanager
def signals_cancel(cancel: Callable[[int], None]) -> Iterator[list[int]]:
    """While inside: Ctrl-C (SIGINT) and SIGTERM call ``cancel(signum)`` — from the signal
    handler, so it must be thread-safe (``Runner.cancel_threadsafe``) — and are recorded in
    the list yielded; a second signal exits at once with one line on stderr (the user has
    asked twice). Outside the main thread nothing is installed.

    .. versionadded:: 0.2.0
    """
    received: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if received:
            os.write(2, b"benchkit: stopped at once (second signal)\n")
            os._exit(128 + received[0])
        received.append(signum)
        os.write(2, b"benchkit: stopping; finished cells are kept (again to quit at once)\n")
        cancel(signum)

    installed: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            installed[signum] = signal.signal(signum, handler)
    try:
        yield received
    finally:
        for number, previous in installed.items():
            signal.signal(number, previous)


def progress_for(total: int | None, *, quiet: bool = False) -> ProgressBar | ProgressLines | None:
    """A command's progress callback: a bar on a terminal, else (a pipe, a CI log) a plain
    line on stderr every 5 seconds and one at the end; None when ``quiet``
    (``--no-progress``). Enter a bar (``with bar or nullcontext()``) to draw it.

    .. versionadded:: 0.2.0
    """
    from benchkit._progress import ProgressLines

    if quiet:
        return None
    if sys.stderr.isatty():
        return ProgressBar(total)
    return ProgressLines(interval=5.0)


def add_store_options(parser: argparse.ArgumentParser) -> None:
    """The run-store options of every command that runs a suite through
    :func:`stored_run`: ``--store PATH`` and ``--no-store``; ``--resume``; the budget
    (:func:`add_budget_options`); ``--baseline RUN`` and ``--regression-margin``
    (:func:`add_baseline_options`). :func:`stored_run` gives them meaning, so a tool's
    command gets them all by calling this once.

    .. versionchanged:: 0.2.0
       Adds ``--resume``, ``--max-cost`` / ``--max-tokens`` / ``--max-calls`` and
       ``--baseline`` / ``--regression-margin`` (#44).
    """
    parser.add_argument(
        "--store",
        metavar="PATH",
        help="the run store (default: $BENCHKIT_STORE, else .benchkit/benchkit.db)",
    )
    parser.add_argument("--no-store", action="store_true", help="do not write to the run store")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the latest run of this suite: only its unfinished cells run",
    )
    add_budget_options(parser)
    add_baseline_options(parser)


@contextmanager
def open_store(args: argparse.Namespace) -> Iterator[Store | None]:
    """The run store ``--store`` names (default: ``$BENCHKIT_STORE``, else
    ``.benchkit/benchkit.db``), or None with ``--no-store``; closed afterwards.

    It is both the run history and the LLM reply cache: give it to the Runner as
    ``response_cache`` so ``--store`` / ``--no-store`` decide where replies are cached."""
    if args.no_store:
        yield None
        return
    from benchkit.store import Store

    store = Store(args.store)
    try:
        yield store
    finally:
        store.close()


@contextmanager
def stored_run(
    args: argparse.Namespace,
    suite: Suite,
    *,
    store: Store | None = None,
    run_id: str | None = None,
    replace: bool = False,
    sinks: Sequence[ResultSink] = (),
    progress: ProgressCallback | None = None,
) -> Iterator[StoredRun]:
    """The run of ``suite`` into the run store, prepared: run it with ``.arun()`` (or
    ``run_until_signalled(stored.runner, stored.arun)``); its ``run_id`` is printed on
    stderr afterwards, so every command's results end up in the run history.

    The one pipeline every run goes through (:class:`benchkit._stored.StoredRun`): the
    store's sink and the store as the LLM reply cache, then ``sinks``. ``store`` is one
    :func:`open_store` gave (None: open and close the one ``--store`` names here);
    ``run_id`` the id to store it under (None: a fresh one; ``replace``: replace a stored
    run of that id); with ``--no-store`` nothing is stored.

    .. versionchanged:: 0.2.0
       Yields the run (``StoredRun``) instead of its sinks and id.
    """
    from benchkit._stored import StoredRun

    budget = {k: v for k in BUDGET_OPTIONS if (v := getattr(args, k, None)) is not None}
    if budget:
        suite = suite.with_options(**budget)
    resume = bool(getattr(args, "resume", False))
    baseline = baseline_id(args)  # before the run: `latest` is not this run
    chosen = store if store is not None else (False if args.no_store else args.store)
    if resume and run_id is not None and not _has_run(chosen, run_id):
        run_id = None  # a fresh id the tool made: resume the latest run of this suite
    stored = StoredRun(
        suite,
        store=chosen,
        run_id=run_id,
        resume=resume,
        replace=replace and not resume,
        sinks=sinks,
        progress=progress,
    )
    with stored:
        yield stored
    if stored.store is not None:
        sys.stderr.write(f"run {stored.run_id}: stored in {stored.store.path}\n")
    result = stored.runner.last_result
    if result is not None and (result.budget is not None or baseline is not None):
        _after_command(args, functools.partial(_check_run, args, baseline, result))


def _has_run(store: Store | str | bool | None, run_id: str) -> bool:
    """Whether the store ``stored_run`` writes to holds run ``run_id``."""
    from benchkit.errors import RunNotFoundError
    from benchkit.store import Store

    if store is False:
        return False
    if isinstance(store, Store):
        opened, owned = store, False
    else:
        opened, owned = Store(None if store is None or store is True else store), True
    try:
        opened.summary(run_id)
        return True
    except RunNotFoundError:
        return False
    finally:
        if owned:
            opened.close()


def _check_run(args: argparse.Namespace, baseline: str | None, result: RunResult) -> int:
    """What a run through :func:`stored_run` adds to its command's exit code, once the
    command has printed its own report: the budget's stop (exit 1; the command said why
    with :func:`say_interrupted`) and the comparison with ``--baseline`` (exit 1 on a
    regression)."""
    code = EXIT_FAIL_UNDER if result.budget is not None else EXIT_OK
    gate = compare_with_baseline(args, baseline, result, sys.stdout, sys.stderr)
    return code or gate


def _after_command(args: argparse.Namespace, check: Callable[[], int]) -> None:
    """Run ``check`` after the command returns (see :func:`finish_command`)."""
    checks: list[Callable[[], int]] = args.__dict__.setdefault("after_command", [])
    checks.append(check)


def finish_command(args: argparse.Namespace, code: int) -> int:
    """The command's exit code with what its runs add (:func:`stored_run`'s budget stops and
    baseline comparisons, run after the command's own output): a command that would exit 0
    exits 1 when one of them fails; any other code stands.

    .. versionadded:: 0.2.0
    """
    for check in getattr(args, "after_command", ()):
        found = check()
        if code == EXIT_OK:
            code = found
    return code


def explorer_app(args: argparse.Namespace, **options: Any) -> Any:
    """The server of one stored run (:func:`benchkit.serve.create_explorer_app`: its tool's
    own routes at the root, the explorer beside them), for a tool's command that serves
    one. The command line hands it to every command in ``args``, so a tool's command
    reaches the server without importing it (the toolkits sit below the server).

    .. versionadded:: 0.2.0
    """
    make: Callable[..., Any] = args.explorer_app
    return make(**options)


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


def run_until_signalled(
    runner: Runner, main: Callable[[], Awaitable[RunResult]]
) -> tuple[RunResult, int | None]:
    """``anyio.run(main)``, stopped gracefully by Ctrl-C or SIGTERM.

    Returns the result and, when a signal stopped the run, the exit code to use (130 for
    SIGINT, 143 for SIGTERM): the cells that finished are kept (they are in the sinks) and
    the run can be resumed. The handlers are ours from before the loop starts until it
    has stopped, so a signal is never lost between "not started" and "running" (the
    Runner remembers a cancel that comes before the run starts). A second signal exits at
    once with one line on stderr: the user has asked twice.
    """
    import anyio

    with signals_cancel(lambda signum: runner.cancel_threadsafe("signal")) as received:
        try:
            result = anyio.run(main)
        except INTERRUPTS:  # a Ctrl-C from elsewhere, with the handlers not ours
            if runner.last_result is None:
                raise
            result = runner.last_result
            received.append(int(signal.SIGINT))
    return result, (128 + received[0] if received else None)


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
    from benchkit._aggregate import aggregate_run, replayed_stop
    from benchkit.judges import judge_warnings
    from benchkit.results import RunResult
    from benchkit.store import read_jsonl

    info, cells = read_jsonl(path)
    if info is None:
        raise FormatError("no run header line", file=path, line=1, fix="pass a cells JSONL file.")
    # The file is in completion order; the result is in task order, as the Runner's is.
    order = {c.id: i for i, c in enumerate(info.conditions)}
    cells = sorted(cells, key=lambda c: (c.index, order.get(c.condition_id, 0), c.epoch))
    stop = replayed_stop(info, cells)  # an --until-decided run: the procedure's verdicts
    aggregates, groups, comparisons = aggregate_run(
        cells,
        [c.id for c in info.conditions],
        method=info.scoring_method,
        k=info.scoring_k,
        errors_as=info.options.errors_as,
        seed=info.options.seed,
        early_stop=stop,
    )
    total = info.total_cells
    # a run that stopped because it had decided is finished, not interrupted
    interrupted = total is not None and len(cells) < total and not (stop and stop.stopped)
    return RunResult(
        info=info,
        cells=tuple(cells),
        aggregates=aggregates,
        groups=groups,
        comparisons=comparisons,
        interrupted=interrupted,
        not_run=max(0, total - len(cells)) if interrupted and total is not None else 0,
        early_stop=stop,
        warnings=judge_warnings(cells, seed=info.options.seed),
    )
