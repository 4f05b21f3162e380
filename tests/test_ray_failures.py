"""When Ray cannot run the cells, one paragraph says what failed and what to try (#42):
``python -m benchkit run --executor ray`` whose local cluster cannot start (a memory
limit), and one asking for workers the cluster can never place — exit 2, no traceback,
and the stored run is not finished."""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ._support import REPO, one_paragraph_error

pytest.importorskip("ray")

pytestmark = pytest.mark.slow

BENCH = """benchkit: 1
id: ray-failures
evaluators: [exact]
conditions:
  - {id: a, provider: {type: mock, outputs: {t0: x, t1: x}}}
tasks:
  - {id: t0, input: q, expected: x}
  - {id: t1, input: q, expected: x}
"""


def _run(tmp_path: Path, *args: str, memory: int | None = None) -> subprocess.CompletedProcess[str]:
    bench = tmp_path / "b.yaml"
    bench.write_text(BENCH, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = str(REPO / "src")

    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    argv = [sys.executable, "-m", "benchkit", "run", str(bench), "--executor", "ray"]
    return subprocess.run(
        [*argv, "--store", str(tmp_path / "s.db"), "--no-progress", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
        preexec_fn=limit,
    )


def _stored(tmp_path: Path) -> list[tuple[str, int]]:
    db = sqlite3.connect(tmp_path / "s.db")
    try:
        return db.execute(
            "SELECT status, (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.run_id) FROM runs r"
        ).fetchall()
    finally:
        db.close()


def test_a_local_cluster_that_cannot_start_is_one_paragraph(tmp_path: Path) -> None:
    done = _run(tmp_path, memory=3 * 2**30)  # Ray's processes need more address space
    error = one_paragraph_error(done)
    assert "the local Ray cluster did not start" in error
    assert "memory" in error and "--executor local" in error
    assert _stored(tmp_path) == [("interrupted", 0)]


def test_workers_the_cluster_can_never_place_are_one_paragraph(tmp_path: Path) -> None:
    done = _run(tmp_path, "--workers", "1000", "--concurrency", "1000")
    error = one_paragraph_error(done)
    assert "Ray cannot place 1000 workers of 1 CPU each" in error
    assert "--workers" in error
    assert _stored(tmp_path) == [("interrupted", 0)]
