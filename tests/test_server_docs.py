"""docs/server.md works as written: every request it shows runs against ``python -m benchkit
serve`` started as the page starts it, in a scratch copy of the repository's ``benchmarks/``.

- The ``curl`` commands (its "Try it" section and any other) are sent as written — method,
  headers, body, URL — with ``http://127.0.0.1:8000`` read as the server's address and
  ``RUN_ID`` as the run the ``POST`` started; each answers 2xx.
- The JSON bodies under ``POST /api/runs`` are posted as written; each run is accepted and
  finishes. The chat model the CodeForge example names is reached at the endpoint
  ``gateway``, which the page's "Security model" starts the server with: here a local
  OpenAI-compatible server (tests/_llm_server.py) stands at its URL.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ._llm_server import FakeOpenAI
from ._support import REPO

pytestmark = pytest.mark.slow

PAGE = REPO / "docs" / "server.md"
_FENCE = re.compile(r"^ *```(\w+)\n(.*?)^ *```", re.DOTALL | re.MULTILINE)
#: The address the page's requests are written against, and the run they name.
DOCS_URL = "http://127.0.0.1:8000"


def _section(text: str, heading: str) -> str:
    """The text of the section under ``heading`` (to the next heading of any level <= it)."""
    start = text.index(heading)
    level = heading.split(" ")[0]
    rest = text[start + len(heading) :]
    end = re.search(rf"^#{{1,{len(level)}}} ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def _commands(text: str) -> list[list[str]]:
    """Each command line of the ``sh`` blocks of ``text``, split as the shell splits it."""
    found = []
    for language, body in _FENCE.findall(text):
        if language != "sh":
            continue
        joined = body.replace("\\\n", " ")
        found += [shlex.split(line, comments=True) for line in joined.splitlines()]
    return [argv for argv in found if argv]


TEXT = PAGE.read_text(encoding="utf-8")
CURLS = [argv for argv in _commands(TEXT) if argv[0] == "curl"]
BODIES = [
    body
    for language, body in _FENCE.findall(_section(TEXT, "### `POST /api/runs`"))
    if language == "json"
]


def _serve_command() -> list[str]:
    """The page's "Try it" command, with the endpoints its "Security model" gives."""
    (start,) = _commands(_section(TEXT, "## Try it"))[:1]
    endpoints = next(a for a in _commands(TEXT) if "--endpoint" in a and a[3] == "serve")
    assert start[:4] == ["python", "-m", "benchkit", "serve"], start
    extra = [a for a in endpoints[4:] if a != "\\"]
    return [sys.executable, *start[1:], *extra]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("server-docs")
    shutil.copytree(REPO / "benchmarks", root / "benchmarks")
    with FakeOpenAI() as model:
        argv = _serve_command()
        argv[argv.index("--port") + 1] = "0"
        argv = [a.replace("https://llm.example/v1", model.url) for a in argv]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHKIT_", "OPENAI_"))}
        env.update(GATEWAY_KEY="sk-gateway", PYTHONPATH=str(REPO / "src"))
        process = subprocess.Popen(argv, cwd=root, env=env, stderr=subprocess.PIPE, text=True)
        try:
            assert process.stderr is not None
            line = process.stderr.readline()
            found = re.search(r"http://127\.0\.0\.1:\d+", line)
            assert found, line + process.stderr.read()
            yield {"url": found.group(0), "model": model, "root": root}
        finally:
            process.terminate()
            process.wait(30)


def _finish(client: httpx.Client, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        detail: dict[str, Any] = client.get(f"/api/runs/{run_id}").json()
        if detail["run"]["status"] in ("finished", "failed", "interrupted"):
            return detail
        assert time.monotonic() < deadline, detail
        time.sleep(0.1)


def _send(client: httpx.Client, argv: list[str], run_id: str) -> httpx.Response:
    """A ``curl`` command line sent as curl would send it."""
    method, headers, data, url = "GET", {}, None, None
    args = iter(argv[1:])
    for arg in args:
        if arg == "-X":
            method = next(args)
        elif arg == "-H":
            key, _, value = next(args).partition(":")
            headers[key.strip()] = value.strip()
        elif arg == "-d":
            data = next(args)
            method = "POST" if method == "GET" else method
        elif arg in ("-s", "-N"):
            continue
        else:
            assert not arg.startswith("-"), f"an option this test does not read: {arg}"
            url = arg
    assert url is not None and url.startswith(DOCS_URL), argv
    target = url[len(DOCS_URL) :].replace("RUN_ID", run_id)
    if "-N" in argv:  # a stream: read it to its end
        with client.stream(method, target, headers=headers) as response:
            body = b"".join(response.iter_bytes())
        return httpx.Response(response.status_code, content=body, headers=response.headers)
    return client.request(method, target, headers=headers, content=data)


def test_the_page_shows_requests() -> None:
    assert len(CURLS) >= 5 and len(BODIES) >= 3
    assert any(a[:2] == ["curl", "-s"] and "-d" in a for a in CURLS), "a POST among them"


def test_every_curl_command_answers_as_the_page_says(server: dict[str, Any]) -> None:
    with httpx.Client(base_url=server["url"], timeout=60) as client:
        run_id = ""
        for argv in CURLS:
            response = _send(client, argv, run_id)
            where = shlex.join(argv)
            assert 200 <= response.status_code < 300, f"{where}\n{response.text}"
            if "/api/runs" in where and "-d" in argv:
                assert response.status_code == 202, where
                run_id = response.json()["run_id"]
                detail = _finish(client, run_id)
                # as the page says: the mock's outputs pass, its default fails the others
                assert detail["run"]["status"] == "finished", detail["run"]
                assert detail["aggregates"][0]["passed"] == 2, detail["aggregates"]
            elif "/events" in where:
                assert "event: end" in response.text, response.text
            elif where.endswith("/docs"):
                assert "<h1>" in response.text and "/api/runs" in response.text
            else:
                response.json()  # every other answer is JSON
        assert run_id, "the page's POST started a run"
        assert client.get(f"/api/runs/{run_id}").status_code == 404, "and DELETE removed it"


@pytest.mark.parametrize("body", BODIES, ids=[f"body{n}" for n in range(len(BODIES))])
def test_every_request_body_starts_a_run_that_finishes(server: dict[str, Any], body: str) -> None:
    with httpx.Client(base_url=server["url"], timeout=60) as client:
        response = client.post(
            "/api/runs", content=body, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 202, f"{body}\n{response.text}"
        detail = _finish(client, response.json()["run_id"])
        run = detail["run"]
        assert run["status"] == "finished", run
        assert run["cells"] == run["total_cells"] > 0, run
        if '"chat"' in body:  # the model was asked at the gateway, with the gateway's key
            asked = server["model"].requests
            keys = {v for r in asked for k, v in r.headers.items() if k.lower() == "authorization"}
            assert keys == {"Bearer sk-gateway"}, keys
