"""The explorer's API for looking at, comparing and judging outputs (issue #25), against a
real uvicorn server on 127.0.0.1: tasks of every run, cells with their transcripts and
attempts, the outputs matrix, search, ratings and re-runs."""

from __future__ import annotations

import csv
import io
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

import benchkit
from benchkit import Condition, transcript
from benchkit.model import Request, Response
from benchkit.serve import create_app

from ._serve import running, wait_for, write_benchmark
from ._support import FIXTURES, make_suite


class Answers:
    """Right on every task but ``wrong``; records a request and a response."""

    def __init__(self, wrong: frozenset[str] = frozenset()) -> None:
        self.wrong = wrong

    async def invoke(self, request: Request) -> Response:
        transcript.record(
            "request",
            "POST /answer",
            {"input": request.task.input, "headers": {"Authorization": "Bearer top-secret-token"}},
        )
        output = "nope" if request.task.id in self.wrong else str(request.task.expected)
        transcript.record("response", "200", output, duration=0.002)
        return Response(output=output)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    write_benchmark(base / "quick", tasks=6)
    shutil.copy(FIXTURES / "eval_skills" / "pass-at-k.json", base / "pass-at-k.json")
    return base


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def server(root: Path, store: Path) -> Iterator[httpx.Client]:
    app = create_app(store=store, root=root, max_running=2)
    with running(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield client


@pytest.fixture
def python_run(store: Path) -> str:
    """A run built in Python (no benchmark file): a wrong on t1 (arm a) and t4 (both)."""
    suite = make_suite(
        {"a": Answers(frozenset({"t1", "t4"})), "b": Answers(frozenset({"t4"}))}, n=6
    )
    return benchkit.run(suite, store=store, run_id="py").run_id


def _finish(client: httpx.Client, run_id: str) -> dict[str, Any]:
    return wait_for(
        client,
        f"/api/runs/{run_id}",
        lambda body: body["run"]["status"] in ("finished", "failed", "interrupted"),
    )


def test_a_python_built_run_shows_its_tasks(server: httpx.Client, python_run: str) -> None:
    # Before the store kept tasks this answered 404 "has no benchmark file inside the root".
    task = server.get(f"/api/runs/{python_run}/task", params={"task": "t2"})
    assert task.status_code == 200, task.text
    body = task.json()
    assert (body["id"], body["input"], body["expected"], body["source"]) == ("t2", 2, "2", "store")
    assert body["tags"] == [] and body["metadata"] == {}
    missing = server.get(f"/api/runs/{python_run}/task", params={"task": "nope"})
    assert missing.status_code == 404 and "nope" in missing.json()["error"]


def test_an_eval_skills_run_shows_its_tasks_from_the_store_and_from_its_file(
    server: httpx.Client, root: Path, store: Path
) -> None:
    suite = benchkit.load(root / "pass-at-k.json")
    suite = attrs.evolve(
        suite, conditions=(Condition("mock", benchkit.MockProvider(outputs={"add": "2"})),)
    )
    run_id = benchkit.run(suite, store=store).run_id
    body = server.get(f"/api/runs/{run_id}/task", params={"task": "mul"}).json()
    assert body["source"] == "store" and body["input"] == {"expression": "2*3"}
    # A run stored before the store kept tasks is read from its file — which declares no
    # conditions (eval-skills takes them from the run request): that used to be a 404
    # "the run's benchmark no longer loads: ... declares no conditions to run".
    with sqlite3.connect(store) as db:
        db.execute("DELETE FROM tasks")
    old = server.get(f"/api/runs/{run_id}/task", params={"task": "mul"})
    assert old.status_code == 200, old.text
    assert old.json()["source"] == "file" and old.json()["expected"] == "6"


def test_a_cell_carries_its_transcript_without_secrets(
    server: httpx.Client, python_run: str
) -> None:
    cell = server.get(
        f"/api/runs/{python_run}/cell", params={"task": "t1", "condition": "a", "epoch": 0}
    )
    assert cell.status_code == 200, cell.text
    body = cell.json()
    assert body["status"] == "fail" and (body["attempt"], body["stored_attempts"]) == (0, 1)
    events = body["transcript"]["events"]
    assert [e["kind"] for e in events] == ["request", "response"]
    assert events[0]["data"]["headers"]["Authorization"] == "[redacted]"
    assert events[1]["data"] == "nope" and events[1]["duration"] == pytest.approx(0.002)
    assert "top-secret-token" not in cell.text and body["transcript"]["truncated"] is False
    gone = server.get(
        f"/api/runs/{python_run}/cell",
        params={"task": "t1", "condition": "a", "epoch": 0, "attempt": 3},
    )
    assert gone.status_code == 404 and "attempt 3" in gone.json()["error"]


def test_the_matrix_route_pages_filters_and_searches(server: httpx.Client, python_run: str) -> None:
    url = f"/api/runs/{python_run}/matrix"
    page = server.get(url, params={"limit": 4}).json()
    assert page["columns"] == ["a", "b"] and page["by"] == "condition"
    assert (page["total"], page["offset"], page["limit"]) == (6, 0, 4)
    assert [r["task_id"] for r in page["rows"]] == ["t0", "t1", "t2", "t3"]
    t1 = page["rows"][1]
    assert t1["disagree"] is True and t1["input"] == "1" and t1["expected"] == "1"
    cell = t1["cells"]["a"]
    assert (cell["status"], cell["passed"], cell["score"], cell["output"]) == (
        "fail",
        False,
        0.0,
        "nope",
    )
    assert cell["output_truncated"] is False and cell["rating"] is None and cell["attempt"] == 0
    failures = server.get(url, params={"only": "failures"}).json()
    assert [r["task_id"] for r in failures["rows"]] == ["t1", "t4"]
    disagree = server.get(url, params={"only": "disagree"}).json()
    assert [r["task_id"] for r in disagree["rows"]] == ["t1"]
    assert server.get(url, params={"offset": 5}).json()["rows"][0]["task_id"] == "t5"
    assert server.get(url, params={"q": "nope"}).json()["total"] == 2
    by_epoch = server.get(url, params={"by": "epoch", "condition": "b"}).json()
    assert (
        by_epoch["columns"] == ["epoch 0"]
        and by_epoch["rows"][4]["cells"]["epoch 0"]["status"] == "fail"
    )
    for params, field in (
        ({"only": "everything"}, "only"),
        ({"by": "task"}, "by"),
        ({"limit": 0}, "limit"),
        ({"rated": "maybe"}, "rated"),
        ({"by": "epoch", "condition": "zzz"}, "condition"),
    ):
        bad = server.get(url, params=params)
        assert bad.status_code == 400 and bad.json()["details"]["field"] == field, params
    assert server.get("/api/runs/nope/matrix").status_code == 404


def test_search_answers_across_runs_and_in_one(server: httpx.Client, python_run: str) -> None:
    found = server.get("/api/search", params={"q": "nope"}).json()
    assert found["total"] == 3  # t1 in a, t4 in a and b
    first = found["results"][0]
    assert set(first) == {"run_id", "task_id", "condition", "epoch", "status", "snippet"}
    assert first["status"] == "fail" and "[nope]" in first["snippet"]
    one = server.get("/api/search", params={"q": "nope", "run": python_run, "limit": 1}).json()
    assert one["total"] == 3 and len(one["results"]) == 1
    assert server.get("/api/search", params={"q": ""}).status_code == 400
    assert server.get("/api/search", params={"q": "x", "run": "nope"}).status_code == 404


def test_ratings_are_posted_listed_downloaded_and_deleted(
    server: httpx.Client, python_run: str
) -> None:
    url = f"/api/runs/{python_run}/ratings"
    body = {"task": "t1", "condition": "a", "epoch": 0, "verdict": False, "comment": "wrong"}
    posted = server.post(url, json={**body, "score": None, "rater": "ana"})
    assert posted.status_code == 201, posted.text
    rating = posted.json()["rating"]
    assert (rating["rater"], rating["verdict"], rating["attempt"]) == ("ana", False, 0)
    assert rating["created"].endswith("Z")
    again = server.post(url, json={**body, "verdict": True, "rater": "ana"})  # replaces
    assert again.status_code == 201
    server.post(url, json={"task": "t2", "condition": "b", "score": 0.75, "rater": "bo"})
    listed = server.get(url).json()["ratings"]
    assert [(r["task"], r["rater"], r["verdict"], r["score"]) for r in listed] == [
        ("t1", "ana", True, None),
        ("t2", "bo", None, 0.75),
    ]
    download = server.get(url, params={"format": "csv"})
    assert download.headers["content-disposition"].startswith("attachment;")
    rows = list(csv.DictReader(io.StringIO(download.text)))
    assert [(r["task"], r["verdict"], r["score"]) for r in rows] == [
        ("t1", "pass", ""),
        ("t2", "", "0.75"),
    ]
    lines = server.get(url, params={"format": "jsonl"}).text.splitlines()
    assert [json.loads(line)["rater"] for line in lines] == ["ana", "bo"]
    matrix = server.get(f"/api/runs/{python_run}/matrix", params={"rated": "yes"}).json()
    assert [r["task_id"] for r in matrix["rows"]] == ["t1", "t2"]
    assert matrix["rows"][0]["cells"]["a"]["rating"]["comment"] == "wrong"
    detail = server.get(f"/api/runs/{python_run}").json()["ratings"]
    assert detail["count"] == 2
    (exact,) = detail["agreement"]
    # t1/a: the evaluator failed it, ana passed it; t2/b: both pass (score 0.75). Cohen's
    # kappa: observed agreement 1/2 equals the chance agreement 1/2 (people passed both).
    assert (exact["evaluator"], exact["n"], exact["agree"], exact["kappa"]) == (
        "exact",
        2,
        1,
        0.0,
    )
    for bad, field in (
        ({"task": "t1", "condition": "a", "rater": "ana"}, "verdict"),
        ({"task": "t1", "condition": "a", "rater": "ana", "score": 2}, "score"),
        ({"task": "t1", "condition": "a", "verdict": True}, "rater"),
    ):
        refused = server.post(url, json=bad)
        assert refused.status_code == 400 and refused.json()["details"]["field"] == field, bad
    unknown = server.post(url, json={"task": "t9", "condition": "a", "verdict": True, "rater": "x"})
    assert unknown.status_code == 404
    form = server.post(url, content="task=t1", headers={"Content-Type": "text/plain"})
    assert form.status_code == 415
    gone = server.request(
        "DELETE", url, json={"task": "t1", "condition": "a", "epoch": 0, "rater": "ana"}
    )
    assert gone.status_code == 204
    again_gone = server.request(
        "DELETE", url, json={"task": "t1", "condition": "a", "epoch": 0, "rater": "ana"}
    )
    assert again_gone.status_code == 404
    assert len(server.get(url).json()["ratings"]) == 1


def test_a_task_and_a_cell_re_run_as_new_attempts(server: httpx.Client) -> None:
    started = server.post("/api/runs", json={"benchmark": "quick/benchmark.yaml"})
    assert started.status_code == 202, started.text
    run_id = started.json()["run_id"]
    _finish(server, run_id)
    before = server.get(f"/api/runs/{run_id}").json()["aggregates"]
    rerun = server.post(f"/api/runs/{run_id}/rerun", json={"task": "t1"})
    assert rerun.status_code == 202, rerun.text
    assert rerun.json()["job"]["kind"] == "rerun"
    _finish(server, run_id)
    for condition in ("a", "b"):
        cell = server.get(
            f"/api/runs/{run_id}/cell", params={"task": "t1", "condition": condition}
        ).json()
        assert (cell["attempt"], cell["stored_attempts"]) == (1, 2)
        old = server.get(
            f"/api/runs/{run_id}/cell", params={"task": "t1", "condition": condition, "attempt": 0}
        ).json()
        assert (old["attempt"], old["stored_attempts"], old["status"]) == (0, 2, cell["status"])
    one = server.post(
        f"/api/runs/{run_id}/rerun", json={"task": "t2", "condition": "b", "epoch": 0}
    )
    assert one.status_code == 202
    _finish(server, run_id)
    assert (
        server.get(f"/api/runs/{run_id}/cell", params={"task": "t2", "condition": "b"}).json()[
            "stored_attempts"
        ]
        == 2
    )
    assert (
        server.get(f"/api/runs/{run_id}/cell", params={"task": "t2", "condition": "a"}).json()[
            "stored_attempts"
        ]
        == 1
    )
    after = server.get(f"/api/runs/{run_id}").json()
    assert after["run"]["cells"] == 12  # latest attempts only
    assert [a["passed"] for a in after["aggregates"]] == [a["passed"] for a in before]
    for body, status in (
        ({"task": "t99"}, 404),
        ({"task": "t1", "condition": "zzz"}, 400),
        ({"condition": "a"}, 400),
    ):
        assert server.post(f"/api/runs/{run_id}/rerun", json=body).status_code == status, body
