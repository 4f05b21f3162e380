"""benchkit's own benchmark format: one YAML or JSON file (version ``benchkit: 1``).

The file maps one-to-one onto the core model — a :class:`~benchkit.model.Benchmark`, its
:class:`~benchkit.model.Condition` list and :class:`~benchkit.model.RunOptions` — so that
anything built in code can be written out with :func:`write` and read back with
:func:`load`. The full reference is ``docs/formats/native.md``; the JSON Schema ships as
``benchkit/schemas/native.schema.json``.

    >>> import pathlib, tempfile
    >>> from benchkit.model import Benchmark, Task, EvaluatorSpec
    >>> bench = Benchmark(id="arith", tasks=(Task(id="t1", input="1+1", expected="2"),),
    ...                   evaluators=(EvaluatorSpec("exact"),))
    >>> dump(bench)["evaluators"], dump(bench)["tasks"]
    (['exact'], [{'id': 't1', 'input': '1+1', 'expected': '2'}])
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     suite = load(write(bench, pathlib.Path(tmp) / "benchmark.yaml"))
    >>> [t.id for t in suite.benchmark.iter_tasks()]
    ['t1']

Loading validates the whole document against the schema first, then checks what a
schema cannot: unique task and condition ids, evaluator / verifier / provider types known
to the registries, bundle directories and ``tasks_file`` that exist inside the
benchmark's directory. Every failure is a :class:`~benchkit.errors.FormatError` naming
the file, line, column and JSON path, with a fix.
"""

from __future__ import annotations

import functools
import inspect
import io
import json
import math
import os
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn

from benchkit import serde
from benchkit._jsonschema import (
    SchemaValidator,
    did_you_mean,
    inline_refs,
    load_schema,
    make_validator,
    validate,
)
from benchkit.errors import ConfigError, FormatError, RegistryError
from benchkit.formats._source import (
    Document,
    JsonPath,
    decode,
    open_regular,
    parse_document,
    read_document,
    render_path,
)
from benchkit.model import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    LazyTasks,
    ProviderSpec,
    RunOptions,
    ScoringSpec,
    SetupStep,
    Source,
    Suite,
    Task,
    VerifierSpec,
)
from benchkit.registry import is_reference, reference_file

if TYPE_CHECKING:
    from benchkit.registry import Registries, Registry

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "NativeFormat",
    "detect",
    "dump",
    "load",
    "schema",
    "write",
]

FORMAT_VERSION = 1
"""The ``benchkit:`` version this module reads and writes."""

_FIX_HINT = "see docs/formats/native.md"
_JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})
_LIST_SUFFIXES = frozenset({".json", ".yaml", ".yml"})
_BENCHMARK_KEYS = (
    "id",
    "name",
    "version",
    "domain",
    "description",
    "scoring",
    "timeout",
    "evaluators",
    "verifiers",
    "metadata",
)


class NativeFormat:
    """The ``native`` entry of the formats registry (see :mod:`benchkit.formats`)."""

    name = "native"

    def __repr__(self) -> str:
        return "<format native>"

    def detect(self, path: Path, head: Any | None) -> bool:
        return detect(path, head)

    def load(
        self,
        path: Path,
        *,
        registries: Registries | None = None,
        root: str | os.PathLike[str] | None = None,
        document: Document | None = None,
        **options: Any,
    ) -> Suite:
        if options:
            raise ConfigError(
                f"the native format takes no options {sorted(options)}",
                fix="load it without keyword options.",
            )
        return load(path, registries=registries, root=root, document=document)


FORMAT = NativeFormat()


def detect(path: Path, head: Any | None) -> bool:
    """True for a mapping with a top-level ``benchkit`` key (the format version)."""
    return isinstance(head, dict) and "benchkit" in head


def schema() -> dict[str, Any]:
    """The native format's JSON Schema (Draft 2020-12), as shipped in the package."""
    return load_schema("native")


# --------------------------------------------------------------------------- loading


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
        tasks: tuple[Task, ...] | LazyTasks = loader.task_list(doc, data["tasks"], ("tasks",))
    else:
        tasks = loader.tasks_file(doc, data["tasks_file"])
    head = {k: data[k] for k in _BENCHMARK_KEYS if k in data}
    benchmark = _structure(doc, head, Benchmark, ())
    benchmark = attrs.evolve(benchmark, tasks=tasks, source=Source(path=str(file), format="native"))
    run = _structure(doc, data.get("run", {}), RunOptions, ("run",))
    return Suite(benchmark, conditions, run, base_dir=base_dir)


@attrs.frozen
class _Validators:
    document: SchemaValidator  # a whole benchmark file
    task: SchemaValidator  # one task (a line of a JSONL tasks_file)
    task_list: SchemaValidator  # a .json / .yaml tasks_file


@functools.cache
def _validators() -> _Validators:
    """Compiled once per process: checking and compiling the schema is the slow part."""
    full = schema()
    task = {"$schema": full["$schema"], **inline_refs(full["$defs"]["task"], root=full)}
    return _Validators(
        document=make_validator(full),
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
        return _converter().structure(value, cls)
    except cattrs.BaseValidationError as exc:
        detail = "; ".join(cattrs.transform_error(exc))
        raise doc.error(f"invalid {cls.__name__}: {detail}", path, fix=_FIX_HINT) from exc
    except (ValueError, TypeError) as exc:
        raise doc.error(f"invalid {cls.__name__}: {exc}", path, fix=_FIX_HINT) from exc


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
    def task_list(self, doc: Document, items: Sequence[Any], path: JsonPath) -> tuple[Task, ...]:
        seen: dict[str, int] = {}
        out = []
        for i, item in enumerate(items):
            where = (*path, i)
            _unique(doc, seen, item["id"], i, where, "task")
            out.append(self.task(doc, item, where))
        return tuple(out)

    def task(self, doc: Document, item: Mapping[str, Any], path: JsonPath) -> Task:
        for kind in ("evaluator", "verifier"):
            self.check_specs(doc, item.get(f"{kind}s", ()), (*path, f"{kind}s"), kind)
        task: Task = _structure(doc, item, Task, path)
        return task

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
        if suffix in _JSONL_SUFFIXES:
            return LazyTasks(functools.partial(self.stream, file), count=_count_lines(file))
        if suffix in _LIST_SUFFIXES:
            tasks_doc = read_document(file)
            validate(tasks_doc, self.validators.task_list, fix_hint=_FIX_HINT)
            return self.task_list(tasks_doc, tasks_doc.data, ())
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
                validate(line_doc, self.validators.task, fix_hint=_FIX_HINT)
                _unique(line_doc, seen, line_doc.data["id"], lineno, (), "task", unit="line")
                yield self.task(line_doc, line_doc.data, ())


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


# --------------------------------------------------------------------------- cattrs


@functools.cache
def _converter() -> cattrs.Converter:
    """serde's converter plus the native file's shorthand for specs and conditions."""
    conv = serde.converter.copy()

    def spec_structure(cls: type[Any]) -> Callable[[Any, Any], Any]:
        def structure(value: Any, _: Any) -> Any:
            if isinstance(value, str):
                return cls(value)
            options = {k: v for k, v in value.items() if k not in ("type", "name")}
            return cls(type=value["type"], options=options, name=value.get("name"))

        return structure

    def spec_unstructure(spec: EvaluatorSpec | VerifierSpec) -> Any:
        if not spec.options and spec.name is None:
            return spec.type
        _no_clash(spec.options, ("type", "name"), spec.type)
        out: dict[str, Any] = {"type": spec.type}
        if spec.name is not None:
            out["name"] = spec.name
        out.update(_json_ready(spec.options))
        return out

    def provider_structure(value: Any, _: Any) -> ProviderSpec:
        if isinstance(value, str):
            return ProviderSpec(value)
        return ProviderSpec(value["type"], {k: v for k, v in value.items() if k != "type"})

    def provider_unstructure(spec: ProviderSpec) -> Any:
        _no_clash(spec.options, ("type",), spec.type)
        return {"type": spec.type, **_json_ready(spec.options)}

    def condition_structure(value: Any, _: Any) -> Condition:
        # Hand-written: Condition.provider's annotation names a TYPE_CHECKING-only Protocol.
        bundle = value.get("bundle")
        return Condition(
            id=value["id"],
            provider=provider_structure(value["provider"], ProviderSpec),
            label=value.get("label"),
            bundle=Path(bundle) if bundle is not None else None,
            options=dict(value.get("options") or {}),
            concurrency=value.get("concurrency"),
        )

    for cls in (EvaluatorSpec, VerifierSpec):
        conv.register_structure_hook(cls, spec_structure(cls))
        conv.register_unstructure_hook(cls, spec_unstructure)
    conv.register_structure_hook(ProviderSpec, provider_structure)
    conv.register_unstructure_hook(ProviderSpec, provider_unstructure)
    # A predicate hook: registering by class would make cattrs resolve the annotations.
    conv.register_structure_hook_func(lambda t: t is Condition, condition_structure)
    for compact in (SetupStep, ScoringSpec, RunOptions, Task):  # Task last: it uses SetupStep's
        conv.register_unstructure_hook(
            compact, make_dict_unstructure_fn(compact, conv, _cattrs_omit_if_default=True)
        )
    return conv


def _no_clash(options: Mapping[str, Any], reserved: Sequence[str], type_: str) -> None:
    clash = sorted(set(options) & set(reserved))
    if clash:
        raise ConfigError(
            f"spec {type_!r} has options named {clash}, which the native file's flat "
            "spec syntax reserves",
            fix="rename the option in the evaluator / verifier / provider.",
        )


def _json_ready(value: Any, path: JsonPath = ()) -> Any:
    """Builtins a YAML or JSON writer accepts: dicts, lists, str, finite numbers, None."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(
                f"{render_path(path)} is {value}, which a native file cannot hold",
                fix="use a finite number or null.",
            )
        return value
    if isinstance(value, Mapping):
        for k in value:
            if not isinstance(k, str):
                raise ConfigError(
                    f"{render_path(path)} has the key {k!r}; a native file's keys are strings",
                    fix=f"use the string {str(k)!r} as the key.",
                )
        return {str(k): _json_ready(v, (*path, k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v, (*path, i)) for i, v in enumerate(value)]
    raise ConfigError(
        f"{render_path(path)} holds a {type(value).__name__}, which a native file cannot hold",
        fix="use JSON values: mappings, lists, strings, numbers, booleans, null.",
    )


# --------------------------------------------------------------------------- writing


def dump(
    obj: Benchmark | Suite,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    tasks_file: str | None = None,
) -> dict[str, Any]:
    """The native document for ``obj`` as plain data (what :func:`write` serialises).

    Fields that hold their default are left out. Tasks are written inline when they are
    a tuple; with ``tasks_file`` the document refers to that file instead (and lazy tasks
    without it are left out — :func:`write` streams them to a file for you). Bundle paths
    under ``base_dir`` are written relative to it. Raises :class:`ConfigError` for what a
    file cannot hold: a ready provider object, NaN, non-JSON values.
    """
    conv = _converter()
    suite = obj if isinstance(obj, Suite) else None
    bench = obj.benchmark if isinstance(obj, Suite) else obj
    out: dict[str, Any] = {"benchkit": FORMAT_VERSION, "id": bench.id}
    for field in ("name", "domain", "description", "timeout"):
        value = getattr(bench, field)
        if value is not None:
            out[field] = value
    if bench.version != "0":
        out["version"] = bench.version
    if bench.scoring != ScoringSpec():
        out["scoring"] = conv.unstructure(bench.scoring)
    for field in ("evaluators", "verifiers"):
        specs = getattr(bench, field)
        if specs:
            out[field] = [conv.unstructure(s) for s in specs]
    if bench.metadata:
        out["metadata"] = bench.metadata
    if suite is not None:
        if suite.conditions:
            base = Path(base_dir).resolve() if base_dir is not None else None
            out["conditions"] = [_dump_condition(c, base) for c in suite.conditions]
        if suite.options != RunOptions():
            out["run"] = conv.unstructure(suite.options)
    if tasks_file is not None:
        out["tasks_file"] = tasks_file
    elif isinstance(bench.tasks, tuple):
        out["tasks"] = [conv.unstructure(t) for t in bench.tasks]
    ordered = {k: out[k] for k in _ORDER if k in out}
    result: dict[str, Any] = _json_ready(ordered)
    return result


_ORDER = ("benchkit", *_BENCHMARK_KEYS, "conditions", "run", "tasks", "tasks_file")


def _dump_condition(cond: Condition, base: Path | None) -> dict[str, Any]:
    if not isinstance(cond.provider, ProviderSpec):
        raise ConfigError(
            f"condition {cond.id!r} holds a provider object, which a file cannot describe",
            fix="give the condition a ProviderSpec(type, options) instead.",
        )
    out: dict[str, Any] = {"id": cond.id}
    if cond.label is not None:
        out["label"] = cond.label
    out["provider"] = _converter().unstructure(cond.provider)
    if cond.bundle is not None:
        out["bundle"] = _relative(cond.bundle, base)
    if cond.concurrency is not None:
        out["concurrency"] = cond.concurrency
    if cond.options:
        out["options"] = cond.options
    return out


def _relative(path: Path, base: Path | None) -> str:
    if base is not None and path.is_absolute():
        normal = Path(os.path.normpath(path))
        if normal.is_relative_to(base):
            return normal.relative_to(base).as_posix() or "."
    return path.as_posix()


def write(
    obj: Benchmark | Suite, path: str | os.PathLike[str], *, tasks_file: str | None = None
) -> Path:
    """Write ``obj`` as a native file: JSON for ``.json``, YAML otherwise. Returns the path.

    Tasks go inline unless ``tasks_file`` (a ``.jsonl`` name relative to ``path``) is
    given or the tasks are lazy — lazy tasks stream to ``<stem>.tasks.jsonl`` beside the
    file unless ``tasks_file`` says where. Each file is written to a temporary name and
    renamed into place, so a file is never left half-written — and rewriting a benchmark
    whose lazy tasks stream from the very file being replaced is safe.
    """
    target = Path(path)
    bench = obj.benchmark if isinstance(obj, Suite) else obj
    if tasks_file is None and not isinstance(bench.tasks, tuple):
        tasks_file = f"{target.stem}.tasks.jsonl"
    if tasks_file is not None:
        if Path(tasks_file).suffix.lower() not in _JSONL_SUFFIXES:
            raise ConfigError(
                f"tasks_file {tasks_file!r} must be a .jsonl file", fix="name it *.jsonl."
            )
        conv = _converter()

        def write_tasks(out: IO[str]) -> None:
            for task in bench.iter_tasks():
                line = json.dumps(_json_ready(conv.unstructure(task)), ensure_ascii=False)
                out.write(line + "\n")

        _replace(target.parent / tasks_file, write_tasks)
    data = dump(obj, base_dir=target.parent, tasks_file=tasks_file)
    if target.suffix.lower() == ".json":
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    else:
        text = _yaml_text(data)
    _replace(target, lambda out: out.write(text))
    return target


def _replace(path: Path, fill: Callable[[IO[str]], object]) -> None:
    """Write ``path`` through a new temporary file beside it, then rename it into place."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with temporary.open("x", encoding="utf-8", newline="\n") as out:  # honours umask
            fill(out)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _yaml_text(data: Any) -> str:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt", pure=True)
    yaml.Representer = _yaml_representer()
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    return buffer.getvalue()


_LINE_BREAKS = ("\x85", "\u2028", "\u2029")


@functools.cache
def _yaml_representer() -> Any:
    """ruamel's round-trip representer, but strings holding a Unicode line break (NEL,
    LS, PS) are double-quoted: in other styles ruamel folds them into spaces."""
    from ruamel.yaml.representer import RoundTripRepresenter

    class _Representer(RoundTripRepresenter):
        pass

    def represent_str(representer: Any, value: str) -> Any:
        if any(c in value for c in _LINE_BREAKS):
            return representer.represent_scalar("tag:yaml.org,2002:str", value, style='"')
        return RoundTripRepresenter.represent_str(representer, value)

    # add_representer copies the table onto the subclass; ruamel's own stays untouched.
    _Representer.add_representer(str, represent_str)
    return _Representer
