"""What the local model's embeddings are worth (#44): paraphrase pairs against unrelated pairs.

    python perf/embeddings.py

Printed, never asserted here (tests/test_embeddings.py repeats the figures docs/llm.md
states). Needs ``benchkit[local]``. The pairs are tests/fixtures/embeddings/paraphrases.json:
30 pairs of sentences written for benchkit that say the same thing in other words.
Unrelated pairs are each pair's first sentence with the second sentence of the pairs 1, 7
and 15 places on (90 pairs). Printed: the mean and range of the cosines of each kind; the
AUC (the share of (paraphrase, unrelated) couples whose paraphrase cosine is higher, ties
half); at thresholds 0.8, 0.85 and 0.9 the share of each kind at or above it; the best
accuracy of one threshold; the texts embedded per second (the model loaded first).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

import anyio

from benchkit.llm import LocalClient, cosine

PAIRS = Path(__file__).resolve().parent.parent / "tests/fixtures/embeddings/paraphrases.json"


async def main() -> None:
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    client = LocalClient(cache=None)
    await client.embed("warm up: load the model")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    started = time.perf_counter()
    first = (await client.embed([p[0] for p in pairs])).vectors
    second = (await client.embed([p[1] for p in pairs])).vectors
    elapsed = time.perf_counter() - started
    n = len(pairs)
    para = [cosine(first[i], second[i]) for i in range(n)]
    unrelated = [cosine(first[i], second[(i + k) % n]) for i in range(n) for k in (1, 7, 15)]
    auc = sum((p > u) + 0.5 * (p == u) for p in para for u in unrelated) / (n * len(unrelated))
    print(f"model: {client.info.name} ({len(first[0])} dimensions), {2 * n} texts")
    for label, values in (("paraphrase", para), ("unrelated", unrelated)):
        print(
            f"{label:>10}: n={len(values)} mean {statistics.mean(values):.3f} "
            f"min {min(values):.3f} max {max(values):.3f}"
        )
    print(f"AUC (paraphrase above unrelated): {auc:.3f}")
    for threshold in (0.8, 0.85, 0.9):
        p = sum(v >= threshold for v in para) / len(para)
        u = sum(v >= threshold for v in unrelated) / len(unrelated)
        print(f"at {threshold}: paraphrases passing {p:.2f}, unrelated passing {u:.2f}")
    best = max(
        (
            (sum(v >= t for v in para) + sum(v < t for v in unrelated))
            / (len(para) + len(unrelated)),
            t,
        )
        for t in para + unrelated
    )
    print(f"best single threshold: {best[1]:.3f} (accuracy {best[0]:.3f})")
    print(f"{2 * n / elapsed:.1f} texts/s; load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    anyio.run(main)
