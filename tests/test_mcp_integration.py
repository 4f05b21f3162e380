"""MCP beyond the provider: the native format's example (docs/plugins.md), eval-skills'
``adapterType: mcp`` skills, and ``python -m benchkit mcp tools`` — all against real MCP
servers (benchmarks/mcp/calculator/server.py and tests/mcp_servers/tools_server.py)."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import benchkit
from benchkit.cli import main
from benchkit.errors import ConfigError
from benchkit.formats import load
from benchkit.formats.eval_skills.skills import discover, load_skill

from ._support import REPO
from .test_provider_mcp import SERVER, HttpServer

BENCHMARKS = REPO / "benchmarks"
EXAMPLE = BENCHMARKS / "mcp"
PY = sys.executable


@pytest.fixture
def venv_python_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """``python3`` on PATH is the interpreter running the tests (the one with ``mcp``)."""
    monkeypatch.setenv("PATH", f"{Path(PY).parent}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.fixture
def sse_server() -> Iterator[HttpServer]:
    server = HttpServer("sse")
    yield server
    server.stop()


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    server = HttpServer("http")
    yield server
    server.stop()


def write_skill(directory: Path, **fields: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    manifest = {"id": "probe", "name": "Probe", "version": "1.0.0", "adapterType": "mcp"}
    manifest.update(fields)
    path = directory / "skill.json"
    path.write_text(json.dumps(manifest, indent=2))
    return path


# -- the native example in docs/plugins.md -------------------------------------------------


def test_the_documented_example_is_the_shipped_file() -> None:
    doc = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = doc[doc.index("## MCP") :]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    assert block.group(1) == (EXAMPLE / "benchmark.yaml").read_text(encoding="utf-8")


@pytest.mark.usefixtures("venv_python_first")
def test_the_documented_example_runs_and_passes() -> None:
    suite = load(EXAMPLE / "benchmark.yaml")
    (condition,) = suite.conditions
    assert isinstance(condition.provider, benchkit.ProviderSpec)
    assert condition.provider.type == "mcp"
    assert condition.provider.options["tool"] == "calculate"
    result = benchkit.run(suite)
    assert [c.status for c in result.cells] == ["pass", "pass", "pass"]
    first = result.cells[0].response
    assert first is not None
    assert first.tool_calls[0].arguments == {"expression": "2 + 3"}


def test_native_schema_checks_mcp_options(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(
        "benchkit: 1\nid: x\nconditions:\n  - id: c\n    provider:\n      type: mcp\n"
        "      command: [python3, s.py]\n      tol: calculate\ntasks:\n  - id: t\n"
    )
    with pytest.raises(benchkit.FormatError) as info:
        load(path)
    assert "tool" in str(info.value)
    assert info.value.line == 6


# -- eval-skills adapterType: mcp ------------------------------------------------------------


def test_the_shipped_mcp_skill_loads_with_the_original_rules() -> None:
    skill = load_skill(EXAMPLE / "calculator" / "skill.json")
    spec = skill.provider_spec()
    assert skill.adapter == "mcp"
    assert spec.type == "mcp"
    assert spec.options["tool"] == "calculate"  # metadata.toolName
    assert spec.options["output"] == "json"  # text items joined, JSON-parsed when possible
    assert spec.options["command"][0] == PY  # python3 runs as benchkit's interpreter
    assert spec.options["cwd"] == str((EXAMPLE / "calculator").resolve())


def test_the_tool_defaults_to_the_skill_id(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text("")
    skill = load_skill(write_skill(tmp_path, entrypoint="python3 server.py"))
    assert skill.provider_spec().options["tool"] == "probe"


def test_an_http_entrypoint_is_a_remote_server(tmp_path: Path) -> None:
    skill = load_skill(write_skill(tmp_path, entrypoint="https://tools.example/mcp"))
    options = skill.provider_spec().options
    assert options["url"] == "https://tools.example/mcp"
    assert options["transport"] == "auto"
    assert "command" not in options


def test_the_templates_mcp_url_is_a_clear_load_error(tmp_path: Path) -> None:
    path = write_skill(tmp_path, entrypoint="mcp://my-tool")
    with pytest.raises(ConfigError) as info:
        load_skill(path)
    error = info.value
    assert error.json_path == "$.entrypoint"
    assert error.line is not None
    assert "mcp://" in error.message
    assert error.fix is not None
    assert "http" in error.fix
    assert "python3 server.py" in error.fix


def test_a_missing_server_executable_is_a_load_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_skill(write_skill(tmp_path, entrypoint="no-such-mcp-server --stdio"))
    assert info.value.json_path == "$.entrypoint"


class CalculatorOverHttp(ThreadingHTTPServer):
    """The example calculator as an eval-skills http skill, on 127.0.0.1:<ephemeral>."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _CalculatorHandler)


class _CalculatorHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        sys.path.insert(0, str(BENCHMARKS / "skills" / "calculator"))
        import skill  # type: ignore[import-not-found]  # the calculator's own module

        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = json.dumps({"result": skill.invoke(body["input"])}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def calculator_over_http() -> Iterator[str]:
    server = CalculatorOverHttp()
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/invoke"
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_eval_runs_mcp_skills_beside_subprocess_and_http_skills(
    tmp_path: Path, calculator_over_http: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_skill(
        tmp_path / "http_skill",
        id="calculator_http",
        adapterType="http",
        entrypoint=calculator_over_http,
    )
    code = main(
        [
            "eval",
            "--benchmarks-dir",
            str(BENCHMARKS),
            "--output-dir",
            str(tmp_path / "out"),
            "--no-progress",
            "--no-store",
            "--skills",
            str(BENCHMARKS / "skills" / "calculator"),
            str(EXAMPLE / "calculator"),
            str(tmp_path / "http_skill"),
            "--benchmark",
            "coding-easy",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (path,) = (tmp_path / "out").glob("eval-result-*.json")
    reports = {r["skillId"]: r for r in json.loads(path.read_text())}
    assert sorted(reports) == ["calculator", "calculator_http", "calculator_mcp"]
    for report in reports.values():
        assert report["summary"]["completionRate"] == 1
        assert report["summary"]["errorRate"] == 0
    mcp_rows = reports["calculator_mcp"]["taskResults"]
    sub_rows = reports["calculator"]["taskResults"]
    assert len(mcp_rows) == len(sub_rows) > 0
    # the JSON text the tool returns is parsed: the same outputs as the subprocess skill's
    assert [r["output"] for r in mcp_rows] == [r["output"] for r in sub_rows]
    assert all(set(r["output"]) == {"result"} for r in mcp_rows)


def test_an_sse_skill_runs_like_the_originals(
    tmp_path: Path, sse_server: HttpServer, capsys: pytest.CaptureFixture[str]
) -> None:
    skill_dir = tmp_path / "echo"
    write_skill(
        skill_dir, id="echo", name="Echo", entrypoint=f"{sse_server.base}/sse"
    )  # no toolName: the tool is the skill's id
    bench = tmp_path / "bench.json"
    bench.write_text(
        json.dumps(
            {
                "id": "echo-bench",
                "name": "Echo",
                "version": "1.0.0",
                "domain": "general",
                "scoringMethod": "mean",
                "tasks": [
                    {
                        "id": "e1",
                        "description": "echo",
                        "inputData": {"text": '{"result": "ok"}'},
                        "expectedOutput": {"type": "exact", "value": "ok"},
                        "evaluator": {"type": "exact"},
                    },
                    {
                        "id": "e2",
                        "description": "plain text",
                        "inputData": {"text": "plain words"},
                        "expectedOutput": {"type": "contains", "keywords": ["words"]},
                        "evaluator": {"type": "contains"},
                    },
                ],
            }
        )
    )
    code = main(
        [
            "eval",
            "--output-dir",
            str(tmp_path / "out"),
            "--no-progress",
            "--no-store",
            "--skills",
            str(skill_dir),
            "--benchmark",
            str(bench),
        ]
    )
    assert code == 0, capsys.readouterr().err
    (path,) = (tmp_path / "out").glob("eval-result-*.json")
    (report,) = json.loads(path.read_text())
    rows = {r["taskId"]: r for r in report["taskResults"]}
    assert rows["e1"]["output"] == {"result": "ok"}  # JSON text is parsed
    assert rows["e2"]["output"] == "plain words"  # other text stays text
    assert {r["status"] for r in rows.values()} == {"pass"}


def test_discover_finds_mcp_skills() -> None:
    (skill,) = discover([EXAMPLE])
    assert (skill.id, skill.adapter) == ("calculator_mcp", "mcp")


# -- python -m benchkit mcp tools ------------------------------------------------------------


def test_mcp_tools_lists_a_stdio_servers_tools(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "tools", "--command", f"{PY} {SERVER}"]) == 0
    out = capsys.readouterr().out
    assert "add — Add two integers" in out
    assert '"required": [' in out
    assert "picture — A caption and a 1x1 PNG." in out


def test_mcp_tools_json_over_http(
    http_server: HttpServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "tools", "--url", f"{http_server.base}/mcp", "--json"]) == 0
    tools = {t["name"]: t for t in json.loads(capsys.readouterr().out)}
    assert tools["add"]["inputSchema"]["required"] == ["a", "b"]
    assert "outputSchema" in tools["add"]


def test_mcp_tools_unreachable_server_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["mcp", "tools", "--url", "http://127.0.0.1:9/mcp", "--timeout", "5"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.startswith("benchkit: error: cannot connect to MCP server")
    assert "Traceback" not in captured.err


def test_a_tool_name_that_is_not_a_string_is_a_located_error(tmp_path: Path) -> None:
    path = write_skill(tmp_path, entrypoint="https://x.example/mcp", metadata={"toolName": 3})
    with pytest.raises(benchkit.FormatError) as info:
        load_skill(path)
    assert info.value.json_path == "$.metadata.toolName"
