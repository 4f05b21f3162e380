"""MemoryBench's data-driven benchmarks: ``manifest.json`` + a data file → a Suite.

    >>> import benchkit
    >>> suite = benchkit.load("benchmarks/memorybench/rag-template")     # doctest: +SKIP
    >>> result = benchkit.run(suite)                                      # doctest: +SKIP

The manifest is validated against the original's schema and defaults (shipped as
``benchkit/schemas/memorybench.schema.json``). Every problem is reported at once, each with
the original's dotted path (``ingestion.mode``), in one :class:`ManifestError` located at
the most relevant one (file, line, column, ``$.ingestion.mode``). Unknown keys are a
:class:`ManifestWarning`, not an error (the original drops them silently). Data files are
``.jsonl`` (streamed, one case per line; a bad line is an error naming it) or JSON (a list,
or one object).

Each case becomes a :class:`~benchkit.model.Task`:

* ``id`` — the record's ``id``, else ``question_id``, else ``case_<index>``; ``flatten``
  makes ``<parent>_<i>`` (parent = ``sample_id``, else ``id``, else ``rec_<n>``); ids must
  be unique;
* ``input`` — the retrieval query (the question; the verify query of add-delete-verify
  and deletion-check cases); ``expected`` — ``String(answer ?? "")``;
* ``setup`` — the ingestion strategy's add / wait / delete steps
  (:mod:`benchkit.formats.memorybench._ingest`); ``relevant_ids`` — the gold session ids;
* ``metadata`` — ``index`` and the record's own ``metadata`` (as the original), plus
  ``memory``: a :class:`~benchkit.formats.memorybench._case.MemoryCase`, what the pipeline
  and evaluators need (question, limit, question type, deleted content, ingestion counts,
  or the reason the case cannot be ingested).

Each memory provider named in ``providers`` becomes a :class:`~benchkit.model.Condition`
running the ``memory`` pipeline; the protocol and the listed retrieval metrics become the
benchmark's evaluators. The full reference is ``docs/formats/memorybench.md``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from benchkit import serde
from benchkit._js import MISSING, to_string
from benchkit._jsonschema import (
    SchemaValidator,
    describe,
    did_you_mean,
    load_schema,
    make_validator,
)
from benchkit._lazy import lazy_getattr
from benchkit.errors import BenchkitError, ConfigError, FormatError
from benchkit.formats._source import (
    Document,
    JsonPath,
    decode,
    open_regular,
    parse_document,
    read_document,
    render_path,
)
from benchkit.formats.memorybench._case import IngestionCounts, MemoryCase
from benchkit.formats.memorybench._evaluate import (
    PASS_CORRECTNESS,
    PASS_FAITHFULNESS,
    PROTOCOL_METRICS,
    RETRIEVAL_METRICS,
)
from benchkit.formats.memorybench._ingest import plan_ingestion, relevant_session_ids
from benchkit.formats.memorybench._judge import load_type_instructions
from benchkit.formats.memorybench._manifest import (
    AddDeleteVerifyIngestion,
    DeletionCheckEvaluation,
    ExactMatchEvaluation,
    Flatten,
    LlmJudgeEvaluation,
    Manifest,
    Query,
    SessionIngestion,
    SimpleIngestion,
)
from benchkit.memory import capability
from benchkit.model import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    LazyTasks,
    ProviderSpec,
    RunOptions,
    Source,
    Suite,
    Task,
)

if TYPE_CHECKING:
    from benchkit.formats.memorybench._evaluate import (
        DeletionCheck,
        ExactMatchResult,
        MemoryExactMatch,
        MemoryRetrieval,
        exact_match,
        leaked_items,
        session_id,
    )
    from benchkit.formats.memorybench._export import (
        CombinationSummary,
        MemoryBenchSink,
        result_record,
        summarize_records,
    )
    from benchkit.formats.memorybench._ingest import (
        IngestionPlan,
        format_conversation,
        plan_ingestion,
    )
    from benchkit.formats.memorybench._judge import (
        JudgeSettings,
        JudgeVerdict,
        answer_prompt,
        judge_prompt,
        judge_score,
        judge_settings,
        parse_judge_reply,
        type_instruction,
    )

__all__ = [
    "CombinationSummary",
    "DeletionCheck",
    "Discovery",
    "ExactMatchResult",
    "FORMAT",
    "IngestionCounts",
    "IngestionPlan",
    "JudgeSettings",
    "JudgeVerdict",
    "KNOWN_METRICS",
    "MANIFEST_FILE",
    "ManifestError",
    "ManifestWarning",
    "MemoryBenchFormat",
    "MemoryBenchSink",
    "MemoryCase",
    "MemoryExactMatch",
    "MemoryRetrieval",
    "answer_prompt",
    "detect",
    "discover",
    "exact_match",
    "flatten",
    "format_conversation",
    "judge_prompt",
    "judge_score",
    "judge_settings",
    "leaked_items",
    "load",
    "load_manifest",
    "parse_judge_reply",
    "plan_ingestion",
    "result_record",
    "schema",
    "session_id",
    "summarize_records",
    "type_instruction",
]

MANIFEST_FILE = "manifest.json"
"""The file name discovery looks for (``benchmarks/**/manifest.json``)."""

KNOWN_METRICS = (
    "correctness",
    "faithfulness",
    *RETRIEVAL_METRICS,
    "deletion_success",
    "leakage_rate",
)
"""The metric names a manifest may list; others are accepted with a warning."""

_FIX_HINT = "see docs/formats/memorybench.md"
_SKIPPED_DIRS = frozenset({"node_modules", "tests", "fixtures"})
_TOP_ORDER = (
    "manifest_version",
    "name",
    "version",
    "description",
    "source",
    "data_file",
    "flatten",
    "ingestion",
    "query",
    "evaluation",
    "metrics",
    "required_capabilities",
)
_VARIANTS: dict[str, dict[str, type]] = {
    "ingestion": {
        "simple": SimpleIngestion,
        "session-based": SessionIngestion,
        "add-delete-verify": AddDeleteVerifyIngestion,
    },
    "evaluation": {
        "exact-match": ExactMatchEvaluation,
        "llm-as-judge": LlmJudgeEvaluation,
        "deletion-check": DeletionCheckEvaluation,
    },
}
_DISCRIMINATOR = {"ingestion": "strategy", "evaluation": "protocol"}


class ManifestWarning(UserWarning):
    """A manifest problem that does not stop loading (an unknown key, metric or capability)."""


class ManifestError(FormatError):
    """An invalid manifest. ``problems`` lists every ``(dotted path, message)``, as the
    original's validator reports them; the error itself points at the most relevant one."""

    def __init__(
        self, message: str, *, problems: Sequence[tuple[str, str]] = (), **where: Any
    ) -> None:
        self.problems = tuple(problems)
        super().__init__(message, **where)


class MemoryBenchFormat:
    """The ``memorybench`` entry of the formats registry (see :mod:`benchkit.formats`)."""

    name = "memorybench"

    def __repr__(self) -> str:
        return "<format memorybench>"

    def detect(self, path: Path, head: Any | None) -> bool:
        return detect(path, head)

    def load(
        self,
        path: Path,
        *,
        document: Document | None = None,
        providers: Sequence[str] = ("LocalBaseline",),
        root: str | os.PathLike[str] | None = None,
        pass_correctness: float = PASS_CORRECTNESS,
        pass_faithfulness: float = PASS_FAITHFULNESS,
    ) -> Suite:
        return load(
            path,
            document=document,
            providers=providers,
            root=root,
            pass_correctness=pass_correctness,
            pass_faithfulness=pass_faithfulness,
        )


FORMAT = MemoryBenchFormat()


def detect(path: Path, head: Any | None) -> bool:
    """A mapping with ``manifest_version`` that is not a provider manifest; or a
    directory holding a ``manifest.json``."""
    if head is None:
        return path.is_dir() and (path / MANIFEST_FILE).is_file()
    return (
        isinstance(head, dict)
        and "manifest_version" in head
        and "provider" not in head
        and "benchkit" not in head
    )


def schema() -> dict[str, Any]:
    """The manifest's JSON Schema (Draft 2020-12), as shipped in the package."""
    return load_schema("memorybench")


@functools.cache
def _validator() -> SchemaValidator:
    return make_validator(schema())


# --------------------------------------------------------------------------- manifest


def _dotted(path: JsonPath) -> str:
    return ".".join(str(part) for part in path)


def _problems(doc: Document) -> list[tuple[JsonPath, str, str | None]]:
    """Every schema violation as (path, message, fix), in the manifest's key order."""
    found: list[tuple[JsonPath, str, str | None]] = []
    for error in _validator().iter_errors(doc.data):
        path: JsonPath = tuple(error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            # jsonschema reports each missing key as its own error, all with the full list.
            for key in error.validator_value:
                problem = ((*path, key), f"missing required key `{key}`", f"add `{key}`")
                if key not in error.instance and problem not in found:
                    found.append(problem)
        elif error.validator == "pattern" and path == ("version",):
            shown = json.dumps(error.instance, ensure_ascii=False)
            found.append((path, f"{shown} is not a version MAJOR.MINOR.PATCH", 'e.g. "1.0.0"'))
        else:
            message, where, fix, _ = describe(error)
            found.append((where, message, fix))

    def order(item: tuple[JsonPath, str, str | None]) -> int:
        head = item[0][0] if item[0] else ""
        return _TOP_ORDER.index(head) if head in _TOP_ORDER else -1

    found.sort(key=order)
    return found


def _check(doc: Document) -> None:
    problems = _problems(doc)
    if not problems:
        return
    from jsonschema.exceptions import best_match

    best = best_match(_validator().iter_errors(doc.data))
    best_path: JsonPath = tuple(best.absolute_path) if best is not None else ()
    first = next((p for p in problems if p[0][: len(best_path)] == best_path), problems[0])
    listed = [(_dotted(path) or "(top level)", message) for path, message, _ in problems]
    text = "; ".join(f"{where}: {message}" for where, message in listed)
    count = f"{len(listed)} problems" if len(listed) > 1 else "1 problem"
    fix = f"{first[2]}; {_FIX_HINT}" if first[2] else _FIX_HINT
    where = doc.locate(first[0])
    raise ManifestError(
        f"invalid MemoryBench manifest ({count}): {text}",
        problems=listed,
        file=doc.path,
        line=where[0] if where else None,
        column=where[1] if where else None,
        json_path=render_path(first[0]),
        fix=fix,
    )


def _known_keys(cls: type) -> frozenset[str]:
    return frozenset(attrs.fields_dict(cls))


def _unknown_keys(data: Mapping[str, Any]) -> list[tuple[JsonPath, list[str]]]:
    """(path of the unknown key, the keys allowed there) for every key the schema ignores."""
    found: list[tuple[JsonPath, list[str]]] = []
    sections: list[tuple[JsonPath, Any, type]] = [
        ((), data, Manifest),
        (("flatten",), data.get("flatten"), Flatten),
        (("query",), data.get("query"), Query),
    ]
    for key, variants in _VARIANTS.items():
        section = data.get(key)
        if isinstance(section, dict):
            chosen = variants.get(str(section.get(_DISCRIMINATOR[key])))
            if chosen is not None:
                sections.append(((key,), section, chosen))
    for path, section, cls in sections:
        if isinstance(section, dict):
            known = _known_keys(cls)
            found.extend(((*path, k), sorted(known)) for k in section if k not in known)
    return found


def _warn(doc: Document, path: JsonPath, message: str, sink: list[str]) -> None:
    where = doc.locate(path, key=True) if path else None
    location = f"{doc.path}:{where[0]}:{where[1]}" if where else str(doc.path)
    text = (
        f"{location}: {_dotted(path) or '(top level)'}: {message}"
        if path
        else f"{location}: {message}"
    )
    sink.append(text)
    warnings.warn(ManifestWarning(text), stacklevel=4)


def _structure(doc: Document) -> Manifest:
    try:
        manifest: Manifest = serde.structure(doc.data, Manifest)
    except Exception as exc:  # cattrs' validation errors: the schema should have caught it
        raise doc.error(f"invalid MemoryBench manifest: {exc}", fix=_FIX_HINT) from exc
    return manifest


def _manifest_file(path: Path) -> Path:
    if path.is_dir():
        found = path / MANIFEST_FILE
        if not found.is_file():
            raise FormatError(
                f"no {MANIFEST_FILE} in this directory",
                file=path,
                fix=f"add a {MANIFEST_FILE} (see docs/formats/memorybench.md).",
            )
        return found
    return path


def _read(path: Path, document: Document | None, sink: list[str]) -> tuple[Manifest, Document]:
    doc = document if document is not None else read_document(path)
    _check(doc)
    data: dict[str, Any] = doc.data
    for where, allowed in _unknown_keys(data):
        close = did_you_mean(str(where[-1]), allowed)
        hint = f" (did you mean `{close}`?)" if close else ""
        _warn(doc, where, f"unknown key `{where[-1]}` is ignored{hint}", sink)
    return _structure(doc), doc


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """The validated manifest at ``path`` (a ``manifest.json`` or its directory), with every
    default filled in. Problems raise :class:`ManifestError`; unknown keys warn."""
    manifest, _ = _read(_manifest_file(Path(path)), None, [])
    return manifest


# --------------------------------------------------------------------------- data


def flatten(records: Iterator[dict[str, Any]], rule: Flatten) -> Iterator[dict[str, Any]]:
    """One record per item of ``record[rule.field]`` (decision 3 of the notes).

    A record whose field is not a list passes unchanged; an empty list drops the record;
    ``max_items`` keeps the first items (0 keeps all). Each item gives ``{id:
    "<parent>_<i>", <parent's other fields>, <promoted fields>, _flatten_index: i}``; the
    parent id is ``sample_id``, else ``id``, else ``rec_<records emitted so far>`` — counted
    for each item, as the original computes it inside its item loop (``rec_5_0``,
    ``rec_6_1``).

        >>> rule = Flatten("qa", promote_fields=("q",))
        >>> list(flatten(iter([{"id": "1", "qa": [{"q": "Q1"}, {"q": "Q2", "x": 0}]}]), rule))
        [{'id': '1_0', 'q': 'Q1', '_flatten_index': 0}, {'id': '1_1', 'q': 'Q2', '_flatten_index': 1}]
    """
    emitted = 0
    limit = int(rule.max_items) if rule.max_items else None
    for record in records:
        items = record.get(rule.field)
        if not isinstance(items, list):
            emitted += 1
            yield record
            continue
        parent = {k: v for k, v in record.items() if k != rule.field}
        parent_id = parent.get("sample_id")
        if parent_id is None:
            parent_id = parent.get("id")
        base = {k: v for k, v in parent.items() if k != "id"}
        for i, item in enumerate(items[:limit] if limit is not None else items):
            own = f"rec_{emitted}" if parent_id is None else to_string(parent_id)
            promoted = {
                f: item[f]
                for f in rule.promote_fields
                if isinstance(item, dict) and f in item and f != "id"
            }
            emitted += 1
            yield {"id": f"{own}_{i}", **base, **promoted, "_flatten_index": i}


@attrs.frozen
class _Origin:
    """Where a case came from in the data file: a JSON index or a JSONL line."""

    index: int | None = None
    line: int | None = None

    def describe(self) -> str:
        return f"line {self.line}" if self.line is not None else f"$[{self.index}]"


class _Data:
    """The data file: parsed once for JSON, streamed line by line for JSONL."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.streamed = path.suffix.lower() == ".jsonl"
        self._doc: Document | None = None
        if not self.streamed:
            if path.stat().st_size == 0:
                raise FormatError(
                    "the data file is empty",
                    file=path,
                    fix=_NO_CASES_FIX,
                )
            self._doc = read_document(path, kind="json")
            data = self._doc.data
            self._records = data if isinstance(data, list) else [data]

    @property
    def records_read(self) -> int:
        """How many records a JSON data file holds (0 for JSONL, which is streamed)."""
        return len(self._records) if self._doc is not None else 0

    def error(self, message: str, origin: _Origin, fix: str | None = None) -> FormatError:
        if self._doc is not None and origin.line is None:
            index = origin.index
            path: JsonPath = (
                (index,) if index is not None and isinstance(self._doc.data, list) else ()
            )
            return self._doc.error(message, path, fix=fix)
        return FormatError(message, file=self.path, line=origin.line, fix=fix)

    def records(self) -> Iterator[tuple[dict[str, Any], _Origin]]:
        if self._doc is not None:
            for index, record in enumerate(self._records):
                origin = _Origin(index=index)
                yield self._object(record, origin), origin
            return
        try:
            handle = open_regular(self.path)
        except OSError as exc:
            raise FormatError(
                f"cannot read the data file: {exc.strerror}",
                file=self.path,
                fix="the file was there when the benchmark loaded; restore it.",
            ) from None
        with handle:
            first = True
            for number, raw in enumerate(handle, 1):
                if not raw.strip():
                    continue
                text = decode(raw.rstrip(b"\r\n"), self.path, first_line=number)
                try:
                    line_doc = parse_document(text, path=self.path, kind="json", first_line=number)
                except FormatError:
                    if first and text.lstrip()[:1] in ("[", "{"):
                        raise self._not_lines(number) from None
                    raise
                first = False
                origin = _Origin(line=number)
                yield self._object(line_doc.data, origin), origin

    def _not_lines(self, number: int) -> FormatError:
        """The error for a ``.jsonl`` file whose first line is the start of a JSON document
        spread over lines (a pretty-printed array or object), not a case of its own."""
        return FormatError(
            "this looks like JSON, not JSON Lines: its first line opens a JSON document "
            "that goes on over several lines",
            file=self.path,
            line=number,
            fix=f"rename it to {self.path.with_suffix('.json').name} (and point the manifest's "
            "data_file at it), or write one case per line.",
        )

    def _object(self, record: Any, origin: _Origin) -> dict[str, Any]:
        if not isinstance(record, dict):
            kind = "a list" if isinstance(record, list) else type(record).__name__
            raise self.error(
                f"each case must be a JSON object, got {kind}",
                origin,
                fix='write one object per case ({"question": ..., "answer": ...}).',
            )
        return record


# --------------------------------------------------------------------------- cases


@attrs.frozen
class _Plan:
    """What every case of one benchmark shares."""

    manifest: Manifest
    query_field: str
    deletion: DeletionCheckEvaluation | None
    type_field: str | None


def _query_field(manifest: Manifest) -> str:
    ingestion, evaluation = manifest.ingestion, manifest.evaluation
    if isinstance(ingestion, AddDeleteVerifyIngestion) and ingestion.verify_query_field:
        return ingestion.verify_query_field
    if isinstance(evaluation, DeletionCheckEvaluation):
        return evaluation.verification_query_field
    return manifest.query.question_field


def _case_id(record: Mapping[str, Any], index: int) -> str:
    for key in ("id", "question_id"):
        value = record.get(key)
        if value is not None:
            return to_string(value)
    return f"case_{index}"


def _deleted(record: Mapping[str, Any], plan: _Plan, planned: tuple[str, ...]) -> list[str] | None:
    assert plan.deletion is not None
    value = record.get(plan.deletion.deleted_content_field, MISSING)
    if value is MISSING:
        return list(planned) if planned else None
    if isinstance(value, list):
        return [to_string(v) for v in value if v is not None]
    return None if value is None else [to_string(value)]


def _task(record: Mapping[str, Any], index: int, plan: _Plan) -> Task:
    manifest = plan.manifest
    ingestion = plan_ingestion(record, manifest.ingestion)
    question = record.get(manifest.query.question_field, MISSING)
    query = record.get(plan.query_field, MISSING)
    problem = ingestion.error
    if query is MISSING or query is None:
        problem = problem or f"Query field '{plan.query_field}' not found in input"
        query_text = ""
    else:
        query_text = to_string(query)
    question_text = query_text if question is MISSING or question is None else to_string(question)
    tags: tuple[str, ...] = ()
    question_type: Any = None
    if plan.type_field:
        question_type = record.get(plan.type_field)
        if question_type is not None:
            tags = (f"type:{to_string(question_type)}",)
    deleted = None if plan.deletion is None else _deleted(record, plan, ingestion.deleted)
    own = record.get("metadata")
    metadata: dict[str, Any] = {"index": index, **(own if isinstance(own, dict) else {})}
    metadata["memory"] = MemoryCase(
        question=question_text,
        limit=manifest.retrieval_limit,
        setup_error=problem or None,
        ingestion=IngestionCounts(ingestion.total, ingestion.selected),
        question_type=question_type,
        deleted=None if deleted is None else tuple(deleted),
    )
    expected = record.get(manifest.query.expected_answer_field)
    return Task(
        id=_case_id(record, index),
        input=query_text,
        expected="" if expected is None else to_string(expected),
        description=question_text[:100] or None,
        tags=tags,
        relevant_ids=relevant_session_ids(record, manifest.ingestion),
        setup=ingestion.steps,
        metadata=metadata,
    )


def _cases(data: _Data, plan: _Plan) -> Iterator[tuple[dict[str, Any], int, _Origin]]:
    """(record, case index, origin) after flattening; a repeated case id is an error."""
    seen: dict[str, _Origin] = {}
    at: list[_Origin] = [_Origin()]

    def records() -> Iterator[dict[str, Any]]:
        for record, origin in data.records():
            at[0] = origin  # flatten pulls one record, then yields all of its cases
            yield record

    rule = plan.manifest.flatten
    cases = flatten(records(), rule) if rule is not None else records()
    for index, case in enumerate(cases):
        origin = at[0]
        ident = _case_id(case, index)
        first = seen.get(ident)
        if first is not None:
            raise data.error(
                f"duplicate case id {ident!r} (first from {first.describe()})",
                origin,
                fix="give every case a unique id (flattened cases are <parent id>_<n>).",
            )
        seen[ident] = origin
        yield case, index, origin


# --------------------------------------------------------------------------- loading


def _default_root(manifest_dir: Path) -> Path:
    """The ``benchmarks`` directory that holds the manifest, else the manifest's own."""
    for directory in (manifest_dir, *manifest_dir.parents):
        if directory.name == "benchmarks":
            return directory
    return manifest_dir


def _inside(doc: Document, base: Path, root: Path, value: str, path: JsonPath, what: str) -> Path:
    resolved = Path(os.path.normpath(base / value))
    if not resolved.is_relative_to(root):
        raise doc.error(
            f"{what} {value!r} points outside the benchmarks root ({root})",
            path,
            fix=f"keep it under {root}, or load with root= a directory that contains it.",
        )
    return resolved


def _type_instructions(
    doc: Document, manifest: Manifest, base: Path, root: Path, sink: list[str]
) -> dict[str, str]:
    evaluation = manifest.evaluation
    assert isinstance(evaluation, LlmJudgeEvaluation)
    if not evaluation.type_instructions_file:
        return dict(evaluation.type_instructions or {})
    where: JsonPath = ("evaluation", "type_instructions_file")
    file = _inside(
        doc, base, root, evaluation.type_instructions_file, where, "type_instructions_file"
    )
    found, problem = load_type_instructions(file)
    if problem:
        _warn(doc, where, f"{problem}; the judge gets no type instructions", sink)
    return found


def _check_semantics(doc: Document, manifest: Manifest, sink: list[str]) -> list[str]:
    """Warnings for metrics and capabilities; the effective required capabilities."""
    ingestion = manifest.ingestion
    if isinstance(ingestion, SessionIngestion):
        try:
            re.compile(f"^{ingestion.session_key_prefix}[0-9]+$")
        except re.error as exc:
            raise doc.error(
                f"session_key_prefix {ingestion.session_key_prefix!r} is not a valid "
                f"regular expression prefix: {exc}",
                ("ingestion", "session_key_prefix"),
                fix="escape regular-expression characters, or use a plain prefix such as session_.",
            ) from None
    produced = set(PROTOCOL_METRICS[manifest.evaluation.protocol])
    if isinstance(ingestion, SessionIngestion):
        produced.update(RETRIEVAL_METRICS)
    for i, name in enumerate(manifest.metrics):
        if name not in KNOWN_METRICS:
            close = did_you_mean(name, KNOWN_METRICS)
            hint = f" (did you mean `{close}`?)" if close else ""
            _warn(doc, ("metrics", i), f"unknown metric {name!r} is not reported{hint}", sink)
        elif name not in produced:
            why = (
                "retrieval metrics need session-based ingestion (gold session ids)"
                if name in RETRIEVAL_METRICS
                else f"the {manifest.evaluation.protocol} protocol does not produce it"
            )
            _warn(doc, ("metrics", i), f"metric {name!r} is not reported: {why}", sink)
    required = list(manifest.required_capabilities)
    for i, name in enumerate(required):
        if capability(name) is None:
            _warn(
                doc,
                ("required_capabilities", i),
                f"unknown capability {name!r}: no provider has it, so every run is skipped",
                sink,
            )
    have = {capability(name) for name in required}
    if isinstance(ingestion, AddDeleteVerifyIngestion) and "delete" not in have:
        required.append("delete_memory")
    return required


def _evaluators(
    manifest: Manifest,
    instructions: Mapping[str, str],
    pass_correctness: float,
    pass_faithfulness: float,
) -> tuple[EvaluatorSpec, ...]:
    listed = list(manifest.metrics)
    evaluation = manifest.evaluation
    thresholds = {"pass_correctness": pass_correctness, "pass_faithfulness": pass_faithfulness}
    specs: list[EvaluatorSpec] = []
    if isinstance(evaluation, ExactMatchEvaluation):
        options: dict[str, Any] = {
            "case_sensitive": evaluation.case_sensitive,
            "normalize_whitespace": evaluation.normalize_whitespace,
            **thresholds,
            "metrics": listed,
        }
        specs.append(EvaluatorSpec("memory_exact_match", options, name="exact-match"))
    elif isinstance(evaluation, LlmJudgeEvaluation):
        settings = {
            key: getattr(evaluation, key)
            for key in ("judge_backend", "model", "project_id", "region")
            if getattr(evaluation, key) is not None
        }
        options = {**settings, "type_instructions": dict(instructions), **thresholds}
        options["metrics"] = listed
        specs.append(EvaluatorSpec("memory_llm_judge", options, name="llm-as-judge"))
    else:
        options = {"fuzzy_match": evaluation.fuzzy_match, "metrics": listed}
        specs.append(EvaluatorSpec("deletion_check", options, name="deletion-check"))
    retrieval = [m for m in listed if m in RETRIEVAL_METRICS]
    if retrieval and isinstance(manifest.ingestion, SessionIngestion):
        options = {"metrics": list(dict.fromkeys(retrieval)), "k": manifest.retrieval_limit}
        specs.append(EvaluatorSpec("memory_retrieval", options, name="retrieval"))
    return tuple(specs)


_NO_CASES_FIX = (
    "write the cases (a JSON list of objects, or one object per line of a .jsonl file: "
    '{"question": ..., "answer": ...}), or point data_file at the benchmark\'s data.'
)


def _count_lines(path: Path) -> int:
    with open_regular(path) as handle:
        return sum(1 for line in handle if line.strip())


def _has_line(path: Path) -> bool:
    with open_regular(path) as handle:
        return any(line.strip() for line in handle)


def load(
    path: str | os.PathLike[str],
    *,
    providers: Sequence[str] = ("LocalBaseline",),
    root: str | os.PathLike[str] | None = None,
    document: Document | None = None,
    pass_correctness: float = PASS_CORRECTNESS,
    pass_faithfulness: float = PASS_FAITHFULNESS,
) -> Suite:
    """Load a MemoryBench benchmark (a ``manifest.json`` or its directory) into a Suite.

    ``providers`` names the memory providers to run it against (one condition each).
    ``root`` is the directory ``data_file`` and ``type_instructions_file`` must stay in:
    by default the ``benchmarks`` directory holding the manifest, else the manifest's own
    directory. ``pass_correctness`` / ``pass_faithfulness`` are the pass rule's thresholds.
    """
    if isinstance(providers, str):
        providers = (providers,)
    if not providers or len(set(providers)) != len(providers):
        raise ConfigError(
            f"providers must name at least one memory provider, each once: {list(providers)}",
            fix='e.g. providers=("LocalBaseline",)',
        )
    file = _manifest_file(Path(path))
    shown_dir = file.parent
    base = shown_dir.resolve()
    root_dir = Path(root).resolve() if root is not None else _default_root(base)
    found_warnings: list[str] = []
    manifest, doc = _read(file, document, found_warnings)
    required = _check_semantics(doc, manifest, found_warnings)
    data_path = _inside(doc, base, root_dir, manifest.data_file, ("data_file",), "data_file")
    if not data_path.is_file() and data_path.exists():  # a FIFO or device: never read it
        raise doc.error(
            f"data file {manifest.data_file!r} is not a regular file ({data_path})",
            ("data_file",),
            fix="point data_file at a .json or .jsonl file.",
        )
    if not data_path.is_file():
        raise doc.error(
            f"data file {manifest.data_file!r} not found ({data_path})",
            ("data_file",),
            fix="check the path: it is relative to the manifest's directory.",
        )
    instructions: Mapping[str, str] = {}
    type_field: str | None = None
    if isinstance(manifest.evaluation, LlmJudgeEvaluation):
        instructions = _type_instructions(doc, manifest, base, root_dir, found_warnings)
        type_field = manifest.evaluation.type_field
    evaluation = manifest.evaluation
    plan = _Plan(
        manifest=manifest,
        query_field=_query_field(manifest),
        deletion=evaluation if isinstance(evaluation, DeletionCheckEvaluation) else None,
        type_field=type_field,
    )
    data = _Data(Path(os.path.normpath(shown_dir / manifest.data_file)))

    def tasks() -> Iterator[Task]:
        for record, index, _ in _cases(data, plan):
            yield _task(record, index, plan)

    count: int | None
    if data.streamed:
        count = None if manifest.flatten is not None else _count_lines(data.path)
        if count == 0 or (count is None and not _has_line(data.path)):
            raise FormatError(
                "the data file holds no cases (it has no line)", file=data.path, fix=_NO_CASES_FIX
            )
    else:
        count = sum(1 for _ in _cases(data, plan))  # checks ids and records now
        if count == 0:
            raise data.error(
                "the data file holds no cases"
                + (" (every record's flatten list is empty)" if data.records_read else ""),
                _Origin(),
                fix=_NO_CASES_FIX,
            )
    answer = "llm" if isinstance(evaluation, LlmJudgeEvaluation) else "template"
    answer_options = (
        {
            key: getattr(evaluation, key)
            for key in ("judge_backend", "model", "project_id", "region")
            if getattr(evaluation, key) is not None
        }
        if isinstance(evaluation, LlmJudgeEvaluation)
        else {}
    )
    benchmark = Benchmark(
        id=manifest.name,
        name=manifest.name,
        version=manifest.version,
        description=manifest.description,
        tasks=LazyTasks(tasks, count=count),
        evaluators=_evaluators(manifest, instructions, pass_correctness, pass_faithfulness),
        metadata={
            "memorybench": {
                "manifest": serde.unstructure(manifest),
                "protocol": evaluation.protocol,
                "strategy": manifest.ingestion.strategy,
                "answer": answer,
                "answer_options": answer_options,
                "metrics": list(manifest.metrics),
                "required_capabilities": required,
                "warnings": found_warnings,
            }
        },
        source=Source(path=str(file.resolve()), format="memorybench"),
    )
    conditions = tuple(
        Condition(
            name,
            ProviderSpec(
                "memory", {"provider": name, "answer": answer, "answer_options": answer_options}
            ),
        )
        for name in providers
    )
    return Suite(benchmark, conditions, RunOptions(errors_as="exclude"), base_dir=base)


# --------------------------------------------------------------------------- discovery


@attrs.frozen
class Discovery:
    """What :func:`discover` found: benchmarks by name (with their manifest paths), and
    the manifests that could not be used, each with its error."""

    benchmarks: Mapping[str, Suite]
    paths: Mapping[str, Path]
    problems: tuple[tuple[Path, BenchkitError], ...]


def discover(
    root: str | os.PathLike[str],
    *,
    providers: Sequence[str] = ("LocalBaseline",),
    pass_correctness: float = PASS_CORRECTNESS,
    pass_faithfulness: float = PASS_FAITHFULNESS,
) -> Discovery:
    """Every ``manifest.json`` under ``root`` (the benchmarks root), as the original finds
    them: sorted, skipping ``node_modules``, ``tests``, ``fixtures`` and hidden
    directories. A manifest that fails to load, and a second benchmark with a name already
    taken, are recorded in ``problems`` (naming both paths) and skipped."""
    base = Path(root)
    if not base.is_dir():
        raise ConfigError(
            f"benchmarks directory {str(base)!r} does not exist",
            fix="run from the project directory, or pass --benchmarks-dir.",
        )
    benchmarks: dict[str, Suite] = {}
    paths: dict[str, Path] = {}
    problems: list[tuple[Path, BenchkitError]] = []
    for directory, subdirs, files in os.walk(base):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        if MANIFEST_FILE not in files:
            continue
        file = Path(directory) / MANIFEST_FILE
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ManifestWarning)
                suite = load(
                    file,
                    providers=providers,
                    root=base,
                    pass_correctness=pass_correctness,
                    pass_faithfulness=pass_faithfulness,
                )
        except BenchkitError as exc:
            problems.append((file, exc))
            continue
        name = suite.benchmark.id
        if name in benchmarks:
            problems.append(
                (
                    file,
                    FormatError(
                        f"duplicate benchmark name {name!r}: {paths[name]} defines it too",
                        file=file,
                        fix="give each benchmark a unique `name`; the first one found is kept.",
                    ),
                )
            )
            continue
        benchmarks[name] = suite
        paths[name] = file
    return Discovery(benchmarks, paths, tuple(problems))


#: MemoryBench's evaluation protocols, ingestion, judge and export, imported on first use.
_WHERE = {
    "CombinationSummary": "_export",
    "DeletionCheck": "_evaluate",
    "ExactMatchResult": "_evaluate",
    "IngestionPlan": "_ingest",
    "JudgeSettings": "_judge",
    "JudgeVerdict": "_judge",
    "MemoryBenchSink": "_export",
    "MemoryExactMatch": "_evaluate",
    "MemoryRetrieval": "_evaluate",
    "answer_prompt": "_judge",
    "exact_match": "_evaluate",
    "format_conversation": "_ingest",
    "judge_prompt": "_judge",
    "judge_score": "_judge",
    "judge_settings": "_judge",
    "leaked_items": "_evaluate",
    "parse_judge_reply": "_judge",
    "plan_ingestion": "_ingest",
    "result_record": "_export",
    "session_id": "_evaluate",
    "summarize_records": "_export",
    "type_instruction": "_judge",
}

# Only at run time: a type checker sees the names declared under TYPE_CHECKING above and
# nothing else, so a typo such as `benchkit.Runer` is an error, not Any.
if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(
        __name__, {name: f"benchkit.formats.memorybench.{mod}" for name, mod in _WHERE.items()}
    )
