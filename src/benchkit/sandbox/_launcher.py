"""The sandbox's launcher: the processes between benchkit and an untrusted program.

It runs as a plain script and imports nothing but the standard library. benchkit starts it
once per :class:`~benchkit.sandbox.Sandbox` as a **fork server** (``python -I
_launcher.py --serve SOCKET``, :func:`serve`): a warm interpreter that, for each
execution, forks a launcher (:func:`run_request`) that reads the request sent by
:mod:`benchkit.sandbox._sandbox` (a JSON spec, the files), makes the directory, runs the
program, removes the directory and answers one JSON line.

With ``"namespaces": true`` (Linux) the launcher enters new PID, IPC and UTS namespaces, a
network namespace (as root, the server's own, made once) — and a user namespace when it
is not root — and forks an *init* (PID 1 of the
new PID namespace) that takes a mount namespace of its own, prepares the file system and
forks the program:

* every mount read-only (``mount_setattr(AT_RECURSIVE)``), the working directory bound
  read-write on top, a fresh ``/proc`` that shows only the sandbox's processes;
* directories the program's user could not enter (``/root`` holding the interpreter), the
  invoking user's home and the server's own directory covered by an empty tmpfs, with only
  the paths the program needs (the interpreter's prefixes) bound back;
* the program runs under a user of its own — as root, a fresh unprivileged uid per
  execution; otherwise uid 0 of the new user namespace — with no capabilities,
  ``no_new_privs``, and the resource limits of the spec (so ``RLIMIT_NPROC`` counts only
  its own processes);
* the network namespace has only a loopback device that is down: no connection leaves.

A program that is benchkit's own interpreter running ``-I SCRIPT`` or ``-I -c CODE`` is
run in the forked process itself (:func:`_run_python`), as a fresh interpreter would run
it, so that no interpreter starts per execution; any other program is exec'd.

When the program exits, init reports its wait status and exits, and the kernel kills
everything left in the PID namespace — forked children, daemons, ``setsid`` escapers.

Nothing outlives benchkit: the server's stdin and each launcher's stdin (its connection
to benchkit) are *lifelines* — at their end of file (benchkit exited, was SIGKILLed, or
gave up on the execution) the launcher kills init, and the server kills its launchers;
init and each launcher also have ``PR_SET_PDEATHSIG(SIGKILL)``.

Without namespaces the launcher forks the program directly under the same limits, as a
child subreaper, and kills its process group and every descendant it adopted when the
program ends or the lifeline breaks.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import sys
from typing import Any, NoReturn

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000

_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 0x40000

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38

_SYS_MOUNT_SETATTR = 442  # x86_64 and aarch64 alike (the unified syscall table)
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1

_LIMITS = {
    "cpu": resource.RLIMIT_CPU,
    "as": resource.RLIMIT_AS,
    "nproc": resource.RLIMIT_NPROC,
    "nofile": resource.RLIMIT_NOFILE,
    "fsize": resource.RLIMIT_FSIZE,
}


class SetupError(Exception):
    """The sandbox could not be set up (reported as ``sandbox_error``)."""


_LIBC: list[Any] = []


def _libc() -> Any:
    """The C library, loaded once (the fork server loads it before it forks)."""
    if not _LIBC:
        import ctypes

        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _check(result: int, what: str) -> None:
    if result != 0:
        import ctypes

        errno = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(errno)} (errno {errno})")


def _wait_status(status: int) -> dict[str, Any]:
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return {"exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1}


# --------------------------------------------------------------------------- the program


def _set_limits(limits: dict[str, int]) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for name, value in limits.items():
        kind = _LIMITS[name]
        hard = value + 1 if name == "cpu" else value
        _, current = resource.getrlimit(kind)
        if current != resource.RLIM_INFINITY:
            value, hard = min(value, current), min(hard, current)
        resource.setrlimit(kind, (value, hard))


def _exec_program(spec: dict[str, Any], libc: Any | None, stdin_fd: int) -> NoReturn:
    """In the forked child: limits, a user of its own, no privileges; then exec."""
    try:
        os.dup2(stdin_fd, 0)
        os.chdir(spec["cwd"])
        os.umask(0o022)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        uid = spec.get("uid")
        if libc is not None and uid is None and spec["namespaces"]:
            for cap in range(64):  # uid 0 of a user namespace: no capabilities after exec
                if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                    break
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        if libc is not None:
            libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # after setuid, which clears it
        _set_limits(spec["limits"])
        argv = spec["argv"]
        if spec.get("inprocess"):
            if libc is not None and uid is None and spec["namespaces"]:
                _drop_capabilities(libc)  # no exec clears them: do it now
            if libc is not None and uid is not None:
                libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # /proc/self is its own, as after exec
            os.closerange(3, 1 << 16)  # what exec would close: the launcher's own descriptors
            _run_python(argv, spec["env"])
        os.execve(argv[0], argv, spec["env"])
    except BaseException as exc:
        try:
            os.write(2, f"benchkit sandbox: cannot run {spec['argv'][0]!r}: {exc}\n".encode())
        finally:
            os._exit(127)


def _drop_capabilities(libc: Any) -> None:
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _check(libc.capset(ctypes.byref(header), data), "capset")


def _run_python(argv: list[str], env: dict[str, str]) -> NoReturn:
    """``python -I SCRIPT ARGS`` or ``python -I -c CODE ARGS``, run in this forked process.

    What a fresh interpreter would do, without starting one: the script runs as
    ``__main__`` with ``sys.argv`` set, the environment replaced, unbuffered UTF-8 standard
    streams, SIGPIPE and SIGXFSZ ignored and a fresh random seed; the exit status follows
    ``SystemExit`` and uncaught exceptions as Python's own.
    """
    import builtins
    import io
    import random
    import types

    code = 0
    try:
        os.environ.clear()
        os.environ.update(env)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        random.seed()
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(
            io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=True
        )
        sys.stderr = io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
            write_through=True,
        )  # fmt: skip
        rest = argv[2:]
        if rest[0] == "-c":
            source, filename, sys.argv = rest[1], "<string>", ["-c", *rest[2:]]
        else:
            with open(rest[0], encoding="utf-8") as handle:
                source = handle.read()
            filename, sys.argv = rest[0], list(rest)
        main = types.ModuleType("__main__")
        main.__dict__.update({"__builtins__": builtins, "__file__": filename})
        if filename == "<string>":
            del main.__dict__["__file__"]
        sys.modules["__main__"] = main
        exec(compile(source, filename, "exec"), main.__dict__)
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code & 0xFF
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
    os._exit(code)


# --------------------------------------------------------------------------- namespaces


def _map_user(uid: int, gid: int) -> None:
    """Inside a fresh user namespace: become its uid 0, mapped onto the invoking user."""
    with open("/proc/self/setgroups", "w") as handle:
        handle.write("deny")
    with open("/proc/self/uid_map", "w") as handle:
        handle.write(f"0 {uid} 1")
    with open("/proc/self/gid_map", "w") as handle:
        handle.write(f"0 {gid} 1")


def _mount(libc: Any, source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:  # fmt: skip
    def c(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    _check(libc.mount(c(source), c(target), c(fstype), flags, c(data)), f"mount {target}")


def _setattr(libc: Any, path: str, *, set_: int, clear: int, recursive: bool) -> None:
    import ctypes

    class MountAttr(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint64) for n in ("set", "clr", "propagation", "userns_fd")]

    attr = MountAttr(set_, clear, 0, 0)
    flags = _AT_RECURSIVE if recursive else 0
    result = libc.syscall(
        _SYS_MOUNT_SETATTR, _AT_FDCWD, os.fsencode(path), flags, ctypes.byref(attr),
        ctypes.sizeof(attr),
    )  # fmt: skip
    _check(result, f"mount_setattr {path}")


def _entry_allowed(path: str, uid: int) -> bool:
    """Whether ``uid`` may enter the directory ``path`` (search permission)."""
    try:
        info = os.stat(path)
    except OSError:
        return True  # nothing to hide: it cannot be bound back either
    if uid == 0 or info.st_uid == uid:
        return bool(info.st_mode & 0o100) or uid == 0
    return bool(info.st_mode & 0o001)


def _masks(needed: list[str], hidden: list[str], uid: int) -> dict[str, set[str]]:
    """Directories to cover with an empty tmpfs, each with the children to bind back.

    A directory is covered when the program's user could not enter it anyway (``/root``
    holding the interpreter) or when it is listed in ``hidden`` (a home directory); the
    needed paths below it are bound back, one path component under the cover (and a
    private directory further down is covered in turn). A needed directory that its user
    may not read stays unreadable: covers change what is visible, not permissions.
    """
    covers: dict[str, set[str]] = {path: set() for path in hidden if os.path.isdir(path)}
    for path in needed:
        current = "/"
        for part in os.path.realpath(path).strip("/").split("/"):
            if not part:
                break
            child = os.path.join(current, part)
            if current in covers or (current != "/" and not _entry_allowed(current, uid)):
                covers.setdefault(current, set()).add(child)
            current = child
    # A cover inside another cover's bound-back child is mounted after it (sorted order).
    return covers


def _prepare_mounts(libc: Any, spec: dict[str, Any], uid: int) -> None:
    """Init's file system: everything read-only, the work dir writable, /proc fresh."""
    cwd = spec["cwd"]
    _mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE)
    covers = _masks([*spec["needed"], cwd], spec["hidden"], uid)
    kept = {child: os.open(child, os.O_PATH) for kids in covers.values() for child in kids}
    for directory in sorted(covers):
        _mount(libc, "tmpfs", directory, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=1m")
        for child in sorted(covers[directory]):
            if os.path.isdir(f"/proc/self/fd/{kept[child]}"):
                os.mkdir(child, 0o755)
            else:
                os.close(os.open(child, os.O_CREAT | os.O_WRONLY, 0o644))
            _mount(libc, f"/proc/self/fd/{kept[child]}", child, None, _MS_BIND | _MS_REC)
    for fd in kept.values():
        os.close(fd)
    _mount(libc, cwd, cwd, None, _MS_BIND)
    _setattr(libc, "/", set_=_MOUNT_ATTR_RDONLY, clear=0, recursive=True)
    _setattr(libc, cwd, set_=0, clear=_MOUNT_ATTR_RDONLY, recursive=False)
    try:
        _mount(libc, "proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    except SetupError:
        if spec["uid"] is not None:  # as root it always works: something is wrong
            raise


def _init(spec: dict[str, Any], libc: Any, report: int, stdin_fd: int) -> NoReturn:
    """PID 1 of the sandbox: prepare, fork the program, reap, report its end, exit."""
    try:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        uid = spec["uid"] if spec["uid"] is not None else 0
        _check(libc.unshare(_CLONE_NEWNS), "unshare")  # init's own: the launcher's stays
        _prepare_mounts(libc, spec, uid)
        program = os.fork()
        if program == 0:
            os.close(report)
            _exec_program(spec, libc, stdin_fd)
        status: dict[str, Any] | None = None
        while status is None:
            pid, raw = os.waitpid(-1, 0)
            if pid == program:
                status = _wait_status(raw)
        os.write(report, json.dumps(status).encode())
    except BaseException as exc:
        os.write(report, json.dumps({"error": f"sandbox setup failed: {exc}"}).encode())
    os._exit(0)  # the kernel now kills whatever is left in the PID namespace


def _run_namespaced(spec: dict[str, Any], stdin_fd: int) -> dict[str, Any]:
    libc = _libc()
    flags = _CLONE_NEWPID | _CLONE_NEWIPC | _CLONE_NEWUTS
    if not spec.get("shared_netns"):  # else the server's own network namespace is enough
        flags |= _CLONE_NEWNET
    user_ns = spec["uid"] is None
    uid, gid = os.getuid(), os.getgid()
    _check(libc.unshare(flags | (_CLONE_NEWUSER if user_ns else 0)), "unshare")
    if user_ns:
        _map_user(uid, gid)
    else:
        os.chown(spec["cwd"], spec["uid"], spec["uid"])
    read_end, write_end = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(read_end)
        os.close(0)
        _init(spec, libc, write_end, stdin_fd)
    os.close(write_end)
    return _supervise(init, read_end, lambda: _kill(init))


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _supervise(child: int, report: int | None, kill: Any) -> dict[str, Any]:
    """Wait for ``child``, watching the lifeline (stdin): at its end, ``kill()``.

    With namespaces ``report`` is init's report pipe (end of file: init has exited);
    without, SIGCHLD wakes the wait through a self-pipe.
    """
    if report is None:
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(wake_write)
        watched = [0, wake_read]
    else:
        watched = [0, report]
    chunks: list[bytes] = []
    while True:
        if report is None:
            pid, raw = os.waitpid(child, os.WNOHANG)
            if pid == child:
                return _wait_status(raw)
        elif report not in watched:
            break
        try:
            ready, _, _ = select.select(watched, [], [])
        except InterruptedError:
            continue
        if 0 in ready and not os.read(0, 4096):
            kill()  # benchkit is gone: take the sandbox down
            watched.remove(0)
        if report is not None and report in ready:
            data = os.read(report, 65536)
            if data:
                chunks.append(data)
            else:
                watched.remove(report)
        elif report is None and watched[-1] in ready:
            os.read(watched[-1], 4096)
    os.waitpid(child, 0)
    if not chunks:
        return {"error": "the sandbox's init ended without a report"}
    status: dict[str, Any] = json.loads(b"".join(chunks))
    return status


# --------------------------------------------------------------------------- no namespaces


def _descendants(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            children = [int(p) for p in handle.read().split()]
    except OSError:
        return []
    return children + [d for c in children for d in _descendants(c)]


def _run_plain(spec: dict[str, Any], stdin_fd: int) -> dict[str, Any]:
    libc = None
    if sys.platform.startswith("linux"):
        libc = _libc()
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    me = os.getpid()
    program = os.fork()
    if program == 0:
        os.close(0)
        os.setpgid(0, 0)
        _exec_program(spec, libc, stdin_fd)

    def kill() -> None:
        for pid in _descendants(me):
            _kill(pid)
        with contextlib.suppress(OSError):
            os.killpg(program, signal.SIGKILL)

    status = _supervise(program, None, kill)
    kill()  # what the program left behind: its group, and orphans adopted by the launcher
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    return status


# --------------------------------------------------------------------------- main


def probe() -> dict[str, Any]:
    """What this machine allows: ``{"namespaces": bool, "reason": str}`` (a dry run)."""
    if not sys.platform.startswith("linux"):
        return {"namespaces": False, "reason": f"no namespaces on {sys.platform}"}
    libc = _libc()
    root = os.getuid() == 0
    flags = _CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWPID | _CLONE_NEWIPC | _CLONE_NEWUTS
    pid = os.fork()
    if pid == 0:
        try:
            _check(libc.unshare(flags | (0 if root else _CLONE_NEWUSER)), "unshare")
            if not root:
                _map_user(os.getuid(), os.getgid())
            _mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE)
            _setattr(libc, "/", set_=_MOUNT_ATTR_RDONLY, clear=0, recursive=True)
        except (SetupError, OSError) as exc:
            os.write(2, str(exc).encode())
            os._exit(1)
        os._exit(0)
    _, raw = os.waitpid(pid, 0)
    if os.WIFEXITED(raw) and os.WEXITSTATUS(raw) == 0:
        return {"namespaces": True, "reason": ""}
    return {"namespaces": False, "reason": "unshare or mount_setattr refused"}


def _read_exactly(fd: int, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            raise OSError("the request ended early")
        data += chunk
    return bytes(data)


def _prepare(request: dict[str, Any], base: str) -> tuple[dict[str, Any], str]:
    """The execution's directory, made here (off benchkit's event loop): its files, its
    stdin; the spec completed with where they are. Returns (spec, directory)."""
    import base64
    import tempfile

    spec: dict[str, Any] = request["spec"]
    control = tempfile.mkdtemp(prefix="x-", dir=base)
    work = os.path.join(control, "work")
    os.mkdir(work, 0o755)
    uid = spec.get("uid")
    for name, encoded in request["files"].items():
        parts = name.split("/")
        if name.startswith("/") or ".." in parts or not name:
            raise SetupError(f"file name {name!r} leaves the sandbox's directory")
        target = os.path.join(work, *parts)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(base64.b64decode(encoded))
        if uid is not None:
            os.chown(target, uid, uid)
    if uid is not None:
        for directory, subdirectories, _ in os.walk(work):
            for sub in subdirectories:
                os.chown(os.path.join(directory, sub), uid, uid)
    stdin = request.get("stdin")
    spec["stdin"] = None
    if stdin is not None:
        spec["stdin"] = os.path.join(control, "stdin")
        with open(spec["stdin"], "wb") as handle:
            handle.write(base64.b64decode(stdin))
        os.chmod(spec["stdin"], 0o644)
    spec["cwd"] = work
    spec["env"].setdefault("HOME", work)
    spec["env"].setdefault("TMPDIR", work)
    return spec, control


def _collected(work: str, names: list[str], cap: int) -> dict[str, str]:
    import base64

    found: dict[str, str] = {}
    for name in names:
        target = os.path.join(work, name)
        try:
            if os.path.isfile(target) and not os.path.islink(target):
                with open(target, "rb") as handle:
                    found[name] = base64.b64encode(handle.read(cap)).decode()
        except OSError:
            continue
    return found


def run_request(base: str) -> None:
    """One execution, in a launcher forked by the server: fd 0 is benchkit's connection.

    It reads the request (a length line came with the descriptors; the JSON follows),
    makes the directory, runs the program (namespaced or plain), removes the directory,
    closes the program's output and answers one JSON line — ``{"status": ..., "files":
    {name: base64}}``: everything it ran has ended by then.
    """
    import shutil

    control = None
    try:
        header = b""
        while not header.endswith(b"\n"):
            chunk = os.read(0, 1)
            if not chunk:
                return
            header += chunk
        request = json.loads(_read_exactly(0, int(header)))
        spec, control = _prepare(request, base)
        stdin_fd = os.open(spec["stdin"] or os.devnull, os.O_RDONLY)
        if spec["namespaces"]:
            status = _run_namespaced(spec, stdin_fd)
        else:
            status = _run_plain(spec, stdin_fd)
        files = _collected(spec["cwd"], request.get("collect", []), int(request.get("cap", 0)))
    except (SetupError, OSError, ValueError, KeyError) as exc:
        status, files = {"error": f"sandbox setup failed: {exc}"}, {}
    if control is not None:
        shutil.rmtree(control, ignore_errors=True)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # the program's output ends here: benchkit reads end of file now
    os.dup2(null, 2)
    try:
        answer = (json.dumps({"status": status, "files": files}) + "\n").encode()
        while answer:
            answer = answer[os.write(0, answer) :]
    except OSError:
        pass  # benchkit is gone: nobody to tell


#: A server with nothing to run for this long exits (benchkit starts another on demand).
_IDLE_SECONDS = 60.0


def serve(socket_path: str, *, netns: bool = False) -> None:
    """The fork server: one connection per execution, one forked launcher per connection.

    benchkit starts it once and keeps its stdin open (the server's lifeline). Each
    connection sends one byte with the program's stdout and stderr as two file descriptors
    (SCM_RIGHTS), then a length line and the request's JSON (the spec, the files, what to
    collect). The server forks a launcher whose stdin is the connection — it reads the
    request, makes the directory, runs, answers one JSON line and removes the directory;
    benchkit shutting its side down, or dying, makes it kill everything — answers ``ok``,
    and writes ``exit`` when the launcher has ended. Forking a warm interpreter instead of
    starting one, and leaving the files to the launcher, is what keeps an execution cheap.
    """
    import socket
    import time

    base = os.path.dirname(os.path.realpath(socket_path))
    _warm()
    if netns:  # one empty network namespace for every execution (root only)
        _check(_libc().unshare(_CLONE_NEWNET), "unshare")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    os.chmod(socket_path, 0o600)
    listener.listen(128)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_write)
    os.write(1, b"ready\n")
    os.close(1)
    os.open(os.devnull, os.O_WRONLY)  # fd 1 again, so nothing else takes its number
    children: dict[int, socket.socket] = {}
    idle_since = time.monotonic()
    while True:
        timeout = None if children else max(0.0, _IDLE_SECONDS - (time.monotonic() - idle_since))
        try:
            ready, _, _ = select.select([listener.fileno(), 0, wake_read], [], [], timeout)
        except InterruptedError:
            continue
        if not ready and not children:
            break
        if 0 in ready and not os.read(0, 4096):
            break  # benchkit is gone
        if wake_read in ready:
            os.read(wake_read, 4096)
            while True:
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                done = children.pop(pid, None)
                if done is not None:
                    with contextlib.suppress(OSError):
                        done.sendall(b"exit\n")
                    done.close()
            if not children:
                idle_since = time.monotonic()
        if listener.fileno() in ready:
            conn, _ = listener.accept()
            started = _accept(conn, base, listener, children)
            if started is not None:
                children[started] = conn
            else:
                conn.close()
    listener.close()
    with contextlib.suppress(OSError):
        os.unlink(socket_path)
    for pid in children:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        _kill(pid)


def _warm() -> None:
    """Import now what every forked launcher and in-process program would import."""
    import base64  # noqa: F401
    import builtins  # noqa: F401
    import io  # noqa: F401
    import random  # noqa: F401
    import shutil  # noqa: F401
    import tempfile  # noqa: F401
    import traceback  # noqa: F401
    import types  # noqa: F401

    if sys.platform.startswith("linux"):
        _libc()


def _accept(conn: Any, base: str, listener: Any, children: dict[int, Any]) -> int | None:
    """Take the descriptors of one request and fork its launcher; the launcher's pid, or
    None. The request's JSON is read by the launcher, so that a large one never holds up
    the server."""
    import socket

    conn.settimeout(10)
    try:
        _, fds, _, _ = socket.recv_fds(conn, 1, 2)
    except OSError:
        return None
    if len(fds) != 2:
        for fd in fds:
            os.close(fd)
        return None
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            listener.close()
            for other in children.values():
                other.close()
            conn.settimeout(None)
            os.dup2(conn.fileno(), 0)
            os.dup2(fds[0], 1)
            os.dup2(fds[1], 2)
            for fd in (*fds, conn.fileno()):
                os.close(fd)
            run_request(base)
        finally:
            os._exit(0)
    for fd in fds:
        os.close(fd)
    try:
        conn.sendall(b"ok\n")
    except OSError:
        os.killpg(pid, signal.SIGKILL)
    return pid


def main(argv: list[str]) -> NoReturn:
    if argv == ["--probe"]:
        print(json.dumps(probe()))
        sys.exit(0)
    if len(argv) in (2, 3) and argv[0] == "--serve" and argv[2:] in ([], ["--netns"]):
        serve(argv[1], netns=argv[2:] == ["--netns"])
        sys.exit(0)
    print("usage: _launcher.py --probe | --serve SOCKET [--netns]", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
