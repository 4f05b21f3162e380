"""Plug your own memory store in: any object with add / retrieve / delete methods.

:func:`as_memory_provider` wraps an object whose methods may be sync or async and may use
either benchkit's names (``add``, ``retrieve``, ``delete``, ``update``, ``list``,
``reset``) or MemoryBench's (``add_memory``, ``retrieve_memory``, ``delete_memory``,
``update_memory``, ``list_memories``, ``reset_scope``), and turns what they return into
benchkit's types::

    >>> import anyio
    >>> from benchkit.protocols import MemoryScope
    >>> class Notes:                       # a plain, synchronous store
    ...     def __init__(self):
    ...         self.rows = {}
    ...     def add(self, scope, content, metadata=None):
    ...         self.rows[str(len(self.rows))] = content
    ...         return str(len(self.rows) - 1)
    ...     def retrieve(self, scope, query, limit=10):
    ...         return [{"id": k, "content": v} for k, v in self.rows.items() if query in v]
    ...     def delete(self, scope, record_id):
    ...         return self.rows.pop(record_id, None) is not None
    >>> store = as_memory_provider(Notes())
    >>> sorted(store.capabilities)
    ['add', 'delete', 'retrieve']
    >>> async def demo():
    ...     await store.add(MemoryScope("u", "r"), "tea at five")
    ...     return await store.retrieve(MemoryScope("u", "r"), "tea")
    >>> [item.content for item in anyio.run(demo)]
    ['tea at five']

What the methods may return (see ``docs/memory-providers.md``): ``add`` a record id, a
mapping with ``id``, or an object with an ``id`` attribute; ``retrieve`` and ``list`` a
list of :class:`~benchkit.model.RetrievedItem`, of mappings ``{id, content, score,
metadata}`` (``context``, ``text`` or ``memory`` for the content), of MemoryBench's
``{record: {id, context, metadata}, score}``, or of strings; ``delete`` and ``update`` a
boolean (None counts as done). Anything else fails the cell with a message saying what
came back.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import anyio.to_thread
import attrs

from benchkit.errors import ConfigError, InvocationError
from benchkit.memory._capabilities import CAPABILITIES, capability, from_original
from benchkit.memory._convert import excerpt, to_items, to_record_id
from benchkit.model import RetrievedItem
from benchkit.protocols import MemoryProvider, MemoryScope

__all__ = ["AdaptedMemoryProvider", "as_memory_provider"]

_METHODS: dict[str, tuple[str, ...]] = {
    "add": ("add", "add_memory"),
    "retrieve": ("retrieve", "retrieve_memory", "search"),
    "delete": ("delete", "delete_memory"),
    "update": ("update", "update_memory"),
    "list": ("list", "list_memories"),
    "reset": ("reset", "reset_scope"),
}

ScopeStyle = Literal["object", "dict"]


def _declared(obj: Any) -> tuple[frozenset[str] | None, float]:
    """What the object says it can do: ``capabilities`` or a sync ``get_capabilities()``."""
    wait = getattr(obj, "convergence_wait_ms", 0)
    wait = float(wait) if isinstance(wait, (int, float)) and not isinstance(wait, bool) else 0.0
    declared = getattr(obj, "capabilities", None)
    if declared is None:
        getter = getattr(obj, "get_capabilities", None)
        if callable(getter) and not inspect.iscoroutinefunction(getter):
            declared = getter()
    if declared is None:
        return None, wait
    if isinstance(declared, Mapping):
        found, original_wait = from_original(declared)
        return found, wait or original_wait
    if isinstance(declared, str) or not isinstance(declared, Iterable):
        raise ConfigError(
            f"{type(obj).__name__}.capabilities must be a collection of names, got "
            f"{excerpt(declared)}",
            fix=f"use names from: {', '.join(CAPABILITIES)}.",
        )
    names: set[str] = set()
    for name in declared:
        ours = capability(name) if isinstance(name, str) else None
        if ours is None:
            raise ConfigError(
                f"{type(obj).__name__} declares an unknown capability {name!r}",
                fix=f"use names from: {', '.join(CAPABILITIES)}.",
            )
        names.add(ours)
    return frozenset(names), wait


@attrs.define
class AdaptedMemoryProvider:
    """A user's object seen as a :class:`~benchkit.protocols.MemoryProvider`.

    Build it with :func:`as_memory_provider`. ``capabilities`` are the declared ones, or
    those whose methods exist; ``convergence_wait_ms`` is how long the pipeline waits
    after ingesting (the original's ``system_flags.convergence_wait_ms``).
    """

    target: Any
    capabilities: frozenset[str]
    convergence_wait_ms: float
    methods: dict[str, Callable[..., Any]]
    thread: bool = False
    scope_style: ScopeStyle = "object"

    @property
    def name(self) -> str:
        return str(getattr(self.target, "name", type(self.target).__name__))

    async def _call(self, op: str, scope: MemoryScope, *args: Any) -> Any:
        method = self.methods.get(op)
        if method is None:
            raise InvocationError(
                f"{self.name} has no {op} method (capabilities: {', '.join(sorted(self.capabilities))})",
                retryable=False,
            )
        scope_arg: Any = scope if self.scope_style == "object" else attrs.asdict(scope)
        if inspect.iscoroutinefunction(method):
            return await method(scope_arg, *args)
        if self.thread:
            result = await anyio.to_thread.run_sync(functools.partial(method, scope_arg, *args))
        else:
            result = method(scope_arg, *args)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def add(
        self, scope: MemoryScope, content: str, metadata: Mapping[str, Any] | None = None
    ) -> str:
        return to_record_id(await self._call("add", scope, content, dict(metadata or {})))

    async def retrieve(
        self, scope: MemoryScope, query: str, limit: int = 10
    ) -> Sequence[RetrievedItem]:
        return to_items(await self._call("retrieve", scope, query, limit))

    async def delete(self, scope: MemoryScope, record_id: str) -> bool:
        return await self._call("delete", scope, record_id) is not False

    async def update(
        self,
        scope: MemoryScope,
        record_id: str,
        content: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> bool:
        result = await self._call("update", scope, record_id, content, dict(metadata or {}))
        return result is not False

    async def reset(self, scope: MemoryScope) -> None:
        await self._call("reset", scope)

    async def list(
        self, scope: MemoryScope, limit: int = 100, offset: int = 0
    ) -> Sequence[RetrievedItem]:
        return to_items(await self._call("list", scope, limit, offset), "list")

    async def aclose(self) -> None:
        """Close the wrapped object when it has ``aclose()`` or ``close()``."""
        closer = getattr(self.target, "aclose", None) or getattr(self.target, "close", None)
        if callable(closer):
            result = closer()
            if inspect.isawaitable(result):
                await result


def as_memory_provider(
    obj: Any,
    *,
    capabilities: Iterable[str] | None = None,
    thread: bool = False,
    scope: ScopeStyle = "object",
) -> MemoryProvider:
    """``obj`` as a memory provider (benchkit's own providers are returned unchanged).

    ``capabilities`` overrides what the object declares (its ``capabilities`` attribute,
    or MemoryBench's ``get_capabilities()``); without either, every operation that has a
    method counts. ``thread=True`` runs sync methods in a worker thread (for clients that
    block on I/O). ``scope="dict"`` passes the scope as a plain dict (``user_id``,
    ``run_id``, ``session_id``, ``namespace``) for stores written against MemoryBench.
    """
    from benchkit.memory._baseline import LocalBaseline
    from benchkit.memory._http import HttpMemoryProvider

    if isinstance(obj, (LocalBaseline, HttpMemoryProvider, AdaptedMemoryProvider)):
        return obj
    if scope not in ("object", "dict"):
        raise ConfigError(f"scope must be 'object' or 'dict', got {scope!r}")
    kind = type(obj).__name__
    methods: dict[str, Callable[..., Any]] = {}
    for op, names in _METHODS.items():
        for name in names:
            method = getattr(obj, name, None)
            if callable(method):
                methods[op] = method
                break
    missing = [op for op in ("add", "retrieve") if op not in methods]
    if missing:
        raise ConfigError(
            f"{kind} is not a memory store: it has no {' or '.join(missing)} method",
            fix="define add(scope, content, metadata) and retrieve(scope, query, limit) "
            "(sync or async); see docs/memory-providers.md.",
        )
    declared, wait = _declared(obj)
    if capabilities is not None:
        declared = frozenset(capability(c) or c for c in capabilities)
        unknown = sorted(declared - set(CAPABILITIES))
        if unknown:
            raise ConfigError(
                f"unknown capability {unknown[0]!r}",
                fix=f"use names from: {', '.join(CAPABILITIES)}.",
            )
    if declared is None:
        declared = frozenset(methods)
    lacking = sorted(declared - set(methods))
    if lacking:
        raise ConfigError(
            f"{kind} declares the capability {lacking[0]!r} but has no method for it",
            fix=f"add a {' or '.join(_METHODS[lacking[0]])} method, or stop declaring it.",
        )
    return AdaptedMemoryProvider(obj, declared, wait, methods, thread, scope)
