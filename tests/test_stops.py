"""Stopping a command (#39): SIGTERM or Ctrl-C (SIGINT) of ``run``, ``eval``, ``memory eval``,
``bench run`` and a CodeForge dataset's ``run`` marks the stored run ``interrupted: signal``
(never ``crashed``), prints one line saying what was kept and the command that resumes it,
and that command, executed as printed, finishes the same run with only the missing cells.
Each command runs as a real subprocess with its output in a pipe, where it prints progress
lines; the systems under test sleep, so there is time to stop them."""

from __future__ import annotations

import os
import re
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchkit.store import Store

from ._llm_server import FakeOpenAI, Reply

pytestmark = pytest.mark.slow

SLEEP = 0.3
PROGRESS = re.compile(r"^benchkit: \d+/\d+ cells \(\d+%\), \d+ errors?, ", re.MULTILINE)


def _stored_cells(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        with sqlite3.connect(store, timeout=5) as db:
            (count,) = db.execute("SELECT COUNT(*) FROM cells").fetchone()
            return int(count)
    except sqlite3.OperationalError:  # the schema is being created
        return 0


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHKIT_STORE")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _stop(argv: list[str], cwd: Path, store: Path, signum: int) -> tuple[int, str]:
    """Start ``python -m benchkit ARGV`` in a pipe, wait for two stored cells, send
    ``signum``; its exit code and stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchkit", *argv],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while _stored_cells(store) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no cell was stored"
            time.sleep(0.05)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


def _hint(err: str) -> list[str]:
    (line,) = [x for x in err.splitlines() if x.startswith("to continue it: ")]
    return shlex.split(line.removeprefix("to continue it: "))


def _python_bench(root: Path) -> list[str]:
    (root / "slow.py").write_text(
        f"import time\n\ndef answer(x):\n    time.sleep({SLEEP})\n    return 'x'\n",
        encoding="utf-8",
    )
    tasks = "".join(f"  - {{id: t{i}, input: q{i}, expected: x}}\n" for i in range(12))
    (root / "bench.yaml").write_text(
        "benchkit: 1\nid: slow\nevaluators: [exact]\nconditions:\n"
        "  - {id: a, provider: {type: python, file: slow.py, function: answer}}\n"
        f"run: {{concurrency: 1}}\ntasks:\n{tasks}",
        encoding="utf-8",
    )
    return ["run", "bench.yaml", "--seed", "3", "--timeout", "30", "--store", "s.db"]


def _skill(root: Path) -> list[str]:
    skill = root / "slowskill"
    skill.mkdir()
    (skill / "skill.json").write_text(
        '{"id": "slowcalc", "name": "Slow", "version": "1.0.0", "description": "slow",'
        ' "adapterType": "subprocess", "entrypoint": "python3 skill.py",'
        ' "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}',
        encoding="utf-8",
    )
    (skill / "skill.py").write_text(
        "import json, sys, time\n"
        "request = json.loads(sys.stdin.readline())\n"
        f"time.sleep({SLEEP})\n"
        'print(json.dumps({"jsonrpc": "2.0", "id": request["id"], '
        '"result": {"result": "42"}}))\n',
        encoding="utf-8",
    )
    # the default store in the working directory: the hint names it
    return ["eval", "--skills", "slowskill", "--benchmark", "coding-easy", "--concurrency", "1",
            "--output-dir", "reports", "--limit", "8"]  # fmt: skip


def _memory(root: Path) -> list[str]:
    (root / "slowmem.py").write_text(
        "import anyio\nfrom benchkit.memory import LocalBaseline\n\n\n"
        "class Slow(LocalBaseline):\n"
        "    async def retrieve(self, *args, **kwargs):\n"
        f"        await anyio.sleep({SLEEP})\n"
        "        return await super().retrieve(*args, **kwargs)\n\n\n"
        'MEMORY_PROVIDERS = {"Slow": Slow}\n',
        encoding="utf-8",
    )
    return ["memory", "eval", "--provider-module", "slowmem.py", "--providers", "Slow",
            "--benchmarks", "locomo-shaped-exact", "--store", str(root / "s.db")]  # fmt: skip


def _bench_run(root: Path) -> list[str]:
    bundle = root / "bundle"
    bundle.mkdir()
    (bundle / "notes.md").write_text("notes\n", encoding="utf-8")
    conditions = "".join(
        f"  - id: {c}\n    bundle_path: ./bundle\n"
        for c in ("no_skill", "curated_skill", "self_generated_skill")
    )
    tasks = "".join(
        f"  - id: t{i}\n    domain: d\n    timeout_ms: 10000\n    verifier:\n"
        f"      type: command\n      command: sleep {SLEEP}\n"
        for i in range(4)
    )
    (root / "bench.yaml").write_text(
        f"schema: skillvault.bench.config.v1\nconditions:\n{conditions}tasks:\n{tasks}",
        encoding="utf-8",
    )
    return ["bench", "run", "--config", "bench.yaml", "--store", "s.db"]


def _codeforge(root: Path, llm: FakeOpenAI) -> list[str]:
    tasks = "".join(
        f"  - {{id: t{i}, name: say {i}, input: 'Say {i}', expected_output: '{i}'}}\n"
        for i in range(8)
    )
    (root / "data.yaml").write_text(
        f"name: slow-coding\ndescription: prompts\ntasks:\n{tasks}", encoding="utf-8"
    )
    return ["run", "data.yaml", "--model", "gpt-4o-mini", "--base-url", llm.url,
            "--metrics", "correctness", "--judge", "gpt-4o-mini", "--judge-base-url", llm.url,
            "--concurrency", "1", "--store", "s.db"]  # fmt: skip


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def slow(body: Any) -> Reply:
        time.sleep(SLEEP / 2)
        text = str(body["messages"][-1]["content"])
        if "response_format" in body or "JSON" in text:
            return Reply.text('{"score": 1, "reason": "right", "verdict": "yes"}')
        return Reply.text("0")

    with FakeOpenAI() as server:
        server.respond = slow
        yield server


COMMANDS: dict[str, Callable[..., list[str]]] = {
    "run": _python_bench,
    "eval": _skill,
    "memory eval": _memory,
    "bench run": _bench_run,
    "codeforge run": _codeforge,
}


@pytest.mark.parametrize(
    ("command", "signum"),
    [
        ("run", signal.SIGINT),
        ("eval", signal.SIGTERM),
        ("memory eval", signal.SIGTERM),
        ("bench run", signal.SIGINT),
        ("codeforge run", signal.SIGTERM),
    ],
)
def test_a_stopped_command_says_what_it_kept_and_its_hint_resumes_it(
    command: str, signum: signal.Signals, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    make = COMMANDS[command]
    argv = (
        make(tmp_path, request.getfixturevalue("llm"))
        if command == "codeforge run"
        else make(tmp_path)
    )
    store = tmp_path / ("s.db" if command != "eval" else ".benchkit/benchkit.db")
    code, err = _stop(argv, tmp_path, store, signum)

    assert code == 128 + signum, err  # 130 for Ctrl-C, 143 for SIGTERM (cli_toolkit)
    (said,) = [line for line in err.splitlines() if line.startswith("interrupted: signal;")]
    kept = int(re.search(r"; (\d+) finished cells kept in ", said)[1])  # type: ignore[index]
    assert kept >= 2 and str(store.resolve()) in said
    with Store(store) as opened:
        (run,) = opened.runs()
        assert (run.status, run.status_text) == ("interrupted", "interrupted: signal")
        assert run.cells == kept and run.stopped_by == "signal" and run.budget is None

    hint = _hint(err)
    assert hint[-1] == "--resume" and hint[hint.index("-m") + 2 :][:2] == argv[:2]
    assert set(argv) <= set(hint)  # every option it was started with
    resumed = subprocess.run(
        hint, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert PROGRESS.search(resumed.stderr), resumed.stderr  # progress lines in a pipe
    with Store(store) as opened:
        (again,) = opened.runs()
        summary = opened.summary(again.run_id)
    assert again.run_id == run.run_id and again.status == "finished"
    assert again.cells == again.total_cells > kept
    first, second = summary.sessions
    assert (first.status, first.written) == ("interrupted", kept)
    assert (second.kind, second.reused, second.written) == ("resume", kept, run.total_cells - kept)
