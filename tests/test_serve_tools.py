"""The originals' HTTP APIs served by benchkit — skillvault's bench routes, CodeForge's
benchmark routes, MemoryBench's explorer — against a real uvicorn server."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchkit.formats.skillvault._serve import list_limit
from benchkit.serve import create_app, create_explorer_app

from ._llm_server import FakeOpenAI, capital_model
from ._serve import running, wait_for

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "benchmarks" / "skillvault-bench-v0"
RAG_MINI = Path(__file__).parent / "fixtures" / "codeforge" / "rag-mini.yaml"
RAG_HANDBOOK = REPO / "benchmarks" / "memorybench" / "rag-handbook"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchkit", *args], cwd=cwd, capture_output=True, text=True
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    shutil.copytree(SUITE, base / "bench" / "v0", ignore=shutil.ignore_patterns("README.md"))
    shutil.copytree(
        SUITE, base / "packages/cli/examples/bench-v0", ignore=shutil.ignore_patterns("*.md")
    )
    (base / "bench" / "broken.yaml").write_text(
        "schema: skillvault.bench.config.v1\nconditions: []\ntasks: []\n"
    )
    (base / "bench" / "notes.json").write_text('{"contract_id": "skillvault.bench.run.v1"}')
    (base / "elsewhere").mkdir()
    (base / "benchmarks" / "codeforge").mkdir(parents=True)
    shutil.copy(RAG_MINI, base / "benchmarks" / "codeforge" / "rag-mini.yaml")
    return base


@pytest.fixture
def server(root: Path, tmp_path: Path) -> Iterator[httpx.Client]:
    app = create_app(store=tmp_path / "store.db", root=root)
    with running(app) as url, httpx.Client(base_url=url, timeout=120) as client:
        yield client


# -- skillvault ---------------------------------------------------------------------------


def test_discovery_lists_only_valid_configs(server: httpx.Client, root: Path) -> None:
    configs = server.get("/bench/configs").json()["configs"]
    assert configs == [
        {
            "id": "bench/v0/bench.yaml",
            "name": "bench.yaml",
            "path": str(root / "bench/v0/bench.yaml"),
            "source": "workspace",
        },
        {
            "id": "packages/cli/examples/bench-v0/bench.yaml",
            "name": "bench.yaml",
            "path": str(root / "packages/cli/examples/bench-v0/bench.yaml"),
            "source": "workspace",
        },
    ]


def test_a_run_over_http_equals_the_cli_byte_for_byte(
    server: httpx.Client, root: Path, tmp_path: Path
) -> None:
    response = server.post("/bench/runs", json={"configPath": "bench/v0/bench.yaml"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body) == ["runId", "runPath", "run", "report", "saved"]
    run_id = body["runId"]
    assert body["saved"] is True
    assert body["runPath"] == str(root / ".skillvault/export/bench/runs" / f"{run_id}.json")
    assert body["run"]["created_at"] == "1970-01-01T00:00:00.000Z"  # deterministic by default
    assert body["report"]["contract_id"] == "skillvault.bench.report.v1"
    rates = {c: a["pass_rate"] for c, a in body["run"]["aggregates"].items()}
    assert list(rates) == ["no_skill", "curated_skill", "self_generated_skill"]
    assert rates["curated_skill"] > rates["no_skill"]

    served = server.get(f"/bench/runs/{run_id}")
    assert served.status_code == 200
    out = tmp_path / "cli-run.json"
    done = _cli(
        "bench",
        "run",
        "--config",
        str(root / "bench/v0/bench.yaml"),
        "--out",
        str(out),
        "--store",
        str(tmp_path / "cli.db"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert served.content == out.read_bytes()
    assert Path(body["runPath"]).read_bytes() == out.read_bytes()

    report = server.get(f"/bench/runs/{run_id}/report").json()
    assert report == body["report"]
    assert report["created_at"] == "1970-01-01T00:00:00.000Z"

    # The run is in the store too, under the same id; `bench report` reads its export.
    stored = server.get("/api/runs", params={"format": "skillvault"}).json()["runs"]
    assert [r["run_id"] for r in stored] == [run_id]
    exported = tmp_path / "exported.json"
    done = _cli(
        "runs",
        "export",
        run_id,
        "--store",
        str(tmp_path / "store.db"),
        "-o",
        str(exported),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    from_export = _cli("bench", "report", "--input", str(exported), cwd=tmp_path)
    from_file = _cli("bench", "report", "--input", str(out), cwd=tmp_path)
    assert from_export.returncode == 0, from_export.stderr
    assert from_export.stdout == from_file.stdout
    assert json.loads(from_export.stdout)["aggregates"] == body["run"]["aggregates"]


def test_the_index_keeps_the_originals_entries(server: httpx.Client, root: Path) -> None:
    first = server.post(
        "/bench/runs", json={"configPath": "bench/v0/bench.yaml", "label": "  mine  "}
    ).json()
    second = server.post(
        "/bench/runs",
        json={"configPath": str(root / "bench/v0/bench.yaml"), "deterministic": False},
    ).json()
    unsaved = server.post(
        "/bench/runs", json={"configPath": "bench/v0/bench.yaml", "save": False}
    ).json()
    assert unsaved["saved"] is False
    assert not Path(unsaved["runPath"]).exists()
    assert second["run"]["created_at"] != "1970-01-01T00:00:00.000Z"

    runs = server.get("/bench/runs").json()["runs"]
    assert [r["runId"] for r in runs] == [second["runId"], first["runId"]]  # newest first
    entry = runs[1]
    assert list(entry) == [
        "runId",
        "runPath",
        "configPath",
        "createdAt",
        "deterministic",
        "gitCommit",
        "conditionPassRates",
        "deltas",
        "label",
    ]
    assert entry["label"] == "mine"
    assert runs[0]["label"] == "release-notes"  # metadata.suite when no label
    aggregates, deltas = first["run"]["aggregates"], first["run"]["deltas"]
    assert entry["conditionPassRates"] == {c: a["pass_rate"] for c, a in aggregates.items()}
    assert entry["deltas"] == {name: d["pass_rate_delta"] for name, d in deltas.items()}
    index = json.loads((root / ".skillvault/export/bench/index.json").read_text())
    assert index["schema"] == "skillvault.bench.index.v1"
    assert server.get("/bench/runs", params={"limit": "1"}).json()["runs"] == runs[:1]
    for junk in ("0", "-3", "abc"):
        assert len(server.get("/bench/runs", params={"limit": junk}).json()["runs"]) == 2
    missing = server.get(f"/bench/runs/{unsaved['runId']}")
    assert missing.status_code == 404


@pytest.mark.parametrize(
    ("config_path", "status", "code"),
    [
        ("", 400, "BENCH_CONFIG_PATH_INVALID"),
        ("   ", 400, "BENCH_CONFIG_PATH_INVALID"),
        ("https://example.com/bench.yaml", 400, "BENCH_CONFIG_PATH_INVALID"),
        ("../outside.yaml", 400, "BENCH_CONFIG_PATH_INVALID"),
        ("/etc/hostname", 400, "BENCH_CONFIG_PATH_INVALID"),
        ("bench/escape.yaml", 400, "BENCH_CONFIG_PATH_INVALID"),
        ("bench/nothing.yaml", 404, "BENCH_CONFIG_NOT_FOUND"),
        ("bench/broken.yaml", 400, "BENCH_CONFIG_INVALID"),
        ("elsewhere/bad.yaml", 400, "BENCH_CONFIG_PARSE_ERROR"),
    ],
)
def test_bench_errors_have_the_originals_codes(
    server: httpx.Client, root: Path, tmp_path: Path, config_path: str, status: int, code: str
) -> None:
    (tmp_path / "outside.yaml").write_text((SUITE / "bench.yaml").read_text())
    (root / "bench" / "escape.yaml").symlink_to(tmp_path / "outside.yaml")
    (root / "elsewhere" / "bad.yaml").write_text("tasks: [\n")
    response = server.post("/bench/runs", json={"configPath": config_path})
    assert response.status_code == status, response.text
    error = response.json()
    assert error["code"] == code
    assert isinstance(error["error"], str) and error["error"]
    assert "details" in error
    assert str(tmp_path / "outside.yaml") not in response.text


@pytest.mark.parametrize(
    ("config_path", "message", "details"),
    [
        ("  ", "configPath must be a non-empty string", {"field": "configPath"}),
        (
            "https://example.com/b.yaml",
            "configPath must be a local file path",
            {"field": "configPath", "configPath": "https://example.com/b.yaml"},
        ),
        (
            "../outside.yaml",
            "configPath must resolve inside workspace root",
            {"field": "configPath", "inputPath": "../outside.yaml"},
        ),
        (
            "bench/nothing.yaml",
            "Benchmark config not found: bench/nothing.yaml",
            {"configPath": "bench/nothing.yaml"},
        ),
    ],
)
def test_bench_errors_have_the_originals_words(
    server: httpx.Client, config_path: str, message: str, details: dict[str, str]
) -> None:
    """skillvault's web UI shows these messages to users: they are the original's word for
    word (packages/manager-core/src/services/benchService.ts, resolveConfigPath), except
    that no absolute server path is named (docs/compatibility.md)."""
    response = server.post("/bench/runs", json={"configPath": config_path})
    body = response.json()
    assert (body["error"], body["details"]) == (message, details)


def test_bench_health_and_the_originals_limit(server: httpx.Client) -> None:
    """GET /health and GET /bench/runs?limit= as skillvault's manager API answers them
    (packages/manager-api/src/server.ts: Number(limit), 25 unless finite and > 0, then
    Math.trunc in listBenchRuns)."""
    assert server.get("/health").json() == {"ok": True}
    missing = server.get("/bench/runs/nope").json()
    assert missing["error"] == "Benchmark run not found: nope"
    assert missing["details"] == {"runId": "nope"}


@pytest.mark.parametrize(
    ("values", "limit"),
    [
        ([], 25),
        ([""], 25),
        (["3"], 3),
        ([" 2.9 "], 2),
        (["0x3"], 3),
        (["0b11"], 3),
        (["1e1"], 10),
        (["1_0"], 25),
        (["Infinity"], 25),
        (["-5"], 25),
        (["abc"], 25),
        (["0.5"], 0),
        (["1", "2"], 25),
    ],
)
def test_bench_limit_is_read_as_javascript_reads_it(values: list[str], limit: int) -> None:
    assert list_limit(values) == limit


def test_bench_body_and_run_lookups(server: httpx.Client) -> None:
    missing = server.post("/bench/runs", json={})
    assert (missing.status_code, missing.json()["code"]) == (400, "BENCH_CONFIG_PATH_INVALID")
    typed = server.post("/bench/runs", json={"configPath": "x", "save": "yes"})
    assert (typed.status_code, typed.json()["details"]["field"]) == (400, "save")
    for run_id in ("..", "..%2F..%2Fetc%2Fpasswd", "a%2F..%2F..%2Fetc"):  # never a file
        assert server.get(f"/bench/runs/{run_id}").status_code == 404
    for run_id in ("nope", "a..b", "-x"):
        response = server.get(f"/bench/runs/{run_id}")
        assert response.status_code == 404, run_id
        assert response.json()["code"] == "BENCH_RUN_NOT_FOUND"
        assert server.get(f"/bench/runs/{run_id}/report").status_code == 404


# -- CodeForge ----------------------------------------------------------------------------


@pytest.fixture
def forge(root: Path, tmp_path: Path, llm_server: FakeOpenAI) -> Iterator[httpx.Client]:
    """A server whose one endpoint is the fake chat model (key in $OPENAI_API_KEY)."""
    endpoint = f"fake={llm_server.url},key-env=OPENAI_API_KEY"
    app = create_app(store=tmp_path / "store.db", root=root, endpoints=[endpoint])
    with running(app) as url, httpx.Client(base_url=url, timeout=120) as client:
        yield client


def test_codeforge_runs_really_run(
    forge: httpx.Client, llm_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = forge
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    llm_server.respond = capital_model
    base = "/api/v1/benchmarks"
    datasets = server.get(f"{base}/datasets").json()
    assert datasets == [
        {
            "name": "RAG Mini",
            "description": "Questions answered from retrieval context.",
            "task_count": datasets[0]["task_count"],
            "path": "rag-mini.yaml",
        }
    ]
    body = {
        "dataset": "rag-mini",
        "model": "model-under-test",
        "metrics": ["correctness"],
        "base_url": llm_server.url,
        "judge_base_url": llm_server.url,
        "judge_model": "judge",
    }
    created = server.post(f"{base}/runs", json=body)
    assert created.status_code == 201, created.text
    run = created.json()
    assert run["status"] == "running"
    assert run["summary_scores"] is None
    assert (run["dataset"], run["model"], run["metrics"]) == (
        "rag-mini",
        "model-under-test",
        ["correctness"],
    )
    done = wait_for(server, f"{base}/runs/{run['id']}", lambda r: r["status"] != "running")
    assert done["status"] == "completed"
    assert set(done["summary_scores"]) == {"correctness"}
    assert 0 < done["summary_scores"]["correctness"] < 1
    assert done["total_tokens"] > 0
    assert "completed_at" in done
    results = server.get(f"{base}/runs/{run['id']}/results").json()
    assert len(results) == datasets[0]["task_count"]
    assert {
        "id",
        "run_id",
        "task_id",
        "task_name",
        "scores",
        "actual_output",
        "expected_output",
        "tool_calls",
        "cost_usd",
        "tokens_in",
        "tokens_out",
        "duration_ms",
    } <= set(results[0])
    capital = next(r for r in results if r["task_id"] == "rag-001")
    assert capital["scores"] == {"correctness": 0.9}
    assert capital["actual_output"] == "Paris."

    second = server.post(f"{base}/runs", json=body).json()
    wait_for(server, f"{base}/runs/{second['id']}", lambda r: r["status"] != "running")
    assert [r["id"] for r in server.get(f"{base}/runs").json()] == [second["id"], run["id"]]
    compared = server.post(
        f"{base}/compare", json={"run_id_a": run["id"], "run_id_b": second["id"]}
    ).json()
    assert list(compared) == ["run_a", "run_b", "results_a", "results_b"]
    assert compared["run_b"]["id"] == second["id"]
    assert server.post(f"{base}/compare", json={"run_id_a": run["id"]}).json() == {
        "error": "run_id_a and run_id_b are required"
    }
    assert server.delete(f"{base}/runs/{run['id']}").status_code == 204
    gone = server.get(f"{base}/runs/{run['id']}")
    assert (gone.status_code, gone.json()) == (404, {"error": "benchmark run not found"})
    # CodeForge lists results by run id: an unknown run has none (200 []), not a 404.
    listed = server.get(f"{base}/runs/{run['id']}/results")
    assert (listed.status_code, listed.json()) == (200, [])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "m", "metrics": ["correctness"]}, "dataset is required"),
        ({"dataset": "rag-mini", "metrics": []}, "model is required"),
        ({"dataset": "rag-mini", "model": "m", "metrics": []}, "at least one metric is required"),
        ({"dataset": "", "model": "", "metrics": []}, "dataset is required"),
    ],
)
def test_codeforge_validation_is_400_in_the_originals_order(
    server: httpx.Client, body: dict[str, Any], message: str
) -> None:
    response = server.post("/api/v1/benchmarks/runs", json=body)
    assert (response.status_code, response.json()) == (400, {"error": message})


def test_codeforge_accepts_what_it_cannot_run_then_the_run_fails(
    server: httpx.Client, root: Path
) -> None:
    """As CodeForge: unknown fields are ignored (its later clients send exec_mode,
    benchmark_type, suite_id: frontend/src/api/types.ts); an unknown dataset or metric is
    accepted (201: "POST /benchmarks/runs returns 403 or 201" in
    frontend/e2e/api/benchmarks-api.spec.ts) and the run then fails with an error naming
    it — never a silent 0 — and no error names the server's datasets path."""
    base = "/api/v1/benchmarks/runs"
    extra = {"exec_mode": "mount", "benchmark_type": "simple", "suite_id": "s-1"}
    cases = [
        ({"dataset": "nope", "model": "m", "metrics": ["correctness"]}, "'nope'"),
        ({"dataset": "../../etc/passwd", "model": "m", "metrics": ["correctness"]}, "passwd"),
        ({"dataset": "rag-mini", "model": "m", "metrics": ["vibes"]}, "unknown metric 'vibes'"),
    ]
    for body, named in cases:
        created = server.post(base, json={**body, **extra})
        assert created.status_code == 201, created.text
        run = created.json()
        assert run["status"] == "running"
        done = wait_for(server, f"{base}/{run['id']}", lambda r: r["status"] != "running")
        assert done["status"] == "failed"
        assert done["summary_scores"] is None
        assert named in done["error"]
        assert str(root) not in done["error"]
        assert server.get(f"{base}/{run['id']}/results").json() == []
    offered = server.get("/api/v1/benchmarks/metrics").json()
    assert offered == [
        "correctness",
        "tool_correctness",
        "faithfulness",
        "answer_relevancy",
        "contextual_precision",
    ]
    missing = server.get(f"{base}/nope")
    assert (missing.status_code, missing.json()) == (404, {"error": "benchmark run not found"})
    assert server.delete(f"{base}/nope").status_code == 404
    assert server.get(f"{base}/nope/results").json() == []


def test_codeforge_datasets_dir_comes_from_its_config_and_environment(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CodeForge finds datasets through the config key benchmark.datasets_dir
    (codeforge.yaml; the dataset spec, step 2), overridden by
    $CODEFORGE_BENCHMARK_DATASETS_DIR, as its config loader orders them."""
    monkeypatch.delenv("CODEFORGE_BENCHMARK_DATASETS_DIR", raising=False)
    for name in ("from-config", "from-env"):
        (root / "configs" / name).mkdir(parents=True)
        shutil.copy(RAG_MINI, root / "configs" / name / f"{name}.yaml")
    (root / "codeforge.yaml").write_text("benchmark:\n  datasets_dir: configs/from-config\n")
    app = create_app(store=tmp_path / "store.db", root=root)
    with running(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        listed = client.get("/api/v1/benchmarks/datasets").json()
        assert [d["path"] for d in listed] == ["from-config.yaml"]
        monkeypatch.setenv("CODEFORGE_BENCHMARK_DATASETS_DIR", "configs/from-env")
        listed = client.get("/api/v1/benchmarks/datasets").json()
        assert [d["path"] for d in listed] == ["from-env.yaml"]


# -- MemoryBench --------------------------------------------------------------------------


@pytest.fixture
def memory_run(tmp_path: Path) -> tuple[Path, str]:
    benchmarks = tmp_path / "mb"
    shutil.copytree(RAG_HANDBOOK, benchmarks / "rag-handbook")
    store = tmp_path / "memory.db"
    done = _cli(
        "memory",
        "eval",
        "-p",
        "LocalBaseline",
        "-b",
        "rag-handbook",
        "--benchmarks-dir",
        str(benchmarks),
        "--store",
        str(store),
        "-o",
        str(tmp_path / "out"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    listed = _cli("runs", "list", "--store", str(store), "-f", "json", cwd=tmp_path)
    run_id: str = json.loads(listed.stdout)[0]["run_id"]
    return store, run_id


def test_memory_explore_serves_the_explorer_api(
    memory_run: tuple[Path, str], tmp_path: Path
) -> None:
    store, run_id = memory_run
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchkit",
            "memory",
            "explore",
            "--run",
            run_id,
            "--port",
            "0",
            "--store",
            str(store),
        ],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert f"exploring run {run_id} on http://127.0.0.1:" in line
        url = line.split(" on ")[1].strip()
        with httpx.Client(base_url=url, timeout=60) as client:
            data = client.get("/api/data").json()
            assert list(data) == ["manifest", "summary", "results"]
            assert data["manifest"]["run_id"] == run_id
            assert data["manifest"]["selections"]["providers"] == ["LocalBaseline"]
            records = data["results"]
            assert records
            assert {r["provider_name"] for r in records} == {"LocalBaseline"}
            assert {r["benchmark_name"] for r in records} == {"rag-handbook"}
            totals = data["summary"]["totals"]
            assert totals["cases"] == len(records)
            assert totals["passed"] + totals["failed"] + totals["errors"] == len(records)
            combo = data["summary"]["by_combination"][0]
            assert combo["provider_name"] == "LocalBaseline"
            # The original's CombinationSummary nests the counts (its UI reads
            # combo.counts.cases: sdamache/memorybench src/results/schema.ts).
            assert combo["counts"] == {
                "cases": len(records),
                "passed": totals["passed"],
                "failed": totals["failed"],
                "skipped": 0,
                "errors": totals["errors"],
            }
            manifest = data["manifest"]
            assert "git" not in manifest
            assert set(manifest["environment"]) >= {
                "runtime",
                "runtime_version",
                "os",
                "os_version",
                "platform",
            }
            (provider,) = manifest["providers"]
            assert provider["name"] == "LocalBaseline"
            assert len(provider["manifest_hash"]) == 64
            response = client.get("/api/runs")
            assert response.headers["cache-control"] == "no-store"
            runs = response.json()
            # The original's RunInfo (src/explorer/types.ts).
            assert runs == [
                {
                    "run_id": run_id,
                    "timestamp": runs[0]["timestamp"],
                    "providers": ["LocalBaseline"],
                    "benchmarks": ["rag-handbook"],
                    "result_count": len(records),
                }
            ]
            # /api/run/<id> answers {success, run_id} as the original's explorer server does.
            assert client.get(f"/api/run/{run_id}").json() == {"success": True, "run_id": run_id}
            missing = client.get("/api/run/run_nope")
            assert missing.status_code == 404
            assert missing.json() == {"success": False, "error": "Run not found: run_nope"}
    finally:
        process.terminate()
        process.wait(30)


def test_memory_explore_refuses_an_unknown_run(
    memory_run: tuple[Path, str], tmp_path: Path
) -> None:
    store, _ = memory_run
    done = _cli("memory", "explore", "--run", "run_nope", "--store", str(store), cwd=tmp_path)
    assert done.returncode == 2
    assert "no run 'run_nope'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_main_server_mounts_the_explorer(memory_run: tuple[Path, str], tmp_path: Path) -> None:
    store, run_id = memory_run
    with running(create_app(store=store, root=tmp_path)) as url:
        assert httpx.get(f"{url}/memorybench/api/data").status_code == 404
        with httpx.Client(base_url=url) as client:
            switched = client.get(f"/memorybench/api/run/{run_id}").json()
            assert switched == {"success": True, "run_id": run_id}
            current = client.get("/memorybench/api/data").json()
            assert current["manifest"]["run_id"] == run_id
        # A client without the cookie sees the last switch, as with the original's server.
        plain = httpx.get(f"{url}/memorybench/api/data").json()
        assert plain["manifest"]["run_id"] == run_id


def test_a_switch_reaches_clients_without_the_cookie_and_spares_those_with_it(
    memory_run: tuple[Path, str], tmp_path: Path
) -> None:
    """The original's server has one current run, which ``/api/run/<id>`` switches for
    every client (sdamache/memorybench src/explorer/index.ts); benchkit's also keeps the
    run of a client that sent the cookie its own switch set."""
    store, first = memory_run
    done = _cli(
        "memory",
        "eval",
        "-p",
        "LocalBaseline",
        "-b",
        "rag-handbook",
        "--benchmarks-dir",
        str(tmp_path / "mb"),
        "--store",
        str(store),
        "-o",
        str(tmp_path / "out2"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    listed = _cli("runs", "list", "--store", str(store), "-f", "json", cwd=tmp_path)
    second = json.loads(listed.stdout)[0]["run_id"]
    assert second != first
    with running(create_explorer_app(run_id=first, store=store, root=tmp_path)) as url:

        def shown(client: httpx.Client) -> str:
            run_id: str = client.get("/api/data").json()["manifest"]["run_id"]
            return run_id

        with (
            httpx.Client(base_url=url) as plain,
            httpx.Client(base_url=url) as keeper,
            httpx.Client(base_url=url) as switcher,
        ):
            assert shown(plain) == first  # the run memory explore was started on
            assert keeper.get(f"/api/run/{first}").json()["success"] is True
            assert switcher.get(f"/api/run/{second}").json()["success"] is True
            assert shown(switcher) == second
            # a client without the cookie: the server's run, switched
            plain.cookies.clear()
            assert shown(plain) == second
            # a client that sends its cookie keeps the run it chose
            assert shown(keeper) == first
            # an unknown run switches nothing
            assert plain.get("/api/run/run_nope").status_code == 404
            assert shown(plain) == second
