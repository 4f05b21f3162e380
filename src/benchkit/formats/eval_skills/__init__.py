"""eval-skills benchmark files: the JSON that eval-skills' custom-benchmark guide describes.

A benchmark is one JSON document — a flat ``.json`` file, or ``benchmark.json`` in a
directory — and a run names it by path or by its internal ``id`` inside a benchmarks
directory (:func:`resolve`). Loading validates the document against the shipped JSON
Schema (``benchkit/schemas/eval_skills.schema.json``), then maps it onto the core model:

* the benchmark → :class:`~benchkit.model.Benchmark` (``scoringMethod`` → ``scoring``,
  ``maxLatencyMs`` → ``metadata["maxLatencyMs"]`` beside the file's own ``metadata``);
* each task → :class:`~benchkit.model.Task` with ``input = inputData``, ``expected =
  expectedOutput.value``, ``timeout = timeoutMs / 1000`` and one evaluator whose options
  carry the rest of ``expectedOutput`` (keywords, patterns, schema, judge prompt) and
  ``evaluator.caseSensitive``.

The evaluator comes from ``evaluator.type`` (aliases ``exact_match`` and ``schema``), else
``expectedOutput.type``, else ``exact``. An unknown or unsupported type, an ``exact`` task
with no ``value`` and a ``json_schema`` task with no (or an invalid) ``schema`` each raise
a :class:`~benchkit.errors.FormatError` naming the file, line and JSON path — before
anything runs. ``docs/formats/eval-skills.md`` has the full mapping.

    >>> suite = load("benchmarks/coding-easy")                      # doctest: +SKIP
    >>> suite.benchmark.scoring.method, suite.benchmark.task_count   # doctest: +SKIP
    ('mean', 20)

A loaded suite has no conditions: the skills under test come from
:mod:`benchkit.formats.eval_skills.skills` (or ``python -m benchkit eval --skills ...``).
"""

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr

if TYPE_CHECKING:
    from benchkit.formats.eval_skills._loader import (
        BENCHMARK_FILE,
        EVALUATOR_TYPES,
        FORMAT,
        RUN_OPTIONS,
        SCORER_TYPES,
        EvalSkillsFormat,
        detect,
        load,
        schema,
    )
    from benchkit.formats.eval_skills._loader import (
        EVAL_SKILLS_UNWRAP as EVAL_SKILLS_UNWRAP,  # the evaluators test names it
    )
    from benchkit.formats.eval_skills._resolve import find_benchmarks, load_benchmark, resolve

__all__ = [
    "BENCHMARK_FILE",
    "EVALUATOR_TYPES",
    "FORMAT",
    "RUN_OPTIONS",
    "SCORER_TYPES",
    "EvalSkillsFormat",
    "detect",
    "find_benchmarks",
    "load",
    "load_benchmark",
    "resolve",
    "schema",
]

#: Everything above, imported on first use: listing the tools (``--help``) imports
#: this package, and nothing of the format until it is used (#41).
_LAZY = {
    "BENCHMARK_FILE": "benchkit.formats.eval_skills._loader",
    "EVALUATOR_TYPES": "benchkit.formats.eval_skills._loader",
    "EVAL_SKILLS_UNWRAP": "benchkit.formats.eval_skills._loader",
    "EvalSkillsFormat": "benchkit.formats.eval_skills._loader",
    "FORMAT": "benchkit.formats.eval_skills._loader",
    "RUN_OPTIONS": "benchkit.formats.eval_skills._loader",
    "SCORER_TYPES": "benchkit.formats.eval_skills._loader",
    "detect": "benchkit.formats.eval_skills._loader",
    "find_benchmarks": "benchkit.formats.eval_skills._resolve",
    "load": "benchkit.formats.eval_skills._loader",
    "load_benchmark": "benchkit.formats.eval_skills._resolve",
    "resolve": "benchkit.formats.eval_skills._resolve",
    "schema": "benchkit.formats.eval_skills._loader",
}

# Only at run time: a type checker sees the names imported under TYPE_CHECKING above.
if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _LAZY)
