"""Writing a native file: the model as plain data (:func:`dump`), written atomically as
JSON or YAML (:func:`write`), lazy tasks streamed to a JSONL file beside it."""

from __future__ import annotations

import functools
import io
import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from benchkit.errors import ConfigError
from benchkit.formats.native._convert import (
    BENCHMARK_KEYS,
    FORMAT_VERSION,
    JSONL_SUFFIXES,
    converter,
    json_ready,
)
from benchkit.model import (
    Benchmark,
    Condition,
    ProviderSpec,
    RunOptions,
    ScoringSpec,
    Suite,
)

__all__ = ["dump", "write"]


def dump(
    obj: Benchmark | Suite,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    tasks_file: str | None = None,
) -> dict[str, Any]:
    """The native document for ``obj`` as plain data (what :func:`write` serialises).

    Fields that hold their default are left out. Tasks are written inline when they are
    a tuple; with ``tasks_file`` the document refers to that file instead (and lazy tasks
    without it are left out — :func:`write` streams them to a file for you). Bundle paths
    under ``base_dir`` are written relative to it. Raises :class:`ConfigError` for what a
    file cannot hold: a ready provider object, NaN, non-JSON values.
    """
    conv = converter()
    suite = obj if isinstance(obj, Suite) else None
    bench = obj.benchmark if isinstance(obj, Suite) else obj
    out: dict[str, Any] = {"benchkit": FORMAT_VERSION, "id": bench.id}
    for field in ("name", "domain", "description", "timeout"):
        value = getattr(bench, field)
        if value is not None:
            out[field] = value
    if bench.version != "0":
        out["version"] = bench.version
    if bench.scoring != ScoringSpec():
        out["scoring"] = conv.unstructure(bench.scoring)
    if bench.reproduces is not None:
        out["reproduces"] = conv.unstructure(bench.reproduces)
    for field in ("evaluators", "verifiers"):
        specs = getattr(bench, field)
        if specs:
            out[field] = [conv.unstructure(s) for s in specs]
    if bench.metadata:
        out["metadata"] = bench.metadata
    if suite is not None:
        if suite.conditions:
            base = Path(base_dir).resolve() if base_dir is not None else None
            out["conditions"] = [_dump_condition(c, base) for c in suite.conditions]
        if suite.options != RunOptions():
            out["run"] = conv.unstructure(suite.options)
    if tasks_file is not None:
        out["tasks_file"] = tasks_file
    elif isinstance(bench.tasks, tuple):
        out["tasks"] = [conv.unstructure(t) for t in bench.tasks]
    ordered = {k: out[k] for k in _ORDER if k in out}
    result: dict[str, Any] = json_ready(ordered)
    return result


_ORDER = ("benchkit", *BENCHMARK_KEYS, "conditions", "run", "tasks", "tasks_file")


def _dump_condition(cond: Condition, base: Path | None) -> dict[str, Any]:
    if not isinstance(cond.provider, ProviderSpec):
        raise ConfigError(
            f"condition {cond.id!r} holds a provider object, which a file cannot describe",
            fix="give the condition a ProviderSpec(type, options) instead.",
        )
    out: dict[str, Any] = {"id": cond.id}
    if cond.label is not None:
        out["label"] = cond.label
    out["provider"] = converter().unstructure(cond.provider)
    if cond.bundle is not None:
        out["bundle"] = _relative(cond.bundle, base)
    if cond.concurrency is not None:
        out["concurrency"] = cond.concurrency
    if cond.options:
        out["options"] = cond.options
    return out


def _relative(path: Path, base: Path | None) -> str:
    if base is not None and path.is_absolute():
        normal = Path(os.path.normpath(path))
        if normal.is_relative_to(base):
            return normal.relative_to(base).as_posix() or "."
    return path.as_posix()


def write(
    obj: Benchmark | Suite, path: str | os.PathLike[str], *, tasks_file: str | None = None
) -> Path:
    """Write ``obj`` as a native file: JSON for ``.json``, YAML otherwise. Returns the path.

    Tasks go inline unless ``tasks_file`` (a ``.jsonl`` name relative to ``path``) is
    given or the tasks are lazy — lazy tasks stream to ``<stem>.tasks.jsonl`` beside the
    file unless ``tasks_file`` says where. Each file is written to a temporary name and
    renamed into place, so a file is never left half-written — and rewriting a benchmark
    whose lazy tasks stream from the very file being replaced is safe.
    """
    target = Path(path)
    bench = obj.benchmark if isinstance(obj, Suite) else obj
    if tasks_file is None and not isinstance(bench.tasks, tuple):
        tasks_file = f"{target.stem}.tasks.jsonl"
    if tasks_file is not None:
        if Path(tasks_file).suffix.lower() not in JSONL_SUFFIXES:
            raise ConfigError(
                f"tasks_file {tasks_file!r} must be a .jsonl file", fix="name it *.jsonl."
            )
        conv = converter()

        def write_tasks(out: IO[str]) -> None:
            for task in bench.iter_tasks():
                line = json.dumps(json_ready(conv.unstructure(task)), ensure_ascii=False)
                out.write(line + "\n")

        _replace(target.parent / tasks_file, write_tasks)
    data = dump(obj, base_dir=target.parent, tasks_file=tasks_file)
    if target.suffix.lower() == ".json":
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    else:
        text = _yaml_text(data)
    _replace(target, lambda out: out.write(text))
    return target


def _replace(path: Path, fill: Callable[[IO[str]], object]) -> None:
    """Write ``path`` through a new temporary file beside it, then rename it into place."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with temporary.open("x", encoding="utf-8", newline="\n") as out:  # honours umask
            fill(out)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _yaml_text(data: Any) -> str:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt", pure=True)
    yaml.Representer = _yaml_representer()
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    return buffer.getvalue()


_LINE_BREAKS = ("\x85", "\u2028", "\u2029")


@functools.cache
def _yaml_representer() -> Any:
    """ruamel's round-trip representer, but strings holding a Unicode line break (NEL,
    LS, PS) are double-quoted: in other styles ruamel folds them into spaces."""
    from ruamel.yaml.representer import RoundTripRepresenter

    class _Representer(RoundTripRepresenter):
        pass

    def represent_str(representer: Any, value: str) -> Any:
        if any(c in value for c in _LINE_BREAKS):
            return representer.represent_scalar("tag:yaml.org,2002:str", value, style='"')
        return RoundTripRepresenter.represent_str(representer, value)

    # add_representer copies the table onto the subclass; ruamel's own stays untouched.
    _Representer.add_representer(str, represent_str)
    return _Representer
