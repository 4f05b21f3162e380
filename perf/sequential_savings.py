"""``run --until-decided``: error rate, power and tasks saved, by simulation — printed, never
asserted.

    python perf/sequential_savings.py             # 2000 runs per row (a few minutes)
    python perf/sequential_savings.py --runs 300  # quicker
    python perf/sequential_savings.py --group-sequential --runs 40000  # the error rates, tight

Each simulated run has N = 200 tasks, two conditions (tests/_montecarlo.py's task draws).
Three procedures see the same runs:

* **group-sequential** — what ``--until-decided`` does when it knows N: a look after every
  20 tasks, O'Brien-Fleming alpha spending (:class:`benchkit.sequential.GroupSequentialTest`);
* **open-ended** — the confidence sequence that looks after every task, for a run with no
  horizon (:class:`benchkit.sequential.ConfidenceSequence`);
* **fixed** — the test a plain run reports, on all 200 tasks.

Printed per design: how often a difference was declared (under a null, the error rate,
at most alpha = 0.05 is the promise; otherwise the power), and the average share of the
200 tasks each sequential procedure used. The second table is the honest price: for each
true difference, the fixed test's N that reaches the group-sequential design's power, and
the tasks saved **at equal power** — what a user who would otherwise have sized a fixed run
for that power saves. The figures are recorded in perf/RESULTS.md and docs/statistics.md.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests._montecarlo import (
    TaskDraw,
    correlated_epochs,
    different_strengths,
    rare_discordance,
    sequential_run,
    shifted_task,
)

from benchkit import stats
from benchkit.sequential import ALPHA, ConfidenceSequence

N = 200


def open_ended(pairs: list[tuple[float, float]]) -> tuple[int, int]:
    """(sign of the declared difference or 0, tasks used) of the confidence sequence."""
    cs = ConfidenceSequence(ALPHA, grid=3)  # only 0 is needed to decide "differs"
    for t, (a, b) in enumerate(pairs, 1):
        cs.update(b - a)
        if cs.excluded(0.0):
            return (1 if cs.mean > 0 else -1), t
    return 0, len(pairs)


def fixed_power(draw: TaskDraw, n: int, runs: int, seed: int) -> float:
    """The share of fixed-size runs of ``n`` tasks whose test finds b better."""
    rng = random.Random(seed)
    found = 0
    for _ in range(runs):
        pairs = [draw(rng) for _ in range(n)]
        r = stats.paired_task_comparison([a for a, _ in pairs], [b for _, b in pairs])
        found += r.p_value is not None and r.p_value < ALPHA and r.delta > 0
    return found / runs


def group_sequential_only(designs: list[tuple[str, TaskDraw, float]], runs: int) -> None:
    """The group-sequential design's rate of declaring a difference and the fixed test's on
    the same runs (the same seed as the full table), each with its standard error."""

    def rate(k: int) -> str:
        p = k / runs
        return f"{p:7.2%} ± {(p * (1 - p) / runs) ** 0.5:.2%}"

    print(f"{'design':34} {'group-seq.':>16} {'tasks':>6} {'fixed N':>16} {'wrong side':>10}")
    for name, draw, delta in designs:
        rng = random.Random(43)
        outcomes = [sequential_run(draw, N, rng) for _ in range(runs)]
        declared = sum(o.sign != 0 for o in outcomes)
        fixed = sum(o.fixed_sign != 0 for o in outcomes)
        wrong = sum(o.sign < 0 for o in outcomes) / runs if delta else 0.0
        used = sum(o.tasks for o in outcomes) / runs / N
        print(f"{name:34} {rate(declared):>16} {used:6.1%} {rate(fixed):>16} {wrong:10.2%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument(
        "--group-sequential",
        action="store_true",
        help="only the group-sequential design and the fixed test, each rate with its "
        "standard error (no open-ended sequence, no equal-power table): fast enough for "
        "the tens of thousands of runs that tell a 5.2 %% error rate from 5 %%",
    )
    args = parser.parse_args()
    runs = args.runs
    started = time.process_time()
    se = (0.05 * 0.95 / runs) ** 0.5
    print(
        f"N = {N} tasks, alpha = {ALPHA}, {runs} runs per row; a rate's binomial standard "
        f"error is sqrt(p(1 - p) / {runs}): {se:.2%} at 5 %, {0.5 / runs**0.5:.2%} at most"
    )
    designs: list[tuple[str, TaskDraw, float]] = [
        ("null: unequal difficulty", shifted_task(0.0), 0.0),
        ("null: rare discordance (10 %)", rare_discordance(0.1), 0.0),
        ("null: correlated epochs (5)", correlated_epochs(5), 0.0),
        ("null: good at different tasks", different_strengths(), 0.0),
        *((f"difference {d:.2f}", shifted_task(d), d) for d in (0.1, 0.15, 0.2, 0.3)),
    ]
    if args.group_sequential:
        group_sequential_only(designs, runs)
        print(f"{time.process_time() - started:.0f} s of CPU")
        return
    print(
        f"{'design':34} {'group-seq.':>10} {'tasks':>6} {'open-ended':>10} {'tasks':>6} "
        f"{'fixed N':>8} {'wrong side':>10}"
    )
    gs_power: dict[float, tuple[float, float]] = {}
    for name, draw, delta in designs:
        rng = random.Random(43)
        gs = []
        oe = []
        for _ in range(runs):
            state = rng.getstate()
            gs.append(sequential_run(draw, N, rng))
            rng.setstate(state)  # the same tasks for the open-ended procedure
            oe.append(open_ended([draw(rng) for _ in range(N)]))
        declared = sum(o.sign != 0 for o in gs) / runs
        wrong = sum(o.sign < 0 for o in gs) / runs if delta else 0.0
        fixed = sum(o.fixed_sign != 0 for o in gs) / runs
        used = sum(o.tasks for o in gs) / runs / N
        oe_declared = sum(1 for s, _ in oe if s) / runs
        oe_used = sum(t for _, t in oe) / runs / N
        print(
            f"{name:34} {declared:10.1%} {used:6.0%} {oe_declared:10.1%} {oe_used:6.0%} "
            f"{fixed:8.1%} {wrong:10.1%}"
        )
        if delta:
            gs_power[delta] = (declared, used * N)
    print()
    print("at equal power: the fixed test's tasks for the group-sequential design's power")
    print(
        f"{'difference':>10} {'power':>6} {'fixed needs':>12} {'group-seq. uses':>16} {'saved':>6}"
    )
    for delta, (power, used) in gs_power.items():
        # the smallest fixed size (a multiple of 5, up to 2N) reaching that power: power
        # grows with the size, so bisect
        low, high = 1, 2 * N // 5
        if fixed_power(shifted_task(delta), 5 * high, runs, 7) < power:
            print(f"{delta:10.2f} {power:6.1%} {'> ' + str(2 * N):>12} {used:16.0f} {'-':>6}")
            continue
        while low < high:
            mid = (low + high) // 2
            if fixed_power(shifted_task(delta), 5 * mid, runs, 7) >= power:
                high = mid
            else:
                low = mid + 1
        need = 5 * low
        print(f"{delta:10.2f} {power:6.1%} {need:12d} {used:16.0f} {1 - used / need:6.0%}")
    print(f"{time.process_time() - started:.0f} s of CPU")


if __name__ == "__main__":
    main()
