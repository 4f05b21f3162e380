"""The skillvault format: reading a config file, resolving its bundles, mapping it onto a Suite.

:func:`load_config` reads and validates a file as skillvault does; :func:`to_suite` maps the
result onto the core model; :data:`FORMAT` is the formats-registry entry.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from benchkit._js import trim
from benchkit.errors import ConfigError, FormatError
from benchkit.formats._source import JsonPath, parse_document, read_regular
from benchkit.formats.skillvault._model import (
    BenchCondition,
    BenchConfig,
    BenchConfigError,
    BenchTask,
    CommandVerifierConfig,
    LoadedBenchConfig,
)
from benchkit.formats.skillvault._parse import ConfigChecker, parse_config
from benchkit.formats.skillvault._yaml import core_yaml
from benchkit.model import (
    Benchmark,
    Condition,
    ProviderSpec,
    RunOptions,
    Source,
    Suite,
    Task,
    VerifierSpec,
)


def _resolve(config_dir: str, path: str) -> str:
    """Node's ``path.resolve(config_dir, path)``: joined and normalised, symlinks kept."""
    return os.path.normpath(os.path.join(config_dir, path))


def bundle_path(condition: BenchCondition, config_dir: str) -> str | None:
    """The condition's bundle directory, resolved as skillvault resolves it.

    ``bundle_path`` wins; otherwise only ``self_generated_skill`` with the ``stub`` adapter
    takes ``adapter.options.bundle_path``. Any other adapter is informational.
    """
    if condition.bundle_path:
        return _resolve(config_dir, condition.bundle_path)
    adapter = condition.adapter
    if condition.id == "self_generated_skill" and adapter is not None and adapter.id == "stub":
        configured = (adapter.options or {}).get("bundle_path")
        if isinstance(configured, str) and trim(configured):
            return _resolve(config_dir, configured)
    return None


def _bundle_json_path(config: BenchConfig, index: int) -> JsonPath:
    condition = config.conditions[index]
    if condition.bundle_path:
        return ("conditions", index, "bundle_path")
    return ("conditions", index, "adapter", "options", "bundle_path")


def _read_text(path: Path, shown: str) -> str:
    """The file's text as Node reads it (bad UTF-8 bytes replaced), without a BOM."""
    try:
        raw = read_regular(path)
    except OSError as exc:
        raise BenchConfigError(
            f"Failed to read benchmark config: {shown}",
            reason="BENCH_CONFIG_PARSE_ERROR",
            file=path,
            fix=f"{exc.strerror or exc}: check the path (relative paths start at the "
            "current directory)",
        ) from None
    text = raw.decode("utf-8", errors="replace")
    return text[1:] if text.startswith("\ufeff") else text


def load_config(path: str | os.PathLike[str]) -> LoadedBenchConfig:
    """Read, validate and resolve a ``skillvault.bench.config.v1`` file (YAML or JSON).

    Bundles are resolved against the file's directory and must exist (files or
    directories, as skillvault's ``fs.access`` check allows). Raises
    :class:`BenchConfigError` for an unreadable file, a parse error ("Failed to parse
    benchmark config", with the parser's own explanation as the fix), an invalid config
    or a missing bundle — everything skillvault reports before a run starts.
    """
    config_path = os.path.abspath(os.fspath(path))
    file = Path(path)
    text = _read_text(file, config_path)
    kind: Literal["yaml", "json"] = "json" if file.suffix.lower() == ".json" else "yaml"
    try:
        doc = parse_document(text, path=file, kind=kind)
    except FormatError as exc:
        raise BenchConfigError(
            "Failed to parse benchmark config",
            reason="BENCH_CONFIG_PARSE_ERROR",
            file=file,
            line=exc.line,
            column=exc.column,
            json_path=exc.json_path,
            fix=f"{exc.message}: {exc.fix or 'fix the syntax'}",
        ) from None
    data = core_yaml(doc, text) if kind == "yaml" else doc.data
    config = parse_config(data, document=doc)
    config_dir = os.path.dirname(config_path)
    bundles: list[str | None] = []
    for index, condition in enumerate(config.conditions):
        bundle = bundle_path(condition, config_dir)
        if bundle is not None and not _exists(bundle):
            field = f"conditions.{condition.id}.bundle_path"
            raise ConfigChecker(doc).fail(
                f"{field} does not exist: {bundle}",
                _bundle_json_path(config, index),
                field=field,
                fix="create the bundle directory, or fix the path (it is relative to the "
                "config file's directory)",
            )
        bundles.append(bundle)
    return LoadedBenchConfig(config_path, config_dir, config, tuple(bundles))


def _exists(path: str) -> bool:
    """``fs.access(path)``: anything that exists, a file or a directory."""
    try:
        return os.access(path, os.F_OK)
    except (OSError, ValueError):
        return False


def _verifier_spec(task: BenchTask) -> VerifierSpec:
    verifier = task.verifier
    if isinstance(verifier, CommandVerifierConfig):
        return VerifierSpec("command", {"command": verifier.command, "timeout_ms": task.timeout_ms})
    args = verifier.args or {}
    keys = ("path", "contains") if verifier.function == "bundle_file_contains" else ("path",)
    return VerifierSpec(verifier.function, {k: args[k] for k in keys if k in args})


def _tasks(config: BenchConfig) -> Iterator[Task]:
    for task in config.tasks:
        yield Task(
            id=task.id,
            domain=task.domain,
            timeout=task.timeout_ms / 1000,
            verifiers=(_verifier_spec(task),),
            metadata={
                "timeout_ms": task.timeout_ms,
                "verifier": {"type": task.verifier.type, "label": task.verifier.label},
            },
        )


def to_suite(
    loaded: LoadedBenchConfig, *, deterministic: bool | None = None, concurrency: int = 1
) -> Suite:
    """The :class:`~benchkit.model.Suite` that runs ``loaded`` as skillvault would.

    Conditions play through the ``bundle`` provider; each task has one verifier and its
    ``timeout_ms``; the options are ``retries`` extra attempts on any non-pass, no backoff,
    the config's seed, and ``deterministic`` unless overridden here. skillvault runs one
    cell at a time; ``concurrency`` may raise that (results keep config order anyway).
    """
    config = loaded.config
    metadata = config.metadata
    conditions = tuple(
        Condition(
            id=condition.id,
            provider=ProviderSpec("bundle"),
            bundle=Path(bundle) if bundle is not None else None,
            options={"adapter_id": condition.adapter.id} if condition.adapter else {},
        )
        for condition, bundle in zip(config.conditions, loaded.bundle_paths, strict=True)
    )
    labels = {
        k: v
        for k, v in (
            ("model_label", metadata.model_label),
            ("environment_label", metadata.environment_label),
        )
        if v is not None
    }
    benchmark = Benchmark(
        id=metadata.suite or os.path.basename(loaded.config_dir) or "skillvault",
        name=metadata.suite,
        tasks=tuple(_tasks(config)),
        metadata=labels,
        source=Source(path=loaded.config_path, format="skillvault"),
    )
    execution = config.execution
    options = RunOptions(
        concurrency=concurrency,
        retries=execution.retries,
        retry_on=frozenset({"any"}),
        backoff_base=0.0,
        seed=execution.seed,
        deterministic=execution.deterministic if deterministic is None else deterministic,
    )
    return Suite(benchmark, conditions, options, base_dir=Path(loaded.config_dir))


def detect(path: Path, head: Any | None) -> bool:
    """True for a mapping whose ``schema`` names a skillvault bench config, or — with no
    ``schema`` (skillvault's default) — that has ``conditions`` and ``tasks`` lists with
    ``verifier`` entries. Never true for a native file (a ``benchkit`` key)."""
    if not isinstance(head, dict) or "benchkit" in head:
        return False
    schema = head.get("schema")
    if isinstance(schema, str):
        return trim(schema).startswith("skillvault.bench.config")
    if "schema" in head:
        return False
    tasks = head.get("tasks")
    return (
        isinstance(head.get("conditions"), list)
        and isinstance(tasks, list)
        and any(isinstance(task, dict) and "verifier" in task for task in tasks)
    )


def load(
    path: str | os.PathLike[str],
    *,
    deterministic: bool | None = None,
    concurrency: int = 1,
) -> Suite:
    """Load a skillvault config as a :class:`~benchkit.model.Suite` (see :func:`to_suite`)."""
    return to_suite(load_config(path), deterministic=deterministic, concurrency=concurrency)


class SkillvaultFormat:
    """The ``skillvault`` entry of the formats registry (see :mod:`benchkit.formats`)."""

    name = "skillvault"

    def __repr__(self) -> str:
        return "<format skillvault>"

    def detect(self, path: Path, head: Any | None) -> bool:
        return detect(path, head)

    def load(
        self,
        path: Path,
        *,
        deterministic: bool | None = None,
        concurrency: int = 1,
        **options: Any,
    ) -> Suite:
        if options:
            raise ConfigError(
                f"the skillvault format takes no options {sorted(options)}",
                fix="load it without keyword options.",
            )
        return load(path, deterministic=deterministic, concurrency=concurrency)


FORMAT = SkillvaultFormat()
