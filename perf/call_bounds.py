"""Bounds on one call, against misbehaving servers on 127.0.0.1 — printed, never asserted.

    python perf/call_bounds.py      # about half a minute

Each figure runs in a fresh subprocess, so its peak RSS is its own:

1. drip: the LLM client with ``timeout=3`` against a server that sends a valid completion
   one byte every 0.2 s (~50 s in all) — wall time and the error kind (issue #31: 52 s and
   the call passed);
2. endless: the LLM client against a chunked reply that never ends, default cap (10 MB) —
   wall time, peak RSS and the error kind (issue #31: 373 MB in 60 s, growing);
3. mcp-huge: a stdio MCP server's 50 MB tool reply with the default cap (10 MB), then a
   small call on the fresh server — peak RSS (issue #31: ~590 MB);
4. mcp-under-cap: the same server's 4 MB string (8 MB on the wire: the SDK sends it as text
   and as structured content), read whole — peak RSS, to show what a reply
   just under the cap costs.

Needs ``benchkit[mcp]`` for 3 and 4. Measured on the shared 2-core VM (load ~17):

    drip             3.60 s  peak RSS     43 MB  -> timeout
    endless          2.37 s  peak RSS     54 MB  -> response_too_large
    mcp-huge        11.37 s  peak RSS     80 MB  -> refused (execution_error); next call answered
    mcp-under-cap    3.83 s  peak RSS    108 MB  -> read 4,000,000 characters
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _llm(kind: str) -> None:
    import anyio
    from tests._llm_server import FakeOpenAI, Reply

    from benchkit.llm import LLMClient, LLMError

    reply = Reply.drip("slow", every=0.2) if kind == "drip" else Reply.endless(ceiling=2**40)
    with FakeOpenAI() as server:
        server.queue(reply)
        client = LLMClient(base_url=server.url, model="m", cache=None, max_retries=0, timeout=3)

        async def call() -> str:
            try:
                await client.chat("hi")
            except LLMError as exc:
                return exc.kind
            finally:
                await client.aclose()
            return "answered"

        started = time.perf_counter()
        outcome = anyio.run(call)
        took = time.perf_counter() - started
    print(f"{kind:14} {took:6.2f} s  peak RSS {_peak_mb():6.0f} MB  -> {outcome}")


def _mcp(size: int, label: str) -> None:
    import anyio

    from benchkit.errors import InvocationError
    from benchkit.model import Condition, ProviderSpec, Request, Task
    from benchkit.providers import McpProvider

    server = REPO / "tests" / "mcp_servers" / "unruly_server.py"
    provider = McpProvider(command=[sys.executable, str(server)], tool="huge", output="text")

    def request(value: dict[str, int]) -> Request:
        return Request(Task("t", input=value), Condition("c", ProviderSpec("mcp")))

    async def calls() -> str:
        async with provider:
            try:
                response = await provider.invoke(request({"size": size}))
                outcome = f"read {len(response.output):,} characters"
            except InvocationError as exc:
                outcome = f"refused ({exc.category}); "
                after = await provider.invoke(request({"size": 10}))
                outcome += f"next call answered {after.output!r}"
        return outcome

    started = time.perf_counter()
    outcome = anyio.run(calls)
    took = time.perf_counter() - started
    print(f"{label:14} {took:6.2f} s  peak RSS {_peak_mb():6.0f} MB  -> {outcome}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part in ("drip", "endless"):
        _llm(args.part)
    elif args.part == "mcp-huge":
        _mcp(50_000_000, args.part)
    elif args.part == "mcp-under-cap":
        _mcp(4_000_000, args.part)
    else:
        for part in ("drip", "endless", "mcp-huge", "mcp-under-cap"):
            subprocess.run([sys.executable, __file__, "--part", part], check=True)


if __name__ == "__main__":
    main()
