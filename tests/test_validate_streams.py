"""``validate`` reads streamed task lines as a run would, and names the right line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchkit.cli import main
from benchkit.errors import FormatError
from benchkit.formats import load

NATIVE = (
    "benchkit: 1\nid: tf\nevaluators: [exact]\ntasks_file: t.jsonl\n"
    "conditions: [{id: c, provider: {type: python, file: ans.py, function: answer}}]\n"
)
MANIFEST = {
    "manifest_version": "1",
    "name": "Tiny",
    "version": "1.0.0",
    "data_file": "data.jsonl",
    "ingestion": {"strategy": "simple", "content_field": "content"},
    "query": {"question_field": "question", "expected_answer_field": "answer"},
    "evaluation": {"protocol": "exact-match"},
    "metrics": ["correctness"],
    "required_capabilities": ["add_memory", "retrieve_memory"],
}


def native(tmp_path: Path, *lines: str) -> Path:
    (tmp_path / "t.jsonl").write_text("".join(line + "\n" for line in lines))
    (tmp_path / "ans.py").write_text("def answer(x):\n    return str(x)\n")
    bench = tmp_path / "b.yaml"
    bench.write_text(NATIVE)
    return bench


def memorybench(tmp_path: Path, *lines: str) -> Path:
    (tmp_path / "data.jsonl").write_text("".join(line + "\n" for line in lines))
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps(MANIFEST))
    return manifest


def validate_error(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["validate", str(path)]) == 2
    return capsys.readouterr().err


GOOD = '{"id": "a", "input": 1, "expected": "1"}'
CASE = '{"id": "%s", "content": "x", "question": "q", "answer": "x"}'


@pytest.mark.parametrize(
    ("bad", "where", "message"),
    [
        ('{"id": "c", "input": 3, "timeout": -1}', "t.jsonl:3:36", "out of range"),
        ('{"id": "c", "input": 3', "t.jsonl:3:23", "invalid JSON"),  # the end of line 3
        ('{"id": "a"}', "t.jsonl:3", "duplicate task id 'a' (first used at line 1)"),
    ],
)
def test_validate_reads_a_native_tasks_file_line_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str, where: str, message: str
) -> None:
    bench = native(tmp_path, GOOD, '{"id": "b", "input": 2}', bad, '{"id": "d"}')
    error = validate_error(bench, capsys)
    assert f"{tmp_path / where}" in error and message in error
    with pytest.raises(FormatError) as info:  # what a run meets, at the same place
        list(load(bench).benchmark.iter_tasks())
    assert f"{tmp_path / where}" in str(info.value)


def test_validate_counts_streamed_tasks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(native(tmp_path, GOOD, '{"id": "b"}'))]) == 0
    assert "2 tasks (streamed)" in capsys.readouterr().out


def test_validate_reads_memorybench_jsonl_and_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = memorybench(tmp_path, CASE % "a", CASE % "b", (CASE % "c")[:-1], CASE % "d")
    error = validate_error(manifest, capsys)
    assert f"{tmp_path / 'data.jsonl'}:3:" in error and "invalid JSON" in error


def test_validate_refuses_duplicate_memorybench_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = memorybench(tmp_path, CASE % "a", CASE % "b", CASE % "a")
    error = validate_error(manifest, capsys)
    assert f"{tmp_path / 'data.jsonl'}:3: duplicate case id 'a' (first from line 1)" in error
