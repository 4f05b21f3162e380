"""Every MemoryBench benchmark under a benchmarks root, found as the original finds them."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from benchkit.errors import BenchkitError, ConfigError, FormatError
from benchkit.formats.memorybench._evaluate import PASS_CORRECTNESS, PASS_FAITHFULNESS
from benchkit.formats.memorybench._loader import load
from benchkit.formats.memorybench._validate import MANIFEST_FILE, ManifestWarning
from benchkit.model import Suite

_SKIPPED_DIRS = frozenset({"node_modules", "tests", "fixtures"})


@attrs.frozen
class Discovery:
    """What :func:`discover` found: benchmarks by name (with their manifest paths), and
    the manifests that could not be used, each with its error."""

    benchmarks: Mapping[str, Suite]
    paths: Mapping[str, Path]
    problems: tuple[tuple[Path, BenchkitError], ...]


def discover(
    root: str | os.PathLike[str],
    *,
    providers: Sequence[str] = ("LocalBaseline",),
    pass_correctness: float = PASS_CORRECTNESS,
    pass_faithfulness: float = PASS_FAITHFULNESS,
) -> Discovery:
    """Every ``manifest.json`` under ``root`` (the benchmarks root), as the original finds
    them: sorted, skipping ``node_modules``, ``tests``, ``fixtures`` and hidden
    directories. A manifest that fails to load, and a second benchmark with a name already
    taken, are recorded in ``problems`` (naming both paths) and skipped."""
    base = Path(root)
    if not base.is_dir():
        raise ConfigError(
            f"benchmarks directory {str(base)!r} does not exist",
            fix="run from the project directory, or pass --benchmarks-dir.",
        )
    benchmarks: dict[str, Suite] = {}
    paths: dict[str, Path] = {}
    problems: list[tuple[Path, BenchkitError]] = []
    for directory, subdirs, files in os.walk(base):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        if MANIFEST_FILE not in files:
            continue
        file = Path(directory) / MANIFEST_FILE
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ManifestWarning)
                suite = load(
                    file,
                    providers=providers,
                    root=base,
                    pass_correctness=pass_correctness,
                    pass_faithfulness=pass_faithfulness,
                )
        except BenchkitError as exc:
            problems.append((file, exc))
            continue
        name = suite.benchmark.id
        if name in benchmarks:
            problems.append(
                (
                    file,
                    FormatError(
                        f"duplicate benchmark name {name!r}: {paths[name]} defines it too",
                        file=file,
                        fix="give each benchmark a unique `name`; the first one found is kept.",
                    ),
                )
            )
            continue
        benchmarks[name] = suite
        paths[name] = file
    return Discovery(benchmarks, paths, tuple(problems))
