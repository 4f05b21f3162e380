"""The command verifier: real `sh -lc` processes, skillvault's outcomes, the group kill."""

from __future__ import annotations

import functools
import json
import shlex
import sys
import time
from pathlib import Path

import anyio
import pytest

import benchkit
from benchkit.errors import ConfigError
from benchkit.formats import skillvault
from benchkit.formats.skillvault.report import build_run
from benchkit.formats.skillvault.verifiers import CommandVerifier
from benchkit.formats.skillvault.verifiers._command import find_payload
from benchkit.model import Condition, ProviderSpec, Response, Task
from benchkit.protocols import VerifyContext
from benchkit.results import Verdict

pytestmark = pytest.mark.anyio

TASK = Task("task-1", domain="checks")
PY = shlex.quote(sys.executable)


def context(
    base_dir: Path,
    *,
    bundle: Path | None = None,
    attempt: int = 1,
    deterministic: bool = True,
) -> VerifyContext:
    return VerifyContext(
        condition=Condition("curated_skill", ProviderSpec("bundle"), bundle=bundle),
        attempt=attempt,
        seed=42,
        deterministic=deterministic,
        base_dir=base_dir,
    )


async def run(command: str, base_dir: Path, *, timeout_ms: int = 5000, **kw: object) -> Verdict:
    verifier = CommandVerifier(command=command, timeout_ms=timeout_ms)
    return await verifier.verify(TASK, Response(), context(base_dir, **kw))  # type: ignore[arg-type]


def gone(pid: int) -> bool:
    """True once ``pid`` no longer runs (a zombie still answers kill(0) but is dead)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True


async def wait_gone(pid: int) -> bool:
    for _ in range(100):  # up to 5 s for the reaper
        if gone(pid):
            return True
        await anyio.sleep(0.05)
    return False


async def test_the_eight_variables_cwd_and_parent_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHKIT_TEST_PARENT", "inherited")
    names = [
        "TASK_ID",
        "TASK_DOMAIN",
        "CONDITION_ID",
        "BUNDLE_PATH",
        "TIMEOUT_MS",
        "SEED",
        "ATTEMPT",
        "DETERMINISTIC",
    ]
    fields = "|".join(f"${{SKILLVAULT_BENCH_{n}}}" for n in names)
    verdict = await run(
        f'echo "{fields}|$(pwd)|$BENCHKIT_TEST_PARENT"',
        tmp_path,
        timeout_ms=1234,
        bundle=tmp_path / "b",
        attempt=2,
    )
    assert verdict.passed and verdict.exit_code == 0 and verdict.category == "none"
    assert verdict.stdout_excerpt == (
        f"task-1|checks|curated_skill|{tmp_path / 'b'}|1234|42|2|1|{tmp_path}|inherited"
    )
    verdict = await run('echo "[$SKILLVAULT_BENCH_BUNDLE_PATH]"', tmp_path, deterministic=False)
    assert verdict.stdout_excerpt == "[]"  # no bundle: an empty string


async def test_stdin_is_closed(tmp_path: Path) -> None:
    verdict = await run("cat; echo done", tmp_path, timeout_ms=3000)
    assert (verdict.passed, verdict.stdout_excerpt) == (True, "done")


async def test_exit_zero_passes_whatever_the_output_says(tmp_path: Path) -> None:
    payload = json.dumps({"error_category": "bad_output", "message": "no"})
    verdict = await run(f"echo '{payload}'; echo oops >&2", tmp_path)
    assert (verdict.passed, verdict.category, verdict.message) == (True, "none", None)
    assert verdict.stderr_excerpt == "oops"


async def test_a_payload_sets_category_and_message(tmp_path: Path) -> None:
    payload = json.dumps({"error_category": "bad_output", "message": "answer was empty"})
    verdict = await run(f"echo log line; echo '{payload}'; echo trace >&2; exit 3", tmp_path)
    assert (verdict.passed, verdict.exit_code) == (False, 3)
    assert (verdict.category, verdict.message) == ("bad_output", "answer was empty")
    assert verdict.stdout_excerpt == f"log line\n{payload}"
    assert verdict.stderr_excerpt == "trace"


async def test_a_category_must_be_lowercase_words(tmp_path: Path) -> None:
    payload = json.dumps({"error_category": "Bad-Output", "message": "m"})
    verdict = await run(f"echo '{payload}'; exit 1", tmp_path)
    assert (verdict.category, verdict.message) == ("verification_failed", "m")


async def test_message_falls_back_to_stderr_then_to_the_exit_code(tmp_path: Path) -> None:
    verdict = await run("echo '{\"message\": 5}'; echo '  it broke  ' >&2; exit 4", tmp_path)
    assert (verdict.category, verdict.message, verdict.exit_code) == (
        "verification_failed",
        "it broke",
        4,
    )
    verdict = await run("exit 7", tmp_path)
    assert (verdict.message, verdict.exit_code) == ("verifier exited with code 7", 7)
    assert verdict.stdout_excerpt is None and verdict.stderr_excerpt is None


async def test_a_signal_death_is_exit_code_1_and_code_null(tmp_path: Path) -> None:
    verdict = await run("kill -9 $$", tmp_path)
    assert (verdict.passed, verdict.exit_code, verdict.message) == (
        False,
        1,
        "verifier exited with code null",
    )


def test_payload_search_order() -> None:
    assert find_payload('{"a": 1,\n "b": 2}') == {"a": 1, "b": 2}  # the whole stdout first
    assert find_payload('{"n": 1}\n{"n": 2}\n  \nplain') == {"n": 2}  # then lines, last first
    assert find_payload('[1]\n"s"\n{"x": NaN}') is None  # objects only; no NaN in JSON
    assert find_payload("   ") is None


async def test_output_keeps_the_first_300_utf16_units(tmp_path: Path) -> None:
    verdict = await run(f"{PY} -c \"print('  ' + 'x' * 1000)\"", tmp_path)
    assert verdict.stdout_excerpt == "x" * 298  # 300 units kept, then trimmed
    # 299 units and an emoji across the cut: skillvault would keep half of it
    verdict = await run(f"{PY} -c \"print('y' * 299 + '\\U0001f600' * 3)\"", tmp_path)
    assert verdict.stdout_excerpt == "y" * 299
    # a payload past the first 300 units is not seen, as in skillvault
    late = json.dumps({"error_category": "late"})
    verdict = await run(f"{PY} -c \"print('z' * 400)\"; echo '{late}'; exit 1", tmp_path)
    assert verdict.category == "verification_failed"


async def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    # The background child keeps stdout open: killing only `sh` (skillvault) would wait 30 s.
    command = f"echo started; sleep 30 & echo $! > {pid_file}; wait"
    started = time.monotonic()
    # 2 s: time for the supervisor and sh to start on a busy machine, far from the 30 s.
    verdict = await run(command, tmp_path, timeout_ms=2000, deterministic=False)
    assert time.monotonic() - started < 15  # liveness: killed, not waited for
    assert (verdict.passed, verdict.category, verdict.exit_code) == (False, "timeout", None)
    assert verdict.message == "verifier timed out after 2000ms"
    assert verdict.stdout_excerpt == "started"
    assert await wait_gone(int(pid_file.read_text()))


async def test_a_process_that_escapes_the_group_cannot_hold_the_run(tmp_path: Path) -> None:
    """A child that starts a session of its own (out of reach of a process-group kill) is
    still killed: the supervisor finds every process below it (#42)."""
    pid_file = tmp_path / "escaped.pid"
    escape = (
        f'{PY} -c "import os, time; os.setsid(); '
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(30)\""
    )
    started = time.monotonic()
    wait = f"while [ ! -s {pid_file} ]; do sleep 0.05; done"
    verdict = await run(f"{escape} & {wait}; sleep 30", tmp_path, timeout_ms=3000)
    assert time.monotonic() - started < 15
    assert verdict.category == "timeout"
    assert pid_file.read_text()
    assert await wait_gone(int(pid_file.read_text()))


async def test_cancellation_kills_the_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    command = f"sleep 30 & echo $! > {pid_file}; wait"
    async with anyio.create_task_group() as group:
        group.start_soon(functools.partial(run, command, tmp_path, timeout_ms=60_000))
        with anyio.fail_after(30):
            while not (pid_file.exists() and pid_file.read_text()):
                await anyio.sleep(0.05)  # cancelled once the child runs
        group.cancel_scope.cancel()
    assert await wait_gone(int(pid_file.read_text()))


async def test_a_command_that_cannot_start_is_an_execution_error(tmp_path: Path) -> None:
    verdict = await run("true", tmp_path / "missing-directory")
    assert (verdict.passed, verdict.category, verdict.exit_code, verdict.message) == (
        False,
        "execution_error",
        None,
        "spawn sh ENOENT",
    )


async def test_without_timeout_ms_the_task_timeout_applies(tmp_path: Path) -> None:
    verifier = CommandVerifier(command="sleep 10")
    ctx = VerifyContext(
        condition=Condition("c", ProviderSpec("bundle")), base_dir=tmp_path, timeout=0.2
    )
    verdict = await verifier.verify(TASK, Response(), ctx)
    assert (verdict.category, verdict.message) == ("timeout", "verifier timed out after 200ms")


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        CommandVerifier(command=" ")
    with pytest.raises(ConfigError):
        CommandVerifier(command="true", timeout_ms=0)


# --------------------------------------------------------------------------- through a run


def suite_config(tmp_path: Path, command: str, *, retries: int, timeout_ms: int = 5000) -> Path:
    (tmp_path / "bundle").mkdir(exist_ok=True)
    config = {
        "conditions": [
            {"id": "no_skill"},
            {"id": "curated_skill", "bundle_path": "./bundle"},
            {"id": "self_generated_skill", "bundle_path": "./bundle"},
        ],
        "execution": {"retries": retries, "deterministic": True},
        "tasks": [
            {"id": "t", "domain": "d", "timeout_ms": timeout_ms, "verifier": {"command": command}}
        ],
    }
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(config))
    return path


async def run_suite(path: Path) -> list[dict[str, object]]:
    loaded = skillvault.load_config(path)
    result = await benchkit.arun(skillvault.to_suite(loaded))
    rows: list[dict[str, object]] = build_run(loaded, result, git_commit=None)["results"]
    return rows


async def test_a_retry_that_passes_on_attempt_2(tmp_path: Path) -> None:
    command = 'test "$SKILLVAULT_BENCH_ATTEMPT" = 2'
    rows = await run_suite(suite_config(tmp_path, command, retries=1))
    assert [(r["passed"], r["attempts"], r["error_category"]) for r in rows] == [
        (True, 2, "none")
    ] * 3
    rows = await run_suite(suite_config(tmp_path, command, retries=0))
    assert [(r["passed"], r["attempts"]) for r in rows] == [(False, 1)] * 3


async def test_a_failure_reports_the_last_attempt(tmp_path: Path) -> None:
    command = 'echo "attempt $SKILLVAULT_BENCH_ATTEMPT" >&2; exit $SKILLVAULT_BENCH_ATTEMPT'
    rows = await run_suite(suite_config(tmp_path, command, retries=2))
    assert rows[0] == {
        "condition_id": "no_skill",
        "task_id": "t",
        "passed": False,
        "duration_ms": 0,
        "attempts": 3,
        "exit_code": 3,
        "error_category": "verification_failed",
        "error_message": "attempt 3",
        "stderr_excerpt": "attempt 3",
    }


async def test_timeouts_in_a_run(tmp_path: Path) -> None:
    rows = await run_suite(suite_config(tmp_path, "sleep 10", retries=0, timeout_ms=200))
    assert {(r["error_category"], r["exit_code"], r["error_message"]) for r in rows} == {
        ("timeout", None, "verifier timed out after 200ms")
    }


async def test_a_payload_category_none_stays_none_in_the_skillvault_run(tmp_path: Path) -> None:
    payload = json.dumps({"error_category": "none", "message": "odd but allowed"})
    path = suite_config(tmp_path, f"echo '{payload}'; exit 1", retries=0)
    loaded = skillvault.load_config(path)
    result = await benchkit.arun(skillvault.to_suite(loaded))
    run = build_run(loaded, result, git_commit=None)
    first = run["results"][0]
    assert (first["passed"], first["error_category"], first["error_message"]) == (
        False,
        "none",
        "odd but allowed",
    )
    assert run["error_breakdown"]["no_skill"] == {}  # skillvault skips "none"
    assert run["aggregates"]["no_skill"]["fail_count"] == 1
    # benchkit's own result still calls the cell a failed verification
    assert result.cells[0].error_category == "verification_failed"
