"""Named memory providers: LocalBaseline, entry points, and the user's own modules.

A name maps to a *factory*: a callable taking no arguments that returns a fresh store
(a class works). Each run builds its own instance, so runs never share memories. The
registry is ``Registries.memory_providers`` (:mod:`benchkit.registry`), so a run with a
copied :class:`~benchkit.registry.Registries` sees only its own additions. Third parties
register factories in the entry-point group ``benchkit.memory_providers``::

    [project.entry-points."benchkit.memory_providers"]
    my-store = "my_pkg.memory:MyStore"

and a project module (``--provider-module`` on the command line) lists its own in a
``MEMORY_PROVIDERS`` mapping of name to factory.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchkit.errors import ConfigError
from benchkit.memory._adapter import as_memory_provider
from benchkit.protocols import MemoryProvider
from benchkit.registry import Registry, default_registries

__all__ = [
    "MEMORY_PROVIDERS_GROUP",
    "build_memory_provider",
    "load_provider_module",
    "memory_providers",
]

MEMORY_PROVIDERS_GROUP = "benchkit.memory_providers"


def memory_providers() -> Registry[Callable[..., Any]]:
    """The process-wide registry of memory provider factories,
    ``default_registries().memory_providers`` (copy it to extend it for one run)."""
    return default_registries().memory_providers


def build_memory_provider(
    name: str, registry: Registry[Callable[..., Any]] | None = None
) -> MemoryProvider:
    """A fresh store from the factory registered under ``name`` (in ``registry``, default
    the process-wide one), adapted if needed."""
    factory = (registry or memory_providers()).get(name)
    try:
        built = factory()
    except TypeError as exc:
        raise ConfigError(
            f"memory provider {name!r} could not be built without arguments: {exc}",
            fix="register a factory that takes no arguments (e.g. a lambda or a class "
            "whose options all have defaults).",
        ) from exc
    return as_memory_provider(built)


def load_provider_module(
    spec: str, registry: Registry[Callable[..., Any]], *, base_dir: Path | None = None
) -> list[str]:
    """Register the ``MEMORY_PROVIDERS`` of a module (a dotted name or a ``.py`` path).

    Returns the names added, in the module's order.
    """
    if spec.endswith(".py"):
        path = Path(spec)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.is_file():
            raise ConfigError(
                f"provider module {str(path)!r} does not exist",
                fix="pass a Python file or an importable module name.",
            )
        module_name = f"_benchkit_memory_providers_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise ConfigError(f"cannot load Python file {str(path)!r}")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module
        loader_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(spec)
        except ImportError as exc:
            raise ConfigError(
                f"cannot import provider module {spec!r}: {exc}",
                fix="check the module is on PYTHONPATH, or pass the path of a .py file.",
            ) from exc
    found = getattr(module, "MEMORY_PROVIDERS", None)
    if not isinstance(found, Mapping) or not found:
        raise ConfigError(
            f"provider module {spec!r} has no MEMORY_PROVIDERS mapping",
            fix='define MEMORY_PROVIDERS = {"name": factory, ...} at its top level.',
        )
    names: list[str] = []
    for name, factory in found.items():
        if not isinstance(name, str) or not callable(factory):
            raise ConfigError(
                f"MEMORY_PROVIDERS in {spec!r} maps {name!r} to {factory!r}",
                fix="map each name (a string) to a callable returning a store.",
            )
        registry.add(name, factory)
        names.append(name)
    return names
