"""The typed skillvault bench config: its constants, the dataclasses and its error.

:func:`~benchkit.formats.skillvault._parse.parse_config` produces a :class:`BenchConfig`;
:func:`~benchkit.formats.skillvault._loader.load_config` wraps it with its file and
resolved bundles as a :class:`LoadedBenchConfig`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from benchkit.errors import FormatError

CONFIG_SCHEMA = "skillvault.bench.config.v1"
"""The only config ``schema`` skillvault accepts (and the default when it is left out)."""

REQUIRED_CONDITIONS = ("no_skill", "curated_skill", "self_generated_skill")
"""The conditions every config must define, in the order skillvault checks them."""

FUNCTION_VERIFIERS = ("bundle_file_exists", "bundle_file_contains")
"""The function verifiers a task may name."""

ParseReason = Literal["BENCH_CONFIG_PARSE_ERROR", "BENCH_CONFIG_INVALID"]


class BenchConfigError(FormatError):
    """A skillvault config that cannot be read, does not validate, or names a missing bundle.

    ``message`` is skillvault's own message, word for word; ``reason`` its error code
    (``BENCH_CONFIG_PARSE_ERROR`` or ``BENCH_CONFIG_INVALID``) and ``field`` the field it
    names (``tasks[0].timeout_ms``). The file, line, column, JSON path and fix come on top.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: ParseReason = "BENCH_CONFIG_INVALID",
        field: str | None = None,
        **where: Any,
    ) -> None:
        self.reason = reason
        self.field = field
        super().__init__(message, **where)


@attrs.frozen
class BenchMetadata:
    """Labels recorded with a run (trimmed; None when the config leaves them out)."""

    suite: str | None = None
    model_label: str | None = None
    environment_label: str | None = None


@attrs.frozen
class BenchExecution:
    """``execution``: extra attempts (0..10), the seed (reaches commands only), determinism."""

    retries: int = 0
    seed: int = 0
    deterministic: bool = False


@attrs.frozen
class BenchAdapter:
    """A condition's ``adapter``: ``stub`` points ``self_generated_skill`` at a bundle;
    any other id is recorded and otherwise ignored."""

    id: str
    options: Mapping[str, Any] | None = None


@attrs.frozen
class BenchCondition:
    """One condition as written: its id, ``bundle_path`` and ``adapter``."""

    id: str
    bundle_path: str | None = None
    adapter: BenchAdapter | None = None


@attrs.frozen
class FunctionVerifierConfig:
    """``verifier: {function: bundle_file_exists|bundle_file_contains, args: {...}}``."""

    function: str
    args: Mapping[str, Any] | None = None
    type: Literal["function"] = "function"

    @property
    def label(self) -> str:
        return self.function


@attrs.frozen
class CommandVerifierConfig:
    """``verifier: {command: <shell command>}``."""

    command: str
    type: Literal["command"] = "command"

    @property
    def label(self) -> str:
        return self.command


VerifierConfig = FunctionVerifierConfig | CommandVerifierConfig


@attrs.frozen
class BenchTask:
    """One task: id, domain, timeout in milliseconds and its verifier."""

    id: str
    domain: str
    timeout_ms: int
    verifier: VerifierConfig


@attrs.frozen
class BenchConfig:
    """A validated ``skillvault.bench.config.v1`` document, defaults filled in."""

    schema: str
    metadata: BenchMetadata
    execution: BenchExecution
    conditions: tuple[BenchCondition, ...]
    tasks: tuple[BenchTask, ...]


@attrs.frozen
class LoadedBenchConfig:
    """A config read from ``config_path`` (absolute, as given: symlinks are not resolved).

    ``bundle_paths`` holds each condition's resolved bundle directory (None without one),
    in the order of ``config.conditions``; every one of them existed when it was loaded.
    """

    config_path: str
    config_dir: str
    config: BenchConfig
    bundle_paths: tuple[str | None, ...]
