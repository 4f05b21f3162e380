"""``python -m benchkit memory list|eval`` and the public surface of the memory packages."""

from __future__ import annotations

import importlib
import inspect
import json
import threading
from pathlib import Path
from typing import Any

import pytest

import benchkit
from benchkit.cli import EXIT_BAD_INPUT, EXIT_OK, main

from .test_memory_providers import Service

PROVIDER_MODULE = '''
class Forgetful:
    """A store that cannot delete."""

    def __init__(self):
        self.rows = []

    def add(self, scope, content, metadata=None):
        self.rows.append((scope.session_id, content))
        return str(len(self.rows))

    def retrieve(self, scope, query, limit=10):
        words = set(query.lower().split())
        return [
            {"id": str(i), "content": c}
            for i, (s, c) in enumerate(self.rows, 1)
            if s == scope.session_id and words & set(c.lower().split())
        ][:limit]


MEMORY_PROVIDERS = {"Forgetful": Forgetful}
'''


def _manifest(name: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "manifest_version": "1",
        "name": name,
        "version": "1.0.0",
        "data_file": "data.jsonl",
        "ingestion": {"strategy": "simple", "content_field": "content"},
        "query": {"question_field": "question", "expected_answer_field": "answer"},
        "evaluation": {"protocol": "exact-match"},
        "metrics": ["correctness", "faithfulness"],
        "required_capabilities": ["add_memory", "retrieve_memory"],
    }
    data.update(changes)
    return data


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory with benchmarks/ (simple, deletion, judge) and a provider module."""
    root = tmp_path / "benchmarks"
    simple = root / "simple"
    simple.mkdir(parents=True)
    (simple / "manifest.json").write_text(json.dumps(_manifest("simple")))
    (simple / "data.jsonl").write_text(
        json.dumps(
            {"id": "s1", "content": "The sky is blue.", "question": "sky colour?", "answer": "blue"}
        )
        + "\n"
    )
    deletion = root / "deletion"
    deletion.mkdir()
    (deletion / "manifest.json").write_text(
        json.dumps(
            _manifest(
                "deletion",
                ingestion={
                    "strategy": "add-delete-verify",
                    "add_content_field": "facts",
                    "delete_target_field": "forget",
                    "phase_delay_ms": 0,
                },
                evaluation={
                    "protocol": "deletion-check",
                    "verification_query_field": "question",
                    "deleted_content_field": "gone",
                },
                metrics=["deletion_success", "leakage_rate"],
            )
        )
    )
    (deletion / "data.jsonl").write_text(
        json.dumps(
            {
                "id": "d1",
                "facts": ["pin is 1234", "likes tea"],
                "forget": 0,
                "question": "what is the pin",
                "gone": "pin is 1234",
            }
        )
        + "\n"
    )
    judge = root / "judge"
    judge.mkdir()
    (judge / "manifest.json").write_text(
        json.dumps(
            _manifest("judge", evaluation={"protocol": "llm-as-judge", "type_field": "kind"})
        )
    )
    (judge / "data.jsonl").write_text(simple.joinpath("data.jsonl").read_text())
    (tmp_path / "my_stores.py").write_text(PROVIDER_MODULE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_list_shows_benchmarks_and_providers(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["memory", "list", "--json", "--provider-module", "my_stores.py"])
    assert code == EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert [b["name"] for b in data["benchmarks"]] == ["deletion", "judge", "simple"]
    deletion = data["benchmarks"][0]
    assert (deletion["cases"], deletion["ingestion"], deletion["protocol"]) == (
        1,
        "add-delete-verify",
        "deletion-check",
    )
    assert (
        deletion["requires"] == "add_memory, retrieve_memory, delete_memory"
    )  # implied by the strategy
    providers = {p["name"]: p for p in data["providers"]}
    assert providers["LocalBaseline"] == {
        "name": "LocalBaseline",
        "capabilities": "add, delete, list, reset, retrieve, update",
        "source": "built-in",
    }
    assert providers["Forgetful"] == {
        "name": "Forgetful",
        "capabilities": "add, retrieve",
        "source": "module my_stores.py",
    }
    assert data["problems"] == []
    assert main(["memory", "list"]) == EXIT_OK
    table = capsys.readouterr().out
    assert "MemoryBench benchmarks under benchmarks" in table and "LocalBaseline" in table


def test_eval_plans_skips_runs_and_exports(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "memory",
        "eval",
        "-p",
        "LocalBaseline",
        "Forgetful",
        "-b",
        "simple",
        "deletion",
        "--provider-module",
        "my_stores.py",
        "-o",
        "out",
        "-d",
    ]
    assert main(argv) == EXIT_OK
    captured = capsys.readouterr()
    assert (
        "skipped: Provider 'Forgetful' lacks required capability: delete_memory (benchmark 'deletion')"
        in captured.err
    )
    assert "MemoryBench summary" in captured.out and "deletion_success" in captured.out
    records = [
        json.loads(line) for line in (project / "out" / "results.jsonl").read_text().splitlines()
    ]
    assert [(r["provider_name"], r["benchmark_name"], r["status"]) for r in records] == [
        ("LocalBaseline", "deletion", "pass"),
        ("Forgetful", "simple", "pass"),
        ("LocalBaseline", "simple", "pass"),
    ]  # benchmarks, then providers, in name order; cells of a benchmark in task order
    simple = next(
        r
        for r in records
        if r["provider_name"] == "LocalBaseline" and r["benchmark_name"] == "simple"
    )
    assert simple["scores"]["correctness"] == 0.9 and simple["duration_ms"] == 0
    assert simple["artifacts"]["ingestedCount"] == 1
    assert {r["run_id"] for r in records} == {records[0]["run_id"]}
    # One run, one id: the id the records carry is the id the run is stored under.
    run_id = records[0]["run_id"]
    assert f"run {run_id}: MemoryBench results in" in captured.err
    stored = {row.run_id for row in benchkit.Store().runs()}
    assert run_id in stored and f"{run_id}-simple" in stored
    native = json.loads((project / "out" / "simple.result.json").read_text())
    assert [c["id"] for c in native["info"]["conditions"]] == ["Forgetful", "LocalBaseline"]
    assert (project / "out" / "deletion.cells.jsonl").is_file()


def test_an_llm_as_judge_benchmark_fails_before_anything_runs(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_BASE_URL", "MEMORYBENCH_JUDGE_BACKEND", "LLM_JUDGE_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    code = main(["memory", "eval", "-p", "LocalBaseline", "-b", "simple", "judge", "-o", "out"])
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "this benchmark's judge defaults to claude-sonnet-4, reached through an" in err
    # the error names what the user can choose, not a backend the user never chose
    assert "give --judge local" in err and "--judge MODEL with its key" in err
    assert "anthropic-vertex" not in err
    assert not (project / "out").exists()


def test_list_eval_and_validate_print_the_manifest_warnings(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    simple = project / "benchmarks" / "simple" / "manifest.json"
    simple.write_text(
        json.dumps(
            _manifest(
                "simple",
                extra_key=1,
                evaluation={"protocol": "exact-match", "type_instructions_file": "gone.json"},
            )
        )
    )
    unknown = "extra_key: unknown key `extra_key` is ignored"
    for argv in (
        ["memory", "list"],
        ["memory", "eval", "-p", "LocalBaseline", "-b", "simple", "--no-store", "-d"],
        ["validate", str(simple)],
    ):
        assert main([*argv, *(["-o", str(project / "out")] if "eval" in argv else [])]) == 0
        err = capsys.readouterr().err
        warned = [line for line in err.splitlines() if line.startswith("benchkit: warning: ")]
        assert any(unknown in line for line in warned), (argv, err)
        assert any("type_instructions_file" in line for line in warned), (argv, err)
    assert main(["memory", "list", "--json"]) == 0
    assert any(unknown in note for note in json.loads(capsys.readouterr().out)["warnings"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["-p", "LocalBaseline", "-b", "nope"],
            "Benchmark(s) 'nope' not found. Available: deletion, judge, simple",
        ),
        (
            ["-p", "Ghost", "-b", "simple"],
            "Provider(s) 'Ghost' not found. Available: LocalBaseline",
        ),
        (["-p", "LocalBaseline", "-b", "simple", "-c", "0"], "--concurrency must be >= 1"),
        (["-p", "x", "-b", "simple", "--http", "nourl"], "--http 'nourl' is not NAME=URL"),
        (["-p", "x", "-b", "simple", "--provider-module", "missing.py"], "does not exist"),
    ],
)
def test_eval_rejects_bad_selections(
    project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["memory", "eval", *argv]) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err


def test_eval_against_an_http_memory_service(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    service = Service()
    thread = threading.Thread(target=service.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        argv = ["memory", "eval", "-p", "remote", "-b", "simple", "deletion", "-o", "out"]
        assert main([*argv, "--http", f"remote={service.url}"]) == EXIT_OK
    finally:
        service.shutdown()
        service.server_close()
        thread.join(5)
    records = [
        json.loads(line) for line in (project / "out" / "results.jsonl").read_text().splitlines()
    ]
    assert sorted((r["benchmark_name"], r["status"]) for r in records) == [
        ("deletion", "pass"),
        ("simple", "pass"),
    ]
    assert {route for route, _ in service.seen} >= {"add", "retrieve", "delete", "reset"}
    assert not service.rows  # every scope was cleaned up


@pytest.mark.parametrize(
    "name",
    [
        "benchkit.memory",
        "benchkit.metrics",
        "benchkit.metrics.retrieval",
        "benchkit.formats.memorybench",
    ],
)
def test_public_modules_export_a_sorted_documented_all(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert list(exported) == sorted(exported)
    for attr in exported:
        obj = getattr(module, attr)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__doc__, f"{name}.{attr} has no docstring"
