"""``-v`` / ``-vv``: the standard logging module, on stderr — retries, provider calls,
memory ingestion steps (MemoryBench's troubleshooting: look for add_memory in the log)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from benchkit.cli import main

BENCH = """benchkit: 1
id: logs
evaluators: [contains]
conditions:
  - id: flaky
    provider: {type: python, file: flaky.py, function: answer}
run: {retries: 1, backoff_base: 0, concurrency: 1}
tasks:
  - {id: t1, input: a, expected: a}
"""

FLAKY = """calls = []


def answer(x):
    calls.append(x)
    if len(calls) == 1:
        raise RuntimeError("first call fails")
    return x
"""

MEMORY = """benchkit: 1
id: mem-logs
evaluators: [{type: contains, keywords: [Paris]}]
conditions:
  - id: baseline
    provider: {type: memory, provider: LocalBaseline}
tasks:
  - id: t1
    input: Where does Ada live?
    expected: Paris
    setup:
      - {action: add, content: Ada lives in Paris}
"""


def write(tmp_path: Path) -> Path:
    (tmp_path / "flaky.py").write_text(FLAKY)
    bench = tmp_path / "bench.yaml"
    bench.write_text(BENCH)
    return bench


def test_v_logs_retries_and_vv_every_provider_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(write(tmp_path)), "--no-store", "--no-progress", "-v"]) == 0
    err = capsys.readouterr().err
    assert "benchkit.runner INFO flaky/t1 epoch 0 attempt 1: execution_error" in err
    assert "RuntimeError: first call fails" in err and "retrying in" in err
    assert "calling CallableProvider" not in err
    assert main(["-vv", "run", str(write(tmp_path)), "--no-store", "--no-progress"]) == 0
    assert "benchkit.runner DEBUG calling CallableProvider for flaky/t1" in capsys.readouterr().err
    # Quiet without -v, and the logger is left as it was found.
    assert main(["run", str(write(tmp_path)), "--no-store", "--no-progress"]) == 0
    assert "retrying" not in capsys.readouterr().err
    assert not logging.getLogger("benchkit").handlers


def test_v_logs_memory_ingestion_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "mem.yaml"
    bench.write_text(MEMORY)
    assert main(["run", str(bench), "--no-store", "--no-progress", "--verbose"]) == 0
    err = capsys.readouterr().err
    assert "benchkit.memory INFO add_memory" in err
    assert "retrieve_memory" in err
