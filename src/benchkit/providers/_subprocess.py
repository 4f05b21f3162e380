"""A program speaking JSON-RPC 2.0 on stdin/stdout as the system under test (eval-skills)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from benchkit import _limits, _procs, _secrets, transcript
from benchkit._public import public
from benchkit.errors import ConfigError, InvocationError
from benchkit.model import Request, Response
from benchkit.traces._scope import otlp_env  # a traced cell's OTLP endpoint (docs/agents.md)

__all__ = ["SubprocessProvider"]

_PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ")
_FIXED_ENV = {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "BENCHKIT_SANDBOX": "1"}
_PIPES = ("stdout", "stderr")
_EXCERPT = 200


@public("benchkit.providers")
class SubprocessProvider:
    """Runs one process per cell and exchanges one JSON-RPC 2.0 message with it.

    The process gets ``{"jsonrpc": "2.0", "method": method, "params": <task input>,
    "id": 1}`` and a newline on stdin, then EOF. Its answer is the last stdout line that is
    a one-line JSON-RPC response with id 1 (or null); log lines around it are ignored.

        >>> provider = SubprocessProvider(command="python3 skill.py", memory_mb=256)

    Isolation: ``command`` (a list, or a string split with :func:`shlex.split`) never goes
    through a shell; the process runs under benchkit's supervisor (:mod:`benchkit._procs`),
    which ends every process it started — SIGTERM, then SIGKILL after ``kill_grace``
    seconds — when the call is cancelled (the Runner's cell timeout), at once when a pipe
    exceeds ``max_output_bytes``, and whatever is left when the process exits or benchkit
    dies (SIGKILL included; on Linux even processes that left its session). Only PATH,
    HOME, LANG, LC_ALL and TZ pass from the parent environment unless ``inherit_env=True``;
    ``env`` is added on top. ``memory_mb`` (RLIMIT_AS) and ``cpu_seconds`` (RLIMIT_CPU)
    are set by the supervisor on the command; runtimes that reserve a large address space
    up front (JVM, Go, Node) need ``memory_mb=None`` or a larger value.

    Paths: ``cwd`` is resolved against ``base_dir`` (the benchmark file's directory) and
    defaults to it; a relative executable containing ``/`` is resolved against the
    working directory, any other name is looked up on the child's PATH. A missing
    executable, or a relative path climbing out of its directory, is a ConfigError.
    """

    def __init__(
        self,
        *,
        command: Sequence[str] | str,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        memory_mb: int | None = 512,
        cpu_seconds: int | None = None,
        max_output_bytes: int = 5_000_000,
        method: str = "invoke",
        kill_grace: float = 0.3,
        base_dir: Path | None = None,
    ) -> None:
        _check_positive_int("memory_mb", memory_mb, optional=True, high=_limits.MAX_MEMORY_MB)
        _check_positive_int("cpu_seconds", cpu_seconds, optional=True, high=_limits.MAX_TIMEOUT_S)
        _check_positive_int("max_output_bytes", max_output_bytes, optional=False)
        if not isinstance(method, str) or not method:
            raise ConfigError(f"method must be a non-empty string, got {method!r}")
        if _limits.out_of_bounds(kill_grace, 0, _limits.MAX_WAIT_S) is not None:
            raise ConfigError(
                f"kill_grace must be a number >= 0 and <= {_limits.MAX_WAIT_S:,}, "
                f"got {kill_grace!r}"
            )
        args = _split_command(command)
        self.cwd = _resolve_cwd(cwd, base_dir)
        self.env = _child_env(env, inherit_env)
        self.executable = _resolve_executable(args[0], self.cwd, self.env.get("PATH"))
        self.args = (self.executable, *args[1:])
        self.memory_mb = memory_mb
        self.cpu_seconds = cpu_seconds
        self.max_output_bytes = max_output_bytes
        self.method = method
        self.kill_grace = float(kill_grace)
        self._rlimits = rlimits(memory_mb, cpu_seconds)

    def __repr__(self) -> str:
        return f"SubprocessProvider({list(self.args)!r})"

    async def invoke(self, request: Request) -> Response:
        transcript.record("request", f"JSON-RPC {self.method}", request.task.input)
        started = time.perf_counter()
        reply = await self._call(self.method, request.task.input, 1)
        transcript.record(
            "response", f"result of {self.method}", reply, duration=time.perf_counter() - started
        )
        return Response(output=reply.get("result"), raw=reply)

    async def _call(self, method: str, params: Any, request_id: int) -> dict[str, Any]:
        """Run the process once and return its JSON-RPC result reply (errors raise)."""
        message = {"jsonrpc": "2.0", "method": method, "params": params, "id": request_id}
        try:
            payload = (json.dumps(message) + "\n").encode()
        except (TypeError, ValueError) as exc:
            raise InvocationError(f"params are not JSON: {exc}", retryable=False) from exc
        code, stdout, stderr = await self._run(payload)
        if code != 0:
            if code < 0:
                how = f"process killed by signal {_signal_name(-code)}"
            else:
                how = f"process exited with code {code}"
            raise InvocationError(
                f"{how}: {_tail(stderr)}", retryable=True, exit_code=code, stderr=stderr
            )
        reply = _find_reply(stdout, request_id)
        if reply is None:
            raise InvocationError(
                f"no JSON-RPC response on stdout: {stdout[:_EXCERPT] or '(empty)'}",
                retryable=True,
                exit_code=0,
                stderr=stderr,
            )
        error = reply.get("error")
        if error is not None:
            detail = error if isinstance(error, dict) else {"message": error}
            raise InvocationError(
                f"JSON-RPC error {detail.get('code')}: {detail.get('message')}",
                retryable=False,
                exit_code=0,
                stderr=stderr,
            )
        return reply

    async def _run(self, payload: bytes) -> tuple[int, str, str]:
        """Start the process, feed ``payload``, drain both pipes; (exit code, stdout, stderr)."""
        try:
            process = await _procs.open_process(
                self.args,
                limits=self._rlimits,
                grace=self.kill_grace,
                cwd=self.cwd,
                env=otlp_env(self.env),
            )
        except OSError as exc:
            raise InvocationError(
                f"cannot start {self.executable}: {exc}", retryable=False
            ) from exc
        buffers = {name: bytearray() for name in _PIPES}
        overflow: list[str] = []
        try:
            async with anyio.create_task_group() as tg:

                async def drain(name: str, stream: anyio.abc.ByteReceiveStream) -> None:
                    sink = buffers[name]
                    async for chunk in stream:
                        if len(sink) + len(chunk) > self.max_output_bytes:
                            overflow.append(name)
                            _procs.kill(process.pid)
                            tg.cancel_scope.cancel()
                            return
                        sink += chunk

                assert process.stdin is not None  # all three are pipes
                assert process.stdout is not None
                assert process.stderr is not None
                tg.start_soon(_feed, process.stdin, payload)
                tg.start_soon(drain, _PIPES[0], process.stdout)
                tg.start_soon(drain, _PIPES[1], process.stderr)
                tg.start_soon(process.wait)
        finally:
            with anyio.CancelScope(shield=True):
                await _procs.stop(process, self.kill_grace)
                await process.aclose()
        if overflow:
            raise InvocationError(
                f"{overflow[0]} exceeded {self.max_output_bytes} bytes", retryable=False
            )
        code = process.returncode
        assert code is not None
        stdout, stderr = (buffers[name].decode("utf-8", errors="replace") for name in _PIPES)
        return code, stdout, stderr


async def _feed(stdin: anyio.abc.ByteSendStream, payload: bytes) -> None:
    """Write the request and close stdin; a process that never reads it is not an error."""
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stdin.send(payload)
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stdin.aclose()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _tail(text: str) -> str:
    """The end of stderr, where a traceback names its exception."""
    return text.strip()[-_EXCERPT:]


def _find_reply(stdout: str, request_id: int) -> dict[str, Any] | None:
    """The last one-line JSON-RPC response on ``stdout`` whose id is ``request_id`` or null."""
    for line in reversed(stdout.split("\n")):
        text = line.strip()
        if not (text.startswith("{") and text.endswith("}")):
            continue
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            continue
        if ("result" not in message and "error" not in message) or "id" not in message:
            continue
        reply_id = message["id"]
        if reply_id is None or (type(reply_id) is int and reply_id == request_id):
            return message
    return None


def rlimits(memory_mb: int | None, cpu_seconds: int | None) -> dict[str, int | None]:
    """The supervisor's limits (:func:`benchkit._procs.supervised`) of these options."""
    return {"as": None if memory_mb is None else memory_mb * 1024 * 1024, "cpu": cpu_seconds}


def _check_positive_int(
    name: str, value: object, *, optional: bool, high: int | None = None
) -> None:
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(
            f"{name} must be a positive integer{' or null' if optional else ''}, got {value!r}"
        )
    if high is not None and value > high:
        raise ConfigError(
            f"{name} must be <= {high:,}, got {value!r}",
            fix="docs/limits.md lists benchkit's bounds.",
        )


def _split_command(command: Sequence[str] | str) -> list[str]:
    if isinstance(command, str):
        try:
            args = shlex.split(command)
        except ValueError as exc:
            raise ConfigError(
                f"cannot split command {command!r}: {exc}", fix="balance the quotes."
            ) from exc
    else:
        args = list(command)
    if not args or not all(isinstance(arg, str) for arg in args):
        raise ConfigError(
            f"command must be a non-empty list of strings, got {command!r}",
            fix='write e.g. command: ["python3", "skill.py"], quoting numbers.',
        )
    return args


def _inside(path: str, anchor: Path) -> Path:
    """``anchor / path`` normalised; ConfigError when a relative path climbs out of anchor."""
    joined = Path(os.path.normpath(anchor / path))
    if not Path(path).is_absolute() and not joined.is_relative_to(os.path.normpath(anchor)):
        raise ConfigError(
            f"path {path!r} escapes {str(anchor)!r}",
            fix="keep relative paths inside the benchmark's directory, or use an absolute path.",
        )
    return joined


def _resolve_cwd(cwd: str | None, base_dir: Path | None) -> Path:
    anchor = Path(base_dir) if base_dir is not None else Path.cwd()
    path = anchor if cwd is None else _inside(cwd, anchor)
    if not path.is_dir():
        raise ConfigError(
            f"working directory {str(path)!r} does not exist",
            fix="give `cwd` relative to the benchmark file's directory.",
        )
    return path


def _child_env(extra: Mapping[str, str] | None, inherit: bool) -> dict[str, str]:
    if inherit:
        env = dict(os.environ)
    else:
        env = {key: os.environ[key] for key in _PASSED_ENV if key in os.environ}
    env.update(_FIXED_ENV)
    for key, value in (extra or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ConfigError(  # the value may be a secret: name only its type
                f"env entry {key!r} must be a string, got {type(value).__name__}",
                fix='quote the value, e.g. DEBUG: "1".',
            )
        env[key] = value
    _secrets.add_env(extra or {})  # a key given to the program is redacted everywhere
    return env


def _resolve_executable(name: str, cwd: Path, path: str | None) -> str:
    found = str(_inside(name, cwd)) if "/" in name else shutil.which(name, path=path)
    if found is None or not (os.path.isfile(found) and os.access(found, os.X_OK)):
        raise ConfigError(
            f"executable {name!r} not found or not executable",
            fix="check the path (relative to `cwd`), its execute bit, or the PATH given in `env`.",
        )
    return found
