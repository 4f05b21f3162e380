"""Tests for the native benchmark format, the format dispatcher and the document reader."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import benchkit.formats
from benchkit._jsonschema import load_schema
from benchkit.errors import ConfigError, FormatError
from benchkit.formats import native
from benchkit.formats._source import parse_document, read_document, render_path
from benchkit.model import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    LazyTasks,
    ProviderSpec,
    RunOptions,
    ScoringSpec,
    SetupStep,
    Source,
    Suite,
    Task,
    ToolCall,
    VerifierSpec,
)
from benchkit.registry import Registries, Registry, default_registries

FIXTURES = Path(__file__).parent / "fixtures" / "native"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def regs() -> Registries:
    """Default registries plus the verifier names the fixtures use (never imported)."""
    registries = default_registries().copy()
    for name in ("file_exists", "command_exit_code"):
        registries.verifiers.add(name, "tests.nowhere:Verifier")
    return registries


def put(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load_error(path: Path, **options: Any) -> FormatError:
    with pytest.raises(FormatError) as info:
        native.load(path, **options)
    return info.value


def same_suite(a: Suite, b: Suite) -> None:
    """attrs equality, plus the providers that Condition's eq leaves out."""
    assert a == b
    assert [c.provider for c in a.conditions] == [c.provider for c in b.conditions]


def expected_full() -> Suite:
    path = (FIXTURES / "full.yaml").resolve()
    tasks = (
        Task(
            id="add-1",
            input="What is 2 + 2?",
            expected="4",
            evaluators=(EvaluatorSpec("regex", {"patterns": [r"\b4\b"]}),),
            verifiers=(VerifierSpec("command_exit_code"),),
            timeout=2.5,
            weight=2.0,
            tags=("easy", "addition"),
            domain="arithmetic",
            difficulty="easy",
            description="Adds two small numbers.",
            context=("2 + 2 = 4",),
            expected_tool_calls=(ToolCall("add", {"a": 2, "b": 2}, "call-1"),),
            relevant_ids=("doc-1", "doc-2"),
            setup=(
                SetupStep(
                    "add",
                    content="The answer to 2 + 2 is 4.",
                    target="fact-1",
                    metadata={"source": "textbook"},
                    delay_ms=5.0,
                ),
                SetupStep("wait", delay_ms=100.0),
            ),
            metadata={"source": "handwritten"},
        ),
        Task(
            id="mul-1",
            input={"messages": [{"role": "user", "content": "3 * 7?"}]},
            expected=21,
        ),
    )
    benchmark = Benchmark(
        id="arithmetic",
        name="Arithmetic",
        version="1.2.0",
        tasks=tasks,
        domain="math",
        description="Small sums, with and without a calculator tool.",
        scoring=ScoringSpec("pass_at_k", 2),
        timeout=10.0,
        evaluators=(
            EvaluatorSpec("exact"),
            EvaluatorSpec("contains", {"case_sensitive": False}, name="mentions-answer"),
        ),
        verifiers=(VerifierSpec("file_exists", {"path": "out.txt"}),),
        metadata={"owner": "evals-team", "created": "2024-05-01"},
        source=Source(path=str(path), format="native"),
    )
    conditions = (
        Condition(
            id="calculator",
            provider=ProviderSpec(
                "python", {"callable": "examples.calc:solve", "pass_request": True}
            ),
            label="With calculator",
            bundle=path.parent / "bundles" / "calculator",
            options={"tools": ["add", "mul"]},
            concurrency=2,
        ),
        Condition(id="baseline", provider=ProviderSpec("mock")),
    )
    options = RunOptions(
        concurrency=4,
        timeout=30.0,
        retries=2,
        retry_on=frozenset({"execution_error", "timeout"}),
        backoff_base=0.25,
        backoff_max=5.0,
        epochs=3,
        deterministic=True,
        seed=42,
        errors_as="exclude",
    )
    return Suite(benchmark, conditions, options, base_dir=path.parent)


# --------------------------------------------------------------------------- loading


def test_full_fixture_loads_every_field(regs: Registries) -> None:
    suite = native.load(FIXTURES / "full.yaml", registries=regs)
    expected = expected_full()
    assert suite.benchmark.tasks == expected.benchmark.tasks
    same_suite(suite, expected)
    assert isinstance(suite.options.retry_on, frozenset)
    assert isinstance(suite.benchmark.timeout, float)
    # plain builtins, not ruamel's round-trip types
    assert type(suite.benchmark.tasks[1].input["messages"]) is list  # type: ignore[index]
    assert type(suite.benchmark.metadata) is dict


def test_yaml_and_json_versions_load_equal(regs: Registries) -> None:
    from_yaml = native.load(FIXTURES / "full.yaml", registries=regs)
    from_json = native.load(FIXTURES / "full.json", registries=regs)
    moved = attrs.evolve(
        from_json,
        benchmark=attrs.evolve(from_json.benchmark, source=from_yaml.benchmark.source),
    )
    same_suite(moved, from_yaml)
    assert from_json.benchmark.source.path == str((FIXTURES / "full.json").resolve())


def test_fixture_is_valid_for_plain_jsonschema() -> None:
    """What an editor does with the shipped schema: the fixtures pass, a typo fails."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(native.schema())
    for name in ("full.yaml", "full.json", "minimal/benchmark.yaml"):
        assert list(validator.iter_errors(read_document(FIXTURES / name).data)) == []
    assert list(validator.iter_errors({"benchkit": 1, "id": "x", "taks": []}))
    assert native.schema() == load_schema("native")


def test_detect() -> None:
    fmt = native.FORMAT
    assert fmt.name == "native"
    assert isinstance(fmt, benchkit.formats.Format)
    assert fmt.detect(Path("b.yaml"), {"benchkit": 1, "id": "x"})
    assert fmt.detect(Path("b.json"), read_document(FIXTURES / "full.json").data)
    assert not fmt.detect(Path("b.json"), {"id": "x", "tasks": []})
    assert not fmt.detect(Path("b.json"), [{"benchkit": 1}])
    assert not fmt.detect(Path("d"), None)


def test_formats_load_directory_and_detect_format() -> None:
    suite = benchkit.formats.load(FIXTURES / "minimal")
    assert suite.benchmark.id == "minimal"
    assert [t.id for t in suite.benchmark.iter_tasks()] == ["t1"]
    assert suite.base_dir == (FIXTURES / "minimal").resolve()
    assert benchkit.formats.detect_format(FIXTURES / "minimal") == "native"
    assert benchkit.formats.detect_format(FIXTURES / "full.json") == "native"
    forced = benchkit.formats.load(FIXTURES / "minimal" / "benchmark.yaml", format="native")
    assert forced == suite


def test_formats_load_unrecognised_and_missing(tmp_path: Path) -> None:
    other = put(tmp_path, "other.json", '{"id": "x", "tasks": []}')
    with pytest.raises(FormatError) as info:
        benchkit.formats.load(other)
    assert str(other) in str(info.value)
    assert "known formats: native" in str(info.value)
    assert "benchkit: 1" in str(info.value.fix)

    with pytest.raises(FormatError) as info:
        benchkit.formats.detect_format(tmp_path / "nope.yaml")
    assert "no such file or directory" in str(info.value)
    assert "benchmark.yaml" in str(info.value.fix)

    with pytest.raises(FormatError, match="no benchmark file in this directory"):
        benchkit.formats.load(tmp_path)


def test_formats_load_reports_syntax_error_over_no_match(tmp_path: Path) -> None:
    bad = put(tmp_path, "benchmark.yaml", "benchkit: 1\nid: [oops\n")
    with pytest.raises(FormatError) as info:
        benchkit.formats.load(tmp_path)
    assert info.value.message.startswith("invalid YAML")
    assert info.value.file == str(bad)


def test_formats_load_passes_options_and_registries(tmp_path: Path) -> None:
    put(tmp_path, "bundles/a/x.txt", "x")
    bench = put(
        tmp_path,
        "suite/benchmark.yaml",
        """
        benchkit: 1
        id: b
        conditions:
          - {id: a, provider: mock, bundle: ../bundles/a}
        tasks: [{id: t, evaluators: [shiny]}]
        """,
    )
    regs = default_registries().copy()
    regs.evaluators.add("shiny", "tests.nowhere:Shiny")
    suite = benchkit.formats.load(bench.parent, registries=regs, root=tmp_path)
    assert suite.conditions[0].bundle == (tmp_path / "bundles" / "a").resolve()
    with pytest.raises(benchkit.ConfigError, match="takes no options"):
        benchkit.formats.load(bench, registries=regs, colour="blue")


def test_discover_finds_benchmarks_and_reports_broken_ones(tmp_path: Path) -> None:
    put(tmp_path, "a/benchmark.yaml", "benchkit: 1\nid: a\ntasks: [{id: t}]\n")
    put(tmp_path, "b.json", '{"benchkit": 1, "id": "b", "tasks": [{"id": "t"}]}')
    put(tmp_path, "broken.yaml", "benchkit: 1\nid: c\ntasks: [{id: t, evaluators: [exakt]}]\n")
    put(tmp_path, "garbled.yaml", "a: [\n")
    put(tmp_path, "config.json", '{"not": "a benchmark"}')
    put(tmp_path, "tasks.jsonl", '{"id": "t"}\n')
    put(tmp_path, ".hidden/benchmark.yaml", "benchkit: 1\nid: hidden\ntasks: [{id: t}]\n")
    found, problems = benchkit.formats.discover(tmp_path)
    assert [(p.relative_to(tmp_path).as_posix(), s.benchmark.id) for p, s in found] == [
        ("b.json", "b"),
        ("a/benchmark.yaml", "a"),
    ]
    assert [p.name for p, _ in problems] == ["broken.yaml", "garbled.yaml"]
    assert "unknown evaluator type `exakt`" in str(problems[0][1])


# --------------------------------------------------------------------------- tasks_file


def test_tasks_file_streams_lazily(tmp_path: Path) -> None:
    lines = [json.dumps({"id": f"t{i}", "input": i, "expected": i * 2}) for i in range(1, 1001)]
    lines[899] = '{"id": "t900", "input": 900, "weight": "heavy"}'  # line 900 is bad
    lines.insert(10, "   ")  # blank lines are skipped (and not counted)
    (tmp_path / "tasks.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: big\ntasks_file: tasks.jsonl\n")

    suite = native.load(bench)  # the bad line is not read yet
    tasks = suite.benchmark.tasks
    assert isinstance(tasks, LazyTasks)
    assert tasks.count == 1000
    assert suite.benchmark.task_count == 1000

    first = next(iter(tasks))
    assert first == Task(id="t1", input=1, expected=2)
    assert [t.id for t in itertools.islice(tasks, 850)][-1] == "t850"  # fresh iterator

    stream = iter(tasks)
    with pytest.raises(FormatError) as info:
        for _ in stream:
            pass
    err = info.value
    # line 901 of the file: 899 good lines, the blank at line 11, then the bad one
    assert str(err).startswith(f"{tmp_path / 'tasks.jsonl'}:901:40: $.weight: ")
    assert "expected a number" in str(err)


def test_tasks_file_bad_json_line_and_duplicate(tmp_path: Path) -> None:
    put(tmp_path, "t.jsonl", '{"id": "a"}\n{"id": "b",}\n')
    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\ntasks_file: t.jsonl\n")
    tasks = native.load(bench).benchmark.tasks
    with pytest.raises(FormatError) as info:
        list(tasks)
    assert str(info.value).startswith(f"{tmp_path / 't.jsonl'}:2:12: invalid JSON")
    assert "trailing comma" in str(info.value.fix)

    put(tmp_path, "t.jsonl", '{"id": "a"}\n\n{"id": "a", "input": 1}\n')
    with pytest.raises(FormatError) as info:
        list(native.load(bench).benchmark.tasks)
    assert str(info.value).startswith(f"{tmp_path / 't.jsonl'}:3:8: $.id: duplicate task id 'a'")
    assert "first used at line 1" in str(info.value)


def test_tasks_file_unknown_evaluator_in_a_line(tmp_path: Path) -> None:
    put(tmp_path, "t.jsonl", '{"id": "a"}\n{"id": "b", "evaluators": ["exactly"]}\n')
    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\ntasks_file: t.jsonl\n")
    with pytest.raises(FormatError) as info:
        list(native.load(bench).benchmark.tasks)
    assert str(info.value).startswith(f"{tmp_path / 't.jsonl'}:2:28: $.evaluators[0]: ")
    assert "did you mean `exact`?" in str(info.value)


def test_tasks_file_as_yaml_list(tmp_path: Path) -> None:
    put(tmp_path, "tasks.yaml", "- id: a\n  input: 1\n- id: b\n  weight: -1\n")
    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\ntasks_file: tasks.yaml\n")
    err = load_error(bench)
    assert str(err).startswith(f"{tmp_path / 'tasks.yaml'}:4:11: $[1].weight: ")
    put(tmp_path, "tasks.yaml", "- id: a\n  input: 1\n")
    assert native.load(bench).benchmark.tasks == (Task(id="a", input=1),)


def test_tasks_file_missing_or_unsupported(tmp_path: Path) -> None:
    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\ntasks_file: nope.jsonl\n")
    err = load_error(bench)
    assert str(err).startswith(f"{bench}:3:13: $.tasks_file: tasks_file 'nope.jsonl' does not")
    put(tmp_path, "t.csv", "id\na\n")
    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\ntasks_file: t.csv\n")
    assert "unsupported type .csv" in str(load_error(bench))


# --------------------------------------------------------------------------- errors


def test_wrong_type(tmp_path: Path) -> None:
    bench = put(
        tmp_path,
        "b.yaml",
        """
        benchkit: 1
        id: x
        timeout: 10s
        tasks: [{id: a}]
        """,
    )
    err = load_error(bench)
    assert str(err) == (
        f'{bench}:3:10: $.timeout: expected a number, got a string ("10s") '
        "Fix: use a number; see docs/formats/native.md"
    )
    assert (err.line, err.column, err.json_path) == (3, 10, "$.timeout")


def test_missing_required_key(tmp_path: Path) -> None:
    bench = put(
        tmp_path,
        "b.yaml",
        """
        benchkit: 1
        id: x
        tasks:
          - id: a
          - input: 2
            expected: 4
        """,
    )
    err = load_error(bench)
    assert str(err).startswith(f"{bench}:5:5: $.tasks[1]: missing required key `id`")
    assert err.fix == "add the `id` key; see docs/formats/native.md"


def test_unknown_key_did_you_mean(tmp_path: Path) -> None:
    bench = put(
        tmp_path,
        "b.yaml",
        """
        benchkit: 1
        id: x
        tasks:
          - id: a
            inptu: 2
        """,
    )
    err = load_error(bench)
    assert str(err).startswith(f"{bench}:5:5: $.tasks[0].inptu: unknown key `inptu`")
    assert err.fix is not None
    assert err.fix.startswith("remove `inptu` (did you mean `input`?)")


def test_unknown_key_without_close_match_lists_allowed(tmp_path: Path) -> None:
    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\nzzz: 1\ntasks: [{id: a}]\n")
    err = load_error(bench)
    assert (err.line, err.column, err.json_path) == (3, 1, "$.zzz")
    assert "allowed keys: $schema, benchkit, id, name" in str(err.fix)


def test_enum_and_const(tmp_path: Path) -> None:
    bench = put(
        tmp_path,
        "b.yaml",
        "benchkit: 1\nid: x\nscoring: {method: median}\ntasks: [{id: a}]\n",
    )
    err = load_error(bench)
    assert str(err).startswith(f'{bench}:3:19: $.scoring.method: "median" is not one of')
    assert str(err.fix).startswith("use one of: mean, weighted_mean, pass_at_k")

    bench = put(tmp_path, "b.yaml", "benchkit: '1'\nid: x\ntasks: [{id: a}]\n")
    err = load_error(bench)
    assert (err.line, err.column, err.json_path) == (1, 11, "$.benchkit")
    assert str(err.fix).startswith("set it to 1")

    bench = put(tmp_path, "b.yaml", "benchkit: 3\nid: x\ntasks: [{id: a}]\n")
    assert "uses native format version 3" in str(load_error(bench))


def test_unknown_evaluator_type(tmp_path: Path) -> None:
    bench = put(
        tmp_path,
        "b.yaml",
        """
        benchkit: 1
        id: x
        evaluators: [exact]
        tasks:
          - id: a
            evaluators:
              - contains
              - {type: exat, name: strict}
        """,
    )
    err = load_error(bench)
    assert str(err).startswith(
        f"{bench}:8:16: $.tasks[0].evaluators[1].type: unknown evaluator type `exat`"
    )
    known = str(err.fix).split("use one of: ", 1)[1].split(";")[0].rstrip(".").split(", ")
    assert {"contains", "exact"} <= set(known) and known == sorted(known)
    assert "(did you mean `exact`?)" in str(err.fix)

    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\nevaluators: [regexp]\ntasks: [{id: a}]\n")
    err = load_error(bench)
    assert (err.line, err.column, err.json_path) == (3, 14, "$.evaluators[0]")


def test_unknown_verifier_and_provider_type(tmp_path: Path) -> None:
    bench = put(
        tmp_path, "b.yaml", "benchkit: 1\nid: x\nverifiers: [file_exists]\ntasks: [{id: a}]\n"
    )
    empty = default_registries().copy()
    empty.verifiers = Registry("verifier", "benchkit.test.none")
    err = load_error(bench, registries=empty)
    assert (err.line, err.column) == (3, 13)
    assert "unknown verifier type `file_exists`" in str(err)
    assert "no verifier types are registered yet" in str(err.fix)
    err = load_error(bench)
    assert "did you mean `bundle_file_exists`?" in str(err.fix)

    bench = put(
        tmp_path,
        "b.yaml",
        """
        benchkit: 1
        id: x
        conditions:
          - id: a
            provider: {type: htttp, url: "http://localhost"}
        tasks: [{id: a}]
        """,
    )
    err = load_error(bench)
    assert str(err).startswith(f"{bench}:5:22: $.conditions[0].provider.type: unknown provider")
    assert "did you mean `http`?" in str(err.fix)


def test_duplicate_ids(tmp_path: Path) -> None:
    bench = put(
        tmp_path,
        "b.yaml",
        """
        benchkit: 1
        id: x
        tasks:
          - id: a
          - id: b
          - id: a
        """,
    )
    err = load_error(bench)
    assert str(err).startswith(f"{bench}:6:9: $.tasks[2].id: duplicate task id 'a'")
    assert "first used at $.tasks[0], line 4" in str(err)

    bench = put(
        tmp_path,
        "b.yaml",
        """
        benchkit: 1
        id: x
        conditions:
          - {id: a, provider: mock}
          - {id: a, provider: mock}
        tasks: [{id: t}]
        """,
    )
    err = load_error(bench)
    assert (err.line, err.column, err.json_path) == (5, 10, "$.conditions[1].id")


def test_yaml_syntax_error(tmp_path: Path) -> None:
    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\ntasks:\n  - id: a\n   input: 2\n")
    err = load_error(bench)
    assert str(err).startswith(f"{bench}:5:4: invalid YAML: expected <block end>")
    assert err.fix is not None

    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\ndescription: a: b\n")
    err = load_error(bench)
    assert str(err).startswith(f"{bench}:3:15: invalid YAML: mapping values are not allowed")
    assert "quote a value" in str(err.fix)

    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\n\ttasks: []\n")
    err = load_error(bench)
    assert (err.line, err.column) == (3, 1)
    assert "tabs" in str(err.fix)

    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\nid: y\ntasks: [{id: a}]\n")
    err = load_error(bench)
    assert (err.line, err.column) == (3, 1)
    assert "duplicate key" in str(err)


def test_json_syntax_error(tmp_path: Path) -> None:
    bench = put(
        tmp_path,
        "b.json",
        '{\n  "benchkit": 1,\n  "id": "x",\n  "tasks": [{"id": "a"},]\n}\n',
    )
    err = load_error(bench)
    assert str(err).startswith(f"{bench}:4:25: invalid JSON: Expecting value")

    bench = put(tmp_path, "b.json", '{"benchkit": 1, "id": "x",\n "id": "y", "tasks": []}')
    err = load_error(bench)
    assert (err.line, err.column, err.json_path) == (2, 2, "$.id")
    assert "duplicate key 'id'" in str(err)


def test_json_file_error_on_known_line_with_tabs(tmp_path: Path) -> None:
    text = (FIXTURES / "full.json").read_text(encoding="utf-8")
    bad = text.replace('"weight": 2.0', '"weight": "heavy"')
    bench = tmp_path / "full.json"
    bench.write_text(bad, encoding="utf-8")
    (tmp_path / "bundles" / "calculator").mkdir(parents=True)
    line = next(i for i, s in enumerate(bad.splitlines(), 1) if '"weight"' in s)
    assert line == 87
    regs = default_registries().copy()
    regs.verifiers.add("file_exists", "x:y")
    regs.verifiers.add("command_exit_code", "x:y")
    err = load_error(bench, registries=regs)
    # three tabs, then `"weight": ` — the value starts at character 14
    assert str(err).startswith(f"{bench}:87:14: $.tasks[0].weight: expected a number, got a string")


def test_missing_bundle_and_outside_root(tmp_path: Path) -> None:
    bench = put(
        tmp_path,
        "suite/b.yaml",
        """
        benchkit: 1
        id: x
        conditions:
          - id: a
            provider: mock
            bundle: ./bundles/missing
        tasks: [{id: t}]
        """,
    )
    err = load_error(bench)
    assert str(err).startswith(f"{bench}:6:13: $.conditions[0].bundle: bundle directory")
    assert "does not exist" in str(err)

    (tmp_path / "elsewhere").mkdir()
    bench.write_text(bench.read_text().replace("./bundles/missing", "../elsewhere"))
    err = load_error(bench)
    assert "points outside the benchmark's directory" in str(err)
    assert (err.line, err.column) == (6, 13)
    suite = native.load(bench, root=tmp_path)
    assert suite.conditions[0].bundle == (tmp_path / "elsewhere").resolve()


def test_a_bundle_cannot_leave_the_directory_through_a_symlink(tmp_path: Path) -> None:
    bench = put(
        tmp_path,
        "suite/b.yaml",
        """
        benchkit: 1
        id: x
        conditions:
          - {id: a, provider: mock, bundle: ./bundles/link}
        tasks: [{id: t}]
        """,
    )
    (tmp_path / "secrets").mkdir()
    (tmp_path / "suite" / "bundles").mkdir()
    (tmp_path / "suite" / "bundles" / "link").symlink_to(tmp_path / "secrets")
    err = load_error(bench)
    assert "leads outside the benchmark's directory" in str(err) and "symbolic link" in str(err)
    assert (err.line, err.json_path) == (4, "$.conditions[0].bundle")
    (tmp_path / "suite" / "bundles" / "inside").mkdir()
    (tmp_path / "suite" / "bundles" / "link").unlink()
    (tmp_path / "suite" / "bundles" / "link").symlink_to(tmp_path / "suite" / "bundles" / "inside")
    assert native.load(bench).conditions[0].bundle is not None  # a link within is fine


def test_tasks_and_tasks_file_together_or_neither(tmp_path: Path) -> None:
    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\ntasks: [{id: a}]\ntasks_file: t.jsonl\n")
    err = load_error(bench)
    assert str(err).startswith(f"{bench}:4:1: $.tasks_file: both `tasks` and `tasks_file`")

    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\n")
    err = load_error(bench)
    assert str(err).startswith(f"{bench}:1:1: $: needs one of the keys `tasks`, `tasks_file`")
    assert str(err.fix).startswith("add `tasks` or `tasks_file`")


def test_other_shape_errors(tmp_path: Path) -> None:
    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\ntasks: []\n")
    err = load_error(bench)
    assert (err.line, err.column, err.message) == (3, 8, "must not be empty")

    bench = put(tmp_path, "b.yaml", "- benchkit: 1\n")
    assert str(load_error(bench)).startswith(f"{bench}:1:1: $: expected a mapping, got a list")

    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\nrun: {epochs: 0}\ntasks: [{id: a}]\n")
    err = load_error(bench)
    assert (err.line, err.column, err.json_path) == (3, 15, "$.run.epochs")
    assert "must be >= 1" in err.message

    bench = tmp_path / "latin1.yaml"
    bench.write_bytes(b"benchkit: 1\nid: caf\xe9\n")
    err = load_error(bench)
    assert (err.line, err.column) == (2, 8)
    assert "UTF-8" in str(err)

    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\ntasks: [{id: a, input: !python/none x}]\n")
    assert "unsupported YAML tag" in str(load_error(bench))


def test_format_error_is_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="file not found"):
        native.load(tmp_path / "absent.yaml")


# --------------------------------------------------------------------------- writing


def test_write_round_trips_every_field(regs: Registries, tmp_path: Path) -> None:
    original = expected_full()
    bundle = tmp_path / "bundles" / "calculator"
    bundle.mkdir(parents=True)
    calc = attrs.evolve(original.conditions[0], bundle=bundle.resolve())
    original = attrs.evolve(original, conditions=(calc, original.conditions[1]))
    for name in ("out.yaml", "out.json"):
        written = native.write(original, tmp_path / name)
        assert written == tmp_path / name
        loaded = native.load(written, registries=regs)
        expected = attrs.evolve(
            original,
            benchmark=attrs.evolve(
                original.benchmark, source=Source(str(written.resolve()), "native")
            ),
            base_dir=tmp_path.resolve(),
        )
        same_suite(loaded, expected)
    assert "bundle: bundles/calculator" in (tmp_path / "out.yaml").read_text()


def test_write_lazy_tasks_streams_to_jsonl(tmp_path: Path) -> None:
    tasks = tuple(Task(id=f"t{i}", input={"n": i}, tags=("x",)) for i in range(5))
    lazy = LazyTasks(lambda: iter(tasks), count=5)
    written = native.write(Benchmark(id="lazy", tasks=lazy), tmp_path / "b.yaml")
    assert native.dump(Benchmark(id="lazy", tasks=lazy)) == {"benchkit": 1, "id": "lazy"}
    assert "tasks_file: b.tasks.jsonl" in written.read_text()
    loaded = native.load(written).benchmark
    assert isinstance(loaded.tasks, LazyTasks)
    assert loaded.tasks.count == 5
    assert tuple(loaded.tasks) == tasks


def test_rewriting_a_streamed_benchmark_in_place_keeps_its_tasks(tmp_path: Path) -> None:
    lines = [json.dumps({"id": f"t{i}", "input": i}) for i in range(100)]
    (tmp_path / "b.tasks.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    bench = put(tmp_path, "b.yaml", "benchkit: 1\nid: x\ntasks_file: b.tasks.jsonl\n")
    suite = native.load(bench)
    native.write(suite.with_options(epochs=2), bench)  # reads and replaces b.tasks.jsonl
    again = native.load(bench)
    assert again.options.epochs == 2
    assert [t.input for t in again.benchmark.iter_tasks()] == list(range(100))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.tasks.jsonl", "b.yaml"]


def test_scalar_document_error_points_at_line_one(tmp_path: Path) -> None:
    bench = put(tmp_path, "b.yaml", "just a string\n")
    assert str(load_error(bench)).startswith(f"{bench}:1:1: $: expected a mapping, got a string")


class _ReadyProvider:
    """A provider object: a file can name a provider type, not hold an object."""

    async def invoke(self, request: Any) -> Any: ...


def test_dump_rejects_what_a_file_cannot_hold() -> None:
    suite = Suite(
        Benchmark(id="b", tasks=(Task("t"),)), (Condition("c", provider=_ReadyProvider()),)
    )
    with pytest.raises(ConfigError, match="provider object"):
        native.dump(suite)
    with pytest.raises(ConfigError, match="is nan"):
        native.dump(Benchmark(id="b", tasks=(Task("t", expected=math.nan),)))
    with pytest.raises(ConfigError, match="keys are strings"):
        native.dump(Benchmark(id="b", metadata={1: "x"}))  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="reserves"):
        native.dump(Benchmark(id="b", evaluators=(EvaluatorSpec("x", {"name": "y"}),)))


# --------------------------------------------------------------------------- property

_SAFE_ID = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=12)
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


@st.composite
def task_lists(draw: st.DrawFn) -> tuple[Task, ...]:
    ids = draw(st.lists(_SAFE_ID, min_size=1, max_size=6, unique=True))
    return tuple(
        Task(
            id=task_id,
            input=draw(_JSON),
            expected=draw(_JSON),
            weight=draw(st.floats(min_value=0, max_value=1e6)),
            tags=draw(st.lists(_TEXT, max_size=3)),
            metadata=draw(st.dictionaries(_TEXT, _JSON, max_size=3)),
        )
        for task_id in ids
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tasks=task_lists())
def test_dumped_task_lists_round_trip(tasks: tuple[Task, ...]) -> None:
    bench = Benchmark(id="prop", tasks=tasks)
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("b.yaml", "b.json"):
            loaded = native.load(native.write(bench, Path(tmp) / name))
            assert loaded.benchmark.tasks == tasks


# --------------------------------------------------------------------------- _source


def test_render_path() -> None:
    assert render_path(()) == "$"
    assert render_path(("tasks", 3, "evaluators", 0, "type")) == "$.tasks[3].evaluators[0].type"
    assert render_path(("metadata", "a b", "")) == '$.metadata["a b"][""]'


def test_json_locator_with_tabs_and_missing_keys() -> None:
    text = '{\n\t"a": [1,\t{"b":\t"x"}],\n\t"c": {}\n}'
    doc = parse_document(text, path="t.json", kind="json")
    assert doc.locate(("a", 1, "b")) == (2, 17)
    assert doc.locate(("a", 1, "b"), key=True) == (2, 12)
    assert doc.locate(("a", 1)) == (2, 11)
    assert doc.locate(("c", "missing")) == (3, 7)  # the nearest existing ancestor
    assert doc.locate(("a", 9)) == (2, 7)
    assert doc.locate(()) == (1, 1)


def test_yaml_locator_and_plain_data() -> None:
    text = "a:\n  b: [1, {c: 2}]\nd: 2024-01-01\ne: &x {f: 1.5}\ng: *x\n"
    doc = parse_document(text, path="t.yaml", kind="yaml", first_line=10)
    assert doc.data == {
        "a": {"b": [1, {"c": 2}]},
        "d": "2024-01-01",
        "e": {"f": 1.5},
        "g": {"f": 1.5},
    }
    assert doc.locate(("a", "b", 1, "c")) == (11, 14)
    assert doc.locate(("a", "b", 1, "c"), key=True) == (11, 11)
    assert doc.locate(("a", "zz")) == (11, 3)
    err = doc.error("boom", ("a", "b", 0), fix="defuse it")
    assert str(err) == "t.yaml:11:7: $.a.b[0]: boom Fix: defuse it"


_TASK_KEYS = sorted(load_schema("native")["$defs"]["task"]["properties"])
_VALUES = st.one_of(
    _JSON,
    st.sampled_from(["", "x", "exact", "add", "wait", "bogus", 0, 1, -1, 1.5, 0.0, True, None]),
    st.lists(st.sampled_from(["a", "", 1, None]), max_size=3),
    st.lists(
        st.one_of(
            st.sampled_from(["exact", ""]),
            st.dictionaries(
                st.sampled_from(["type", "name", "opt", "action", "arguments"]),
                st.sampled_from(["exact", "", 1, {}, "add"]),
                max_size=3,
            ),
        ),
        max_size=2,
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    instance=st.one_of(
        _JSON,
        st.dictionaries(st.sampled_from([*_TASK_KEYS, "extra"]), _VALUES, max_size=6),
        st.dictionaries(st.sampled_from(_TASK_KEYS), _VALUES, max_size=4).map(
            lambda d: {"id": "t", **d}  # valid more often
        ),
    )
)
def test_quick_check_agrees_with_jsonschema(instance: Any) -> None:
    from jsonschema import Draft202012Validator

    from benchkit._jsonschema import _quick_check, inline_refs

    full = load_schema("native")
    task = inline_refs(full["$defs"]["task"], root=full)
    quick = _quick_check(task)
    assert quick is not None
    assert quick(instance) == Draft202012Validator(task).is_valid(instance)


def test_the_complete_example_in_the_docs_validates_and_runs(tmp_path: Path) -> None:
    text = (REPO / "docs" / "formats" / "native.md").read_text(encoding="utf-8")
    section = text[text.index("## A complete example") :]
    start = section.index("```yaml\n") + 8
    yaml_text = section[start : section.index("\n```", start)]
    (tmp_path / "benchmark.yaml").write_text(yaml_text, encoding="utf-8")
    (tmp_path / "bundles" / "calculator").mkdir(parents=True)
    (tmp_path / "bundles" / "calculator" / "out.txt").write_text("ok")
    (tmp_path / "calc.py").write_text(
        "def solve(question):\n    return '4' if isinstance(question, str) else 21\n"
    )
    (tmp_path / "baseline.py").write_text(
        "from benchkit import Response\n\n"
        "class Guess:\n"
        "    async def invoke(self, request):\n"
        "        return Response(output='5')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run(
        [sys.executable, "-m", "benchkit", "validate", "benchmark.yaml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    result = benchkit.run(tmp_path / "benchmark.yaml", store=False, timeout=10, retries=0)
    assert len(result.cells) == 2 * 2 * 3
    calculator = result.aggregate("calculator")
    assert calculator.errors == 0 and calculator.passed == 6, calculator.errors_by_category
