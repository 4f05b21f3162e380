"""One pipeline: every run goes into the store through :class:`benchkit._stored.StoredRun`
— ``benchkit.run``, the CLI, the tools' commands and the server's jobs — so they agree on
the store's sink, resume, and the LLM reply cache (#41: two identical runs started over
HTTP made 4 model calls, where the CLI made 2)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from benchkit import Benchmark, Condition, EvaluatorSpec, ProviderSpec, Suite, Task
from benchkit._stored import StoredRun
from benchkit.errors import ConfigError
from benchkit.store import Store

from ._llm_server import FakeOpenAI

BENCHMARK = """\
benchkit: 1
id: capitals
evaluators: [exact]
conditions:
  - id: echo
    provider: {type: python, callable: "builtins:str"}
tasks:
  - {id: fr, input: "France", expected: "France"}
  - {id: it, input: "Italy", expected: "Italy"}
"""


def _chat_run(client: object, model: str) -> str:
    started = client.post(  # type: ignore[attr-defined]
        "/api/runs",
        json={
            "benchmark": "capitals.yaml",
            "conditions": [
                {
                    "id": "chat",
                    "provider": {"type": "chat", "options": {"endpoint": "fake", "model": model}},
                }
            ],
        },
    )
    assert started.status_code == 202, started.text
    run_id: str = started.json()["run_id"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run = client.get(f"/api/runs/{run_id}").json()["run"]  # type: ignore[attr-defined]
        if run["status"] == "finished":
            return run_id
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not finish")


def test_a_server_started_chat_run_hits_the_reply_cache(
    tmp_path: Path, llm_server: FakeOpenAI
) -> None:
    """The second identical run started over HTTP is answered from the store's reply
    cache: one model call per task in all, as from the CLI."""
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from benchkit.serve import create_app

    (tmp_path / "capitals.yaml").write_text(BENCHMARK, encoding="utf-8")
    app = create_app(root=tmp_path, store=tmp_path / "s.db", endpoints=[f"fake={llm_server.url}"])
    with TestClient(app, base_url="http://127.0.0.1") as client:
        first = _chat_run(client, "m")
        assert len(llm_server.requests) == 2
        second = _chat_run(client, "m")
        assert second != first
        assert len(llm_server.requests) == 2, "the second run asked the model again"
        cells = client.get(f"/api/runs/{second}/cells").json()["cells"]
        assert {c["task_id"]: c["status"] for c in cells} == {"fr": "pass", "it": "pass"}
        _chat_run(client, "another-model")  # another model: asked, not taken from the cache
        assert len(llm_server.requests) == 4


def _suite() -> Suite:
    return Suite(
        Benchmark(
            "b",
            tasks=[Task("t1", input="a", expected="a"), Task("t2", input="b", expected="c")],
            evaluators=[EvaluatorSpec("exact")],
        ),
        conditions=[Condition("echo", ProviderSpec("python", {"callable": "builtins:str"}))],
    )


def test_a_stored_run_opens_prepares_runs_and_closes(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    announced: list[tuple[str, bool]] = []
    stored = StoredRun(
        _suite(),
        store=path,
        run_id="r1",
        announce=lambda p, s: announced.append((p.run_id, p.resumed)),
    )
    with stored:
        assert stored.owned and stored.store is not None and stored.run_id == "r1"
        result = anyio.run(stored.arun)
    assert not stored.owned  # closed on leaving
    assert announced == [("r1", False)]
    assert [c.status for c in result.cells] == ["pass", "fail"]
    with Store(path) as store:
        resumed = StoredRun(_suite(), store=store, run_id="r1", resume=True)
        again = resumed.run()
        assert len(resumed.done) == 2 and again.cells == result.cells
        resumed.close()
        assert store.summary("r1").cells == 2  # the given store is left open: still readable


def test_without_the_store_nothing_is_stored_and_resuming_is_refused(tmp_path: Path) -> None:
    stored = StoredRun(_suite(), store=False, run_id="plain")
    assert stored.run().run_id == "plain" and stored.store is None
    with pytest.raises(ConfigError, match="need the run store"):
        StoredRun(_suite(), store=False, resume=True)
