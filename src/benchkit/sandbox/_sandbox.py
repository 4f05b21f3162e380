"""The sandbox: one execution of untrusted code, isolated, limited and categorised."""

from __future__ import annotations

import base64
import functools
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import anyio
import anyio.abc
import attrs

from benchkit import _limits, _procs
from benchkit.errors import ConfigError
from benchkit.sandbox import _launcher

__all__ = [
    "OUTCOMES",
    "Execution",
    "Isolation",
    "Limits",
    "Outcome",
    "Sandbox",
]

_log = logging.getLogger("benchkit.sandbox")

Outcome = Literal["passed", "failed", "timeout", "memory", "crashed", "sandbox_error"]
#: Every way an execution ends, from best to worst.
OUTCOMES: tuple[Outcome, ...] = (
    "passed",
    "failed",
    "timeout",
    "memory",
    "crashed",
    "sandbox_error",
)
Mode = Literal["auto", "namespaces", "process", "docker", "podman"]
_MODES = ("auto", "namespaces", "process", "docker", "podman")

#: The most a program's stdout or stderr may keep (what is read past it is dropped).
MAX_OUTPUT_BYTES = 100_000_000
#: Variables that pass from benchkit's environment unless told otherwise: none is a secret.
DEFAULT_PASS_ENV = ("LANG", "LC_ALL", "TZ")
#: Set by benchkit in every sandbox (HOME and TMPDIR are the working directory).
_FIXED_ENV = {
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "BENCHKIT_SANDBOX": "1",
}
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
#: How a program that ran out of memory usually says so on stderr.
_MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")
_CANNOT_RUN = b"benchkit sandbox: cannot run"
#: After the launcher exits: how long pipes still held by a stray process are read.
_PIPE_GRACE = 1.0
#: The container image used when none is named.
DEFAULT_IMAGE = "python:3.11-slim"
#: A uid range no account uses: each execution as root runs under a fresh uid from it, so
#: its process limit counts only its own processes.
_UIDS = (1_000_000, 2_000_000_000)


def _positive(high: float, *, optional: bool = False, integer: bool = False) -> Any:
    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is None and optional:
            return
        problem = _limits.out_of_bounds(value, 0, high, above=True, integer=integer)
        if problem is not None:
            raise ConfigError(
                f"sandbox limit {attribute.name} {problem}",
                fix="docs/code.md lists the sandbox's limits and their defaults.",
            )

    return check


@attrs.frozen
class Limits:
    """What one execution may use. ``None`` leaves a resource unlimited (not advised).

    ``cpu_seconds`` (RLIMIT_CPU, per process), ``wall_seconds`` (the whole execution, then
    every process of it is killed), ``memory_mb`` (RLIMIT_AS, address space per process),
    ``processes`` (RLIMIT_NPROC: processes and threads, counted per sandbox),
    ``open_files`` (RLIMIT_NOFILE), ``file_size_mb`` (RLIMIT_FSIZE: the largest file it
    may write) and ``output_bytes`` (kept of stdout and of stderr each; the rest is read
    and dropped, so a chatty program never blocks).

    .. versionadded:: 0.2.0
    """

    cpu_seconds: float = attrs.field(default=10.0, validator=_positive(_limits.MAX_TIMEOUT_S))
    wall_seconds: float = attrs.field(default=20.0, validator=_positive(_limits.MAX_TIMEOUT_S))
    memory_mb: int | None = attrs.field(
        default=1024, validator=_positive(_limits.MAX_MEMORY_MB, optional=True, integer=True)
    )
    processes: int | None = attrs.field(
        default=64, validator=_positive(100_000, optional=True, integer=True)
    )
    open_files: int | None = attrs.field(
        default=256, validator=_positive(1_000_000, optional=True, integer=True)
    )
    file_size_mb: int | None = attrs.field(
        default=64, validator=_positive(_limits.MAX_MEMORY_MB, optional=True, integer=True)
    )
    output_bytes: int = attrs.field(
        default=1_000_000, validator=_positive(MAX_OUTPUT_BYTES, integer=True)
    )

    def rlimits(self) -> dict[str, int]:
        """The launcher's ``{name: value}``: the limits it sets before exec."""
        out: dict[str, int] = {"cpu": max(1, round(self.cpu_seconds + 0.4999))}
        if self.memory_mb is not None:
            out["as"] = self.memory_mb * 1024 * 1024
        if self.processes is not None:
            out["nproc"] = self.processes
        if self.open_files is not None:
            out["nofile"] = self.open_files
        if self.file_size_mb is not None:
            out["fsize"] = self.file_size_mb * 1024 * 1024
        return out


@attrs.frozen
class Isolation:
    """What the sandbox isolates on this machine (:meth:`Sandbox.isolation`).

    ``mode`` is ``namespaces`` (Linux: read-only file system but the working directory,
    no network, a PID namespace, a user of its own), ``process`` (a child process with
    its limits, its working directory and HOME; no network isolation), or a container
    engine (``docker``, ``podman``). ``network_isolated`` says whether the program can
    reach no network; ``reason`` says why isolation is weaker than ``namespaces``.

    .. versionadded:: 0.2.0
    """

    mode: Literal["namespaces", "process", "docker", "podman"]
    network_isolated: bool
    filesystem_read_only: bool
    pid_namespace: bool
    reason: str = ""


@attrs.frozen
class Execution:
    """How one execution ended.

    ``outcome`` is one of :data:`OUTCOMES`: ``passed`` (exit status 0), ``failed`` (a
    non-zero exit), ``timeout`` (past ``wall_seconds`` or ``cpu_seconds``), ``memory`` (it
    ran out of memory), ``crashed`` (killed by a signal) or ``sandbox_error`` (the sandbox
    itself failed: the program never ran as asked). ``message`` says why in one line.
    ``stdout`` / ``stderr`` are the first ``output_bytes`` of each, decoded as UTF-8;
    ``stdout_bytes`` / ``stderr_bytes`` count everything written. ``files`` holds the
    collected files (those named in ``collect`` that existed, each up to
    ``output_bytes``).

    .. versionadded:: 0.2.0
    """

    outcome: Outcome
    message: str
    exit_code: int | None = None
    signal: str | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    duration_ms: float = 0.0
    files: Mapping[str, bytes] = attrs.field(factory=dict)
    isolation: Isolation | None = None

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    @property
    def truncated(self) -> bool:
        """Whether output was dropped past the ``output_bytes`` cap."""
        return (
            len(self.stdout.encode()) < self.stdout_bytes
            or len(self.stderr.encode()) < self.stderr_bytes
        )


@attrs.define
class _Capture:
    """The first ``cap`` bytes of one pipe, and how many it carried in all."""

    cap: int
    data: bytearray = attrs.Factory(bytearray)
    total: int = 0
    closed: anyio.Event = attrs.Factory(anyio.Event)

    async def drain(self, fd: int) -> None:
        """Read ``fd`` (non-blocking) to its end; past ``cap`` bytes, count and drop."""
        try:
            while True:
                await anyio.wait_readable(fd)
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    return
                self.total += len(chunk)
                room = self.cap - len(self.data)
                if room > 0:
                    self.data += chunk[:room]
        except OSError:
            return
        finally:
            self.closed.set()

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class Sandbox:
    """Runs untrusted programs, one fresh directory and one set of limits per execution.

        >>> sandbox = Sandbox(Limits(cpu_seconds=5, wall_seconds=10, memory_mb=512))
        >>> # execution = await sandbox.run([sandbox.python, "main.py"], files={"main.py": src})

    ``isolation`` chooses how: ``auto`` (namespaces where the machine allows, else a plain
    process), ``namespaces`` or ``process`` explicitly, or a container engine
    (``docker`` / ``podman``, running ``image``). Where the program could reach the
    network, the sandbox says so once in the log; ``require_isolation=True`` (or the
    variable ``BENCHKIT_REQUIRE_ISOLATION=1``) makes that an error instead.

    The program's environment holds only ``PATH`` (the interpreter's directory, then the
    system's), ``HOME`` and ``TMPDIR`` (its working directory), ``LANG=C.UTF-8``, the
    variables named in ``pass_env`` that are set in benchkit's environment, and ``env``.

    .. versionadded:: 0.2.0
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        isolation: Mode = "auto",
        require_isolation: bool | None = None,
        pass_env: Sequence[str] = DEFAULT_PASS_ENV,
        env: Mapping[str, str] | None = None,
        image: str = DEFAULT_IMAGE,
    ) -> None:
        if isolation not in _MODES:
            raise ConfigError(
                f"unknown sandbox isolation {isolation!r}",
                fix=f"use one of: {', '.join(_MODES)}.",
            )
        self.limits = limits if limits is not None else Limits()
        self.mode: Mode = isolation
        if require_isolation is None:
            require_isolation = os.environ.get("BENCHKIT_REQUIRE_ISOLATION", "") == "1"
        self.require_isolation = require_isolation
        self.pass_env = tuple(pass_env)
        self.env = dict(env or {})
        for key, value in self.env.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ConfigError(
                    f"sandbox env entry {key!r} must be a string, got {type(value).__name__}",
                    fix='quote the value, e.g. DEBUG: "1".',
                )
        self.image = image
        self._isolation: Isolation | None = None
        self._server: _Server | None = None
        self._server_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Sandbox({self.limits!r}, isolation={self.mode!r})"

    @property
    def python(self) -> str:
        """The Python interpreter programs run with: benchkit's own, or the image's."""
        return "python3" if self.mode in ("docker", "podman") else sys.executable

    def close(self) -> None:
        """Stop this sandbox's fork server (a later :meth:`run` starts another)."""
        with self._server_lock:
            server, self._server = self._server, None
        if server is not None:
            server.close()

    async def aclose(self) -> None:
        """:meth:`close`, for ``async with`` owners (the Runner closes evaluators so)."""
        await anyio.to_thread.run_sync(self.close)

    def _running_server(self) -> _Server:
        with self._server_lock:
            if self._server is None or not self._server.alive():
                if self._server is not None:
                    self._server.close()
                shared_netns = self.isolation().mode == "namespaces" and os.geteuid() == 0
                self._server = _Server.start(netns=shared_netns)
                # A sandbox dropped without close() stops its server when collected.
                weakref.finalize(self, self._server.close)
            return self._server

    def isolation(self) -> Isolation:
        """What this sandbox isolates here (probed once: a process that tries namespaces).

        Raises :class:`~benchkit.errors.ConfigError` when ``require_isolation`` is set and
        the program could reach the network.
        """
        if self._isolation is None:
            found = _choose(self.mode, self.image)
            if not found.network_isolated:
                if self.require_isolation:
                    raise ConfigError(
                        f"network isolation is unavailable on this machine: {found.reason}",
                        fix="run where unprivileged user namespaces are allowed (or as root), "
                        "use isolation: docker, or drop --require-isolation.",
                    )
                _warn_once(found)
            self._isolation = found
        return self._isolation

    async def run(
        self,
        argv: Sequence[str],
        *,
        files: Mapping[str, str | bytes] | None = None,
        stdin: bytes | None = None,
        collect: Sequence[str] = (),
        limits: Limits | None = None,
        env: Mapping[str, str] | None = None,
        readable: Sequence[str] = (),
    ) -> Execution:
        """Run ``argv`` in a fresh directory holding ``files``; the directory is removed after.

        ``argv[0]`` is a path, or a name looked up on the program's PATH; it runs in the
        directory, with ``stdin`` (default: empty). ``collect`` names files to read back
        from the directory afterwards (into :attr:`Execution.files`). ``readable`` names
        directories the program must be able to read (a benchmark's scripts) where they
        lie under one that is hidden from it (a home directory). Never raises for anything
        the program does: every end is an :class:`Execution`.
        """
        limits = limits if limits is not None else self.limits
        if self._isolation is None:
            await anyio.to_thread.run_sync(self.isolation)
        isolation = self.isolation()
        started = time.perf_counter()
        try:
            if isolation.mode in ("docker", "podman"):
                execution = await self._in_container(
                    isolation, argv, files, stdin, collect, limits, env
                )
            else:
                execution = await self._through_server(
                    isolation, argv, files, stdin, collect, limits, env, readable
                )
        except _SetupProblem as exc:
            execution = Execution("sandbox_error", str(exc))
        return attrs.evolve(
            execution, isolation=isolation, duration_ms=(time.perf_counter() - started) * 1000
        )

    async def _through_server(
        self,
        isolation: Isolation,
        argv: Sequence[str],
        files: Mapping[str, str | bytes] | None,
        stdin: bytes | None,
        collect: Sequence[str],
        limits: Limits,
        env: Mapping[str, str] | None,
        readable: Sequence[str],
    ) -> Execution:
        """The fork server makes the directory, runs the program and removes the directory;
        this side only sends the request and reads the output and the answer."""
        child_env = self._environment(None, isolation, env)
        program = _resolve(list(argv), child_env["PATH"], isolation.mode)
        encoded = {name: _b64(content) for name, content in _checked(files or {}).items()}
        for attempt in (1, 2):
            server = self._server
            if server is None or not server.alive():  # starting one blocks: off the loop
                server = await anyio.to_thread.run_sync(self._running_server)
            request = {
                "spec": self._spec(server, isolation, program, child_env, limits, readable),
                "files": encoded,
                "stdin": _b64(stdin) if stdin else None,
                "collect": list(collect),
                "cap": limits.output_bytes,
            }
            try:
                return await _execute(server, json.dumps(request).encode(), limits)
            except _ServerGone:  # it ended its idle minute as this run came: start another
                if attempt == 2:
                    break
                await anyio.to_thread.run_sync(self._replace_server, server)
        return Execution("sandbox_error", "the sandbox's fork server is not answering")

    def _replace_server(self, server: _Server) -> None:
        with self._server_lock:
            if self._server is server:
                self._server = None
        server.close()

    async def _in_container(
        self,
        isolation: Isolation,
        argv: Sequence[str],
        files: Mapping[str, str | bytes] | None,
        stdin: bytes | None,
        collect: Sequence[str],
        limits: Limits,
        env: Mapping[str, str] | None,
    ) -> Execution:
        control = Path(tempfile.mkdtemp(prefix="benchkit-sandbox-"))
        try:
            work = control / "work"
            work.mkdir(mode=0o755)
            for name, content in _checked(files or {}).items():
                target = work.joinpath(*PurePosixPath(name).parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content.encode() if isinstance(content, str) else content)
            child_env = self._environment("/work", isolation, env)
            program = _resolve(list(argv), child_env["PATH"], isolation.mode)
            launch = _container_argv(isolation.mode, self.image, work, program, child_env, limits)
            execution = await _run_container(launch, limits, control, stdin)
            collected = _collect(work, collect, limits.output_bytes)
            return attrs.evolve(execution, files=collected)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_remove, control)

    def _environment(
        self, home: str | None, isolation: Isolation, extra: Mapping[str, str] | None
    ) -> dict[str, str]:
        """The program's environment; HOME and TMPDIR are its directory (the launcher sets
        them when ``home`` is None: it makes the directory)."""
        container = isolation.mode in ("docker", "podman")
        bin_dir = "" if container else os.path.dirname(sys.executable) + ":"
        env = {"PATH": bin_dir + _SYSTEM_PATH, "LANG": "C.UTF-8"}
        if home is not None:
            env.update(HOME=home, TMPDIR=home)
        env.update({k: os.environ[k] for k in self.pass_env if k in os.environ})
        env.update(_FIXED_ENV)
        env.update(self.env)
        env.update(extra or {})
        return env

    def _spec(
        self,
        server: _Server,
        isolation: Isolation,
        program: list[str],
        env: dict[str, str],
        limits: Limits,
        readable: Sequence[str],
    ) -> dict[str, Any]:
        """What the launcher is to do (see :mod:`benchkit.sandbox._launcher`)."""
        namespaces = isolation.mode == "namespaces"
        root = os.geteuid() == 0
        return {
            "argv": program,
            "inprocess": _in_process(program),
            "env": env,
            "limits": limits.rlimits(),
            "namespaces": namespaces,
            "uid": random.randrange(*_UIDS) if namespaces and root else None,
            "shared_netns": server.netns,
            "needed": [*_needed_paths(program), *map(str, readable)],
            "hidden": [os.path.expanduser("~"), str(server.dir)] if namespaces else [],
        }


def _b64(content: str | bytes) -> str:
    raw = content.encode("utf-8") if isinstance(content, str) else bytes(content)
    return base64.b64encode(raw).decode("ascii")


def _checked(files: Mapping[str, str | bytes]) -> Mapping[str, str | bytes]:
    """``files``, once every name is a relative path that stays in the directory."""
    for name in files:
        pure = PurePosixPath(name)
        if not name or pure.is_absolute() or ".." in pure.parts or name.startswith("~"):
            raise _SetupProblem(f"file name {name!r} leaves the sandbox's directory")
    return files


def _in_process(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is ``python -I SCRIPT ...`` or ``python -I -c CODE ...`` with
    benchkit's own interpreter: the fork server then runs it in a forked warm interpreter."""
    if len(argv) < 3 or argv[1] != "-I":
        return False
    if os.path.realpath(argv[0]) != os.path.realpath(sys.executable):
        return False
    if argv[2] == "-c":
        return len(argv) >= 4
    return not argv[2].startswith("-")


class _ServerGone(Exception):
    """The fork server did not take the run (it had just exited, idle)."""


class _SetupProblem(Exception):
    """The execution could not be prepared (a bad file name, a missing program)."""


def _spawn(argv: Sequence[str], *, cwd: Path, stderr: int) -> subprocess.Popen[bytes]:
    """Start a process of the sandbox's own under benchkit's supervisor, stdin a pipe.

    The one place the sandbox starts a process (the fork server, a container engine's
    client, the probes). The supervisor (:mod:`benchkit._procs`) makes sure nothing it
    runs outlives benchkit; what the sandbox needs beyond it — namespaces, limits,
    environment — happens in the launcher, whose own lifeline (the server and each
    launcher end what they run when their stdin reaches end of file) ends an execution
    as soon as the sandbox lets go of it.
    """
    return _procs.popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=str(cwd),
        env={"PATH": _SYSTEM_PATH, "LANG": "C.UTF-8"},
    )


class _Server:
    """The fork server (``_launcher.py --serve``): a warm interpreter that forks one
    launcher per execution, so that an execution starts no interpreter of its own."""

    def __init__(
        self, directory: Path, process: subprocess.Popen[bytes], *, netns: bool = False
    ) -> None:
        self.dir = directory
        self.socket = directory / "server.sock"
        self.process = process
        self.netns = netns

    @classmethod
    def start(cls, *, netns: bool = False) -> _Server:
        """Start one; with ``netns`` (root) it makes one empty network namespace for all
        its executions instead of one each (creating and destroying one per execution
        is the slowest part of an execution)."""
        directory = Path(tempfile.mkdtemp(prefix="benchkit-sandbox-"))
        socket = directory / "server.sock"
        argv = [sys.executable, "-I", _launcher.__file__, "--serve", str(socket)]
        argv += ["--netns"] if netns else []
        process = _spawn(argv, cwd=directory, stderr=subprocess.DEVNULL)
        assert process.stdout is not None
        if process.stdout.readline() != b"ready\n":
            process.kill()
            process.wait()
            _remove(directory)
            raise OSError("the sandbox's fork server did not start")
        process.stdout.close()
        return cls(directory, process, netns=netns)

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        if self.process.stdin is not None:
            with suppress(OSError):
                self.process.stdin.close()  # its lifeline: it stops what runs and exits
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill_group(self.process.pid)
            self.process.wait()
        _remove(self.dir)


def _kill_group(pid: int) -> None:
    """SIGKILL everything the supervisor ``pid`` owns, descendants that left its group too."""
    _procs.kill(pid)


async def _line(stream: anyio.abc.ByteStream) -> bytes:
    """One line from the server (b"" at end of stream)."""
    data = b""
    while not data.endswith(b"\n"):
        try:
            data += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return b""
    return data


class _Lines:
    """Lines from the server's connection, however its bytes arrive."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def line(self) -> bytes:
        """The next line, newline included (b"" at the end of the stream)."""
        while b"\n" not in self.buffer:
            try:
                self.buffer += await self.stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return b""
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line + b"\n"


async def _execute(server: _Server, request: bytes, limits: Limits) -> Execution:
    """One execution through the fork server, under the wall-clock limit."""
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    for fd in (out_read, err_read):
        os.set_blocking(fd, False)
    out, err = _Capture(limits.output_bytes), _Capture(limits.output_bytes)
    try:
        try:
            stream = await anyio.connect_unix(server.socket)
            await stream.send_fds(b"\0", [out_write, err_write])
        except OSError as exc:
            raise _ServerGone from exc
        finally:
            os.close(out_write)
            os.close(err_write)
        async with stream:
            lines = _Lines(stream)
            await stream.send(b"%d\n" % len(request) + request)
            if await lines.line() != b"ok\n":
                raise _ServerGone
            timed_out, answer = await _follow(lines, out, err, out_read, err_read, limits)
    finally:
        os.close(out_read)
        os.close(err_read)
    common: dict[str, Any] = {
        "stdout": out.text(),
        "stderr": err.text(),
        "stdout_bytes": out.total,
        "stderr_bytes": err.total,
    }
    if timed_out:
        return Execution(
            "timeout", f"still running after the wall-clock limit of {limits.wall_seconds:g} s",
            **common,
        )  # fmt: skip
    try:
        found = json.loads(answer)
        status = found["status"]
        files = {name: base64.b64decode(data) for name, data in found["files"].items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        return Execution(
            "sandbox_error",
            f"the sandbox launcher ended without a status: {common['stderr'].strip()[-300:]}",
            **common,
        )
    return attrs.evolve(_classify(status, bytes(err.data), limits, common), files=files)


async def _follow(
    lines: _Lines,
    out: _Capture,
    err: _Capture,
    out_read: int,
    err_read: int,
    limits: Limits,
) -> tuple[bool, bytes]:
    """Drain the program's output until the launcher ends: (whether the deadline came
    first — the launcher was then told to kill everything, and has —, its answer)."""
    timed_out = False
    answer = b""
    async with anyio.create_task_group() as tg:
        tg.start_soon(out.drain, out_read)
        tg.start_soon(err.drain, err_read)
        try:
            with anyio.move_on_after(limits.wall_seconds) as deadline:
                answer = await lines.line()  # sent once everything it ran has ended
            timed_out = deadline.cancelled_caught
        finally:
            with anyio.CancelScope(shield=True):
                if timed_out or not answer:
                    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                        await lines.stream.send_eof()  # its lifeline: the launcher kills all
                    with anyio.move_on_after(10):
                        while line := await lines.line():  # its answer, the server's exit
                            answer = answer or line
                with anyio.move_on_after(_PIPE_GRACE):
                    await out.closed.wait()
                    await err.closed.wait()
                tg.cancel_scope.cancel()
    return timed_out, answer


async def _run_container(
    launch: list[str], limits: Limits, control: Path, stdin: bytes | None
) -> Execution:
    """A container engine's client, under the wall-clock limit."""
    try:
        process = _spawn(launch, cwd=control, stderr=subprocess.PIPE)
    except OSError as exc:
        return Execution("sandbox_error", f"cannot start the container engine: {exc}")
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    with suppress(OSError):
        process.stdin.write(stdin or b"")
        process.stdin.close()
    out, err = _Capture(limits.output_bytes), _Capture(limits.output_bytes)
    fds = (process.stdout.fileno(), process.stderr.fileno())
    for fd in fds:
        os.set_blocking(fd, False)
    timed_out = False
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(out.drain, fds[0])
            tg.start_soon(err.drain, fds[1])
            with anyio.move_on_after(limits.wall_seconds + 30) as deadline:
                await anyio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
            timed_out = deadline.cancelled_caught
            with anyio.move_on_after(_PIPE_GRACE):
                await out.closed.wait()
                await err.closed.wait()
            tg.cancel_scope.cancel()
    finally:
        _kill_group(process.pid)
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(process.wait)
        process.stdout.close()
        process.stderr.close()
    common: dict[str, Any] = {"stdout": out.text(), "stderr": err.text(),
                              "stdout_bytes": out.total, "stderr_bytes": err.total}  # fmt: skip
    if timed_out or process.returncode == 137:
        return Execution(
            "timeout", f"still running after the wall-clock limit of {limits.wall_seconds:g} s",
            **common,
        )  # fmt: skip
    return _classify({"exit_code": process.returncode}, bytes(err.data), limits, common)


def _classify(
    status: Mapping[str, Any], stderr: bytes, limits: Limits, common: dict[str, Any]
) -> Execution:
    if "error" in status:
        return Execution("sandbox_error", str(status["error"]), **common)
    number = status.get("signal")
    if number is not None:
        name = _signal_name(number)
        if number == signal.SIGXCPU:
            return Execution(
                "timeout", f"used its CPU limit of {limits.cpu_seconds:g} s", signal=name, **common
            )
        if number == signal.SIGXFSZ:
            return Execution(
                "failed", f"wrote past the file size limit of {limits.file_size_mb} MiB",
                signal=name, **common,
            )  # fmt: skip
        return Execution("crashed", f"killed by signal {name}", signal=name, **common)
    code = int(status.get("exit_code", -1))
    tail = stderr[-2000:]
    if code == 127 and _CANNOT_RUN in stderr:
        line = stderr[stderr.index(_CANNOT_RUN) :].split(b"\n")[0]
        return Execution("sandbox_error", line.decode(errors="replace"), exit_code=code, **common)
    if code == 0:
        return Execution("passed", "exited with status 0", exit_code=0, **common)
    text = tail.decode("utf-8", errors="replace")
    if any(marker in text for marker in _MEMORY_MARKERS):
        return Execution(
            "memory", f"ran out of memory (limit {limits.memory_mb} MiB of address space)",
            exit_code=code, **common,
        )  # fmt: skip
    return Execution("failed", f"exited with status {code}", exit_code=code, **common)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _collect(work: Path, names: Sequence[str], cap: int) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for name in names:
        target = work / name
        with suppress(OSError):
            if target.is_file() and not target.is_symlink():
                with open(target, "rb") as handle:
                    found[name] = handle.read(cap)
    return found


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _resolve(argv: list[str], path: str, mode: str) -> list[str]:
    """``argv`` with its program made absolute (a container resolves names itself)."""
    if not argv or not all(isinstance(a, str) for a in argv):
        raise _SetupProblem(f"the command must be a non-empty list of strings, got {argv!r}")
    if mode in ("docker", "podman") or "/" in argv[0]:
        return argv
    found = shutil.which(argv[0], path=path)
    if found is None:
        raise _SetupProblem(f"program {argv[0]!r} not found on the sandbox's PATH ({path})")
    return [found, *argv[1:]]


def _needed_paths(argv: list[str]) -> list[str]:
    """What the program must reach through a covered directory: the interpreter's home."""
    return list(_homes(argv[0]))


@functools.lru_cache(maxsize=64)
def _homes(program: str) -> tuple[str, ...]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)}
    for item in (sys.executable, program):
        paths.add(os.path.dirname(os.path.realpath(item)))
    return tuple(sorted(p for p in paths if p and p != "/"))


# --------------------------------------------------------------------------- probing


@functools.cache
def _probe_namespaces(python: str) -> tuple[bool, str]:
    """Whether this machine lets benchkit create the sandbox's namespaces (asked once)."""
    try:
        stdout, _ = _ask([python, "-I", "-S", _launcher.__file__, "--probe"])
        found = json.loads(stdout)
        return bool(found["namespaces"]), str(found["reason"])
    except (OSError, ValueError, KeyError, subprocess.SubprocessError) as exc:
        return False, f"the namespace probe failed: {exc}"


def _ask(argv: list[str]) -> tuple[bytes, int]:
    """Run a short command of the sandbox's own (a probe): its stdout and exit status."""
    process = _spawn(argv, cwd=Path("/"), stderr=subprocess.DEVNULL)
    try:
        stdout, _ = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        process.wait()
        raise
    return stdout, process.returncode


@functools.cache
def _engine_available(engine: str) -> tuple[bool, str]:
    """Whether ``engine`` (docker, podman) is installed and its daemon answers."""
    found = shutil.which(engine)
    if found is None:
        return False, f"{engine} is not installed"
    try:
        _, code = _ask([found, "info"])
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"{engine} info failed: {exc}"
    if code != 0:
        return False, f"{engine} is installed but does not run containers here"
    return True, ""


def _choose(mode: Mode, image: str) -> Isolation:
    if mode in ("docker", "podman"):
        ok, reason = _engine_available(mode)
        if not ok:
            raise ConfigError(
                f"sandbox isolation {mode!r} is unavailable: {reason}",
                fix="install and start it, or use isolation: auto.",
            )
        return Isolation(mode, True, True, True)
    if mode == "process":
        return Isolation("process", False, False, False, reason="isolation: process was asked for")
    ok, reason = _probe_namespaces(sys.executable)
    if ok:
        return Isolation("namespaces", True, True, True)
    if mode == "namespaces":
        raise ConfigError(
            f"the sandbox cannot create namespaces here: {reason}",
            fix="run as root or allow unprivileged user namespaces, or use isolation: auto.",
        )
    return Isolation("process", False, False, False, reason=reason)


_WARNED: set[str] = set()


def _warn_once(isolation: Isolation) -> None:
    """Say once per process that programs could reach the network."""
    if isolation.reason in _WARNED:
        return
    _WARNED.add(isolation.reason)
    _log.warning(
        "network isolation is unavailable on this machine (%s): sandboxed programs run with "
        "their limits, directory and environment, but could reach the network; "
        "--require-isolation makes this an error (docs/code.md)",
        isolation.reason,
    )


def _container_argv(
    engine: str,
    image: str,
    work: Path,
    argv: list[str],
    env: Mapping[str, str],
    limits: Limits,
) -> list[str]:
    """``docker run`` / ``podman run`` with the same limits, the directory at /work."""
    work.chmod(0o777)
    out = [engine, "run", "--rm", "-i", "--network", "none", "--read-only"]
    out += ["--tmpfs", "/tmp:size=64m", "--cap-drop", "ALL"]
    out += ["--security-opt", "no-new-privileges", "--user", "65534:65534"]
    out += ["-v", f"{work}:/work", "-w", "/work"]
    if limits.memory_mb is not None:
        out += ["--memory", f"{limits.memory_mb}m", "--memory-swap", f"{limits.memory_mb}m"]
    if limits.processes is not None:
        out += ["--pids-limit", str(limits.processes)]
    cpu = max(1, round(limits.cpu_seconds + 0.4999))
    out += ["--ulimit", f"cpu={cpu}:{cpu + 1}"]
    if limits.open_files is not None:
        out += ["--ulimit", f"nofile={limits.open_files}:{limits.open_files}"]
    if limits.file_size_mb is not None:
        size = limits.file_size_mb * 1024 * 1024
        out += ["--ulimit", f"fsize={size}:{size}"]
    for key, value in env.items():
        if key != "PATH":
            out += ["-e", f"{key}={value}"]
    wall = max(1, round(limits.wall_seconds + 0.4999))
    return [*out, image, "timeout", "-s", "KILL", str(wall), *argv]
