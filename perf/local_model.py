"""The embedded local model (#24): tokens/s and cells/s, and the LLM client's overhead.

    python perf/local_model.py                      # about two minutes on 2 cores
    python perf/local_model.py --tasks 3 --max-tokens 32

Printed, never asserted (see perf/RESULTS.md). Needs ``benchkit[local]``.

1. A CodeForge dataset (``benchmarks/codeforge/basic-coding.yaml``, its tasks repeated to
   ``--tasks``) against ``local``, scored by a check that makes no call (``contains
   def``) instead of a judge metric, at run concurrency 1, 2, 4, 2, 1 (there and back,
   with the load average: the machine's load drifts), the server started and warm first,
   the reply cache off: cells/s and completion tokens/s (completion tokens summed over the
   cells / wall time). The server answers one request at a time, so more concurrency can
   only hide the gaps between requests, not add throughput.
2. The LLM client's overhead per request against the same server: ``--requests``
   identical one-token requests (cache off) through :class:`LocalClient` and through a
   bare ``httpx.AsyncClient`` posting the same body, one after another, interleaved in
   rounds so the machine's load hits both alike; the difference of the medians is the
   client's cost (limiter, JSON, parsing, usage) and the ratio says how it compares.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import anyio
import httpx

REPO = Path(__file__).resolve().parent.parent


def _suite(tasks: int, max_tokens: int):  # type: ignore[no-untyped-def]
    import attrs

    from benchkit import EvaluatorSpec
    from benchkit.formats.codeforge import codeforge_suite

    suite = codeforge_suite(
        REPO / "benchmarks" / "codeforge" / "basic-coding.yaml",
        model="local",
        metrics="correctness",
        cache=False,
    )
    # The model's throughput, not the judge's: a check that makes no call replaces the metric.
    suite = attrs.evolve(
        suite,
        benchmark=attrs.evolve(
            suite.benchmark, evaluators=(EvaluatorSpec("contains", {"keywords": ["def"]}),)
        ),
    )
    base = list(suite.benchmark.iter_tasks())
    many = [
        attrs.evolve(base[i % len(base)], id=f"{base[i % len(base)].id}-{i}") for i in range(tasks)
    ]
    provider = suite.conditions[0].provider
    options = {**provider.options, "max_tokens": max_tokens}  # type: ignore[union-attr]
    condition = attrs.evolve(suite.conditions[0], provider=attrs.evolve(provider, options=options))
    return attrs.evolve(
        suite, benchmark=attrs.evolve(suite.benchmark, tasks=tuple(many)), conditions=(condition,)
    )


async def _warm() -> None:
    """Start the process's shared server and answer once, so no figure pays for that."""
    from benchkit.llm import LocalClient

    client = LocalClient(cache=None)
    await client.chat("Hello.", max_tokens=4, cache=False)
    await client.aclose()


def throughput(tasks: int, max_tokens: int) -> None:
    import os

    import benchkit

    anyio.run(_warm)
    print(f"1. CodeForge basic-coding x{tasks} tasks, max_tokens {max_tokens}, cache off")
    header = f"{'concurrency':>11} {'cells/s':>8} {'tokens/s':>9} {'tokens':>7} {'errors':>6}"
    print(header + f" {'load avg':>8}")
    for concurrency in (1, 2, 4, 2, 1):  # there and back: the machine's load drifts
        suite = _suite(tasks, max_tokens).with_options(concurrency=concurrency)
        started = time.perf_counter()
        result = benchkit.run(suite, store=False)
        wall = time.perf_counter() - started
        tokens = sum(c.response.usage.completion_tokens for c in result.cells if c.response)
        errors = sum(1 for c in result.cells if c.errored)
        print(
            f"{concurrency:>11} {len(result.cells) / wall:>8.3f} {tokens / wall:>9.1f} "
            f"{tokens:>7} {errors:>6} {os.getloadavg()[0]:>8.1f}"
        )


async def overhead(requests: int) -> None:
    from benchkit.llm import LocalClient

    client = LocalClient(cache=None)
    await client.start()
    body = {
        "model": client.model,
        "messages": [{"role": "user", "content": "Say yes."}],
        "temperature": 0.0,
        "max_tokens": 1,
    }
    headers = {"Authorization": f"Bearer {client.server.api_key}"}
    ours: list[float] = []
    raw: list[float] = []
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        url = client.endpoint.chat_url
        for _ in range(3):  # warm both paths (connections, the model's caches)
            await client.chat(body["messages"], max_tokens=1, cache=False)
            (await http.post(url, json=body)).raise_for_status()
        for _ in range(requests):
            started = time.perf_counter()
            await client.chat(body["messages"], max_tokens=1, cache=False)
            ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            reply = await http.post(url, json=body)
            json.loads(reply.content)
            raw.append(time.perf_counter() - started)
    await client.aclose()
    mine, bare = statistics.median(ours), statistics.median(raw)
    print(f"2. LLM client vs raw httpx, {requests} one-token requests each, interleaved")
    print(f"   median LocalClient.chat {mine * 1000:.2f} ms, raw httpx {bare * 1000:.2f} ms")
    print(f"   client overhead {(mine - bare) * 1000:+.2f} ms per request, ratio {mine / bare:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    throughput(args.tasks, args.max_tokens)
    anyio.run(overhead, args.requests)


if __name__ == "__main__":
    main()
