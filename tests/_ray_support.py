"""Systems under test for tests/test_ray.py, importable on Ray workers (module level).

Each is named in a ``ProviderSpec("python", {"callable": "tests._ray_support:NAME"})`` so
the worker builds its own provider, as a benchmark file would.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import benchkit


def seeded(request: benchkit.Request) -> str:
    """A deterministic answer from the cell's seed: right about two times in three."""
    rng = random.Random(request.seed)
    expected = str(request.task.expected)
    return expected if rng.random() < 0.66 else f"not {expected}"


def whoami(request: benchkit.Request) -> benchkit.Response:
    """Answers with this process's id; for the task named in ``input['victim']``, it first
    drops a marker naming that id and then hangs until the test kills the process."""
    payload: dict[str, Any] = request.task.input
    marker = Path(payload["dir"]) / "victim"
    if payload.get("victim") and not marker.exists():
        marker.write_text(str(os.getpid()))
        time.sleep(120)  # the test kills this process long before
    else:
        time.sleep(0.05)
    return benchkit.Response(output=os.getpid())


def crash(request: benchkit.Request) -> str:
    """Ends its own process, every time, for a task whose input is "crash"."""
    if request.task.input == "crash":
        os._exit(3)
    return str(request.task.input)


def slow(text: str) -> str:
    """Answers after 0.2 s: long enough for a test to kill the driver mid-run."""
    time.sleep(0.2)
    return text


def span(request: benchkit.Request) -> list[float]:
    """When this cell ran: [start, end] on this machine's clock, 0.1 s apart."""
    start = time.time()
    time.sleep(0.1)
    return [start, time.time()]


def recording(request: benchkit.Request) -> str:
    """Records a transcript event naming this process, then answers right."""
    benchkit.transcript.record("note", f"on pid {os.getpid()}", {"input": request.task.input})
    return str(request.task.expected)


def in_flight(request: benchkit.Request) -> int:
    """How many cells of the run are in flight at this cell's midpoint, across every worker:
    each cell keeps a file in ``input['dir']`` while it runs and counts the files there."""
    payload: dict[str, Any] = request.task.input
    here = Path(payload["dir"])
    mine = here / f"{request.task.id}-{request.epoch}"
    mine.touch()
    try:
        time.sleep(0.1)
        seen = len(list(here.iterdir()))
        time.sleep(0.1)
    finally:
        mine.unlink()
    return seen


def mixed(request: benchkit.Request) -> str:
    """Every outcome a cell can have, by task input: ``ok``, ``wrong``, ``boom`` (always
    raises), ``flaky`` (raises on its first attempt only), ``hang`` (outlives its timeout)."""
    kind = request.task.input
    benchkit.transcript.record("note", f"{kind} attempt {request.attempt}", {"kind": kind})
    if kind == "boom" or (kind == "flaky" and request.attempt == 1):
        raise RuntimeError(f"{kind} on attempt {request.attempt}")
    if kind == "hang":
        time.sleep(2)
    return str(request.task.expected) if kind != "wrong" else "no"
