"""HTTP 429s drawn by a rate-limited LLM client from a server that enforces the same limit
per second — printed, never asserted.

    python perf/rate_limiter.py                      # 600 RPM for 60 s (about a minute)
    python perf/rate_limiter.py --seconds 10 --rpm 1200

The server is the tests' scriptable OpenAI-compatible one (``tests/_llm_server.py``) on
127.0.0.1, answering 429 (``Retry-After: 1``) to any request that would make more than
``rpm / 60`` requests arrive within one second (a sliding window over arrival times, the
strictest reading of "600 a minute, enforced per second"). The client is an
``LLMClient`` with ``RateLimits(requests_per_minute=rpm)`` and more callers than the limit
lets through, so it is the limiter alone that keeps the pace. Figures: 429s, requests
answered, and the answered rate against the limit.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import anyio

from _llm_server import FakeOpenAI, PerWindowLimit
from benchkit.llm import LLMClient, RateLimits


async def drive(url: str, rpm: int, seconds: float) -> None:
    client = LLMClient(
        base_url=url,
        api_key="perf",
        model="fake-model",
        cache=None,
        limits=RateLimits(requests_per_minute=rpm),
        max_retries=10,
    )
    deadline = time.monotonic() + seconds

    async def caller(i: int) -> None:
        n = 0
        while time.monotonic() < deadline:
            await client.chat(f"q{i}-{n}", cache=False)
            n += 1

    async with anyio.create_task_group() as tg:
        for i in range(32):
            tg.start_soon(caller, i)
    await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rpm", type=int, default=600)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    window = PerWindowLimit(args.rpm // 60)
    with FakeOpenAI() as server:
        server.respond = window
        t0 = time.monotonic()
        anyio.run(drive, server.url, args.rpm, args.seconds)
        wall = time.monotonic() - t0
    rate = window.accepted / wall * 60
    print(
        f"limit {args.rpm} RPM ({args.rpm // 60} per sliding second) for {wall:.1f} s: "
        f"{window.rejected} HTTP 429s, {window.accepted} answered = {rate:.0f} RPM "
        f"({rate / args.rpm:.3f} of the limit)"
    )


if __name__ == "__main__":
    main()
