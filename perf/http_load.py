"""A cheap HTTP/1.1 load generator, so that a measurement of the server is not one of the
clients: raw asyncio streams, one keep-alive connection per client, request bytes built
before the clock starts, and only the status line and ``Content-Length`` of each answer
parsed (the body is read and dropped).

    python perf/http_load.py --url http://127.0.0.1:8000 --paths paths.json \\
        [--clients 50] [--seconds 20] [--requests N] [--cpu 1]

``paths.json`` is a JSON list of request targets (``/api/runs?limit=5``); the clients take
them in turn from one shared cycle. Prints one JSON object on stdout: every request's
latency in ms (``times``) and the index of its path (``which``), the generator's own CPU
seconds (``cpu``: user + system of this process, so its cost per request can be set
against the server's) and the wall time.

httpx (what the perf scripts used before) costs ~10× more CPU per request than this: 50
httpx clients in one process needed more CPU than the server they measured, on the same
two cores. ``--cpu N`` pins this process to CPU N (``os.sched_setaffinity``) so that the
server, pinned elsewhere by its caller, keeps its own core. The callers are
perf/serve_load.py and perf/serve_cells.py; the generator's cost is recorded in
perf/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from urllib.parse import urlsplit


def request_bytes(host: str, port: int, target: str) -> bytes:
    """A GET of ``target`` on a keep-alive connection, as the bytes sent."""
    return (
        f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: */*\r\n"
        "Connection: keep-alive\r\n\r\n"
    ).encode("ascii")


async def _client(
    host: str,
    port: int,
    requests: Iterator[tuple[int, bytes]],
    deadline: float,
    times: list[float],
    which: list[int],
    failures: list[str],
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    clock = time.perf_counter
    try:
        while clock() < deadline:
            found = next(requests, None)
            if found is None:
                return
            index, request = found
            start = clock()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = head[9:12]
            at = head.lower().find(b"\r\ncontent-length:")
            if at < 0:
                failures.append("an answer without Content-Length")
                return
            end = head.index(b"\r\n", at + 2)
            await reader.readexactly(int(head[at + 17 : end]))
            times.append((clock() - start) * 1000)
            which.append(index)
            if status != b"200":
                failures.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
    finally:
        writer.close()


async def load(
    url: str, paths: list[str], clients: int, seconds: float, requests: int | None = None
) -> tuple[list[float], list[int]]:
    """Latencies (ms) of ``clients`` connections sending ``paths`` in turn for
    ``seconds`` (or until ``requests`` were sent), and the index in ``paths`` of each;
    raises when any answer was not 200."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    built = [request_bytes(host, port, p) for p in paths]
    cycle: Iterator[tuple[int, bytes]] = itertools.cycle(enumerate(built))
    if requests is not None:
        cycle = itertools.islice(cycle, requests)
    times: list[float] = []
    which: list[int] = []
    failures: list[str] = []
    deadline = time.perf_counter() + seconds
    await asyncio.gather(
        *(_client(host, port, cycle, deadline, times, which, failures) for _ in range(clients))
    )
    if failures:
        raise SystemExit(f"{len(failures)} failed requests, e.g. {failures[0]}")
    return times, which


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--paths", required=True, help="a JSON file: a list of targets")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--requests", type=int, help="stop after this many requests")
    parser.add_argument("--cpu", type=int, help="pin this process to this CPU")
    args = parser.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    with open(args.paths, encoding="utf-8") as file:
        paths = json.load(file)
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    times, which = asyncio.run(load(args.url, paths, args.clients, args.seconds, args.requests))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    json.dump({"times": times, "which": which, "cpu": cpu, "wall": wall}, sys.stdout)


if __name__ == "__main__":
    main()
