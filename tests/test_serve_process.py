"""``python -m benchkit serve`` as a real process: safe defaults, and a server killed
mid-run whose run resumes, after a restart, with no cell lost or doubled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from ._serve import serve, wait_for, write_benchmark


def test_a_killed_server_leaves_an_interrupted_run_that_resumes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write_benchmark(root / "slow", tasks=60, sleep=0.05)
    store = tmp_path / "store.db"
    with serve(root, store) as (process, url), httpx.Client(base_url=url, timeout=60) as client:
        run_id = client.post("/api/runs", json={"benchmark": "slow/benchmark.yaml"}).json()[
            "run_id"
        ]
        wait_for(client, f"/api/runs/{run_id}", lambda b: b["run"]["cells"] >= 10)
        process.send_signal(signal.SIGKILL)
        process.wait(30)

    with serve(root, store) as (_, url), httpx.Client(base_url=url, timeout=60) as client:
        detail = client.get(f"/api/runs/{run_id}").json()
        assert detail["run"]["status"] == "interrupted"
        assert detail["run"]["crashed"] is True
        kept = detail["run"]["cells"]
        assert 10 <= kept < 120
        before = client.get(f"/api/runs/{run_id}/cells", params={"limit": 1000}).json()["cells"]
        listed = client.get("/api/runs", params={"status": "crashed"}).json()
        assert [r["run_id"] for r in listed["runs"]] == [run_id]

        resumed = client.post(f"/api/runs/{run_id}/resume", json={})
        assert resumed.status_code == 202, resumed.text
        detail = wait_for(client, f"/api/runs/{run_id}", lambda b: b["run"]["status"] == "finished")
        assert (detail["run"]["cells"], detail["run"]["total_cells"]) == (120, 120)
        assert [s["kind"] for s in detail["sessions"]] == ["start", "resume"]
        assert detail["sessions"][0]["status"] == "crashed"
        assert detail["sessions"][1]["reused"] == kept
        assert detail["sessions"][1]["written"] == 120 - kept
        after = client.get(f"/api/runs/{run_id}/cells", params={"limit": 1000}).json()["cells"]
        keys = [(c["task_id"], c["condition_id"], c["epoch"]) for c in after]
        assert len(keys) == len(set(keys)) == 120
        again = {(c["task_id"], c["condition_id"]): c for c in after}
        assert all(again[(c["task_id"], c["condition_id"])] == c for c in before)


def test_a_public_address_needs_a_token(tmp_path: Path) -> None:
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchkit",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--root",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "BENCHKIT_TOKEN"},
        timeout=60,
    )
    assert refused.returncode == 2
    assert "not a loopback address" in refused.stderr
    assert "--token" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_the_token_can_come_from_the_environment(tmp_path: Path) -> None:
    env = {"BENCHKIT_TOKEN": "s3cret"}
    with serve(tmp_path, tmp_path / "store.db", env=env) as (_, url):
        assert httpx.get(f"{url}/api/runs").status_code == 401
        authorised = httpx.get(f"{url}/api/runs", headers={"Authorization": "Bearer s3cret"})
        assert authorised.status_code == 200
        assert authorised.json()["runs"] == []


def test_sigterm_stops_running_jobs_gracefully(tmp_path: Path) -> None:
    from benchkit.store import Store

    root = tmp_path / "root"
    write_benchmark(root / "slow", tasks=60, sleep=0.05)
    store = tmp_path / "store.db"
    with serve(root, store) as (process, url), httpx.Client(base_url=url, timeout=60) as client:
        run_id = client.post("/api/runs", json={"benchmark": "slow/benchmark.yaml"}).json()[
            "run_id"
        ]
        wait_for(client, f"/api/runs/{run_id}", lambda b: b["run"]["cells"] >= 5)
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal
    with Store(store) as opened:
        summary = opened.summary(run_id)
    assert summary.status == "interrupted"  # recorded as stopped, not crashed
    assert 5 <= summary.cells < 120
    assert summary.sessions[0].written == summary.cells
