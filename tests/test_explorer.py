"""The explorer without a browser: the HTML report (CLI and notebook), ``python -m benchkit
view``, and ``memory explore`` serving the UI beside MemoryBench's explorer API."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

import benchkit
from benchkit.reports.html import bar_chart_svg, to_html

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "benchmarks" / "demo" / "benchmark.yaml"
RAG = REPO / "benchmarks" / "memorybench" / "rag-handbook"
SKILLVAULT = REPO / "benchmarks" / "skillvault-bench-v0" / "bench.yaml"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("explorer") / "benchkit.db"
    benchkit.run(DEMO, store=path)
    benchkit.run(RAG, store=path)
    benchkit.run(SKILLVAULT, store=path)
    return path


def _runs(store: Path) -> dict[str, str]:
    from benchkit.store import Store

    with Store(store) as opened:
        return {s.benchmark_id: s.run_id for s in opened.runs()}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchkit", *args], capture_output=True, text=True, timeout=120
    )


def test_runs_show_html_writes_one_self_contained_page(store: Path, tmp_path: Path) -> None:
    run_id = _runs(store)["demo-arithmetic"]
    target = tmp_path / "report.html"
    done = _cli(
        "runs", "show", run_id[:-2], "--store", str(store), "--format", "html", "-o", str(target)
    )
    assert done.returncode == 0, done.stderr
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>")
    # nothing to fetch: no script, no external stylesheet, image or link
    assert "<script" not in page and "<link" not in page
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    assert page.count("<svg") == 2  # pass rates, paired deltas
    assert "Failing cells (7)" in page
    assert "mcnemar_exact" in page and "wilson, n=12" in page
    assert "assertion_failed</b> ×7" in page
    assert "<h2>Failing cells (" in page  # read from the cells, not the stored outcome
    assert run_id in page
    to_stdout = _cli("runs", "show", run_id, "--store", str(store), "--format", "html")
    assert to_stdout.stdout == page


def test_output_without_html_is_refused(store: Path) -> None:
    run_id = _runs(store)["demo-arithmetic"]
    done = _cli("runs", "show", run_id, "--store", str(store), "-o", "x.html")
    assert done.returncode == 2
    assert "--format html" in done.stderr and "Traceback" not in done.stderr


def test_the_notebook_view_shares_the_renderer(store: Path) -> None:
    from benchkit.store import Store

    with Store(store) as opened:
        result = opened.load(_runs(store)["demo-arithmetic"])
    fragment = result._repr_html_()
    assert fragment.startswith('<div class="bk"><style>')
    assert "<svg" in fragment and "Why cells failed" in fragment
    assert "Failing cells" not in fragment  # the notebook view stays short
    assert "Failing cells (7)" in to_html(result)


def test_formats_add_their_own_sections_through_the_registry(store: Path) -> None:
    from benchkit.reports.html import SECTIONS
    from benchkit.store import Store

    runs = _runs(store)
    with Store(store) as opened:
        memory = to_html(opened.load(runs["rag-handbook"]))
        skills = to_html(opened.load(runs["release-notes"]))
        native = to_html(opened.load(runs["demo-arithmetic"]))
    assert "MemoryBench: score overview" in memory
    for label in ("Corr", "Faith", "Type", "Prec", "Rec", "F1", "Cov", "nDCG", "MAP"):
        assert f'<th class="num">{label}</th>' in memory
    assert re.search(r"<td>LocalBaseline</td><td class=\"num\">0\.\d{3}</td>", memory)
    assert "skillvault: deltas and error breakdown" in skills
    assert 'curated_skill vs no_skill</td><td class="num">+0.400' in skills
    assert "skillvault:" not in native and "MemoryBench:" not in native
    assert sorted(SECTIONS.names()) == ["memorybench", "skillvault"]


def test_bar_chart_draws_whiskers_inside_the_axis() -> None:
    svg = bar_chart_svg([("a", 0.5, 0.25, 0.75), ("b", None, None, None)], title="t")
    assert svg.count("<rect") == 1 and svg.count('class="whisker"') == 1
    # 0.25 and 0.75 of a 360-pixel axis that starts at 170
    assert "M260.0 36H440.0" in svg
    clipped = bar_chart_svg([("d", -2.0, -3.0, 3.0)], title="t", low=-1.0, high=1.0)
    assert "M170.0 36H530.0" in clipped  # whiskers stop at the axis ends
    assert 'class="zero"' in clipped


@contextmanager
def _process(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "benchkit", *args], stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert " on http://127.0.0.1:" in line, line + process.stderr.read()
        yield process, line.split(" on ")[1].strip()
    finally:
        process.terminate()
        process.wait(30)


def test_view_prints_the_url_of_a_run(store: Path, tmp_path: Path) -> None:
    run_id = _runs(store)["demo-arithmetic"]
    with _process("view", run_id[:-1], "--store", str(store), "--root", str(tmp_path)) as (
        _,
        url,
    ):
        assert url.endswith(f"/#/run/{run_id}")
        base = url.split("/#")[0]
        page = httpx.get(base + "/")
        assert page.status_code == 200 and 'src="/static/app.js"' in page.text
        assert httpx.get(base + "/static/base.css").headers["content-type"].startswith("text/css")
        assert httpx.get(base + "/static/nope.js").status_code == 404
        runs = httpx.get(base + "/api/runs").json()["runs"]
        assert {r["run_id"] for r in runs} == set(_runs(store).values())


def test_view_refuses_an_unknown_run(store: Path) -> None:
    done = _cli("view", "run_nope", "--store", str(store))
    assert done.returncode == 2
    assert "run_nope" in done.stderr and "Traceback" not in done.stderr


def test_memory_explore_opens_the_ui_on_its_run(store: Path, tmp_path: Path) -> None:
    run_id = _runs(store)["rag-handbook"]
    with _process("memory", "explore", "--run", run_id, "--port", "0", "--store", str(store)) as (
        _,
        url,
    ):
        page = httpx.get(url)
        assert f'content="#/run/{run_id}"' in page.text  # the screen it opens first
        assert 'name="benchkit-base" content="/benchkit"' in page.text
        # MemoryBench's API keeps /api; benchkit's routes are under /benchkit
        assert httpx.get(url + "api/runs").json()[0]["run_id"] == run_id
        ours = httpx.get(url + "benchkit/api/runs").json()["runs"]
        assert run_id in {r["run_id"] for r in ours}
        detail = httpx.get(url + f"benchkit/api/runs/{run_id}").json()
        assert detail["run"]["format"] == "memorybench"
        task = httpx.get(url + f"benchkit/api/runs/{run_id}/task", params={"task": "hb_006"})
        assert task.status_code == 200 and "dog" in task.json()["input"]


def test_import_benchkit_does_not_import_the_renderer_or_the_server() -> None:
    code = "import benchkit, sys; print(sorted(m for m in sys.modules if m in ('benchkit.reports.html', 'starlette')))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert out.stdout.strip() == "[]"


def test_docs_show_every_screenshot_the_browser_tests_take() -> None:
    text = (REPO / "docs" / "explorer.md").read_text(encoding="utf-8")
    shown = set(re.findall(r"\]\(images/([\w-]+\.png)\)", text))
    tests = (REPO / "tests" / "test_explorer_browser.py").read_text(encoding="utf-8")
    taken = {f"{name}.png" for name in re.findall(r'shot\("([\w-]+)"\)', tests)} | {"report.png"}
    assert shown == taken
    assert all((REPO / "docs" / "images" / name).is_file() for name in shown)


def test_the_html_report_says_how_many_flips_it_leaves_out_and_keeps_labels_apart() -> None:
    """#25: the HTML report cut the flipped-task list at 20 without saying so, and its
    chart labels cut two long condition names to the same text."""
    tasks = [benchkit.Task(f"t{i:02d}", input=i, expected="yes") for i in range(30)]
    long_a = "a-very-long-model-name-that-differs-only-at-the-end-small"
    long_b = "a-very-long-model-name-that-differs-only-at-the-end-large"
    suite = benchkit.Suite(
        benchkit.Benchmark("flips", tasks=tasks, evaluators=[benchkit.EvaluatorSpec("exact")]),
        conditions=[
            benchkit.Condition(long_a, benchkit.CallableProvider(lambda x: "no")),
            benchkit.Condition(long_b, benchkit.CallableProvider(lambda x: "yes")),
        ],
    )
    page = to_html(benchkit.run(suite, store=False))
    assert "and 10 more" in page  # 30 tasks flipped, 20 named
    labels = re.findall(r"<title>[^<]*</title>([^<]*)</text>", page)
    shortened = {label for label in labels if "…" in label}
    assert len(shortened) == 2, labels  # the two conditions read differently
