"""Where the built-in benchmarks and example skills are: the working directory's
``benchmarks/`` first, else the copy shipped in the wheel.

The repository's ``benchmarks/`` directory (the suites, CodeForge datasets, MemoryBench
manifests and the example skills under ``benchmarks/skills/``) is copied into the wheel as
``benchkit/benchmarks`` (hatch ``force-include``), so ``python -m benchkit list`` and
``python -m benchkit eval --benchmark coding-easy --skills calculator`` work from any
directory after ``pip install benchkit``. From a source checkout (an editable install)
the checkout's own ``benchmarks/`` plays that part.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BENCHMARKS", "benchmarks_dir", "builtin_benchmarks", "builtin_skill"]

BENCHMARKS = Path("benchmarks")
"""The directory commands look in first, relative to the working directory."""


def builtin_benchmarks() -> Path | None:
    """The shipped ``benchmarks`` directory (in the installed package, else the source
    checkout holding this file), or None when neither exists."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "benchmarks", here.parent.parent / "benchmarks"):
        if candidate.is_dir():
            return candidate
    return None


def benchmarks_dir() -> Path:
    """``./benchmarks`` when the working directory has one, else the built-ins (else
    ``./benchmarks`` anyway, so an error names the directory the user expects)."""
    if BENCHMARKS.is_dir():
        return BENCHMARKS
    return builtin_benchmarks() or BENCHMARKS


def builtin_skill(name: str) -> Path | None:
    """The shipped example skill directory called ``name`` (``calculator``), or None."""
    root = builtin_benchmarks()
    if root is None or not name or Path(name).name != name or name.startswith("."):
        return None
    candidate = root / "skills" / name
    return candidate if (candidate / "skill.json").is_file() else None
