"""The CodeForge format: detecting a dataset and mapping its YAML onto the core model.

:func:`load` validates a dataset against the shipped JSON Schema (after a pre-check that
names near-miss keys) and maps each task onto a :class:`~benchkit.model.Task`; the suite
has no conditions and no evaluators (:func:`~benchkit.formats.codeforge._suite.codeforge_suite`
adds them).
"""

from __future__ import annotations

import difflib
import functools
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchkit._jsonschema import SchemaValidator, inline_refs, load_schema, make_validator, validate
from benchkit.errors import ConfigError
from benchkit.formats._source import Document, JsonPath, read_document, unique_ids
from benchkit.model import Benchmark, RunOptions, Source, Suite, Task, ToolCall

FORMAT_NAME = "codeforge"

DIFFICULTIES = ("easy", "medium", "hard")
DEFAULT_DIFFICULTY = "medium"

_FIX_HINT = "see docs/formats/codeforge.md"
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
    for i, tool in enumerate(tools or ()):
        _check_tool_file(doc, tool, (*path, "tools", i))
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


def _check_tool_file(doc: Document, tool: dict[str, Any], path: JsonPath) -> None:
    """A ``python: file.py:function`` tool names a file beside the dataset that exists."""
    reference = tool.get("python")
    if not isinstance(reference, str):
        return
    head = reference.rpartition(":")[0]
    if not (head.endswith(".py") or "/" in head):
        return  # a module: imported when the run builds its tools
    base = Path(doc.path).resolve().parent
    target = Path(os.path.normpath(base / head))
    if Path(head).is_absolute() or not target.is_relative_to(base):
        raise doc.error(
            f"tool file {head!r} is outside the dataset's directory",
            (*path, "python"),
            fix="keep tool files beside the dataset.",
        )
    if not target.is_file():
        raise doc.error(
            f"no tool file {head!r} beside the dataset",
            (*path, "python"),
            fix=f"write the tool's file next to the dataset, or fix the path ({_FIX_HINT}).",
        )
