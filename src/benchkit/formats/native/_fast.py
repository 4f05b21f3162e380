"""The fast road through a valid native document: check the tasks and build them in one pass.

jsonschema explains a broken document well but walks a valid one slowly (~50 µs a task:
most of a 100,000-task load). Most documents are valid, so :func:`check_and_build` tries
to vouch for the whole document first:

* the header (everything but the task items) goes through jsonschema with ``tasks``
  reduced to "a non-empty list" — a fixed cost, whatever the number of tasks;
* each task is checked and built by a function compiled once per distinct *shape* (the set
  of keys it has) from the fields below, which say what the schema's ``task`` definition
  accepts for each simple field and how cattrs would build it;
* a task with a field built by nested specs (evaluators, verifiers, tool calls, setup
  steps) is checked by the schema's compiled predicate and built by cattrs.

Anything it cannot vouch for — an unknown or missing key, a value of another type, out of
range — makes it give up (``None``): the caller then validates the whole document with the
full schema, which raises exactly the error it always raised, and builds with cattrs as
before. The fast road only ever accepts what the schema accepts (a property test checks
the two roads agree, verdicts and messages).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from benchkit._jsonschema import SchemaValidator
from benchkit.model import Task

__all__ = ["OTHER_SHAPE", "TASK_FIELDS", "build_tasks", "check_and_build"]

Builder = Callable[[Any], "Task | None"]

#: What a builder returns for an item of another shape than its own (then the caller
#: finds, or compiles, the builder for that shape).
OTHER_SHAPE: Any = object()

_NUMBER = "(type({v}) is int or type({v}) is float)"

#: field -> (condition on ``{v}`` that the schema's task definition accepts exactly,
#: expression building the model's value as cattrs does). Numbers: ``type(...) is`` keeps
#: bools out, and a NaN fails every bound (as the schema's finite numbers refuse it).
TASK_FIELDS: Mapping[str, tuple[str, str]] = {
    "id": ("type({v}) is str and {v} != ''", "{v}"),
    "input": ("True", "{v}"),
    "expected": ("True", "{v}"),
    "timeout": (_NUMBER + " and 0 < {v} <= 86400", "float({v})"),
    "weight": (_NUMBER + " and 0 <= {v} <= 1000000", "float({v})"),
    "tags": ("type({v}) is list and _STRS.issuperset(map(type, {v}))", "tuple({v})"),
    "domain": ("type({v}) is str", "{v}"),
    "difficulty": ("type({v}) is str", "{v}"),
    "description": ("type({v}) is str", "{v}"),
    "context": ("type({v}) is list and _STRS.issuperset(map(type, {v}))", "tuple({v})"),
    "relevant_ids": ("type({v}) is list and _STRS.issuperset(map(type, {v}))", "tuple({v})"),
    "metadata": ("type({v}) is dict", "dict({v})"),
}

#: Fields whose expression above already gives what the field's converter stores (a
#: tuple of strings passes through ``tuple``): the builder skips that call.
_CONVERTED = frozenset({"tags", "context", "relevant_ids"})

#: Task fields whose values are lists of specs: such a task takes the schema's compiled
#: predicate and cattrs (see :func:`_nested_builder`).
_NESTED = frozenset({"evaluators", "verifiers", "expected_tool_calls", "setup"})
_KNOWN = frozenset(TASK_FIELDS) | _NESTED


@functools.lru_cache(maxsize=256)  # shapes recur from file to file; a few hundred at most
def _compile(shape: frozenset[str]) -> Builder:
    """The builder for tasks with exactly the keys ``shape`` (all simple fields); given
    another item (not a mapping, other keys), it returns :data:`OTHER_SHAPE`.

    It checks every value, then fills the new task's slots directly: what attrs'
    ``__init__`` would store (each given value through the field's converter, each
    default converted once here), without its per-field calls — the largest cost left in a
    big load. :func:`_direct` says when that is the same as calling ``Task(...)``.
    """
    names = {key: f"v{i}" for i, key in enumerate(sorted(shape))}
    fetch = "".join(f"        {v} = item[{key!r}]\n" for key, v in names.items())
    checks = [TASK_FIELDS[key][0].format(v=v) for key, v in names.items()]
    kept = [f"({c})" for c in checks if c != "True"]
    scope: dict[str, Any] = {
        "Task": Task,
        "_STRS": frozenset({str}),
        "_new": object.__new__,
        "OTHER_SHAPE": OTHER_SHAPE,
    }
    if _direct(Task):
        lines = ["    task = _new(Task)"]
        for i, field in enumerate(attrs.fields(Task)):
            scope[f"set{i}"] = Task.__dict__[field.name].__set__
            if field.name in names:
                value = TASK_FIELDS[field.name][1].format(v=names[field.name])
                if field.converter is not None and field.name not in _CONVERTED:
                    scope[f"convert{i}"] = field.converter
                    value = f"convert{i}({value})"
            else:
                default = field.default
                convert: Callable[[Any], Any] | None = field.converter  # type: ignore[assignment]
                scope[f"default{i}"] = default if convert is None else convert(default)
                value = f"default{i}"
            lines.append(f"    set{i}(task, {value})")
        make = "\n".join(lines) + "\n    return task\n"
    else:
        args = ", ".join(f"{key}={TASK_FIELDS[key][1].format(v=v)}" for key, v in names.items())
        make = f"    return Task({args})\n"
    source = (
        "def build(item):\n"
        f"    if type(item) is not dict or len(item) != {len(names)}:\n"
        "        return OTHER_SHAPE\n"
        f"    try:\n{fetch}"
        "    except KeyError:\n"
        "        return OTHER_SHAPE\n"
        f"    if not ({' and '.join(kept) or 'True'}):\n"
        f"        return None\n{make}"
    )
    # The source names only keys of TASK_FIELDS (the shape was checked against them).
    exec(compile(source, f"<native task builder {sorted(shape)}>", "exec"), scope)
    builder: Builder = scope["build"]
    return builder


def _direct(cls: type[Any]) -> bool:
    """Whether filling ``cls``'s slots is what its attrs ``__init__`` does: slotted, no
    validators, no ``__attrs_post_init__``, no factory defaults, every field required or
    defaulted (a property test also compares the two on generated tasks)."""
    return (
        "__slots__" in cls.__dict__
        and not hasattr(cls, "__attrs_post_init__")
        and all(
            f.validator is None and f.init and not isinstance(f.default, attrs.Factory)  # type: ignore[arg-type]
            for f in attrs.fields(cls)
        )
    )


def _nested_builder(task_validator: SchemaValidator, structure: Callable[[Any], Task]) -> Builder:
    def build(item: Any) -> Task | None:
        if type(item) is not dict or not _NESTED.intersection(item):
            other: Task | None = OTHER_SHAPE
            return other
        if next(iter(task_validator.iter_errors(item)), None) is not None:
            return None
        try:
            return structure(item)
        except Exception:  # the slow road reports what cattrs refuses, located
            return None

    return build


def check_and_build(
    data: Any,
    header: SchemaValidator,
    task_validator: SchemaValidator,
    structure: Callable[[Any], Task],
) -> tuple[Task, ...] | None:
    """The document's tasks, built, when the whole document is surely valid; else None.

    ``header`` is the document schema with the task items left unchecked,
    ``task_validator`` the schema of one task, ``structure`` cattrs' way to build one
    (used for tasks with nested specs). A document with ``tasks_file`` instead of
    ``tasks`` gives ``()`` when its header is valid.
    """
    if type(data) is not dict or next(iter(header.iter_errors(data)), None) is not None:
        return None
    items = data.get("tasks")
    if items is None:
        return ()
    return build_tasks(items, task_validator, structure)


def build_tasks(
    items: Any, task_validator: SchemaValidator, structure: Callable[[Any], Task]
) -> tuple[Task, ...] | None:
    """The tasks of the list ``items``, built, when every one is surely valid; else None
    (see :func:`check_and_build`; also used for a ``tasks_file`` holding a list)."""
    if type(items) is not list or not items:
        return None
    builders: dict[frozenset[str], Builder | None] = {}
    nested: Builder | None = None
    build: Builder = _no_shape
    out: list[Task] = []
    append = out.append
    for item in items:
        task = build(item)  # most tasks have the shape of the one before
        if task is OTHER_SHAPE:
            if type(item) is not dict:
                return None
            shape = frozenset(item)
            found = builders.get(shape, _MISSING)
            if found is _MISSING:
                if "id" not in shape or not shape <= _KNOWN:
                    found = None
                elif shape & _NESTED:
                    if nested is None:
                        nested = _nested_builder(task_validator, structure)
                    found = nested
                else:
                    found = _compile(shape)
                builders[shape] = found
            if found is None:
                return None
            build = found
            task = build(item)
        if task is None:
            return None
        append(task)
    return tuple(out)


_MISSING: Any = object()


def _no_shape(item: Any) -> Task | None:
    """The builder before the first task: every item has another shape."""
    other: Task | None = OTHER_SHAPE
    return other
