"""CodeForge's own datasets (corpus/codeforge): each loads and maps onto the core model as
it did when benchkit was written against them, and discovery lists them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from benchkit import formats
from benchkit.formats import codeforge
from benchkit.model import ToolCall

from .._support import tasks_of
from ._corpus import CORPUS as CORPUS_ROOT

FIXTURES = CORPUS_ROOT / "codeforge"
CORPUS = ("agent-coding.yaml", "basic-coding.yaml", "e2e-quick.yaml", "tool-use-basic.yaml")


def raw_dataset(name: str) -> Any:
    """The dataset as plain YAML, to compare the mapping with."""
    return YAML(typ="safe").load((FIXTURES / name).read_text(encoding="utf-8"))


def test_basic_coding_maps_onto_the_model(corpus: Path) -> None:
    suite = codeforge.load(FIXTURES / "basic-coding.yaml")
    bench = suite.benchmark
    assert (bench.id, bench.name, bench.source.format) == (
        "basic-coding",
        "Basic Coding",
        "codeforge",
    )
    raw = raw_dataset("basic-coding.yaml")
    assert bench.description == raw["description"]
    assert bench.source.path == str((FIXTURES / "basic-coding.yaml").resolve())
    assert suite.conditions == () and bench.evaluators == ()
    assert [t.id for t in bench.iter_tasks()] == [f"basic-00{i}" for i in range(1, 6)]
    first = tasks_of(bench)[0]
    assert first.description == raw["tasks"][0]["name"]
    assert first.metadata == {"name": raw["tasks"][0]["name"]}
    assert first.difficulty == "medium"  # the documented default
    assert first.input == raw["tasks"][0]["input"] and first.input.endswith(".\n")  # block "|"
    assert first.expected == raw["tasks"][0]["expected_output"]
    assert first.expected.startswith("def ") and first.expected.endswith("    return result\n")
    assert "—" in (tasks_of(bench)[1].description or "")  # the em dash survives (UTF-8)


def test_folded_scalars_and_later_phase_keys_are_kept(corpus: Path) -> None:
    bench = codeforge.load(FIXTURES / "agent-coding.yaml").benchmark
    assert bench.metadata == {"benchmark_type": "agent"}
    first = tasks_of(bench)[0]
    assert "\n" not in first.input[:-1] and first.input.endswith(".\n")  # folded ">"
    assert first.metadata["initial_files"] == {}
    assert first.metadata["max_iterations"] == 10
    assert first.metadata["test_command"].startswith('python -c "from fizzbuzz import fizzbuzz;')
    assert tasks_of(bench)[4].metadata["max_cost"] == 0.5
    assert [t.difficulty for t in bench.iter_tasks()] == [
        "easy",
        "easy",
        "medium",
        "medium",
        "hard",
    ]


def test_tool_use_tasks_offer_their_tools_and_expect_their_sequence(corpus: Path) -> None:
    bench = codeforge.load(FIXTURES / "tool-use-basic.yaml").benchmark
    multi = tasks_of(bench)[2]
    assert multi.expected_tool_calls == (
        ToolCall("read_file", {"path": "config.yaml"}),
        ToolCall("write_file", {"path": "config-summary.txt", "content": "..."}),
    )
    raw = raw_dataset("tool-use-basic.yaml")
    assert multi.input["messages"] == [{"role": "user", "content": raw["tasks"][2]["input"]}]
    assert [t["function"]["name"] for t in multi.input["tools"]] == ["read_file", "write_file"]
    assert multi.metadata["expected_tool_sequence"][0] == {
        "name": "read_file",
        "args": '{"path": "config.yaml"}',
    }


@pytest.mark.parametrize("name", CORPUS)
def test_the_corpus_is_detected_as_codeforge(corpus: Path, name: str) -> None:
    assert formats.detect_format(FIXTURES / name) == "codeforge"
    assert formats.load(FIXTURES / name).benchmark.source.format == "codeforge"


def test_discovery_lists_the_corpus(corpus: Path, tmp_path: Path) -> None:
    for name in CORPUS:
        shutil.copyfile(FIXTURES / name, tmp_path / name)
    found, problems = codeforge.discover_datasets(tmp_path)
    assert [(i.id, i.name, i.task_count) for i in found] == [
        ("agent-coding", "agent-coding", 5),
        ("basic-coding", "Basic Coding", 5),
        ("e2e-quick", "E2E Quick", 2),
        ("tool-use-basic", "tool-use-basic", 3),
    ]
    assert found[0].difficulties == {"easy": 2, "medium": 2, "hard": 1}
    assert problems == []
