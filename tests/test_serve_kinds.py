"""``POST /api/runs`` by kind: every request shape an older server took means what it meant
(a benchmark request, with MemoryBench's ``format_options`` or CodeForge's ``chat``), a
tool's field on a benchmark it does not fit is a 400 naming the field (never a swallowed
TypeError), and the tools' server settings are checked — against a real uvicorn server."""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchkit.errors import ConfigError, RegistryError
from benchkit.model import Suite
from benchkit.serve import create_app, create_explorer_app
from benchkit.serve._runs import JobKinds
from benchkit.serve_toolkit import JobBuilder, JobContext, PathError
from benchkit.tools import Claimant, ServerSetting, Tool, ToolWarning, find_collisions

from ._serve import running, wait_for, write_benchmark

REPO = Path(__file__).resolve().parents[1]
RAG_HANDBOOK = REPO / "benchmarks" / "memorybench" / "rag-handbook"
RAG_MINI = Path(__file__).parent / "fixtures" / "codeforge" / "rag-mini.yaml"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    write_benchmark(base / "quick", tasks=2)
    shutil.copytree(RAG_HANDBOOK, base / "mb" / "rag-handbook")
    (base / "datasets").mkdir()
    shutil.copy(RAG_MINI, base / "datasets" / "rag-mini.yaml")
    return base


@pytest.fixture
def server(root: Path, tmp_path: Path) -> Iterator[httpx.Client]:
    app = create_app(store=tmp_path / "store.db", root=root, codeforge_datasets="datasets")
    with running(app) as url, httpx.Client(base_url=url, timeout=120) as client:
        yield client


def test_format_options_still_run_a_memorybench_benchmark(server: httpx.Client) -> None:
    body = {"benchmark": "mb/rag-handbook", "format_options": {"providers": ["LocalBaseline"]}}
    started = server.post("/api/runs", json=body)
    assert started.status_code == 202, started.text
    assert started.json()["job"]["route"] == "benchmark"  # as an older server answered
    run_id = started.json()["run_id"]
    detail = wait_for(server, f"/api/runs/{run_id}", lambda b: b["run"]["status"] == "finished")
    assert detail["run"]["format"] == "memorybench"
    assert detail["run"]["conditions"] == ["LocalBaseline"]
    same = server.post("/api/runs", json={**body, "kind": "memorybench"})
    assert same.status_code == 202, same.text


def test_a_tool_field_on_another_format_names_the_field(server: httpx.Client) -> None:
    refused = server.post(
        "/api/runs",
        json={"benchmark": "quick/benchmark.yaml", "format_options": {"providers": ["x"]}},
    )
    assert refused.status_code == 400, refused.text
    problem = refused.json()
    assert problem["code"] == "INVALID_BENCHMARK"
    assert problem["details"]["field"] == "format_options"
    assert "drop format_options" in problem["details"]["fix"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "codeforge-chat", "benchmark": "datasets/rag-mini.yaml"}, "chat"),
        ({"kind": "memorybench", "benchmark": "mb/rag-handbook"}, "format_options"),
        ({"kind": "codeforge", "dataset": "rag-mini"}, "kind"),  # its own route's job only
        ({"kind": 3, "benchmark": "quick/benchmark.yaml"}, "kind"),
        (
            {
                "benchmark": "mb/rag-handbook",
                "format_options": {"providers": ["LocalBaseline"]},
                "chat": {"model": "m", "metrics": ["correctness"]},
            },
            "format_options",
        ),
        ({"benchmark": "mb/rag-handbook", "format_options": {"colour": 1}}, "format_options"),
    ],
)
def test_kind_and_tool_fields_are_checked(
    server: httpx.Client, body: dict[str, object], field: str
) -> None:
    response = server.post("/api/runs", json=body)
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "INVALID_BODY"
    assert problem["details"]["field"] == field, problem
    assert server.get("/api/jobs").json() == {"jobs": []}


def test_the_datasets_setting_reaches_codeforge_routes(server: httpx.Client) -> None:
    datasets = server.get("/api/v1/benchmarks/datasets").json()
    assert [(d["name"], d["path"]) for d in datasets] == [("RAG Mini", "rag-mini.yaml")]


def test_settings_are_checked_when_the_app_is_built(root: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no installed tool takes") as caught:
        create_app(store=tmp_path / "s.db", root=root, codeforge_dataset="datasets")
    assert "codeforge_datasets" in (caught.value.fix or "")
    with pytest.raises(PathError):
        create_app(store=tmp_path / "s.db", root=root, codeforge_datasets="/etc")


def test_serve_offers_the_tools_settings_as_options(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "benchkit", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "--codeforge-datasets DIR" in done.stdout


def test_the_explorer_app_of_a_run_whose_tool_has_none_is_refused(
    root: Path, tmp_path: Path
) -> None:
    import benchkit

    store = tmp_path / "store.db"
    result = benchkit.run(root / "quick" / "benchmark.yaml", store=store)
    with pytest.raises(ConfigError, match="serves no explorer of its own"):
        create_explorer_app(run_id=result.info.run_id, store=store, root=root)


# -- what tools declare, checked when the server is built ----------------------------------


def _never(spec: Mapping[str, Any], context: JobContext) -> Suite:
    raise AssertionError("not built in these tests")


EXTRA_FIELD = JobBuilder(build=_never, schema={"type": "object"}, field="extra")
NOT_AN_OBJECT = JobBuilder(build=_never, schema={"type": "array"})
NOT_A_BUILDER = {"build": _never}
_HERE = __name__


def _tool(name: str, **jobs: str) -> Tool:
    return Tool(
        name=name, title=name, package=_HERE, jobs={k: f"{_HERE}:{v}" for k, v in jobs.items()}
    )


@pytest.mark.parametrize(
    ("tools", "left_out", "message"),
    [
        (
            [_tool("a", x="EXTRA_FIELD"), _tool("b", y="EXTRA_FIELD")],
            "y",
            r"tool 'b' \(added in code\): its job 'y' is not served: it adds the field 'extra'",
        ),
        ([_tool("a", x="NOT_AN_OBJECT")], "x", "not an object schema"),
        ([_tool("a", x="NOT_A_BUILDER")], "x", r"is 'dict', not a JobBuilder"),
        ([_tool("a", x="GONE")], "x", r"'tests\.test_serve_kinds:GONE' cannot be imported"),
    ],
)
def test_malformed_jobs_are_left_out_with_a_warning_naming_the_tool(
    tools: list[Tool], left_out: str, message: str
) -> None:
    with pytest.warns(ToolWarning, match=message):
        kinds = JobKinds.of(tools)
    assert left_out not in {*kinds.standalone, *kinds.extension_kinds}


def test_two_tools_never_declare_one_job_kind() -> None:
    """Kinds are names a tool claims: discovery refuses a tool taking one (both, of two
    third-party tools), so the server never sees two builders of one kind."""
    a, b = _tool("a", x="EXTRA_FIELD"), _tool("b", x="EXTRA_FIELD")
    claimants = [Claimant("a", a, False, "added in code"), Claimant("b", b, False, "added in code")]
    refused = find_collisions(claimants, {"jobs": {"benchmark": "benchkit's own"}})
    assert refused == {
        "a": "its job kind 'x' is taken by tool 'b' (added in code)",
        "b": "its job kind 'x' is taken by tool 'a' (added in code)",
    }
    own = _tool("c", benchmark="EXTRA_FIELD")
    refused = find_collisions(
        [Claimant("c", own, False, "x")], {"jobs": {"benchmark": "benchkit's own"}}
    )
    assert refused == {"c": "its job kind 'benchmark' is benchkit's own"}


def test_a_tool_field_joins_the_benchmark_request() -> None:
    kinds = JobKinds.of([_tool("a", a_extra="EXTRA_FIELD")])
    schema = kinds.benchmark_schema()
    assert schema["properties"]["extra"] == {"type": "object"}
    assert schema["properties"]["kind"] == {"enum": ["benchmark", "a_extra"]}
    assert set(kinds.request_schemas()) == {"benchmark"}


def test_server_settings_are_checked_where_the_tool_is_defined() -> None:
    with pytest.raises(RegistryError, match="not a lower-case Python name"):
        ServerSetting(name="Bad-Name", help="h")
    with pytest.raises(RegistryError, match=r"not a benchkit\.tools\.ServerSetting"):
        Tool(name="a", title="a", package="a", server_settings=["a_dir"])  # type: ignore[list-item]
    assert ServerSetting(name="a_dir", help="h").flag == "--a-dir"


def _type_error(spec: Mapping[str, Any], context: JobContext) -> Suite:
    raise TypeError("a real bug in a loader")


def test_a_loader_type_error_is_not_taken_for_a_bad_option(tmp_path: Path) -> None:
    """A TypeError from a tool's loader is a bug, reported as one (the server answers 500
    and logs it), never turned into "drop format_options"."""
    from benchkit.serve._runs import build_benchmark_suite
    from benchkit.serve_toolkit import JobContext

    broken = JobBuilder(build=_type_error, schema={"type": "object"}, field="extra")
    spec = {"route": "benchmark", "path": "x.yaml", "extra": {}}
    with pytest.raises(TypeError, match="a real bug"):
        build_benchmark_suite(spec, JobContext(root=tmp_path), {"extra": broken})
