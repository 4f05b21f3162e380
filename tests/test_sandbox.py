"""The sandbox: real programs in real namespaces, their limits, and nothing left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import anyio
import pytest

from benchkit.errors import ConfigError
from benchkit.sandbox import Execution, Limits, Sandbox
from benchkit.sandbox import _sandbox as sandbox_module

pytestmark = pytest.mark.anyio

LIMITS = Limits(cpu_seconds=5, wall_seconds=20, memory_mb=512, processes=32, file_size_mb=8)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def namespaces_available() -> bool:
    return Sandbox().isolation().mode == "namespaces"


needs_namespaces = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not namespaces_available(),
    reason="this machine lets benchkit create no namespaces (not root, no user namespaces)",
)


def running_with(token: str) -> list[int]:
    """Pids of live processes whose command line holds ``token`` (zombies excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def gone(token: str, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while running_with(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def gone_pid(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


async def python(code: str, sandbox: Sandbox | None = None, **options: object) -> Execution:
    box = sandbox or Sandbox(LIMITS)
    return await box.run([box.python, "-c", textwrap.dedent(code)], **options)  # type: ignore[arg-type]


async def test_a_program_runs_in_a_fresh_directory_that_is_removed_after() -> None:
    result = await python(
        """
        import os, sys
        print(open("data.txt").read(), os.getcwd() == os.environ["HOME"], sys.stdin.read())
        print(os.getcwd(), file=sys.stderr)
        open("out.txt", "w").write("made inside")
        """,
        files={"data.txt": "given", "sub/dir/x.bin": b"\x00"},
        stdin=b"typed",
        collect=["out.txt", "missing.txt"],
    )
    assert result.outcome == "passed", result
    assert result.stdout == "given True typed\n"
    assert result.files == {"out.txt": b"made inside"}
    assert result.exit_code == 0
    workdir = Path(result.stderr.strip())
    assert workdir.name == "work" and workdir.parent.parent.name.startswith("benchkit-sandbox-")
    assert not workdir.parent.exists()


async def test_a_non_zero_exit_fails_and_says_its_status() -> None:
    result = await python("import sys; print('out'); sys.exit(3)")
    assert (result.outcome, result.exit_code, result.stdout) == ("failed", 3, "out\n")
    assert result.message == "exited with status 3"


async def test_output_is_kept_up_to_the_cap_and_counted_beyond_it() -> None:
    box = Sandbox(Limits(output_bytes=1000))
    result = await python(
        "import sys; sys.stdout.write('x' * 50_000); print('e', file=sys.stderr)", box
    )
    assert result.outcome == "passed"
    assert (len(result.stdout), result.stdout_bytes, result.stderr) == (1000, 50_000, "e\n")
    assert result.truncated


async def test_a_missing_program_or_a_file_outside_the_directory_is_a_sandbox_error() -> None:
    box = Sandbox(LIMITS)
    missing = await box.run(["no-such-program-anywhere"])
    assert missing.outcome == "sandbox_error"
    assert "not found" in missing.message
    escaping = await box.run([box.python, "-c", "pass"], files={"../x": "no"})
    assert escaping.outcome == "sandbox_error"
    assert "leaves the sandbox" in escaping.message


async def test_the_cpu_limit_ends_a_busy_loop_as_a_timeout() -> None:
    box = Sandbox(Limits(cpu_seconds=1, wall_seconds=30))
    result = await python("while True: pass", box)
    assert (result.outcome, result.signal) == ("timeout", "SIGXCPU")
    assert "CPU limit of 1 s" in result.message


async def test_the_wall_clock_limit_ends_a_sleeper_as_a_timeout() -> None:
    token = uuid.uuid4().hex
    box = Sandbox(Limits(wall_seconds=1))
    result = await python(f"import time; time.sleep(60)  # {token}", box)
    assert result.outcome == "timeout"
    assert "wall-clock limit of 1 s" in result.message
    assert gone(token)


async def test_the_memory_limit_ends_a_large_allocation_as_memory() -> None:
    box = Sandbox(Limits(memory_mb=256))
    result = await python("x = bytearray(10 * 1024**3)", box)
    assert result.outcome == "memory"
    assert "MemoryError" in result.stderr


async def test_the_process_limit_stops_forking_harmless_sleepers() -> None:
    token = uuid.uuid4().hex
    box = Sandbox(Limits(processes=8, wall_seconds=20))
    result = await python(
        f"""
        import os, time
        started = 0
        try:
            for _ in range(30):
                if os.fork() == 0:
                    time.sleep(30)  # {token}
                    os._exit(0)
                started += 1
        except OSError as exc:
            print("refused after", started, exc.errno)
        """,
        box,
    )
    assert result.outcome == "passed", result
    refused, count, errno = result.stdout.split()[0:1], *map(int, result.stdout.split()[2:])
    assert refused == ["refused"] and count < 8 and errno == 11
    assert gone(token)


async def test_the_file_size_limit_stops_a_large_write() -> None:
    result = await python(
        """
        with open("big", "wb") as f:
            f.write(b"x" * (64 * 1024 * 1024))
        """
    )
    assert result.outcome == "failed"
    assert "File too large" in result.stderr


@needs_namespaces
async def test_nothing_outside_the_directory_is_writable() -> None:
    result = await python(
        """
        import os
        for path in ("/tmp/benchkit-escape", os.path.expanduser("~/../escape"), "/etc/escape",
                     os.path.dirname(os.getcwd()) + "/escape"):
            try:
                open(path, "w")
                print("wrote", path)
            except OSError as exc:
                print(exc.errno)
        """
    )
    assert result.outcome == "passed"
    assert "wrote" not in result.stdout
    assert not Path("/tmp/benchkit-escape").exists()


@needs_namespaces
async def test_there_is_no_network_not_even_loopback() -> None:
    result = await python(
        """
        import socket
        try:
            socket.create_connection(("127.0.0.1", 22), timeout=2)
        except OSError as exc:
            print(exc.errno)
        """
    )
    assert result.stdout.strip() in ("101", "99")  # ENETUNREACH, EADDRNOTAVAIL


async def test_the_environment_holds_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHKIT_TEST_SECRET", "hunter2-planted")
    result = await python("print(open('/proc/self/environ').read())")
    assert result.outcome == "passed"
    assert "hunter2-planted" not in result.stdout
    names = {item.split("=", 1)[0] for item in result.stdout.strip().split("\0") if item}
    assert names <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "PYTHONDONTWRITEBYTECODE",
                     "PYTHONUNBUFFERED", "BENCHKIT_SANDBOX"}  # fmt: skip


@needs_namespaces
async def test_the_program_sees_only_its_own_processes_and_no_home() -> None:
    result = await python(
        """
        import os
        print(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), os.getuid() != 0)
        """
    )
    pids, unprivileged = result.stdout.rsplit(" ", 1)
    assert pids == "[1, 2]"
    assert unprivileged.strip() == "True" or os.geteuid() != 0


async def test_a_setsid_escaper_and_its_children_die_with_the_program() -> None:
    token = uuid.uuid4().hex
    result = await python(
        f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(60)  # {token}
            os._exit(0)
        print("left a daemon")
        """
    )
    assert result.outcome == "passed"
    assert gone(token)


async def test_cancelling_the_run_kills_everything() -> None:
    token = uuid.uuid4().hex
    with anyio.move_on_after(1.5):
        await python(f"import os, time; os.fork(); time.sleep(60)  # {token}")
    assert gone(token)


@pytest.mark.slow
async def test_nothing_outlives_a_sigkilled_benchkit(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    script = tmp_path / "host.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import anyio
            from benchkit.sandbox import Limits, Sandbox

            async def main():
                box = Sandbox(Limits(wall_seconds=120, cpu_seconds=120))
                print(box._running_server().process.pid, flush=True)
                code = "import os, time\\nif os.fork() == 0: os.setsid()\\ntime.sleep(100)  # {token}"
                await box.run([box.python, "-c", code])

            anyio.run(main)
            """
        )
    )
    host = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE)
    assert host.stdout is not None
    server = int(host.stdout.readline())
    try:
        deadline = time.monotonic() + 30
        while len(running_with(token)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(running_with(token)) >= 2
        host.send_signal(signal.SIGKILL)
        host.wait()
        assert gone(token)
        assert gone_pid(server)
    finally:
        host.kill()


async def test_process_mode_keeps_limits_directory_and_cleanup() -> None:
    token = uuid.uuid4().hex
    box = Sandbox(Limits(cpu_seconds=1, wall_seconds=30), isolation="process")
    assert box.isolation().mode == "process"
    busy = await python("while True: pass", box)
    assert busy.outcome == "timeout"
    escaper = await python(
        f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            time.sleep(60)  # {token}
        print(os.getcwd() == os.environ["HOME"])
        """,
        box,
    )
    assert escaper.stdout == "True\n"
    assert gone(token)


IN_PROCESS_PROGRAMS = [
    "import sys; print(sys.argv, __name__, sys.flags.isolated)",
    "import sys; sys.exit(3)",
    "import sys; sys.exit('a message')",
    "raise KeyError('k')",
    "print('é ☃'); import sys; print(sys.stdin.read() == '', file=sys.stderr)",
    "import os; print(sorted(k for k in os.environ if k.startswith('BENCHKIT_T')))",
    "import random; print(len({random.random() for _ in range(3)}))",
]


@pytest.mark.parametrize("code", IN_PROCESS_PROGRAMS)
async def test_a_python_program_run_in_the_warm_server_ends_as_in_a_fresh_interpreter(
    code: str,
) -> None:
    box = Sandbox(LIMITS)
    warm = await box.run([box.python, "-I", "-c", code, "arg"], env={"BENCHKIT_T": "1"})
    env = {**sandbox_module._FIXED_ENV, "LANG": "C.UTF-8", "BENCHKIT_T": "1"}
    fresh = subprocess.run(
        [sys.executable, "-I", "-c", code, "arg"],
        capture_output=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert warm.exit_code == fresh.returncode
    assert warm.stdout == fresh.stdout.decode()
    assert warm.stderr.strip().split("\n")[-1] == fresh.stderr.decode().strip().split("\n")[-1]


async def test_close_stops_the_server_and_a_later_run_starts_another() -> None:
    box = Sandbox(LIMITS)
    assert (await python("print(1)", box)).stdout == "1\n"
    server = box._running_server()
    box.close()
    assert server.process.poll() is not None and not server.dir.exists()
    assert (await python("print(2)", box)).stdout == "2\n"
    await box.aclose()


async def test_a_server_that_has_just_exited_is_replaced_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    box = Sandbox(LIMITS)
    assert (await python("print(1)", box)).passed
    server = box._running_server()
    server.process.kill()
    server.process.wait()
    monkeypatch.setattr(sandbox_module._Server, "alive", lambda self: self is not server)
    again = await python("print(2)", box)
    assert (again.outcome, again.stdout) == ("passed", "2\n")
    assert box._running_server() is not server
    await box.aclose()


def test_require_isolation_refuses_a_machine_without_it() -> None:
    with pytest.raises(ConfigError, match="network isolation is unavailable"):
        Sandbox(isolation="process", require_isolation=True).isolation()


def test_the_variable_turns_on_require_isolation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHKIT_REQUIRE_ISOLATION", "1")
    assert Sandbox().require_isolation


def test_network_isolation_unavailable_is_said_once(caplog: pytest.LogCaptureFixture) -> None:
    sandbox_module._WARNED.clear()
    Sandbox(isolation="process").isolation()
    Sandbox(isolation="process").isolation()
    said = [r for r in caplog.records if "network isolation is unavailable" in r.message]
    assert len(said) == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [("cpu_seconds", 0), ("wall_seconds", float("nan")), ("memory_mb", 2.5), ("processes", -1),
     ("output_bytes", 10**12), ("wall_seconds", 10**9)],
)  # fmt: skip
def test_limits_are_bounded(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=field):
        Limits(**{field: value})  # type: ignore[arg-type]


def test_an_unknown_isolation_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown sandbox isolation"):
        Sandbox(isolation="chroot")  # type: ignore[arg-type]


@pytest.mark.parametrize("engine", ["docker", "podman"])
async def test_a_container_engine_runs_the_same_interface(engine: str) -> None:
    ok, reason = sandbox_module._engine_available(engine)
    if not ok:
        pytest.skip(f"no container engine here: {reason}")
    box = Sandbox(LIMITS, isolation=engine)  # type: ignore[arg-type]
    result = await python(
        "import socket; print(open('in.txt').read())", box, files={"in.txt": "hi"}
    )
    assert (result.outcome, result.stdout) == ("passed", "hi\n")
