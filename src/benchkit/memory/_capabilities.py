"""Capability names, and the gate that skips a provider × benchmark pair missing one.

benchkit names capabilities ``add``, ``retrieve``, ``delete``, ``update``, ``list`` and
``reset``; MemoryBench manifests say ``add_memory``, ``retrieve_memory``,
``delete_memory``, ``update_memory``, ``list_memories`` and ``reset_scope``. Both are
accepted wherever a benchmark names what it requires.

    >>> missing_capabilities(["add_memory", "delete_memory"], frozenset({"add", "retrieve"}))
    ['delete_memory']
    >>> skip_message("mem0", ["delete_memory"])
    "Provider 'mem0' lacks required capability: delete_memory"
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

__all__ = [
    "CAPABILITIES",
    "capability",
    "from_original",
    "missing_capabilities",
    "skip_message",
]

CAPABILITIES = ("add", "retrieve", "delete", "update", "list", "reset")
"""Every capability a memory provider can declare, in benchkit's names."""

_ORIGINAL = {
    "add_memory": "add",
    "retrieve_memory": "retrieve",
    "delete_memory": "delete",
    "update_memory": "update",
    "list_memories": "list",
    "reset_scope": "reset",
}


def capability(name: str) -> str | None:
    """benchkit's name for a capability written either way; None when it is unknown."""
    if name in CAPABILITIES:
        return name
    return _ORIGINAL.get(name)


def missing_capabilities(required: Iterable[str], provided: Collection[str]) -> list[str]:
    """The required capabilities (as written) that ``provided`` lacks.

    An unknown capability name is always missing, as in the original's gate.
    """
    missing: list[str] = []
    for name in required:
        ours = capability(name)
        if (ours is None or ours not in provided) and name not in missing:
            missing.append(name)
    return missing


def skip_message(provider: str, missing: Iterable[str]) -> str:
    """The original's reason for skipping a pair."""
    return f"Provider '{provider}' lacks required capability: {', '.join(missing)}"


def from_original(declared: Mapping[str, Any]) -> tuple[frozenset[str], float]:
    """Capabilities and convergence wait from MemoryBench's ``ProviderCapabilities`` object.

    ``{"core_operations": {"add_memory": true, ...}, "optional_operations": {...},
    "system_flags": {"convergence_wait_ms": 500}}`` → ``({"add", ...}, 500.0)``.
    """
    found: set[str] = set()
    for group in ("core_operations", "optional_operations"):
        flags = declared.get(group)
        if isinstance(flags, Mapping):
            for key, value in flags.items():
                ours = _ORIGINAL.get(key)
                if ours is not None and value is True:
                    found.add(ours)
    wait = 0.0
    flags = declared.get("system_flags")
    if isinstance(flags, Mapping):
        value = flags.get("convergence_wait_ms")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            wait = float(value)
    return frozenset(found), wait
