"""Reading a native file: schema validation, the checks a schema cannot make (unique
ids, registered plug-in names, paths inside the benchmark's directory), then structuring
into the model. Every failure is a located :class:`~benchkit.errors.FormatError`."""

from __future__ import annotations

import functools
import inspect
import operator
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import cattrs

from benchkit._jsonschema import (
    SchemaValidator,
    did_you_mean,
    inline_refs,
    load_schema,
    make_validator,
    validate,
)
from benchkit.errors import FormatError, RegistryError
from benchkit.formats._source import (
    Document,
    JsonPath,
    decode,
    open_regular,
    parse_document,
    read_document,
    render_path,
)
from benchkit.formats.native._convert import (
    BENCHMARK_KEYS,
    FORMAT_VERSION,
    JSONL_SUFFIXES,
    converter,
)
from benchkit.formats.native._fast import build_tasks, check_and_build
from benchkit.model import (
    Benchmark,
    Condition,
    LazyTasks,
    RunOptions,
    Source,
    Suite,
    Task,
)
from benchkit.registry import is_reference, reference_file

if TYPE_CHECKING:
    from benchkit.registry import Registries, Registry

__all__ = ["load", "schema"]

_FIX_HINT = "see docs/formats/native.md"
_LIST_SUFFIXES = frozenset({".json", ".yaml", ".yml"})


def schema() -> dict[str, Any]:
    """The native format's JSON Schema (Draft 2020-12), as shipped in the package."""
    return load_schema("native")


def load(
    path: str | os.PathLike[str],
    *,
    registries: Registries | None = None,
    root: str | os.PathLike[str] | None = None,
    document: Document | None = None,
) -> Suite:
    """Read a native benchmark file (YAML or JSON) into a :class:`~benchkit.model.Suite`.

    ``registries`` are where evaluator, verifier and provider types are looked up
    (default: :func:`benchkit.registry.default_registries`). ``root`` is the directory
    that ``bundle`` and ``tasks_file`` paths must stay inside (default: the file's own
    directory). ``document`` is the already-parsed file, when the caller has it.
    Run options are applied afterwards with ``suite.with_options(...)``.
    """
    if registries is None:
        from benchkit.registry import default_registries

        registries = default_registries()
    given = Path(path)
    file = given.resolve()
    doc = document if document is not None else read_document(given)
    _precheck(doc)
    validators = _validators()
    built = check_and_build(doc.data, validators.header, validators.task, _structure_task)
    if built is None:  # not surely valid: the full schema says what is wrong, if anything
        validate(doc, validators.document, fix_hint=_FIX_HINT)
    base_dir = file.parent
    loader = _Loader(
        registries=registries,
        base_dir=base_dir,
        shown_dir=given.parent,
        root=Path(root).resolve() if root is not None else base_dir,
        validators=validators,
    )
    data: dict[str, Any] = doc.data
    for kind in ("evaluator", "verifier"):
        loader.check_specs(doc, data.get(f"{kind}s", ()), (f"{kind}s",), kind)
    conditions = loader.conditions(doc, data.get("conditions", ()))
    if "tasks" in data:
        tasks: tuple[Task, ...] | LazyTasks = loader.task_list(
            doc, data["tasks"], ("tasks",), built or None
        )
    else:
        tasks = loader.tasks_file(doc, data["tasks_file"])
    head = {k: data[k] for k in BENCHMARK_KEYS if k in data}
    benchmark = _structure(doc, head, Benchmark, ())
    benchmark = attrs.evolve(benchmark, tasks=tasks, source=Source(path=str(file), format="native"))
    run = _structure(doc, data.get("run", {}), RunOptions, ("run",))
    return Suite(benchmark, conditions, run, base_dir=base_dir)


@attrs.frozen
class _Validators:
    document: SchemaValidator  # a whole benchmark file
    header: SchemaValidator  # the same, task items unchecked (see _fast.check_and_build)
    task: SchemaValidator  # one task (a line of a JSONL tasks_file)
    task_list: SchemaValidator  # a .json / .yaml tasks_file


@functools.cache
def _validators() -> _Validators:
    """Compiled once per process: checking and compiling the schema is the slow part."""
    full = schema()
    task = {"$schema": full["$schema"], **inline_refs(full["$defs"]["task"], root=full)}
    header = {
        **full,
        "properties": {**full["properties"], "tasks": {"type": "array", "minItems": 1}},
    }
    return _Validators(
        document=make_validator(full),
        header=make_validator(header),
        task=make_validator(task),
        task_list=make_validator(
            {"$schema": full["$schema"], "type": "array", "minItems": 1, "items": task}
        ),
    )


def _precheck(doc: Document) -> None:
    """What the schema would report badly: a newer version, both task sources."""
    data = doc.data
    if not isinstance(data, dict):
        return
    version = data.get("benchkit")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise doc.error(
            f"this file uses native format version {version}; this benchkit reads "
            f"version {FORMAT_VERSION}",
            ("benchkit",),
            fix=f"upgrade benchkit, or write the file for `benchkit: {FORMAT_VERSION}`.",
        )
    if "tasks" in data and "tasks_file" in data:
        raise doc.error(
            "both `tasks` and `tasks_file` are given",
            ("tasks_file",),
            key=True,
            fix="keep one: the inline `tasks` list, or `tasks_file` naming a file of tasks.",
        )


def _structure(doc: Document, value: Any, cls: type[Any], path: JsonPath) -> Any:
    """cattrs structuring; a failure the schema let through is still a located error."""
    try:
        return converter().structure(value, cls)
    except cattrs.BaseValidationError as exc:
        detail = "; ".join(cattrs.transform_error(exc))
        raise doc.error(f"invalid {cls.__name__}: {detail}", path, fix=_FIX_HINT) from exc
    except (ValueError, TypeError) as exc:
        raise doc.error(f"invalid {cls.__name__}: {exc}", path, fix=_FIX_HINT) from exc


_ID = operator.attrgetter("id")


def _structure_task(item: Any) -> Task:
    task: Task = converter().structure(item, Task)
    return task


@attrs.define
class _Loader:
    """The checks that need more than the schema: ids, registered names, paths."""

    registries: Registries
    base_dir: Path  # the benchmark file's directory, absolute
    shown_dir: Path  # the same as the caller named it, for messages
    root: Path
    validators: _Validators

    # -- specs
    def check_specs(self, doc: Document, items: Sequence[Any], path: JsonPath, kind: str) -> None:
        for i, item in enumerate(items):
            self.check_spec(doc, item, (*path, i), kind)

    def check_spec(self, doc: Document, item: Any, path: JsonPath, kind: str) -> None:
        """A spec's ``type`` must be registered (or a reference that imports) and its
        options must be ones the plug-in takes: the error points at the spec, so that
        ``validate`` rejects what ``run`` would."""
        registry = self._registry(kind)
        name = item if isinstance(item, str) else item["type"]
        where = path if isinstance(item, str) else (*path, "type")
        if is_reference(name):  # `module:attr` or `file.py:attr`: import it now
            file = reference_file(name)
            if file is not None:
                self.inside(doc, file, where, f"{kind} file")
        elif name not in registry:
            raise doc.error(
                f"unknown {kind} type `{name}`", where, fix=_known_fix(kind, name, registry)
            )
        try:
            factory = registry.get(name, base_dir=self.base_dir)
        except RegistryError as exc:
            if not is_reference(name):  # a registered plug-in that is not installed here:
                return  # loading stays possible (e.g. to convert the file); a run says why
            raise doc.error(exc.message, where, fix=exc.fix) from exc
        if isinstance(item, str):
            options: dict[str, Any] = {}
        else:
            reserved = ("type",) if kind == "provider" else ("type", "name")
            options = {k: v for k, v in item.items() if k not in reserved}
        problem = _option_problem(factory, options)
        if problem is not None:
            raise doc.error(
                f"{kind} `{name}` {problem}",
                path,
                fix=f"use the options {kind} `{name}` takes: {_option_names(factory)} "
                "(docs/plugins.md lists every built-in's).",
            )

    def _registry(self, kind: str) -> Registry[Callable[..., Any]]:
        registry: Registry[Callable[..., Any]] = getattr(self.registries, f"{kind}s")
        return registry

    # -- conditions
    def conditions(self, doc: Document, items: Sequence[Any]) -> tuple[Condition, ...]:
        out: list[Condition] = []
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            path: JsonPath = ("conditions", i)
            _unique(doc, seen, item["id"], i, path, "condition")
            self.check_spec(doc, item["provider"], (*path, "provider"), "provider")
            fields = dict(item)
            if "bundle" in item:
                bundle = self.inside(doc, item["bundle"], (*path, "bundle"), "bundle")
                if not bundle.is_dir():
                    raise doc.error(
                        f"bundle directory {item['bundle']!r} does not exist ({bundle})",
                        (*path, "bundle"),
                        fix="create the directory, or fix the path (relative to the "
                        "benchmark file).",
                    )
                fields["bundle"] = str(bundle)
            out.append(_structure(doc, fields, Condition, path))
        return tuple(out)

    def inside(self, doc: Document, value: str, path: JsonPath, what: str) -> Path:
        """``value`` resolved against the file's directory; it must stay inside root, by its
        name and, once symbolic links are followed, by where it really is."""
        resolved = Path(os.path.normpath(self.base_dir / value))
        if not resolved.is_relative_to(self.root):
            raise doc.error(
                f"{what} {value!r} points outside the benchmark's directory ({self.root})",
                path,
                fix=f"move it under {self.root}, or load with root= a directory that contains it.",
            )
        real = resolved.resolve()
        if not real.is_relative_to(self.root):
            raise doc.error(
                f"{what} {value!r} leads outside the benchmark's directory ({self.root}) "
                f"through a symbolic link, to {real}",
                path,
                fix=f"move it under {self.root}, or load with root= a directory that contains it.",
            )
        return resolved

    # -- tasks
    def task_list(
        self,
        doc: Document,
        items: Sequence[Any],
        path: JsonPath,
        built: tuple[Task, ...] | None = None,
    ) -> tuple[Task, ...]:
        """The tasks of ``items``, checked; ``built`` are the same tasks already built by
        the fast road (then only the checks a schema cannot make remain)."""
        seen: dict[str, int] = {}
        if built is not None and len(set(map(_ID, built))) == len(built):
            for i, task in enumerate(built):  # the ids are unique; the specs are registered?
                if task.evaluators or task.verifiers:
                    self.task_specs(doc, items[i], (*path, i))
            return built
        out = []
        for i, item in enumerate(items):
            where = (*path, i)
            _unique(doc, seen, item["id"], i, where, "task")
            out.append(self.task(doc, item, where))
        return tuple(out)

    def task(self, doc: Document, item: Mapping[str, Any], path: JsonPath) -> Task:
        self.task_specs(doc, item, path)
        task: Task = _structure(doc, item, Task, path)
        return task

    def task_specs(self, doc: Document, item: Mapping[str, Any], path: JsonPath) -> None:
        for kind in ("evaluator", "verifier"):
            self.check_specs(doc, item.get(f"{kind}s", ()), (*path, f"{kind}s"), kind)

    def tasks_file(self, doc: Document, value: str) -> tuple[Task, ...] | LazyTasks:
        path: JsonPath = ("tasks_file",)
        target = self.inside(doc, value, path, "tasks_file")
        if not target.is_file():
            if target.exists():  # a directory, a FIFO, a device: never read (it could block)
                raise doc.error(
                    f"tasks_file {value!r} is not a regular file",
                    path,
                    fix="point tasks_file at a .jsonl, .json or .yaml file.",
                )
            raise doc.error(
                f"tasks_file {value!r} does not exist",
                path,
                fix="create it, or fix the path (relative to the benchmark file).",
            )
        file = Path(os.path.normpath(self.shown_dir / value))
        suffix = file.suffix.lower()
        if suffix in JSONL_SUFFIXES:
            return LazyTasks(functools.partial(self.stream, file), count=_count_lines(file))
        if suffix in _LIST_SUFFIXES:
            tasks_doc = read_document(file)
            v = self.validators
            built = build_tasks(tasks_doc.data, v.task, _structure_task)
            if built is None:  # not surely valid: the full schema says what is wrong
                validate(tasks_doc, v.task_list, fix_hint=_FIX_HINT)
            return self.task_list(tasks_doc, tasks_doc.data, (), built)
        raise doc.error(
            f"tasks_file {value!r} has an unsupported type {suffix or '(no suffix)'}",
            path,
            fix="use a .jsonl file (one task per line, streamed), or a .json / .yaml list.",
        )

    def stream(self, file: Path) -> Iterator[Task]:
        """Tasks from a JSONL file, one line at a time; errors name the line."""
        seen: dict[str, int] = {}
        try:
            handle = open_regular(file)
        except OSError as exc:
            raise FormatError(
                f"cannot read the tasks file: {exc.strerror}",
                file=file,
                fix="the file was there when the benchmark loaded; restore it.",
            ) from None
        with handle:
            for lineno, raw in enumerate(handle, 1):
                if not raw.strip():
                    continue
                text = decode(raw.rstrip(b"\r\n"), file, first_line=lineno)
                line_doc = parse_document(text, path=file, kind="json", first_line=lineno)
                built = build_tasks([line_doc.data], self.validators.task, _structure_task)
                if built is None:  # not surely valid: the schema says what is wrong
                    validate(line_doc, self.validators.task, fix_hint=_FIX_HINT)
                _unique(line_doc, seen, line_doc.data["id"], lineno, (), "task", unit="line")
                if built is None:
                    yield self.task(line_doc, line_doc.data, ())
                else:
                    self.task_specs(line_doc, line_doc.data, ())
                    yield built[0]


def _unique(
    doc: Document,
    seen: dict[str, int],
    ident: str,
    index: int,
    path: JsonPath,
    what: str,
    *,
    unit: str = "index",
) -> None:
    """Record ``ident``; a repeat is an error at the second occurrence's ``id``."""
    if ident in seen:
        first = seen[ident]
        if unit == "line":
            where = f"line {first}"
        else:
            pos = doc.locate((*path[:-1], first, "id"))
            where = render_path((*path[:-1], first)) + (f", line {pos[0]}" if pos else "")
        raise doc.error(
            f"duplicate {what} id {ident!r} (first used at {where})",
            (*path, "id"),
            fix=f"give every {what} a unique id.",
        )
    seen[ident] = index


_FROM_CODE = frozenset(
    {"self", "base_dir", "client", "fn", "handler", "response_cache", "registries"}
)


def _option_problem(factory: Callable[..., Any], options: Mapping[str, Any]) -> str | None:
    """What is wrong with calling ``factory(**options)``'s option names, or None."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(**options)
    except TypeError as exc:
        return f"does not take these options: {exc}"
    return None


def _option_names(factory: Callable[..., Any]) -> str:
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return "(unknown)"
    names = [
        p.name
        for p in params
        if p.name not in _FROM_CODE and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return ", ".join(names) or "(none)"


def _known_fix(kind: str, name: str, registry: Registry[Callable[..., Any]]) -> str:
    names = registry.names()
    register = (
        f"name one by where it is, `file.py:Class` or `module:Class`, or register one "
        f"with @benchkit.{kind}({name!r}) (see docs/plugins.md)"
    )
    if not names:
        return (
            f"no {kind} types are registered yet; install a plug-in that provides it, "
            f"or {register}."
        )
    close = did_you_mean(name, names)
    hint = f" (did you mean `{close}`?)" if close else ""
    return f"use one of: {', '.join(names)}{hint}; or {register}."


def _count_lines(file: Path) -> int:
    """Non-blank lines, without parsing them (for progress bars)."""
    with open_regular(file) as handle:
        return sum(1 for raw in handle if raw.strip())
