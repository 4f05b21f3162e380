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
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from benchkit.errors import BenchkitError, ConfigError, RegistryError
from benchkit.tools import CONTRIBUTIONS, REPORT_SECTIONS, TOOLS_GROUP, Tool

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from benchkit.protocols import ResponseCache

__all__ = [
    "Registries",
    "Registry",
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
    every tool in ``tools`` contributes. Entries from benchkit's own distribution count as
    built-in, as the ``builtins`` given here do.

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
        tools: Registry[Tool] | None = None,
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

    def add(self, name: str, obj: T | str, *, replace: bool = False) -> None:
        """Register ``obj`` (or a lazy ``"module:attr"`` string) under ``name``.

        A built-in name is only replaced with ``replace=True``, so a plug-in cannot change
        what ``exact`` or ``python`` means by accident (a built-in tool's names included:
        the tools are read first when the name is not known yet). Registering the same
        name again (re-running a notebook cell) replaces the earlier registration.
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
            self._builtins = self._builtins - {name}
            if isinstance(obj, str):
                self._lazy[name] = obj
            else:
                self._items[name] = obj

    def _load_entry_points(self) -> None:
        """Fill the table, once: the group's entry points, then the tools' contributions
        (neither replaces a name registered before)."""
        if self._entry_points_loaded:
            return
        from importlib.metadata import entry_points  # ~10 ms of imports: only when needed

        found = [(ep.name, ep.value, _is_own(ep)) for ep in entry_points(group=self.group)]
        if self._tools is not None and self._contributes is not None:
            for tool_name in self._tools.names():
                own = self._tools.is_builtin(tool_name)
                tool = self._tools.get(tool_name)
                found.extend(
                    (name, ref, own) for name, ref in tool.contributions(self._contributes).items()
                )
        with self._lock:
            if self._entry_points_loaded:
                return
            for name, value, own in found:
                if name not in self._items and name not in self._lazy:
                    self._lazy[name] = value
                    if own:
                        self._builtins = self._builtins | {name}
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
            _check_entry(self.kind, name, obj)
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
        module_name, _, attr = target.partition(":")
        try:
            obj = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise RegistryError(
                f"{self.kind} {name!r} points at {target!r}, which cannot be imported: {exc}",
                fix="check the entry point or that the plug-in package is installed.",
            ) from exc
        _check_entry(self.kind, name, obj)
        with self._lock:
            if self._lazy.get(name) == target:  # unless it was re-registered meanwhile
                self._items[name] = obj
                del self._lazy[name]
        return obj

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
        clone: Registry[T] = Registry(
            self.kind,
            self.group,
            tools=tools if tools is not None else self._tools,
            contributes=self._contributes,
        )
        with self._lock:
            clone._builtins = self._builtins
            clone._lazy = dict(self._lazy)
            clone._items = dict(self._items)
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


def _check_entry(kind: str, name: str, obj: object) -> None:
    """A name in the tools registry must lead to a :class:`Tool`: said when it is looked
    up, naming the entry point, instead of an AttributeError somewhere later."""
    if kind == "tool" and not isinstance(obj, Tool):
        raise RegistryError(
            f"tool {name!r} is {type(obj).__name__!r}, not a benchkit.tools.Tool",
            fix="point the `benchkit.tools` entry point at a Tool instance (see docs/plugins.md).",
        )


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
}
_EVALUATORS = {
    "exact": "benchkit.evaluators._basic:ExactEvaluator",
    "contains": "benchkit.evaluators._basic:ContainsEvaluator",
    "regex": "benchkit.evaluators._basic:RegexEvaluator",
    "json_schema": "benchkit.evaluators._basic:JsonSchemaEvaluator",
    "numeric": "benchkit.evaluators._basic:NumericEvaluator",
    "multiple_choice": "benchkit.evaluators._choice:MultipleChoiceEvaluator",
    "llm_rubric": "benchkit.evaluators._judge:RubricJudge",
    "llm_pairwise": "benchkit.evaluators._judge:PairwiseJudge",
    "retrieval": "benchkit.metrics._evaluator:RetrievalEvaluator",
}
_MEMORY_PROVIDERS = {
    "LocalBaseline": "benchkit.memory._baseline:LocalBaseline",
    # Hosted memory services (keys from their variables).
    "mem0": "benchkit.memory._services:Mem0Provider",
    "supermemory": "benchkit.memory._services:SupermemoryProvider",
}


def _tools() -> Registry[Tool]:
    return Registry("tool", TOOLS_GROUP)


@attrs.define
class Registries:
    """The registries a run looks names up in. Runs may use their own copies.

    ``tools`` holds the :class:`~benchkit.tools.Tool` objects (entry-point group
    ``benchkit.tools``); every other registry also takes what those tools contribute of its
    kind. ``memory_providers`` maps names to factories of memory stores (no arguments, a
    fresh store each call) for the ``memory`` provider's ``provider: NAME``; entry-point
    group ``benchkit.memory_providers``.
    """

    providers: Registry[Callable[..., Any]]
    evaluators: Registry[Callable[..., Any]]
    verifiers: Registry[Callable[..., Any]]
    formats: Registry[Callable[..., Any]]
    memory_providers: Registry[Callable[..., Any]]
    tools: Registry[Tool]

    @classmethod
    def create(cls) -> Registries:
        """Fresh registries holding the built-ins, with the installed tools read on first
        lookup (what :func:`default_registries` started as)."""
        tools = _tools()

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
        )

    def kinds(self) -> dict[str, Registry[Callable[..., Any]]]:
        """The plug-in registries by the Tool field that feeds each."""
        return {
            "formats": self.formats,
            "providers": self.providers,
            "evaluators": self.evaluators,
            "verifiers": self.verifiers,
            "memory_providers": self.memory_providers,
        }

    def add_tool(self, tool: Tool, *, replace: bool = False) -> None:
        """Install ``tool`` in these registries (a tool not published as an entry point:
        a notebook's, a test's): the tool itself and every part it contributes."""
        if not isinstance(tool, Tool):
            raise RegistryError(
                f"add_tool() takes a benchkit.tools.Tool, not {type(tool).__name__!r}",
                fix="build the tool with benchkit.tools.Tool(name=..., title=..., ...).",
            )
        for field, registry in self.kinds().items():
            for name, ref in tool.contributions(field).items():
                registry.add(name, ref, replace=replace)
        self.tools.add(tool.name, tool, replace=replace)

    def all_tools(self) -> list[Tool]:
        """Every installed tool, by name."""
        return [self.tools.get(name) for name in self.tools.names()]

    def copy(self) -> Registries:
        """Independent copies of every registry: what one adds, the other never sees."""
        tools = self.tools.copy()
        return Registries(
            self.providers.copy(tools=tools),
            self.evaluators.copy(tools=tools),
            self.verifiers.copy(tools=tools),
            self.formats.copy(tools=tools),
            self.memory_providers.copy(tools=tools),
            tools,
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
