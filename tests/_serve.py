"""Real servers on 127.0.0.1 (ephemeral ports) for tests: the app on uvicorn in a thread,
or ``python -m benchkit serve`` as a process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from benchkit.serve_toolkit._uvicorn import uvicorn_config


@contextmanager
def running(app: Any, **config: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port; yields the base URL
    (``config``: more of :func:`uvicorn_config`'s options, e.g. ``parser``)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # see _cli._bind
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    options = {"log_level": "warning", "lifespan": "on", "timeout_graceful_shutdown": 5}
    server = uvicorn.Server(uvicorn_config(app, **{**options, **config}))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def wait_for(
    client: httpx.Client, url: str, predicate: Any, *, timeout: float = 60
) -> dict[str, Any]:
    """GET ``url`` until ``predicate(json)`` holds; returns that JSON."""
    deadline = time.monotonic() + timeout
    while True:
        body: dict[str, Any] = client.get(url).json()
        if predicate(body):
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting on {url}: last {body}")
        time.sleep(0.05)


SLOW_PY = """import anyio


async def answer(task_input):
    await anyio.sleep(task_input["sleep"])
    return task_input["answer"]


async def wrong(task_input):
    await anyio.sleep(task_input["sleep"])
    return "nope" if task_input["n"] % 3 else task_input["answer"]
"""


def write_benchmark(
    directory: Any, *, tasks: int = 6, sleep: float = 0.0, ident: str = "slow"
) -> Any:
    """A native benchmark of ``tasks`` tasks under two python conditions (``a`` always
    right, ``b`` right on every third task), each cell sleeping ``sleep`` seconds."""
    from pathlib import Path

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "slow.py").write_text(SLOW_PY)
    lines = [
        "benchkit: 1",
        f"id: {ident}",
        f"name: {ident.title()}",
        "evaluators: [exact]",
        "conditions:",
        "  - {id: a, provider: {type: python, file: slow.py, function: answer}}",
        "  - {id: b, provider: {type: python, file: slow.py, function: wrong}}",
        "run: {concurrency: 2}",
        "tasks:",
    ]
    for n in range(tasks):
        tag = "even" if n % 2 == 0 else "odd"
        lines.append(
            f'  - {{id: t{n}, input: {{n: {n}, sleep: {sleep}, answer: "x{n}"}}, '
            f'expected: "x{n}", tags: [{tag}]}}'
        )
    path = folder / "benchmark.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@contextmanager
def serve(
    root: Path, store: Path, *extra: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Start ``python -m benchkit serve --port 0``; yields the process and its base URL."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchkit",
            "serve",
            "--port",
            "0",
            "--root",
            str(root),
            "--store",
            str(store),
            *extra,
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "serving on http://127.0.0.1:" in line, line + process.stderr.read()
        yield process, line.split(" on ")[1].strip()
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(30)
