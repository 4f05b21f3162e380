"""Small building blocks for tests: paths and a suite factory."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

from benchkit import Benchmark, Condition, EvaluatorSpec, RunOptions, Suite, Task
from benchkit.protocols import Provider

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def make_suite(
    providers: dict[str, Provider],
    tasks: Iterable[Task] | None = None,
    *,
    n: int = 5,
    evaluator: str = "exact",
    **options: object,
) -> Suite:
    """A suite whose task i has input i and expects str(i), run under ``providers``."""
    if tasks is None:
        tasks = [Task(f"t{i}", input=i, expected=str(i)) for i in range(n)]
    return Suite(
        Benchmark("test", name="Test", tasks=tuple(tasks), evaluators=(EvaluatorSpec(evaluator),)),
        conditions=tuple(Condition(cid, p) for cid, p in providers.items()),
        options=RunOptions(**options),  # type: ignore[arg-type]
    )


def one_paragraph_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The CLI's one error line, after checking it exited 2 without a traceback."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("benchkit: error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]
