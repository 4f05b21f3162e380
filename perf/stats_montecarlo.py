"""The large Monte-Carlo run behind tests/test_stats_montecarlo.py (issue 13) and the judge
statistics' tests in tests/test_agreement.py (issue 43).

Prints, per design, the type-I error of the comparison at alpha = 0.05, the coverage of the
95 % intervals (condition pass rate or mean score; the paired difference), what the
pre-issue-13 cell-level statistics gave on the same runs, and the power at the minimum
detectable effect the report predicted. Also compares the task-level t interval with the
task-level percentile bootstrap at small n (why reports use the t interval).

``--judges`` prints instead the coverage of the judge report's intervals: kappa and alpha
(the jackknife over tasks on Fisher's scale, beside the percentile bootstrap it replaced)
at 20, 50 and 200 tasks for binary and ordinal tables, and the corrected pass rate's
profile-likelihood interval at 20 and 50 tasks with 10-50 % of them rated.

    python perf/stats_montecarlo.py [--runs 4000] [--seed 13]
    python perf/stats_montecarlo.py --judges [--runs 1000]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests._montecarlo import (
    AGREEMENT_DESIGNS,
    DESIGNS,
    agreement_coverage,
    agreement_statistic,
    binary_epochs,
    corrected_coverage,
    exact_agreement_coverage,
    shifted,
    simulate,
)

from benchkit import agreement, stats


def _band(rate: float, n: int) -> str:
    half = 3 * (rate * (1 - rate) / n) ** 0.5
    return f"[{rate - half:.3f}, {rate + half:.3f}]"


def _bootstrap_vs_t(tasks: int, runs: int, seed: int) -> tuple[float, float]:
    """Coverage of condition a's true pass rate (0.6) by the t and bootstrap intervals."""
    design = binary_epochs(tasks, 5)
    rng = random.Random(seed)
    t_hits = boot_hits = 0
    for i in range(runs):
        cells = [c for c in design.draw(rng) if c.condition_id == "a"]
        values = [c.score or 0.0 for c in cells]
        units = [c.task_id for c in cells]
        t_iv = stats.clustered_interval(values, units)
        b_iv = stats.cluster_bootstrap_interval(values, units, resamples=1000, seed=i)
        t_hits += t_iv.low <= 0.6 <= t_iv.high
        boot_hits += b_iv.low <= 0.6 <= b_iv.high
    return t_hits / runs, boot_hits / runs


def _bootstrap_coverage(name: str, statistic: str, tasks: int, runs: int, seed: int) -> float:
    """Coverage of the percentile task bootstrap (400 resamples) on the same design."""
    design = AGREEMENT_DESIGNS[name]
    truth = design.truth(statistic)
    compute = agreement_statistic(statistic, design.levels)
    rng = random.Random(seed)
    hits = shown = 0
    for i in range(runs):
        sample = design.draw(rng, tasks)
        iv = agreement.task_bootstrap(sample, range(tasks), compute, resamples=400, seed=i)
        if iv is not None:
            shown += 1
            hits += iv.low <= truth <= iv.high
    return hits / max(1, shown)


def judges(runs: int, seed: int) -> None:
    """The coverage tables of docs/statistics.md's "How far can a judge be trusted"."""
    start = time.process_time()
    print(f"{runs} simulated runs per cell; a correct 95 % rate lies in {_band(0.95, runs)}")
    print("design            statistic        true    n=20           n=50           n=200")
    for name, design in AGREEMENT_DESIGNS.items():
        binary = name.startswith("binary")
        for statistic in (
            ("kappa", "alpha_nominal") if binary else ("weighted_kappa", "alpha_interval")
        ):
            cells = []
            for tasks in (20, 50, 200):
                c = agreement_coverage(design, statistic, tasks, runs, seed)
                cells.append(f"{c.rate:.3f} w {c.width:.2f}")
            print(f"{name:17} {statistic:15} {design.truth(statistic):6.3f}  " + "  ".join(cells))
    print("exact coverage of pass/fail tables (every table enumerated): covered, above, below")
    for name, design in AGREEMENT_DESIGNS.items():
        if not name.startswith("binary"):
            continue
        for statistic in ("kappa", "alpha_nominal"):
            found = [exact_agreement_coverage(design, statistic, tasks) for tasks in (20, 50)]
            cells = [f"{e.covered:.4f} {e.above:.4f} {e.below:.4f}" for e in found]
            print(f"{name:17} {statistic:15} n=20 " + "   n=50 ".join(cells))
    boot = [
        _bootstrap_coverage(name, "kappa", 20, max(runs // 2, 200), seed)
        for name in ("binary", "binary_skewed")
    ]
    print(f"percentile bootstrap, kappa, 20 tasks: {boot[0]:.3f} (binary), {boot[1]:.3f} (skewed)")
    print("corrected pass rate (true 0.4, Se 0.85, Sp 0.9): tasks, rated, coverage, width")
    for tasks, rated in ((20, 2), (20, 5), (20, 10), (50, 5), (50, 12), (50, 25)):
        c, notes = corrected_coverage(tasks, rated, runs, seed)
        shown = c.runs - c.missing
        note = f"; none in {c.missing} runs: {notes[0]}" if notes else ""
        rate = f"{c.rate:.3f} w {c.width:.2f}" if shown else "-"
        print(f"  {tasks:3} {rated:3}  {rate}{note}")
    print(f"{time.process_time() - start:.0f} s of CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000, help="simulated runs per design")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--judges", action="store_true", help="the judge report's intervals")
    args = parser.parse_args()
    if args.judges:
        judges(args.runs, args.seed)
        return
    n = args.runs
    print(f"{n} simulated runs per design; 3-sigma bands: alpha {_band(0.05, n)}, "
          f"coverage {_band(0.95, n)}, power {_band(0.8, n)}")  # fmt: skip
    header = "design                              test              type-I  cover  Δcover"
    print(header + "  | cell-level: type-I  cover")
    start = time.perf_counter()
    for design in DESIGNS.values():
        s = simulate(design, n, args.seed)
        naive = (
            f"  |             {s.naive_reject:.3f}  {s.naive_coverage:.3f}"
            if s.naive_reject is not None and s.naive_coverage is not None
            else ""
        )
        print(
            f"{s.design:35} {'+'.join(s.methods):17} {s.reject:.3f}   {s.rate_coverage:.3f}  "
            f"{s.delta_coverage:.3f}{naive}"
        )
    for tasks in (40, 12):
        null = simulate(shifted(tasks, 3, 0.0), n, args.seed + 1)
        assert null.mean_mde is not None
        real = simulate(shifted(tasks, 3, null.mean_mde), n, args.seed + 2)
        print(
            f"power, {tasks} tasks x 3 epochs ({'+'.join(real.methods)}): predicted 80 % at "
            f"MDE {null.mean_mde:.3f}; detected {real.reject:.3f}; type-I {null.reject:.3f}; "
            f"Δ coverage {real.delta_coverage:.3f}"
        )
    for tasks in (5, 10, 20):
        t_cov, boot_cov = _bootstrap_vs_t(tasks, max(n // 4, 200), args.seed + 3)
        print(f"small n, {tasks:2} tasks x 5 epochs: t interval covers {t_cov:.3f}, "
              f"percentile bootstrap {boot_cov:.3f}")  # fmt: skip
    print(f"{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
