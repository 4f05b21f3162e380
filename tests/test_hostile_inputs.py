"""Every request and command-line input is bounded and answered — never a 500 or a
traceback (#42): a ``local`` condition with options, a lone-surrogate rater, a cell epoch
past 64 bits, unbounded ``chat`` options, ratings without a cap, spreadsheet formulas in
the ratings CSV, credentials in an endpoint URL, a MemoryBench file of empty records."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import benchkit
from benchkit import _limits
from benchkit.errors import ConfigError
from benchkit.llm import EndpointRegistry, NamedEndpoint
from benchkit.serve import create_app
from benchkit.store import Store
from benchkit.store._story import Rating, ratings_csv

from ._serve import running, write_benchmark
from ._support import REPO, one_paragraph_error
from .test_input_bounds import CASE, MANIFEST, memorybench

JSON = {"Content-Type": "application/json"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchkit", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
        timeout=180,
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    write_benchmark(base / "quick", tasks=3)
    return base


@pytest.fixture
def stored(root: Path, tmp_path: Path) -> tuple[Path, str]:
    """A store holding one finished run of the quick benchmark."""
    store = tmp_path / "store.db"
    result = benchkit.run(benchkit.formats.load(root / "quick"), store=store)
    return store, result.run_id


@pytest.fixture
def site(root: Path, stored: tuple[Path, str]) -> Iterator[httpx.Client]:
    store, _ = stored
    with (
        running(create_app(store=store, root=root)) as url,
        httpx.Client(base_url=url, timeout=60, headers={"Origin": url}) as client,
    ):
        yield client


def _start(client: httpx.Client, provider: dict[str, Any]) -> httpx.Response:
    body = {"benchmark": "quick/benchmark.yaml", "conditions": [{"id": "x", "provider": provider}]}
    return client.post("/api/runs", json=body)


# -- requests ----------------------------------------------------------------------------------


def test_a_local_condition_with_options_is_checked_not_a_500(site: httpx.Client) -> None:
    unknown = _start(site, {"type": "local", "options": {"frobnicate": 1}})
    assert unknown.status_code == 400, unknown.text
    body = unknown.json()
    assert body["code"] == "INVALID_BODY"
    assert body["details"]["field"] == "conditions.0.provider.options.frobnicate"
    assert "max_tokens" in body["error"]  # says what it may give
    url = _start(site, {"type": "local", "options": {"base_url": "http://evil.example/v1"}})
    assert url.status_code == 400 and url.json()["code"] == "ENDPOINT_REQUIRED"


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("timeout", 1e308),
        ("timeout", 0),
        ("max_retries", 1e9),
        ("max_retries", -1),
        ("max_concurrency", 1e9),
        ("max_concurrency", 0),
        ("max_tokens", -5),
        ("max_tokens", 10**12),
        ("requests_per_minute", 1e300),
        ("tokens_per_minute", -1),
        ("temperature", 1e9),
        ("seed", 2**64),
    ],
)
@pytest.mark.parametrize("kind", ["chat", "local"])
def test_chat_options_of_a_request_are_bounded(
    site: httpx.Client, kind: str, option: str, value: float
) -> None:
    refused = _start(site, {"type": kind, "options": {option: value}})
    assert refused.status_code == 400, refused.text
    body = refused.json()
    assert body["details"]["field"] == f"conditions.0.provider.options.{option}"
    if kind == "local" and option.endswith("per_minute"):
        return  # not an option of the local model (its server answers one at a time)
    assert "docs/limits.md" in body["details"]["fix"]


def test_the_chat_bounds_are_one_function_the_providers_use_too() -> None:
    from benchkit.llm import ChatProvider

    for option, value in (("timeout", math.inf), ("max_retries", 10**9), ("max_tokens", 0)):
        with pytest.raises(ConfigError, match=option):
            _limits.check_chat_options({option: value})
        options: dict[str, Any] = {option: value}
        with pytest.raises(ConfigError, match=option):
            ChatProvider(model="m", base_url="http://127.0.0.1:9/v1", **options)
    _limits.check_chat_options(
        {"timeout": 30, "max_retries": 0, "max_concurrency": 4, "max_tokens": 256, "seed": "cell"}
    )


@pytest.mark.parametrize("rater", ["\ud800", "a\udfffb", "\x00"])
def test_a_rater_that_is_not_text_is_a_400(
    site: httpx.Client, stored: tuple[Path, str], rater: str
) -> None:
    _, run_id = stored
    body = json.dumps(
        {"task": "t0", "condition": "a", "rater": rater, "verdict": True}, ensure_ascii=True
    )
    answer = site.post(f"/api/runs/{run_id}/ratings", content=body, headers=JSON)
    assert answer.status_code == 400, answer.text
    assert answer.json()["details"]["field"] == "rater"
    comment = json.dumps(
        {"task": "t0", "condition": "a", "rater": "me", "verdict": True, "comment": "\ud800"}
    )
    answer = site.post(f"/api/runs/{run_id}/ratings", content=comment, headers=JSON)
    assert answer.status_code == 400 and answer.json()["details"]["field"] == "comment"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/runs", {"benchmark": "\ud800"}, "benchmark"),
        (
            "/api/runs",
            {
                "benchmark": "quick/benchmark.yaml",
                "conditions": [{"id": "\udfff", "provider": {"type": "mock"}}],
            },
            "conditions.0.id",
        ),
        ("/api/runs/{run}/rerun", {"task": "\ud800"}, "task"),
        ("/bench/runs", {"configPath": "\ud800"}, "configPath"),
    ],
)
def test_a_lone_surrogate_anywhere_in_a_body_is_a_400(
    site: httpx.Client, stored: tuple[Path, str], path: str, body: dict[str, Any], field: str
) -> None:
    _, run_id = stored
    answer = site.post(path.format(run=run_id), content=json.dumps(body), headers=JSON)
    assert answer.status_code == 400, answer.text
    assert answer.json()["details"]["field"] == field


def test_ratings_are_capped_per_cell_and_per_client(root: Path, stored: tuple[Path, str]) -> None:
    store, run_id = stored
    app = create_app(store=store, root=root, max_raters_per_cell=3, ratings_per_minute=10)
    with running(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        post = f"/api/runs/{run_id}/ratings"
        for n in range(3):
            rated = client.post(
                post, json={"task": "t0", "condition": "a", "rater": f"r{n}", "verdict": True}
            )
            assert rated.status_code == 201, rated.text
        full = client.post(
            post, json={"task": "t0", "condition": "a", "rater": "r9", "verdict": True}
        )
        assert full.status_code == 409 and full.json()["code"] == "TOO_MANY_RATINGS"
        again = client.post(
            post, json={"task": "t0", "condition": "a", "rater": "r0", "score": 0.5}
        )
        assert again.status_code == 201  # replacing one's own rating is always possible
        answers = [
            client.post(post, json={"task": "t1", "condition": "a", "rater": "me", "verdict": True})
            for _ in range(10)
        ]
        limited = [a for a in answers if a.status_code == 429]
        assert limited, [a.status_code for a in answers]
        assert limited[0].json()["code"] == "RATE_LIMITED"
        assert int(limited[0].headers["Retry-After"]) >= 1
    with Store(store) as opened:
        assert len(opened.ratings(run_id)) == 4


def test_the_ratings_csv_neutralises_spreadsheet_formulas() -> None:
    hostile = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"]
    rows = [
        Rating(task=text, condition="c", epoch=0, rater=text, verdict=True, comment=text)
        for text in hostile
    ]
    parsed = list(csv.DictReader(io.StringIO(ratings_csv(rows), newline="")))
    for row, text in zip(parsed, hostile, strict=True):
        for field in ("task", "rater", "comment"):
            assert row[field] == "'" + text, (field, row[field])
    plain = list(csv.DictReader(io.StringIO(ratings_csv([Rating("t", "c", 0, "me", True)]))))
    assert plain[0]["task"] == "t" and plain[0]["verdict"] == "pass"


@pytest.mark.parametrize(
    "url",
    [
        "https://llm.example/v1?api_key=sk-live-1234567890",
        "https://llm.example/v1?key=AIzaSy0123456789abc",
        "https://llm.example/v1?foo=1&access_token=abcdef123456",
        "https://user:hunter2@llm.example/v1",
        "https://sk-abcdefghijkl@llm.example/v1",
    ],
)
def test_an_endpoint_url_with_a_credential_is_refused(url: str) -> None:
    with pytest.raises(ConfigError, match="key-env") as caught:
        EndpointRegistry([f"gw={url}"])
    assert "hunter2" not in str(caught.value) and "1234567890" not in str(caught.value)
    with pytest.raises(ConfigError):
        NamedEndpoint("gw", url)


def test_serve_refuses_an_endpoint_url_with_a_key(tmp_path: Path) -> None:
    secret = "sk-live-abcdef0123456789"
    done = cli(
        "serve", "--port", "0", "--root", str(tmp_path),
        "--endpoint", f"gw=https://llm.example/v1?api_key={secret}",
    )  # fmt: skip
    assert done.returncode == 2
    error = one_paragraph_error(done)
    assert "key-env" in error and secret not in done.stderr + done.stdout


def test_endpoints_are_listed_without_a_credential(root: Path, tmp_path: Path) -> None:
    app = create_app(
        store=tmp_path / "s.db",
        root=root,
        endpoints=["gw=https://llm.example/v1?region=eu,key-env=GW_KEY"],
    )
    with running(app) as url:
        listed = httpx.get(f"{url}/api/endpoints").json()
    assert listed == {
        "endpoints": [{"name": "gw", "url": "https://llm.example/v1?region=eu", "has_key": True}]
    }


# -- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize("epoch", ["99999999999999999999", "-1", "1e3"])
def test_a_cell_reference_out_of_range_is_exit_2(stored: tuple[Path, str], epoch: str) -> None:
    store, run_id = stored
    done = cli("runs", "show", run_id, "--store", str(store), "--cell", f"t0/a/{epoch}")
    assert done.returncode == 2, done.stderr
    error = one_paragraph_error(done)
    assert "Traceback" not in done.stderr
    assert "--cell" in error


def test_a_memorybench_file_of_empty_records_is_refused_at_validate(tmp_path: Path) -> None:
    data = json.dumps(CASE) + "\n{}\n"
    path = memorybench(tmp_path, {**MANIFEST, "data_file": "data.jsonl"}, data)
    done = cli("validate", str(path))
    assert done.returncode == 2
    error = one_paragraph_error(done)
    assert "data.jsonl:2" in error, error
    only_empty = memorybench(tmp_path, {**MANIFEST, "data_file": "data.jsonl"}, "{}\n{}\n")
    error = one_paragraph_error(cli("validate", str(only_empty)))
    assert "data.jsonl:1" in error, error
