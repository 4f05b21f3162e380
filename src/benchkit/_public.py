"""Public names for classes defined in private modules.

A class defined in ``benchkit.providers._callable`` but imported as
``benchkit.providers.CallableProvider`` should say so: its repr, pickles (Ray ships
providers by pickle), docs and error messages then show the path users write, and a later
move between private modules changes nothing they see. :func:`public` records where the
class was defined first, so what must never change — a resume key names a provider by its
class (``store/_keys.py``) — keeps naming it as it always did (:func:`defined_in`).

Only for classes whose annotations are never resolved through ``__module__`` (attrs
classes with string annotations are resolved by cattrs through ``sys.modules[__module__]``:
resolve them before renaming, or leave them where they are). The price, as with numpy's
``set_module``: ``inspect.getsource`` finds a class's file through ``__module__``, so it
no longer finds these classes' source.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["defined_in", "public"]

_T = TypeVar("_T", bound=type)

#: Each renamed class's defining module, recorded before it was renamed.
_DEFINED_IN: dict[type, str] = {}


def public(module: str) -> Callable[[_T], _T]:
    """A class decorator: the class reports ``module`` (which must export it under its
    ``__qualname__``, eagerly or through the module's lazy ``__getattr__``)."""

    def rename(cls: _T) -> _T:
        _DEFINED_IN[cls] = cls.__module__
        cls.__module__ = module
        return cls

    return rename


def defined_in(cls: type) -> str:
    """The module that defined ``cls``: the one before :func:`public` renamed it."""
    return _DEFINED_IN.get(cls, cls.__module__)
