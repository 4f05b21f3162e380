"""The eval-skills loader: the shipped benchmarks, the mapping into the core model, located
errors, detection, and resolving ``--benchmark`` ids and paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import benchkit
from benchkit.errors import ConfigError, FormatError
from benchkit.formats import detect_format, discover
from benchkit.formats._source import parse_document
from benchkit.formats.eval_skills import (
    RUN_OPTIONS,
    detect,
    find_benchmarks,
    load,
    load_benchmark,
    resolve,
)
from benchkit.model import Condition, EvaluatorSpec, Task
from benchkit.providers import CallableProvider
from benchkit.registry import Registries, default_registries

from ._llm_server import FakeOpenAI, Reply
from ._support import FIXTURES, REPO

SHIPPED = REPO / "benchmarks"
SHIPPED_IDS = ("coding-easy", "skill-quality", "web-search-basic")


def bench(tasks: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """A valid benchmark document around ``tasks``."""
    return {
        "id": "b",
        "name": "B",
        "version": "1.0.0",
        "domain": "general",
        "scoringMethod": "mean",
        **fields,
        "tasks": tasks,
    }


def task(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "t1",
        "inputData": {"q": 1},
        "expectedOutput": {"type": "exact", "value": "x"},
    }
    base.update(fields)
    return base


def write(tmp_path: Path, data: Any, name: str = "bench.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2))
    return path


def only_task(tmp_path: Path, registries: Registries | None = None, **fields: Any) -> Task:
    suite = load(write(tmp_path, bench([task(**fields)])), registries=registries)
    (loaded,) = suite.benchmark.iter_tasks()
    return loaded


def spec_of(tmp_path: Path, **fields: Any) -> EvaluatorSpec:
    (spec,) = only_task(tmp_path, **fields).evaluators
    return spec


def with_judge() -> Registries:
    """Registries with a stand-in ``llm_judge``: these tests check the mapping only."""
    registries = default_registries().copy()
    registries.evaluators.add("llm_judge", lambda **options: options, replace=True)
    return registries


# --------------------------------------------------------------------------- shipped


def test_coding_easy_maps_every_field() -> None:
    suite = benchkit.load(SHIPPED / "coding-easy")
    bench_ = suite.benchmark
    assert (bench_.id, bench_.name, bench_.version, bench_.domain) == (
        "coding-easy",
        "Calculator Warm-up",
        "2.0.0",
        "coding",
    )
    assert bench_.scoring.method == "weighted_mean" and bench_.scoring.k == 1
    assert bench_.metadata["source"] == "benchkit" and bench_.metadata["maxLatencyMs"] == 20000
    assert bench_.source.format == "eval-skills"
    assert bench_.source.path == str((SHIPPED / "coding-easy" / "benchmark.json").resolve())
    assert bench_.timeout is None and bench_.evaluators == ()
    assert suite.conditions == () and suite.options == RUN_OPTIONS
    assert suite.base_dir == (SHIPPED / "coding-easy").resolve()
    tasks = {t.id: t for t in bench_.iter_tasks()}
    assert len(tasks) == 18
    division = tasks["calc_exact_float"]
    assert division.input == {"expression": "36/6"}
    assert division.expected == "6.0"
    unwrap = ["result", "output", "answer"]  # eval-skills' rule, made explicit on the spec
    assert division.evaluators == (EvaluatorSpec("exact", {"unwrap": unwrap}),)
    assert division.timeout == 8.0
    assert division.tags == ("arithmetic", "division")
    assert division.description == "A division that comes out whole is still a float"
    assert division.weight == 1.0 and tasks["calc_precedence"].weight == 2.0
    assert division.metadata == {"scorerType": "exact_match"}
    assert tasks["text_reverse_any_case"].evaluators == (
        EvaluatorSpec("exact", {"unwrap": unwrap, "case_sensitive": False}),
    )
    (regex,) = tasks["calc_big_power"].evaluators
    assert regex.type == "regex" and regex.options["patterns"][0] == '"result":"3\\d{9}"'
    (schema,) = tasks["shape_result_object"].evaluators
    assert schema.type == "json_schema" and schema.options["draft"] == "draft7"
    assert tasks["shape_empty_reverse"].input == {"operation": "reverse", "input": ""}


def test_web_search_basic_maps_every_evaluator_type() -> None:
    bench_ = benchkit.load(SHIPPED / "web-search-basic").benchmark
    assert bench_.scoring.method == "pass_at_k"
    tasks = {t.id: t for t in bench_.iter_tasks()}
    assert len(tasks) == 9
    assert tasks["fact_teapot"].evaluators == (
        EvaluatorSpec("contains", {"keywords": ["teapot", "RFC 2324"], "case_sensitive": True}),
    )
    assert tasks["fact_teapot"].expected is None and tasks["fact_teapot"].timeout == 10.0
    (loose,) = tasks["loose_everest"].evaluators
    assert loose.type == "regex" and loose.options["flags"] == "i"
    (spec,) = tasks["shape_with_source"].evaluators
    assert spec.type == "json_schema" and spec.options["draft"] == "draft7"
    assert spec.options["schema"]["required"] == ["result", "source"]
    assert tasks["shape_with_source"].metadata == {"scorerType": "json_schema"}
    judged = tasks["judged_wilson"]
    (judge,) = judged.evaluators
    assert judge.type == "llm_judge" and judge.options["judge_prompt"].startswith("Rate from 0")
    assert judged.expected == judge.options["reference"]
    assert {t.evaluators[0].type for t in tasks.values()} == {
        "contains",
        "regex",
        "exact",
        "json_schema",
        "llm_judge",
    }


def test_skill_quality_maps_contains_regex_and_exact() -> None:
    bench_ = benchkit.load(SHIPPED / "skill-quality").benchmark
    assert bench_.scoring.method == "mean"
    tasks = list(bench_.iter_tasks())
    assert [t.evaluators[0].type for t in tasks] == [
        "contains",
        "regex",
        "regex",
        "contains",
        "contains",
        "exact",
        "exact",
    ]
    assert tasks[0].evaluators[0].options == {
        "keywords": ["name: metadata-checker", "description: "]
    }
    assert tasks[1].input == {
        "checkType": "metadata",
        "field": "SKILL.md",
        "skillDir": "../calculator",
    }
    assert tasks[6].expected == "ACCESSIBLE" and tasks[6].timeout == 5.0


def test_the_shipped_benchmarks_cover_every_evaluator_and_scoring_method() -> None:
    loaded = [benchkit.load(SHIPPED / n).benchmark for n in SHIPPED_IDS]
    assert {b.scoring.method for b in loaded} == {"mean", "weighted_mean", "pass_at_k"}
    kinds = {spec.type for b in loaded for t in b.iter_tasks() for spec in t.evaluators}
    assert kinds == {"exact", "contains", "regex", "json_schema", "llm_judge"}
    assert all(detect_format(SHIPPED / n) == "eval-skills" for n in SHIPPED_IDS)


def test_list_finds_the_shipped_benchmarks_and_skips_skill_manifests() -> None:
    found, problems = discover(REPO / "benchmarks")
    ids = {suite.benchmark.id: suite.benchmark.source.format for _, suite in found}
    assert {"coding-easy", "skill-quality", "web-search-basic"} <= set(ids)
    assert ids["coding-easy"] == "eval-skills"
    assert not [p for p, _ in problems if "skills" in p.parts]


# --------------------------------------------------------------------------- detection


def test_detect_recognises_eval_skills_and_leaves_others() -> None:
    here = Path("b.json")
    assert detect(here, bench([task()]))
    assert detect(here, {"id": "x", "version": "1", "tasks": [{"inputData": {}}]})
    assert detect(here, {"scoringMethod": "mean", "tasks": []})
    assert not detect(here, {"benchkit": 1, **bench([task()])})  # native
    assert not detect(here, {"id": "x", "version": "1", "tasks": [{"input": 1}]})
    assert not detect(here, {"id": "calc", "entrypoint": "python3 skill.py"})  # a skill.json
    assert not detect(here, [task()])
    assert not detect(here, None)


def test_native_files_stay_native() -> None:
    assert detect_format(FIXTURES / "native" / "full.json") == "native"


# --------------------------------------------------------------------------- evaluators


@pytest.mark.parametrize(
    ("evaluator", "expected_type", "kind"),
    [
        ({"type": "exact"}, "contains", "exact"),
        ({"type": "exact_match"}, None, "exact"),
        ({}, "exact", "exact"),
        (None, None, "exact"),
    ],
)
def test_exact_is_chosen_by_evaluator_type_then_expected_type(
    tmp_path: Path, evaluator: dict[str, Any] | None, expected_type: str | None, kind: str
) -> None:
    expected: dict[str, Any] = {"value": "42", "keywords": ["4"]}
    if expected_type is not None:
        expected["type"] = expected_type
    fields: dict[str, Any] = {"expectedOutput": expected}
    if evaluator is not None:
        fields["evaluator"] = evaluator
    assert spec_of(tmp_path, **fields).type == kind


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({"evaluator": {"type": "json_schema"}}, "json_schema"),
        ({"evaluator": {"type": "schema"}}, "json_schema"),
        ({"expectedOutput": {"type": "schema", "schema": {"type": "object"}}}, "json_schema"),
        ({"evaluator": {"type": "contains"}, "expectedOutput": {"type": "exact"}}, "contains"),
        ({"expectedOutput": {"type": "regex", "patterns": ["a"]}}, "regex"),
    ],
)
def test_aliases_and_the_expected_type_fallback(
    tmp_path: Path, fields: dict[str, Any], kind: str
) -> None:
    fields.setdefault("expectedOutput", {"type": "exact", "schema": {"type": "object"}})
    assert spec_of(tmp_path, **fields).type == kind


def test_case_sensitive_is_mapped_and_defaults_are_the_evaluators(tmp_path: Path) -> None:
    exact = {"type": "exact", "value": "A"}
    unwrap = {"unwrap": ["result", "output", "answer"]}  # eval-skills' rule, made explicit
    assert spec_of(tmp_path, expectedOutput=exact).options == unwrap
    flagged = spec_of(tmp_path, expectedOutput=exact, evaluator={"caseSensitive": False})
    assert flagged.options == {**unwrap, "case_sensitive": False}
    contains = {"type": "contains", "keywords": ["K"]}
    assert spec_of(tmp_path, expectedOutput=contains).options == {"keywords": ["K"]}
    strict = spec_of(
        tmp_path, expectedOutput=contains, evaluator={"type": "contains", "caseSensitive": True}
    )
    assert strict.options == {"keywords": ["K"], "case_sensitive": True}


def test_missing_keywords_and_patterns_become_empty_lists(tmp_path: Path) -> None:
    contains = spec_of(tmp_path, expectedOutput={"type": "contains"})
    assert contains.options == {"keywords": []}
    regex = spec_of(tmp_path, expectedOutput={"type": "regex"})
    assert regex.options == {"patterns": [], "on_invalid": "miss"}
    folded = spec_of(
        tmp_path,
        expectedOutput={"type": "regex", "patterns": ["^a"]},
        evaluator={"type": "regex", "caseSensitive": False},
    )
    assert folded.options == {"patterns": ["^a"], "on_invalid": "miss", "flags": "i"}


def test_exact_with_null_value_expects_null(tmp_path: Path) -> None:
    spec = spec_of(tmp_path, expectedOutput={"type": "exact", "value": None})
    assert spec.options == {"unwrap": ["result", "output", "answer"], "value": None}


def test_schema_keeps_an_explicit_draft(tmp_path: Path) -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}
    spec = spec_of(tmp_path, expectedOutput={"type": "schema", "schema": schema})
    assert spec.options == {"schema": schema}


@pytest.mark.parametrize(
    ("schema", "path", "message"),
    [
        ({"type": "object", "requird": ["a"]}, ".schema.requird", "keyword `requird`"),
        (
            {"properties": {"a": {"type": "string", "minLen": 3}}},
            ".schema.properties.a.minLen",
            "keyword `minLen`",
        ),
        ({"anyOf": [{"type": "string"}, {"x-doc": 1}]}, ".schema.anyOf[1].x-doc", "`x-doc`"),
        ({"items": {"format": "colour"}}, ".schema.items.format", "unknown format 'colour'"),
        ({"prefixItems": [{"type": "string"}]}, ".schema.prefixItems", "`prefixItems`"),
    ],
)
def test_schema_keywords_ajv_strict_mode_refuses_fail_the_load(
    tmp_path: Path, schema: dict[str, Any], path: str, message: str
) -> None:
    with pytest.raises(FormatError) as info:
        spec_of(tmp_path, expectedOutput={"type": "schema", "schema": schema})
    assert info.value.json_path == "$.tasks[0].expectedOutput" + path
    assert message in info.value.message and info.value.line is not None


def test_schema_keywords_of_later_drafts_pass_when_the_schema_names_them(tmp_path: Path) -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "prefixItems": [{"type": "string", "format": "email", "nullable": True}],
        "$defs": {"x": {"title": "t", "examples": [{"any": "data", "keys": 1}]}},
    }
    spec = spec_of(tmp_path, expectedOutput={"type": "schema", "schema": schema})
    assert spec.options == {"schema": schema}


def test_llm_judge_mapping(tmp_path: Path) -> None:
    registries = with_judge()
    judged = only_task(
        tmp_path,
        registries,
        expectedOutput={"type": "llm_judge", "judgePrompt": "Rate it", "value": "ref"},
    )
    assert judged.evaluators == (
        EvaluatorSpec("llm_judge", {"judge_prompt": "Rate it", "reference": "ref"}),
    )
    assert judged.expected == "ref" and judged.metadata["scorerType"] == "llm_judge"
    bare = only_task(tmp_path, registries, expectedOutput={}, evaluator={"type": "llm_judge"})
    assert bare.evaluators == (EvaluatorSpec("llm_judge", {}),)


def test_llm_judge_must_be_registered(tmp_path: Path) -> None:
    registries = default_registries().copy()
    registries.evaluators = type(registries.evaluators)("evaluator", "benchkit.no-such-group")
    for name in ("exact", "contains"):
        registries.evaluators.add(name, default_registries().evaluators.get(name))
    path = write(tmp_path, bench([task(expectedOutput={"type": "llm_judge"})]))
    with pytest.raises(FormatError) as info:
        load(path, registries=registries)
    assert info.value.json_path == "$.tasks[0].expectedOutput.type"
    assert "llm_judge" in info.value.message and "not registered" in info.value.message


def test_weight_and_prompt(tmp_path: Path) -> None:
    weighted = only_task(tmp_path, weight=2.5, prompt="What is asked")
    assert weighted.weight == 2.5 and weighted.metadata["weight"] == 2.5
    assert weighted.description == "What is asked"
    described = only_task(tmp_path, description="D", prompt="P")
    assert described.description == "D" and described.weight == 1.0
    assert "weight" not in described.metadata


# --------------------------------------------------------------------------- errors


def located(tmp_path: Path, data: Any) -> FormatError:
    path = write(tmp_path, data)
    with pytest.raises(FormatError) as info:
        load(path)
    error = info.value
    assert error.file == str(path)
    assert error.line is not None and error.column is not None
    return error


def test_unknown_evaluator_type_is_a_located_load_error(tmp_path: Path) -> None:
    error = located(tmp_path, bench([task(), task(id="t2", evaluator={"type": "contians"})]))
    assert error.json_path == "$.tasks[1].evaluator.type"
    assert "unknown evaluator type `contians`" in error.message
    assert error.fix is not None and "contains" in error.fix
    lines = Path(error.file or "").read_text().splitlines()
    assert '"contians"' in lines[(error.line or 0) - 1]


@pytest.mark.parametrize("version", ["banana", "1.0", "v1.0.0", "01.2.3"])
def test_the_version_is_semver(tmp_path: Path, version: str) -> None:
    """The custom-benchmark guide's `version` is a semver version."""
    error = located(tmp_path, bench([task()], version=version))
    assert error.json_path == "$.version"
    assert "is not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.0.0)" in error.message


def test_semver_with_prerelease_and_build_loads(tmp_path: Path) -> None:
    path = write(tmp_path, bench([task()], version="2.1.0-rc.1+build.7"))
    assert load(path).benchmark.version == "2.1.0-rc.1+build.7"


@given(
    st.one_of(
        st.text(max_size=12),
        st.from_regex(r"\A[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}(-[a-z0-9.]{0,6})?\n?\Z"),
        st.integers(),
    )
)
def test_the_quick_check_of_a_version_agrees_with_jsonschema(version: Any) -> None:
    from jsonschema import Draft202012Validator

    from benchkit._jsonschema import _quick_check, load_schema

    schema = load_schema("eval_skills")["properties"]["version"]
    quick = _quick_check(schema)
    assert quick is not None
    assert quick(version) == Draft202012Validator(schema).is_valid(version)


def test_custom_scorers_are_rejected(tmp_path: Path) -> None:
    error = located(tmp_path, bench([task(expectedOutput={"type": "custom"})]))
    assert error.json_path == "$.tasks[0].expectedOutput.type"
    assert "JavaScript" in error.message


@pytest.mark.parametrize(
    ("expected", "path", "words"),
    [
        ({"type": "exact"}, "$.tasks[0].expectedOutput", "needs `expectedOutput.value`"),
        ({"type": "schema"}, "$.tasks[0].expectedOutput", "needs `expectedOutput.schema`"),
        (
            {"type": "schema", "schema": {"type": "object", "properties": {"a": {"type": 5}}}},
            "$.tasks[0].expectedOutput.schema.properties.a.type",
            "invalid JSON Schema",
        ),
    ],
)
def test_incomplete_expectations_are_load_errors(
    tmp_path: Path, expected: dict[str, Any], path: str, words: str
) -> None:
    error = located(tmp_path, bench([task(expectedOutput=expected)]))
    assert error.json_path == path
    assert words in error.message


@pytest.mark.parametrize(
    ("data", "path", "words"),
    [
        ({"id": "b", "tasks": [task()]}, "$", "missing required key `name`"),
        (bench([task(timeoutMS=5)]), "$.tasks[0].timeoutMS", "unknown key `timeoutMS`"),
        (bench([task(timeoutMs=0)]), "$.tasks[0].timeoutMs", "out of range"),
        (bench([task(inputData="1+1")]), "$.tasks[0].inputData", "expected a mapping"),
        (bench([task()], scoringMethod="median"), "$.scoringMethod", "is not one of"),
        (bench([]), "$.tasks", "must not be empty"),
        (bench([task(weight=-1)]), "$.tasks[0].weight", "out of range"),
        (
            bench([task(expectedOutput={"type": "contains", "keywords": ["a", 1]})]),
            "$.tasks[0].expectedOutput.keywords[1]",
            "expected a string",
        ),
    ],
)
def test_schema_violations_are_located(
    tmp_path: Path, data: dict[str, Any], path: str, words: str
) -> None:
    error = located(tmp_path, data)
    assert error.json_path == path
    assert words in error.message
    assert error.fix is not None and "docs/formats/eval-skills.md" in error.fix


def test_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    error = located(tmp_path, bench([task(evalutor={"type": "exact"})]))
    assert error.fix is not None and "did you mean `evaluator`" in error.fix


def test_duplicate_task_ids(tmp_path: Path) -> None:
    error = located(tmp_path, bench([task(), task()]))
    assert error.json_path == "$.tasks[1].id"
    assert "first used at $.tasks[0]" in error.message


def test_not_json_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    path.write_text('{"id": "b",\n  "tasks": [}')
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.line == 2


# --------------------------------------------------------------------------- resolving


@pytest.fixture
def benchmarks_dir(tmp_path: Path) -> Path:
    root = tmp_path / "benchmarks"
    (root / "nested").mkdir(parents=True)
    (root / "definitions").mkdir()
    write(root, bench([task()], id="flat-id"), "flat.json")
    write(root / "nested", bench([task()], id="nested-id"), "benchmark.json")
    write(root / "definitions", bench([task()], id="defined-id"), "x.json")
    write(root, {"not": "a benchmark"}, "other.json")
    (root / "broken.json").write_text("{")
    return root


def test_ids_are_registered_by_internal_id(benchmarks_dir: Path) -> None:
    found = find_benchmarks(benchmarks_dir)
    assert sorted(found) == ["defined-id", "flat-id", "nested-id"]
    assert resolve("flat-id", benchmarks_dir=benchmarks_dir) == benchmarks_dir / "flat.json"
    nested = load_benchmark("nested-id", benchmarks_dir=benchmarks_dir)
    assert nested.benchmark.id == "nested-id"
    defined = resolve("defined-id", benchmarks_dir=benchmarks_dir)
    assert defined == benchmarks_dir / "definitions" / "x.json"


def test_paths_files_and_directories(benchmarks_dir: Path, tmp_path: Path) -> None:
    nested = benchmarks_dir / "nested"
    assert resolve(str(nested), benchmarks_dir=tmp_path) == nested / "benchmark.json"
    flat = benchmarks_dir / "flat.json"
    assert resolve(flat, benchmarks_dir=tmp_path) == flat
    with pytest.raises(ConfigError, match=r"holds no benchmark\.json"):
        resolve(str(benchmarks_dir / "definitions"), benchmarks_dir=tmp_path)


def test_an_id_wins_over_a_path(benchmarks_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(benchmarks_dir)
    (benchmarks_dir / "flat-id").mkdir()  # a directory named like the id
    assert resolve("flat-id", benchmarks_dir=benchmarks_dir) == benchmarks_dir / "flat.json"


def test_unknown_id_lists_the_known_ones(benchmarks_dir: Path) -> None:
    with pytest.raises(ConfigError) as info:
        resolve("nope", benchmarks_dir=benchmarks_dir)
    assert "known: defined-id, flat-id, nested-id" in info.value.message


def test_an_ambiguous_id_is_an_error(benchmarks_dir: Path) -> None:
    write(benchmarks_dir / "definitions", bench([task()], id="flat-id"), "again.json")
    with pytest.raises(ConfigError, match="defined by several files"):
        resolve("flat-id", benchmarks_dir=benchmarks_dir)


# --------------------------------------------------------------------------- property


_KEYWORDS = st.lists(st.text(max_size=5), max_size=3)
_EXPECTED = st.one_of(
    st.builds(lambda v: {"type": "exact", "value": v}, st.text(max_size=5)),
    st.builds(lambda k: {"type": "contains", "keywords": k}, _KEYWORDS),
    st.builds(lambda p: {"type": "regex", "patterns": p}, st.lists(st.just("a+"), max_size=2)),
    st.just({"type": "schema", "schema": {"type": "object"}}),
)
_TASK = st.fixed_dictionaries(
    {
        "inputData": st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
        "expectedOutput": _EXPECTED,
    },
    optional={
        "timeoutMs": st.integers(min_value=1, max_value=10**6),
        "weight": st.floats(min_value=0, max_value=100, allow_nan=False),
        "tags": st.lists(st.text(max_size=4), max_size=3),
        "description": st.text(max_size=10),
        "evaluator": st.fixed_dictionaries({}, optional={"caseSensitive": st.booleans()}),
    },
)


@settings(max_examples=60, deadline=None)
@given(
    tasks=st.lists(_TASK, min_size=1, max_size=6),
    method=st.sampled_from(["mean", "weighted_mean", "pass_at_k"]),
    latency=st.none() | st.integers(min_value=1, max_value=10**6),
)
def test_any_valid_document_maps_field_for_field(
    tasks: list[dict[str, Any]], method: str, latency: int | None
) -> None:
    items = [{"id": f"t{i}", **t} for i, t in enumerate(tasks)]
    data = bench(items, scoringMethod=method)
    if latency is not None:
        data["maxLatencyMs"] = latency
    doc = parse_document(json.dumps(data), path="gen.json", kind="json")
    suite = load(Path("gen.json"), document=doc)
    assert suite.benchmark.scoring.method == method
    assert suite.benchmark.metadata.get("maxLatencyMs") == latency
    loaded = list(suite.benchmark.iter_tasks())
    assert [t.id for t in loaded] == [t["id"] for t in items]
    for got, item in zip(loaded, items, strict=True):
        assert got.input == item["inputData"]
        assert got.expected == item["expectedOutput"].get("value")
        assert got.timeout == (item["timeoutMs"] / 1000 if "timeoutMs" in item else None)
        assert got.weight == item.get("weight", 1.0)
        assert got.tags == tuple(item.get("tags", ()))
        (spec,) = got.evaluators
        kind = {"schema": "json_schema"}.get(
            item["expectedOutput"]["type"], item["expectedOutput"]["type"]
        )
        assert spec.type == kind
        case = item.get("evaluator", {}).get("caseSensitive")
        if kind in ("exact", "contains") and case is not None:
            assert spec.options["case_sensitive"] is case


def test_llm_judge_tasks_run_against_an_openai_compatible_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llm_server: FakeOpenAI
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.url)
    monkeypatch.setenv("EVAL_SKILLS_LLM_KEY", "sk-judge")
    llm_server.queue(Reply.text("9"), Reply.text("Three, roughly."))
    doc = bench(
        [
            task(id="good", inputData={"q": 1}, expectedOutput={"type": "llm_judge"}),
            task(id="odd", inputData={"q": 2}, expectedOutput={"type": "llm_judge"}),
        ]
    )
    suite = load(write(tmp_path, doc))
    suite = attrs.evolve(
        suite,
        conditions=(Condition("skill", CallableProvider(lambda x: {"result": x["q"]})),),
        options=attrs.evolve(suite.options, concurrency=1),
    )
    result = benchkit.run(suite, store=False)
    by_id = {c.task_id: c for c in result.cells}
    assert (by_id["good"].status, by_id["good"].score) == ("pass", 0.9)
    assert (by_id["odd"].status, by_id["odd"].error_category) == ("error", "judge_error")
    assert llm_server.requests[0].headers["Authorization"] == "Bearer sk-judge"
    assert llm_server.requests[0].body["model"] == "gpt-4o"
    assert 'Actual Output: {"result":1}' in (llm_server.requests[0].body["messages"][1]["content"])
