"""A request never chooses where the server's credentials go (issue #31, item 1): the
endpoints a server may call, and the variable holding each one's key, are its
configuration (``serve --endpoint NAME=URL[,key-env=VAR]``); requests name endpoints.

A real ``python -m benchkit serve`` process holds canary keys in its environment; real
listeners on 127.0.0.1 record every ``Authorization`` header they receive."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchkit.errors import ConfigError
from benchkit.llm import EndpointRegistry, NamedEndpoint
from benchkit.model import ProviderSpec

from ._llm_server import FakeOpenAI, capital_model
from ._serve import serve, wait_for, write_benchmark

RAG_MINI = Path(__file__).parent / "fixtures" / "codeforge" / "rag-mini.yaml"
CANARIES = {"CANARY_KEY": "canary-1f0e", "OPENAI_API_KEY": "canary-openai-77aa"}
GOOD = "configured-key-5c2d"


@pytest.fixture
def listeners() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    """The configured endpoint's listener, and one no configuration names."""
    with FakeOpenAI() as configured, FakeOpenAI() as stranger:
        configured.respond = capital_model
        stranger.respond = capital_model
        yield configured, stranger


@pytest.fixture
def site(tmp_path: Path, listeners: tuple[FakeOpenAI, FakeOpenAI]) -> Iterator[httpx.Client]:
    configured, _ = listeners
    root = tmp_path / "root"
    write_benchmark(root / "quick", tasks=2)
    (root / "benchmarks" / "codeforge").mkdir(parents=True)
    shutil.copy(RAG_MINI, root / "benchmarks" / "codeforge" / "rag-mini.yaml")
    endpoint = f"gw={configured.url},key-env=GOOD_KEY"
    env = {**CANARIES, "GOOD_KEY": GOOD}
    with (
        serve(root, tmp_path / "store.db", "--endpoint", endpoint, env=env) as (_, url),
        httpx.Client(base_url=url, timeout=120) as client,
    ):
        yield client


def _authorizations(server: FakeOpenAI) -> list[str]:
    return [
        value
        for recorded in server.requests
        for key, value in recorded.headers.items()
        if key.lower() == "authorization"
    ]


def _chat_condition(**options: Any) -> dict[str, Any]:
    return {
        "benchmark": "quick/benchmark.yaml",
        "conditions": [{"id": "m", "provider": {"type": "chat", "options": options}}],
    }


def test_requests_cannot_send_the_servers_keys_anywhere(
    site: httpx.Client, listeners: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    configured, stranger = listeners
    there = stranger.url
    refused: list[tuple[str, dict[str, Any], str]] = [
        (
            "/api/runs",
            _chat_condition(model="m", base_url=there, api_key_env="CANARY_KEY"),
            "conditions.0.provider.options.base_url",
        ),
        (
            "/api/runs",
            _chat_condition(model="m", api_key_env="CANARY_KEY"),
            "conditions.0.provider.options.api_key_env",
        ),
        (
            "/api/runs",
            _chat_condition(model="m", endpoint="gw", api_key_env=["CANARY_KEY"]),
            "conditions.0.provider.options.api_key_env",
        ),
        (
            "/api/runs",
            {
                "benchmark": "quick/benchmark.yaml",
                "conditions": [
                    {"id": "h", "provider": {"type": "http", "options": {"url": there}}}
                ],
            },
            "conditions.0.provider.options.url",
        ),
        (
            "/api/runs",
            {
                "benchmark": "quick/benchmark.yaml",
                "conditions": [{"id": "h", "provider": {"type": "http", "options": {}}}],
            },
            "conditions.0.provider.options.endpoint",
        ),
        (
            "/api/runs",
            _chat_condition(model="m", endpoint="nowhere"),
            "conditions.0.provider.options.endpoint",
        ),
        (
            "/api/runs",
            {
                "benchmark": "benchmarks/codeforge/rag-mini.yaml",
                "chat": {"model": "m", "metrics": ["correctness"], "base_url": there},
            },
            "chat.base_url",
        ),
        (
            "/api/runs",
            {
                "benchmark": "benchmarks/codeforge/rag-mini.yaml",
                "chat": {"model": "m", "metrics": ["correctness"], "judge_base_url": there},
            },
            "chat.judge_base_url",
        ),
    ]
    for path, body, field in refused:
        response = site.post(path, json=body)
        assert response.status_code == 400, (body, response.text)
        problem = response.json()
        assert problem["details"]["field"] == field, problem
        assert "--endpoint NAME=URL" in problem["details"]["fix"], problem
    for body, field in (
        ({"base_url": there}, "base_url"),
        ({"judge_base_url": there + "/"}, "judge_base_url"),
        ({"endpoint": "nowhere"}, "endpoint"),
    ):
        cf = site.post(
            "/api/v1/benchmarks/runs",
            json={"dataset": "rag-mini", "model": "m", "metrics": ["correctness"], **body},
        )
        assert cf.status_code == 400, cf.text
        assert cf.json()["error"].startswith(field), cf.json()
        assert "--endpoint" in cf.json()["error"]
    assert stranger.requests == []
    assert site.get("/api/endpoints").json() == {
        "endpoints": [{"name": "gw", "url": configured.url, "has_key": True}]
    }

    # What the server is configured to call gets the configured key, and nothing else.
    chat = site.post("/api/runs", json=_chat_condition(model="m", endpoint="gw"))
    assert chat.status_code == 202, chat.text
    wait_for(site, f"/api/runs/{chat.json()['run_id']}", lambda b: b["run"]["status"] != "running")
    forge = site.post(
        "/api/v1/benchmarks/runs",
        json={
            "dataset": "rag-mini",
            "model": "m",
            "metrics": ["correctness"],
            "base_url": configured.url + "/",  # the configured URL names that endpoint
            "judge_endpoint": "gw",
        },
    )
    assert forge.status_code == 201, forge.text
    done = wait_for(
        site, f"/api/v1/benchmarks/runs/{forge.json()['id']}", lambda r: r["status"] != "running"
    )
    assert done["status"] == "completed", done
    sent = _authorizations(configured)
    assert len(sent) >= 4
    assert set(sent) == {f"Bearer {GOOD}"}
    assert stranger.requests == []


def test_the_endpoint_option_of_serve(tmp_path: Path) -> None:
    import subprocess
    import sys

    for bad, words in (
        ("gw", "NAME=URL"),
        ("gw=ftp://x", "not an http(s) URL"),
        ("gw=http://u:p@h/v1", "user name or password"),
        ("gw=http://h/v1,key-env=sk-123 key", "not an environment variable name"),
        ("gw=http://h/v1,token=x", "unknown option"),
    ):
        done = subprocess.run(
            [
                *(sys.executable, "-m", "benchkit", "serve", "--port", "0"),
                *("--root", str(tmp_path), "--store", str(tmp_path / "s.db"), "--endpoint", bad),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert words in done.stderr
        assert "Traceback" not in done.stderr


def test_the_endpoint_registry() -> None:
    registry = EndpointRegistry(
        ["a=http://127.0.0.1:1/v1", NamedEndpoint("b", "https://x/v1", "K")]
    )
    assert registry.names == ["a", "b"]
    assert registry.by_url("HTTP://127.0.0.1:1/v1/") == registry.get("a")
    assert registry.by_url("http://127.0.0.1:2/v1") is None
    assert registry.get("a").chat_options() == {
        "base_url": "http://127.0.0.1:1/v1",
        "api_key_env": [],
    }
    assert registry.get("b").http_options() == {"url": "https://x/v1", "api_key_env": "K"}
    with pytest.raises(ConfigError, match="twice"):
        registry.register(NamedEndpoint("a", "http://h/v1"))
    with pytest.raises(ConfigError, match="no endpoint 'c'") as caught:
        registry.get("c", field="x.endpoint")
    assert caught.value.json_path == "x.endpoint"
    assert EndpointRegistry({"m": "http://h/v1"}).get("m").key_env is None


def test_the_http_provider_sends_its_endpoints_key(monkeypatch: pytest.MonkeyPatch) -> None:
    import anyio

    from benchkit.model import Condition, ProviderSpec, Request, Task
    from benchkit.providers import HttpProvider

    monkeypatch.setenv("GOOD_KEY", GOOD)
    with FakeOpenAI() as listener:
        provider = HttpProvider(listener.url + "/chat/completions", api_key_env="GOOD_KEY")
        assert GOOD not in repr(provider)
        request = Request(Task("t", "hi"), Condition("c", ProviderSpec("http")))

        async def call() -> None:
            try:
                await provider.invoke(request)
            finally:
                await provider.aclose()

        anyio.run(call)
        assert _authorizations(listener) == [f"Bearer {GOOD}"]
    monkeypatch.delenv("GOOD_KEY")
    with pytest.raises(ConfigError, match=r"\$GOOD_KEY is empty"):
        HttpProvider("http://127.0.0.1:9/x", api_key_env="GOOD_KEY")


def test_a_spec_saved_with_a_url_resumes_only_through_an_endpoint(tmp_path: Path) -> None:
    from benchkit.formats.codeforge._serve import build_codeforge_suite
    from benchkit.serve._runs import build_benchmark_suite
    from benchkit.serve_toolkit import ApiError, JobContext

    write_benchmark(tmp_path / "quick", tasks=1)
    shutil.copy(RAG_MINI, tmp_path / "rag-mini.yaml")
    registry = EndpointRegistry(["gw=http://127.0.0.1:9/v1,key-env=GOOD_KEY"])
    context = JobContext(root=tmp_path, endpoints=registry)
    old = {"route": "codeforge", "path": "rag-mini.yaml", "model": "m", "metrics": ["correctness"]}
    with pytest.raises(ConfigError, match="not configured to call this URL"):
        build_codeforge_suite({**old, "base_url": "http://127.0.0.1:8/v1"}, context)
    mapped = build_codeforge_suite({**old, "base_url": "http://127.0.0.1:9/v1/"}, context)
    provider = mapped.conditions[0].provider
    assert isinstance(provider, ProviderSpec)
    options = provider.options
    assert (options["base_url"], options["api_key_env"]) == ("http://127.0.0.1:9/v1", ["GOOD_KEY"])
    spec = {"route": "benchmark", "path": "quick/benchmark.yaml"}
    chat = {"type": "chat", "options": {"model": "m", "api_key_env": "CANARY_KEY"}}
    with pytest.raises(ApiError) as caught:
        build_benchmark_suite(
            {**spec, "conditions": [{"id": "c", "provider": chat}]}, JobContext(root=tmp_path)
        )
    assert caught.value.body["details"]["field"] == "conditions.0.provider.options.api_key_env"
