"""Name registries for providers, evaluators, verifiers and formats.

Built-ins are listed as ``"module:attribute"`` strings and imported on first use, so
``import benchkit`` stays fast. Third-party packages add entries with the decorators or
through entry points in the groups ``benchkit.providers``, ``benchkit.evaluators``,
``benchkit.verifiers`` and ``benchkit.formats``::

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
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from benchkit.errors import ConfigError, RegistryError

if TYPE_CHECKING:
    from benchkit.protocols import ResponseCache

__all__ = [
    "Registries",
    "Registry",
    "default_registries",
    "evaluator",
    "format",
    "provider",
    "verifier",
]

F = TypeVar("F", bound=Callable[..., Any])


class Registry(Generic[F]):
    """Maps names to factories; loads entry points and lazy built-ins on first lookup."""

    def __init__(self, kind: str, group: str, builtins: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self.group = group
        self._lazy: dict[str, str] = dict(builtins or {})
        self._builtins = frozenset(self._lazy)
        self._items: dict[str, F] = {}
        self._entry_points_loaded = False

    def __repr__(self) -> str:
        return f"<Registry {self.kind}: {', '.join(self.names())}>"

    def register(self, name: str, *, aliases: tuple[str, ...] = ()) -> Callable[[F], F]:
        """Decorator: register the decorated factory under ``name`` (and ``aliases``)."""

        def decorate(obj: F) -> F:
            for key in (name, *aliases):
                self.add(key, obj)
            return obj

        return decorate

    def add(self, name: str, obj: F | str, *, replace: bool = True) -> None:
        """Register ``obj`` (or a lazy ``"module:attr"`` string) under ``name``."""
        if not replace and name in self:
            raise RegistryError(f"{self.kind} {name!r} is already registered")
        self._lazy.pop(name, None)
        self._items.pop(name, None)
        self._builtins = self._builtins - {name}
        if isinstance(obj, str):
            self._lazy[name] = obj
        else:
            self._items[name] = obj

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        for ep in entry_points(group=self.group):
            if ep.name not in self._items and ep.name not in self._lazy:
                self._lazy[ep.name] = ep.value

    def __contains__(self, name: object) -> bool:
        if name in self._items or name in self._lazy:
            return True
        self._load_entry_points()
        return name in self._lazy

    def is_builtin(self, name: str) -> bool:
        """Whether ``name`` is one of benchkit's own entries (not a plug-in's or yours)."""
        return name in self._builtins

    def names(self) -> list[str]:
        """Every registered name, sorted (built-ins, decorated and entry points)."""
        self._load_entry_points()
        return sorted({*self._items, *self._lazy})

    def get(self, name: str) -> F:
        """The factory registered under ``name``; RegistryError naming the known ones."""
        found = self._items.get(name)
        if found is not None:
            return found
        if name not in self._lazy:
            self._load_entry_points()
        target = self._lazy.get(name)
        if target is None:
            known = ", ".join(self.names()) or "(none)"
            raise RegistryError(
                f"unknown {self.kind} {name!r}",
                fix=f"use one of: {known}; or register one (see docs/architecture.md).",
            )
        module_name, _, attr = target.partition(":")
        try:
            obj: F = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise RegistryError(
                f"{self.kind} {name!r} points at {target!r}, which cannot be imported: {exc}",
                fix="check the entry point or that the plug-in package is installed.",
            ) from exc
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
        only when given).
        """
        factory = self.get(name)
        kwargs = dict(options)
        for key, value in (
            ("base_dir", base_dir),
            ("response_cache", response_cache),
            ("registries", registries),
        ):
            if value is not None and _accepts(factory, key):
                kwargs[key] = value
        try:
            return factory(**kwargs)
        except TypeError as exc:
            raise ConfigError(
                f"{self.kind} {name!r} rejected its options {sorted(options)}: {exc}",
                fix=f"see the options {self.kind} {name!r} takes in docs/.",
            ) from exc

    def copy(self) -> Registry[F]:
        """An independent copy (for a run that registers things of its own)."""
        clone: Registry[F] = Registry(self.kind, self.group)
        clone._builtins = self._builtins
        clone._lazy = dict(self._lazy)
        clone._items = dict(self._items)
        clone._entry_points_loaded = self._entry_points_loaded
        return clone

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


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
    "bundle": "benchkit.formats.skillvault._provider:BundleProvider",
    "chat": "benchkit.llm._provider:ChatProvider",
    "memory": "benchkit.memory._pipeline:MemoryPipeline",
    "mcp": "benchkit.providers._mcp:McpProvider",
}
_EVALUATORS = {
    "exact": "benchkit.evaluators._basic:ExactEvaluator",
    "contains": "benchkit.evaluators._basic:ContainsEvaluator",
    "regex": "benchkit.evaluators._basic:RegexEvaluator",
    "json_schema": "benchkit.evaluators._basic:JsonSchemaEvaluator",
    "numeric": "benchkit.evaluators._basic:NumericEvaluator",
    "llm_judge": "benchkit.formats.eval_skills._judge:EvalSkillsJudge",
    "llm_rubric": "benchkit.evaluators._judge:RubricJudge",
    "codeforge_correctness": "benchkit.formats.codeforge._metrics:GEvalMetric",
    "codeforge_tool_correctness": "benchkit.formats.codeforge._metrics:ToolCorrectness",
    "codeforge_faithfulness": "benchkit.formats.codeforge._metrics:Faithfulness",
    "codeforge_answer_relevancy": "benchkit.formats.codeforge._metrics:AnswerRelevancy",
    "codeforge_contextual_precision": "benchkit.formats.codeforge._metrics:ContextualPrecision",
    "memory_exact_match": "benchkit.formats.memorybench._evaluate:MemoryExactMatch",
    "memory_llm_judge": "benchkit.formats.memorybench._llm:MemoryLLMJudge",
    "memory_retrieval": "benchkit.formats.memorybench._evaluate:MemoryRetrieval",
    "deletion_check": "benchkit.formats.memorybench._evaluate:DeletionCheck",
    "retrieval": "benchkit.metrics._evaluator:RetrievalEvaluator",
}
_VERIFIERS: dict[str, str] = {
    "bundle_file_exists": "benchkit.formats.skillvault.verifiers._bundle:BundleFileExists",
    "bundle_file_contains": "benchkit.formats.skillvault.verifiers._bundle:BundleFileContains",
    "command": "benchkit.formats.skillvault.verifiers._command:CommandVerifier",
}
_MEMORY_PROVIDERS = {"LocalBaseline": "benchkit.memory._baseline:LocalBaseline"}
_FORMATS = {
    "native": "benchkit.formats.native:FORMAT",
    "skillvault": "benchkit.formats.skillvault:FORMAT",
    "eval-skills": "benchkit.formats.eval_skills:FORMAT",
    "codeforge": "benchkit.formats.codeforge:FORMAT",
    "memorybench": "benchkit.formats.memorybench:FORMAT",
}


def _memory_providers() -> Registry[Callable[..., Any]]:
    return Registry("memory provider", "benchkit.memory_providers", _MEMORY_PROVIDERS)


@attrs.define
class Registries:
    """The registries a run looks names up in. Runs may use their own copies.

    ``memory_providers`` maps names to factories of memory stores (no arguments, a fresh
    store each call) for the ``memory`` provider's ``provider: NAME``; entry-point group
    ``benchkit.memory_providers``.
    """

    providers: Registry[Callable[..., Any]]
    evaluators: Registry[Callable[..., Any]]
    verifiers: Registry[Callable[..., Any]]
    formats: Registry[Callable[..., Any]]
    memory_providers: Registry[Callable[..., Any]] = attrs.field(factory=_memory_providers)

    def copy(self) -> Registries:
        """Independent copies of every registry: what one adds, the other never sees."""
        return Registries(
            self.providers.copy(),
            self.evaluators.copy(),
            self.verifiers.copy(),
            self.formats.copy(),
            self.memory_providers.copy(),
        )


_DEFAULT = Registries(
    providers=Registry("provider", "benchkit.providers", _PROVIDERS),
    evaluators=Registry("evaluator", "benchkit.evaluators", _EVALUATORS),
    verifiers=Registry("verifier", "benchkit.verifiers", _VERIFIERS),
    formats=Registry("format", "benchkit.formats", _FORMATS),
    memory_providers=_memory_providers(),
)


def default_registries() -> Registries:
    """The process-wide registries that the decorators below add to."""
    return _DEFAULT


def provider(name: str, *, aliases: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Register a provider factory under ``name``."""
    return _DEFAULT.providers.register(name, aliases=aliases)  # type: ignore[return-value]


def evaluator(name: str, *, aliases: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Register an evaluator factory under ``name``."""
    return _DEFAULT.evaluators.register(name, aliases=aliases)  # type: ignore[return-value]


def verifier(name: str, *, aliases: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Register a verifier factory under ``name``."""
    return _DEFAULT.verifiers.register(name, aliases=aliases)  # type: ignore[return-value]


def format(name: str) -> Callable[[F], F]:
    """Register a benchmark format (an object with ``detect`` and ``load``) under ``name``."""
    return _DEFAULT.formats.register(name)  # type: ignore[return-value]
