"""skillvault bench configs: YAML 1.2, skillvault's checks in its order, its messages, bundles."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchkit.errors import ConfigError
from benchkit.formats import skillvault
from benchkit.formats._source import parse_document
from benchkit.formats.skillvault import BenchConfigError, load_config, parse_config, to_suite
from benchkit.formats.skillvault._yaml import core_yaml
from benchkit.model import ProviderSpec, VerifierSpec

from ._support import REPO

SUITE = REPO / "benchmarks" / "skillvault-bench-v0"

BASE: dict[str, Any] = {
    "schema": "skillvault.bench.config.v1",
    "conditions": [
        {"id": "no_skill"},
        {"id": "curated_skill", "bundle_path": "./curated"},
        {
            "id": "self_generated_skill",
            "adapter": {"id": "stub", "options": {"bundle_path": "./self"}},
        },
    ],
    "tasks": [
        {
            "id": "t1",
            "domain": "docs",
            "timeout_ms": 500,
            "verifier": {"function": "bundle_file_exists", "args": {"path": "answer.txt"}},
        }
    ],
}


def config(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    data.update(changes)
    return data


def rejects(data: Any) -> BenchConfigError:
    with pytest.raises(BenchConfigError) as info:
        parse_config(data)
    return info.value


def write(tmp_path: Path, text: str, name: str = "bench.yaml") -> Path:
    for bundle in ("curated", "self"):
        (tmp_path / bundle).mkdir(exist_ok=True)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- accepted


def test_defaults_match_skillvault() -> None:
    parsed = parse_config({k: v for k, v in BASE.items() if k != "schema"})
    assert parsed.schema == "skillvault.bench.config.v1"
    assert parsed.execution == skillvault.BenchExecution(retries=0, seed=0, deterministic=False)
    assert parsed.metadata == skillvault.BenchMetadata()
    assert parsed.tasks[0].verifier.type == "function"  # inferred from `function`
    assert parsed.tasks[0].verifier.label == "bundle_file_exists"


def test_strings_are_trimmed_the_javascript_way() -> None:
    data = config(
        schema="  skillvault.bench.config.v1\n",
        metadata={"suite": "\u00a0v0 ", "model_label": None, "other": 1},
    )
    data["tasks"][0].update(id=" t1\t", domain="\u3000docs")
    data["tasks"][0]["verifier"] = {"command": "  echo ok  "}
    parsed = parse_config(data)
    assert parsed.metadata == skillvault.BenchMetadata(suite="v0")  # null dropped, extras too
    assert (parsed.tasks[0].id, parsed.tasks[0].domain) == ("t1", "docs")
    assert parsed.tasks[0].verifier.label == "echo ok"


def test_command_beats_type_function() -> None:
    data = config()
    data["tasks"][0]["verifier"] = {
        "type": "function",
        "function": "bundle_file_exists",
        "command": "true",
    }
    verifier = parse_config(data).tasks[0].verifier
    assert isinstance(verifier, skillvault.CommandVerifierConfig)
    assert verifier.command == "true"


def test_a_non_string_type_is_ignored() -> None:
    data = config()
    data["tasks"][0]["verifier"]["type"] = 7
    assert parse_config(data).tasks[0].verifier.type == "function"


def test_extra_conditions_are_allowed_and_kept_in_order() -> None:
    data = config()
    data["conditions"].insert(1, {"id": "extra", "adapter": {"id": "foo"}})
    assert [c.id for c in parse_config(data).conditions] == [
        "no_skill",
        "extra",
        "curated_skill",
        "self_generated_skill",
    ]


def test_integral_floats_and_negative_seeds_are_integers() -> None:
    parsed = parse_config(config(execution={"retries": 5.0, "seed": -3, "deterministic": True}))
    assert parsed.execution == skillvault.BenchExecution(retries=5, seed=-3, deterministic=True)


def test_self_generated_with_its_own_bundle_path_needs_no_adapter() -> None:
    data = config()
    data["conditions"][2] = {"id": "self_generated_skill", "bundle_path": "./self"}
    assert parse_config(data).conditions[2].bundle_path == "./self"


# --------------------------------------------------------------------------- rejected

REJECTED: list[tuple[str, Any, str]] = [
    ("root is a list", [], "benchmark config must be an object"),
    ("root is null", None, "benchmark config must be an object"),
    ("schema empty", config(schema=" "), "schema must be a non-empty string"),
    (
        "schema wrong",
        config(schema="skillvault.bench.config.v2"),
        "schema must be skillvault.bench.config.v1",
    ),
    ("schema null", config(schema=None), "schema must be a non-empty string"),
    ("metadata null", config(metadata=None), "metadata must be an object"),
    ("metadata label", config(metadata={"suite": 3}), "metadata.suite must be a non-empty string"),
    ("execution null", config(execution=None), "execution must be an object"),
    ("retries too big", config(execution={"retries": 11}), "execution.retries must be <= 10"),
    ("retries negative", config(execution={"retries": -1}), "execution.retries must be >= 0"),
    (
        "retries fraction",
        config(execution={"retries": 1.5}),
        "execution.retries must be an integer",
    ),
    ("retries null", config(execution={"retries": None}), "execution.retries must be an integer"),
    ("seed string", config(execution={"seed": "42"}), "execution.seed must be an integer"),
    ("seed bool", config(execution={"seed": True}), "execution.seed must be an integer"),
    (
        "deterministic string",
        config(execution={"deterministic": "yes"}),
        "execution.deterministic must be boolean",
    ),
    ("conditions empty", config(conditions=[]), "conditions must be a non-empty array"),
    (
        "conditions mapping",
        config(conditions={"id": "no_skill"}),
        "conditions must be a non-empty array",
    ),
    ("tasks empty", config(tasks=[]), "tasks must be a non-empty array"),
    (
        "tasks missing",
        {k: v for k, v in BASE.items() if k != "tasks"},
        "tasks must be a non-empty array",
    ),
]


@pytest.mark.parametrize(
    ("data", "message"), [r[1:] for r in REJECTED], ids=[r[0] for r in REJECTED]
)
def test_rejected_with_skillvaults_message(data: Any, message: str) -> None:
    error = rejects(data)
    assert error.message == message
    assert error.reason == "BENCH_CONFIG_INVALID"
    assert error.fix  # every error says how to fix it


def condition_case(index: int, value: Any) -> dict[str, Any]:
    data = config()
    data["conditions"][index] = value
    return data


CONDITIONS: list[tuple[str, Any, str]] = [
    ("not a mapping", condition_case(0, "no_skill"), "conditions[0] must be an object"),
    ("blank id", condition_case(0, {"id": "  "}), "conditions[0].id must be a non-empty string"),
    ("duplicate id", condition_case(1, {"id": " no_skill"}), "duplicate condition id: no_skill"),
    (
        "adapter null",
        condition_case(0, {"id": "no_skill", "adapter": None}),
        "conditions[0].adapter must be an object",
    ),
    (
        "adapter options before id",
        condition_case(0, {"id": "no_skill", "adapter": {"options": 3}}),
        "conditions[0].adapter.options must be an object",
    ),
    (
        "adapter id",
        condition_case(0, {"id": "no_skill", "adapter": {}}),
        "conditions[0].adapter.id must be a non-empty string",
    ),
    (
        "bundle_path empty",
        condition_case(1, {"id": "curated_skill", "bundle_path": ""}),
        "conditions[1].bundle_path must be a non-empty string",
    ),
    (
        "self without bundle",
        condition_case(2, {"id": "self_generated_skill"}),
        "conditions[2] requires either bundle_path or adapter.id=stub",
    ),
    (
        "self with another adapter",
        condition_case(
            2,
            {
                "id": "self_generated_skill",
                "adapter": {"id": "foo", "options": {"bundle_path": "./x"}},
            },
        ),
        "conditions[2] requires either bundle_path or adapter.id=stub",
    ),
    (
        "stub without bundle",
        condition_case(2, {"id": "self_generated_skill", "adapter": {"id": "stub"}}),
        "conditions[2].adapter.options.bundle_path must be a non-empty string when adapter.id=stub",
    ),
    (
        "stub blank bundle",
        condition_case(
            2,
            {
                "id": "self_generated_skill",
                "adapter": {"id": "stub", "options": {"bundle_path": " "}},
            },
        ),
        "conditions[2].adapter.options.bundle_path must be a non-empty string when adapter.id=stub",
    ),
    (
        "missing curated",
        condition_case(1, {"id": "other"}),
        "missing required condition: curated_skill",
    ),
]


@pytest.mark.parametrize(
    ("data", "message"), [r[1:] for r in CONDITIONS], ids=[r[0] for r in CONDITIONS]
)
def test_condition_rules(data: Any, message: str) -> None:
    assert rejects(data).message == message


def test_missing_conditions_are_reported_in_skillvaults_order() -> None:
    data = config(conditions=[{"id": "other"}])
    assert rejects(data).message == "missing required condition: no_skill"


def task_case(**changes: Any) -> dict[str, Any]:
    data = config()
    data["tasks"][0].update(changes)
    return data


def verifier_case(verifier: Any) -> dict[str, Any]:
    return task_case(verifier=verifier)


TASKS: list[tuple[str, Any, str]] = [
    ("not a mapping", config(tasks=["t1"]), "tasks[0] must be an object"),
    ("id missing", task_case(id=None), "tasks[0].id must be a non-empty string"),
    ("domain number", task_case(domain=3), "tasks[0].domain must be a non-empty string"),
    ("timeout string", task_case(timeout_ms="5"), "tasks[0].timeout_ms must be an integer"),
    ("timeout zero", task_case(timeout_ms=0), "tasks[0].timeout_ms must be >= 1"),
    (
        "timeout infinite",
        task_case(timeout_ms=float("inf")),
        "tasks[0].timeout_ms must be an integer",
    ),
    ("verifier missing", task_case(verifier=None), "tasks[0].verifier must be an object"),
    (
        "verifier type",
        verifier_case({"type": "script", "command": "x"}),
        "tasks[0].verifier.type must be command|function",
    ),
    (
        "command blank",
        verifier_case({"command": " "}),
        "tasks[0].verifier.command must be a non-empty string",
    ),
    (
        "type command alone",
        verifier_case({"type": "command"}),
        "tasks[0].verifier.command must be a non-empty string",
    ),
    (
        "command null",
        verifier_case({"command": None, "function": "bundle_file_exists"}),
        "tasks[0].verifier.command must be a non-empty string",
    ),
    (
        "unknown function",
        verifier_case({"function": "file_exists"}),
        "tasks[0].verifier.function must be one of bundle_file_exists, bundle_file_contains",
    ),
    (
        "type function alone",
        verifier_case({"type": "function"}),
        "tasks[0].verifier.function must be a non-empty string",
    ),
    (
        "args list",
        verifier_case({"function": "bundle_file_exists", "args": ["x"]}),
        "tasks[0].verifier.args must be an object",
    ),
    (
        "empty verifier",
        verifier_case({}),
        "tasks[0].verifier requires either a command or function verifier",
    ),
]


@pytest.mark.parametrize(("data", "message"), [r[1:] for r in TASKS], ids=[r[0] for r in TASKS])
def test_task_rules(data: Any, message: str) -> None:
    assert rejects(data).message == message


def test_duplicate_task_ids_compare_trimmed() -> None:
    data = config()
    data["tasks"].append({**data["tasks"][0], "id": "t1 "})
    error = rejects(data)
    assert error.message == "duplicate task id: t1"
    assert error.field == "tasks[1].id"


def test_the_first_failure_wins_in_skillvaults_order() -> None:
    # Every section is broken; skillvault reports schema, then metadata, then execution ...
    data = config(schema="x", metadata=None, execution=None, conditions=[], tasks=[])
    assert rejects(data).message == "schema must be skillvault.bench.config.v1"
    del data["schema"]
    assert rejects(data).message == "metadata must be an object"
    del data["metadata"]
    assert rejects(data).message == "execution must be an object"
    del data["execution"]
    assert rejects(data).message == "conditions must be a non-empty array"
    data["conditions"] = BASE["conditions"]
    assert rejects(data).message == "tasks must be a non-empty array"
    # within a task: id, domain, timeout_ms, then the verifier
    broken = config(tasks=[{"id": "t", "domain": "", "timeout_ms": "x", "verifier": None}])
    assert rejects(broken).message == "tasks[0].domain must be a non-empty string"


# --------------------------------------------------------------------------- files


def test_yaml_is_read_as_yaml_1_2_core(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
metadata: {suite: yes, model_label: on, environment_label: 1_000}
execution: {retries: 0o3, seed: 0x1F}
conditions:
  - id: no_skill
  - id: curated_skill
    bundle_path: ./curated
  - id: self_generated_skill
    bundle_path: ./self
tasks:
  - {id: octal-looking, domain: 2001-12-14, timeout_ms: 010, verifier: {command: "true"}}
  - {id: exponent, domain: d, timeout_ms: 1e3, verifier: {command: "true"}}
  - {id: dot-exponent, domain: d, timeout_ms: .5e3, verifier: {command: "true"}}
  - {id: float, domain: d, timeout_ms: 5.0, verifier: {command: "true"}}
""",
    )
    loaded = load_config(path).config
    assert loaded.metadata == skillvault.BenchMetadata(
        suite="yes", model_label="on", environment_label="1_000"
    )
    assert (loaded.execution.retries, loaded.execution.seed) == (3, 31)
    assert [t.timeout_ms for t in loaded.tasks] == [10, 1000, 500, 5]
    assert loaded.tasks[0].domain == "2001-12-14"  # no timestamps in the core schema


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("1_000", "tasks[0].timeout_ms must be an integer"),  # a string in YAML 1.2
        ("0b101", "tasks[0].timeout_ms must be an integer"),
        ("-0x1F", "tasks[0].timeout_ms must be an integer"),
        ('"5"', "tasks[0].timeout_ms must be an integer"),
        (".inf", "tasks[0].timeout_ms must be an integer"),
        ("true", "tasks[0].timeout_ms must be an integer"),
        ("-5", "tasks[0].timeout_ms must be >= 1"),
    ],
)
def test_yaml_scalars_that_are_not_integers(tmp_path: Path, token: str, message: str) -> None:
    path = write(
        tmp_path,
        f"""conditions: [{{id: no_skill}}, {{id: curated_skill}}, {{id: self_generated_skill, bundle_path: ./self}}]
tasks:
  - id: t
    domain: d
    timeout_ms: {token}
    verifier: {{command: "true"}}
""",
    )
    with pytest.raises(BenchConfigError) as info:
        load_config(path)
    assert info.value.message == message
    assert (info.value.line, info.value.json_path) == (5, "$.tasks[0].timeout_ms")


def core_value(token: str) -> Any:
    text = f"v: {token}\n"
    return core_yaml(parse_document(text, path="x.yaml", kind="yaml"), text)["v"]


@given(st.integers(0, 2**53 - 1), st.integers(0, 3))
def test_yaml_integers_in_every_core_notation(n: int, zeros: int) -> None:
    assert core_value("0" * zeros + str(n)) == n  # no octal from a leading zero
    assert core_value(f"0o{n:o}") == n
    assert core_value(f"0x{n:X}") == n
    assert core_value(f"-{n}") == -n
    assert core_value(f"{n}.0") == n  # an integral float is the integer
    assert core_value(f'"{n}"') == str(n)  # quoted: a string


@given(st.integers(10, 10**9), st.integers(1, 8))
def test_yaml_numbers_with_underscores_or_binary_are_strings(n: int, cut: int) -> None:
    digits = str(n)
    token = digits[: min(cut, len(digits) - 1)] + "_" + digits[min(cut, len(digits) - 1) :]
    assert core_value(token) == token
    assert core_value(f"0b{n:b}") == f"0b{n:b}"
    assert core_value(f"-0x{n:x}") == f"-0x{n:x}"


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300))
def test_yaml_floats_read_as_doubles(value: float) -> None:
    token = repr(value)
    if "e" not in token and "." not in token:
        token += ".0"
    got = core_value(token)
    assert got == value
    if value.is_integer():
        assert isinstance(got, int)  # JavaScript has one number type


def test_a_plain_1_000_is_a_string_where_strings_are_wanted(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "conditions: [{id: no_skill}, {id: curated_skill}, "
        "{id: self_generated_skill, bundle_path: ./self}]\n"
        "tasks: [{id: 1_000, domain: &d 0x_1F, timeout_ms: 1, verifier: {command: 'true'}}]\n",
    )
    task = load_config(path).config.tasks[0]
    assert (task.id, task.domain) == ("1_000", "0x_1F")


def test_errors_name_file_line_column_and_path(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """conditions:
  - id: no_skill
  - id: curated_skill
  - id: self_generated_skill
    adapter:
      id: stub
      options:
        bundle_path: ./self
tasks:
  - id: t
    domain: d
    timeout_ms: 100
    verifier:
      function: file_exists
""",
    )
    with pytest.raises(BenchConfigError) as info:
        load_config(path)
    error = info.value
    assert error.message == (
        "tasks[0].verifier.function must be one of bundle_file_exists, bundle_file_contains"
    )
    assert (error.file, error.line, error.column) == (str(path), 14, 17)
    assert error.json_path == "$.tasks[0].verifier.function"
    assert str(error).startswith(f"{path}:14:17: $.tasks[0].verifier.function: tasks[0]")
    assert "Fix:" in str(error)


def test_parse_errors_keep_skillvaults_message(tmp_path: Path) -> None:
    path = write(tmp_path, "conditions: [unclosed\n")
    with pytest.raises(BenchConfigError) as info:
        load_config(path)
    assert info.value.message == "Failed to parse benchmark config"
    assert info.value.reason == "BENCH_CONFIG_PARSE_ERROR"
    assert info.value.line is not None
    assert "invalid YAML" in (info.value.fix or "")


def test_an_empty_file_is_not_an_object(tmp_path: Path) -> None:
    with pytest.raises(BenchConfigError, match="benchmark config must be an object"):
        load_config(write(tmp_path, "# nothing\n"))


def test_a_missing_file_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(BenchConfigError) as info:
        load_config(tmp_path / "nope.yaml")
    assert info.value.message == f"Failed to read benchmark config: {tmp_path / 'nope.yaml'}"
    assert info.value.reason == "BENCH_CONFIG_PARSE_ERROR"


def test_json_configs_work_too(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps(config()), name="bench.json")
    loaded = load_config(path)
    assert loaded.config.tasks[0].timeout_ms == 500
    assert skillvault.detect(path, json.loads(path.read_text()))


# --------------------------------------------------------------------------- bundles


def test_bundles_resolve_against_the_config_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, json.dumps(config()), name="bench.json")
    monkeypatch.chdir(tmp_path.parent)
    loaded = load_config(Path(tmp_path.name) / "bench.json")
    assert loaded.config_path == str(path)
    assert loaded.bundle_paths == (None, str(tmp_path / "curated"), str(tmp_path / "self"))


def test_a_missing_bundle_is_a_config_error(tmp_path: Path) -> None:
    data = config()
    data["conditions"][1]["bundle_path"] = "./gone/../missing"
    path = write(tmp_path, json.dumps(data, indent=1), name="bench.json")
    with pytest.raises(BenchConfigError) as info:
        load_config(path)
    error = info.value
    assert error.message == (
        f"conditions.curated_skill.bundle_path does not exist: {tmp_path / 'missing'}"
    )
    assert error.json_path == "$.conditions[1].bundle_path"
    assert error.line is not None


def test_the_stub_path_counts_only_for_self_generated_skill(tmp_path: Path) -> None:
    data = config()
    # skillvault records any other adapter and gives the condition no bundle, even one
    # whose options name a directory that does not exist
    data["conditions"].append(
        {"id": "extra", "adapter": {"id": "stub", "options": {"bundle_path": "./nowhere"}}}
    )
    data["conditions"][0]["adapter"] = {"id": "foo", "options": {"bundle_path": "./curated"}}
    loaded = load_config(write(tmp_path, json.dumps(data), name="bench.json"))
    assert loaded.bundle_paths == (None, str(tmp_path / "curated"), str(tmp_path / "self"), None)
    suite = to_suite(loaded)
    assert [c.bundle for c in suite.conditions] == [
        None,
        tmp_path / "curated",
        tmp_path / "self",
        None,
    ]
    assert suite.conditions[0].options == {"adapter_id": "foo"}


def test_a_bundle_may_be_a_file_as_fs_access_allows(tmp_path: Path) -> None:
    data = config()
    data["conditions"][1]["bundle_path"] = "./file.txt"
    (tmp_path / "file.txt").write_text("x")
    loaded = load_config(write(tmp_path, json.dumps(data), name="bench.json"))
    assert loaded.bundle_paths[1] == str(tmp_path / "file.txt")


# --------------------------------------------------------------------------- the suite


def test_the_suite_maps_onto_the_core_model() -> None:
    loaded = load_config(SUITE / "bench.yaml")
    suite = to_suite(loaded)
    assert suite.base_dir == SUITE
    assert [c.id for c in suite.conditions] == [
        "no_skill",
        "curated_skill",
        "self_generated_skill",
    ]
    assert all(c.provider == ProviderSpec("bundle") for c in suite.conditions)
    assert suite.conditions[2].options == {"adapter_id": "stub"}
    options = suite.options
    assert (options.concurrency, options.retries, options.seed) == (1, 1, 7)
    assert options.retry_on == frozenset({"any"}) and options.backoff_base == 0
    assert options.deterministic is True
    task = suite.benchmark.tasks[1]  # type: ignore[index]
    assert (task.id, task.domain, task.timeout) == ("flags_breaking_changes", "upgrade_safety", 1.0)
    assert task.verifiers == (
        VerifierSpec("bundle_file_contains", {"path": "notes.md", "contains": "Breaking changes"}),
    )
    assert task.metadata["timeout_ms"] == 1000
    command = suite.benchmark.tasks[2]  # type: ignore[index]
    assert command.timeout == 10.0 and command.verifiers[0].type == "command"
    bench = suite.benchmark
    assert (bench.id, bench.source.format) == ("release-notes", "skillvault")
    assert bench.metadata == {"model_label": "recorded-answers", "environment_label": "local"}
    assert to_suite(loaded, deterministic=False).options.deterministic is False


def test_command_tasks_carry_their_timeout() -> None:
    data = config()
    data["tasks"][0]["verifier"] = {"command": "make check"}
    parsed = parse_config(data)
    loaded = skillvault.LoadedBenchConfig("/x/bench.yaml", "/x", parsed, (None, None, None))
    (spec,) = to_suite(loaded).benchmark.tasks[0].verifiers  # type: ignore[index]
    assert spec == VerifierSpec("command", {"command": "make check", "timeout_ms": 500})


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ({"schema": "skillvault.bench.config.v1"}, True),
        ({"schema": " skillvault.bench.config.v2"}, True),  # loads, then says what is wrong
        ({"conditions": [], "tasks": [{"verifier": {}}]}, True),
        ({"conditions": [], "tasks": [{"id": "t"}]}, False),
        ({"benchkit": 1, "schema": "skillvault.bench.config.v1"}, False),
        ({"schema": "other"}, False),
        ({"schema": None, "conditions": [], "tasks": [{"verifier": {}}]}, False),
        ([], False),
        (None, False),
    ],
)
def test_detect(head: Any, expected: bool) -> None:
    assert skillvault.detect(Path("bench.yaml"), head) is expected


def test_the_format_refuses_unknown_options() -> None:
    with pytest.raises(ConfigError, match="no options"):
        skillvault.FORMAT.load(SUITE / "bench.yaml", epochs=2)
    suite = skillvault.FORMAT.load(SUITE / "bench.yaml", deterministic=False, concurrency=3)
    assert (suite.options.deterministic, suite.options.concurrency) == (False, 3)
    assert os.fspath(suite.base_dir or "") == str(SUITE)


def test_merged_values_keep_the_yaml_readers_value(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "base: &b {timeout_ms: 250, domain: d}\n"
        "conditions: [{id: no_skill}, {id: curated_skill}, "
        "{id: self_generated_skill, bundle_path: ./self}]\n"
        "tasks:\n"
        "  - <<: *b\n"
        "    id: t\n"
        "    verifier: {command: 'true'}\n",
    )
    task = load_config(path).config.tasks[0]
    assert (task.timeout_ms, task.domain) == (250, "d")  # not the text at the `<<` line
