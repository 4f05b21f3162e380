"""Finding an eval-skills benchmark by its internal ``id`` or by path, as the original does."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from benchkit import _builtins
from benchkit.errors import ConfigError, FormatError
from benchkit.formats._source import read_regular
from benchkit.formats.eval_skills._loader import BENCHMARK_FILE, detect, load
from benchkit.model import Suite

if TYPE_CHECKING:
    from benchkit.registry import Registries


def find_benchmarks(directory: str | os.PathLike[str]) -> dict[str, list[Path]]:
    """The eval-skills benchmarks in ``directory``, by internal ``id`` (as the original
    registers them): ``*.json``, ``*/benchmark.json`` and ``definitions/*.json``.

    Files that do not parse or are not eval-skills benchmarks are skipped; an id may map
    to several files, which :func:`resolve` reports as ambiguous.
    """
    root = Path(directory)
    found: dict[str, list[Path]] = {}
    if not root.is_dir():
        return found
    candidates = [
        *sorted(root.glob("*.json")),
        *sorted(root.glob(f"*/{BENCHMARK_FILE}")),
        *sorted(root.glob("definitions/*.json")),
    ]
    for file in candidates:
        try:
            head = json.loads(read_regular(file))
        except (OSError, ValueError, FormatError):
            continue
        if detect(file, head) and isinstance(head.get("id"), str):
            found.setdefault(head["id"], []).append(file)
    return found


def resolve(
    benchmark: str | os.PathLike[str], *, benchmarks_dir: str | os.PathLike[str] | None = None
) -> Path:
    """The benchmark file that ``benchmark`` names: an id registered in ``benchmarks_dir``
    (default ``./benchmarks``, else the built-in benchmarks) first, as the original; else
    a ``.json`` file; else a directory holding ``benchmark.json``. ConfigError when it
    names none of these."""
    directory = Path(benchmarks_dir) if benchmarks_dir is not None else _builtins.benchmarks_dir()
    name = os.fspath(benchmark)
    index = find_benchmarks(directory)
    files = index.get(name)
    if files:
        if len(files) > 1:
            shown = ", ".join(str(f) for f in files)
            raise ConfigError(
                f"benchmark id {name!r} is defined by several files: {shown}",
                fix="give each benchmark a unique `id`, or pass the file's path.",
            )
        return files[0]
    path = Path(name)
    if path.is_file():
        return path
    if path.is_dir():
        if (path / BENCHMARK_FILE).is_file():
            return path / BENCHMARK_FILE
        raise ConfigError(
            f"directory {name!r} holds no {BENCHMARK_FILE}",
            fix=f"pass the benchmark file itself, or add {BENCHMARK_FILE} to the directory.",
        )
    known = ", ".join(sorted(index)) or "(none)"
    raise ConfigError(
        f"no benchmark {name!r}: it is not an id in {str(directory)!r} (known: {known}) "
        "and not a file or directory",
        fix="pass a benchmark id, a path to a benchmark .json file, or --benchmarks-dir.",
    )


def load_benchmark(
    benchmark: str | os.PathLike[str],
    *,
    benchmarks_dir: str | os.PathLike[str] | None = None,
    registries: Registries | None = None,
) -> Suite:
    """:func:`load` the benchmark that :func:`resolve` finds for an id or a path."""
    return load(resolve(benchmark, benchmarks_dir=benchmarks_dir), registries=registries)
