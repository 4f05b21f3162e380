"""benchkit's own API, against a real uvicorn server on 127.0.0.1 driven by httpx."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchkit.serve import create_app

from ._serve import running, wait_for, write_benchmark


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    write_benchmark(base / "quick", tasks=6)
    write_benchmark(base / "slow", tasks=40, sleep=0.05, ident="slower")
    (base / "broken.yaml").write_text("benchkit: 1\nid: broken\ntasks: 3\n")
    return base


@pytest.fixture
def server(root: Path, tmp_path: Path) -> Iterator[httpx.Client]:
    app = create_app(store=tmp_path / "store.db", root=root, max_running=2)
    with running(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield client


def _finish(client: httpx.Client, run_id: str) -> dict[str, Any]:
    return wait_for(
        client,
        f"/api/runs/{run_id}",
        lambda body: body["run"]["status"] in ("finished", "failed", "interrupted"),
    )


def _start(client: httpx.Client, benchmark: str, **extra: Any) -> str:
    response = client.post("/api/runs", json={"benchmark": benchmark, **extra})
    assert response.status_code == 202, response.text
    run_id: str = response.json()["run_id"]
    return run_id


def test_import_benchkit_does_not_import_the_server_stack() -> None:
    code = (
        "import sys, benchkit, benchkit.cli, benchkit.serve, benchkit.serve._cli; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_root_page_and_openapi_cover_every_route(server: httpx.Client, tmp_path: Path) -> None:
    page = server.get("/")
    assert page.status_code == 200
    assert '<script src="/static/app.js">' in page.text
    document = server.get("/openapi.json").json()
    assert document["openapi"].startswith("3.")
    documented = set(document["paths"])
    app = create_app(store=Path(tmp_path) / "other.db", root=Path(tmp_path))
    pages = {"/", "/static/{name}", "/openapi.json", "/docs"}
    served = {route.path for route in app.routes} - pages  # type: ignore[attr-defined]
    assert served == documented
    for path in (
        "/api/runs",
        "/api/runs/{run_id}",
        "/api/runs/{run_id}/cells",
        "/api/runs/{run_id}/cell",
        "/api/runs/{run_id}/cancel",
        "/api/runs/{run_id}/resume",
        "/api/runs/{run_id}/events",
        "/api/compare",
        "/api/benchmarks",
        "/api/jobs",
        "/health",
        "/bench/configs",
        "/bench/runs",
        "/bench/runs/{run_id}",
        "/bench/runs/{run_id}/report",
        "/api/v1/benchmarks/runs",
        "/api/v1/benchmarks/runs/{run_id}",
        "/api/v1/benchmarks/runs/{run_id}/results",
        "/api/v1/benchmarks/compare",
        "/api/v1/benchmarks/datasets",
        "/api/v1/benchmarks/metrics",
        "/memorybench/api/data",
        "/memorybench/api/runs",
        "/memorybench/api/run/{run_id}",
    ):
        assert path in documented, path
    body = document["paths"]["/api/runs"]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"]["required"] == ["benchmark"]


def test_a_run_started_over_http_is_stored_and_served(server: httpx.Client) -> None:
    run_id = _start(server, "quick/benchmark.yaml")
    detail = _finish(server, run_id)
    run = detail["run"]
    assert run["status"] == "finished"
    assert run["format"] == "native"
    assert run["source_path"] == "quick/benchmark.yaml"
    assert (run["cells"], run["total_cells"], run["errors"]) == (12, 12, 0)
    rates = {a["condition_id"]: a["pass_rate"] for a in detail["aggregates"]}
    assert rates == {"a": 1.0, "b": pytest.approx(2 / 6)}
    assert detail["error_categories"] == [
        {"condition_id": "b", "category": "assertion_failed", "count": 4}
    ]
    assert detail["comparisons"]
    assert detail["sessions"][0]["kind"] == "start"
    assert detail["info"]["source_path"] == "quick/benchmark.yaml"

    listed = server.get("/api/runs").json()
    assert listed["total"] == 1
    assert listed["runs"][0]["run_id"] == run_id
    for query, total in (
        ({"benchmark": "slow"}, 1),
        ({"benchmark": "nope"}, 0),
        ({"format": "native"}, 1),
        ({"format": "skillvault"}, 0),
        ({"status": "finished"}, 1),
        ({"status": "running"}, 0),
        ({"since": "2000-01-01"}, 1),
        ({"until": "2000-01-01"}, 0),
    ):
        assert server.get("/api/runs", params=query).json()["total"] == total, query


def test_cells_filter_sort_and_page_in_sql(server: httpx.Client) -> None:
    run_id = _start(server, "quick/benchmark.yaml")
    _finish(server, run_id)
    url = f"/api/runs/{run_id}/cells"
    every = server.get(url).json()
    assert every["total"] == 12
    assert [(c["task_id"], c["condition_id"]) for c in every["cells"][:3]] == [
        ("t0", "a"),
        ("t0", "b"),
        ("t1", "a"),
    ]
    page = server.get(url, params={"limit": 5, "offset": 10}).json()
    assert (page["total"], len(page["cells"]), page["offset"]) == (12, 2, 10)
    failed = server.get(url, params={"status": "fail"}).json()
    assert failed["total"] == 4
    assert {c["condition_id"] for c in failed["cells"]} == {"b"}
    assert server.get(url, params={"condition": "a", "status": "pass,fail"}).json()["total"] == 6
    assert server.get(url, params={"task": "t[12]"}).json()["total"] == 4
    even = server.get(url, params={"tag": "even"}).json()
    assert even["total"] == 6
    assert {c["task_id"] for c in even["cells"]} == {"t0", "t2", "t4"}
    by_score = server.get(url, params={"sort": "score", "order": "desc", "limit": 8}).json()
    assert [c["score"] for c in by_score["cells"]] == [1.0] * 8
    by_score = server.get(url, params={"sort": "score", "limit": 4}).json()
    assert [c["score"] for c in by_score["cells"]] == [0.0] * 4
    newest = server.get(url, params={"sort": "task", "order": "desc", "limit": 1}).json()
    assert newest["cells"][0]["task_id"] == "t5"

    cell = server.get(f"/api/runs/{run_id}/cell", params={"task": "t1", "condition": "b"})
    assert cell.status_code == 200
    assert cell.json()["status"] == "fail"
    assert cell.json()["error_category"] == "assertion_failed"
    missing = server.get(f"/api/runs/{run_id}/cell", params={"task": "t9", "condition": "b"})
    assert missing.status_code == 404
    assert missing.json()["code"] == "CELL_NOT_FOUND"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "abc"}, "limit"),
        ({"limit": "0"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"sort": "colour"}, "sort"),
        ({"order": "sideways"}, "order"),
    ],
)
def test_bad_query_parameters_are_400_naming_them(
    server: httpx.Client, params: dict[str, str], field: str
) -> None:
    response = server.get("/api/runs/whatever/cells", params=params)
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_QUERY"
    assert response.json()["details"]["field"] == field


def test_unknown_runs_are_404(server: httpx.Client) -> None:
    for method, url in (
        ("GET", "/api/runs/run_nope"),
        ("GET", "/api/runs/run_nope/cells"),
        ("GET", "/api/runs/run_nope/cell?task=a&condition=b"),
        ("DELETE", "/api/runs/run_nope"),
        ("POST", "/api/runs/run_nope/cancel"),
        ("GET", "/api/runs/run_nope/events"),
        ("GET", "/api/compare?a=run_nope&b=run_nope"),
    ):
        response = server.request(method, url, json={} if method == "POST" else None)
        assert response.status_code == 404, (method, url)
        assert response.json()["code"] == "RUN_NOT_FOUND"
    assert server.get("/api/status").status_code == 404
    assert server.get("/api/status").json() == {"error": "not found"}
    assert server.put("/api/runs", json={}).status_code == 405


@pytest.mark.parametrize(
    ("body", "field", "text"),
    [
        ({}, "benchmark", "benchmark is required"),
        ({"benchmark": ""}, "benchmark", "must not be empty"),
        ({"benchmark": 3}, "benchmark", "must be of type string"),
        ({"benchmark": "x", "colour": 1}, "body", "colour"),
        ({"benchmark": "x", "options": {"concurrency": 0}}, "options.concurrency", ">= 1"),
        ({"benchmark": "x", "options": {"epochs": "2"}}, "options.epochs", "integer"),
        ({"benchmark": "x", "conditions": [{"id": "a"}]}, "conditions.0.provider", "required"),
        ({"benchmark": "x", "chat": {"model": "m", "metrics": []}}, "chat.metrics", "at least"),
    ],
)
def test_bodies_are_validated_naming_the_field(
    server: httpx.Client, body: dict[str, Any], field: str, text: str
) -> None:
    response = server.post("/api/runs", json=body)
    assert response.status_code == 400
    error = response.json()
    assert error["code"] == "INVALID_BODY"
    assert error["details"]["field"] == field
    assert text in error["error"]


def test_path_escapes_are_refused(server: httpx.Client, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_benchmark(outside)
    (root / "link").symlink_to(outside, target_is_directory=True)
    for benchmark, reason in (
        ("../outside/benchmark.yaml", "outside"),
        ("quick/../../outside/benchmark.yaml", "outside"),
        (str(outside / "benchmark.yaml"), "outside"),
        ("/etc/passwd", "outside"),
        ("link/benchmark.yaml", "outside"),
        ("http://example.com/benchmark.yaml", "url"),
        ("file:///etc/passwd", "url"),
    ):
        response = server.post("/api/runs", json={"benchmark": benchmark})
        assert response.status_code == 400, benchmark
        error = response.json()
        assert error["code"] == "PATH_INVALID"
        assert error["details"]["reason"] == reason
        assert str(tmp_path) not in response.text
    inside = server.post("/api/runs", json={"benchmark": str(root / "quick/benchmark.yaml")})
    assert inside.status_code == 202
    missing = server.post("/api/runs", json={"benchmark": "nowhere.yaml"})
    assert (missing.status_code, missing.json()["code"]) == (404, "BENCHMARK_NOT_FOUND")
    broken = server.post("/api/runs", json={"benchmark": "broken.yaml"})
    assert broken.status_code == 400
    assert broken.json()["code"] == "INVALID_BENCHMARK"
    assert "Traceback" not in broken.text
    _finish(server, inside.json()["run_id"])


def test_bodies_need_json_a_content_type_and_a_size_limit(server: httpx.Client) -> None:
    form = server.post("/api/runs", data={"benchmark": "quick/benchmark.yaml"})
    assert form.status_code == 415
    assert form.json()["code"] == "UNSUPPORTED_MEDIA_TYPE"
    text = server.post(
        "/api/runs", content=b'{"benchmark": "x"}', headers={"content-type": "text/plain"}
    )
    assert text.status_code == 415
    bad = server.post(
        "/api/runs", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert (bad.status_code, bad.json()["code"]) == (400, "INVALID_JSON")
    huge = server.post("/api/runs", json={"benchmark": "x", "format": "y" * (2 * 1024 * 1024)})
    assert (huge.status_code, huge.json()["code"]) == (413, "BODY_TOO_LARGE")


def test_compare_and_delete(server: httpx.Client) -> None:
    first = _start(server, "quick/benchmark.yaml")
    second = _start(server, "quick/benchmark.yaml")
    _finish(server, first)
    _finish(server, second)
    compared = server.get("/api/compare", params={"a": first, "b": second}).json()
    assert (compared["run_a"], compared["run_b"]) == (first, second)
    assert [c["condition_a"] for c in compared["conditions"]] == ["a", "b"]
    assert all(c["paired"] == 6 for c in compared["conditions"])
    crossed = server.get("/api/compare", params={"a": first, "b": second, "pair": "a:b"}).json()
    assert crossed["conditions"][0]["pass_rate_b"] == pytest.approx(2 / 6)
    bad_pair = server.get("/api/compare", params={"a": first, "b": second, "pair": "a"})
    assert bad_pair.status_code == 400
    assert server.get("/api/compare", params={"a": first}).status_code == 400

    deleted = server.delete(f"/api/runs/{first}")
    assert deleted.json() == {"run_id": first, "deleted_cells": 12}
    assert server.get(f"/api/runs/{first}").status_code == 404
    assert server.get("/api/runs").json()["total"] == 1


def test_run_page_and_compare_read_no_cell(server: httpx.Client, tmp_path: Path) -> None:
    """A finished run's page is what the run stored when it ended, and a comparison reads
    ids, statuses and scores from columns: neither depends on the run's size. Shown by
    breaking every stored cell's JSON after the runs finished."""
    first = _start(server, "quick/benchmark.yaml")
    second = _start(server, "quick/benchmark.yaml")
    _finish(server, first)
    page = _finish(server, second)
    compared = server.get("/api/compare", params={"a": first, "b": second}).json()
    with sqlite3.connect(tmp_path / "store.db") as db:
        assert db.execute("UPDATE cells SET data = '{broken'").rowcount == 24
    again = server.get(f"/api/runs/{second}").json()
    for key in ("aggregates", "groups", "comparisons", "error_categories"):
        assert again[key] == page[key], key
    assert server.get("/api/compare", params={"a": first, "b": second}).json() == compared


def test_benchmarks_under_the_root_are_listed(server: httpx.Client) -> None:
    found = server.get("/api/benchmarks").json()
    assert [b["path"] for b in found["benchmarks"]] == [
        "quick/benchmark.yaml",
        "slow/benchmark.yaml",
    ]
    assert found["benchmarks"][0]["conditions"] == ["a", "b"]
    # the file's own run options (`run: {concurrency: 2}`), where the start form begins
    assert found["benchmarks"][0]["options"] == {"epochs": 1, "concurrency": 2}
    assert [p["path"] for p in found["problems"]] == ["broken.yaml"]


def test_concurrent_posts_queue_beyond_the_limit(server: httpx.Client) -> None:
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        ids = list(pool.map(lambda _: _start(server, "slow/benchmark.yaml"), range(6)))
    assert len(set(ids)) == 6
    jobs = server.get("/api/jobs").json()["jobs"]
    statuses = [job["status"] for job in jobs]
    assert statuses.count("running") <= 2
    assert "queued" in statuses
    for run_id in ids:
        assert _finish(server, run_id)["run"]["status"] == "finished"
    rows = server.get("/api/runs", params={"limit": 10}).json()["runs"]
    assert {r["run_id"] for r in rows} == set(ids)
    assert all(r["cells"] == 80 for r in rows)


def test_cancel_then_resume_loses_and_doubles_nothing(server: httpx.Client) -> None:
    run_id = _start(server, "slow/benchmark.yaml")
    wait_for(server, f"/api/runs/{run_id}", lambda b: b["run"]["cells"] >= 4)
    cancelled = server.post(f"/api/runs/{run_id}/cancel", json={})
    assert cancelled.status_code == 202
    detail = wait_for(server, f"/api/runs/{run_id}", lambda b: b["run"]["status"] == "interrupted")
    kept = detail["run"]["cells"]
    assert 4 <= kept < 80
    again = server.post(f"/api/runs/{run_id}/cancel", json={})
    assert (again.status_code, again.json()["code"]) == (409, "RUN_NOT_ACTIVE")
    before = server.get(f"/api/runs/{run_id}/cells", params={"limit": 1000}).json()["cells"]

    resumed = server.post(f"/api/runs/{run_id}/resume", json={})
    assert resumed.status_code == 202
    assert resumed.json()["job"]["kind"] == "resume"
    detail = _finish(server, run_id)
    assert detail["run"]["status"] == "finished"
    assert (detail["run"]["cells"], detail["run"]["total_cells"]) == (80, 80)
    assert [s["kind"] for s in detail["sessions"]] == ["start", "resume"]
    assert detail["sessions"][1]["reused"] == kept
    after = server.get(f"/api/runs/{run_id}/cells", params={"limit": 1000}).json()["cells"]
    keys = [(c["task_id"], c["condition_id"], c["epoch"]) for c in after]
    assert len(keys) == len(set(keys)) == 80
    unchanged = {(c["task_id"], c["condition_id"]): c["started_at"] for c in after}
    assert all(unchanged[(c["task_id"], c["condition_id"])] == c["started_at"] for c in before)


def test_a_running_run_cannot_be_deleted_or_resumed(server: httpx.Client) -> None:
    run_id = _start(server, "slow/benchmark.yaml")
    wait_for(server, f"/api/runs/{run_id}", lambda b: b["run"]["cells"] >= 1)
    assert server.delete(f"/api/runs/{run_id}").status_code == 409
    busy = server.post(f"/api/runs/{run_id}/resume", json={})
    assert (busy.status_code, busy.json()["code"]) == (409, "RUN_ACTIVE")
    server.post(f"/api/runs/{run_id}/cancel", json={})
    wait_for(server, f"/api/runs/{run_id}", lambda b: b["run"]["status"] == "interrupted")


def test_progress_streams_as_server_sent_events(server: httpx.Client) -> None:
    run_id = _start(server, "slow/benchmark.yaml")
    events: list[tuple[str, dict[str, Any]]] = []
    with server.stream("GET", f"/api/runs/{run_id}/events") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[len("data: ") :])))
    kinds = [name for name, _ in events]
    assert kinds[0] == "status"
    assert kinds[-1] == "end"
    assert "progress" in kinds
    progress = [data for name, data in events if name == "progress"]
    assert [p["done"] for p in progress] == sorted(p["done"] for p in progress)
    assert progress[-1]["total"] == 80
    assert events[-1][1]["status"] == "finished"
    assert events[-1][1]["progress"]["done"] == 80
    finished = server.get(f"/api/runs/{run_id}/events")
    assert finished.text.startswith("event: end\n")
    assert '"status": "finished"' in finished.text


def test_errors_never_carry_tracebacks_or_outside_paths(
    server: httpx.Client, tmp_path: Path
) -> None:
    response = server.post(
        "/api/runs", json={"benchmark": "quick/benchmark.yaml", "format": "no-such-format"}
    )
    assert response.status_code == 400
    assert "Traceback" not in response.text
    assert str(tmp_path / "store.db") not in response.text


def test_a_token_is_required_and_scopes_are_honoured(root: Path, tmp_path: Path) -> None:
    app = create_app(
        store=tmp_path / "store.db",
        root=root,
        token="admin-token",
        tokens={"reader": ["read:evals"], "writer": ["write:evals"]},
    )
    with running(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        bare = client.get("/api/runs")
        assert (bare.status_code, bare.json()) == (401, {"error": "Missing bearer token"})
        # As skillvault's manager API: /health needs no token.
        assert client.get("/health").json() == {"ok": True}
        # The API's page describes routes, holds no data: no token either.
        assert "POST" in client.get("/docs").text.upper()
        assert client.get("/openapi.json").status_code == 401
        wrong = client.get("/api/runs", headers={"Authorization": "Bearer nope"})
        assert (wrong.status_code, wrong.json()) == (401, {"error": "Invalid token"})
        basic = client.get("/api/runs", headers={"Authorization": "Basic YWRtaW4="})
        assert basic.status_code == 401

        def as_(token: str) -> dict[str, str]:
            return {"Authorization": f"Bearer {token}"}

        assert client.get("/api/runs", headers=as_("reader")).status_code == 200
        assert client.get("/openapi.json", headers=as_("reader")).status_code == 200
        denied = client.post(
            "/api/runs", json={"benchmark": "quick/benchmark.yaml"}, headers=as_("reader")
        )
        assert (denied.status_code, denied.json()) == (
            403,
            {"error": "Missing permission: write:evals"},
        )
        blind = client.get("/bench/runs", headers=as_("writer"))
        assert (blind.status_code, blind.json()) == (
            403,
            {"error": "Missing permission: read:evals"},
        )
        started = client.post(
            "/api/runs", json={"benchmark": "quick/benchmark.yaml"}, headers=as_("admin-token")
        )
        assert started.status_code == 202
        run_id = started.json()["run_id"]
        wait_for(
            httpx.Client(base_url=url, headers=as_("reader"), timeout=60),
            f"/api/runs/{run_id}",
            lambda b: b["run"]["status"] == "finished",
        )


def test_cors_is_off_unless_configured(root: Path, tmp_path: Path) -> None:
    origin = {"Origin": "http://ui.example", "Access-Control-Request-Method": "GET"}
    with running(create_app(store=tmp_path / "a.db", root=root)) as url:
        plain = httpx.get(f"{url}/api/runs", headers=origin)
        assert "access-control-allow-origin" not in plain.headers
    app = create_app(store=tmp_path / "b.db", root=root, cors_origins=("http://ui.example",))
    with running(app) as url:
        allowed = httpx.get(f"{url}/api/runs", headers=origin)
        assert allowed.headers["access-control-allow-origin"] == "http://ui.example"
        other = httpx.get(f"{url}/api/runs", headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in other.headers


def test_the_app_works_in_process_through_asgi_transport(root: Path, tmp_path: Path) -> None:
    import anyio

    app = create_app(store=tmp_path / "store.db", root=root)

    async def main() -> tuple[int, dict[str, Any]]:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1"
            ) as client:
                started = await client.post("/api/runs", json={"benchmark": "quick/benchmark.yaml"})
                run_id = started.json()["run_id"]
                while True:
                    body = (await client.get(f"/api/runs/{run_id}")).json()
                    if body["run"]["status"] == "finished":
                        return started.status_code, body
                    await anyio.sleep(0.02)

    status, body = anyio.run(main)
    assert status == 202
    assert body["run"]["cells"] == 12
    assert os.path.exists(tmp_path / "store.db")


def test_without_a_token_only_loopback_host_names_are_answered(server: httpx.Client) -> None:
    rebound = server.get("/api/runs", headers={"Host": "attacker.example"})
    assert (rebound.status_code, rebound.json()) == (421, {"error": "Host not allowed"})
    for host in ("localhost:8000", "127.0.0.1", "[::1]:80"):
        assert server.get("/api/runs", headers={"Host": host}).status_code == 200, host


def test_requests_cannot_name_providers_that_run_code(server: httpx.Client) -> None:
    for kind in ("subprocess", "python"):
        response = server.post(
            "/api/runs",
            json={
                "benchmark": "quick/benchmark.yaml",
                "conditions": [{"id": "x", "provider": {"type": kind, "options": {}}}],
            },
        )
        assert response.status_code == 400
        assert response.json()["details"]["field"] == "conditions.0.provider.type"
    outputs = {f"t{n}": f"x{n}" for n in range(6)}
    echo = server.post(
        "/api/runs",
        json={
            "benchmark": "quick/benchmark.yaml",
            "conditions": [
                {"id": "echo", "provider": {"type": "mock", "options": {"outputs": outputs}}}
            ],
        },
    )
    assert echo.status_code == 202
    detail = _finish(server, echo.json()["run_id"])
    assert (detail["run"]["conditions"], detail["run"]["cells"]) == (["echo"], 6)
    assert detail["aggregates"][0]["pass_rate"] == 1.0


def _mock(server: httpx.Client, options: dict[str, Any]) -> httpx.Response:
    condition = {"id": "m", "provider": {"type": "mock", "options": options}}
    return server.post(
        "/api/runs", json={"benchmark": "quick/benchmark.yaml", "conditions": [condition]}
    )


def test_a_mock_is_written_in_json_and_refused_at_request_time(server: httpx.Client) -> None:
    """A mock's ``outputs`` (task id -> output) and ``default`` are plain JSON; a mock the
    run could not use is a 400 naming the field before anything runs, never a failed job
    whose fix is Python."""
    prefix = "conditions.0.provider.options"
    refusals: list[tuple[dict[str, Any], str, str]] = [
        ({}, f"{prefix}.outputs", "INVALID_BODY"),
        ({"outputs": ["x0"]}, f"{prefix}.outputs", "INVALID_BODY"),
        ({"outputs": "x0"}, f"{prefix}.outputs", "INVALID_BODY"),
        ({"default": "x", "delay": -1}, f"{prefix}.delay", "INVALID_BODY"),
        ({"default": "x", "delay": "1"}, f"{prefix}.delay", "INVALID_BODY"),
        ({"outputs": {"t0": "x0", "t9": "x9"}}, f"{prefix}.outputs.t9", "INVALID_BENCHMARK"),
    ]
    for options, field, code in refusals:
        refused = _mock(server, options)
        assert refused.status_code == 400, (options, refused.text)
        body = refused.json()
        assert (body["code"], body["details"]["field"]) == (code, field), options
        assert "MockProvider(" not in refused.text, "the fix is JSON, not Python"
        assert '"type": "mock"' in body["details"]["fix"] or "task ids" in body["details"]["fix"]
    assert server.get("/api/runs").json()["total"] == 0, "nothing was started"
    # outputs for some tasks, default for the others: t0 and t1 pass, the rest answer "0"
    started = _mock(server, {"outputs": {"t0": "x0", "t1": "x1"}, "default": "0"})
    assert started.status_code == 202, started.text
    detail = _finish(server, started.json()["run_id"])
    assert detail["run"]["status"] == "finished"
    cells = server.get(f"/api/runs/{started.json()['run_id']}/cells").json()["cells"]
    assert {c["task_id"]: c["status"] for c in cells} == {
        f"t{n}": "pass" if n < 2 else "fail" for n in range(6)
    }
    # default alone: every task answers it
    alone = _mock(server, {"default": "x3"})
    assert alone.status_code == 202, alone.text
    assert _finish(server, alone.json()["run_id"])["aggregates"][0]["passed"] == 1


def test_responses_match_the_openapi_schemas(server: httpx.Client) -> None:
    import jsonschema
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    document = server.get("/openapi.json").json()
    registry = Registry().with_resource(
        "urn:benchkit-openapi", Resource.from_contents(document, default_specification=DRAFT202012)
    )

    def check(value: Any, name: str) -> None:
        schema = {"$ref": f"urn:benchkit-openapi#/components/schemas/{name}"}
        jsonschema.Draft202012Validator(schema, registry=registry).validate(value)

    accepted = server.post("/api/runs", json={"benchmark": "quick/benchmark.yaml"}).json()
    check(accepted, "Accepted")
    detail = _finish(server, accepted["run_id"])
    check(detail, "RunDetail")
    check(server.get("/api/runs").json(), "RunPage")
    page = server.get(f"/api/runs/{accepted['run_id']}/cells").json()
    check(page, "CellPage")
    check(page["cells"][0], "Cell")
    check(server.get("/api/runs/nope").json(), "Error")
    with pytest.raises(jsonschema.ValidationError):
        check({"runs": [{"run_id": 3}]}, "RunPage")
