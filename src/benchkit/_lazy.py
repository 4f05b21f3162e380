"""Lazy exports: a package names what it offers without importing it until first use.

Keeps ``import benchkit`` (and its subpackages) light: httpx, sqlite and the loaders are
imported when a name that needs them is first looked up.
"""

from __future__ import annotations

import sys

# typing.TYPE_CHECKING without importing typing: `import benchkit` imports this module, and
# typing would bring re, functools and collections (perf/import_time.py). For the same
# reason modules are imported with __import__, not importlib (a package of its own).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``where[name]`` (a module path) on demand.

    The value is then set on the package itself, so later look-ups are plain attribute
    reads that never come back here. A name ``where`` does not list may be one of the
    package's submodules (``benchkit.reports`` after a bare ``import benchkit``): it is
    imported as the attribute, as it was when the package imported its submodules
    eagerly.

    >>> __getattr__ = lazy_getattr("demo", {"dumps": "json"})
    >>> __getattr__("dumps").__module__
    'json'
    """

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            return _submodule(package, name)
        __import__(module)
        value = getattr(sys.modules[module], name)
        home = sys.modules.get(package)
        if home is not None:
            setattr(home, name, value)
        return value

    return __getattr__


def _submodule(package: str, name: str) -> Any:
    """``package.name`` imported, or the AttributeError a missing attribute raises (a
    private or dunder name is never looked for as a module: tools probe for those)."""
    missing = AttributeError(f"module {package!r} has no attribute {name!r}")
    if name.startswith("_"):
        raise missing
    qualified = f"{package}.{name}"
    try:
        __import__(qualified)
    except ModuleNotFoundError as exc:
        if exc.name != qualified:
            raise  # the submodule exists and itself imports something missing
        raise missing from None
    return sys.modules[qualified]
