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

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchkit import _builtins
from benchkit._jsonschema import (
    SchemaValidator,
    did_you_mean,
    inline_refs,
    load_schema,
    make_validator,
    validate,
)
from benchkit.errors import ConfigError, FormatError
from benchkit.formats._source import (
    Document,
    JsonPath,
    read_document,
    read_regular,
    unique_ids,
)
from benchkit.model import (
    Benchmark,
    EvaluatorSpec,
    RunOptions,
    ScoringSpec,
    Source,
    Suite,
    Task,
)

if TYPE_CHECKING:
    from benchkit.registry import Registries

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


# --------------------------------------------------------------------------- loading


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
        options["schema"] = _json_schema(doc, expected, path)
        if "$schema" not in options["schema"]:
            options["draft"] = "draft7"
    elif kind == "llm_judge":
        if "judgePrompt" in expected:
            options["judge_prompt"] = expected["judgePrompt"]
        if "value" in expected:
            options["reference"] = expected["value"]
    return options


def _json_schema(doc: Document, expected: dict[str, Any], path: JsonPath) -> dict[str, Any]:
    """``expectedOutput.schema``, checked against its draft's meta-schema (draft-07 unless
    its ``$schema`` names another), so a broken schema fails the load, not the run."""
    where: JsonPath = (*path, "expectedOutput", "schema")
    if "schema" not in expected:
        raise doc.error(
            "a json_schema task needs `expectedOutput.schema`",
            (*path, "expectedOutput"),
            fix="add the JSON Schema the output must match as `schema`.",
        )
    value: dict[str, Any] = expected["schema"]
    import jsonschema

    cls = jsonschema.validators.validator_for(value, default=jsonschema.Draft7Validator)
    try:
        cls.check_schema(value)
    except jsonschema.SchemaError as exc:
        raise doc.error(
            f"invalid JSON Schema: {exc.message}",
            (*where, *exc.absolute_path),
            fix="check the schema against its draft (draft-07 unless `$schema` says otherwise).",
        ) from exc
    _strict(doc, value, where)
    return value


#: The keywords Ajv 8 (the original's validator) knows for a draft-07 schema: the draft's
#: own, its metadata, and Ajv's ``nullable`` / ``$defs``. In strict mode, which the
#: original uses, any other keyword makes the schema fail to compile.
_AJV_KEYWORDS = frozenset(
    [
        "$id",
        "$schema",
        "$ref",
        "$comment",
        "$defs",
        "definitions",
        "title",
        "description",
        "default",
        "examples",
        "readOnly",
        "writeOnly",
        "deprecated",
        "type",
        "enum",
        "const",
        "nullable",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "format",
        "contentMediaType",
        "contentEncoding",
        "items",
        "additionalItems",
        "maxItems",
        "minItems",
        "uniqueItems",
        "contains",
        "maxProperties",
        "minProperties",
        "required",
        "properties",
        "patternProperties",
        "additionalProperties",
        "dependencies",
        "propertyNames",
        "if",
        "then",
        "else",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
    ]
)
#: Keywords of the drafts after 7, allowed when ``$schema`` names 2019-09 or 2020-12.
_LATER_KEYWORDS = frozenset(
    [
        "$anchor",
        "$dynamicRef",
        "$dynamicAnchor",
        "$recursiveRef",
        "$recursiveAnchor",
        "$vocabulary",
        "prefixItems",
        "unevaluatedItems",
        "unevaluatedProperties",
        "dependentSchemas",
        "dependentRequired",
        "maxContains",
        "minContains",
        "contentSchema",
    ]
)
#: Formats ajv-formats adds (strict mode refuses any other).
_AJV_FORMATS = frozenset(
    [
        "date",
        "time",
        "date-time",
        "iso-time",
        "iso-date-time",
        "duration",
        "uri",
        "uri-reference",
        "uri-template",
        "url",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "regex",
        "uuid",
        "json-pointer",
        "json-pointer-uri-fragment",
        "relative-json-pointer",
        "byte",
        "int32",
        "int64",
        "float",
        "double",
        "password",
        "binary",
    ]
)
_ONE_SCHEMA = ("items", "additionalItems", "additionalProperties", "contains", "propertyNames",
               "if", "then", "else", "not", "unevaluatedItems", "unevaluatedProperties",
               "contentSchema")  # fmt: skip
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "items", "prefixItems")
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "$defs", "dependencies",
                "dependentSchemas")  # fmt: skip


def _strict(doc: Document, schema: dict[str, Any], where: JsonPath) -> None:
    """Refuse what Ajv's strict mode refuses: unknown keywords and unknown formats."""
    draft = str(schema.get("$schema", ""))
    known = _AJV_KEYWORDS | (_LATER_KEYWORDS if "2019-09" in draft or "2020-12" in draft else set())
    stack: list[tuple[Any, JsonPath]] = [(schema, where)]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            if key not in known:
                raise doc.error(
                    f"unknown JSON Schema keyword `{key}` (the original compiles schemas in "
                    "Ajv's strict mode, which refuses it)",
                    (*path, key),
                    fix="remove it, or write it as a known keyword (draft-07).",
                )
            if key == "format" and isinstance(value, str) and value not in _AJV_FORMATS:
                raise doc.error(
                    f"unknown format {value!r} (Ajv's strict mode refuses it)",
                    (*path, key),
                    fix=f"use one of: {', '.join(sorted(_AJV_FORMATS))}.",
                )
            if key in _ONE_SCHEMA and isinstance(value, dict):
                stack.append((value, (*path, key)))
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                stack.extend((item, (*path, key, i)) for i, item in enumerate(value))
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                stack.extend((item, (*path, key, name)) for name, item in value.items())


# --------------------------------------------------------------------------- resolving


def find_benchmarks(directory: str | os.PathLike[str]) -> dict[str, list[Path]]:
    """The eval-skills benchmarks in ``directory``, by internal ``id`` (as the original
    registers them): ``*.json``, ``*/benchmark.json`` and ``definitions/*.json``.

    Files that do not parse or are not eval-skills benchmarks are skipped; an id may map
    to several files, which :func:`resolve` reports as ambiguous.
    """
    root = Path(directory)
    found: dict[str, list[Path]] = {}
    if not root.is_dir():
        return found
    candidates = [
        *sorted(root.glob("*.json")),
        *sorted(root.glob(f"*/{BENCHMARK_FILE}")),
        *sorted(root.glob("definitions/*.json")),
    ]
    for file in candidates:
        try:
            head = json.loads(read_regular(file))
        except (OSError, ValueError, FormatError):
            continue
        if detect(file, head) and isinstance(head.get("id"), str):
            found.setdefault(head["id"], []).append(file)
    return found


def resolve(
    benchmark: str | os.PathLike[str], *, benchmarks_dir: str | os.PathLike[str] | None = None
) -> Path:
    """The benchmark file that ``benchmark`` names: an id registered in ``benchmarks_dir``
    (default ``./benchmarks``, else the built-in benchmarks) first, as the original; else
    a ``.json`` file; else a directory holding ``benchmark.json``. ConfigError when it
    names none of these."""
    directory = Path(benchmarks_dir) if benchmarks_dir is not None else _builtins.benchmarks_dir()
    name = os.fspath(benchmark)
    index = find_benchmarks(directory)
    files = index.get(name)
    if files:
        if len(files) > 1:
            shown = ", ".join(str(f) for f in files)
            raise ConfigError(
                f"benchmark id {name!r} is defined by several files: {shown}",
                fix="give each benchmark a unique `id`, or pass the file's path.",
            )
        return files[0]
    path = Path(name)
    if path.is_file():
        return path
    if path.is_dir():
        if (path / BENCHMARK_FILE).is_file():
            return path / BENCHMARK_FILE
        raise ConfigError(
            f"directory {name!r} holds no {BENCHMARK_FILE}",
            fix=f"pass the benchmark file itself, or add {BENCHMARK_FILE} to the directory.",
        )
    known = ", ".join(sorted(index)) or "(none)"
    raise ConfigError(
        f"no benchmark {name!r}: it is not an id in {str(directory)!r} (known: {known}) "
        "and not a file or directory",
        fix="pass a benchmark id, a path to a benchmark .json file, or --benchmarks-dir.",
    )


def load_benchmark(
    benchmark: str | os.PathLike[str],
    *,
    benchmarks_dir: str | os.PathLike[str] | None = None,
    registries: Registries | None = None,
) -> Suite:
    """:func:`load` the benchmark that :func:`resolve` finds for an id or a path."""
    return load(resolve(benchmark, benchmarks_dir=benchmarks_dir), registries=registries)
