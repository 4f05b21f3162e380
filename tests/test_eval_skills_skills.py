"""eval-skills skills: discovery, the sandbox checks, and real skill processes and HTTP
servers run through the Runner — including skills that hang, crash, babble or flood."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import pytest

from benchkit.errors import ConfigError, FormatError
from benchkit.formats.eval_skills import load
from benchkit.formats.eval_skills.report import build_reports
from benchkit.formats.eval_skills.skills import (
    MAX_OUTPUT_BYTES,
    MEMORY_MB,
    Skill,
    check_entrypoint,
    conditions,
    discover,
    load_skill,
    versions,
)
from benchkit.model import ProviderSpec, Suite
from benchkit.results import RunResult
from benchkit.runner import Runner

from ._support import FIXTURES, REPO
from .test_eval_skills_format import bench, task, write

pytestmark = pytest.mark.anyio

SKILLS = FIXTURES / "eval_skills" / "skills"
SHIPPED = REPO / "benchmarks" / "skills"


def manifest(directory: Path, **fields: Any) -> Path:
    """Write a skill.json (and an empty skill.py) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    data = {"id": directory.name, "name": "N", "version": "1.0.0", "entrypoint": "python3 s.py"}
    data.update(fields)
    (directory / "s.py").write_text("")
    path = directory / "skill.json"
    path.write_text(json.dumps(data, indent=2))
    return path


async def run(suite: Suite, skills: tuple[Skill, ...], **options: Any) -> RunResult:
    suite = attrs.evolve(suite, conditions=conditions(skills))
    if options:
        suite = suite.with_options(**options)
    return await Runner().run(suite)


# --------------------------------------------------------------------------- discovery


def test_discover_walks_directories_in_order(tmp_path: Path) -> None:
    manifest(tmp_path / "b_skill")
    manifest(tmp_path / "a_skill")
    manifest(tmp_path / "group" / "c_skill")
    manifest(tmp_path / ".hidden" / "h_skill")
    manifest(tmp_path / "node_modules" / "n_skill")
    found = discover([tmp_path])
    assert [s.id for s in found] == ["a_skill", "b_skill", "c_skill"]
    assert found[2].root == (tmp_path / "group" / "c_skill").resolve()


def test_shipped_skills_are_found() -> None:
    found = discover([SHIPPED])
    assert [s.id for s in found] == ["calculator", "metadata_checker", "web_search_mock"]
    assert all(s.adapter == "subprocess" and s.command[0] == sys.executable for s in found)
    assert versions(found) == dict.fromkeys(
        ("calculator", "metadata_checker", "web_search_mock"), "1.0.0"
    )


def test_a_manifest_file_roots_the_skill_in_its_folder(tmp_path: Path) -> None:
    path = manifest(tmp_path / "x")
    (skill,) = discover([path, tmp_path])  # the same manifest twice counts once
    assert skill.root == path.parent.resolve() and skill.manifest == path


def test_discover_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        discover([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"no skill\.json under"):
        discover([tmp_path / "empty"])
    manifest(tmp_path / "one", id="same")
    second = manifest(tmp_path / "two", id="same")
    with pytest.raises(ConfigError) as info:
        discover([tmp_path / "one", tmp_path / "two"])
    assert info.value.file == str(second) and "two skills have the id 'same'" in info.value.message


def test_a_bad_manifest_is_a_located_format_error(tmp_path: Path) -> None:
    path = manifest(tmp_path / "x", version=1)
    with pytest.raises(FormatError) as info:
        load_skill(path)
    assert info.value.json_path == "$.version" and info.value.line is not None


def test_mcp_skills_start_servers_beyond_the_subprocess_allow_list(tmp_path: Path) -> None:
    path = manifest(tmp_path / "x", adapterType="mcp", entrypoint='env "A B=1" python3 server.py')
    skill = load_skill(path)
    spec = skill.provider_spec()
    assert skill.adapter == "mcp" and spec.type == "mcp"
    assert skill.command == ("env", "A B=1", "python3", "server.py")  # quotes kept together
    assert spec.options["command"] == list(skill.command)
    assert spec.options["tool"] == skill.id


def test_http_skills_post_to_their_url(tmp_path: Path) -> None:
    path = manifest(tmp_path / "web", adapterType="http", entrypoint="http://127.0.0.1:9/run")
    skill = load_skill(path)
    condition = skill.condition(timeout=12.0)
    assert condition.id == "web" and condition.label == "N v1.0.0"
    assert condition.provider == ProviderSpec(
        "http",
        {
            "url": "http://127.0.0.1:9/run",
            "body": "eval-skills",
            "body_options": {"version": "1.0.0"},
            "timeout": 12.0,
        },
    )
    bad = manifest(tmp_path / "bad", adapterType="http", entrypoint="ftp://x")
    with pytest.raises(ConfigError) as info:
        load_skill(bad)
    assert info.value.json_path == "$.entrypoint"


def test_subprocess_conditions_carry_the_sandbox(tmp_path: Path) -> None:
    skill = load_skill(manifest(tmp_path / "calc"))
    condition = skill.condition()
    assert condition.bundle == skill.root
    assert isinstance(condition.provider, ProviderSpec)
    assert condition.provider.type == "subprocess"
    assert condition.provider.options == {
        "command": [sys.executable, "s.py"],
        "cwd": str(skill.root),
        "env": {"EVAL_SKILLS_SANDBOX": "1"},
        "memory_mb": MEMORY_MB,
        "max_output_bytes": MAX_OUTPUT_BYTES,
    }
    assert (MEMORY_MB, MAX_OUTPUT_BYTES) == (256, 5 * 1024 * 1024)


# --------------------------------------------------------------------------- sandbox checks


@pytest.mark.parametrize(
    ("entrypoint", "words"),
    [
        ("python3 skill.py; rm x", "holds ';'"),
        ("python3 skill.py | cat", "holds '|'"),
        ("python3 $(whoami)", "holds '$'"),
        ("python3 skill.py > out", "holds '>'"),
        ("python3 ../other/skill.py", "holds '..'"),
        ("python3 /etc/passwd", "touches /etc/"),
        ("python3 /proc/self/x", "touches /proc/"),
        ("sudo python3 skill.py", "'sudo'"),
        ("bash kill.sh", "'kill'"),
        ("bash curl.sh", "'curl'"),
        ("bash rm -rf x", "rm -rf"),
        ("perl skill.pl", "not one the sandbox allows"),
        ("./skill", "not one the sandbox allows"),
        ("python3 /usr/lib/skill.py", "points outside"),
        ("python3 -c", None),
    ],
)
def test_entrypoint_checks(tmp_path: Path, entrypoint: str, words: str | None) -> None:
    if words is None:
        assert check_entrypoint(entrypoint, tmp_path) == (sys.executable, "-c")
        return
    with pytest.raises(ConfigError) as info:
        check_entrypoint(entrypoint, tmp_path)
    assert words in info.value.message


def test_interpreters_map_and_paths_stay(tmp_path: Path) -> None:
    assert check_entrypoint("python skill.py", tmp_path, python="/opt/py") == (
        "/opt/py",
        "skill.py",
    )
    assert check_entrypoint("node dir/main.js --fast", tmp_path) == (
        "node",
        "dir/main.js",
        "--fast",
    )
    assert check_entrypoint("/usr/bin/python3 skill.py", tmp_path)[0] == "/usr/bin/python3"


def test_entrypoint_errors_point_at_the_manifest(tmp_path: Path) -> None:
    path = manifest(tmp_path / "x", entrypoint="python3 skill.py && echo")
    with pytest.raises(ConfigError) as info:
        load_skill(path)
    error = info.value
    assert error.file == str(path) and error.json_path == "$.entrypoint"
    assert error.line is not None and error.fix is not None


@pytest.mark.skipif(shutil.which("ruby3") is not None, reason="ruby3 is installed here")
def test_a_missing_interpreter_is_reported_at_load(tmp_path: Path) -> None:
    path = manifest(tmp_path / "x", entrypoint="ruby3 skill.rb")
    with pytest.raises(ConfigError) as info:
        load_skill(path)
    assert "not found" in info.value.message and info.value.json_path == "$.entrypoint"


# --------------------------------------------------------------------------- real skills


async def test_the_sandbox_a_skill_runs_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHKIT_TEST_SECRET", "s3cret")
    suite = load(write(tmp_path, bench([task(inputData={"q": [1, 2]})])))
    skills = discover([SKILLS / "introspect" / "skill.json"])
    result = await run(suite, skills)
    (cell,) = result.cells
    assert cell.response is not None
    seen = cell.response.output
    assert seen["request"] == {
        "jsonrpc": "2.0",
        "method": "invoke",
        "params": {"q": [1, 2]},
        "id": 1,
    }
    assert seen["argv"] == ["--flag", "./data.txt"]
    assert seen["cwd"] == str((SKILLS / "introspect").resolve())
    assert seen["env"]["EVAL_SKILLS_SANDBOX"] == "1"
    assert "BENCHKIT_TEST_SECRET" not in seen["env"]
    assert set(seen["env"]) <= {
        "PATH", "HOME", "LANG", "LC_ALL", "TZ", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE",
        "BENCHKIT_SANDBOX", "EVAL_SKILLS_SANDBOX", "LC_CTYPE",
    }  # fmt: skip
    assert os.path.realpath(seen["executable"]) == os.path.realpath(sys.executable)
    assert seen["address_space"] == MEMORY_MB * 1024 * 1024


async def test_misbehaving_skills_are_categorised_and_the_run_goes_on(tmp_path: Path) -> None:
    pidfile = tmp_path / "hang.pid"
    modes = ["hang", "garbage", "exit", "flood", "ok"]
    tasks = [
        task(
            id=mode,
            inputData={"mode": mode, "pidfile": str(pidfile)},
            expectedOutput={"type": "exact", "value": "ok"},
            timeoutMs=1000 if mode == "hang" else 20000,
        )
        for mode in modes
    ]
    suite = load(write(tmp_path, bench(tasks)))
    skills = discover([SKILLS / "misbehave"])
    result = await run(suite, skills, concurrency=1)
    cells = {c.task_id: c for c in result.cells}
    assert len(cells) == 5 and not result.interrupted
    assert (cells["ok"].status, cells["ok"].score) == ("pass", 1.0)
    assert (cells["hang"].status, cells["hang"].error_category) == ("timeout", "timeout")
    for mode in ("garbage", "exit", "flood"):
        assert (cells[mode].status, cells[mode].error_category) == ("error", "execution_error")
    assert "no JSON-RPC response" in (cells["garbage"].error or "")
    assert "exited with code 3" in (cells["exit"].error or "")
    assert "boom: the skill crashed" in (cells["exit"].error or "")
    assert f"stdout exceeded {MAX_OUTPUT_BYTES} bytes" in (cells["flood"].error or "")
    hung = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(hung, 0)  # killed with its process group, and reaped

    (report,) = build_reports(
        result, benchmark=suite.benchmark, versions=versions(skills), timeout_ms=30000
    )
    rows = {r["taskId"]: r for r in report["taskResults"]}
    assert rows["hang"]["status"] == "timeout" and rows["hang"]["latencyMs"] > 0
    assert rows["exit"]["latencyMs"] == 0 and "error" in rows["exit"]
    assert report["summary"]["completionRate"] == 0.2
    assert report["summary"]["errorRate"] == 0.8


async def test_retries_repeat_failed_invocations_not_error_replies(tmp_path: Path) -> None:
    counter = tmp_path / "calls"
    tasks = [
        task(id=mode, inputData={"mode": mode, "counter": str(counter)}, timeoutMs=20000)
        for mode in ("flaky", "rpc_error")
    ]
    for item in tasks:
        item["expectedOutput"] = {"type": "exact", "value": "ok"}
    suite = load(write(tmp_path, bench(tasks)))
    assert suite.options.retry_on == {"execution_error", "timeout"}
    result = await run(suite, discover([SKILLS / "misbehave"]), retries=2, backoff_base=0.0)
    cells = {c.task_id: c for c in result.cells}
    assert (cells["flaky"].status, cells["flaky"].attempts) == ("pass", 2)
    # a JSON-RPC error is an answer: not retried, and "timeout" in its text is no timeout
    assert (cells["rpc_error"].status, cells["rpc_error"].attempts) == ("error", 1)
    assert cells["rpc_error"].error == "JSON-RPC error -32000: upstream timeout"


async def test_shipped_calculator_passes_coding_easy() -> None:
    suite = load(REPO / "benchmarks" / "coding-easy")
    result = await run(suite, discover([SHIPPED / "calculator"]))
    aggregate = result.aggregate("calculator")
    assert (aggregate.passed, aggregate.n) == (18, 18)
    by_id = {c.task_id: c for c in result.cells}
    assert by_id["calc_exact_float"].response is not None
    assert by_id["calc_exact_float"].response.output == {"result": "6.0"}


# --------------------------------------------------------------------------- http


class SkillServer(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), SkillHandler)
        self.seen: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class SkillHandler(BaseHTTPRequestHandler):
    """/answer echoes the input's ``q`` as ``result`` with usage headers; /fail is a 400."""

    server: SkillServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append(
            {"headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
        )
        if self.path == "/fail":
            data, status, extra = b'{"error": "no"}', 400, {}
        else:
            data = json.dumps({"result": body["input"]["q"]}).encode()
            status, extra = 200, {"x-usage-input-tokens": "7", "x-usage-output-tokens": "3"}
        self.send_response(status)
        for name, value in extra.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def skill_server() -> Iterator[SkillServer]:
    server = SkillServer()
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


async def test_http_skills_run_side_by_side(tmp_path: Path, skill_server: SkillServer) -> None:
    manifest(tmp_path / "good", adapterType="http", entrypoint=f"{skill_server.url}/answer")
    manifest(tmp_path / "bad", adapterType="http", entrypoint=f"{skill_server.url}/fail")
    tasks = [
        task(id=f"t{i}", inputData={"q": str(i)}, expectedOutput={"type": "exact", "value": str(i)})
        for i in range(3)
    ]
    suite = load(write(tmp_path, bench(tasks)))
    skills = discover([tmp_path / "good", tmp_path / "bad"])
    result = await run(suite, skills)
    assert result.aggregate("good").passed == 3
    assert result.aggregate("bad").errors == 3
    # a skill that errored on every cell is reported broken, not compared
    assert result.aggregate("bad").broken and not result.aggregate("good").broken
    assert result.comparisons == ()
    first = next(s for s in skill_server.seen if s["body"]["skillId"] == "good")
    assert first["body"] == {
        "skillId": "good",
        "version": "1.0.0",
        "input": {"q": first["body"]["input"]["q"]},
    }
    assert first["headers"]["x-eval-skills-version"] == "0.1.0"
    assert first["headers"]["content-type"] == "application/json"
    good, bad = build_reports(
        result, benchmark=suite.benchmark, versions=versions(skills), timeout_ms=30000
    )
    assert good["tokenCost"] == {"promptTokens": 21, "completionTokens": 9, "totalTokens": 30}
    assert good["taskResults"][0]["usage"] == {
        "promptTokens": 7,
        "completionTokens": 3,
        "totalTokens": 10,
    }
    assert good["taskResults"][0]["output"] == {"result": "0"}
    assert "tokenCost" not in bad
    assert bad["taskResults"][0]["error"] == "HTTP 400: Bad Request"


def test_a_bare_name_that_is_no_path_is_a_built_in_skill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (skill,) = discover(["calculator"])
    assert skill.manifest is not None
    assert skill.id == "calculator" and skill.manifest.parent.name == "calculator"
    with pytest.raises(ConfigError, match="does not exist"):
        discover(["../calculator"])
    (tmp_path / "calculator").mkdir()  # a real path always wins
    with pytest.raises(ConfigError, match=r"no skill\.json under"):
        discover(["calculator"])
