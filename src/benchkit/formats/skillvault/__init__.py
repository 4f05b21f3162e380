"""skillvault bench v0: ``skillvault.bench.config.v1`` files as benchkit suites.

skillvault compares a task suite under three conditions — ``no_skill``, ``curated_skill``
and ``self_generated_skill`` — each a bundle directory that function verifiers
(``bundle_file_exists``, ``bundle_file_contains``) or shell-command verifiers check. This
module reads its config files exactly as skillvault does and maps them onto the core
model; :mod:`benchkit.formats.skillvault.report` turns a run back into skillvault's byte-exact
``skillvault.bench.run.v1`` / ``skillvault.bench.report.v1`` JSON and tables. The full
reference is ``docs/formats/skillvault.md``.

    >>> import benchkit
    >>> suite = benchkit.load("benchmarks/skillvault-bench-v0/bench.yaml")  # doctest: +SKIP
    >>> [c.id for c in suite.conditions]                                     # doctest: +SKIP
    ['no_skill', 'curated_skill', 'self_generated_skill']

Reading follows skillvault to the letter, because its messages and defaults are part of
the contract:

* the file is YAML 1.2 (core schema, as the npm ``yaml`` package reads it: ``yes`` and
  ``1_000`` are strings, ``010`` is 10, ``1e3`` is 1000) or JSON;
* checks run in skillvault's order — the root, ``schema``, ``metadata``, ``execution``,
  ``conditions``, ``tasks`` — and the first failure is raised as a
  :class:`BenchConfigError` whose message is skillvault's own (``duplicate task id: t``),
  with the file, line, column and JSON path added around it, and a fix;
* bundles resolve against the config file's directory (the ``stub`` adapter's
  ``options.bundle_path`` only for ``self_generated_skill``) and must exist.

The mapping onto the core model: every condition plays through the ``bundle`` provider
(its answer is its bundle directory), every task carries one verifier spec and its
``timeout_ms``, and the run options are skillvault's — sequential, ``retries`` extra
attempts on any failure without backoff, its ``seed`` and ``deterministic`` flag.
"""

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr

if TYPE_CHECKING:
    from benchkit.formats.skillvault._git import git_commit
    from benchkit.formats.skillvault._loader import (
        FORMAT,
        SkillvaultFormat,
        bundle_path,
        detect,
        load,
        load_config,
        to_suite,
    )
    from benchkit.formats.skillvault._model import (
        CONFIG_SCHEMA,
        FUNCTION_VERIFIERS,
        REQUIRED_CONDITIONS,
        BenchAdapter,
        BenchCondition,
        BenchConfig,
        BenchConfigError,
        BenchExecution,
        BenchMetadata,
        BenchTask,
        CommandVerifierConfig,
        FunctionVerifierConfig,
        LoadedBenchConfig,
    )
    from benchkit.formats.skillvault._parse import parse_config

__all__ = [
    "CONFIG_SCHEMA",
    "FORMAT",
    "FUNCTION_VERIFIERS",
    "REQUIRED_CONDITIONS",
    "BenchAdapter",
    "BenchCondition",
    "BenchConfig",
    "BenchConfigError",
    "BenchExecution",
    "BenchMetadata",
    "BenchTask",
    "CommandVerifierConfig",
    "FunctionVerifierConfig",
    "LoadedBenchConfig",
    "SkillvaultFormat",
    "bundle_path",
    "detect",
    "git_commit",
    "load",
    "load_config",
    "parse_config",
    "to_suite",
]

#: Everything above, imported on first use: listing the tools (``--help``) imports
#: this package, and nothing of the format until it is used (#41).
_LAZY = {
    "BenchAdapter": "benchkit.formats.skillvault._model",
    "BenchCondition": "benchkit.formats.skillvault._model",
    "BenchConfig": "benchkit.formats.skillvault._model",
    "BenchConfigError": "benchkit.formats.skillvault._model",
    "BenchExecution": "benchkit.formats.skillvault._model",
    "BenchMetadata": "benchkit.formats.skillvault._model",
    "BenchTask": "benchkit.formats.skillvault._model",
    "CONFIG_SCHEMA": "benchkit.formats.skillvault._model",
    "CommandVerifierConfig": "benchkit.formats.skillvault._model",
    "FORMAT": "benchkit.formats.skillvault._loader",
    "FUNCTION_VERIFIERS": "benchkit.formats.skillvault._model",
    "FunctionVerifierConfig": "benchkit.formats.skillvault._model",
    "LoadedBenchConfig": "benchkit.formats.skillvault._model",
    "REQUIRED_CONDITIONS": "benchkit.formats.skillvault._model",
    "SkillvaultFormat": "benchkit.formats.skillvault._loader",
    "bundle_path": "benchkit.formats.skillvault._loader",
    "detect": "benchkit.formats.skillvault._loader",
    "git_commit": "benchkit.formats.skillvault._git",
    "load": "benchkit.formats.skillvault._loader",
    "load_config": "benchkit.formats.skillvault._loader",
    "parse_config": "benchkit.formats.skillvault._parse",
    "to_suite": "benchkit.formats.skillvault._loader",
}

# Only at run time: a type checker sees the names imported under TYPE_CHECKING above.
if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _LAZY)
