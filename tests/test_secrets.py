"""No secret is stored or shown (#42): benchkit's one redaction (benchkit._secrets), and a
run whose upstreams echo every credential back — in bodies, headers and errors, a 401 that
quotes the request's Authorization header — leaves 0 copies in the store file, the search
index, every report format and every API answer."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchkit import _secrets
from benchkit.store import Store, _schema

from ._support import REPO

ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}


def _canary(kind: str) -> str:
    return f"bkcanary{kind}{uuid.uuid4().hex}"


# -- the redaction itself ----------------------------------------------------------------------


def test_configured_values_env_values_and_key_shapes_are_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    added, env = _canary("added"), _canary("env")
    _secrets.add(f"Bearer {added}")
    monkeypatch.setenv("BK_TEST_SERVICE_TOKEN", env)
    secrets = _secrets.known()
    text = (
        f"401: bad key {added} (env {env}); Authorization: Basic dXNlcjpwYXNzd29yZA== "
        "at https://me:hunter2hunter@host/v1?api_key=abcdefgh1234&q=1 "
        '{"password": "correct-horse", "token":"0123456789abcdef"} secret=s3cr3t-value'
    )
    clean = secrets.scrub(text)
    for leaked in (added, env, "dXNlcjpw", "hunter2hunter", "abcdefgh1234", "correct-horse"):
        assert leaked not in clean
    assert "0123456789abcdef" not in clean and "s3cr3t-value" not in clean
    assert "q=1" in clean and "host/v1" in clean  # only the secrets go
    # A key cut short by an excerpt keeps no more than its first few characters.
    assert added[12:20] not in secrets.scrub(f"error: {added[:20]}... (cut)")
    # Text without secrets is returned as it is; short values are never secrets.
    plain = "the answer is 42, key facts: none"
    assert secrets.scrub(plain) is plain
    _secrets.add("short")
    assert "short" in _secrets.known().scrub("a short word")


def test_a_cell_keeps_its_shape_and_loses_its_secrets() -> None:
    from benchkit.model import Response, ToolCall
    from benchkit.results import CellResult, Score

    key = _canary("cell")
    _secrets.add(key)
    cell = CellResult(
        task_id="t",
        condition_id="c",
        epoch=0,
        status="error",
        error=f"HTTP 401: {{'authorization': 'Bearer {key}'}}",
        response=Response(
            output={"echo": [key, 1, None]},
            tool_calls=(ToolCall("f", {"k": key}),),
            metadata={"raw": key},
        ),
        scores=(Score("judge", 0.0, False, reason=f"the header said {key}"),),
    )
    clean = _secrets.known().scrub_cell(cell)
    assert key not in repr(clean)
    assert clean.response is not None
    assert clean.response.output == {"echo": ["[redacted]", 1, None]}
    assert clean.scores[0].reason == "the header said [redacted]"
    untouched = CellResult(task_id="t", condition_id="c", epoch=0, status="pass")
    assert _secrets.known().scrub_cell(untouched) is untouched


def test_the_log_filter_scrubs_messages_and_tracebacks() -> None:
    key = _canary("log")
    _secrets.add(key)
    record = logging.LogRecord("benchkit.x", logging.INFO, __file__, 1, "key %s", (key,), None)
    try:
        raise ValueError(f"failed with {key}")
    except ValueError:
        record.exc_info = sys.exc_info()
    assert _secrets.LogFilter().filter(record)
    assert key not in record.getMessage() and key not in (record.exc_text or "")


def test_the_migration_scrubs_a_store_written_before(tmp_path: Path) -> None:
    """A schema-5 store holding keys in clear (in an error, an outcome, the search index, a
    run's recorded options) has none once a benchkit that redacts opens it."""
    import benchkit
    from benchkit import Benchmark, Condition, Suite, Task
    from benchkit.providers import CallableProvider

    key = _canary("old")
    path = tmp_path / "old.db"

    def leaky(x: str) -> str:
        raise RuntimeError(f"upstream said: {x}")

    suite = Suite(
        Benchmark("old", tasks=[Task("t0", input="hello", expected="x")]),
        conditions=[Condition("c", CallableProvider(leaky))],
    )
    result = benchkit.run(suite, store=path)
    with sqlite3.connect(path) as db:  # what an older benchkit wrote
        error = f"HTTP 401: Bearer {key}"
        db.execute("UPDATE cells SET data = json_set(data, '$.error', ?)", (error,))
        db.execute("UPDATE runs SET outcome = ?", (json.dumps({"note": f"api_key={key}"}),))
        task = json.dumps({"id": "t0", "input": f"use token={key}"})
        db.execute("UPDATE tasks SET data = ?", (task,))
    with Store(path) as store:  # the search index is built from the texts in clear
        assert store.search(key[:20])[1] == 1
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    with Store(path) as store:
        assert store.search(key[:20])[1] == 0
        assert key not in repr(store.cells(result.run_id).cells)
    data = b"".join(p.read_bytes() for p in tmp_path.glob("old.db*"))
    assert key.encode() not in data and key[8:24].encode() not in data
    with sqlite3.connect(path) as db:
        (version,) = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    assert int(version) == _schema.SCHEMA_VERSION


# -- a whole run against upstreams that echo every credential ----------------------------------


#: What the upstream answers: every request's headers quoted back, as a 401's body, as an
#: output, as a reply header, and a URL with a key in it.
class _Echo(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        quoted = dict(self.headers.items())
        assert isinstance(self.server, _Upstream)
        url = (
            f"https://user:{self.server.url_password}@mirror.example/v1"
            f"?api_key={self.server.url_key}"
        )
        text = json.dumps(body)
        if self.path.startswith("/v1/chat/completions"):
            if "fail" in text:
                self._send(401, {"error": {"message": f"invalid key: {quoted}"}})
                return
            content = f"8. I was called with {quoted.get('Authorization')} from {url}"
            self._send(
                200,
                {
                    "id": "x",
                    "object": "chat.completion",
                    "model": "m",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2},
                },
            )
            return
        if "fail" in text:
            self._send(401, {"error": "bad credentials", "headers": quoted, "see": url})
            return
        self._send(200, {"answer": f"you sent {quoted} {url}"})

    def _send(self, status: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("X-Echo", self.headers.get("Authorization") or "")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


class _Upstream(ThreadingHTTPServer):
    """The echoing upstream, with the credentials of the URL it quotes."""

    url_password = ""
    url_key = ""


@pytest.fixture
def upstream() -> Iterator[_Upstream]:
    server = _Upstream(("127.0.0.1", 0), _Echo)
    server.url_password = _canary("urlpw")
    server.url_key = _canary("urlkey")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


_TOOL = textwrap.dedent(
    """
    import json, os, sys
    request = json.loads(sys.stdin.readline())
    key = os.environ["TOOL_ACCESS_TOKEN"]
    print(f"debug: using {key}", file=sys.stderr)
    if "fail" in json.dumps(request):
        sys.exit(1)
    print(json.dumps({"jsonrpc": "2.0", "id": 1, "result": f"my key is {key}"}))
    """
)


def _write_benchmark(directory: Path, port: int, canaries: dict[str, str]) -> Path:
    (directory / "tool.py").write_text(_TOOL, encoding="utf-8")
    base = f"http://127.0.0.1:{port}"
    judge = (
        f"{{type: llm_rubric, prompt: 'Rate {{output}}', base_url: '{base}/v1', "
        "model: judge, api_key_env: BK_JUDGE_AUTH, cache: false}"
    )
    lines = [
        "benchkit: 1",
        "id: canaries",
        f"evaluators: [{judge}]",
        "conditions:",
        f"  - {{id: http-header, provider: {{type: http, url: '{base}/http', "
        f"headers: {{X-Api-Key: {canaries['header']}}}, output_field: answer}}}}",
        f"  - {{id: http-env, provider: {{type: http, url: '{base}/http', "
        "api_key_env: BK_UPSTREAM_AUTH, output_field: answer}}",
        f"  - {{id: chat, provider: {{type: chat, base_url: '{base}/v1', model: m, "
        "api_key_env: BK_LLM_AUTH, max_retries: 0}}",
        f"  - {{id: tool, provider: {{type: subprocess, command: [{sys.executable}, tool.py], "
        f"env: {{TOOL_ACCESS_TOKEN: {canaries['tool']}}}, memory_mb: null}}}}",
        "run: {concurrency: 4}",
        "tasks:",
        "  - {id: ok, input: {q: hello}, expected: x}",
        "  - {id: bad, input: {q: fail}, expected: x}",
    ]
    path = directory / "benchmark.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchkit", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _leaks(text: str, canaries: dict[str, str]) -> list[str]:
    """The canaries (or the random part of one) found in ``text``."""
    return [kind for kind, value in canaries.items() if value[-24:-8] in text]


@pytest.mark.slow
def test_echoed_credentials_are_nowhere_in_the_store_reports_or_api(
    tmp_path: Path, upstream: _Upstream
) -> None:
    from benchkit.serve import create_app

    from ._serve import running

    canaries = {
        kind: _canary(kind) for kind in ("header", "upstream", "llm", "judge", "tool", "token")
    }
    canaries["urlpw"] = upstream.url_password
    canaries["urlkey"] = upstream.url_key
    env = {
        **ENV,
        # Names that do not say "key" or "token": only the configuration says they are keys.
        "BK_UPSTREAM_AUTH": canaries["upstream"],
        "BK_LLM_AUTH": canaries["llm"],
        "BK_JUDGE_AUTH": canaries["judge"],
    }
    bench = _write_benchmark(tmp_path, upstream.server_address[1], canaries)
    store = tmp_path / "store.db"
    shown: list[str] = []
    ran = _cli(
        "run", str(bench), "--store", str(store), "--no-progress", "-f", "json",
        "-o", str(tmp_path / "result.json"), "--junit-xml", str(tmp_path / "junit.xml"),
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode in (0, 1), ran.stderr
    shown += [ran.stdout, ran.stderr]
    shown += [(tmp_path / "result.json").read_text(), (tmp_path / "junit.xml").read_text()]
    with Store(store) as opened:
        run_id = opened.summary("latest").run_id
        cells = opened.cells(run_id).cells
        errors = [c.error for c in cells if c.error]
        assert len(errors) >= 4  # every condition's failing task errored, quoting its request
        assert any("[redacted]" in (c.error or "") for c in cells)
    for fmt in ("table", "json", "markdown", "html"):
        out = _cli("runs", "show", run_id, "--store", str(store), "-f", fmt, env=env, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        shown.append(out.stdout)
    cells_list = _cli(
        "runs", "show", run_id, "--store", str(store), "--cells", env=env, cwd=tmp_path
    )
    shown.append(cells_list.stdout)
    for cell in cells:
        ref = f"{cell.task_id}/{cell.condition_id}/{cell.epoch}"
        out = _cli(
            "runs", "show", run_id, "--store", str(store), "--cell", ref, env=env, cwd=tmp_path
        )
        assert out.returncode == 0, out.stderr
        shown.append(out.stdout)
    for fmt in ("json", "jsonl"):
        out = _cli(
            "runs", "export", run_id, "--store", str(store), "--format", fmt, env=env, cwd=tmp_path
        )
        shown.append(out.stdout)
    report = _cli("report", str(tmp_path / "result.json"), "-f", "markdown", env=env, cwd=tmp_path)
    shown.append(report.stdout)

    # The API, with the server's own token as one more canary.
    app = create_app(store=store, root=tmp_path, token=canaries["token"])
    auth = {"Authorization": f"Bearer {canaries['token']}"}
    with running(app) as url, httpx.Client(base_url=url, headers=auth, timeout=60) as client:
        rated = client.post(
            f"/api/runs/{run_id}/ratings",
            json={"task": "ok", "condition": "chat", "rater": "me", "verdict": False,
                  "comment": f"it said {canaries['token']} and ?api_key={canaries['urlkey']}"},
        )  # fmt: skip
        assert rated.status_code == 201, rated.text
        paths = [
            "/api/runs",
            f"/api/runs/{run_id}",
            f"/api/runs/{run_id}/cells?limit=100",
            f"/api/runs/{run_id}/matrix",
            f"/api/runs/{run_id}/ratings",
            f"/api/runs/{run_id}/ratings?format=csv",
            f"/api/runs/{run_id}/ratings?format=jsonl",
            "/api/jobs",
            "/api/endpoints",
            "/api/benchmarks",
        ]
        paths += [
            f"/api/runs/{run_id}/cell?task={c.task_id}&condition={c.condition_id}&epoch=0"
            for c in cells
        ]
        for word in ("bkcanary", "redacted", "key", "Bearer", "mirror"):
            paths += [f"/api/search?q={word}", f"/api/runs/{run_id}/matrix?q={word}"]
        for path in paths:
            answer = client.get(path)
            assert answer.status_code == 200, (path, answer.text)
            shown.append(answer.text)
        for kind, value in canaries.items():
            found = client.get("/api/search", params={"q": value[:30]}).json()
            assert found["total"] == 0, kind
    leaked = {
        kind: text[max(0, text.find(canaries[kind][-24:-8]) - 200) :][:400]
        for text in shown
        for kind in _leaks(text, canaries)
    }
    assert leaked == {}, leaked
    db = sqlite3.connect(store)
    try:
        indexed = " ".join(
            str(v) for row in db.execute("SELECT * FROM cell_search").fetchall() for v in row
        )
        assert indexed and _leaks(indexed, canaries) == []
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("store.db*")).decode("latin-1")
    assert _leaks(stored, canaries) == []
