"""The embedded local model (#24, #39): cells/s beside llama.cpp's own, and the client's overhead.

    python perf/local_model.py                      # about three minutes on 2 cores
    python perf/local_model.py --tasks 3 --max-tokens 32

Printed, never asserted (see perf/RESULTS.md). Needs ``benchkit[local]``.

1. A chat benchmark: CodeForge's ``benchmarks/codeforge/basic-coding.yaml``, its tasks
   repeated to ``--tasks``, against ``local``, scored by a check that makes no call
   (``contains def``) instead of a judge metric, the reply cache off, at run concurrency
   1, 2, 4 (the server started and warm first; its slots, :func:`local_slots`, say how
   many requests it answers at once). Beside it, in the same run, llama.cpp's own
   throughput for the same prompts: the same GGUF file driven directly through
   llama-cpp-python in this process (``Llama.create_chat_completion``, the same messages,
   ``max_tokens`` and greedy sampling, one prompt after another, on 1 thread and on every
   core), measured before and after the benchmark (the machine's load drifts). Printed:
   cells/s, completion tokens/s, and every row's cells/s as a ratio to llama.cpp's best
   (the thread count whose two passes were faster on average), with the load average.
2. The LLM client's overhead per request against the same server: ``--requests``
   identical one-token requests (cache off) through :class:`LocalClient` and through a
   bare ``httpx.AsyncClient`` posting the same body, one after another, interleaved in
   rounds so the machine's load hits both alike; the difference of the medians is the
   client's cost (limiter, JSON, parsing, usage) and the ratio says how it compares.
"""

from __future__ import annotations

import argparse
import json
import os
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


def _llama(threads: int):  # type: ignore[no-untyped-def]
    """The embedded model's GGUF file in this process, loaded as the server loads it
    (plain CPU buffers, the same context), computing on ``threads`` threads."""
    import llama_cpp

    from benchkit.llm._local import DEFAULT_CONTEXT, local_model_info
    from benchkit.llm._local_server import _plain_cpu_buffers

    _plain_cpu_buffers()
    return llama_cpp.Llama(
        str(local_model_info().path),
        n_ctx=DEFAULT_CONTEXT,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )


def _direct(llama, suite, max_tokens: int) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """llama.cpp's own throughput for the suite's prompts, one after another:
    (wall seconds, completion tokens)."""
    from benchkit.llm._provider import task_messages

    system = suite.conditions[0].provider.options.get("system")
    prompts = [task_messages(task.input, system)[0] for task in suite.benchmark.iter_tasks()]
    started = time.perf_counter()
    tokens = 0
    for messages in prompts:
        reply = llama.create_chat_completion(messages, temperature=0.0, max_tokens=max_tokens)
        tokens += reply["usage"]["completion_tokens"]
    return time.perf_counter() - started, tokens


def throughput(tasks: int, max_tokens: int) -> None:
    import benchkit
    from benchkit.llm._local import _cores, local_slots

    anyio.run(_warm)
    suite = _suite(tasks, max_tokens)
    print(
        f"1. CodeForge basic-coding x{tasks} tasks, max_tokens {max_tokens}, cache off; "
        f"server slots {local_slots()}"
    )
    print(f"{'':>14} {'cells/s':>8} {'tokens/s':>9} {'tokens':>7} {'errors':>6} {'load avg':>8}")
    rates: dict[str, float] = {}
    direct: dict[int, list[float]] = {}
    llamas = {threads: _llama(threads) for threads in sorted({1, _cores()})}

    def row(name: str, cells: int, wall: float, tokens: int, errors: int) -> None:
        rates[name] = cells / wall
        print(
            f"{name:>14} {cells / wall:>8.3f} {tokens / wall:>9.1f} {tokens:>7} {errors:>6} "
            f"{os.getloadavg()[0]:>8.1f}",
            flush=True,
        )

    def llama_cpp_pass() -> None:
        for threads, llama in llamas.items():
            wall, tokens = _direct(llama, suite, max_tokens)
            direct.setdefault(threads, []).append(tasks / wall)
            row(f"llama.cpp {threads}t", tasks, wall, tokens, 0)

    llama_cpp_pass()
    for concurrency in (1, 2, 4):
        started = time.perf_counter()
        result = benchkit.run(suite.with_options(concurrency=concurrency), store=False)
        wall = time.perf_counter() - started
        tokens = sum(c.response.usage.completion_tokens for c in result.cells if c.response)
        errors = sum(1 for c in result.cells if c.errored)
        row(f"concurrency {concurrency}", len(result.cells), wall, tokens, errors)
    llama_cpp_pass()
    # llama.cpp's best: the thread count whose two passes were faster on average.
    threads, reference = max(
        ((t, statistics.mean(r)) for t, r in direct.items()), key=lambda item: item[1]
    )
    print(f"   llama.cpp's best: {threads} thread(s), {reference:.3f} cells/s (mean of 2 passes)")
    for concurrency in (1, 2, 4):
        ratio = rates[f"concurrency {concurrency}"] / reference
        print(f"   concurrency {concurrency}: {ratio:.2f}x llama.cpp's best (goal >= 0.8)")


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
    # As the server runs llama.cpp (see LocalServer): OpenMP threads that sleep rather than
    # spin, without which 2 threads on a busy 2-core machine are many times slower.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    throughput(args.tasks, args.max_tokens)
    anyio.run(overhead, args.requests)


if __name__ == "__main__":
    main()
