"""CodeForge benchmark datasets: YAML prompts with expected outputs, tools and context.

A dataset is one YAML file (CodeForge keeps them in ``configs/benchmarks/``)::

    name: Basic Coding
    description: Fundamental coding tasks.
    tasks:
      - id: basic-001
        name: FizzBuzz implementation
        input: |
          Write a Python function `fizzbuzz(n)` ...
        expected_output: |
          def fizzbuzz(n): ...
        difficulty: easy                 # easy | medium | hard (default medium)
        expected_tools: [{name: read_file, args: '{"path": "src/main.py"}'}]
        context: ["a retrieval passage"]

:func:`load` validates the file against ``benchkit/schemas/codeforge.schema.json`` and
maps it onto the core model: the file stem is the benchmark id, ``name`` its name; each
task becomes a :class:`~benchkit.model.Task` (``input``, ``expected_output`` →
``expected``, ``expected_tools`` → ``expected_tool_calls``, ``context``, ``difficulty``;
other keys are kept in ``metadata``). Every mistake is a
:class:`~benchkit.errors.FormatError` naming the file, line, column and JSON path.

:func:`codeforge_suite` builds the runnable suite — the dataset against a chat model,
scored by CodeForge's metrics (see :mod:`benchkit.formats.codeforge._metrics`) — and
:func:`summary` / :func:`export_results` read its result in CodeForge's terms.
:func:`discover_datasets` and :func:`find_dataset` find datasets in a directory by file
stem or by name. docs/formats/codeforge.md is the reference.

    >>> suite = codeforge_suite("basic-coding", model="gpt-4o-mini",
    ...                         metrics=["correctness"])               # doctest: +SKIP
    >>> result = benchkit.run(suite)                                   # doctest: +SKIP
    >>> summary(result).summary_scores()                               # doctest: +SKIP
    {'correctness': 0.74}
"""

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr

if TYPE_CHECKING:
    from benchkit.formats.codeforge._datasets import (
        CONFIG_FILE,
        DATASETS_DIR_ENV,
        DEFAULT_DATASETS_DIR,
        DatasetInfo,
        configured_datasets_dir,
        discover_datasets,
        find_dataset,
        resolve_datasets_dir,
    )
    from benchkit.formats.codeforge._export import export_results, write_results
    from benchkit.formats.codeforge._loader import (
        DIFFICULTIES,
        FORMAT,
        CodeForgeFormat,
        detect,
        load,
        schema,
    )
    from benchkit.formats.codeforge._suite import (
        API_KEY_ENV,
        BASE_URL_ENV,
        METRICS,
        TESTS_METRIC,
        codeforge_suite,
    )
    from benchkit.formats.codeforge._summary import MetricSummary, Summary, summary

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "CONFIG_FILE",
    "DATASETS_DIR_ENV",
    "DEFAULT_DATASETS_DIR",
    "DIFFICULTIES",
    "FORMAT",
    "METRICS",
    "TESTS_METRIC",
    "CodeForgeFormat",
    "DatasetInfo",
    "MetricSummary",
    "Summary",
    "codeforge_suite",
    "configured_datasets_dir",
    "detect",
    "discover_datasets",
    "export_results",
    "find_dataset",
    "load",
    "resolve_datasets_dir",
    "schema",
    "summary",
    "write_results",
]

#: Everything above, imported on first use: listing the tools (``--help``) imports
#: this package, and nothing of the format until it is used (#41).
_LAZY = {
    "API_KEY_ENV": "benchkit.formats.codeforge._suite",
    "BASE_URL_ENV": "benchkit.formats.codeforge._suite",
    "CONFIG_FILE": "benchkit.formats.codeforge._datasets",
    "CodeForgeFormat": "benchkit.formats.codeforge._loader",
    "DATASETS_DIR_ENV": "benchkit.formats.codeforge._datasets",
    "DEFAULT_DATASETS_DIR": "benchkit.formats.codeforge._datasets",
    "DIFFICULTIES": "benchkit.formats.codeforge._loader",
    "DatasetInfo": "benchkit.formats.codeforge._datasets",
    "FORMAT": "benchkit.formats.codeforge._loader",
    "METRICS": "benchkit.formats.codeforge._suite",
    "TESTS_METRIC": "benchkit.formats.codeforge._suite",
    "MetricSummary": "benchkit.formats.codeforge._summary",
    "Summary": "benchkit.formats.codeforge._summary",
    "codeforge_suite": "benchkit.formats.codeforge._suite",
    "configured_datasets_dir": "benchkit.formats.codeforge._datasets",
    "detect": "benchkit.formats.codeforge._loader",
    "discover_datasets": "benchkit.formats.codeforge._datasets",
    "export_results": "benchkit.formats.codeforge._export",
    "find_dataset": "benchkit.formats.codeforge._datasets",
    "load": "benchkit.formats.codeforge._loader",
    "resolve_datasets_dir": "benchkit.formats.codeforge._datasets",
    "schema": "benchkit.formats.codeforge._loader",
    "summary": "benchkit.formats.codeforge._summary",
    "write_results": "benchkit.formats.codeforge._export",
}

# Only at run time: a type checker sees the names imported under TYPE_CHECKING above.
if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _LAZY)
