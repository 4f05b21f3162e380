"""One way to name a model: ``--model`` and ``--judge`` on every command, old spellings as
aliases with a one-line note, and hints that name a flag the command accepts (#39)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchkit.cli import EXIT_BAD_INPUT, main
from benchkit.errors import ConfigError
from benchkit.llm import resolve_endpoint
from benchkit.llm._local import INSTALL_HINT

from ._llm_server import FakeOpenAI
from ._support import REPO
from .test_codeforge_run import RAG, rag_judge, rag_model, router


def _argv(server: FakeOpenAI, *judge: str) -> list[str]:
    return [
        "run",
        str(RAG),
        "--model",
        "small-model",
        "--base-url",
        server.url,
        "--judge-base-url",
        server.url,
        *judge,
        "--metrics",
        "correctness",
        "--no-store",
        "-f",
        "json",
    ]


def _judge_models(server: FakeOpenAI) -> set[str]:
    return {r.body["model"] for r in server.requests if "response_format" in r.body}


def test_judge_names_the_codeforge_judge(
    llm_server: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.respond = router(rag_model, rag_judge)
    assert main(_argv(llm_server, "--judge", "judge-a")) == 0
    assert _judge_models(llm_server) == {"judge-a"}
    assert "deprecated" not in capsys.readouterr().err


def test_judge_model_is_an_alias_with_a_one_line_note(
    llm_server: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.respond = router(rag_model, rag_judge)
    assert main(_argv(llm_server, "--judge-model", "judge-b")) == 0
    assert _judge_models(llm_server) == {"judge-b"}
    notes = [line for line in capsys.readouterr().err.splitlines() if "deprecated" in line]
    assert notes == ["benchkit: --judge-model is deprecated; it is --judge now (same meaning)"]


def test_two_different_judges_are_refused(
    llm_server: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _argv(llm_server, "--judge", "a", "--judge-model", "b")
    assert main(argv) == EXIT_BAD_INPUT
    assert "name two judges" in capsys.readouterr().err
    assert llm_server.requests == []


def test_judge_model_on_a_native_file_means_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: "the file needs --model and --metrics", about options the user never gave.
    bench = tmp_path / "b.yaml"
    bench.write_text(
        "benchkit: 1\nid: b\ntasks: [{id: t, input: x, expected: x}]\n"
        "evaluators: [{type: exact}]\n"
        "conditions: [{id: c, provider: {type: mock, outputs: {t: x}}}]\n"
    )
    assert main(["run", str(bench), "--judge-model", "j", "--no-store"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "--model and --metrics" not in err
    assert "--judge" in err  # the file has no judge for --judge to name: said, not ignored


def test_a_missing_key_names_both_flags_for_offline() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_endpoint(model="gpt-4o", env={})
    fix = str(caught.value.fix)
    assert "--judge local for a judge" in fix and "--model local for the model" in fix


def test_validate_checks_the_file_not_the_environment(tmp_path: Path) -> None:
    """A file naming `local` validates on a machine without the extra, with a note."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import importlib.util as u\n_real = u.find_spec\n"
        "u.find_spec = lambda n, *a: None if n == 'llama_cpp' else _real(n, *a)\n"
    )
    bench = tmp_path / "b.yaml"
    bench.write_text(
        "benchkit: 1\nid: b\ntasks: [{id: t, input: x, expected: x}]\n"
        "evaluators: [{type: exact}, {type: llm_rubric, model: local, prompt: 'Rate {output}'}]\n"
        "conditions: [{id: c, provider: {type: local}}]\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{shim}{os.pathsep}{REPO / 'src'}"}
    proc = subprocess.run(
        [sys.executable, "-m", "benchkit", "validate", str(bench)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok: native benchmark 'b'")
    assert "note: it names the embedded model `local`" in proc.stdout
    assert INSTALL_HINT in proc.stdout
    # a real mistake in the same file is still an error
    bench.write_text(bench.read_text().replace("type: exact", "type: exactt"))
    proc = subprocess.run(
        [sys.executable, "-m", "benchkit", "validate", str(bench)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == EXIT_BAD_INPUT and "exactt" in proc.stderr
