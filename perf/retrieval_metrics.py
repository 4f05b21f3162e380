"""Retrieval metrics: benchkit against pytrec_eval on the same data — printed, never asserted.

    python perf/retrieval_metrics.py                     # 100,000 queries × 100 results
    python perf/retrieval_metrics.py --queries 20000     # quicker
    python perf/retrieval_metrics.py --mixed             # P@10 + R@100 + nDCG@10 + MAP@100

Four metrics at cutoff k (precision, recall, nDCG, AP — trec_eval's P_k, recall_k,
ndcg_cut_k, map_cut_k), or with ``--mixed`` the set people ask for, P@10 + R@100 + nDCG@10 +
MAP@100, in one evaluation (benchkit's ``name@n`` metrics, one pytrec_eval evaluator with
the four measures), for every query of a run of ``--queries`` queries with ``--results``
scored results each, many of them tied, against graded qrels (10 judged documents per
query, half of them retrieved). The run is generated chunk by chunk from a fixed seed, so
every part sees the same data without holding 10 million results at once; only the metric
calls are timed, not the generation.

Each part runs in a fresh subprocess, so its peak RSS is its own:

1. ``benchkit`` — :func:`benchkit.metrics.retrieval.evaluate` with trec_eval's tie order
   and zeros for queries without relevant items (exactly pytrec_eval's numbers);
2. ``benchkit-given`` — the same with the default tie order (the run's own order);
3. ``pytrec_eval`` — ``RelevanceEvaluator(qrels, measures).evaluate(run)``, if installed
   (``pip install pytrec-eval-terrier``).

The parts also print the sum of every value of every metric: benchkit's and pytrec_eval's
must agree. Target (issue #7): benchkit faster than pytrec_eval, peak RSS under 1 GB.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

SEED = 7
METRICS = ("precision", "recall", "ndcg", "map")
TREC = {"precision": "P", "recall": "recall", "ndcg": "ndcg_cut", "map": "map_cut"}
MIXED = {"precision": 10, "recall": 100, "ndcg": 10, "map": 100}
JUDGED = 10


def measures(k: int, mixed: bool) -> dict[str, tuple[str, str]]:
    """metric -> (benchkit's name, pytrec_eval's measure)."""
    return {
        metric: (f"{metric}@{cut}", f"{TREC[metric]}_{cut}")
        for metric in METRICS
        for cut in [MIXED[metric] if mixed else k]
    }


def chunks(
    queries: int, results: int, size: int
) -> Iterator[tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]]:
    """The run and qrels, ``size`` queries at a time, the same on every call."""
    pool = [f"doc{i:05d}" for i in range(20 * results)]
    scores = [round(0.25 * i, 2) for i in range(40)]  # 40 distinct scores: many ties
    for start in range(0, queries, size):
        rng = random.Random(SEED * 1_000_003 + start)
        run: dict[str, dict[str, float]] = {}
        qrels: dict[str, dict[str, int]] = {}
        for q in range(start, min(start + size, queries)):
            retrieved = rng.sample(pool, results)
            qid = f"q{q}"
            run[qid] = {doc: rng.choice(scores) for doc in retrieved}
            judged = retrieved[: JUDGED // 2] + rng.sample(pool, JUDGED // 2)
            qrels[qid] = {doc: rng.randint(0, 3) for doc in judged}
        yield run, qrels


def part(
    name: str, queries: int, results: int, k: int, size: int, mixed: bool
) -> dict[str, object]:
    """One measurement, in this process: seconds in the metric calls, sums, peak RSS."""
    totals = dict.fromkeys(METRICS, 0.0)
    elapsed = 0.0
    version = ""
    asked = measures(k, mixed)
    if name.startswith("benchkit"):
        from benchkit import __version__
        from benchkit.metrics.retrieval import evaluate

        version = __version__
        ties = "trec" if name == "benchkit" else "given"
        names = [ours for ours, _ in asked.values()]
        for run, qrels in chunks(queries, results, size):
            t0 = time.perf_counter()
            values = evaluate(run, qrels, None, names, ties=ties, no_relevant="zero")  # type: ignore[arg-type]
            elapsed += time.perf_counter() - t0
            for per_query in values.values():
                for metric, (ours, _) in asked.items():
                    totals[metric] += per_query[ours] or 0.0
    else:
        try:
            import pytrec_eval  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            return {"name": name, "missing": True}
        from importlib.metadata import version as dist_version

        version = dist_version("pytrec-eval-terrier")
        wanted = {theirs for _, theirs in asked.values()}
        for run, qrels in chunks(queries, results, size):
            t0 = time.perf_counter()
            values = pytrec_eval.RelevanceEvaluator(qrels, wanted).evaluate(run)
            elapsed += time.perf_counter() - t0
            for per_query in values.values():
                for metric, (_, theirs) in asked.items():
                    totals[metric] += per_query[theirs]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"name": name, "version": version, "seconds": elapsed, "sums": totals, "rss_mb": peak}


def _spawn(name: str, args: argparse.Namespace) -> dict[str, object]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--part",
        name,
        "--queries",
        str(args.queries),
        "--results",
        str(args.results),
        "--k",
        str(args.k),
        "--chunk",
        str(args.chunk),
        *(["--mixed"] if args.mixed else []),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--results", type=int, default=100)
    parser.add_argument("--k", type=int, default=10, help="cutoff")
    parser.add_argument("--chunk", type=int, default=10_000, help="queries per generated chunk")
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs per part")
    parser.add_argument(
        "--mixed", action="store_true", help="P@10 + R@100 + nDCG@10 + MAP@100 instead"
    )
    parser.add_argument("--part", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part:
        print(
            json.dumps(part(args.part, args.queries, args.results, args.k, args.chunk, args.mixed))
        )
        return

    what = (
        " + ".join(ours for ours, _ in measures(args.k, True).values())
        if args.mixed
        else f"{len(METRICS)} metrics at k={args.k}"
    )
    print(
        f"python {sys.version.split()[0]}; {args.queries} queries × {args.results} results "
        f"× {what}; best of {args.repeat}"
    )
    found: dict[str, dict[str, object]] = {}
    for name in ("benchkit", "benchkit-given", "pytrec_eval"):
        runs = [_spawn(name, args) for _ in range(args.repeat)]
        if runs[0].get("missing"):
            print(f"{name:15} not installed (pip install pytrec-eval-terrier)")
            continue
        best = min(runs, key=lambda r: float(r["seconds"]))  # type: ignore[arg-type]
        found[name] = best
        seconds = float(best["seconds"])  # type: ignore[arg-type]
        print(
            f"{name:15} {best['version']:>8}  {seconds:7.2f} s  "
            f"{seconds / args.queries * 1e6:6.1f} µs/query  peak RSS {float(best['rss_mb']):6.1f} MB"  # type: ignore[arg-type]
        )
    if "pytrec_eval" in found:
        ours = float(found["benchkit"]["seconds"])  # type: ignore[arg-type]
        theirs = float(found["pytrec_eval"]["seconds"])  # type: ignore[arg-type]
        print(
            f"ratio           pytrec_eval / benchkit = {theirs / ours:.2f} (> 1: benchkit is faster)"
        )
        a, b = found["benchkit"]["sums"], found["pytrec_eval"]["sums"]
        assert isinstance(a, dict) and isinstance(b, dict)
        gap = max(abs(a[m] - b[m]) for m in METRICS)
        print(f"agreement       largest difference of the per-metric sums: {gap:.3g}")


if __name__ == "__main__":
    main()
