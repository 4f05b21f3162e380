"""CodeForge datasets: loading the shipped datasets, schema errors, discovery, `datasets list`."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchkit import formats
from benchkit.cli import main
from benchkit.errors import ConfigError, FormatError
from benchkit.formats import codeforge
from benchkit.model import ToolCall

from ._support import tasks_of

SHIPPED = Path(__file__).parent.parent / "benchmarks" / "codeforge"
SHIPPED_NAMES = (
    "agent-coding.yaml",
    "basic-coding.yaml",
    "docs-qa.yaml",
    "e2e-quick.yaml",
    "tool-use-basic.yaml",
)
DISCOVERED = ("agent-coding.yaml", "basic-coding.yaml", "e2e-quick.yaml", "tool-use-basic.yaml")


def write(tmp_path: Path, text: str, name: str = "data.yaml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


MINIMAL = """\
name: Mini
tasks:
  - id: t1
    name: First
    input: "Say hi"
    expected_output: "hi"
"""


# --------------------------------------------------------------------------- shipped


def test_basic_coding_maps_onto_the_model() -> None:
    suite = codeforge.load(SHIPPED / "basic-coding.yaml")
    bench = suite.benchmark
    assert (bench.id, bench.name, bench.source.format) == (
        "basic-coding",
        "Python Basics",
        "codeforge",
    )
    assert bench.description == "Small self-contained Python functions to write, repair or tidy up."
    assert bench.source.path == str((SHIPPED / "basic-coding.yaml").resolve())
    assert suite.conditions == () and bench.evaluators == ()
    assert [t.id for t in bench.iter_tasks()] == [f"basic-00{i}" for i in range(1, 6)]
    first = tasks_of(bench)[0]
    assert first.description == "Word frequencies"
    assert first.metadata == {"name": "Word frequencies"}
    assert first.difficulty == "medium"  # the documented default
    assert first.input.startswith("Write a Python function `word_counts(text)`")
    assert first.input.endswith("such as commas and full stops.\n")  # block scalar keeps "\n"
    assert first.expected.startswith("def word_counts(text):\n    counts = {}\n")
    assert first.expected.endswith("    return counts\n")
    assert tasks_of(bench)[1].description == "Repair — median of an even-length list"


def test_folded_scalars_and_later_phase_keys_are_kept() -> None:
    bench = codeforge.load(SHIPPED / "agent-coding.yaml").benchmark
    assert bench.metadata == {"benchmark_type": "agent"}
    first = tasks_of(bench)[0]
    assert "\n" not in first.input[:-1] and first.input.endswith("from both ends.\n")
    assert first.metadata["initial_files"] == {}
    assert first.metadata["max_iterations"] == 8
    assert first.metadata["test_command"].startswith('python -c "from slug import slugify;')
    assert tasks_of(bench)[1].metadata["initial_files"]["stats.py"].startswith("def total(values):")
    assert tasks_of(bench)[4].metadata["max_cost"] == 0.5
    assert [t.difficulty for t in bench.iter_tasks()] == [
        "easy",
        "easy",
        "medium",
        "medium",
        "hard",
    ]


def test_tool_use_tasks_offer_their_tools_and_expect_their_sequence() -> None:
    bench = codeforge.load(SHIPPED / "tool-use-basic.yaml").benchmark
    multi = tasks_of(bench)[2]
    assert multi.expected_tool_calls == (
        ToolCall("list_files", {"directory": "build"}),
        ToolCall("delete_file", {"path": "build/app.log"}),
    )
    assert multi.input["messages"] == [
        {
            "role": "user",
            "content": "List the files in the 'build' directory, then delete the file 'build/app.log'.",
        }
    ]
    assert [t["function"]["name"] for t in multi.input["tools"]] == ["list_files", "delete_file"]
    assert multi.metadata["expected_tool_sequence"][0] == {
        "name": "list_files",
        "args": '{"directory": "build"}',
    }
    assert tasks_of(bench)[1].expected_tool_calls == (
        ToolCall("convert_currency", {"amount": 250, "from": "EUR", "to": "JPY"}),
    )


def test_context_tasks_carry_their_passages_and_difficulties() -> None:
    bench = codeforge.load(SHIPPED / "docs-qa.yaml").benchmark
    assert bench.metadata == {"benchmark_type": "rag"}
    assert [t.difficulty for t in bench.iter_tasks()] == ["easy", "medium", "hard", "medium"]
    assert len(tasks_of(bench)[1].context) == 3
    assert "lantern reindex --from" in tasks_of(bench)[1].context[1]


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_the_shipped_datasets_are_detected_as_codeforge(name: str) -> None:
    assert formats.detect_format(SHIPPED / name) == "codeforge"
    assert formats.load(SHIPPED / name).benchmark.source.format == "codeforge"


def test_native_files_are_not_claimed(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "benchkit: 1\nid: x\nname: X\ntasks:\n  - {id: t, input: a, expected_output: b}\n",
    )
    assert not codeforge.detect(path, {"benchkit": 1, "name": "X", "tasks": [{"input": 1}]})
    assert codeforge.detect(path, {"name": "X", "tasks": [{"input": 1, "expected_output": 2}]})
    assert not codeforge.detect(path, {"name": "X", "tasks": [{"input": 1}]})
    assert not codeforge.detect(path, {"tasks": [{"input": 1, "expected_output": 2}]})


def test_args_may_be_a_mapping_or_json_text(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        MINIMAL
        + """\
    expected_tools:
      - {name: read, args: {path: a.py, lines: [1, 2]}}
      - {name: read, args: '{"path": "a.py", "lines": [1, 2]}'}
      - {name: list}
      - {name: list, args: ''}
    context: ["passage one", "passage two"]
    difficulty: hard
""",
    )
    task = tasks_of(codeforge.load(path).benchmark)[0]
    read = ToolCall("read", {"path": "a.py", "lines": [1, 2]})
    assert task.expected_tool_calls == (read, read, ToolCall("list"), ToolCall("list"))
    assert task.context == ("passage one", "passage two")
    assert task.difficulty == "hard"
    assert task.input == "Say hi"  # no tools: the input stays plain text


# --------------------------------------------------------------------------- errors


def load_error(tmp_path: Path, text: str) -> FormatError:
    path = write(tmp_path, text)
    with pytest.raises(FormatError) as info:
        codeforge.load(path)
    assert info.value.file == str(path)
    return info.value


def test_an_integer_id_is_an_error_at_its_position(tmp_path: Path) -> None:
    error = load_error(tmp_path, MINIMAL.replace("id: t1", "id: 1"))
    assert (error.line, error.column, error.json_path) == (3, 9, "$.tasks[0].id")
    assert error.message == "task id 1 is a number; ids must be strings"
    assert error.fix == 'quote it: id: "1" (see docs/formats/codeforge.md).'
    error = load_error(tmp_path, MINIMAL.replace("id: t1", "id: true"))
    assert "expected a string, got a boolean (true)" in error.message


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (MINIMAL.replace('    expected_output: "hi"\n', ""), "$.tasks[0]", "`expected_output`"),
        (MINIMAL.replace("name: Mini\n", ""), "$", "`name`"),
        (MINIMAL + "    difficulty: extreme\n", "$.tasks[0].difficulty", "easy, medium, hard"),
        (MINIMAL + "    context: passage\n", "$.tasks[0].context", "expected a list"),
        (
            MINIMAL + "    expected_tools: [{args: '{}'}]\n",
            "$.tasks[0].expected_tools[0]",
            "`name`",
        ),
        (
            MINIMAL + "    expected_tools: [{name: a, arguments: {}}]\n",
            "$.tasks[0].expected_tools[0].arguments",
            "unknown key `arguments`",
        ),
        (MINIMAL.replace("tasks:", "tasks: 3\nx:"), "$.tasks", "expected a list"),
        ("- just a list\n", "$", "expected a mapping"),
    ],
)
def test_schema_errors_name_the_path(tmp_path: Path, text: str, where: str, message: str) -> None:
    error = load_error(tmp_path, text)
    assert error.json_path == where
    assert message in error.message
    assert error.line is not None


def test_bad_args_text_is_an_error(tmp_path: Path) -> None:
    error = load_error(tmp_path, MINIMAL + "    expected_tools: [{name: a, args: '{oops'}]\n")
    assert error.json_path == "$.tasks[0].expected_tools[0].args"
    assert "not valid JSON" in error.message and error.line == 7
    error = load_error(tmp_path, MINIMAL + "    expected_tools: [{name: a, args: '[1]'}]\n")
    assert "not of an object" in error.message


def test_duplicate_ids_near_misses_and_two_tool_lists_are_errors(tmp_path: Path) -> None:
    duplicate = MINIMAL + "  - {id: t1, name: again, input: x, expected_output: y}\n"
    error = load_error(tmp_path, duplicate)
    assert (error.json_path, error.line) == ("$.tasks[1].id", 7)
    assert "duplicate task id 't1' (first used at $.tasks[0])" in error.message
    error = load_error(tmp_path, MINIMAL + "    difficulity: easy\n")
    assert error.json_path == "$.tasks[0].difficulity"
    assert error.fix is not None and "did you mean `difficulty`?" in error.fix
    error = load_error(tmp_path, MINIMAL.replace("tasks:", "descripton: d\ntasks:"))
    assert error.fix is not None and "`description`" in error.fix
    both = MINIMAL + "    expected_tools: [{name: a}]\n    expected_tool_sequence: [{name: a}]\n"
    error = load_error(tmp_path, both)
    assert "both `expected_tools` and `expected_tool_sequence`" in error.message


def test_yaml_syntax_errors_are_located(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\ntasks:\n  - id: [\n")
    with pytest.raises(FormatError) as info:
        formats.load(path, format="codeforge")
    assert info.value.line is not None and info.value.file == str(path)


def _task_dict(index: int, text: str, args: dict[str, Any], as_text: bool) -> dict[str, Any]:
    return {
        "id": f"task-{index}",
        "name": text[:10],
        "input": text,
        "expected_output": text[::-1],
        "expected_tools": [{"name": "tool", "args": json.dumps(args) if as_text else args}],
    }


# JSON's \u escapes join surrogate pairs and YAML's do not: stay in the BMP
bmp = st.characters(max_codepoint=0xFFFF, exclude_categories=["Cs"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(bmp, max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(bmp, max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=40, deadline=None)
@given(
    texts=st.lists(st.text(bmp, max_size=30), min_size=1, max_size=4),
    args=st.dictionaries(st.text(bmp, max_size=6), json_values, max_size=3),
    as_text=st.booleans(),
    difficulty=st.sampled_from([None, "easy", "medium", "hard"]),
)
def test_loading_keeps_every_value(
    texts: list[str], args: dict[str, Any], as_text: bool, difficulty: str | None
) -> None:
    tasks = [_task_dict(i, text, args, as_text) for i, text in enumerate(texts)]
    if difficulty is not None:
        tasks[0]["difficulty"] = difficulty
    with tempfile.TemporaryDirectory() as tmp:
        # JSON is YAML 1.2: the loader reads what a YAML writer of any style would mean
        path = Path(tmp) / "gen.yaml"
        path.write_text(json.dumps({"name": "Gen", "tasks": tasks}), encoding="utf-8")
        bench = codeforge.load(path).benchmark
    assert [t.input for t in bench.iter_tasks()] == texts
    assert [t.expected for t in bench.iter_tasks()] == [t[::-1] for t in texts]
    assert all(t.expected_tool_calls == (ToolCall("tool", args),) for t in bench.iter_tasks())
    assert tasks_of(bench)[0].difficulty == (difficulty or "medium")


# --------------------------------------------------------------------------- discovery


@pytest.fixture
def datasets(tmp_path: Path) -> Path:
    root = tmp_path / "datasets"
    for name in DISCOVERED:
        target = root / ("nested" if name == "e2e-quick.yaml" else "") / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SHIPPED / name, target)
    write(root, "not a dataset: [1, 2", "broken.yml")
    write(root, "# notes", "README.md")
    write(root, MINIMAL, ".hidden/skipped.yaml")
    return root


def test_discovery_finds_every_yaml_and_reports_the_broken_ones(datasets: Path) -> None:
    found, problems = codeforge.discover_datasets(datasets)
    assert [(i.id, i.name, i.path, i.task_count) for i in found] == [
        ("agent-coding", "agent-coding", "agent-coding.yaml", 5),
        ("basic-coding", "Python Basics", "basic-coding.yaml", 5),
        ("tool-use-basic", "tool-use-basic", "tool-use-basic.yaml", 3),
        ("e2e-quick", "Smoke Test", "nested/e2e-quick.yaml", 2),
    ]
    assert found[0].difficulties == {"easy": 2, "medium": 2, "hard": 1}
    assert [(p.name, type(e).__name__) for p, e in problems] == [("broken.yml", "FormatError")]


def test_a_dataset_is_found_by_stem_name_or_path(datasets: Path) -> None:
    nested = datasets / "nested" / "e2e-quick.yaml"
    for ref in ("e2e-quick", "Smoke Test", "nested/e2e-quick.yaml", "nested/e2e-quick"):
        assert codeforge.find_dataset(datasets, ref) == nested
    assert codeforge.find_dataset(datasets, "Python Basics").name == "basic-coding.yaml"
    with pytest.raises(ConfigError) as info:
        codeforge.find_dataset(datasets, "basic")
    assert "known: agent-coding (agent-coding), basic-coding (Python Basics)" in str(info.value)
    with pytest.raises(FormatError):  # the one file it could be is broken: say why
        codeforge.find_dataset(datasets, "broken")
    write(datasets, MINIMAL.replace("Mini", "Python Basics"), "other/copy.yaml")
    with pytest.raises(ConfigError, match="ambiguous: it is the name of"):
        codeforge.find_dataset(datasets, "Python Basics")


def test_datasets_list_shows_the_table_and_the_problems(
    datasets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["datasets", "list", str(datasets)]) == 0
    out = capsys.readouterr().out
    assert "tool-use-basic.yaml" in out and "nested/e2e-quick.yaml" in out
    assert "2 easy, 2 medium, 1 hard" in out and "Python Basics" in out
    assert "unreadable" in out and "broken.yml" in out
    assert "skipped.yaml" not in out


def test_datasets_list_json_and_missing_directory(
    datasets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["datasets", "list", str(datasets), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [d["id"] for d in document["datasets"]] == [
        "agent-coding",
        "basic-coding",
        "tool-use-basic",
        "e2e-quick",
    ]
    assert document["datasets"][1]["difficulties"] == {"medium": 5}
    assert [p["path"].rsplit("/", 1)[-1] for p in document["problems"]] == ["broken.yml"]
    assert main(["datasets", "list", str(tmp_path / "nope")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_datasets_list_defaults_to_the_environment(
    datasets: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CODEFORGE_BENCHMARK_DATASETS_DIR", str(datasets / "nested"))
    assert main(["datasets", "list", "-f", "json"]) == 0
    assert [d["id"] for d in json.loads(capsys.readouterr().out)["datasets"]] == ["e2e-quick"]


def test_tasks_without_expected_output_are_claimed_and_the_field_named(tmp_path: Path) -> None:
    path = write(tmp_path, "name: X\ntasks:\n  - id: a\n    name: A\n    input: do it\n")
    assert formats.detect_format(path) == "codeforge"
    with pytest.raises(FormatError) as info:
        formats.load(path)
    assert (info.value.line, info.value.json_path) == (3, "$.tasks[0]")
    assert "missing required key `expected_output`" in info.value.message
