"""Benchmark formats: turn a file (or a directory) into a :class:`~benchkit.model.Suite`.

    >>> import benchkit.formats
    >>> suite = benchkit.formats.load("benchmarks/demo")          # doctest: +SKIP
    >>> benchkit.formats.detect_format("bench.json")               # doctest: +SKIP
    'native'

A format is any object with a ``name``, ``detect(path, head)`` and ``load(path,
**options)`` (the :class:`Format` protocol), registered in the formats registry
(:mod:`benchkit.registry`): built-ins by name, third-party formats through the entry-point
group ``benchkit.formats``. :func:`load` parses the file once, asks each format's
``detect`` in turn — ``native`` first, then the rest in name order — and lets the first
that says yes load it. ``format="name"`` skips detection.

A format's ``load`` may declare two keyword parameters that :func:`load` then passes:
``registries`` (the :class:`~benchkit.registry.Registries` in use) and ``document`` (the
already-parsed :class:`benchkit.formats._source.Document`, when the file is YAML or JSON).
A format whose files name no conditions may say what sets them in an optional
``conditions_from`` attribute (``"--skills"``), which ``benchkit list`` shows.

A format says which files it reads in an optional ``suffixes`` attribute — any file type:
``(".csv",)``, ``(".jsonl", ".ndjson")``, ``(".parquet",)`` (default: ``.yaml``, ``.yml``
and ``.json``, which are parsed for every format's ``detect``). :func:`discover` (what
``benchkit list``, ``GET /api/benchmarks`` and the explorer show) looks at the files whose
name ends in a suffix some format declares and asks only those formats; ``detect`` then gets
``head=None`` for a file that is not YAML or JSON, and reads what it needs itself.
:func:`load` of a given path asks every format. A format that cannot be imported is left
out of detection with one warning (``format=NAME`` naming it is an error).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from benchkit.errors import BenchkitError, ConfigError, FormatError

if TYPE_CHECKING:
    from benchkit.formats._source import Document
    from benchkit.model import Suite
    from benchkit.registry import Registries

__all__ = ["BENCHMARK_FILES", "DEFAULT_SUFFIXES", "Format", "detect_format", "discover", "load"]

BENCHMARK_FILES = ("benchmark.yaml", "benchmark.yml", "benchmark.json")
"""The file names :func:`load` looks for, in this order, when given a directory."""

_PARSED_SUFFIXES = frozenset({".yaml", ".yml", ".json"})

DEFAULT_SUFFIXES = (".yaml", ".yml", ".json")
"""The files a format without a ``suffixes`` attribute reads (parsed for its ``detect``).

.. versionadded:: 0.2.0
"""


@runtime_checkable
class Format(Protocol):
    """A benchmark format: recognises its files and loads them into a Suite.

    ``detect`` gets the path and ``head``, the parsed top-level document (None for a
    directory or a file that is not YAML/JSON or does not parse); it must be cheap and
    must not raise for files of other formats. An optional ``suffixes`` attribute (a tuple
    of lower-case file-name endings, ``(".csv",)``) says which files :func:`discover`
    offers it (default :data:`DEFAULT_SUFFIXES`).
    """

    name: str

    def detect(self, path: Path, head: Any | None) -> bool: ...

    def load(self, path: Path, **options: Any) -> Suite: ...


def load(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    registries: Registries | None = None,
    **options: Any,
) -> Suite:
    """Load the benchmark at ``path`` (a file, or a directory holding ``benchmark.yaml``).

    The format is detected unless ``format`` names one. ``options`` go to the format's
    ``load``. Raises :class:`FormatError` for a missing path, a file no format
    recognises (listing the known formats) and anything the format rejects.
    """
    regs = _registries(registries)
    target, document, parse_error = _open(path)
    if format is not None:
        fmt = _get(regs, format)
    else:
        found = _detect(target, document, regs)
        if found is None:
            raise parse_error or _unrecognised(target, regs)
        fmt = found
    return _call_load(fmt, target, document, regs, options)


def detect_format(path: str | os.PathLike[str], *, registries: Registries | None = None) -> str:
    """The name of the format that would load ``path``; FormatError if none does."""
    regs = _registries(registries)
    target, document, parse_error = _open(path)
    found = _detect(target, document, regs)
    if found is None:
        raise parse_error or _unrecognised(target, regs)
    return found.name


def discover(
    root: str | os.PathLike[str], *, registries: Registries | None = None
) -> tuple[list[tuple[Path, Suite]], list[tuple[Path, BenchkitError]]]:
    """Every benchmark file under ``root``: ``(found, problems)``.

    Walks ``root`` recursively (sorted, not following symlinked directories, skipping
    hidden directories and ``__pycache__``) and offers each regular file whose name ends in
    a suffix some format declares to those formats (YAML and JSON files to every format
    that declares none; a FIFO, socket or device is skipped: reading one could block
    forever). ``found``
    lists ``(path, suite)`` for files a format recognises and loads; ``problems`` lists
    ``(path, error)`` for files that a format recognises but cannot load, and for files
    that do not parse. Files no format recognises (bundled data, configs) are skipped.
    """
    regs = _registries(registries)
    readers = _readers(regs)
    found: list[tuple[Path, Suite]] = []
    problems: list[tuple[Path, BenchkitError]] = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(files):
            path = Path(directory) / name
            lower = name.lower()
            asked = [fmt for suffix, fmts in readers if lower.endswith(suffix) for fmt in fmts]
            if not asked:
                continue
            if not path.is_file():  # a FIFO, socket or device: reading it could block
                continue
            try:
                document = None
                if path.suffix.lower() in _PARSED_SUFFIXES:
                    _, document, parse_error = _open(path)
                    if parse_error is not None:
                        raise parse_error
                head = document.data if document is not None else None
                fmt = next((f for f in dict.fromkeys(asked) if f.detect(path, head)), None)
                if fmt is not None:
                    found.append((path, _call_load(fmt, path, document, regs, {})))
            except BenchkitError as exc:
                problems.append((path, exc))
    return found, problems


def _readers(regs: Registries) -> list[tuple[str, list[Format]]]:
    """The formats that read each declared file-name ending, longest ending first (in
    detection order within one), for :func:`discover`."""
    by_suffix: dict[str, list[Format]] = {}
    for fmt in _formats(regs):
        declared = getattr(fmt, "suffixes", None) or DEFAULT_SUFFIXES
        for suffix in (declared,) if isinstance(declared, str) else declared:
            by_suffix.setdefault(str(suffix).lower(), []).append(fmt)
    return sorted(by_suffix.items(), key=lambda item: -len(item[0]))


def _registries(registries: Registries | None) -> Registries:
    if registries is not None:
        return registries
    from benchkit.registry import default_registries

    return default_registries()


def _open(path: str | os.PathLike[str]) -> tuple[Path, Document | None, FormatError | None]:
    """The file to load (a directory's benchmark file), its parsed head, or the parse error."""
    target = Path(path)
    if not target.exists():
        raise FormatError(
            "no such file or directory",
            file=target,
            fix="check the path; a directory must contain " + " or ".join(BENCHMARK_FILES) + ".",
        )
    if target.is_dir():
        for name in BENCHMARK_FILES:
            if (target / name).is_file():
                target = target / name
                break
        else:
            return target, None, None
    if target.suffix.lower() not in _PARSED_SUFFIXES:
        return target, None, None
    from benchkit.formats._source import read_document

    try:
        return target, read_document(target), None
    except FormatError as exc:
        return target, None, exc


def _order(regs: Registries) -> list[str]:
    names = regs.formats.names()
    return [n for n in ("native",) if n in names] + [n for n in names if n != "native"]


def _get(regs: Registries, name: str) -> Format:
    return cast(Format, regs.formats.get(name))


def _formats(regs: Registries) -> list[Format]:
    """Every format that can be imported, in detection order (one that cannot is left out,
    said once as a warning)."""
    found = (regs.formats.find(name) for name in _order(regs))
    return [cast(Format, fmt) for fmt in found if fmt is not None]


def _detect(target: Path, document: Document | None, regs: Registries) -> Format | None:
    head = document.data if document is not None else None
    for fmt in _formats(regs):
        if fmt.detect(target, head):
            return fmt
    return None


def _unrecognised(target: Path, regs: Registries) -> FormatError:
    known = ", ".join(_order(regs)) or "(none)"
    what = "no benchmark file in this directory, and no format" if target.is_dir() else "no format"
    return FormatError(
        f"{what} recognises it (known formats: {known})",
        file=target,
        fix="add `benchkit: 1` at the top for a native benchmark, or pass format=NAME "
        "to force one.",
    )


def _call_load(
    fmt: Format,
    target: Path,
    document: Document | None,
    regs: Registries,
    options: dict[str, Any],
) -> Suite:
    extra = dict(options)
    declared = _declared(fmt.load)
    if "registries" in declared:
        extra.setdefault("registries", regs)
    if "document" in declared and document is not None:
        extra.setdefault("document", document)
    accepts_any = _accepts_var_keyword(fmt.load)
    unknown = sorted(set(options) - declared) if not accepts_any else []
    if unknown:
        raise ConfigError(
            f"the {fmt.name} loader takes no option {', '.join(unknown)}",
            fix="its options are: "
            + (", ".join(sorted(declared - {"path", "registries", "document"})) or "(none)")
            + ".",
        )
    suite = fmt.load(target, **extra)
    if suite.benchmark.source.format is None:  # a loaded file always says its format
        import attrs

        from benchkit.model import Source

        source = Source(path=str(target), format=fmt.name)
        suite = attrs.evolve(suite, benchmark=attrs.evolve(suite.benchmark, source=source))
    return suite


def _accepts_var_keyword(func: Any) -> bool:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _declared(func: Any) -> frozenset[str]:
    """The keyword parameters ``func`` names explicitly (not through ``**kwargs``)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return frozenset(p.name for p in params if p.kind in kinds)
