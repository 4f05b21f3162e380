"""Name registries for providers, evaluators, verifiers and formats.

Generic built-ins are listed as ``"module:attribute"`` strings and imported on first use,
so ``import benchkit`` stays fast. Everything a tool brings (its format, its evaluators, ...)
comes from its :class:`~benchkit.tools.Tool`, published under the entry-point group
``benchkit.tools`` — the built-in tools exactly as third-party ones — and read on the first
lookup of a name the registry does not know yet. Third-party packages also add single
entries with the decorators or through entry points in the groups ``benchkit.providers``,
``benchkit.evaluators``, ``benchkit.verifiers`` and ``benchkit.formats``::

    # pyproject.toml of a plug-in
    [project.entry-points."benchkit.evaluators"]
    bleu = "my_pkg.metrics:BleuEvaluator"

Registering in code::

    >>> from benchkit.registry import evaluator
    >>> @evaluator("always_pass")
    ... class AlwaysPass:
    ...     async def evaluate(self, task, response):
    ...         ...

A factory is called with the spec's options as keyword arguments; it may also accept
``base_dir`` (the benchmark file's directory), which the Runner passes when it can,
``response_cache`` (the LLM reply cache the Runner was given, usually the run store) and
``registries`` (the run's :class:`Registries`).
"""

from __future__ import annotations

import importlib
import inspect
import os
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from benchkit.errors import BenchkitError, ConfigError, RegistryError
from benchkit.tools import (
    ALLOW_ENV,
    BENCHKIT_NAMES,
    CONTRIBUTIONS,
    REPORT_SECTIONS,
    TOOLS_GROUP,
    Claimant,
    Tool,
    ToolRecord,
    ToolStatus,
    ToolWarning,
    allowed_tools,
    find_collisions,
)

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from benchkit.model import ResponseCache

__all__ = [
    "Registries",
    "Registry",
    "ToolRegistry",
    "default_registries",
    "evaluator",
    "format",
    "is_reference",
    "provider",
    "verifier",
]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

#: The distribution whose entry points are benchkit's own (its built-in tools).
_OWN_DISTRIBUTION = "benchkit"


class Registry(Generic[T]):
    """Maps names to factories; loads entry points and lazy built-ins on first lookup.

    A registry of one kind of plug-in (``contributes``: the :class:`~benchkit.tools.Tool`
    field of that kind, such as ``"evaluators"``) also takes, on that first load, what
    every loaded tool in ``tools`` contributes. Entries from benchkit's own distribution
    count as built-in, as the ``builtins`` given here do.

    A name is never shared silently: an entry point of the group whose name is built in,
    a tool's, or another distribution's too is not loaded, with one
    :class:`~benchkit.tools.ToolWarning` (the tools themselves are checked against each
    other when they are discovered, :class:`ToolRegistry`). A part that cannot be imported
    is a :class:`RegistryError` naming it, its tool and distribution, and the fix — raised
    by :meth:`get`, or said once as a warning by :meth:`find`, which callers that can go on
    without it use.

    Safe to use from several threads at once (a server's request threads look plug-ins up
    concurrently, and the first lookups fill the registry): every change of its tables
    holds a lock, and the entry points are listed once, before anyone sees them as loaded.
    Imports happen outside the lock, so a plug-in module that registers more names while
    it is imported cannot deadlock.
    """

    def __init__(
        self,
        kind: str,
        group: str,
        builtins: Mapping[str, str] | None = None,
        *,
        tools: ToolRegistry | None = None,
        contributes: str | None = None,
    ) -> None:
        fields = (*CONTRIBUTIONS, *REPORT_SECTIONS)
        if contributes is not None and contributes not in fields:
            raise ValueError(f"no Tool field {contributes!r}; one of {fields}")
        self.kind = kind
        self.group = group
        self._lazy: dict[str, str] = dict(builtins or {})
        self._builtins = frozenset(self._lazy)
        self._items: dict[str, T] = {}
        #: Who brought each name that is not benchkit's own: ``tool 'x' (distribution y)``.
        self._owners: dict[str, str] = {}
        #: Names whose part could not be imported, with the error (said once).
        self._broken: dict[str, RegistryError] = {}
        self._entry_points_loaded = False
        self._tools = tools
        self._contributes = contributes
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<Registry {self.kind}: {', '.join(self.names())}>"

    def __getstate__(self) -> dict[str, Any]:
        """Its tables, without the lock (which cannot travel: a registry is pickled to Ray
        workers with the run); the unpickled copy gets a lock of its own."""
        with self._lock:
            state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def register(
        self, name: str, *, aliases: tuple[str, ...] = (), replace: bool = False
    ) -> Callable[[T], T]:
        """Decorator: register the decorated factory under ``name`` (and ``aliases``)."""

        def decorate(obj: T) -> T:
            for key in (name, *aliases):
                self.add(key, obj, replace=replace)
            return obj

        return decorate

    def add(
        self, name: str, obj: T | str, *, replace: bool = False, owner: str | None = None
    ) -> None:
        """Register ``obj`` (or a lazy ``"module:attr"`` string) under ``name``.

        A built-in name is only replaced with ``replace=True``, so a plug-in cannot change
        what ``exact`` or ``python`` means by accident (a built-in tool's names included:
        the tools are read first when the name is not known yet). Registering the same
        name again (re-running a notebook cell) replaces the earlier registration.
        ``owner`` says who brought it (``tool 'x' (added in code)``), for later messages.
        """
        if not replace and name not in self._items and name not in self._lazy:
            self._load_entry_points()
        if not replace and name in self._builtins:
            raise RegistryError(
                f"{self.kind} {name!r} is built in; registering another would replace it",
                fix=f"choose another name, or pass replace=True to replace the built-in "
                f"{self.kind} on purpose.",
            )
        with self._lock:
            self._lazy.pop(name, None)
            self._items.pop(name, None)
            self._broken.pop(name, None)
            self._builtins = self._builtins - {name}
            if owner is None:
                self._owners.pop(name, None)
            else:
                self._owners[name] = owner
            if isinstance(obj, str):
                self._lazy[name] = obj
            else:
                self._items[name] = obj

    def owner(self, name: str) -> str | None:
        """Who brought ``name`` (``tool 'x' (distribution y 1.0)``); None for benchkit's own
        names and those registered in code without one."""
        return self._owners.get(name)

    def _load_entry_points(self) -> None:
        """Fill the table, once: the loaded tools' contributions, then the group's entry
        points (neither replaces a name registered before; an entry point whose name is
        taken is left out, with a warning)."""
        if self._entry_points_loaded:
            return
        from importlib.metadata import entry_points  # ~10 ms of imports: only when needed

        found: list[tuple[str, str, bool, str | None]] = []
        taken: dict[str, str] = dict.fromkeys(self._builtins, "benchkit's own")
        if self._tools is not None and self._contributes is not None:
            for record in self._tools.records():
                if record.tool is None or record.status != "ok":
                    continue
                owner = f"tool {record.name!r} ({record.origin})"
                for name, ref in record.tool.contributions(self._contributes).items():
                    found.append((name, ref, record.builtin, None if record.builtin else owner))
                    taken.setdefault(name, owner)
        entries: dict[tuple[str, str, str], bool] = {}
        for ep in entry_points(group=self.group):
            entries.setdefault((ep.name, ep.value, _origin(ep)), _is_own(ep))
        by_name: dict[str, list[str]] = {}
        for name, _, origin in entries:
            by_name.setdefault(name, []).append(origin)
        for (name, value, origin), own in entries.items():
            rivals = [o for o in by_name[name] if o != origin]
            if own:
                found.append((name, value, True, None))
            elif name in taken or rivals:
                why = taken.get(name) or " and ".join(
                    f"also the entry point of {o}" for o in rivals
                )
                _warn(
                    f"{self.kind} {name!r} of the entry-point group {self.group} ({origin}) "
                    f"is not loaded: the name is {why}. Fix: rename the entry point, or "
                    "uninstall one of the distributions."
                )
            else:
                found.append((name, value, False, f"the entry point of {origin}"))
        with self._lock:
            if self._entry_points_loaded:
                return
            for name, value, own, brought_by in found:
                if name not in self._items and name not in self._lazy:
                    self._lazy[name] = value
                    if own:
                        self._builtins = self._builtins | {name}
                    elif brought_by is not None:
                        self._owners[name] = brought_by
            self._entry_points_loaded = True  # only now: the table is complete

    def __contains__(self, name: object) -> bool:
        if name in self._items or name in self._lazy:
            return True
        self._load_entry_points()
        return name in self._lazy

    def is_builtin(self, name: str) -> bool:
        """Whether ``name`` is one of benchkit's own entries (not a plug-in's or yours)."""
        return name in self._builtins

    def names(self) -> list[str]:
        """Every registered name, sorted (built-ins, decorated, entry points and tools')."""
        self._load_entry_points()
        with self._lock:
            return sorted({*self._items, *self._lazy})

    def get(self, name: str, *, base_dir: Path | None = None) -> T:
        """The factory registered under ``name``; RegistryError naming the known ones.

        A :func:`reference` — ``"package.module:attr"`` or ``"path/to/file.py:attr"`` (the
        path relative to ``base_dir``, the benchmark file's directory) — names a plug-in
        that nobody registered: it is imported on the spot, so a custom evaluator works
        from a benchmark file without packaging it.
        """
        found = self._items.get(name)
        if found is not None:
            return found
        if is_reference(name):
            obj: T = _import_reference(self.kind, name, base_dir)
            return obj
        if name not in self._lazy:
            self._load_entry_points()
        with self._lock:
            found = self._items.get(name)  # another thread may have imported it meanwhile
            target = self._lazy.get(name)
        if found is not None:
            return found
        if target is None:
            known = ", ".join(self.names()) or "(none)"
            raise RegistryError(
                f"unknown {self.kind} {name!r}",
                fix=f"use one of: {known}; or register one (see docs/plugins.md).",
            )
        broken = self._broken.get(name)
        if broken is not None:
            raise broken
        module_name, _, attr = target.partition(":")
        try:
            obj = getattr(importlib.import_module(module_name), attr)
        except Exception as exc:  # a plug-in's module may raise anything at import
            error = self._unimportable(name, target, exc)
            with self._lock:
                if self._lazy.get(name) == target:
                    self._broken[name] = error
            raise error from exc
        with self._lock:
            if self._lazy.get(name) == target:  # unless it was re-registered meanwhile
                self._items[name] = obj
                del self._lazy[name]
        return obj

    def _unimportable(self, name: str, target: str, exc: Exception) -> RegistryError:
        owner = self._owners.get(name)
        whose = f" of {owner}" if owner else ""
        fix = (
            "reinstall the distribution that brings it, or leave its tool out with "
            f"{ALLOW_ENV} (docs/plugins.md, 'When a tool cannot load')."
            if owner
            else "check the entry point or that the plug-in package is installed."
        )
        return RegistryError(
            f"{self.kind} {name!r}{whose} points at {target!r}, which cannot be imported: "
            f"{type(exc).__name__}: {exc}",
            fix=fix,
        )

    def find(self, name: str) -> T | None:
        """The factory registered under ``name``, or None when there is none or its part
        cannot be imported — said once, as a :class:`~benchkit.tools.ToolWarning`: for
        callers that go on without it (format detection, a report's tool section)."""
        if name not in self:
            return None
        known = name in self._broken
        try:
            return self.get(name)
        except RegistryError as exc:
            if not known:
                _warn(exc.render())
            return None

    def build(
        self,
        name: str,
        options: Mapping[str, Any],
        *,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
        registries: Registries | None = None,
    ) -> Any:
        """Call the factory for ``name`` with ``options``; bad options give a ConfigError.

        ``base_dir``, ``response_cache`` and ``registries`` (the run's, for a plug-in that
        looks names up itself) go to factories that declare a parameter of that name (and
        only when given). ``base_dir`` also anchors a ``file.py:Name`` reference.
        """
        factory: Callable[..., Any] = self.get(name, base_dir=base_dir)  # type: ignore[assignment]
        kwargs = dict(options)
        for key, value in (
            ("base_dir", base_dir),
            ("response_cache", response_cache),
            ("registries", registries),
        ):
            if value is not None and _accepts(factory, key):
                kwargs[key] = value
        try:
            signature: inspect.Signature | None = inspect.signature(factory)
        except (TypeError, ValueError):  # a builtin without a signature: just call it
            signature = None
        if signature is not None:
            try:
                signature.bind(**kwargs)
            except TypeError as exc:
                raise ConfigError(
                    f"{self.kind} {name!r} rejected its options {sorted(options)}: {exc}",
                    fix=f"see the options {self.kind} {name!r} takes in docs/plugins.md.",
                ) from exc
        try:
            built = factory(**kwargs)
        except BenchkitError:
            raise
        except Exception as exc:  # the plug-in's own failure, not a wrong option name
            raise ConfigError(
                f"{self.kind} {name!r} failed while being built: {type(exc).__name__}: {exc}",
                fix=f"check the values given to {self.kind} {name!r}; if they are right, "
                "the plug-in itself is broken.",
            ) from exc
        _check_plugin(self.kind, name, built)
        return built

    def copy(self, *, tools: Registry[Tool] | None = None) -> Registry[T]:
        """An independent copy (for a run that registers things of its own), taking its
        tools' contributions from ``tools`` (default: the same tools as this one)."""
        given = tools if tools is not None else self._tools
        clone: Registry[T] = Registry(
            self.kind,
            self.group,
            tools=given if isinstance(given, ToolRegistry) else None,
            contributes=self._contributes,
        )
        with self._lock:
            clone._builtins = self._builtins
            clone._lazy = dict(self._lazy)
            clone._items = dict(self._items)
            clone._owners = dict(self._owners)
            clone._broken = dict(self._broken)
            clone._entry_points_loaded = self._entry_points_loaded
        return clone

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def is_reference(name: str) -> bool:
    """True for ``"module:attr"`` or ``"file.py:attr"``: a plug-in named by where it is."""
    head, sep, attr = name.rpartition(":")
    return bool(sep and head and attr.isidentifier())


def reference_file(name: str) -> str | None:
    """The file part of a ``"path/to/file.py:attr"`` reference (None for a module)."""
    head = name.rpartition(":")[0]
    return head if head.endswith(".py") or "/" in head or "\\" in head else None


def _import_reference(kind: str, name: str, base_dir: Path | None) -> Any:
    head, _, attr = name.rpartition(":")
    file = reference_file(name)
    try:
        if file is not None:
            path = Path(file)
            if not path.is_absolute() and base_dir is not None:
                path = base_dir / path
            if not path.is_file():
                raise RegistryError(
                    f"{kind} {name!r}: no file {str(path)!r}",
                    fix="give the file's path relative to the benchmark file.",
                )
            module = _load_file(path)
        else:
            module = importlib.import_module(head)
    except RegistryError:
        raise
    except Exception as exc:
        raise RegistryError(
            f"{kind} {name!r} cannot be imported: {type(exc).__name__}: {exc}",
            fix="check the module is importable (installed, or on PYTHONPATH) and runs.",
        ) from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise RegistryError(
            f"{kind} {name!r}: {head!r} has no attribute {attr!r}",
            fix=f"name a class or function defined at the top level of {head!r}.",
        ) from None


def _load_file(path: Path) -> Any:
    """Import a Python file once per process (by its resolved path), as a private module."""
    import hashlib
    import importlib.util
    import sys

    resolved = path.resolve()
    digest = hashlib.blake2b(str(resolved).encode(), digest_size=6).hexdigest()
    module_name = f"_benchkit_plugin_{resolved.stem}_{digest}"
    found = sys.modules.get(module_name)
    if found is not None:
        return found
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {str(resolved)!r} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # so pickling and dataclasses find it
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


_METHODS = {"provider": "invoke", "evaluator": "evaluate", "verifier": "verify"}


def _is_own(ep: EntryPoint) -> bool:
    """Whether ``ep`` comes from benchkit's own distribution (a built-in tool)."""
    dist = getattr(ep, "dist", None)
    return dist is not None and dist.name == _OWN_DISTRIBUTION


def _check_plugin(kind: str, name: str, built: object) -> None:
    """A provider, evaluator or verifier must have its method: check when it is built,
    before the first cell, instead of failing every cell with an AttributeError."""
    method = _METHODS.get(kind)
    if method is not None and not callable(getattr(built, method, None)):
        raise RegistryError(
            f"{kind} {name!r} built {type(built).__name__!r}, which has no {method}() method",
            fix=f"give the class an `async def {method}(...)` (a plain def runs in a worker "
            "thread); see docs/plugins.md.",
        )


def _accepts(factory: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


_PROVIDERS = {
    "python": "benchkit.providers._callable:CallableProvider",
    "subprocess": "benchkit.providers._subprocess:SubprocessProvider",
    "http": "benchkit.providers._http:HttpProvider",
    "mock": "benchkit.providers._mock:MockProvider",
    "chat": "benchkit.llm._provider:ChatProvider",
    "local": "benchkit.llm._provider:LocalModel",
    "memory": "benchkit.memory._pipeline:MemoryPipeline",
    "mcp": "benchkit.providers._mcp:McpProvider",
    "agent": "benchkit.providers._agent:AgentProvider",
    "traced": "benchkit.traces._provider:TracedProvider",
}
_EVALUATORS = {
    "exact": "benchkit.evaluators._basic:ExactEvaluator",
    "exact_match_normalized": "benchkit.evaluators._text:ExactMatchNormalizedEvaluator",
    "token_f1": "benchkit.evaluators._text:TokenF1Evaluator",
    "edit_similarity": "benchkit.evaluators._overlap:EditSimilarityEvaluator",
    "rouge": "benchkit.evaluators._overlap:RougeEvaluator",
    "bleu": "benchkit.evaluators._overlap:BleuEvaluator",
    "chrf": "benchkit.evaluators._overlap:ChrfEvaluator",
    "semantic_similarity": "benchkit.evaluators._semantic:SemanticSimilarityEvaluator",
    "context_recall": "benchkit.evaluators._rag:ContextRecall",
    "context_precision": "benchkit.evaluators._rag:ContextPrecision",
    "faithfulness": "benchkit.evaluators._rag:Faithfulness",
    "answer_correctness": "benchkit.evaluators._rag:AnswerCorrectness",
    "contains": "benchkit.evaluators._basic:ContainsEvaluator",
    "regex": "benchkit.evaluators._basic:RegexEvaluator",
    "json_schema": "benchkit.evaluators._basic:JsonSchemaEvaluator",
    "numeric": "benchkit.evaluators._basic:NumericEvaluator",
    "multiple_choice": "benchkit.evaluators._choice:MultipleChoiceEvaluator",
    "llm_rubric": "benchkit.evaluators._judge:RubricJudge",
    "llm_pairwise": "benchkit.evaluators._judge:PairwiseJudge",
    "retrieval": "benchkit.metrics._evaluator:RetrievalEvaluator",
    "tool_called": "benchkit.evaluators._trajectory:ToolCalledEvaluator",
    "tool_order": "benchkit.evaluators._trajectory:ToolOrderEvaluator",
    "forbidden_tools": "benchkit.evaluators._trajectory:ForbiddenToolsEvaluator",
    "max_steps": "benchkit.evaluators._trajectory:MaxStepsEvaluator",
    "span_exists": "benchkit.evaluators._spans:SpanExistsEvaluator",
    "span_count": "benchkit.evaluators._spans:SpanCountEvaluator",
    "span_duration": "benchkit.evaluators._spans:SpanDurationEvaluator",
    "span_errors": "benchkit.evaluators._spans:SpanErrorsEvaluator",
    "code_tests": "benchkit.evaluators._code:CodeTestsEvaluator",
}
_ANSWER_GENERATORS = {"template": "benchkit.memory._pipeline:TemplateAnswer"}
_HTTP_BODIES = {
    "benchkit": "benchkit.providers._http:BENCHKIT_BODY",
    "input": "benchkit.providers._http:INPUT_BODY",
}
_MEMORY_PROVIDERS = {
    "LocalBaseline": "benchkit.memory._baseline:LocalBaseline",
    # Hosted memory services (keys from their variables).
    "mem0": "benchkit.memory._services:Mem0Provider",
    "supermemory": "benchkit.memory._services:SupermemoryProvider",
}


#: benchkit's own names of each kind a tool could claim: a tool claiming one is not loaded.
_RESERVED: dict[str, dict[str, str]] = {
    "providers": dict.fromkeys(_PROVIDERS, "benchkit's own"),
    "evaluators": dict.fromkeys(_EVALUATORS, "benchkit's own"),
    "memory_providers": dict.fromkeys(_MEMORY_PROVIDERS, "benchkit's own"),
    "answer_generators": dict.fromkeys(_ANSWER_GENERATORS, "benchkit's own"),
    "http_bodies": dict.fromkeys(_HTTP_BODIES, "benchkit's own"),
    **{kind: dict.fromkeys(names, "benchkit's own") for kind, names in BENCHKIT_NAMES.items()},
}


class ToolRegistry(Registry[Tool]):
    """The tools: every entry point of ``benchkit.tools``, discovered on the first lookup.

    Discovery imports each entry point's module (the one holding the :class:`Tool`, never
    its parts) and keeps a :class:`~benchkit.tools.ToolRecord` for each: a tool that cannot
    be imported, raises while it is, is not a ``Tool``, or claims a name that benchkit or
    another tool has (:func:`~benchkit.tools.find_collisions`) is not loaded, with one
    :class:`~benchkit.tools.ToolWarning`; third-party tools that ``BENCHKIT_TOOLS`` leaves
    out are not even imported. :meth:`names` and :meth:`get` see the loaded ones only.

    .. versionadded:: 0.2.0
    """

    def __init__(self, reserved: Mapping[str, Mapping[str, str]] | None = None) -> None:
        super().__init__("tool", TOOLS_GROUP)
        self._reserved: Mapping[str, Mapping[str, str]] = dict(reserved or {})
        self._records: list[ToolRecord] = []

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        records = _discover(self._reserved, allowed_tools(os.environ.get(ALLOW_ENV)))
        with self._lock:
            if self._entry_points_loaded:
                return
            for record in records:
                if record.status == "ok" and record.tool is not None:
                    self._items.setdefault(record.name, record.tool)
                    if record.builtin:
                        self._builtins = self._builtins | {record.name}
            self._records = [*records, *self._records]
            self._entry_points_loaded = True

    def add(
        self, name: str, obj: Tool | str, *, replace: bool = False, owner: str | None = None
    ) -> None:
        """Install a tool in code (:meth:`Registries.add_tool` checks its names first)."""
        if not isinstance(obj, Tool):
            raise RegistryError(
                f"tool {name!r} is {type(obj).__name__!r}, not a benchkit.tools.Tool",
                fix="build the tool with benchkit.tools.Tool(name=..., title=..., ...).",
            )
        super().add(name, obj, replace=replace, owner=owner)
        with self._lock:
            self._records = [r for r in self._records if r.name != name or r.status != "ok"]
            self._records.append(ToolRecord(name=name, tool=obj))

    def records(self) -> list[ToolRecord]:
        """What became of every tool found or added: loaded, broken, refused or left out
        (``benchkit tools``), by name."""
        self._load_entry_points()
        with self._lock:
            return sorted(self._records, key=lambda r: (r.name, r.distribution or ""))

    def record(self, name: str) -> ToolRecord | None:
        """The record of the loaded tool ``name`` (None when no tool of that name loaded)."""
        return next((r for r in self.records() if r.name == name and r.status == "ok"), None)

    def copy(self, *, tools: Registry[Tool] | None = None) -> ToolRegistry:
        clone = ToolRegistry(self._reserved)
        with self._lock:
            clone._builtins = self._builtins
            clone._items = dict(self._items)
            clone._owners = dict(self._owners)
            clone._records = list(self._records)
            clone._entry_points_loaded = self._entry_points_loaded
        return clone


def _distribution(ep: EntryPoint) -> tuple[str | None, str | None]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None, None
    return dist.name, dist.version


def _origin(ep: EntryPoint) -> str:
    name, version = _distribution(ep)
    if name is None:
        return "an unknown distribution"
    return f"distribution {name} {version}" if version else f"distribution {name}"


def _discover(
    reserved: Mapping[str, Mapping[str, str]], allow: frozenset[str] | None
) -> list[ToolRecord]:
    """A record of every entry point of ``benchkit.tools``: imported (unless left out by
    ``allow``), checked, and checked against each other."""
    from importlib.metadata import entry_points

    seen: dict[tuple[str, str, str], EntryPoint] = {}
    for ep in entry_points(group=TOOLS_GROUP):
        seen.setdefault((ep.name, ep.value, _origin(ep)), ep)
    records: list[ToolRecord] = []
    claimants: list[tuple[Claimant, ToolRecord]] = []
    for i, ((name, value, _), ep) in enumerate(
        sorted(seen.items(), key=lambda item: (not _is_own(item[1]), item[0]))
    ):
        dist, version = _distribution(ep)
        record = ToolRecord(name=name, distribution=dist, version=version, builtin=_is_own(ep))
        if not record.builtin and allow is not None and name not in allow:
            records.append(attrs.evolve(record, status="off", problem=f"not in ${ALLOW_ENV}"))
            continue
        problem: str | None = None
        try:
            obj = ep.load()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # ImportError, anything the module raises, sys.exit()
            problem = f"its entry point {value!r} cannot be imported: {type(exc).__name__}: {exc}"
        else:
            if not isinstance(obj, Tool):
                problem = (
                    f"its entry point {value!r} is {type(obj).__name__!r}, not a "
                    "benchkit.tools.Tool"
                )
            elif obj.name != name:
                problem = f"its entry point {name!r} publishes the tool {obj.name!r}"
        if problem is not None:
            records.append(_refuse(record, "broken", problem))
            continue
        claimants.append((Claimant(f"{i}", obj, record.builtin, record.origin), record))
    refused = find_collisions([c for c, _ in claimants], reserved)
    for claimant, record in claimants:
        why = refused.get(claimant.key)
        if why is None:
            records.append(attrs.evolve(record, tool=claimant.tool))
        else:
            records.append(_refuse(attrs.evolve(record, tool=claimant.tool), "refused", why))
    return records


def _refuse(record: ToolRecord, status: ToolStatus, problem: str) -> ToolRecord:
    """``record`` marked not loaded, said once as a warning naming the fix."""
    who = record.distribution or "its distribution"
    if status == "refused":
        fix = (
            f"rename what collides in the tool's Tool, uninstall {who}, or choose the tools "
            f"to load with {ALLOW_ENV}"
        )
    else:
        fix = f"reinstall {who} (pip install --force-reinstall {who}), uninstall it, or "
        fix += f"leave it out with {ALLOW_ENV}"
    text = f"{problem}. Fix: {fix}."
    _warn(f"tool {record.name!r} ({record.origin}) is not loaded: {text}")
    return attrs.evolve(record, status=status, problem=text)


def _warn(message: str) -> None:
    warnings.warn(ToolWarning(message.translate(_ONE_LINE)), stacklevel=3)


_ONE_LINE = str.maketrans({"\n": " ", "\r": " "})


@attrs.define
class Registries:
    """The registries a run looks names up in. Runs may use their own copies.

    ``tools`` holds the :class:`~benchkit.tools.Tool` objects (entry-point group
    ``benchkit.tools``); every other registry also takes what those tools contribute of its
    kind. ``memory_providers`` maps names to factories of memory stores (no arguments, a
    fresh store each call) for the ``memory`` provider's ``provider: NAME``; entry-point
    group ``benchkit.memory_providers``. ``answer_generators`` and ``http_bodies`` are the
    ``memory`` provider's ways to answer (``answer: NAME``) and the ``http`` provider's
    request shapes (``body: NAME``). ``report_html`` and ``report_markdown`` hold the
    tools' sections of a run's reports, by source format (entry-point groups
    ``benchkit.report_sections`` and ``benchkit.markdown_sections``).
    """

    providers: Registry[Callable[..., Any]]
    evaluators: Registry[Callable[..., Any]]
    verifiers: Registry[Callable[..., Any]]
    formats: Registry[Callable[..., Any]]
    memory_providers: Registry[Callable[..., Any]]
    tools: ToolRegistry
    answer_generators: Registry[Callable[..., Any]]
    http_bodies: Registry[Any]
    report_html: Registry[Callable[..., str]]
    report_markdown: Registry[Callable[..., str]]

    @classmethod
    def create(cls) -> Registries:
        """Fresh registries holding the built-ins, with the installed tools read on first
        lookup (what :func:`default_registries` started as)."""
        tools = ToolRegistry(_RESERVED)

        def kind(name: str, group: str, field: str, builtins: Mapping[str, str]) -> Any:
            return Registry(name, group, builtins, tools=tools, contributes=field)

        return cls(
            providers=kind("provider", "benchkit.providers", "providers", _PROVIDERS),
            evaluators=kind("evaluator", "benchkit.evaluators", "evaluators", _EVALUATORS),
            verifiers=kind("verifier", "benchkit.verifiers", "verifiers", {}),
            formats=kind("format", "benchkit.formats", "formats", {}),
            memory_providers=kind(
                "memory provider",
                "benchkit.memory_providers",
                "memory_providers",
                _MEMORY_PROVIDERS,
            ),
            tools=tools,
            answer_generators=kind(
                "answer generator",
                "benchkit.answer_generators",
                "answer_generators",
                _ANSWER_GENERATORS,
            ),
            http_bodies=kind("HTTP body mode", "benchkit.http_bodies", "http_bodies", _HTTP_BODIES),
            report_html=kind("report section", "benchkit.report_sections", "report_html", {}),
            report_markdown=kind(
                "Markdown report section", "benchkit.markdown_sections", "report_markdown", {}
            ),
        )

    def kinds(self) -> dict[str, Registry[Callable[..., Any]]]:
        """The plug-in registries by the Tool field that feeds each."""
        return {
            "formats": self.formats,
            "providers": self.providers,
            "evaluators": self.evaluators,
            "verifiers": self.verifiers,
            "memory_providers": self.memory_providers,
            "answer_generators": self.answer_generators,
            "http_bodies": self.http_bodies,
            "report_html": self.report_html,
            "report_markdown": self.report_markdown,
        }

    def add_tool(self, tool: Tool, *, replace: bool = False) -> None:
        """Install ``tool`` in these registries (a tool not published as an entry point:
        a notebook's, a test's): the tool itself and every part it contributes.

        A name the tool claims that benchkit or another loaded tool has already is a
        RegistryError naming both (``replace=True`` takes it on purpose); adding a tool of
        the same name again (re-running a notebook cell) replaces the earlier one.
        """
        if not isinstance(tool, Tool):
            raise RegistryError(
                f"add_tool() takes a benchkit.tools.Tool, not {type(tool).__name__!r}",
                fix="build the tool with benchkit.tools.Tool(name=..., title=..., ...).",
            )
        if not replace:
            self._check_claims(tool)
        owner = f"tool {tool.name!r} (added in code)"
        for field, registry in self.kinds().items():
            for name, ref in tool.contributions(field).items():
                registry.add(name, ref, replace=replace, owner=owner)
        self.tools.add(tool.name, tool, replace=replace, owner=owner)

    def _check_claims(self, tool: Tool) -> None:
        loaded = [
            Claimant(r.name, r.tool, r.builtin, r.origin)
            for r in self.tools.records()
            if r.status == "ok" and r.tool is not None and (r.name != tool.name or r.builtin)
        ]
        mine = Claimant("(added in code)", tool, False, "added in code")
        why = find_collisions([*loaded, mine], self.tools._reserved).get(mine.key)
        if why is not None:
            raise RegistryError(
                f"tool {tool.name!r} cannot be added: {why}",
                fix="rename what collides, or pass replace=True to take the names on purpose.",
            )

    def all_tools(self) -> list[Tool]:
        """Every loaded tool, by name."""
        return [self.tools.get(name) for name in self.tools.names()]

    def copy(self) -> Registries:
        """Independent copies of every registry: what one adds, the other never sees."""
        tools = self.tools.copy()
        return Registries(
            providers=self.providers.copy(tools=tools),
            evaluators=self.evaluators.copy(tools=tools),
            verifiers=self.verifiers.copy(tools=tools),
            formats=self.formats.copy(tools=tools),
            memory_providers=self.memory_providers.copy(tools=tools),
            tools=tools,
            answer_generators=self.answer_generators.copy(tools=tools),
            http_bodies=self.http_bodies.copy(tools=tools),
            report_html=self.report_html.copy(tools=tools),
            report_markdown=self.report_markdown.copy(tools=tools),
        )


_DEFAULT = Registries.create()


def default_registries() -> Registries:
    """The process-wide registries that the decorators below add to."""
    return _DEFAULT


def provider(
    name: str, *, aliases: tuple[str, ...] = (), replace: bool = False
) -> Callable[[F], F]:
    """Register a provider factory under ``name`` (``replace=True`` to replace a built-in)."""
    return _DEFAULT.providers.register(name, aliases=aliases, replace=replace)  # type: ignore[return-value]


def evaluator(
    name: str, *, aliases: tuple[str, ...] = (), replace: bool = False
) -> Callable[[F], F]:
    """Register an evaluator factory under ``name`` (``replace=True`` to replace a built-in)."""
    return _DEFAULT.evaluators.register(name, aliases=aliases, replace=replace)  # type: ignore[return-value]


def verifier(
    name: str, *, aliases: tuple[str, ...] = (), replace: bool = False
) -> Callable[[F], F]:
    """Register a verifier factory under ``name`` (``replace=True`` to replace a built-in)."""
    return _DEFAULT.verifiers.register(name, aliases=aliases, replace=replace)  # type: ignore[return-value]


def format(name: str) -> Callable[[F], F]:
    """Register a benchmark format (an object with ``detect`` and ``load``) under ``name``."""
    return _DEFAULT.formats.register(name)  # type: ignore[return-value]
