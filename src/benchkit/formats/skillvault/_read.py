"""skillvault run documents read back: from ``bench run`` JSON or a run-store export.

:func:`parse_run` checks what skillvault's ``parseBenchRunOutput`` checks, with its
messages; :func:`run_from_export` rebuilds the run document of an exported benchkit run.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

from benchkit._js import as_doubles
from benchkit.formats.skillvault._documents import RUN_CONTRACT, BenchRunError, build_run
from benchkit.formats.skillvault._git import git_commit
from benchkit.formats.skillvault._loader import load_config


def _no_constant(name: str) -> Any:
    raise ValueError(f"Unexpected token {name!r} (JSON has no NaN or Infinity)")


def parse_run(text: str, *, source: str | Path | None = None) -> dict[str, Any]:
    """A run document from JSON text, checked as skillvault's ``parseBenchRunOutput`` does.

    Only the shape skillvault relies on is checked: a JSON object whose ``contract_id`` is
    ``skillvault.bench.run.v1`` and whose ``conditions``, ``tasks`` and ``results`` are
    lists. Raises :class:`BenchRunError` with skillvault's messages; ``source`` names the
    file in the error.
    """
    fix = "pass the JSON written by `bench run` (--format json, or --out in table mode)"
    try:
        parsed = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise BenchRunError(
            f"Failed to parse benchmark result JSON: {exc}", file=source, fix=fix
        ) from None
    if not isinstance(parsed, dict):
        raise BenchRunError("Benchmark result JSON must be an object", file=source, fix=fix)
    if "contract_id" not in parsed and isinstance(parsed.get("info"), dict) and "cells" in parsed:
        parsed = run_from_export(text, source=source)
    if parsed.get("contract_id") != RUN_CONTRACT:
        raise BenchRunError(
            "Unsupported benchmark result contract_id",
            file=source,
            json_path="$.contract_id",
            fix=f'{fix}; its contract_id is "{RUN_CONTRACT}"',
        )
    if not all(isinstance(parsed.get(key), list) for key in ("conditions", "tasks", "results")):
        raise BenchRunError(
            "Benchmark result JSON is missing required arrays (conditions/tasks/results)",
            file=source,
            fix=fix,
        )
    run: dict[str, Any] = as_doubles(parsed)
    return run


def run_from_export(text: str, *, source: str | Path | None = None) -> dict[str, Any]:
    """The run document of a skillvault run exported from the run store (``runs export``,
    a :class:`~benchkit.results.RunResult` JSON): its cells, with the config it was run
    from read again for the parts the store does not keep (tasks, bundles, metadata)."""
    from benchkit.results import RunResult

    try:
        result = RunResult.from_json(text)
    except Exception as exc:  # cattrs' errors on a wrong shape
        raise BenchRunError(
            f"Failed to read the exported run: {type(exc).__name__}: {exc}",
            file=source,
            fix="pass the JSON written by `python -m benchkit runs export RUN`",
        ) from None
    info = result.info
    if info.source_format != "skillvault" or info.source_path is None:
        raise BenchRunError(
            f"the exported run {info.run_id!r} is not a skillvault bench run "
            f"(format {info.source_format!r})",
            file=source,
            fix="export a run made from a skillvault bench config",
        )
    loaded = load_config(info.source_path)
    return build_run(loaded, result, git_commit=git_commit(loaded.config_dir))


def read_run(path: str | Path) -> dict[str, Any]:
    """:func:`parse_run` on a file (read as UTF-8, bad bytes replaced, as Node reads it)."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        code = errno.errorcode.get(exc.errno or 0, "EIO")
        reason = (exc.strerror or "cannot read").lower()
        raise BenchRunError(
            f"{code}: {reason}, open '{path}'",
            fix="pass the path of a run JSON written by `bench run`",
        ) from None
    return parse_run(raw.decode("utf-8", errors="replace"), source=file)
