"""Hostile requests and files against a real server (issue #31, item 7): deep JSON, long
paths, FIFOs under the root, and clients that never finish their headers."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from benchkit.serve import create_app

from ._serve import running, serve, wait_for, write_benchmark

JSON = {"Content-Type": "application/json"}
WRITES = ("/api/runs", "/bench/runs", "/api/v1/benchmarks/runs", "/api/v1/benchmarks/compare")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    write_benchmark(base / "quick", tasks=2)
    (base / "bench").mkdir()
    (base / "benchmarks" / "codeforge").mkdir(parents=True)
    return base


@pytest.fixture
def site(root: Path, tmp_path: Path) -> Iterator[httpx.Client]:
    with (
        running(create_app(store=tmp_path / "store.db", root=root)) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        yield client


def test_deeply_nested_json_is_a_400(site: httpx.Client) -> None:
    for depth in (65, 1_000, 100_000):
        for body in ("[" * depth + "]" * depth, '{"benchmark": ' + "[" * depth + "]" * depth + "}"):
            for path in WRITES:
                response = site.post(path, content=body, headers=JSON)
                assert response.status_code == 400, (path, depth, response.text)
    shallow = {"benchmark": "quick/benchmark.yaml", "format": "native"}
    assert site.post("/api/runs", json=shallow).status_code == 202
    problem = site.post("/api/runs", content="[" * 2000 + "]" * 2000, headers=JSON).json()
    assert "more than 64 deep" in problem["error"]


def test_long_paths_are_4xx_and_the_connection_lives(site: httpx.Client) -> None:
    long = "a" * 5000
    for method, path, body in (
        ("GET", "/" + long, None),
        ("GET", "/static/" + long, None),
        ("GET", "/api/runs/" + long, None),
        ("GET", "/bench/runs/" + long, None),
        ("GET", "/bench/runs/" + long + "/report", None),
        ("GET", "/memorybench/api/run/" + long, None),
        ("GET", "/api/v1/benchmarks/runs/" + long, None),
        ("POST", "/api/runs", {"benchmark": long}),
        ("POST", "/api/runs", {"benchmark": "x/" * 2500}),
        ("POST", "/api/runs", {"benchmark": "quick/" + long + ".yaml"}),
        ("POST", "/bench/runs", {"configPath": long}),
        ("POST", "/bench/runs", {"configPath": "bench/" + long}),
    ):
        response = site.request(method, path, json=body)
        assert 400 <= response.status_code < 500, (method, path[:40], response.text[:200])
        assert "Traceback" not in response.text
        # The same keep-alive connection still answers (no reset after an error).
        assert site.get("/api/jobs").status_code == 200
    # CodeForge accepts a run whatever dataset it names (201, as the original); the run
    # then fails, saying why, instead of a 500 from a name the file system refuses.
    base = "/api/v1/benchmarks/runs"
    created = site.post(base, json={"dataset": long, "model": "m", "metrics": ["correctness"]})
    assert created.status_code == 201, created.text[:200]
    done = wait_for(site, f"{base}/{created.json()['id']}", lambda r: r["status"] != "running")
    assert done["status"] == "failed"
    assert "dataset cannot be read" in done["error"] or "no dataset" in done["error"]
    assert site.get("/api/jobs").status_code == 200


def test_fifos_under_the_root_never_block_a_listing(root: Path, site: httpx.Client) -> None:
    for where in ("pipe.yaml", "bench/pipe.yaml", "benchmarks/codeforge/pipe.yaml"):
        os.mkfifo(root / where)
    (root / "link.yaml").symlink_to(root / "pipe.yaml")

    def listing(path: str) -> int:
        return site.get(path).status_code

    with ThreadPoolExecutor(48) as pool:
        paths = ["/api/benchmarks"] * 44 + ["/bench/configs", "/api/v1/benchmarks/datasets"] * 2
        assert list(pool.map(listing, paths)) == [200] * 48
    listed = site.get("/api/benchmarks").json()
    assert [b["path"] for b in listed["benchmarks"]] == ["quick/benchmark.yaml"]
    for name in ("pipe.yaml", "link.yaml"):
        refused = site.post("/api/runs", json={"benchmark": name})
        assert refused.status_code == 400, refused.text
        assert "not a regular file" in refused.json()["error"]
    assert site.post("/bench/runs", json={"configPath": "bench/pipe.yaml"}).status_code == 404


def test_loading_a_fifo_is_an_error_not_a_wait(tmp_path: Path) -> None:
    from benchkit import formats
    from benchkit.errors import FormatError

    os.mkfifo(tmp_path / "pipe.yaml")
    with pytest.raises(FormatError, match="not a regular file"):
        formats.load(tmp_path / "pipe.yaml")


def _closed_by_server(sock: socket.socket, trickle: bytes, *, limit: float = 30.0) -> bool:
    """Send ``trickle`` a byte at a time (every 0.1 s) until the server closes the
    connection or ``limit`` seconds pass; True when the server closed it."""
    sock.settimeout(0.1)
    deadline = time.monotonic() + limit
    position = 0
    while time.monotonic() < deadline:
        try:
            if sock.recv(1024) == b"":
                return True
        except TimeoutError:
            pass
        except OSError:
            return True
        try:
            sock.send(trickle[position % len(trickle) : position % len(trickle) + 1])
        except OSError:
            return True
        position += 1
    return False


def test_a_client_that_never_finishes_its_headers_is_cut_off(root: Path, tmp_path: Path) -> None:
    with serve(root, tmp_path / "store.db", "--header-timeout", "1") as (_, url):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as idle:
            idle.settimeout(30)
            assert idle.recv(1024) == b""  # nothing sent: closed
        with socket.create_connection((host, int(port))) as slow:
            slow.sendall(b"GET /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            assert _closed_by_server(slow, b"X-Slow: 1\r\n")  # bytes keep coming: closed
        # A normal client, even a keep-alive one between requests, is served as before.
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.get("/api/jobs").status_code == 200
            assert (
                client.post("/api/runs", json={"benchmark": "quick/benchmark.yaml"}).status_code
                == 202
            )
            assert client.get("/api/jobs").status_code == 200
