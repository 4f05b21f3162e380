"""The MemoryBench format: a manifest and its data file loaded as a Suite.

:func:`load` checks the manifest, keeps its data file inside the benchmarks root, and
builds a Suite with one condition per memory provider and the protocol's evaluators
(see the package docstring and ``docs/formats/memorybench.md``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchkit import serde
from benchkit.errors import ConfigError, FormatError
from benchkit.formats._source import Document, JsonPath, open_regular
from benchkit.formats.memorybench._data import NO_CASES_FIX, DataFile, Origin
from benchkit.formats.memorybench._evaluate import (
    PASS_CORRECTNESS,
    PASS_FAITHFULNESS,
    RETRIEVAL_METRICS,
)
from benchkit.formats.memorybench._judge import load_type_instructions
from benchkit.formats.memorybench._manifest import (
    DeletionCheckEvaluation,
    ExactMatchEvaluation,
    LlmJudgeEvaluation,
    Manifest,
    SessionIngestion,
)
from benchkit.formats.memorybench._tasks import TaskPlan, cases, query_field, record_task
from benchkit.formats.memorybench._validate import (
    MANIFEST_FILE,
    check_semantics,
    manifest_file,
    read_manifest,
    warn,
)
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
        warn(doc, where, f"{problem}; the judge gets no type instructions", sink)
    return found


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
    file = manifest_file(Path(path))
    shown_dir = file.parent
    base = shown_dir.resolve()
    root_dir = Path(root).resolve() if root is not None else _default_root(base)
    found_warnings: list[str] = []
    manifest, doc = read_manifest(file, document, found_warnings)
    required = check_semantics(doc, manifest, found_warnings)
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
    plan = TaskPlan(
        manifest=manifest,
        query_field=query_field(manifest),
        deletion=evaluation if isinstance(evaluation, DeletionCheckEvaluation) else None,
        type_field=type_field,
    )
    data = DataFile(Path(os.path.normpath(shown_dir / manifest.data_file)))

    def tasks() -> Iterator[Task]:
        for record, index, _ in cases(data, plan):
            yield record_task(record, index, plan)

    count: int | None
    if data.streamed:
        count = None if manifest.flatten is not None else _count_lines(data.path)
        if count == 0 or (count is None and not _has_line(data.path)):
            raise FormatError(
                "the data file holds no cases (it has no line)", file=data.path, fix=NO_CASES_FIX
            )
    else:
        count = sum(1 for _ in cases(data, plan))  # checks ids and records now
        if count == 0:
            raise data.error(
                "the data file holds no cases"
                + (" (every record's flatten list is empty)" if data.records_read else ""),
                Origin(),
                fix=NO_CASES_FIX,
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
