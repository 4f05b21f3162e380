"""Budgets and the built-in price table (#44): a fake priced model on 127.0.0.1 answers a
chat condition; ``--max-cost`` / ``--max-tokens`` / ``--max-calls`` (and the file's and the
API's equivalents) stop the run, mark it ``interrupted: budget`` with the figures, and a
resume with a higher budget goes on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import benchkit
from benchkit.cli import main
from benchkit.llm import LLMClient, MemoryCache, Price, UsageMeter, builtin_prices
from benchkit.model import Usage
from benchkit.store import Store

from ._llm_server import FakeOpenAI, Reply

TASKS = 10
#: gpt-4o-mini's built-in price: 10 prompt tokens at $0.15/M, 5 completion tokens at $0.60/M.
CALL_COST = (10 * 0.15 + 5 * 0.6) / 1_000_000


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAI() as server:
        server.respond = lambda body: Reply.text("ok", model="gpt-4o-mini")
        yield server


def _bench(tmp_path: Path, llm: FakeOpenAI, run: str = "", name: str = "priced") -> Path:
    path = tmp_path / f"{name}.yaml"
    tasks = "".join(f"  - {{id: t{i}, input: question {i}, expected: ok}}\n" for i in range(TASKS))
    path.write_text(
        "benchkit: 1\nid: priced\nevaluators: [exact]\nconditions:\n"
        f"  - id: model\n    provider: {{type: chat, model: gpt-4o-mini, base_url: '{llm.url}'}}\n"
        f"run: {{concurrency: 1{run}}}\ntasks:\n{tasks}",
        encoding="utf-8",
    )
    return path


def test_the_price_table_is_dated_and_knows_snapshots() -> None:
    table = builtin_prices()
    assert table.version == 1 and table.date[:4].isdigit()
    mini = table.find("gpt-4o-mini")
    assert mini == Price(0.15, 0.6, 0.075)
    assert table.find("gpt-4o-mini-2024-07-18") == mini
    assert table.find("gpt-4o-2024-08-06") == table.find("gpt-4o") != mini
    assert table.find("claude-3-5-sonnet-20241022") == table.find("claude-3-5-sonnet")
    assert table.find("fake-model") is None and table.find("gpt-4o-ultra") is None


@given(
    prompt=st.integers(0, 10**7), completion=st.integers(0, 10**7), cached=st.integers(-5, 10**8)
)
def test_cached_prompt_tokens_cost_the_cached_price(
    prompt: int, completion: int, cached: int
) -> None:
    price = Price(2.0, 8.0, 0.5)
    cost = price.cost(Usage(prompt, completion), cached)
    hit = min(max(cached, 0), prompt)
    assert cost == pytest.approx(((prompt - hit) * 2.0 + hit * 0.5 + completion * 8.0) / 1e6)
    assert Price(2.0, 8.0).cost(Usage(prompt, completion), cached) >= cost


@given(
    parts=st.lists(
        st.tuples(
            st.integers(0, 1000),
            st.integers(0, 1000),
            st.none() | st.floats(0, 10, allow_nan=False),
        ),
        max_size=6,
    )
)
def test_a_sum_of_usages_is_unknown_when_a_part_with_tokens_has_no_price(
    parts: list[tuple[int, int, float | None]],
) -> None:
    total = Usage()
    for prompt, completion, cost in parts:
        total = total + Usage(prompt, completion, cost)
    assert total.prompt_tokens == sum(p for p, _, _ in parts)
    unknown = any(cost is None and p + c > 0 for p, c, cost in parts)
    priced = [cost for _, _, cost in parts if cost is not None]
    if unknown:
        assert total.cost_usd is None and total.cost_unknown
    elif priced:
        assert total.cost_usd == pytest.approx(sum(priced))
    else:
        assert total.cost_usd is None and not total.cost_unknown


def test_unknown_costs_are_not_counted_as_free_in_meters_and_summaries() -> None:
    assert (Usage(10, 5, None) + Usage(3, 3, 0.25)).cost_usd is None
    assert (Usage(3, 3, 0.25) + Usage(10, 5, None)).cost_usd is None
    assert (Usage() + Usage(3, 3, 0.25)).cost_usd == 0.25  # nothing spent adds nothing
    meter = UsageMeter()
    meter.record("priced", Usage(10, 5, 0.5), cached=False)
    meter.record("unpriced", Usage(10, 5), cached=False)
    meter.record("unpriced", Usage(1, 1, 0.25), cached=False)
    assert meter.summary()["priced"]["cost_usd"] == 0.5
    assert meter.summary()["unpriced"]["cost_usd"] is None
    assert meter.total().cost_usd is None and meter.total().total_tokens == 32


def test_the_client_prices_known_models_and_leaves_others_unknown(llm: FakeOpenAI) -> None:
    import anyio

    client = LLMClient(base_url=llm.url, model="gpt-4o-mini", cache=MemoryCache())
    known = anyio.run(lambda: client.chat([{"role": "user", "content": "hi"}]))
    assert known.usage.cost_usd == pytest.approx(CALL_COST)
    llm.respond = lambda body: Reply.text("ok", model="fake-model")
    unknown = anyio.run(lambda: client.chat([{"role": "user", "content": "other"}]))
    assert unknown.usage.cost_usd is None  # cost unknown, never 0
    given_price = LLMClient(base_url=llm.url, model="x", prices={"fake-model": Price(1.0, 1.0)})
    priced = anyio.run(lambda: given_price.chat([{"role": "user", "content": "third"}]))
    assert priced.usage.cost_usd == pytest.approx(15 / 1e6)


def _stderr(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().err


def test_max_cost_stops_the_run_and_a_higher_budget_resumes_it(
    llm: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _bench(tmp_path, llm)
    store = str(tmp_path / "s.db")
    argv = ["run", str(bench), "--store", store, "--no-progress", "--run-id", "r"]
    # 5 calls cost 2.25e-5 >= 2e-5: the fifth cell stops it (one cell at a time).
    assert main([*argv, "--max-cost", "0.00002"]) == 1
    err = _stderr(capsys)
    assert "interrupted: budget (cost limit reached; spent $0.0000, 75 tokens, 5 calls" in err
    assert "5 cells did not run; 5 finished cells kept" in err
    assert "to continue it with a higher budget: " in err and " --resume" in err
    assert len(llm.requests) == 5
    with Store(store) as opened:  # the store says why, with the figures
        summary = opened.summary("r")
        assert (summary.status, summary.status_text) == ("interrupted", "interrupted: budget")
        assert summary.budget is not None
        assert (summary.budget.reason, summary.budget.calls) == ("cost", 5)
        assert summary.budget.max_cost == pytest.approx(0.00002)
        loaded = opened.load("r")
        assert loaded.budget == summary.budget and loaded.stopped_by == "budget"
    assert main(["runs", "list", "--store", store]) == 0
    assert "interrupted: budget" in capsys.readouterr().out
    assert main(["runs", "show", "r", "--store", store]) == 0
    shown = capsys.readouterr().out
    assert "interrupted: budget · 5/10 cells" in shown and "cost limit reached" in shown
    assert main(["runs", "list", "--store", store, "--format", "json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["stopped_by"] == "budget" and listed["budget"]["calls"] == 5

    # The same budget: nothing more runs (what was spent counts).
    assert main([*argv, "--resume", "--max-cost", "0.00002"]) == 1
    assert "0 finished cells" not in _stderr(capsys)
    assert len(llm.requests) == 5
    # A higher one goes on from there, and finishes.
    assert main([*argv, "--resume", "--max-cost", "0.01", "-f", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["cells"]) == TASKS and "budget" not in result
    assert len(llm.requests) == TASKS
    (agg,) = result["aggregates"]
    assert agg["usage"]["cost_usd"] == pytest.approx(TASKS * CALL_COST)


def test_tokens_and_calls_budgets_from_the_cli_the_file_and_python(
    llm: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.db"
    bench = _bench(tmp_path, llm)
    assert main(["run", str(bench), "--store", str(store), "--max-tokens", "40"]) == 1
    assert "tokens limit reached; spent $0.0000, 45 tokens, 3 calls" in _stderr(capsys)

    in_file = _bench(tmp_path, llm, run=", max_calls: 2", name="capped")
    assert main(["run", str(in_file), "--store", str(store), "--no-progress"]) == 1
    assert "calls limit reached" in _stderr(capsys)
    assert main(["validate", str(in_file)]) == 0

    # A fresh store: in the one above, the replies asked for already come from its cache,
    # and a cached reply is no call.
    result = benchkit.run(str(bench), store=tmp_path / "fresh.db", max_calls=4)
    assert result.interrupted and result.budget is not None
    assert (result.budget.reason, result.budget.calls, result.budget.max_calls) == ("calls", 4, 4)
    assert len(result.cells) == 4 and result.not_run == TASKS - 4
    again = benchkit.run(str(bench), store=tmp_path / "fresh.db", max_calls=4)
    assert len(again.cells) > 4  # t0..t3 from the cache, free
    assert json.loads(result.to_json())["budget"]["reason"] == "calls"
    assert "**interrupted: budget (calls limit reached" in result.to_markdown()
    unlimited = benchkit.run(str(bench), store=store)
    assert "budget" not in json.loads(unlimited.to_json())
    assert "max_cost" not in json.loads(unlimited.to_json())["info"]["options"]


def test_a_model_without_a_price_stops_a_cost_budget_instead_of_counting_zero(
    llm: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm.respond = lambda body: Reply.text("ok", model="fake-model")
    bench = _bench(tmp_path, llm)
    store = str(tmp_path / "s.db")
    assert main(["run", str(bench), "--store", store, "--max-cost", "5"]) == 1
    err = _stderr(capsys)
    assert "no price for fake-model, so the cost cannot be counted; spent cost unknown" in err
    assert len(llm.requests) == 1
    # Without a cost budget it runs, and its cost stays unknown (None), never 0.
    result = benchkit.run(str(bench), store=store, max_tokens=10**6)
    assert not result.interrupted
    assert result.aggregates[0].usage is not None
    assert result.aggregates[0].usage.cost_usd is None
    from benchkit.reports.html import to_html

    page = to_html(result)
    assert ">unknown<" in page.replace(" ", "") and ">0.0000<" not in page


@pytest.mark.parametrize(
    ("option", "value"),
    [("--max-cost", "0"), ("--max-cost", "nan"), ("--max-tokens", "0"), ("--max-calls", "1.5")],
)
def test_budget_options_are_bounded(tmp_path: Path, option: str, value: str) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["run", str(tmp_path / "b.yaml"), option, value])
    assert usage.value.code == 2


def test_a_budget_in_a_file_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "b.yaml"
    bad: dict[str, Any] = {
        "benchkit": 1,
        "id": "b",
        "run": {"max_cost": -1},
        "tasks": [{"id": "t"}],
    }
    path.write_text(json.dumps(bad), encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    assert "max_cost" in capsys.readouterr().err


def test_a_run_started_over_http_takes_a_budget(tmp_path: Path) -> None:
    import httpx

    from benchkit.serve import create_app

    from ._serve import running, wait_for, write_benchmark

    write_benchmark(tmp_path / "root" / "quick", tasks=6)
    app = create_app(store=tmp_path / "store.db", root=tmp_path / "root")
    with running(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        body = {"benchmark": "quick", "options": {"max_calls": 2, "concurrency": 1}}
        started = client.post("/api/runs", json=body)
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        done = wait_for(client, f"/api/runs/{run_id}", lambda b: b["run"]["status"] != "running")
        assert done["run"]["status"] == "interrupted"
        assert done["run"]["stopped_by"] == "budget"
        assert (done["run"]["budget"]["reason"], done["run"]["budget"]["calls"]) == ("calls", 2)
        listed = client.get("/api/runs").json()["runs"]
        assert [r["stopped_by"] for r in listed if r["run_id"] == run_id] == ["budget"]
        bad = client.post("/api/runs", json={"benchmark": "quick", "options": {"max_cost": 0}})
        assert bad.status_code == 400 and "max_cost" in bad.text
    with Store(tmp_path / "store.db") as opened:
        assert opened.summary(run_id).cells == 2
