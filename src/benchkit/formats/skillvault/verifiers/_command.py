"""skillvault's command verifier: run a shell command, pass on exit code 0.

The command runs as ``sh -lc <command>`` (skillvault's contract: a login shell), in the
benchmark file's directory, with stdin closed and the full parent environment plus eight
variables:

=================================  =========================================================
``SKILLVAULT_BENCH_TASK_ID``       the task id
``SKILLVAULT_BENCH_TASK_DOMAIN``   the task's domain ("" when it has none)
``SKILLVAULT_BENCH_CONDITION_ID``  the condition id
``SKILLVAULT_BENCH_BUNDLE_PATH``   the absolute bundle directory, or "" without one
``SKILLVAULT_BENCH_TIMEOUT_MS``    the timeout in milliseconds ("" without one)
``SKILLVAULT_BENCH_SEED``          the run's seed
``SKILLVAULT_BENCH_ATTEMPT``       the attempt number, from 1
``SKILLVAULT_BENCH_DETERMINISTIC`` "1" in deterministic mode, else "0"
=================================  =========================================================

Outcome, as in skillvault:

* exit code 0 passes, whatever the output says;
* a non-zero exit fails. The category comes from a JSON object printed on stdout — the
  whole trimmed stdout is tried first, then each non-empty line from the last up — whose
  ``error_category`` matches ``^[a-z0-9_]+$`` (so custom categories pass through), else
  ``verification_failed``. The message is the payload's ``message``, else the stderr
  excerpt, else "verifier exited with code <c>". A process killed by a signal reports exit
  code 1 and, lacking other text, "verifier exited with code null" (Node's wording);
* past the timeout **every process of the command** is killed (skillvault kills only
  ``sh`` and then waits for the pipes, so a child that keeps them open holds the run
  hostage): the result is ``timeout`` with exit code None and "verifier timed out after
  <n>ms". The command runs under benchkit's supervisor (:mod:`benchkit._procs`), so
  nothing it started outlives it — processes left running when ``sh`` exits, and all of
  them when benchkit dies;
* a command that cannot be started is an ``execution_error`` with exit code None
  ("spawn sh ENOENT").

Only the first 300 UTF-16 code units of stdout and of stderr are kept, as skillvault keeps
them; the payload is searched for in that much, and the excerpts are those units trimmed
(see :func:`excerpt`). Output past them is read and discarded, so a chatty command never
blocks on a full pipe.

**The model's output** (a benchkit addition): with ``output_file`` the command checks what
the model produced, and so runs in the sandbox (:mod:`benchkit.sandbox`) instead of the
benchmark's directory: a fresh directory holding the output's text in ``output_file`` and
the files it wrote or the patch it gave (as CodeForge's agent tasks,
:mod:`benchkit.evaluators._workspace`), no network, the sandbox's limits (the time limit
as above, else 60 s) and, instead of the parent environment, the eight variables above
plus ``SKILLVAULT_BENCH_OUTPUT_FILE`` (the file's name) and ``SKILLVAULT_BENCH_DIR`` (the
benchmark's directory, readable there for its scripts).
"""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import attrs

from benchkit import _procs, transcript
from benchkit._js import number_to_string, trim, utf16_len, utf16_prefix
from benchkit.errors import ConfigError
from benchkit.evaluators._workspace import PatchError, apply_patch, changed_files, safe_path
from benchkit.formats.skillvault.verifiers._bundle import bundle_dir
from benchkit.model import Response, Task
from benchkit.protocols import VerifyContext
from benchkit.results import Verdict

__all__ = ["CommandVerifier", "EXCERPT_LIMIT", "excerpt", "find_payload"]

_CATEGORY = re.compile(r"[a-z0-9_]+")
#: skillvault keeps this many UTF-16 code units of a command's stdout and of its stderr.
EXCERPT_LIMIT = 300
#: Bytes kept per stream: 300 UTF-16 code units never need more than 3 bytes each.
_KEEP_BYTES = EXCERPT_LIMIT * 3 + 4
#: After a timeout kill: how long to wait for the pipes of processes outside the group.
_PIPE_GRACE = 1.0
_ENV_PREFIX = "SKILLVAULT_BENCH_"
#: The time limit of a command run on the model's output when neither it nor the task sets one.
_SANDBOX_SECONDS = 60.0


def excerpt(text: str) -> str | None:
    """skillvault's excerpt: trimmed, None when empty, 297 units plus "..." when over 300.

    A surrogate pair across the cut is left out whole (see :func:`benchkit._js.utf16_prefix`).
    """
    trimmed = trim(text)
    if not trimmed:
        return None
    if utf16_len(trimmed) <= EXCERPT_LIMIT:
        return trimmed
    return utf16_prefix(trimmed, EXCERPT_LIMIT - 3) + "..."


def find_payload(stdout: str) -> dict[str, Any] | None:
    """The first JSON object among the trimmed stdout and its non-empty lines, last first."""
    trimmed = trim(stdout)
    if not trimmed:
        return None
    lines = [trim(line) for line in trimmed.split("\n")]
    for candidate in [trimmed, *reversed([line for line in lines if line])]:
        try:
            parsed = json.loads(candidate, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            continue
        if isinstance(parsed, dict):
            return parsed
    return None


def _reject_constant(name: str) -> Any:
    """JSON.parse has no NaN / Infinity; Python's json would accept them."""
    raise ValueError(f"{name} is not JSON")


@attrs.define
class _Capture:
    """The first bytes of one pipe, and whether it has reached end of file."""

    data: bytearray = attrs.Factory(bytearray)
    closed: anyio.Event = attrs.Factory(anyio.Event)

    async def drain(self, stream: anyio.abc.ByteReceiveStream | None) -> None:
        try:
            if stream is not None:
                async for chunk in stream:
                    room = _KEEP_BYTES - len(self.data)
                    if room > 0:
                        self.data += chunk[:room]
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self.closed.set()

    def text(self) -> str:
        """What skillvault keeps: the first 300 UTF-16 code units, decoded as UTF-8."""
        return utf16_prefix(self.data.decode("utf-8", errors="replace"), EXCERPT_LIMIT)


class CommandVerifier:
    """Runs ``command`` with ``sh -lc`` in the benchmark's directory; exit code 0 passes.

    ``timeout_ms`` bounds the command (every process of it is killed when it expires);
    without it the task's timeout applies, and with neither the command may run forever.

        >>> CommandVerifier(command="test -s answer.txt", timeout_ms=500)
        CommandVerifier(command='test -s answer.txt', timeout_ms=500)
    """

    name = "command"

    def __init__(
        self,
        *,
        command: str,
        timeout_ms: int | None = None,
        base_dir: Path | None = None,
        output_file: str | None = None,
    ) -> None:
        if not isinstance(command, str) or not trim(command):
            raise ConfigError(
                f"command verifier needs a non-empty command string, got {command!r}",
                fix="give the shell command to run, e.g. command: test -s answer.txt",
            )
        if timeout_ms is not None and (
            isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 1
        ):
            raise ConfigError(
                f"timeout_ms must be a positive integer, got {timeout_ms!r}",
                fix="give the limit in whole milliseconds, e.g. timeout_ms: 1000",
            )
        if output_file is not None and safe_path(output_file) is None:
            raise ConfigError(
                f"output_file {output_file!r} must be a relative file name",
                fix="give a plain name such as output_file: answer.txt",
            )
        self.command = command
        self.timeout_ms = timeout_ms
        self.base_dir = base_dir
        self.output_file = output_file
        self._sandbox: Any = None  # built on first use: only with output_file

    def __repr__(self) -> str:
        extra = f", output_file={self.output_file!r}" if self.output_file is not None else ""
        return f"CommandVerifier(command={self.command!r}, timeout_ms={self.timeout_ms!r}{extra})"

    async def aclose(self) -> None:
        """Stop the sandbox's fork server, if one was started (the Runner calls this)."""
        if self._sandbox is not None:
            await self._sandbox.aclose()

    def _limit_ms(self, context: VerifyContext) -> int | None:
        if self.timeout_ms is not None:
            return self.timeout_ms
        if context.timeout is not None:
            return max(1, round(context.timeout * 1000))
        return None

    def _environment(
        self, task: Task, context: VerifyContext, bundle: Path | None, limit_ms: int | None
    ) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                f"{_ENV_PREFIX}TASK_ID": task.id,
                f"{_ENV_PREFIX}TASK_DOMAIN": task.domain or "",
                f"{_ENV_PREFIX}CONDITION_ID": context.condition.id,
                f"{_ENV_PREFIX}BUNDLE_PATH": str(bundle) if bundle is not None else "",
                f"{_ENV_PREFIX}TIMEOUT_MS": number_to_string(limit_ms) if limit_ms else "",
                f"{_ENV_PREFIX}SEED": number_to_string(context.seed),
                f"{_ENV_PREFIX}ATTEMPT": str(context.attempt),
                f"{_ENV_PREFIX}DETERMINISTIC": "1" if context.deterministic else "0",
            }
        )
        return env

    async def verify(self, task: Task, response: Response, context: VerifyContext) -> Verdict:
        started = time.perf_counter_ns()
        bundle = bundle_dir(response, context)
        limit_ms = self._limit_ms(context)
        cwd = context.base_dir or self.base_dir or Path.cwd()
        if self.output_file is not None:
            verdict = await self._run_on_output(response, task, context, bundle, limit_ms, cwd)
        else:
            env = self._environment(task, context, bundle, limit_ms)
            verdict = await self._run(cwd, env, limit_ms)
        elapsed = 0 if context.deterministic else (time.perf_counter_ns() - started) // 1_000_000
        return attrs.evolve(verdict, duration_ms=elapsed)

    async def _run(self, cwd: Path, env: dict[str, str], limit_ms: int | None) -> Verdict:
        try:
            process = await _procs.open_process(
                ["sh", "-lc", self.command], stdin=subprocess.DEVNULL, cwd=cwd, env=env
            )
        except OSError as exc:
            code = errno.errorcode.get(exc.errno or 0, "UNKNOWN")
            return Verdict(
                name=self.name,
                passed=False,
                category="execution_error",
                message=f"spawn sh {code}",
            )
        out, err = _Capture(), _Capture()
        timeout_message: str | None = None
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(out.drain, process.stdout)
                tg.start_soon(err.drain, process.stderr)
                # skillvault settles on "close": the process has exited and both pipes hit
                # EOF. The time limit covers all of it, as skillvault's timer does.
                with anyio.move_on_after(None if limit_ms is None else limit_ms / 1000) as scope:
                    await process.wait()
                    await out.closed.wait()
                    await err.closed.wait()
                if scope.cancelled_caught:
                    timeout_message = (
                        f"verifier timed out after {number_to_string(limit_ms or 0)}ms"
                    )
                    _procs.kill(process.pid)
                    await process.wait()
                    with anyio.move_on_after(_PIPE_GRACE):
                        await out.closed.wait()
                        await err.closed.wait()
                tg.cancel_scope.cancel()  # pipes still held by an escaped process
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:  # cancelled from outside: leave nothing running
                    _procs.kill(process.pid)
                    await process.wait()
                await process.aclose()
        stdout, stderr = out.text(), err.text()
        verdict = self._verdict(process.returncode, stdout, stderr, timeout_message)
        transcript.record(
            "verifier",
            f"{self.name}: {'passed' if verdict.passed else verdict.category}",
            {
                "command": self.command,
                "exit_code": process.returncode,
                "stdout": stdout,
                "stderr": stderr,
                "message": verdict.message,
            },
        )
        return verdict

    async def _run_on_output(
        self,
        response: Response,
        task: Task,
        context: VerifyContext,
        bundle: Path | None,
        limit_ms: int | None,
        cwd: Path,
    ) -> Verdict:
        """The command in the sandbox, over the model's output (see the module docstring)."""
        from benchkit.sandbox import Limits, Sandbox

        assert self.output_file is not None
        output = response.output
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        written, patches = changed_files(output, task.input if isinstance(task.input, str) else "")
        files: dict[str, str] = {self.output_file: text}
        try:
            for name, content in written.items():
                clean = safe_path(name)
                if clean is None:
                    raise PatchError(f"the output writes {name!r}, outside its directory")
                files[clean] = content
            for patch in patches:
                files = apply_patch(files, patch)
        except PatchError as exc:
            return Verdict(
                name=self.name, passed=False, category="verification_failed", message=str(exc)
            )
        env = {
            key: value
            for key, value in self._environment(task, context, bundle, limit_ms).items()
            if key.startswith(_ENV_PREFIX)
        }
        env[f"{_ENV_PREFIX}OUTPUT_FILE"] = self.output_file
        env[f"{_ENV_PREFIX}DIR"] = str(cwd)
        seconds = limit_ms / 1000 if limit_ms is not None else _SANDBOX_SECONDS
        if self._sandbox is None:
            self._sandbox = Sandbox()
        done = await self._sandbox.run(
            ["sh", "-lc", self.command],
            files=files,
            env=env,
            readable=[str(cwd)],
            limits=Limits(cpu_seconds=seconds, wall_seconds=seconds),
        )
        stdout, stderr = (utf16_prefix(t, EXCERPT_LIMIT) for t in (done.stdout, done.stderr))
        if done.outcome == "sandbox_error":
            return Verdict(
                name=self.name, passed=False, category="execution_error", message=done.message
            )
        timeout = (
            f"verifier timed out after {number_to_string(limit_ms or seconds * 1000)}ms"
            if done.outcome == "timeout"
            else None
        )
        code = done.exit_code if done.signal is None else -1
        verdict = self._verdict(code, stdout, stderr, timeout)
        transcript.record(
            "verifier",
            f"{self.name}: {'passed' if verdict.passed else verdict.category}",
            {"command": self.command, "exit_code": code, "stdout": stdout, "stderr": stderr,
             "message": verdict.message, "sandbox": done.outcome},
        )  # fmt: skip
        return verdict

    def _verdict(
        self, returncode: int | None, stdout: str, stderr: str, timeout_message: str | None
    ) -> Verdict:
        stdout_excerpt, stderr_excerpt = excerpt(stdout), excerpt(stderr)
        if timeout_message is not None:
            return Verdict(
                name=self.name,
                passed=False,
                category="timeout",
                message=timeout_message,
                stdout_excerpt=stdout_excerpt,
                stderr_excerpt=stderr_excerpt,
            )
        if returncode == 0:
            return Verdict(
                name=self.name,
                passed=True,
                exit_code=0,
                stdout_excerpt=stdout_excerpt,
                stderr_excerpt=stderr_excerpt,
            )
        # Node reports a signal death as code null; skillvault records exit code 1 for it.
        signalled = returncode is None or returncode < 0
        payload = find_payload(stdout) or {}
        category = payload.get("error_category")
        message = payload.get("message")
        if not isinstance(message, str):
            message = stderr_excerpt or (
                f"verifier exited with code {'null' if signalled else returncode}"
            )
        return Verdict(
            name=self.name,
            passed=False,
            category=category
            if isinstance(category, str) and _CATEGORY.fullmatch(category)
            else "verification_failed",
            message=message,
            exit_code=1 if signalled else returncode,
            stdout_excerpt=stdout_excerpt,
            stderr_excerpt=stderr_excerpt,
        )
