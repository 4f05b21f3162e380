"""The runnable CodeForge suite: a dataset against a chat model, scored by CodeForge's metrics."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from benchkit.errors import ConfigError
from benchkit.formats.codeforge._datasets import (
    DATASETS_DIR_ENV,
    find_dataset,
    resolve_datasets_dir,
)
from benchkit.formats.codeforge._loader import load
from benchkit.model import Benchmark, Condition, EvaluatorSpec, ProviderSpec, RunOptions, Suite

METRICS: Mapping[str, str] = {
    "correctness": "codeforge_correctness",
    "tool_correctness": "codeforge_tool_correctness",
    "faithfulness": "codeforge_faithfulness",
    "answer_relevancy": "codeforge_answer_relevancy",
    "contextual_precision": "codeforge_contextual_precision",
}
"""CodeForge metric names → the evaluator types that compute them."""

TESTS_METRIC = "tests"
"""The metric that acts on an agent task: its ``initial_files``, the model's files or patch,
then its ``test_command`` in the sandbox (docs/code.md). Asked for by name like the
others; the server offers only :data:`METRICS`, so no request runs code on it."""

#: The options of the ``tests`` metric's evaluator (``metric_options["tests"]`` adds to them):
#: a workspace run of the task's test_command, a minute for it by default.
TESTS_OPTIONS: Mapping[str, Any] = {"mode": "workspace", "timeout": 60.0, "name": "tests"}

BASE_URL_ENV = "LITELLM_BASE_URL"
"""Where the model under test is reached when no base URL is given (then OPENAI_BASE_URL)."""
API_KEY_ENV = ("LITELLM_MASTER_KEY", "OPENAI_API_KEY")
"""The variables the model's API key is read from, first set wins."""

#: Needed on some task by each metric that reads it, or the metric cannot run at all.
_NEEDS: Mapping[str, tuple[str, str]] = {
    "faithfulness": ("context", "`context` passages"),
    "contextual_precision": ("context", "`context` passages"),
    "tool_correctness": ("expected_tool_calls", "`expected_tools`"),
}


def _metric_names(metrics: str | Sequence[str]) -> list[str]:
    """The requested metric names, checked: known, not repeated, at least one."""
    items = metrics.split(",") if isinstance(metrics, str) else list(metrics)
    names = [m.strip() for m in items if m.strip()]
    allowed = [*METRICS, TESTS_METRIC]
    known = ", ".join(allowed)
    if not names:
        raise ConfigError("at least one metric is required", fix=f"choose from: {known}.")
    seen: set[str] = set()
    for name in names:
        if name not in allowed:
            close = difflib.get_close_matches(name, allowed, n=1)
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
        if name == TESTS_METRIC:
            if not any(isinstance(task.metadata.get("test_command"), str) for task in tasks):
                raise ConfigError(
                    f"metric 'tests' needs a `test_command` on the tasks, and no task of "
                    f"dataset {benchmark.id!r} has one",
                    fix="add test_command (and initial_files) to the tasks, or drop 'tests'.",
                )
            continue
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
    dataset: str | os.PathLike[str] | Suite,
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
    ``$CODEFORGE_BENCHMARK_DATASETS_DIR``, else ``benchmarks/codeforge``), or the suite a
    dataset file was already loaded into (the CLI parses the file once). ``model`` is
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
    if isinstance(dataset, Suite):
        suite = dataset
    else:
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
        EvaluatorSpec(
            "code_tests" if name == TESTS_METRIC else METRICS[name],
            {**(TESTS_OPTIONS if name == TESTS_METRIC else judge), **extra.get(name, {})},
            name=name,
        )
        for name in names
    )
    keys = API_KEY_ENV if api_key_env is None else api_key_env
    provider: dict[str, Any] = {"model": model, "api_key_env": list(keys)}
    # Tools that run (python: or mcp:) make the model an agent: the loop calls them, and
    # tool_correctness scores every call of every turn (docs/agents.md).
    kind = "agent" if any(_runs_tools(task) for task in benchmark.iter_tasks()) else "chat"
    from benchkit.llm import LOCAL  # the embedded model has its own endpoint

    url = base_url or (None if model == LOCAL else os.environ.get(BASE_URL_ENV))
    if url:
        provider["base_url"] = url
    if not cache:
        provider["cache"] = False
    condition = Condition(model, ProviderSpec(kind, provider), label=model)
    return Suite(
        attrs.evolve(benchmark, evaluators=evaluators), (condition,), run, base_dir=suite.base_dir
    )


def _runs_tools(task: Any) -> bool:
    """Whether a task declares a tool benchkit can run (``python:`` or ``mcp:``)."""
    task_input = task.input
    if not isinstance(task_input, Mapping):
        return False
    tools = task_input.get("tools") or ()
    return any(isinstance(t, Mapping) and ("python" in t or "mcp" in t) for t in tools)
