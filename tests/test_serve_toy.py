"""A sixth tool's server part, installed as its own distribution: the toy's job kind and
route on a real ``python -m benchkit serve`` process, found through ``benchkit.tools``
alone — its job started, checked and stored like a built-in's, its route and its server
setting served, its job in the OpenAPI document."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from ._serve import serve, wait_for
from ._toy import TOY_BENCHMARK, TOY_LINES, toy_benchkit, toy_env

pytestmark = pytest.mark.slow


def test_a_toy_job_runs_and_is_stored(toy_site: Path, tmp_path: Path) -> None:
    env = toy_env(toy_site)
    with (
        serve(tmp_path, tmp_path / "store.db", "--toy-greeting", "hi there", env=env) as (
            _,
            url,
        ),
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        started = client.post(
            "/api/runs", json={"kind": "toy", "sums": ["2 + 3 = 5", "10 - 4 = 6", "6 * 7 = 42"]}
        )
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        assert started.json()["job"]["route"] == "toy"
        detail = wait_for(client, f"/api/runs/{run_id}", lambda b: b["run"]["status"] == "finished")
        assert (detail["run"]["cells"], detail["run"]["total_cells"]) == (3, 3)
        assert detail["run"]["conditions"] == ["calculator"]
        cells = client.get(f"/api/runs/{run_id}/cells").json()["cells"]
        assert {c["task_id"]: c["status"] for c in cells} == {
            "sum-1": "pass",
            "sum-2": "pass",
            "sum-3": "error",  # the calculator adds and subtracts only
        }
        listed = client.get("/api/runs").json()["runs"]
        assert [r["run_id"] for r in listed] == [run_id]
        # Built from the request, recorded under the toy's format: its report has its section.
        assert detail["run"]["format"] == "toy"

        # The run resumes through the toy's builder, from the spec the server saved.
        resumed = client.post(f"/api/runs/{run_id}/resume", json={})
        assert resumed.status_code == 202, resumed.text
        assert resumed.json()["job"]["kind"] == "resume"
        jobs = wait_for(
            client, "/api/jobs", lambda b: b["jobs"] and b["jobs"][0]["status"] == "finished"
        )
        assert jobs["jobs"][0]["route"] == "toy"
        detail = client.get(f"/api/runs/{run_id}").json()
        assert (detail["run"]["cells"], detail["run"]["total_cells"]) == (3, 3)

        hello = client.get("/toy/hello")
        assert hello.status_code == 200
        assert hello.json() == {"tool": "toy", "greeting": "hi there"}
    shown = toy_benchkit(
        toy_site,
        tmp_path,
        "runs",
        "show",
        run_id,
        "--store",
        str(tmp_path / "store.db"),
        "-f",
        "html",
    )
    assert shown.returncode == 0, shown.stderr
    assert '<section class="toy-report"><h2>Toy arithmetic</h2>' in shown.stdout


def test_the_benchmark_list_shows_files_of_every_declared_suffix(
    toy_site: Path, tmp_path: Path
) -> None:
    (tmp_path / "sums.json").write_text(TOY_BENCHMARK, encoding="utf-8")
    (tmp_path / "more.toy").write_text(TOY_LINES, encoding="utf-8")
    with (
        serve(tmp_path, tmp_path / "store.db", env=toy_env(toy_site)) as (_, url),
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        listed = client.get("/api/benchmarks").json()
        formats = {b["path"]: b["format"] for b in listed["benchmarks"]}
        assert formats == {"sums.json": "toy", "more.toy": "toy-lines"}
        started = client.post("/api/runs", json={"benchmark": "more.toy"})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        detail = wait_for(client, f"/api/runs/{run_id}", lambda b: b["run"]["status"] == "finished")
        assert (detail["run"]["format"], detail["run"]["cells"]) == ("toy-lines", 3)


def test_bad_toy_options_are_refused_naming_the_field(toy_site: Path, tmp_path: Path) -> None:
    with (
        serve(tmp_path, tmp_path / "store.db", env=toy_env(toy_site)) as (_, url),
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        for body, field in (
            ({"kind": "toy"}, "sums"),
            ({"kind": "toy", "sums": []}, "sums"),
            ({"kind": "toy", "sums": ["2 + 3"]}, "sums.0"),
            ({"kind": "toy", "sums": ["1 = 1", 3]}, "sums.1"),
            ({"kind": "toy", "sums": ["1 = 1"], "colour": "red"}, "body"),
            ({"kind": "toy", "sums": ["1 = 1"], "benchmark": "x.yaml"}, "body"),
            ({"kind": "no-such-kind", "sums": ["1 = 1"]}, "kind"),
        ):
            response = client.post("/api/runs", json=body)
            assert response.status_code == 400, (body, response.text)
            problem = response.json()
            assert problem["code"] == "INVALID_BODY", problem
            assert problem["details"]["field"] == field, (body, problem)
            assert "Traceback" not in response.text
        # Nothing was queued or stored by the refused requests.
        assert client.get("/api/jobs").json() == {"jobs": []}
        assert client.get("/api/runs").json()["total"] == 0
        # The server's default greeting, with no --toy-greeting.
        assert client.get("/toy/hello").json()["greeting"] == "hello"


def test_the_openapi_document_lists_the_toy_job_and_route(toy_site: Path, tmp_path: Path) -> None:
    with (
        serve(tmp_path, tmp_path / "store.db", env=toy_env(toy_site)) as (_, url),
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        document = client.get("/openapi.json").json()
    body = document["paths"]["/api/runs"]["post"]["requestBody"]["content"]["application/json"]
    kinds = {
        str(schema["properties"]["kind"].get("const", "benchmark")): schema
        for schema in body["schema"]["oneOf"]
    }
    assert set(kinds) == {"benchmark", "toy"}
    assert kinds["toy"]["required"] == ["kind", "sums"]
    assert kinds["toy"]["properties"]["sums"]["items"]["pattern"] == "^[^=]+=[^=]+$"
    assert "chat" in kinds["benchmark"]["properties"]  # the built-in tools' fields stay
    assert document["paths"]["/toy/hello"]["get"]["tags"] == ["toy"]


def test_a_setting_no_tool_takes_is_refused(tmp_path: Path) -> None:
    from benchkit.errors import ConfigError
    from benchkit.serve import create_app

    with pytest.raises(ConfigError, match="no installed tool takes") as caught:
        create_app(root=tmp_path, store=tmp_path / "s.db", toy_greeting="hi")
    assert "codeforge_datasets" in (caught.value.fix or "")
