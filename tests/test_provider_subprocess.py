"""Tests for SubprocessProvider: real skill processes from tests/fixtures/skills."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchkit.errors import ConfigError, InvocationError
from benchkit.model import Condition, ProviderSpec, Request, Task
from benchkit.providers._subprocess import SubprocessProvider
from benchkit.registry import default_registries

pytestmark = pytest.mark.anyio

SKILLS = Path(__file__).parent / "fixtures" / "skills"
PY = sys.executable


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def skill(name: str, *args: str, **options: Any) -> SubprocessProvider:
    return SubprocessProvider(command=[PY, str(SKILLS / f"{name}.py"), *args], **options)


def request_for(value: Any) -> Request:
    return Request(
        task=Task(id="t1", input=value),
        condition=Condition("c1", provider=ProviderSpec("subprocess")),
    )


def printer(stdout: str, code: int = 0, stderr: str = "") -> SubprocessProvider:
    return skill("printer", stdout, str(code), stderr)


def reply(**fields: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", **fields})


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie awaiting an uninterested reaper counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


async def wait_dead(*pids: int) -> list[int]:
    """The pids still alive after up to 3 s of polling."""
    with anyio.move_on_after(3):
        while any(alive(pid) for pid in pids):
            await anyio.sleep(0.02)
    return [pid for pid in pids if alive(pid)]


async def test_echo_returns_params_and_the_raw_reply() -> None:
    response = await skill("echo").invoke(request_for({"q": [1, 2, "three"]}))
    assert response.output == {"q": [1, 2, "three"]}
    assert response.raw == {"jsonrpc": "2.0", "result": {"q": [1, 2, "three"]}, "id": 1}


async def test_request_envelope_and_custom_method() -> None:
    response = await skill("introspect", method="solve").invoke(request_for("hi"))
    assert response.output["request"] == {
        "jsonrpc": "2.0",
        "method": "solve",
        "params": "hi",
        "id": 1,
    }


async def test_log_lines_around_the_reply_are_ignored() -> None:
    stdout = "\n".join(
        [
            "starting up",
            '{"level": "info", "msg": "loaded"}',
            reply(result="stale", id=2),
            "  " + reply(result="answer", id=1) + "  ",
            '{"event": "done"}',
            "bye",
        ]
    )
    response = await printer(stdout).invoke(request_for(None))
    assert response.output == "answer"


async def test_a_null_id_is_accepted() -> None:
    response = await printer(reply(result=5, id=None) + "\n").invoke(request_for(None))
    assert response.output == 5


@pytest.mark.parametrize(
    "stdout",
    [
        "hello there, not json {",
        json.dumps({"jsonrpc": "2.0", "result": 1, "id": 1}, indent=2),
        reply(result=1, id=2),
        reply(result=1, id=True),
        reply(result=1),
        json.dumps({"result": 1, "id": 1}),
        reply(id=1),
        "",
    ],
    ids=[
        "garbage",
        "multiline",
        "wrong-id",
        "bool-id",
        "no-id",
        "no-jsonrpc",
        "no-result",
        "empty",
    ],
)
async def test_no_json_rpc_reply_is_a_retryable_error(stdout: str) -> None:
    with pytest.raises(InvocationError) as info:
        await printer(stdout).invoke(request_for(None))
    assert info.value.message.startswith("no JSON-RPC response on stdout: ")
    assert info.value.message.endswith(stdout[:200] or "(empty)")
    assert info.value.retryable
    assert info.value.category == "execution_error"


async def test_json_rpc_error_reply_is_not_retryable() -> None:
    stdout = reply(error={"code": -32000, "message": "cannot do that"}, id=1)
    with pytest.raises(InvocationError) as info:
        await printer(stdout).invoke(request_for(None))
    assert info.value.message == "JSON-RPC error -32000: cannot do that"
    assert not info.value.retryable


async def test_nonzero_exit_reports_code_and_stderr() -> None:
    stderr = "x" * 500 + "\nValueError: boom"
    with pytest.raises(InvocationError) as info:
        await printer(reply(result=1, id=1), 3, stderr).invoke(request_for(None))
    exc = info.value
    assert exc.message.startswith("process exited with code 3: ")
    assert exc.message.endswith("ValueError: boom")
    assert len(exc.message) < 250
    assert exc.exit_code == 3
    assert exc.stderr == stderr
    assert exc.category == "execution_error"


async def test_a_process_that_ignores_stdin_still_answers() -> None:
    code = f"print({reply(result=7, id=1)!r})"
    provider = SubprocessProvider(command=[PY, "-c", code])
    response = await provider.invoke(request_for("x" * 1_000_000))
    assert response.output == 7


@pytest.mark.parametrize(("stream", "cap"), [("stdout", 5_000_000), ("stderr", 100_000)])
async def test_output_over_the_cap_fails_fast(stream: str, cap: int) -> None:
    provider = skill("flood", stream, "50", max_output_bytes=cap)
    start = time.monotonic()
    with anyio.fail_after(30), pytest.raises(InvocationError) as info:
        await provider.invoke(request_for(None))
    assert time.monotonic() - start < 10
    assert info.value.message == f"{stream} exceeded {cap} bytes"
    assert not info.value.retryable
    assert info.value.category == "execution_error"


async def test_timeout_sends_sigterm_and_kills_the_grandchild(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    provider = skill("family", "hang", str(pidfile))
    start = time.monotonic()
    with pytest.raises(TimeoutError), anyio.fail_after(1.0):
        await provider.invoke(request_for(None))
    assert time.monotonic() - start < 5
    leader, grandchild = map(int, pidfile.read_text().split())
    assert (tmp_path / "pids.term").read_text() == "TERM"
    assert await wait_dead(leader, grandchild) == []


async def test_timeout_escalates_to_sigkill_for_the_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    provider = skill("family", "stubborn", str(pidfile), kill_grace=0.2)
    start = time.monotonic()
    with pytest.raises(TimeoutError), anyio.fail_after(1.0):
        await provider.invoke(request_for(None))
    assert time.monotonic() - start < 5
    leader, grandchild = map(int, pidfile.read_text().split())
    assert await wait_dead(leader, grandchild) == []


async def test_leftover_grandchild_is_killed_when_the_skill_exits(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    with anyio.fail_after(10):
        response = await skill("family", "orphan", str(pidfile)).invoke(request_for(None))
    assert response.output == "done"
    _, grandchild = map(int, pidfile.read_text().split())
    assert await wait_dead(grandchild) == []


async def test_memory_limit_fails_with_a_categorised_error() -> None:
    provider = skill("alloc", "1024", memory_mb=256)
    with anyio.fail_after(10), pytest.raises(InvocationError) as info:
        await provider.invoke(request_for(None))
    assert info.value.exit_code == 1
    assert info.value.category == "execution_error"
    assert "MemoryError" in info.value.message


async def test_small_allocations_pass_under_the_memory_limit() -> None:
    response = await skill("alloc", "16", memory_mb=256).invoke(request_for(None))
    assert response.output == 16 * 1024 * 1024


async def test_cpu_limit_kills_a_spinning_skill() -> None:
    provider = skill("spin", cpu_seconds=1, memory_mb=None)
    with anyio.fail_after(10), pytest.raises(InvocationError) as info:
        await provider.invoke(request_for(None))
    assert info.value.exit_code == -signal.SIGXCPU
    assert info.value.message.startswith("process killed by signal SIGXCPU")


async def test_environment_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SECRET_TOKEN", "hunter2")
    response = await skill("introspect", env={"X": "1"}).invoke(request_for(None))
    env = response.output["env"]
    assert "MY_SECRET_TOKEN" not in env
    assert env["X"] == "1"
    assert env["BENCHKIT_SANDBOX"] == "1"
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["PATH"] == os.environ["PATH"]
    allowed = {"PATH", "HOME", "LANG", "LC_ALL", "TZ", "X", "PYTHONUNBUFFERED"}
    allowed |= {"PYTHONDONTWRITEBYTECODE", "BENCHKIT_SANDBOX", "LC_CTYPE"}  # Python may coerce
    assert set(env) <= allowed


async def test_inherit_env_passes_the_parent_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SECRET_TOKEN", "hunter2")
    response = await skill("introspect", inherit_env=True).invoke(request_for(None))
    assert response.output["env"]["MY_SECRET_TOKEN"] == "hunter2"
    assert response.output["env"]["BENCHKIT_SANDBOX"] == "1"


async def test_cwd_is_resolved_against_base_dir(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    in_work = skill("introspect", cwd="work", base_dir=tmp_path)
    by_default = skill("introspect", base_dir=tmp_path)
    work_cwd = (await in_work.invoke(request_for(None))).output["cwd"]
    default_cwd = (await by_default.invoke(request_for(None))).output["cwd"]
    assert Path(work_cwd) == (tmp_path / "work").resolve()
    assert Path(default_cwd) == tmp_path.resolve()


async def test_registry_builds_it_with_base_dir_and_relative_executable(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "skill"
    script.parent.mkdir()
    script.write_text(f"#!{PY}\n" + (SKILLS / "echo.py").read_text())
    script.chmod(0o755)
    provider = default_registries().providers.build(
        "subprocess", {"command": "./bin/skill", "memory_mb": None}, base_dir=tmp_path
    )
    assert isinstance(provider, SubprocessProvider)
    assert provider.executable == str(script)
    assert (await provider.invoke(request_for([1, 2]))).output == [1, 2]


async def test_string_command_is_split_without_a_shell(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("keep me")
    command = f"{shlex.quote(PY)} {shlex.quote(str(SKILLS / 'introspect.py'))} echo $HOME; rm -rf x"
    provider = SubprocessProvider(command=command, base_dir=tmp_path)
    response = await provider.invoke(request_for(None))
    assert response.output["argv"] == ["echo", "$HOME;", "rm", "-rf", "x"]
    assert (tmp_path / "x").read_text() == "keep me"


def test_repr_shows_the_command_but_not_the_env() -> None:
    provider = skill("echo", env={"API_KEY": "s3cret"})
    assert "echo.py" in repr(provider)
    assert "s3cret" not in repr(provider)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"command": ["no-such-binary-benchkit-test"]}, "not found"),
        ({"command": "./missing.py"}, "not found"),
        ({"command": str(SKILLS / "echo.py")}, "not executable"),
        ({"command": "../escape.py"}, "escapes"),
        ({"command": [PY], "cwd": "../.."}, "escapes"),
        ({"command": [PY], "cwd": "no-such-dir"}, "does not exist"),
        ({"command": []}, "non-empty list"),
        ({"command": [PY, 3]}, "non-empty list"),
        ({"command": "python 'unbalanced"}, "cannot split"),
        ({"command": [PY], "env": {"X": 1}}, "string"),
        ({"command": [PY], "memory_mb": 0}, "memory_mb"),
        ({"command": [PY], "cpu_seconds": True}, "cpu_seconds"),
        ({"command": [PY], "max_output_bytes": None}, "max_output_bytes"),
        ({"command": [PY], "method": ""}, "method"),
        ({"command": [PY], "kill_grace": -1}, "kill_grace"),
    ],
)
def test_bad_configuration_is_a_config_error(
    tmp_path: Path, options: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected):
        SubprocessProvider(base_dir=tmp_path, **options)
