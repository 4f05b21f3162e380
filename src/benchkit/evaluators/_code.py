"""``code_tests``: run the code a model wrote against the task's tests, in the sandbox.

The score is 1 when the tests pass and 0 when they do not, with the reason — the failing
assertion, the exception and its line, the timeout, the memory limit — in ``reason`` and
``details["outcome"]`` (one of :data:`benchkit.sandbox.OUTCOMES`). A sandbox that could not
run the program at all is an error score (``value=None``), never a silent 0. With epochs
and ``scoring: {method: pass_at_k, k: K}`` the report gives pass@1 (the pass rate) and the
unbiased pass@K, the task as the unit.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from benchkit import _limits
from benchkit.errors import ConfigError
from benchkit.evaluators._workspace import PatchError, apply_patch, changed_files, safe_path
from benchkit.results import Score
from benchkit.sandbox import Execution, Limits, Sandbox

if TYPE_CHECKING:
    from benchkit.model import Response, Task

__all__ = ["CodeTestsEvaluator", "extract_code"]

_NAME = "code_tests"
_DRIVER = ".benchkit_driver.py"
_RESULT = ".benchkit_result.json"
_PYTHON_FILE = "solution.py"
_EXCERPT = 2_000
_RAW_KEPT = 20_000
_PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3"})
#: An opening fence (``` or ~~~, three or more) with its info string, at a line's start.
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\n`]*)$", re.MULTILINE)


def extract_code(reply: str, *, language: str = "python", entry_point: str | None = None) -> str:
    """The program in a model's reply, as code harnesses take it from chat models.

    A reply with fenced blocks gives the block to run: among the blocks tagged with the
    language (or untagged), the first that defines ``entry_point``, else the first of
    them, else the first block of any tag. A reply cut off inside a block (an opening
    fence with no closing one) gives what follows the fence. A reply without fences is
    the code itself (a completion).

        >>> extract_code("Sure:\\n```python\\ndef f():\\n    return 1\\n```\\nDone.")
        'def f():\\n    return 1\\n'
    """
    blocks: list[tuple[str, str]] = []
    position = 0
    while True:
        opening = _FENCE.search(reply, position)
        if opening is None:
            break
        fence, info = opening.group(1), opening.group(2).strip().lower()
        start = opening.end() + 1
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        end = closing.search(reply, start)
        body = reply[start : end.start() if end else len(reply)]
        blocks.append((info.split()[0] if info else "", body))
        if end is None:
            break
        position = end.end()
    if not blocks:
        return reply
    tags = _PYTHON_TAGS if language == "python" else {"", language.lower()}
    wanted = [body for tag, body in blocks if tag in tags]
    if entry_point:
        defining = re.compile(rf"^\s*(async\s+)?def\s+{re.escape(entry_point)}\s*\(", re.M)
        for body in wanted:
            if defining.search(body):
                return body
    return wanted[0] if wanted else blocks[0][1]


def _number(name: str, value: object, high: float, *, integer: bool = False) -> None:
    problem = _limits.out_of_bounds(value, 0, high, above=True, integer=integer)
    if problem is not None:
        raise ConfigError(
            f"code_tests option {name!r} {problem}",
            fix="docs/code.md lists the options of code_tests and their bounds.",
        )


class CodeTestsEvaluator:
    """Runs the model's code with the task's tests in the sandbox; passes when they pass.

    Where the parts come from, per task: the **code** is the response's output (its code
    block when it has fences, unless ``extract=False``); the **tests** are the ``tests``
    option, else ``task.metadata["tests"]``, else ``task.expected``; the **entry point**
    is the ``entry_point`` option, else ``task.metadata["entry_point"]``; with
    ``prompt_prefix=True`` the task's ``metadata["prompt"]`` goes before the code
    (HumanEval's protocol).

    ``mode: workspace`` runs an agent task instead: the task's ``initial_files`` (from
    ``metadata``) with the files the response writes or the patch it gives applied
    (:mod:`benchkit.evaluators._workspace`), then ``command`` or the task's
    ``metadata["test_command"]`` (a string runs with ``sh -c``); exit status 0 passes.

    Python (``language: python``) runs ``prefix + code + "\\n" + tests + "\\n" +
    "check(entry_point)"`` as HumanEval's harness does (one ``exec`` in fresh globals,
    ``timeout`` seconds on a timer). Another language gives a ``command`` template run in
    the program's directory: ``{file}`` is the program file (``file``, default
    ``solution.<language>``), ``{python}`` benchkit's interpreter; a string runs with
    ``sh -c``. Its exit status decides.

    ``timeout`` (default 3 s, HumanEval's) bounds the tests; the sandbox's limits default
    to ``cpu_seconds = timeout + 2``, ``wall_seconds = timeout + 5``, ``memory_mb = 1024``,
    ``processes = 64``, ``open_files = 256``, ``file_size_mb = 64``, ``output_bytes =
    1_000_000``. At most ``concurrency`` programs run at once (default: the CPU count).
    ``isolation`` and ``require_isolation`` are the :class:`~benchkit.sandbox.Sandbox`'s.

    .. versionadded:: 0.2.0
    """

    def __init__(
        self,
        *,
        name: str = _NAME,
        language: str = "python",
        mode: str = "program",
        tests: str | None = None,
        entry_point: str | None = None,
        prompt_prefix: bool = False,
        command: str | Sequence[str] | None = None,
        file: str | None = None,
        extract: bool = True,
        timeout: float = 3.0,
        cpu_seconds: float | None = None,
        wall_seconds: float | None = None,
        memory_mb: int | None = 1024,
        processes: int | None = 64,
        open_files: int | None = 256,
        file_size_mb: int | None = 64,
        output_bytes: int = 1_000_000,
        concurrency: int | None = None,
        isolation: str = "auto",
        require_isolation: bool | None = None,
    ) -> None:
        if not isinstance(language, str) or not re.fullmatch(r"[A-Za-z0-9_+#.-]+", language):
            raise ConfigError(
                f"code_tests language must be a name such as python, got {language!r}",
                fix="write e.g. language: python (other languages need a command).",
            )
        self.language = language.lower()
        if mode not in ("program", "workspace"):
            raise ConfigError(
                f"code_tests mode must be program or workspace, got {mode!r}",
                fix="program runs code + tests; workspace runs a task's test_command "
                "over its initial_files and the model's files (docs/code.md).",
            )
        self.mode = mode
        if not isinstance(name, str) or not name:
            raise ConfigError(f"code_tests name must be a string, got {name!r}", fix="e.g. tests")
        self.name = name
        if self.language != "python" and command is None and mode == "program":
            raise ConfigError(
                f"code_tests in {language!r} needs a command template",
                fix='give command, e.g. command: "node {file}" (docs/code.md).',
            )
        if command is not None and (
            not command or not all(isinstance(part, str) for part in _command_parts(command))
        ):
            raise ConfigError(
                f"code_tests command must be a string or a list of strings, got {command!r}",
                fix='write e.g. command: "node {file}" or command: [node, "{file}"].',
            )
        for option, value in (("tests", tests), ("entry_point", entry_point), ("file", file)):
            if value is not None and not isinstance(value, str):
                raise ConfigError(
                    f"code_tests option {option!r} must be a string, got {value!r}",
                    fix=f"quote the {option}.",
                )
        if file is not None and (file.startswith("/") or ".." in file.split("/") or not file):
            raise ConfigError(
                f"code_tests file {file!r} must be a relative name inside the sandbox",
                fix="give a plain file name such as main.js.",
            )
        _number("timeout", timeout, _limits.MAX_TIMEOUT_S)
        if concurrency is not None:
            _number("concurrency", concurrency, _limits.MAX_CONCURRENCY, integer=True)
        self.tests = tests
        self.entry_point = entry_point
        self.prompt_prefix = bool(prompt_prefix)
        self.command = command
        self.file = file or (_PYTHON_FILE if self.language == "python" else f"solution.{language}")
        self.extract = bool(extract)
        self.timeout = float(timeout)
        self.limits = Limits(
            cpu_seconds=cpu_seconds if cpu_seconds is not None else self.timeout + 2,
            wall_seconds=wall_seconds if wall_seconds is not None else self.timeout + 5,
            memory_mb=memory_mb,
            processes=processes,
            open_files=open_files,
            file_size_mb=file_size_mb,
            output_bytes=output_bytes,
        )
        self.sandbox = Sandbox(
            self.limits,
            isolation=isolation,  # type: ignore[arg-type]  # checked by Sandbox
            require_isolation=require_isolation,
        )
        if self.sandbox.require_isolation:
            self.sandbox.isolation()  # refused now, before the first cell
        self.concurrency = int(concurrency or os.cpu_count() or 1)
        self._slots: anyio.Semaphore | None = None

    def __repr__(self) -> str:
        return f"CodeTestsEvaluator(language={self.language!r}, timeout={self.timeout:g})"

    async def aclose(self) -> None:
        """Stop the sandbox's fork server (the Runner calls this after the run)."""
        await self.sandbox.aclose()

    async def evaluate(self, task: Task, response: Response) -> Score:
        if self.mode == "workspace":
            return await self._workspace(task, response)
        output = response.output
        if not isinstance(output, str):
            return Score(
                self.name,
                None,
                False,
                error=f"the output is {type(output).__name__}, not code text",
            )
        metadata = task.metadata or {}
        entry_point = self.entry_point or _text(metadata.get("entry_point"))
        tests = self.tests if self.tests is not None else _text(metadata.get("tests"))
        if tests is None:
            tests = _text(task.expected)
        if tests is None:
            return Score(
                self.name,
                None,
                False,
                error="no tests: give the tests option, task.metadata.tests or task.expected",
            )
        code = (
            extract_code(output, language=self.language, entry_point=entry_point)
            if self.extract
            else output
        )
        prefix = _text(metadata.get("prompt")) if self.prompt_prefix else None
        program = (prefix or "") + code + "\n" + tests + "\n"
        if entry_point and self.language == "python":
            program += f"check({entry_point})\n"
        if self._slots is None:
            self._slots = anyio.Semaphore(self.concurrency)
        async with self._slots:
            execution = await self._execute(program)
        return _score(self.name, execution, code, output, harness=self.language == "python")

    async def _workspace(self, task: Task, response: Response) -> Score:
        """An agent task: initial files, the model's files or patch, the test command."""
        metadata = task.metadata or {}
        command = self.command if self.command is not None else metadata.get("test_command")
        if not isinstance(command, (str, list)) or not command:
            return Score(
                self.name,
                None,
                False,
                error="no test command: give command or task.metadata.test_command",
            )
        initial = metadata.get("initial_files") or {}
        if not isinstance(initial, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in initial.items()
        ):
            return Score(self.name, None, False, error="initial_files must map file names to text")
        prompt = task.input if isinstance(task.input, str) else json.dumps(task.input)
        written, patches = changed_files(response.output, prompt)
        files = dict(initial)
        details: dict[str, Any] = {"written": sorted(written), "patches": len(patches)}
        try:
            for name, text in written.items():
                clean = safe_path(name)
                if clean is None:
                    raise PatchError(f"the response writes {name!r}, which leaves the workspace")
                files[clean] = text
            for patch in patches:
                files = apply_patch(files, patch)
        except PatchError as exc:
            details["outcome"] = "failed"
            return Score(self.name, 0.0, False, reason=str(exc), details=details)
        if not written and not patches:
            details["outcome"] = "failed"
            reason = "the response names no file and gives no patch to apply"
            return Score(self.name, 0.0, False, reason=reason, details=details)
        python = self.sandbox.python
        parts = [p.replace("{python}", python) for p in _command_parts(command)]
        argv = ["sh", "-c", parts[0]] if isinstance(command, str) else parts
        limits = attrs.evolve(self.limits, cpu_seconds=self.timeout, wall_seconds=self.timeout)
        if self._slots is None:
            self._slots = anyio.Semaphore(self.concurrency)
        async with self._slots:
            execution = await self.sandbox.run(argv, files=files, limits=limits)
        score = _score(self.name, execution, "", "", harness=False)
        if execution.outcome == "failed":
            last = (execution.stderr.strip() or execution.stdout.strip()).split("\n")[-1]
            reason = f"the test command {execution.message}" + (f": {last[:300]}" if last else "")
            score = attrs.evolve(score, reason=reason)
        elif execution.outcome == "passed":
            score = attrs.evolve(score, reason="the test command passed")
        return attrs.evolve(score, details={**score.details, **details})

    async def _execute(self, program: str) -> Execution:
        if self.language == "python":
            files = {self.file: program, _DRIVER: _driver_source()}
            argv = [self.sandbox.python, "-I", _DRIVER, self.file, _RESULT, f"{self.timeout!r}"]
            return await self.sandbox.run(argv, files=files, collect=[_RESULT])
        assert self.command is not None
        python = self.sandbox.python
        parts = [p.replace("{file}", self.file).replace("{python}", python) for p in
                 _command_parts(self.command)]  # fmt: skip
        argv = ["sh", "-c", parts[0]] if isinstance(self.command, str) else parts
        limits = attrs.evolve(self.limits, cpu_seconds=self.timeout, wall_seconds=self.timeout)
        return await self.sandbox.run(argv, files={self.file: program}, limits=limits)


@functools.cache
def _driver_source() -> str:
    """The harness script (:mod:`benchkit.evaluators._code_driver`), read once."""
    return resources.files("benchkit.evaluators").joinpath("_code_driver.py").read_text("utf-8")


def _command_parts(command: str | Sequence[str]) -> list[str]:
    return [command] if isinstance(command, str) else list(command)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _score(name: str, execution: Execution, code: str, raw: str, *, harness: bool) -> Score:
    """The score of one execution: the driver's result when it ran (``harness``)."""
    details: dict[str, Any] = {
        "outcome": execution.outcome,
        "code": code[:_RAW_KEPT],
        "exit_code": execution.exit_code,
        "stdout": execution.stdout[:_EXCERPT],
        "stderr": execution.stderr[-_EXCERPT:],
        "duration_ms": round(execution.duration_ms, 1),
        "isolation": execution.isolation.mode if execution.isolation else None,
    }
    if code != raw:
        details["raw"] = raw[:_RAW_KEPT]
    outcome: str = execution.outcome
    reason = execution.message
    found = execution.files.get(_RESULT)
    if found is not None:
        outcome, reason, extra = _driver_result(found, execution)
        details.update(extra)
    elif harness and outcome == "passed":  # exit status 0, yet the harness never finished
        outcome, reason = "failed", "the program ended the process before its tests finished"
    details["outcome"] = outcome
    if outcome == "sandbox_error":
        return Score(name, None, False, reason=reason, details=details, error=reason)
    passed = outcome == "passed"
    return Score(name, 1.0 if passed else 0.0, passed, reason=reason, details=details)


def _driver_result(raw: bytes, execution: Execution) -> tuple[str, str, dict[str, Any]]:
    try:
        found = json.loads(raw)
        outcome = str(found["outcome"])
    except (ValueError, KeyError, TypeError):
        return "failed", "the program overwrote the harness's result", {}
    if outcome == "passed":
        if execution.outcome != "passed":  # it passed, then died on the way out
            return execution.outcome, execution.message, {}
        return "passed", "the tests passed", {}
    if outcome == "timeout":
        return "timeout", str(found.get("message", "timed out")), {}
    exception = str(found.get("exception", "Exception"))
    message = str(found.get("message", ""))
    line, source = found.get("line"), str(found.get("source") or "")
    reason = f"{exception}: {message}" if message else exception
    if source:
        reason += f" (line {line}: {source})"
    extra = {"exception": exception, "message": message, "line": line}
    return ("memory" if outcome == "memory" else "failed"), reason, extra
