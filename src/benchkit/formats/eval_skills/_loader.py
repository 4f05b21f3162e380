"""The eval-skills format: detecting a benchmark document and mapping it onto the core model.

:data:`FORMAT` is the formats-registry entry; :func:`load` validates a benchmark against the
shipped JSON Schema and maps each task to a :class:`~benchkit.model.Task` with one evaluator
(see the package docstring and ``docs/formats/eval-skills.md`` for the mapping).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchkit._jsonschema import (
    SchemaValidator,
    did_you_mean,
    inline_refs,
    load_schema,
    make_validator,
    validate,
)
from benchkit.errors import ConfigError
from benchkit.formats._source import Document, JsonPath, read_document, unique_ids
from benchkit.formats.eval_skills._strict_schema import expected_schema
from benchkit.model import Benchmark, EvaluatorSpec, RunOptions, ScoringSpec, Source, Suite, Task

if TYPE_CHECKING:
    from benchkit.registry import Registries

BENCHMARK_FILE = "benchmark.json"
"""The file a benchmark directory holds."""

EVALUATOR_TYPES: Mapping[str, str] = {
    "exact": "exact",
    "exact_match": "exact",
    "contains": "contains",
    "json_schema": "json_schema",
    "schema": "json_schema",
    "regex": "regex",
    "llm_judge": "llm_judge",
}
"""eval-skills evaluator names (with their aliases) → benchkit evaluator types."""

SCORER_TYPES: Mapping[str, str] = {
    "exact": "exact_match",
    "contains": "contains",
    "json_schema": "json_schema",
    "regex": "regex",
    "llm_judge": "llm_judge",
}
"""benchkit evaluator types → the ``scorerType`` eval-skills reports for them."""

RUN_OPTIONS = RunOptions(
    concurrency=4,
    timeout=30.0,
    retry_on=frozenset({"execution_error", "timeout"}),
    backoff_base=1.0,
)
"""eval-skills' run defaults: 4 at once, 30 s per task, and retries (when asked for) of
everything the original retries — failed invocations and timeouts, not wrong answers."""

_FIX_HINT = "see docs/formats/eval-skills.md"
_FORMAT_NAME = "eval-skills"


class EvalSkillsFormat:
    """The ``eval-skills`` entry of the formats registry (see :mod:`benchkit.formats`)."""

    name = _FORMAT_NAME
    #: What sets the conditions of its runs: the file names none (skills come from
    #: the command line). ``benchkit list`` shows it in the conditions column.
    conditions_from = "--skills"

    def __repr__(self) -> str:
        return "<format eval-skills>"

    def detect(self, path: Path, head: Any | None) -> bool:
        return detect(path, head)

    def load(
        self,
        path: Path,
        *,
        registries: Registries | None = None,
        document: Document | None = None,
        **options: Any,
    ) -> Suite:
        if options:
            raise ConfigError(
                f"the eval-skills format takes no options {sorted(options)}",
                fix="load it without keyword options.",
            )
        return load(path, registries=registries, document=document)


FORMAT = EvalSkillsFormat()


def detect(path: Path, head: Any | None) -> bool:
    """True for an eval-skills benchmark: a mapping with a ``tasks`` list whose items carry
    ``inputData`` or ``expectedOutput``, and a ``scoringMethod`` or an ``id`` and
    ``version``. A native file (top-level ``benchkit`` key) is never claimed."""
    if not isinstance(head, dict) or "benchkit" in head:
        return False
    tasks = head.get("tasks")
    if not isinstance(tasks, list):
        return False
    looks_like_tasks = not tasks or any(
        isinstance(t, dict) and ("inputData" in t or "expectedOutput" in t) for t in tasks
    )
    return looks_like_tasks and ("scoringMethod" in head or ("id" in head and "version" in head))


def schema() -> dict[str, Any]:
    """The eval-skills benchmark JSON Schema (Draft 2020-12), as shipped in the package."""
    return load_schema("eval_skills")


@functools.cache
def _validator() -> SchemaValidator:
    full = schema()
    return make_validator(inline_refs(full))


def load(
    path: str | os.PathLike[str],
    *,
    registries: Registries | None = None,
    document: Document | None = None,
) -> Suite:
    """Read an eval-skills benchmark (a ``.json`` file or a directory holding
    ``benchmark.json``) into a :class:`~benchkit.model.Suite` with no conditions.

    ``registries`` are where the mapped evaluator types must be registered (default:
    :func:`benchkit.registry.default_registries`). The suite's run options are
    :data:`RUN_OPTIONS`, eval-skills' defaults.
    """
    if registries is None:
        from benchkit.registry import default_registries

        registries = default_registries()
    given = Path(path)
    if given.is_dir():
        given = given / BENCHMARK_FILE
    doc = document if document is not None else read_document(given)
    validate(doc, _validator(), fix_hint=_FIX_HINT)
    data: dict[str, Any] = doc.data
    tasks = _tasks(doc, data["tasks"], registries)
    metadata = dict(data.get("metadata", {}))
    if "maxLatencyMs" in data:
        metadata["maxLatencyMs"] = data["maxLatencyMs"]
    file = given.resolve()
    benchmark = Benchmark(
        id=data["id"],
        name=data["name"],
        version=data["version"],
        tasks=tasks,
        domain=data["domain"],
        scoring=ScoringSpec(data["scoringMethod"]),
        metadata=metadata,
        source=Source(path=str(file), format=_FORMAT_NAME),
    )
    return Suite(benchmark, (), RUN_OPTIONS, base_dir=file.parent)


def _tasks(doc: Document, items: list[Any], registries: Registries) -> tuple[Task, ...]:
    unique_ids(doc, items)
    return tuple(_task(doc, item, ("tasks", index), registries) for index, item in enumerate(items))


#: The keys an eval-skills output object is unwrapped from, first present wins.
EVAL_SKILLS_UNWRAP = ("result", "output", "answer")


def _task(doc: Document, item: dict[str, Any], path: JsonPath, registries: Registries) -> Task:
    expected: dict[str, Any] = item["expectedOutput"]
    evaluator: dict[str, Any] = item.get("evaluator", {})
    kind = _evaluator_type(doc, item, path, registries)
    options = _options(doc, kind, expected, evaluator, path)
    if kind in ("exact", "numeric"):  # eval-skills' rule: judge {"result": ...} by its value
        options = {"unwrap": list(EVAL_SKILLS_UNWRAP), **options}
    metadata: dict[str, Any] = {"scorerType": SCORER_TYPES[kind]}
    if "weight" in item:
        metadata["weight"] = item["weight"]
    timeout = item.get("timeoutMs")
    return Task(
        id=item["id"],
        input=item["inputData"],
        expected=expected.get("value"),
        evaluators=(EvaluatorSpec(kind, options),),
        timeout=None if timeout is None else timeout / 1000.0,
        weight=float(item.get("weight", 1.0)),
        tags=tuple(item.get("tags", ())),
        description=item.get("description", item.get("prompt")),
        metadata=metadata,
    )


def _evaluator_type(
    doc: Document, item: dict[str, Any], path: JsonPath, registries: Registries
) -> str:
    """The benchkit evaluator type for a task: ``evaluator.type``, else ``expectedOutput.type``,
    else ``exact`` (the original's ``--evaluator`` default)."""
    evaluator = item.get("evaluator", {})
    expected = item["expectedOutput"]
    if "type" in evaluator:
        name, where = evaluator["type"], (*path, "evaluator", "type")
    elif "type" in expected:
        name, where = expected["type"], (*path, "expectedOutput", "type")
    else:
        return "exact"
    if name == "custom":
        raise doc.error(
            "custom scorers are JavaScript modules, which benchkit cannot run",
            where,
            fix="use exact, contains, regex, json_schema or llm_judge, or register a Python "
            "evaluator with @benchkit.evaluator(...) and load the benchmark in code.",
        )
    kind = EVALUATOR_TYPES.get(name)
    if kind is None:
        close = did_you_mean(name, EVALUATOR_TYPES)
        known = ", ".join(EVALUATOR_TYPES)
        raise doc.error(
            f"unknown evaluator type `{name}`",
            where,
            fix=f"did you mean `{close}`?" if close else f"use one of: {known}.",
        )
    if kind not in registries.evaluators:
        raise doc.error(
            f"evaluator `{name}` needs the `{kind}` evaluator, which is not registered",
            where,
            fix=f"install or register a `{kind}` evaluator (@benchkit.evaluator({kind!r})).",
        )
    return kind


def _options(
    doc: Document,
    kind: str,
    expected: dict[str, Any],
    evaluator: dict[str, Any],
    path: JsonPath,
) -> dict[str, Any]:
    """The evaluator options that carry ``expectedOutput`` and ``evaluator`` settings."""
    case = evaluator.get("caseSensitive")
    options: dict[str, Any] = {}
    if kind == "exact":
        if "value" not in expected:
            raise doc.error(
                "an exact task needs `expectedOutput.value`",
                (*path, "expectedOutput"),
                fix="add the expected answer as `value`.",
            )
        if expected["value"] is None:  # task.expected None means "no expectation"
            options["value"] = None
        if case is not None:
            options["case_sensitive"] = case
    elif kind == "contains":
        options["keywords"] = list(expected.get("keywords", ()))
        if case is not None:
            options["case_sensitive"] = case
    elif kind == "regex":
        options["patterns"] = list(expected.get("patterns", ()))
        options["on_invalid"] = "miss"
        if case is False:
            options["flags"] = "i"
    elif kind == "json_schema":
        options["schema"] = expected_schema(doc, expected, path)
        if "$schema" not in options["schema"]:
            options["draft"] = "draft7"
    elif kind == "llm_judge":
        if "judgePrompt" in expected:
            options["judge_prompt"] = expected["judgePrompt"]
        if "value" in expected:
            options["reference"] = expected["value"]
    return options
