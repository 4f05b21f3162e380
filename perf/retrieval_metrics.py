"""Retrieval metrics: benchkit against pytrec_eval on the same data — printed, never asserted.

    python perf/retrieval_metrics.py                     # 100,000 queries × 100 results
    python perf/retrieval_metrics.py --queries 20000     # quicker
    python perf/retrieval_metrics.py --request mixed     # one request only

Three requests, each the same four metrics — precision, recall, nDCG, AP (trec_eval's
``P``, ``recall``, ``ndcg_cut``, ``map_cut``) — for every query of a run of ``--queries``
queries with ``--results`` scored results each, many of them tied, against graded qrels
(10 judged documents per query, half of them retrieved):

* ``k10`` — all four at cutoff 10;
* ``k100`` — all four at cutoff 100;
* ``mixed`` — the set people ask for, P@10 + R@100 + nDCG@10 + MAP@100, in one evaluation
  (benchkit's ``name@n`` metrics; one pytrec_eval evaluator with the four measures).

The run is generated chunk by chunk from a fixed seed, so every part sees the same data
without holding 10 million results at once; only the metric calls are timed, not the
generation. Each part runs in a fresh subprocess (so its peak RSS is its own):

* ``benchkit`` — :func:`benchkit.metrics.retrieval.evaluate` with trec_eval's tie order and
  zeros for queries without relevant items, which are exactly pytrec_eval's numbers;
* ``pytrec_eval`` — ``RelevanceEvaluator(qrels, measures).evaluate(run)``
  (``pip install pytrec-eval-terrier``).

The two parts of a request alternate, ``--repeat`` times (benchkit first, then
pytrec_eval, then benchkit ...), so a machine that slows down or speeds up weighs on both
alike. Printed per request: the median seconds of each, and benchkit's time / pytrec_eval's
time — the ratio of the medians and the median of the pair-by-pair ratios (below 1:
benchkit is faster). Every part also sums every value of every metric; the sums of the two
must agree (within 1e-9 of each other), or the script says which differ and exits 1.
Target (issue #30): below 1 on every request, with the same sums.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

SEED = 7
METRICS = ("precision", "recall", "ndcg", "map")
TREC = {"precision": "P", "recall": "recall", "ndcg": "ndcg_cut", "map": "map_cut"}
REQUESTS = {
    "k10": dict.fromkeys(METRICS, 10),
    "k100": dict.fromkeys(METRICS, 100),
    "mixed": {"precision": 10, "recall": 100, "ndcg": 10, "map": 100},
}
PARTS = ("benchkit", "pytrec_eval")
JUDGED = 10


def measures(request: str) -> dict[str, tuple[str, str]]:
    """metric -> (benchkit's name, pytrec_eval's measure) for one request."""
    return {
        metric: (f"{metric}@{cut}", f"{TREC[metric]}_{cut}")
        for metric, cut in REQUESTS[request].items()
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


def part(name: str, request: str, queries: int, results: int, size: int) -> dict[str, object]:
    """One measurement, in this process: seconds in the metric calls, sums, peak RSS."""
    totals = dict.fromkeys(METRICS, 0.0)
    elapsed = 0.0
    asked = measures(request)
    if name == "benchkit":
        from benchkit import __version__
        from benchkit.metrics.retrieval import evaluate

        version = __version__
        names = [ours for ours, _ in asked.values()]
        for run, qrels in chunks(queries, results, size):
            t0 = time.perf_counter()
            values = evaluate(run, qrels, None, names, ties="trec", no_relevant="zero")
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
            found = pytrec_eval.RelevanceEvaluator(qrels, wanted).evaluate(run)
            elapsed += time.perf_counter() - t0
            for per_query_theirs in found.values():
                for metric, (_, theirs) in asked.items():
                    totals[metric] += per_query_theirs[theirs]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"name": name, "version": version, "seconds": elapsed, "sums": totals, "rss_mb": peak}


def _spawn(name: str, request: str, args: argparse.Namespace) -> dict[str, object]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--part",
        name,
        "--request",
        request,
        "--queries",
        str(args.queries),
        "--results",
        str(args.results),
        "--chunk",
        str(args.chunk),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _seconds(result: dict[str, object]) -> float:
    return float(result["seconds"])  # type: ignore[arg-type]


def _sums(result: dict[str, object]) -> dict[str, float]:
    sums = result["sums"]
    assert isinstance(sums, dict)
    return sums


def measure(request: str, args: argparse.Namespace) -> bool:
    """Print one request's figures; False when the sums of the two parts differ."""
    runs: dict[str, list[dict[str, object]]] = {name: [] for name in PARTS}
    for _ in range(args.repeat):
        for name in PARTS:
            runs[name].append(_spawn(name, request, args))
    what = " + ".join(ours for ours, _ in measures(request).values())
    print(f"{request:6} {what}")
    if runs["pytrec_eval"][0].get("missing"):
        print("       pytrec_eval not installed (pip install pytrec-eval-terrier)")
        return True
    medians = {}
    for name in PARTS:
        seconds = [_seconds(r) for r in runs[name]]
        medians[name] = statistics.median(seconds)
        first = runs[name][0]
        print(
            f"       {name:12} {first['version']:>8}  median {medians[name]:6.2f} s "
            f"({', '.join(f'{s:.2f}' for s in seconds)})  "
            f"{medians[name] / args.queries * 1e6:6.1f} µs/query  "
            f"peak RSS {max(float(r['rss_mb']) for r in runs[name]):6.1f} MB"  # type: ignore[arg-type]
        )
    pairs = [
        _seconds(ours) / _seconds(theirs)
        for ours, theirs in zip(runs["benchkit"], runs["pytrec_eval"], strict=True)
    ]
    print(
        f"       benchkit / pytrec_eval = {medians['benchkit'] / medians['pytrec_eval']:.2f} "
        f"(medians); pair by pair {', '.join(f'{p:.2f}' for p in pairs)}, "
        f"median {statistics.median(pairs):.2f}  (< 1: benchkit is faster)"
    )
    ours_sums = [_sums(r) for r in runs["benchkit"]]
    theirs_sums = [_sums(r) for r in runs["pytrec_eval"]]
    reference = theirs_sums[0]
    differ = [
        metric
        for metric in METRICS
        for sums in ours_sums + theirs_sums
        if not math.isclose(sums[metric], reference[metric], rel_tol=1e-9, abs_tol=1e-9)
    ]
    gap = max(abs(sums[m] - reference[m]) for sums in ours_sums for m in METRICS)
    sums_text = ", ".join(f"{m} {reference[m]:.6f}" for m in METRICS)
    if differ:
        print(f"       SUMS DIFFER in {sorted(set(differ))}: largest gap {gap:.3g}")
        return False
    print(f"       sums agree ({sums_text}; largest gap {gap:.3g})")
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--results", type=int, default=100)
    parser.add_argument("--chunk", type=int, default=10_000, help="queries per generated chunk")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each part per request")
    parser.add_argument(
        "--request", choices=sorted(REQUESTS), action="append", help="default: every request"
    )
    parser.add_argument("--part", choices=PARTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    requests = args.request or list(REQUESTS)
    if args.part:
        print(json.dumps(part(args.part, requests[0], args.queries, args.results, args.chunk)))
        return
    print(
        f"python {sys.version.split()[0]}; {args.queries} queries × {args.results} results; "
        f"{args.repeat} alternating runs of each part per request"
    )
    agree = [measure(request, args) for request in requests]
    if not all(agree):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
