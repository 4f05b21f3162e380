"""The ``native`` entry of the formats registry: detection and the loader's face."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchkit.errors import ConfigError
from benchkit.formats._source import Document
from benchkit.formats.native._loader import load
from benchkit.model import Suite

if TYPE_CHECKING:
    from benchkit.registry import Registries


__all__ = ["FORMAT", "NativeFormat", "detect"]


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
