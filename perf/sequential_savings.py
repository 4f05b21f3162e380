"""``run --until-decided``: error rate and tasks saved, by simulation — printed, never asserted.

    python perf/sequential_savings.py            # 2000 runs per design (about a minute)
    python perf/sequential_savings.py --runs 300 # quicker

Each simulated run has 200 pass/fail tasks, one epoch, two conditions: p_a ~ U(0.2, 0.6)
and p_b = p_a + delta + U(-0.15, 0.15) per task (tests/_montecarlo.shifted's design), so the
true mean difference is exactly delta. The anytime-valid confidence sequence of
:mod:`benchkit.sequential` looks after every task, as the Runner does. Printed per delta:
how often a difference was declared (the error rate when delta = 0, at most alpha = 0.05 is
the promise; the power otherwise), how often on the wrong side, and the average share of
the 200 tasks that did not need to run. The figures are recorded in perf/RESULTS.md.
"""

from __future__ import annotations

import argparse
import random

from benchkit.sequential import ALPHA, ConfidenceSequence

TASKS = 200


def one_run(delta: float, rng: random.Random) -> tuple[int, int]:
    """(sign of the declared difference or 0, tasks used)."""
    cs = ConfidenceSequence(ALPHA, grid=3)  # only 0 is needed to decide "differs"
    for t in range(TASKS):
        pa = rng.uniform(0.2, 0.6)
        pb = pa + delta + rng.uniform(-0.15, 0.15)
        cs.update(float(rng.random() < pb) - float(rng.random() < pa))
        if cs.excluded(0.0):
            return (1 if cs.mean > 0 else -1), t + 1
    return 0, TASKS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    print(f"{TASKS} tasks, a look after every task, alpha = {ALPHA}, {args.runs} runs each")
    print(f"{'delta':>6} {'declared':>9} {'wrong side':>11} {'tasks saved':>12}")
    for delta in (0.0, 0.1, 0.15, 0.2, 0.3):
        rng = random.Random(26)
        runs = [one_run(delta, rng) for _ in range(args.runs)]
        declared = sum(1 for sign, _ in runs if sign) / args.runs
        wrong = sum(1 for sign, _ in runs if sign < 0) / args.runs if delta else 0.0
        saved = sum(1 - used / TASKS for _, used in runs) / args.runs
        print(f"{delta:6.2f} {declared:9.1%} {wrong:11.1%} {saved:12.1%}")


if __name__ == "__main__":
    main()
