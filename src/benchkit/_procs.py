"""Processes benchkit starts, and the supervisor that makes sure none outlives it.

Every process benchkit starts — a subprocess provider's command, an MCP server, a
verifier's command, the local model's server, and the code sandbox — runs under a small
supervisor, this file run as a script (it imports nothing from benchkit, so it runs as a
plain path with ``python -I -S``)::

    python -I -S _procs.py --lifeline 5 --grace 0.3 --rlimit as=268435456 -- cmd args...

The supervisor starts in a session of its own, applies the resource limits to the command
only, forks and execs it, and then watches three things:

- **its lifeline**: the read end of a pipe whose write end only benchkit holds (never
  inherited). When benchkit exits, however it ends — SIGKILL included — the pipe reads
  end-of-file and the supervisor kills everything it owns at once. A pipe, not Linux's
  parent-death signal: that signal fires when the *thread* that forked dies (anyio and
  asyncio may start processes from worker threads that later exit), and it never reaches
  grandchildren;
- **everything below it**: on Linux it is a child subreaper, so a grandchild whose
  parent exits, and a process that started a session of its own (``setsid``, escaping a
  process-group kill), is re-parented to the supervisor; killing walks ``/proc`` for every
  descendant, again until none is left (a process forking meanwhile is caught next
  round). Elsewhere it kills the command's process group. The command itself also gets a
  parent-death signal (SIGKILL) from the supervisor, whose one thread forked it, for the
  case the supervisor is killed;
- **signals from benchkit**: SIGTERM (and SIGINT, SIGHUP) passes SIGTERM to every
  process it owns and SIGKILLs them after ``--grace`` seconds; SIGUSR1 SIGKILLs them at
  once.

When the command exits, whatever it left running is killed, and the supervisor exits
the way the command did (its exit code, or the same signal), so callers see the command's
own status. ``--rlimit`` sets RLIMIT_AS (``as``, bytes), RLIMIT_CPU (``cpu``, seconds:
SIGXCPU, SIGKILL a second later), RLIMIT_NPROC (``nproc``), RLIMIT_FSIZE (``fsize``,
bytes), RLIMIT_NOFILE (``nofile``) on the command; core dumps are always off.

In benchkit, :func:`open_process` (async) and :func:`popen` (sync) start a command so;
:func:`stop` ends one gracefully and :func:`kill` at once.
"""

from __future__ import annotations

import errno
import os
import resource
import select
import signal
import sys
import time

# The supervisor starts before every command benchkit runs: it imports nothing it can do
# without (typing, collections.abc, contextlib cost it ~25 ms a start on a busy machine).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any, NoReturn

    import anyio.abc

__all__ = [
    "RLIMITS",
    "descendants",
    "kill",
    "lifeline",
    "main",
    "open_process",
    "parse_args",
    "popen",
    "stop",
    "supervised",
    "terminate",
]

#: The resource limits ``--rlimit NAME=VALUE`` may set, by name.
RLIMITS: dict[str, int] = {
    "as": resource.RLIMIT_AS,
    "cpu": resource.RLIMIT_CPU,
    "nproc": resource.RLIMIT_NPROC,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
}
#: How long :func:`stop` waits past the supervisor's own grace before killing its group.
_STOP_MARGIN = 2.0
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
#: Signals the supervisor catches, and those among them that end what it owns (gracefully).
_CAUGHT = (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1)
_ENDING = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}

# --------------------------------------------------------------------------- in benchkit

_lifeline: tuple[int, int, int] | None = None  # (pid, read end, write end)


def lifeline() -> int:
    """The read end of this process's lifeline pipe, made on first use (again in a forked
    child). Its write end is never inherited and never written: it closes when this
    process exits, which every supervisor sees."""
    global _lifeline
    pid = os.getpid()
    if _lifeline is None or _lifeline[0] != pid:
        read, write = os.pipe()  # neither end is inheritable; pass_fds passes the read end
        _lifeline = (pid, read, write)
    return _lifeline[1]


def supervised(
    argv: Sequence[str],
    *,
    limits: Mapping[str, int | None] | None = None,
    grace: float = 0.3,
) -> list[str]:
    """The command line that runs ``argv`` under the supervisor, with ``limits``
    (``{"as": bytes, "cpu": seconds, ...}``; None values are left out) and ``grace``
    seconds between SIGTERM and SIGKILL. Start it with ``pass_fds`` holding
    :func:`lifeline` (what :func:`open_process` and :func:`popen` do)."""
    head = [sys.executable, "-I", "-S", __file__, "--lifeline", str(lifeline())]
    head += ["--grace", repr(float(grace))]
    for name, value in (limits or {}).items():
        if value is not None:
            head += ["--rlimit", f"{name}={int(value)}"]
    return [*head, "--", *argv]


async def open_process(
    argv: Sequence[str],
    *,
    limits: Mapping[str, int | None] | None = None,
    grace: float = 0.3,
    pass_fds: Iterable[int] = (),
    **options: Any,
) -> anyio.abc.Process:
    """:func:`anyio.open_process` of ``argv`` under the supervisor (``options``: ``cwd``,
    ``env``, ``stdin``...). The process's pid is the supervisor's: signal it through
    :func:`stop`, :func:`kill` and :func:`terminate`, never its group."""
    import anyio

    return await anyio.open_process(
        supervised(argv, limits=limits, grace=grace),
        start_new_session=True,
        pass_fds=(lifeline(), *pass_fds),
        **options,
    )


def popen(
    argv: Sequence[str],
    *,
    limits: Mapping[str, int | None] | None = None,
    grace: float = 0.3,
    pass_fds: Iterable[int] = (),
    **options: Any,
) -> subprocess.Popen[bytes]:
    """:class:`subprocess.Popen` of ``argv`` under the supervisor (see :func:`open_process`)."""
    import subprocess

    return subprocess.Popen(
        supervised(argv, limits=limits, grace=grace),
        start_new_session=True,
        pass_fds=(lifeline(), *pass_fds),
        **options,
    )


def terminate(pid: int) -> None:
    """Ask the supervisor ``pid`` to end what it owns: SIGTERM now, SIGKILL after its grace."""
    _signal(pid, signal.SIGTERM)


def kill(pid: int) -> None:
    """Make the supervisor ``pid`` SIGKILL everything it owns at once (then it exits as
    its command did: killed by SIGKILL)."""
    _signal(pid, signal.SIGUSR1)


def _signal(pid: int, sig: int) -> None:
    _quietly(os.kill, pid, sig)


def _quietly(call: Any, *args: Any) -> None:
    """``call(*args)``, a process already gone (OSError) or a closed stream (ValueError)
    being no error here."""
    try:  # noqa: SIM105 (contextlib is not imported: see the imports)
        call(*args)
    except (OSError, ValueError):
        pass


async def stop(process: anyio.abc.Process, grace: float) -> None:
    """End a supervised process: SIGTERM, which the supervisor passes on (SIGKILL after
    ``grace``); if it is still there ``grace`` + 2 seconds later, SIGKILL its group. Reaps
    it. Shield the call from cancellation: it waits."""
    import anyio

    if process.returncode is None:
        terminate(process.pid)
        with anyio.move_on_after(grace + _STOP_MARGIN):
            await process.wait()
    if process.returncode is None:
        _quietly(os.killpg, process.pid, signal.SIGKILL)
    await process.wait()


# --------------------------------------------------------------------------- the supervisor


def parse_args(argv: list[str]) -> tuple[int, float, dict[int, int], list[str]]:
    """``--lifeline FD [--grace S] [--rlimit NAME=N]... -- command...`` as
    ``(fd, grace, {resource: limit}, command)``; ValueError when malformed."""
    fd, grace = -1, 0.3
    limits: dict[int, int] = {}
    rest = list(argv)
    while rest and rest[0] != "--":
        if len(rest) < 2:
            break
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag == "--lifeline":
            fd = int(value)
        elif flag == "--grace":
            grace = float(value)
        elif flag == "--rlimit":
            name, _, number = value.partition("=")
            if name not in RLIMITS:
                raise ValueError(f"unknown limit {name!r}")
            limits[RLIMITS[name]] = int(number)
        else:
            raise ValueError(f"unknown option {flag!r}")
    if fd < 0 or not rest or rest[0] != "--" or len(rest) < 2 or not grace >= 0:
        raise ValueError(
            "usage: _procs.py --lifeline FD [--grace S] [--rlimit NAME=N]... -- command [args...]"
        )
    return fd, grace, limits, rest[1:]


def _prctl(option: int, value: int) -> bool:
    """Linux's prctl; False where there is none (or it failed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _set_limit(kind: int, soft: int, hard: int) -> None:
    _, current_hard = resource.getrlimit(kind)
    if current_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    resource.setrlimit(kind, (soft, hard))


def descendants(root: int) -> list[int]:
    """The processes below ``root`` (Linux: read from ``/proc``; elsewhere none): through
    each task's ``children`` list, which costs what the tree holds, else by reading every
    process's parent (where the kernel keeps no such lists), living ones only."""
    if os.path.exists(f"/proc/{root}/task/{root}/children"):
        return _tree(root)
    return _scan(root)


def _tree(root: int) -> list[int]:
    found: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue  # gone meanwhile
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children", "rb") as listed:
                    children = [int(child) for child in listed.read().split()]
            except (OSError, ValueError):
                continue
            found += children
            todo += children
    return found


def _scan(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if fields and fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


class _Supervisor:
    """The supervisor's state: its command's pid and group, and how it is ending."""

    def __init__(self, lifeline_fd: int, grace: float) -> None:
        self.me = os.getpid()
        self.lifeline = lifeline_fd
        self.grace = grace
        self.child = -1
        self.status: int | None = None
        self.deadline: float | None = None  # when SIGTERMed: SIGKILL everything then
        self.tracked = _prctl(_PR_SET_CHILD_SUBREAPER, 1) and os.path.isdir(f"/proc/{self.me}")

    def signal_all(self, sig: int) -> None:
        """``sig`` to every process owned: the command's group, and every descendant."""
        if self.child > 0:
            _quietly(os.killpg, self.child, sig)
        if self.tracked:
            for pid in descendants(self.me):
                _quietly(os.kill, pid, sig)

    def kill_all(self) -> None:
        """SIGKILL every process owned, again until none is left (each round reaps)."""
        for _ in range(1000):
            self.signal_all(signal.SIGKILL)
            self.reap()
            if not self.tracked or not descendants(self.me):
                return
            time.sleep(0.002)

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child:
                self.status = status

    def run(self, wake_read: int) -> NoReturn:
        """Wait for the command, signals and the lifeline (see the module's docstring)."""
        while True:
            timeout = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
            try:
                ready, _, _ = select.select([self.lifeline, wake_read], [], [], timeout)
            except InterruptedError:
                ready = []
            if self.lifeline in ready:
                try:
                    gone = not os.read(self.lifeline, 64)
                except OSError:
                    gone = True
                if gone:  # benchkit has ended, however it ended
                    self.kill_all()
                    os._exit(137)
            if wake_read in ready:
                for number in os.read(wake_read, 256):
                    if number in _ENDING:
                        if self.deadline is None:
                            self.signal_all(signal.SIGTERM)
                            self.deadline = time.monotonic() + self.grace
                    elif number == signal.SIGUSR1:
                        self.kill_all()
            self.reap()
            if self.status is not None:
                self.kill_all()  # what the command left running
                _exit_as(self.status)
            if self.deadline is not None and time.monotonic() >= self.deadline:
                self.kill_all()


def _exit_as(status: int) -> NoReturn:
    """Exit the way a process with wait ``status`` did: its code, or its signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            try:
                signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
            except (OSError, ValueError):
                os._exit(128 + sig)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _child(
    command: list[str], limits: dict[int, int], parent: int, keep_out: Sequence[int]
) -> NoReturn:
    """In the forked child: die with the supervisor, take the limits, become the command."""
    try:
        for sig in _CAUGHT:
            signal.signal(sig, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _ENDING)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the supervisor died before the line above
            os._exit(137)
        for fd in keep_out:
            os.close(fd)
        for kind, value in limits.items():
            _set_limit(kind, value, value + 1 if kind == resource.RLIMIT_CPU else value)
        os.execvp(command[0], command)
    except OSError as exc:
        _say(f"benchkit launcher: cannot run {command[0]!r}: {exc}")
        os._exit(127)
    except BaseException:
        os._exit(127)


def _say(message: str) -> None:
    _quietly(sys.stderr.write, message + "\n")
    _quietly(sys.stderr.flush)


def main(argv: list[str]) -> NoReturn:
    """Run the command in ``argv`` under supervision (see the module's docstring); exit
    127 when it cannot run, 2 on a malformed command line."""
    try:
        fd, grace, limits, command = parse_args(argv)
        os.set_inheritable(fd, False)  # the command never holds the lifeline
    except (ValueError, OSError) as exc:
        _say(f"benchkit launcher: {exc}")
        os._exit(2)
    _set_limit(resource.RLIMIT_CORE, 0, 0)
    supervisor = _Supervisor(fd, grace)
    # Signals are caught from before the fork (a SIGTERM sent while the command starts is
    # handled once it runs, not lost): each writes its number to the wake-up pipe, which
    # the supervisor's loop reads.
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.pthread_sigmask(signal.SIG_BLOCK, _ENDING)
    signal.set_wakeup_fd(wake_write)
    for sig in _CAUGHT:
        signal.signal(sig, lambda *_: None)
    try:
        pid = os.fork()
    except OSError as exc:
        _say(f"benchkit launcher: cannot start {command[0]!r}: {exc}")
        os._exit(127)
    if pid == 0:
        _child(command, limits, supervisor.me, [fd, wake_read, wake_write])
    supervisor.child = pid
    _quiet_stdio()
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _ENDING)
        supervisor.run(wake_read)
    except BaseException:
        supervisor.kill_all()
        os._exit(1)


def _quiet_stdio() -> None:
    """The supervisor lets go of the command's stdin and stdout (its stderr stays, for its
    own last words): pipes close when the command's processes close them."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    for fd in (0, 1):
        try:
            os.dup2(null, fd)
        except OSError as exc:
            if exc.errno != errno.EBADF:
                raise
    os.close(null)


if __name__ == "__main__":
    main(sys.argv[1:])
