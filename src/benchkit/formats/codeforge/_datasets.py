"""Finding CodeForge datasets: the datasets directory, and a dataset by file stem or name."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import attrs

from benchkit import _builtins
from benchkit.errors import BenchkitError, ConfigError, FormatError
from benchkit.formats._source import read_document
from benchkit.formats.codeforge._loader import DEFAULT_DIFFICULTY, load

DATASETS_DIR_ENV = "CODEFORGE_BENCHMARK_DATASETS_DIR"
DEFAULT_DATASETS_DIR = Path("benchmarks") / "codeforge"
CONFIG_FILE = "codeforge.yaml"
"""CodeForge's configuration file, in the project's directory (``benchmark.datasets_dir``)."""

_FIX_HINT = "see docs/formats/codeforge.md"
_SUFFIXES = frozenset({".yaml", ".yml"})


@attrs.frozen
class DatasetInfo:
    """A dataset found in a directory: its id (file stem), name, size and difficulty mix.

    ``path`` is relative to the directory searched (POSIX separators), ``file`` the path
    as found; ``difficulties`` counts tasks per difficulty.
    """

    id: str
    name: str
    description: str | None
    task_count: int
    path: str
    file: Path
    difficulties: Mapping[str, int]


def configured_datasets_dir(base: str | os.PathLike[str]) -> Path | None:
    """The datasets directory CodeForge's configuration names for a project at ``base``:
    ``$CODEFORGE_BENCHMARK_DATASETS_DIR``, else the ``benchmark.datasets_dir`` key of
    ``<base>/codeforge.yaml`` (CodeForge's precedence: defaults < that file < environment);
    relative paths are relative to ``base``. None when neither says.

    A ``codeforge.yaml`` that does not parse, or whose key is not a string, is a
    :class:`~benchkit.errors.FormatError` naming the file and line.
    """
    root = Path(base)
    from_env = os.environ.get(DATASETS_DIR_ENV)
    if from_env:
        return root / from_env
    config = root / CONFIG_FILE
    if not config.is_file():
        return None
    document = read_document(config, kind="yaml")
    section = document.data.get("benchmark") if isinstance(document.data, dict) else None
    value = section.get("datasets_dir") if isinstance(section, dict) else None
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise document.error(
            "benchmark.datasets_dir must be a string",
            ("benchmark", "datasets_dir"),
            fix="write the datasets directory's path, e.g. `datasets_dir: configs/benchmarks`.",
        )
    return root / value


def resolve_datasets_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """The datasets directory: ``directory``, else what CodeForge's configuration names
    (``$CODEFORGE_BENCHMARK_DATASETS_DIR``, else ``benchmark.datasets_dir`` in
    ``./codeforge.yaml``: :func:`configured_datasets_dir`), else ``benchmarks/codeforge``
    (of the working directory, else of the built-ins)."""
    if directory is not None:
        return Path(directory)
    configured = configured_datasets_dir(Path.cwd())
    if configured is not None:
        return configured
    return _builtins.benchmarks_dir() / DEFAULT_DATASETS_DIR.name


def discover_datasets(
    directory: str | os.PathLike[str],
) -> tuple[list[DatasetInfo], list[tuple[Path, BenchkitError]]]:
    """Every ``.yaml`` / ``.yml`` file under ``directory`` (recursively, sorted, hidden
    files and directories skipped): ``(datasets, problems)``.

    A file that cannot be read or is not a valid dataset is a problem — reported with its
    error, never skipped in silence; so is a directory that cannot be listed.
    """
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(
            f"{str(root)!r} is not a directory",
            fix=f"pass the directory that holds the datasets ({_FIX_HINT}).",
        )
    found: list[DatasetInfo] = []
    problems: list[tuple[Path, BenchkitError]] = []

    def unreadable(exc: OSError) -> None:
        where = Path(exc.filename) if exc.filename else root
        problems.append(
            (where, FormatError(f"cannot read the directory: {exc.strerror}", file=where))
        )

    for current, subdirs, files in os.walk(root, onerror=unreadable):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        for name in sorted(files):
            file = Path(current) / name
            if name.startswith(".") or file.suffix.lower() not in _SUFFIXES:
                continue
            if not file.is_file():  # a FIFO, socket or device: reading it could block
                continue
            try:
                bench = load(file).benchmark
            except BenchkitError as exc:
                problems.append((file, exc))
                continue
            mix: dict[str, int] = {}
            for task in bench.iter_tasks():
                level = task.difficulty or DEFAULT_DIFFICULTY
                mix[level] = mix.get(level, 0) + 1
            found.append(
                DatasetInfo(
                    id=bench.id,
                    name=bench.title,
                    description=bench.description,
                    task_count=bench.task_count or 0,
                    path=file.relative_to(root).as_posix(),
                    file=file,
                    difficulties=mix,
                )
            )
    return found, problems


def find_dataset(directory: str | os.PathLike[str], ref: str) -> Path:
    """The dataset file that ``ref`` names in ``directory``: its path relative to the
    directory (with or without the suffix), else its file stem (as CodeForge's API
    addresses datasets), else its YAML ``name`` (as CodeForge lists them).

    ConfigError when nothing matches (listing what is there) or several files do; the
    load error itself when the only file that matches is broken.
    """
    infos, problems = discover_datasets(directory)
    root = Path(directory)

    def by_path(path: str) -> bool:
        return path == ref or path.rsplit(".", 1)[0] == ref

    for label, matches in (
        ("path", [i.file for i in infos if by_path(i.path)]),
        ("file stem", [i.file for i in infos if i.id == ref]),
        ("name", [i.file for i in infos if i.name == ref]),
    ):
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = ", ".join(str(m) for m in matches)
            raise ConfigError(
                f"dataset {ref!r} is ambiguous: it is the {label} of {shown}",
                fix="pass the file's path instead.",
            )
    for file, error in problems:
        relative = file.relative_to(root).as_posix() if file.is_relative_to(root) else str(file)
        if file.stem == ref or by_path(relative):
            raise error
    known = ", ".join(f"{i.id} ({i.name})" for i in infos) or "(none)"
    raise ConfigError(
        f"no dataset {ref!r} in {str(root)!r} (known: {known})",
        fix="pass a dataset file, or a file stem or name from `python -m benchkit datasets list`.",
    )
