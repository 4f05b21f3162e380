"""CodeForge benchmark datasets: YAML prompts with expected outputs, tools and context.

A dataset is one YAML file (CodeForge keeps them in ``configs/benchmarks/``)::

    name: Basic Coding
    description: Fundamental coding tasks.
    tasks:
      - id: basic-001
        name: FizzBuzz implementation
        input: |
          Write a Python function `fizzbuzz(n)` ...
        expected_output: |
          def fizzbuzz(n): ...
        difficulty: easy                 # easy | medium | hard (default medium)
        expected_tools: [{name: read_file, args: '{"path": "src/main.py"}'}]
        context: ["a retrieval passage"]

:func:`load` validates the file against ``benchkit/schemas/codeforge.schema.json`` and
maps it onto the core model: the file stem is the benchmark id, ``name`` its name; each
task becomes a :class:`~benchkit.model.Task` (``input``, ``expected_output`` →
``expected``, ``expected_tools`` → ``expected_tool_calls``, ``context``, ``difficulty``;
other keys are kept in ``metadata``). Every mistake is a
:class:`~benchkit.errors.FormatError` naming the file, line, column and JSON path.

:func:`codeforge_suite` builds the runnable suite — the dataset against a chat model,
scored by CodeForge's metrics (see :mod:`benchkit.formats.codeforge._metrics`) — and
:func:`summary` / :func:`export_results` read its result in CodeForge's terms.
:func:`discover_datasets` and :func:`find_dataset` find datasets in a directory by file
stem or by name. docs/formats/codeforge.md is the reference.

    >>> suite = codeforge_suite("basic-coding", model="gpt-4o-mini",
    ...                         metrics=["correctness"])               # doctest: +SKIP
    >>> result = benchkit.run(suite)                                   # doctest: +SKIP
    >>> summary(result).summary_scores()                               # doctest: +SKIP
    {'correctness': 0.74}
"""

from __future__ import annotations

import difflib
import functools
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from benchkit import _builtins, stats
from benchkit._jsonschema import SchemaValidator, inline_refs, load_schema, make_validator, validate
from benchkit.errors import BenchkitError, ConfigError, FormatError
from benchkit.formats._source import Document, JsonPath, read_document, unique_ids
from benchkit.model import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    ProviderSpec,
    RunOptions,
    Source,
    Suite,
    Task,
    ToolCall,
)
from benchkit.stats import Interval

if TYPE_CHECKING:
    from benchkit.results import CellResult, RunResult

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "CONFIG_FILE",
    "DATASETS_DIR_ENV",
    "DEFAULT_DATASETS_DIR",
    "DIFFICULTIES",
    "FORMAT",
    "METRICS",
    "CodeForgeFormat",
    "DatasetInfo",
    "MetricSummary",
    "Summary",
    "codeforge_suite",
    "configured_datasets_dir",
    "detect",
    "discover_datasets",
    "export_results",
    "find_dataset",
    "load",
    "resolve_datasets_dir",
    "schema",
    "summary",
    "write_results",
]

FORMAT_NAME = "codeforge"

METRICS: Mapping[str, str] = {
    "correctness": "codeforge_correctness",
    "tool_correctness": "codeforge_tool_correctness",
    "faithfulness": "codeforge_faithfulness",
    "answer_relevancy": "codeforge_answer_relevancy",
    "contextual_precision": "codeforge_contextual_precision",
}
"""CodeForge metric names → the evaluator types that compute them."""

DIFFICULTIES = ("easy", "medium", "hard")
DEFAULT_DIFFICULTY = "medium"

DATASETS_DIR_ENV = "CODEFORGE_BENCHMARK_DATASETS_DIR"
DEFAULT_DATASETS_DIR = Path("benchmarks") / "codeforge"
CONFIG_FILE = "codeforge.yaml"
"""CodeForge's configuration file, in the project's directory (``benchmark.datasets_dir``)."""

BASE_URL_ENV = "LITELLM_BASE_URL"
"""Where the model under test is reached when no base URL is given (then OPENAI_BASE_URL)."""
API_KEY_ENV = ("LITELLM_MASTER_KEY", "OPENAI_API_KEY")
"""The variables the model's API key is read from, first set wins."""

_FIX_HINT = "see docs/formats/codeforge.md"
_SUFFIXES = frozenset({".yaml", ".yml"})
_TOP_KEYS = ("name", "description", "tasks")
_TASK_KEYS = (
    "id",
    "name",
    "input",
    "expected_output",
    "difficulty",
    "expected_tools",
    "context",
)
#: Keys the loader reads but also keeps in metadata (later CodeForge phases use them).
_TASK_EXTRAS = ("expected_tool_sequence", "tools")
#: Needed on some task by each metric that reads it, or the metric cannot run at all.
_NEEDS: Mapping[str, tuple[str, str]] = {
    "faithfulness": ("context", "`context` passages"),
    "contextual_precision": ("context", "`context` passages"),
    "tool_correctness": ("expected_tool_calls", "`expected_tools`"),
}


class CodeForgeFormat:
    """The ``codeforge`` entry of the formats registry (see :mod:`benchkit.formats`)."""

    name = FORMAT_NAME
    #: What sets the conditions of its runs: the file names none (the chat model come from
    #: the command line). ``benchkit list`` shows it in the conditions column.
    conditions_from = "--model"

    def __repr__(self) -> str:
        return "<format codeforge>"

    def detect(self, path: Path, head: Any | None) -> bool:
        return detect(path, head)

    def load(self, path: Path, *, document: Document | None = None, **options: Any) -> Suite:
        if options:
            raise ConfigError(
                f"the codeforge format takes no options {sorted(options)}",
                fix="load it without keyword options.",
            )
        return load(path, document=document)


FORMAT = CodeForgeFormat()


def detect(path: Path, head: Any | None) -> bool:
    """True for a mapping with a ``name`` and a ``tasks`` list in which some task has an
    ``input`` and an ``expected_output`` or a ``name`` — so a dataset whose tasks all lack
    ``expected_output`` is still claimed, and its schema error names the missing field.
    A native file (a ``benchkit`` key) is never claimed."""
    if not isinstance(head, dict) or "benchkit" in head or "name" not in head:
        return False
    tasks = head.get("tasks")
    return isinstance(tasks, list) and any(
        isinstance(t, dict) and "input" in t and ("expected_output" in t or "name" in t)
        for t in tasks
    )


def schema() -> dict[str, Any]:
    """The CodeForge dataset JSON Schema (Draft 2020-12), as shipped in the package."""
    return load_schema("codeforge")


@functools.cache
def _validator() -> SchemaValidator:
    return make_validator(inline_refs(schema()))


# --------------------------------------------------------------------------- loading


def load(path: str | os.PathLike[str], *, document: Document | None = None) -> Suite:
    """Read a CodeForge dataset into a :class:`~benchkit.model.Suite` with no conditions
    and no evaluators (:func:`codeforge_suite` adds the model and the metrics).

    ``document`` is the already-parsed file, when the caller has it.
    """
    given = Path(path)
    doc = document if document is not None else read_document(given)
    _precheck(doc)
    validate(doc, _validator(), fix_hint=_FIX_HINT)
    data: dict[str, Any] = doc.data
    _near_misses(doc, data, (), _TOP_KEYS)
    file = given.resolve()
    benchmark = Benchmark(
        id=given.stem,
        name=data["name"],
        description=data.get("description"),
        tasks=_tasks(doc, data["tasks"]),
        metadata={k: v for k, v in data.items() if k not in _TOP_KEYS},
        source=Source(path=str(file), format=FORMAT_NAME),
    )
    return Suite(benchmark, (), RunOptions(), base_dir=file.parent)


def _precheck(doc: Document) -> None:
    """What the schema would say less helpfully: a task id written as a YAML number."""
    data = doc.data
    tasks = data.get("tasks") if isinstance(data, dict) else None
    for index, item in enumerate(tasks if isinstance(tasks, list) else ()):
        ident = item.get("id") if isinstance(item, dict) else None
        if isinstance(ident, (int, float)) and not isinstance(ident, bool):
            raise doc.error(
                f"task id {ident!r} is a number; ids must be strings",
                ("tasks", index, "id"),
                fix=f'quote it: id: "{ident}" ({_FIX_HINT}).',
            )


def _near_misses(
    doc: Document, item: Mapping[str, Any], path: JsonPath, known: Sequence[str]
) -> None:
    """Unknown keys are kept as metadata — unless one is a near miss of a known key
    (``difficulity``), which would otherwise be dropped from the model in silence."""
    for key in item:
        if key in known or key in _TASK_EXTRAS:
            continue
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.85)
        if close:
            raise doc.error(
                f"unknown key `{key}`",
                (*path, key),
                key=True,
                fix=f"did you mean `{close[0]}`? ({_FIX_HINT})",
            )


def _tasks(doc: Document, items: list[Any]) -> tuple[Task, ...]:
    unique_ids(doc, items)
    return tuple(_task(doc, item, ("tasks", index)) for index, item in enumerate(items))


def _task(doc: Document, item: dict[str, Any], path: JsonPath) -> Task:
    _near_misses(doc, item, path, _TASK_KEYS)
    if "expected_tools" in item and "expected_tool_sequence" in item:
        raise doc.error(
            "both `expected_tools` and `expected_tool_sequence` are given",
            (*path, "expected_tool_sequence"),
            key=True,
            fix="keep one list of expected tool calls (`expected_tools`).",
        )
    key = "expected_tools" if "expected_tools" in item else "expected_tool_sequence"
    calls = tuple(
        _tool_call(doc, call, (*path, key, i)) for i, call in enumerate(item.get(key, ()))
    )
    text: str = item["input"]
    tools = item.get("tools")
    task_input: Any = (
        {"messages": [{"role": "user", "content": text}], "tools": tools} if tools else text
    )
    metadata = {"name": item["name"]}
    metadata.update({k: v for k, v in item.items() if k not in _TASK_KEYS})
    return Task(
        id=item["id"],
        input=task_input,
        expected=item["expected_output"],
        difficulty=item.get("difficulty", DEFAULT_DIFFICULTY),
        description=item["name"],
        context=tuple(item.get("context", ())),
        expected_tool_calls=calls,
        metadata=metadata,
    )


def _tool_call(doc: Document, item: dict[str, Any], path: JsonPath) -> ToolCall:
    """An expected tool call; ``args`` is a mapping or the JSON text of one."""
    args: Any = item.get("args", {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as exc:
            raise doc.error(
                f"`args` is not valid JSON: {exc}",
                (*path, "args"),
                fix='write the arguments as a mapping, or as JSON text: \'{"path": "a.py"}\'.',
            ) from None
        if not isinstance(args, dict):
            raise doc.error(
                f"`args` is JSON text of {type(args).__name__}, not of an object",
                (*path, "args"),
                fix='give the arguments as a JSON object: \'{"path": "a.py"}\'.',
            )
    return ToolCall(item["name"], args)


# --------------------------------------------------------------------------- discovery


@attrs.frozen
class DatasetInfo:
    """A dataset found in a directory: its id (file stem), name, size and difficulty mix.

    ``path`` is relative to the directory searched (POSIX separators), ``file`` the path
    as found; ``difficulties`` counts tasks per difficulty.
    """

    id: str
    name: str
    description: str | None
    task_count: int
    path: str
    file: Path
    difficulties: Mapping[str, int]


def configured_datasets_dir(base: str | os.PathLike[str]) -> Path | None:
    """The datasets directory CodeForge's configuration names for a project at ``base``:
    ``$CODEFORGE_BENCHMARK_DATASETS_DIR``, else the ``benchmark.datasets_dir`` key of
    ``<base>/codeforge.yaml`` (CodeForge's precedence: defaults < that file < environment);
    relative paths are relative to ``base``. None when neither says.

    A ``codeforge.yaml`` that does not parse, or whose key is not a string, is a
    :class:`~benchkit.errors.FormatError` naming the file and line.
    """
    root = Path(base)
    from_env = os.environ.get(DATASETS_DIR_ENV)
    if from_env:
        return root / from_env
    config = root / CONFIG_FILE
    if not config.is_file():
        return None
    document = read_document(config, kind="yaml")
    section = document.data.get("benchmark") if isinstance(document.data, dict) else None
    value = section.get("datasets_dir") if isinstance(section, dict) else None
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise document.error(
            "benchmark.datasets_dir must be a string",
            ("benchmark", "datasets_dir"),
            fix="write the datasets directory's path, e.g. `datasets_dir: configs/benchmarks`.",
        )
    return root / value


def resolve_datasets_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """The datasets directory: ``directory``, else what CodeForge's configuration names
    (``$CODEFORGE_BENCHMARK_DATASETS_DIR``, else ``benchmark.datasets_dir`` in
    ``./codeforge.yaml``: :func:`configured_datasets_dir`), else ``benchmarks/codeforge``
    (of the working directory, else of the built-ins)."""
    if directory is not None:
        return Path(directory)
    configured = configured_datasets_dir(Path.cwd())
    if configured is not None:
        return configured
    return _builtins.benchmarks_dir() / DEFAULT_DATASETS_DIR.name


def discover_datasets(
    directory: str | os.PathLike[str],
) -> tuple[list[DatasetInfo], list[tuple[Path, BenchkitError]]]:
    """Every ``.yaml`` / ``.yml`` file under ``directory`` (recursively, sorted, hidden
    files and directories skipped): ``(datasets, problems)``.

    A file that cannot be read or is not a valid dataset is a problem — reported with its
    error, never skipped in silence; so is a directory that cannot be listed.
    """
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(
            f"{str(root)!r} is not a directory",
            fix=f"pass the directory that holds the datasets ({_FIX_HINT}).",
        )
    found: list[DatasetInfo] = []
    problems: list[tuple[Path, BenchkitError]] = []

    def unreadable(exc: OSError) -> None:
        where = Path(exc.filename) if exc.filename else root
        problems.append(
            (where, FormatError(f"cannot read the directory: {exc.strerror}", file=where))
        )

    for current, subdirs, files in os.walk(root, onerror=unreadable):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        for name in sorted(files):
            file = Path(current) / name
            if name.startswith(".") or file.suffix.lower() not in _SUFFIXES:
                continue
            if not file.is_file():  # a FIFO, socket or device: reading it could block
                continue
            try:
                bench = load(file).benchmark
            except BenchkitError as exc:
                problems.append((file, exc))
                continue
            mix: dict[str, int] = {}
            for task in bench.iter_tasks():
                level = task.difficulty or DEFAULT_DIFFICULTY
                mix[level] = mix.get(level, 0) + 1
            found.append(
                DatasetInfo(
                    id=bench.id,
                    name=bench.title,
                    description=bench.description,
                    task_count=bench.task_count or 0,
                    path=file.relative_to(root).as_posix(),
                    file=file,
                    difficulties=mix,
                )
            )
    return found, problems


def find_dataset(directory: str | os.PathLike[str], ref: str) -> Path:
    """The dataset file that ``ref`` names in ``directory``: its path relative to the
    directory (with or without the suffix), else its file stem (as CodeForge's API
    addresses datasets), else its YAML ``name`` (as CodeForge lists them).

    ConfigError when nothing matches (listing what is there) or several files do; the
    load error itself when the only file that matches is broken.
    """
    infos, problems = discover_datasets(directory)
    root = Path(directory)

    def by_path(path: str) -> bool:
        return path == ref or path.rsplit(".", 1)[0] == ref

    for label, matches in (
        ("path", [i.file for i in infos if by_path(i.path)]),
        ("file stem", [i.file for i in infos if i.id == ref]),
        ("name", [i.file for i in infos if i.name == ref]),
    ):
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = ", ".join(str(m) for m in matches)
            raise ConfigError(
                f"dataset {ref!r} is ambiguous: it is the {label} of {shown}",
                fix="pass the file's path instead.",
            )
    for file, error in problems:
        relative = file.relative_to(root).as_posix() if file.is_relative_to(root) else str(file)
        if file.stem == ref or by_path(relative):
            raise error
    known = ", ".join(f"{i.id} ({i.name})" for i in infos) or "(none)"
    raise ConfigError(
        f"no dataset {ref!r} in {str(root)!r} (known: {known})",
        fix="pass a dataset file, or a file stem or name from `python -m benchkit datasets list`.",
    )


# --------------------------------------------------------------------------- suites


def _metric_names(metrics: str | Sequence[str]) -> list[str]:
    """The requested metric names, checked: known, not repeated, at least one."""
    items = metrics.split(",") if isinstance(metrics, str) else list(metrics)
    names = [m.strip() for m in items if m.strip()]
    known = ", ".join(METRICS)
    if not names:
        raise ConfigError("at least one metric is required", fix=f"choose from: {known}.")
    seen: set[str] = set()
    for name in names:
        if name not in METRICS:
            close = difflib.get_close_matches(name, list(METRICS), n=1)
            hint = f"did you mean `{close[0]}`? " if close else ""
            raise ConfigError(f"unknown metric {name!r}", fix=f"{hint}known metrics: {known}.")
        if name in seen:
            raise ConfigError(f"metric {name!r} is listed twice", fix="list each metric once.")
        seen.add(name)
    return names


def _run_options(changes: Mapping[str, Any]) -> RunOptions:
    try:
        return attrs.evolve(RunOptions(), **changes)
    except TypeError:
        fields = ", ".join(f.name for f in attrs.fields(RunOptions))
        raise ConfigError(
            f"unknown run options {sorted(set(changes) - set(attrs.fields_dict(RunOptions)))}",
            fix=f"use some of: {fields}.",
        ) from None
    except ValueError as exc:
        raise ConfigError(f"invalid run option: {exc}", fix="pass a positive value.") from exc


def _dataset_file(dataset: str | os.PathLike[str], directory: Path) -> Path:
    path = Path(dataset)
    if path.is_file():
        return path
    if path.is_dir():
        raise ConfigError(
            f"{str(path)!r} is a directory, not a dataset",
            fix="pass a dataset file, or its stem or name with datasets_dir=that directory.",
        )
    if not directory.is_dir():
        raise ConfigError(
            f"no dataset {os.fspath(dataset)!r}: it is not a file, and the datasets directory "
            f"{str(directory)!r} does not exist",
            fix=f"pass a dataset file, or set datasets_dir (or ${DATASETS_DIR_ENV}).",
        )
    return find_dataset(directory, os.fspath(dataset))


def _check_applicable(benchmark: Benchmark, names: Iterable[str]) -> None:
    """A metric that no task of the dataset can feed is refused before the run."""
    tasks = list(benchmark.iter_tasks())
    for name in names:
        if name not in _NEEDS:
            continue
        field, what = _NEEDS[name]
        if not any(getattr(task, field) for task in tasks):
            raise ConfigError(
                f"metric {name!r} needs {what} on the tasks, and no task of dataset "
                f"{benchmark.id!r} has any",
                fix=f"add {what} to the tasks, or drop {name!r} from the metrics.",
            )


def codeforge_suite(
    dataset: str | os.PathLike[str],
    *,
    model: str,
    metrics: str | Sequence[str],
    base_url: str | None = None,
    datasets_dir: str | os.PathLike[str] | None = None,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    cache: bool = True,
    api_key_env: Sequence[str] | None = None,
    judge_api_key_env: Sequence[str] | None = None,
    **run_options: Any,
) -> Suite:
    """The suite that runs a CodeForge dataset against a chat model and scores it.

    ``dataset`` is a file path, or a file stem or ``name`` in ``datasets_dir`` (default
    ``$CODEFORGE_BENCHMARK_DATASETS_DIR``, else ``benchmarks/codeforge``). ``model`` is
    the model under test, reached at ``base_url`` (else ``$LITELLM_BASE_URL``, else
    ``$OPENAI_BASE_URL``, else OpenAI) with the key in ``$LITELLM_MASTER_KEY`` or
    ``$OPENAI_API_KEY``; it is the suite's one condition (id = ``model``). ``metrics`` are
    CodeForge metric names (a list, or one comma-separated string), scored in that order
    by judges at ``judge_base_url`` with ``judge_model`` (else the variables of
    :func:`benchkit.formats.codeforge._metrics.judge_client`). ``metric_options`` gives one
    metric's evaluator options (``{"tool_correctness": {"mode": "f1"}}``); ``cache=False``
    turns off the reply cache of the model and the judges. ``api_key_env`` and
    ``judge_api_key_env`` replace the variables the keys are read from (``[]``: no key; a
    server passes its configured endpoint's variable). ``run_options`` are
    :class:`~benchkit.model.RunOptions` fields (``concurrency``, ``timeout``, ...).

    Everything is checked before anything runs: an unknown or repeated metric, a missing
    model, an unknown run option, a dataset that cannot be found or loaded, and a metric
    that no task can feed (faithfulness without any ``context``, ...) are errors here.
    """
    names = _metric_names(metrics)
    if not model or not model.strip():
        raise ConfigError("model is required", fix="name the chat model under test.")
    extra = dict(metric_options or {})
    for name in extra:
        if name not in names:
            raise ConfigError(
                f"metric_options names {name!r}, which is not among the metrics {names}",
                fix="give options only for the metrics being run.",
            )
    run = _run_options(run_options)
    suite = load(_dataset_file(dataset, resolve_datasets_dir(datasets_dir)))
    benchmark = suite.benchmark
    _check_applicable(benchmark, names)
    judge: dict[str, Any] = {}
    if judge_model is not None:
        judge["model"] = judge_model
    if judge_base_url is not None:
        judge["base_url"] = judge_base_url
    if judge_api_key_env is not None:
        judge["api_key_env"] = list(judge_api_key_env)
    if not cache:
        judge["cache"] = False
    evaluators = tuple(
        EvaluatorSpec(METRICS[name], {**judge, **extra.get(name, {})}, name=name) for name in names
    )
    keys = API_KEY_ENV if api_key_env is None else api_key_env
    provider: dict[str, Any] = {"model": model, "api_key_env": list(keys)}
    from benchkit.llm import LOCAL  # the embedded model has its own endpoint

    url = base_url or (None if model == LOCAL else os.environ.get(BASE_URL_ENV))
    if url:
        provider["base_url"] = url
    if not cache:
        provider["cache"] = False
    condition = Condition(model, ProviderSpec("chat", provider), label=model)
    return Suite(
        attrs.evolve(benchmark, evaluators=evaluators), (condition,), run, base_dir=suite.base_dir
    )


# --------------------------------------------------------------------------- summaries


@attrs.frozen
class MetricSummary:
    """One metric's mean for one condition (and one difficulty, when ``difficulty`` is set).

    ``mean`` is over ``n`` values, with a bootstrap ``interval`` (95 %). ``errors``
    counts metric scores that errored (a judge failure): they are left out, never
    averaged as 0. ``cell_errors`` counts cells whose model call failed, so no metric
    ran: they enter the mean as 0 when the run's ``errors_as`` is ``zero`` (the default)
    and are left out when it is ``exclude``.
    """

    condition_id: str
    metric: str
    difficulty: str | None
    mean: float | None
    interval: Interval | None
    n: int
    errors: int
    cell_errors: int
    errors_as: str


@attrs.frozen
class Summary:
    """Per-metric means with intervals, per-difficulty breakdown, tokens, cost, time.

    ``tokens_in`` / ``tokens_out`` / ``cost_usd`` are the model under test's (``cost_usd``
    is None when no price was known); ``judge_*`` are the judges'. ``duration_ms`` sums
    the cells' durations (model call and scoring).
    """

    metrics: tuple[MetricSummary, ...]
    by_difficulty: tuple[MetricSummary, ...]
    cells: int
    errored_cells: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    judge_tokens_in: int
    judge_tokens_out: int
    judge_cost_usd: float | None
    duration_ms: float

    def summary_scores(self, condition_id: str | None = None) -> dict[str, float | None]:
        """``{metric: mean}`` of one condition (the first when not given): CodeForge's
        ``summary_scores``, except that a metric with no value is None, not 0."""
        if condition_id is None and self.metrics:
            condition_id = self.metrics[0].condition_id
        return {m.metric: m.mean for m in self.metrics if m.condition_id == condition_id}

    def to_dict(self) -> dict[str, Any]:
        from benchkit.serde import unstructure

        data: dict[str, Any] = unstructure(self)
        return data


def _metric_order(cells: Iterable[CellResult], metrics: Sequence[str] | None) -> list[str]:
    if metrics is not None:
        return list(metrics)
    names: dict[str, None] = {}
    for cell in cells:
        for score in cell.scores:
            names.setdefault(score.name, None)
    return list(names)


def _metric_summary(
    cells: Sequence[CellResult],
    condition_id: str,
    metric: str,
    difficulty: str | None,
    errors_as: str,
    seed: int,
) -> MetricSummary:
    values: list[float] = []
    errors = cell_errors = 0
    for cell in cells:
        score = next((s for s in cell.scores if s.name == metric), None)
        if score is not None:
            if score.value is None:
                errors += 1
            else:
                values.append(score.value)
        elif cell.errored:
            cell_errors += 1
            if errors_as == "zero":
                values.append(0.0)
    return MetricSummary(
        condition_id=condition_id,
        metric=metric,
        difficulty=difficulty,
        mean=stats.mean(values) if values else None,
        interval=stats.mean_interval(values, seed=seed) if values else None,
        n=len(values),
        errors=errors,
        cell_errors=cell_errors,
        errors_as=errors_as,
    )


def _judge_usage(cell: CellResult) -> tuple[int, int, float | None]:
    tokens_in = tokens_out = 0
    cost: float | None = None
    for score in cell.scores:
        usage = score.details.get("usage")
        if isinstance(usage, Mapping):
            tokens_in += int(usage.get("prompt_tokens", 0))
            tokens_out += int(usage.get("completion_tokens", 0))
            if usage.get("cost_usd") is not None:
                cost = (cost or 0.0) + float(usage["cost_usd"])
    return tokens_in, tokens_out, cost


def _add(total: float | None, value: float | None) -> float | None:
    return total if value is None else (total or 0.0) + value


def summary(result: RunResult, *, metrics: Sequence[str] | None = None) -> Summary:
    """Per-metric means (with intervals) of every condition, overall and per difficulty.

    ``metrics`` fixes the metrics and their order (default: every score name in the
    cells, in order of first appearance). A pure function of the result's cells: a
    saved result summarises exactly like a live one.
    """
    options = result.info.options
    names = _metric_order(result.cells, metrics)
    conditions = [c.id for c in result.info.conditions] or list(
        dict.fromkeys(c.condition_id for c in result.cells)
    )
    overall: list[MetricSummary] = []
    by_difficulty: list[MetricSummary] = []
    for cid in conditions:
        cells = [c for c in result.cells if c.condition_id == cid]
        levels = sorted(
            {c.difficulty for c in cells if c.difficulty is not None},
            key=lambda d: (DIFFICULTIES.index(d) if d in DIFFICULTIES else len(DIFFICULTIES), d),
        )
        for name in names:
            overall.append(_metric_summary(cells, cid, name, None, options.errors_as, options.seed))
            for level in levels:
                subset = [c for c in cells if c.difficulty == level]
                by_difficulty.append(
                    _metric_summary(subset, cid, name, level, options.errors_as, options.seed)
                )
    tokens_in = tokens_out = judge_in = judge_out = 0
    cost: float | None = None
    judge_cost: float | None = None
    for cell in result.cells:
        usage = cell.response.usage if cell.response is not None else None
        if usage is not None:
            tokens_in += usage.prompt_tokens
            tokens_out += usage.completion_tokens
            cost = _add(cost, usage.cost_usd)
        j_in, j_out, j_cost = _judge_usage(cell)
        judge_in += j_in
        judge_out += j_out
        judge_cost = _add(judge_cost, j_cost)
    return Summary(
        metrics=tuple(overall),
        by_difficulty=tuple(by_difficulty),
        cells=len(result.cells),
        errored_cells=sum(1 for c in result.cells if c.errored),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=cost,
        judge_tokens_in=judge_in,
        judge_tokens_out=judge_out,
        judge_cost_usd=judge_cost,
        duration_ms=sum(c.duration_ms for c in result.cells),
    )


# --------------------------------------------------------------------------- export


def _benchmark_of(result: RunResult, benchmark: Benchmark | Suite | None) -> Benchmark:
    if isinstance(benchmark, Suite):
        return benchmark.benchmark
    if benchmark is not None:
        return benchmark
    path = result.info.source_path
    if result.info.source_format != FORMAT_NAME or path is None:
        raise ConfigError(
            f"run {result.run_id!r} is not of a CodeForge dataset "
            f"(format {result.info.source_format!r})",
            fix="pass the dataset (benchmark=...) the run was made from.",
        )
    return load(path).benchmark


def _output_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def export_results(
    result: RunResult, benchmark: Benchmark | Suite | None = None
) -> list[dict[str, Any]]:
    """One record per cell in CodeForge's result shape.

    Keys: ``task_id``, ``task_name``, ``scores`` (metric → value, None for a metric that
    errored or did not run), ``actual_output``, ``expected_output``, ``tool_calls``
    (``[{name, args}]``), ``cost_usd`` (None when unknown), ``tokens_in``, ``tokens_out``,
    ``duration_ms`` (the model call's, in whole milliseconds; the cell's when the call
    failed) — then ``condition_id``, ``epoch``, ``status`` and ``error``, which CodeForge
    ignores. ``benchmark`` is the dataset the run was made from (default: loaded again
    from the result's source path).
    """
    bench = _benchmark_of(result, benchmark)
    tasks = {task.id: task for task in bench.iter_tasks()}
    names = _metric_order(result.cells, None) or [s.label for s in bench.evaluators]
    records: list[dict[str, Any]] = []
    for cell in result.cells:
        task = tasks.get(cell.task_id)
        if task is None:
            raise ConfigError(
                f"task {cell.task_id!r} of run {result.run_id!r} is not in dataset {bench.id!r}",
                fix="pass the dataset the run was made from.",
            )
        response = cell.response
        usage = response.usage if response is not None else None
        values = {s.name: s.value for s in cell.scores}
        latency = response.latency_ms if response is not None else None
        records.append(
            {
                "task_id": task.id,
                "task_name": task.metadata.get("name", task.description or task.id),
                "scores": {name: values.get(name) for name in names},
                "actual_output": _output_text(response.output if response else None),
                "expected_output": _output_text(task.expected),
                "tool_calls": [
                    {"name": c.name, "args": dict(c.arguments)}
                    for c in (response.tool_calls if response else ())
                ],
                "cost_usd": usage.cost_usd if usage is not None else None,
                "tokens_in": usage.prompt_tokens if usage is not None else 0,
                "tokens_out": usage.completion_tokens if usage is not None else 0,
                "duration_ms": round(latency if latency is not None else cell.duration_ms),
                "condition_id": cell.condition_id,
                "epoch": cell.epoch,
                "status": cell.status,
                "error": cell.error,
            }
        )
    return records


def write_results(
    result: RunResult,
    path: str | os.PathLike[str],
    benchmark: Benchmark | Suite | None = None,
) -> Path:
    """Write :func:`export_results` as a JSON array (UTF-8, indented by 2) to ``path``."""
    target = Path(path)
    text = json.dumps(export_results(result, benchmark), indent=2, ensure_ascii=False)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text + "\n", encoding="utf-8")
    return target
