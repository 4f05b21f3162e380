"""One way to name a model: ``--model`` and ``--judge`` on every command, old spellings as
aliases with a one-line note, and hints that name a flag the command accepts (#39)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchkit.cli import EXIT_BAD_INPUT, main
from benchkit.cli._main import _chosen, _parser
from benchkit.errors import ConfigError
from benchkit.llm import resolve_endpoint
from benchkit.llm._config import offline_as
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


def test_a_missing_key_names_the_flag_of_the_model_that_lacks_it() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_endpoint(model="gpt-4o", env={})
    fix = str(caught.value.fix)  # no role known: no flag, the file's `model: local`
    assert "model: local in the file" in fix and "--" not in fix
    for role in ("judge", "model"):
        with pytest.raises(ConfigError) as caught, offline_as(role):
            resolve_endpoint(model="gpt-4o", env={})
        assert f"--{role} local" in str(caught.value.fix)
        assert f"--{'model' if role == 'judge' else 'judge'}" not in str(caught.value.fix)


#: A flag and the model it names, as the hints write them: ``--judge local``.
HINT = re.compile(r"(--[a-z][a-z-]*) (local|MODEL)\b")


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "LITELLM_MASTER_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("MEMORYBENCH_JUDGE_BACKEND", "MEMORYBENCH_JUDGE_MODEL", "LLM_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BENCHKIT_STORE", str(tmp_path / "s.db"))


def _chat_file(tmp_path: Path, evaluator: str = "exact") -> str:
    path = tmp_path / "chat.yaml"
    path.write_text(
        "benchkit: 1\nid: chat\n"
        f"evaluators: [{evaluator}]\n"
        "conditions:\n  - {id: m, provider: {type: chat, model: gpt-4o-mini}}\n"
        "tasks:\n  - {id: t0, input: hi, expected: hi}\n",
        encoding="utf-8",
    )
    return str(path)


def _judged_file(tmp_path: Path) -> str:
    path = tmp_path / "judged.yaml"
    path.write_text(
        "benchkit: 1\nid: judged\n"
        "evaluators: [{type: llm_rubric, prompt: 'Rate {output} 0-10', model: gpt-4o-mini}]\n"
        "conditions:\n  - {id: m, provider: {type: python, file: f.py, function: f}}\n"
        "tasks:\n  - {id: t0, input: hi, expected: hi}\n",
        encoding="utf-8",
    )
    (tmp_path / "f.py").write_text("def f(x):\n    return x\n", encoding="utf-8")
    return str(path)


def _commands(tmp_path: Path) -> list[tuple[list[str], str]]:
    """Each command that fails without a key, and the flag its hint must name."""
    skills = str(REPO / "benchmarks" / "skills" / "web_search_mock")
    basic = str(REPO / "benchmarks" / "codeforge" / "basic-coding.yaml")
    memory = ["memory", "eval", "-p", "LocalBaseline", "-b", "locomo-shaped"]
    return [
        (["run", _chat_file(tmp_path)], "--model"),
        (["run", _judged_file(tmp_path)], "--judge"),
        (["run", basic, "--model", "gpt-4o-mini", "--metrics", "correctness"], "--judge"),
        (
            [
                "run",
                basic,
                "--model",
                "gpt-4o-mini",
                "--metrics",
                "correctness",
                "--judge",
                "local",
                "--limit",
                "1",
            ],
            "--model",
        ),
        (
            [
                "eval",
                "--skills",
                skills,
                "--benchmark",
                "web-search-basic",
                "--benchmarks-dir",
                str(REPO / "benchmarks"),
            ],
            "--judge",
        ),
        (memory, "--judge"),  # the manifest's judge, behind a proxy
        ([*memory, "--judge", "local"], "--model"),  # the manifest's answering model
        ([*memory, "--judge", "local", "--model", "gpt-4o-mini"], "--model"),  # no key
        ([*memory, "--model", "local"], "--judge"),
    ]


def test_every_offline_hint_names_a_flag_its_command_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for argv, flag in _commands(tmp_path):
        assert main([*argv, "--no-store"]) == 2, argv
        err = capsys.readouterr().err
        hints = {found[0] for found in HINT.findall(err)}
        assert hints == {flag}, (argv, err)  # the one flag of the model that failed
        assert "anthropic-vertex" not in err  # a backend the user never chose
        # the hint, taken as printed, is a command line argparse accepts
        for hint in HINT.findall(err):
            given = [*argv]
            if hint[0] in given:
                del given[given.index(hint[0]) : given.index(hint[0]) + 2]
            line = [*given, *hint]
            args = _parser(_chosen(line)).parse_args(line)
            assert getattr(args, hint[0].lstrip("-")) == hint[1], line


def test_memory_eval_judge_changes_the_judge_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --judge local: the answering model stays the manifest's, and its error says so
    argv = ["memory", "eval", "-p", "LocalBaseline", "-b", "locomo-shaped", "--judge", "local"]
    assert main([*argv, "--no-store"]) == 2
    err = capsys.readouterr().err
    assert "this benchmark's answer model defaults to claude-sonnet-4" in err
    assert "give --model local" in err and "--judge" not in err.split("Fix:")[1]
    # a benchmark without a model takes neither
    exact = ["memory", "eval", "-p", "LocalBaseline", "-b", "locomo-shaped-exact"]
    assert main([*exact, "--judge", "local", "--no-store"]) == 2
    assert "use none" in capsys.readouterr().err


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
