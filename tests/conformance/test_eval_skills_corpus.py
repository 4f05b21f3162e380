"""eval-skills' own benchmark files (corpus/eval-skills): each loads and maps field by field,
and the shipped skills that do what those benchmarks ask pass them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import benchkit
from benchkit.cli import main
from benchkit.formats import detect_format
from benchkit.formats.eval_skills import RUN_OPTIONS
from benchkit.model import EvaluatorSpec

from ._corpus import CORPUS as CORPUS_ROOT
from ._corpus import REPO

CORPUS = CORPUS_ROOT / "eval-skills"
NAMES = ("coding-easy", "skill-quality", "web-search-basic")


def test_coding_easy_maps_every_field(corpus: Path) -> None:
    suite = benchkit.load(CORPUS / "coding-easy")
    bench_ = suite.benchmark
    raw = json.loads((CORPUS / "coding-easy" / "benchmark.json").read_text(encoding="utf-8"))
    assert (bench_.id, bench_.name, bench_.version, bench_.domain) == (
        "coding-easy",
        raw["name"],
        "1.1.0",
        "coding",
    )
    assert bench_.scoring.method == "mean" and bench_.scoring.k == 1
    assert bench_.metadata == {**raw["metadata"], "maxLatencyMs": 30000}
    assert bench_.source.format == "eval-skills"
    assert bench_.source.path == str((CORPUS / "coding-easy" / "benchmark.json").resolve())
    assert bench_.timeout is None and bench_.evaluators == ()
    assert suite.conditions == () and suite.options == RUN_OPTIONS
    assert suite.base_dir == (CORPUS / "coding-easy").resolve()
    tasks = list(bench_.iter_tasks())
    assert [t.id for t in tasks] == [f"coding_{i:03d}" for i in range(1, 21)]
    sixth = tasks[5]
    assert sixth.input == {"expression": "100/4"}
    assert sixth.expected == "25.0"
    # eval-skills' unwrap rule is written on the spec (the evaluator's default is none)
    assert sixth.evaluators == (EvaluatorSpec("exact", {"unwrap": ["result", "output", "answer"]}),)
    assert sixth.timeout == 10.0
    assert sixth.tags == ("math", "division")
    assert sixth.description == raw["tasks"][5]["description"]
    assert sixth.weight == 1.0
    assert sixth.metadata == {"scorerType": "exact_match"}
    assert tasks[19].input == {"operation": "reverse", "input": ""}
    assert tasks[19].expected == ""


def test_web_search_basic_maps_contains_and_schema(corpus: Path) -> None:
    tasks = list(benchkit.load(CORPUS / "web-search-basic").benchmark.iter_tasks())
    assert len(tasks) == 8
    first = tasks[0]
    assert first.evaluators == (
        EvaluatorSpec("contains", {"keywords": ["Hinton", "Hopfield"], "case_sensitive": False}),
    )
    assert first.expected is None and first.timeout == 15.0
    schema_task = tasks[7]
    (spec,) = schema_task.evaluators
    assert spec.type == "json_schema"
    assert spec.options["draft"] == "draft7"
    assert spec.options["schema"]["required"] == ["result"]
    assert spec.options["schema"]["properties"]["result"] == {"type": "string", "minLength": 10}
    assert schema_task.metadata == {"scorerType": "json_schema"}


def test_skill_quality_maps_contains_and_exact(corpus: Path) -> None:
    tasks = list(benchkit.load(CORPUS / "skill-quality").benchmark.iter_tasks())
    assert [t.evaluators[0].type for t in tasks] == ["contains"] * 4 + ["exact"]
    assert tasks[0].evaluators[0].options == {"keywords": ["name:", "description:"]}
    assert tasks[0].input == {"checkType": "metadata", "field": "SKILL.md"}
    assert tasks[4].expected == "accessible" and tasks[4].timeout == 5.0


@pytest.mark.parametrize("name", NAMES)
def test_each_file_is_detected_and_loads(corpus: Path, name: str) -> None:
    assert detect_format(CORPUS / name) == "eval-skills"
    suite = benchkit.load(CORPUS / name / "benchmark.json")
    assert suite.benchmark.id == name and suite.benchmark.tasks


@pytest.mark.parametrize(
    ("skill", "benchmark", "tasks"),
    [("calculator", "coding-easy", 20), ("metadata_checker", "skill-quality", 5)],
)
def test_shipped_skills_pass_the_original_benchmarks(
    corpus: Path, tmp_path: Path, skill: str, benchmark: str, tasks: int
) -> None:
    args = ["eval", "--benchmarks-dir", str(CORPUS), "--output-dir", str(tmp_path)]
    skills = str(REPO / "benchmarks" / "skills" / skill)
    assert main([*args, "--no-progress", "--skills", skills, "--benchmark", benchmark]) == 0
    (path,) = tmp_path.glob("eval-result-*.json")
    (report,) = json.loads(path.read_text(encoding="utf-8"))
    assert [r["status"] for r in report["taskResults"]] == ["pass"] * tasks
