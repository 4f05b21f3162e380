"""The explorer in a real browser: headless Chromium (Debian's ``chromium``) driven by
playwright against ``python -m benchkit serve`` on 127.0.0.1, over a store filled by really
running benchmarks. Every screen is opened, used from the page, checked for console errors
and photographed (``.benchkit/artifacts/explorer/``; ``make screenshots`` copies the
pictures into docs/images/ for docs/explorer.md).

One browser for the module; a fresh page per test. Where no Chromium can be had the tests
skip with one line saying why — except in CI (``CI`` set), where they fail instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ._llm_server import FakeOpenAI, capital_model
from ._serve import serve, wait_for, write_benchmark

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("BENCHKIT_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: Where screenshots go: always the artifacts folder; also $BENCHKIT_SCREENSHOTS when set.
ARTIFACTS = REPO / ".benchkit" / "artifacts" / "explorer"
RAG_MINI = Path(__file__).parent / "fixtures" / "codeforge" / "rag-mini.yaml"
#: axe-core, installed for these tests only (``make browser``; never shipped in the wheel).
AXE = Path(__file__).parent / "browser_deps" / "node_modules" / "axe-core" / "axe.min.js"
#: Two conditions whose ids differ only after a long shared prefix; the second always raises.
#: The text a chart shows for each label (each label's first text node; its tooltip follows).
LABELS = "[...document.querySelectorAll('#conditions svg text.label')].map(t => t.firstChild.data)"
WORKS = "a-condition-with-a-long-shared-prefix-that-works"
BREAKS = "a-condition-with-a-long-shared-prefix-that-breaks"
BROKEN_PY = """def answer(task_input):
    return task_input["answer"]


def fail(task_input):
    raise RuntimeError("the service is down")
"""


DECIDED_PY = """def answer(task_input):
    return task_input["answer"]


def wrong(task_input):
    return "no"
"""


def _broken_benchmark(folder: Path) -> None:
    """A benchmark of 4 tasks whose second condition errors on every cell."""
    folder.mkdir(parents=True)
    (folder / "broken.py").write_text(BROKEN_PY)
    lines = [
        "benchkit: 1",
        "id: broken",
        "name: Half broken",
        "evaluators: [exact]",
        "conditions:",
        f"  - {{id: {WORKS}, provider: {{type: python, file: broken.py, function: answer}}}}",
        f"  - {{id: {BREAKS}, provider: {{type: python, file: broken.py, function: fail}}}}",
        "tasks:",
        *(f'  - {{id: t{n}, input: {{answer: "x{n}"}}, expected: "x{n}"}}' for n in range(4)),
    ]
    (folder / "benchmark.yaml").write_text("\n".join(lines) + "\n")


def _decided_benchmark(folder: Path) -> None:
    """80 tasks the new system answers and the old one never does, run --until-decided."""
    folder.mkdir(parents=True)
    (folder / "decided.py").write_text(DECIDED_PY)
    lines = [
        "benchkit: 1",
        "id: decided",
        "evaluators: [exact]",
        "run: {until_decided: true, seed: 3}",
        "conditions:",
        "  - {id: old, provider: {type: python, file: decided.py, function: wrong}}",
        "  - {id: new, provider: {type: python, file: decided.py, function: answer}}",
        "tasks:",
        *(f'  - {{id: t{n}, input: {{answer: "x{n}"}}, expected: "x{n}"}}' for n in range(80)),
    ]
    (folder / "benchmark.yaml").write_text("\n".join(lines) + "\n")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"browser tests must run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("no playwright: pip install -e '.[test]'")
    if not os.path.exists(CHROMIUM):
        _unavailable(
            f"no Chromium at {CHROMIUM}: apt-get install chromium (make test does, as root)"
        )
    with sync_playwright() as driver:
        instance = driver.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield instance
        instance.close()


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "benchkit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def _run_id(output: str) -> str:
    found = re.search(r"run (run_\w+): stored", output)
    assert found, output
    return found.group(1)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A root with real benchmarks, a store filled by running them, a fake chat model,
    and ``python -m benchkit serve`` on an ephemeral loopback port."""
    root = tmp_path_factory.mktemp("root")
    for name in ("demo", "skillvault-bench-v0"):
        shutil.copytree(REPO / "benchmarks" / name, root / "benchmarks" / name)
    shutil.copytree(
        REPO / "benchmarks" / "memorybench" / "rag-handbook",
        root / "benchmarks" / "memorybench" / "rag-handbook",
    )
    (root / "benchmarks" / "codeforge").mkdir(parents=True)
    shutil.copy(RAG_MINI, root / "benchmarks" / "codeforge" / "rag-mini.yaml")
    write_benchmark(root / "benchmarks" / "slow", tasks=12, sleep=0.25, ident="slow")
    # a file whose own run options say 3 epochs (the start form must keep them)
    three = write_benchmark(root / "benchmarks" / "three-epochs", tasks=2, ident="three")
    three.write_text(three.read_text().replace("run: {concurrency: 2}", "run: {epochs: 3}"))
    # a test fixture under the root: not offered by the start form
    shutil.copytree(REPO / "benchmarks" / "demo", root / "tests" / "fixtures" / "demo")
    _broken_benchmark(root / "benchmarks" / "broken")
    # the same benchmark twice, B right on one task more than A: a non-significant delta
    for name in ("cmp-a", "cmp-b"):
        write_benchmark(root / "benchmarks" / name, tasks=6, ident="cmp")
    slow_py = root / "benchmarks" / "cmp-a" / "slow.py"
    slow_py.write_text(
        slow_py.read_text().replace(
            'return task_input["answer"]',
            'return "x" if task_input["n"] == 0 else task_input["answer"]',
            1,
        )
    )
    store = root / "store" / "benchkit.db"
    demo = [
        _run_id(_cli("run", "benchmarks/demo/benchmark.yaml", "--store", str(store), cwd=root))
        for _ in range(2)
    ]
    memory = _run_id(
        _cli("run", "benchmarks/memorybench/rag-handbook", "--store", str(store), cwd=root)
    )
    broken = _run_id(_cli("run", "benchmarks/broken", "--store", str(store), cwd=root))
    _decided_benchmark(root / "benchmarks" / "decided")
    decided = _run_id(_cli("run", "benchmarks/decided", "--store", str(store), cwd=root))
    cmp_a, cmp_b = (
        _run_id(_cli("run", f"benchmarks/{n}", "-e", "2", "--store", str(store), cwd=root))
        for n in ("cmp-a", "cmp-b")
    )
    with FakeOpenAI() as llm:
        llm.respond = capital_model
        endpoint = f"fake={llm.url},key-env=OPENAI_API_KEY"  # the start page names its URL
        with serve(root, store, "--endpoint", endpoint, env={"OPENAI_API_KEY": "test-key"}) as (
            _,
            url,
        ):
            yield {
                "url": url,
                "root": root,
                "store": store,
                "demo": demo,
                "memory": memory,
                "broken": broken,
                "decided": decided,
                "compare": (cmp_a, cmp_b),
                "llm": llm.url,
            }


class Page:
    """A fresh browser page that records console errors and every request (the explorer
    fetches nothing from another host), and checks each photographed screen with axe-core."""

    def __init__(
        self,
        browser: Any,
        base: str,
        *,
        width: int = 1280,
        height: int = 900,
        scheme: str = "light",
    ) -> None:
        self.context = browser.new_context(
            viewport={"width": width, "height": height}, color_scheme=scheme
        )
        self.page = self.context.new_page()
        self.page.set_default_timeout(20_000)
        self.base = base
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, hash_: str) -> Any:
        self.page.goto(f"{self.base}/{hash_}")
        self.page.wait_for_selector("main[data-ready]")
        return self.page

    def assert_accessible(self) -> None:
        """axe-core over the screen as it is: no serious or critical violation."""
        if not AXE.is_file():  # the other checks of the test still run
            if os.environ.get("CI"):
                pytest.fail(f"the accessibility checks must run in CI: no axe-core at {AXE}")
            warnings.warn(
                f"no axe-core at {AXE} (make browser installs it): not checked", stacklevel=2
            )
            return
        if not self.page.evaluate("typeof window.axe === 'object'"):
            self.page.add_script_tag(path=str(AXE))
        found = self.page.evaluate(
            "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
            ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
            ".map(v => v.id + ' (' + v.impact + '): ' + v.help + ' — ' +"
            " v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '))"
        )
        assert found == [], "\n".join(found)

    def shot(self, name: str) -> None:
        """Check the screen with axe-core (and for a JavaScript value printed as text),
        then photograph it."""
        self.assert_accessible()
        shown = self.page.locator("main").inner_text()
        assert not re.search(r"\b(null|undefined|NaN)\b|\[object ", shown), shown
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        target = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(target), full_page=True)
        extra = os.environ.get("BENCHKIT_SCREENSHOTS")
        if extra:
            Path(extra).mkdir(parents=True, exist_ok=True)
            shutil.copy(target, Path(extra) / target.name)

    def close(self) -> None:
        self.context.close()
        assert self.errors == [], self.errors
        elsewhere = [u for u in self.requests if not u.startswith((self.base, "data:"))]
        assert elsewhere == [], elsewhere  # no CDN, nothing from another host


@pytest.fixture
def page(browser: Any, site: dict[str, Any]) -> Iterator[Page]:
    opened = Page(browser, site["url"])
    yield opened
    opened.close()


def test_runs_list_search_and_keyboard(page: Page, site: dict[str, Any]) -> None:
    p = page.open("#/runs")
    p.wait_for_selector("tr[data-run]")
    assert p.locator("tr[data-run]").count() >= 3
    demo_row = p.locator(f"tr[data-run='{site['demo'][0]}']")
    assert "Demo arithmetic" in demo_row.inner_text()
    assert "calculator: 1.00 (12/12)" in demo_row.inner_text()
    assert "finished" in demo_row.inner_text()
    page.shot("runs")
    p.fill("#run-search", "rag")
    p.press("#run-search", "Enter")
    p.wait_for_function("document.querySelectorAll('tr[data-run]').length === 1")
    assert "rag-handbook" in p.locator("tr[data-run]").inner_text()
    assert "q=rag" in p.url  # the filter is in the link
    # keyboard: focus the row, Enter opens the run
    p.focus("tr[data-run]")
    p.keyboard.press("Enter")
    p.wait_for_selector("#conditions")
    assert f"#/run/{site['memory']}" in p.url


def test_a_run_shows_intervals_comparisons_and_errors(page: Page, site: dict[str, Any]) -> None:
    p = page.open(f"#/run/{site['demo'][0]}")
    p.wait_for_selector("#conditions svg.chart")
    assert p.locator("#conditions svg .whisker").count() == 2
    conditions = p.locator("#conditions table").inner_text()
    # the method in words, its name in the tooltip
    assert "0.417 [0.193, 0.680]" in conditions and "Wilson interval over 12 tasks" in conditions
    method = p.locator("#conditions table span.method").first
    assert method.get_attribute("title") == "method: wilson"
    comparisons = p.locator("#comparisons").inner_text()
    assert "mental-math vs calculator" in comparisons
    assert "exact McNemar test over 12 tasks" in comparisons
    assert (
        p.locator("#comparisons span.method").first.get_attribute("title")
        == "method: mcnemar_exact"
    )
    assert "12 / 12" in comparisons  # tasks / clusters
    assert "mul-large" in comparisons  # a flipped task
    errors = p.locator("#errors").inner_text()
    assert "assertion_failed ×7" in errors and 'Expected "144" but got "145"' in errors
    page.shot("run")


def test_an_until_decided_run_shows_the_sequential_verdict(
    page: Page, site: dict[str, Any]
) -> None:
    # one verdict per comparison: the explorer shows the group-sequential test's, as the
    # text, JSON, Markdown and HTML reports do
    p = page.open(f"#/run/{site['decided']}")
    p.wait_for_selector("#comparisons table")
    comparisons = p.locator("#comparisons").inner_text()
    assert "new vs old" in comparisons and "group-sequential test" in comparisons
    assert p.locator("#comparisons span.method[title='method: group_sequential']").count() == 1
    assert "significant: the group-sequential test says it differs after 24 tasks" in comparisons
    assert "every figure of this comparison comes from the group-sequential test" in comparisons
    assert p.locator("#comparisons td span.pos").count() == 1  # the delta, as significant


def test_memorybench_judge_and_retrieval_toggle(page: Page, site: dict[str, Any]) -> None:
    p = page.open(f"#/run/{site['memory']}")
    p.wait_for_selector("#format-view")
    view = p.locator("#format-view")
    assert "Corr" in view.inner_text() and "Faith" in view.inner_text()
    assert re.search(r"LocalBaseline\s+0\.\d+", view.inner_text())
    page.shot("run-memorybench")
    p.click("#toggle-retrieval")
    p.wait_for_selector("#toggle-retrieval[aria-pressed='true']")
    text = p.locator("#format-view").inner_text()
    for label in ("Prec", "Rec", "F1", "Cov", "nDCG", "MAP"):
        assert label in text
    assert "metrics=retrieval" in p.url


def test_cells_filter_sort_page_and_detail(page: Page, site: dict[str, Any]) -> None:
    run = site["demo"][0]
    p = page.open(f"#/run/{run}/cells")
    p.wait_for_selector("tr[data-cell]")
    assert p.locator("#cell-count").inner_text() == "1–24 of 24 cells"
    p.select_option("select[name=status]", "fail")
    p.wait_for_function("document.querySelector('#cell-count').textContent.includes('of 7 ')")
    assert "status=fail" in p.url
    p.select_option("select[name=condition]", "calculator")
    p.wait_for_function("document.querySelector('#cell-count').textContent === '0 cells'")
    p.select_option("select[name=condition]", "")
    p.wait_for_function("document.querySelector('#cell-count').textContent.includes('of 7 ')")
    p.fill("input[name=q]", "div")
    p.press("input[name=q]", "Enter")
    p.wait_for_function("document.querySelector('#cell-count').textContent.includes('of 2 ')")
    p.fill("input[name=q]", "")
    p.press("input[name=q]", "Enter")
    p.wait_for_function("document.querySelector('#cell-count').textContent.includes('of 7 ')")
    # sort by task, descending on a second click
    p.click("th:has-text('task')")
    p.wait_for_selector("th[aria-sort='ascending']")
    p.click("th:has-text('task')")
    p.wait_for_selector("th[aria-sort='descending']")
    tasks = p.locator("tr[data-cell] td:first-child").all_inner_texts()
    assert tasks == sorted(tasks, reverse=True)
    page.shot("cells")
    # from the keyboard: Enter on a header sorts, arrows move between rows, Enter opens
    p.focus("th:has-text('status') button")
    p.keyboard.press("Enter")
    p.wait_for_selector("th:has-text('status')[aria-sort='ascending']")
    p.focus("tr[data-cell]:first-child")
    p.keyboard.press("ArrowDown")
    second = p.evaluate("document.activeElement.dataset.cell")
    assert second == p.locator("tr[data-cell]").nth(1).get_attribute("data-cell")
    p.keyboard.press("Enter")
    p.wait_for_selector(f"tr.selected[data-cell='{second}']")
    p.wait_for_selector("#cell-detail h3:has-text('Output')")
    p.click("tr[data-cell='div|mental-math|0']")
    # the previous cell's detail is on the page until this one is drawn: wait for this one
    p.wait_for_selector("#cell-detail pre:has-text('100 / 4')")
    p.wait_for_selector("#side-by-side")
    detail = p.locator("#cell-detail").inner_text()
    assert '"expression": "100 / 4"' in detail  # input, read from the benchmark file
    assert "25.0" in detail and '"42"' in detail  # expected and output
    assert 'Expected "25.0" but got "42"' in detail  # the score's reason
    assert p.locator("#side-by-side .panel").count() == 2  # the task under both conditions
    assert "cell=div%7Cmental-math%7C0" in p.url or "cell=div|mental-math|0" in p.url
    page.shot("cell")
    # the link is shareable: a fresh page opens the same cell with the same filters
    again = Page(page.page.context.browser, site["url"])
    try:
        q = again.open(p.url[p.url.index("#") :])
        q.wait_for_selector("#side-by-side")
        assert q.locator("select[name=status]").input_value() == "fail"
    finally:
        again.close()


def test_compare_two_runs(page: Page, site: dict[str, Any]) -> None:
    a, b = site["demo"]
    p = page.open("#/runs")
    p.wait_for_selector("tr[data-run]")
    p.check(f"tr[data-run='{a}'] input.pick")
    p.wait_for_selector("#compare-picked:has-text('(1/2)')")
    p.check(f"tr[data-run='{b}'] input.pick")
    p.wait_for_selector("#compare-picked:not([disabled])")
    p.click("#compare-picked")
    p.wait_for_selector("h1:has-text('Compare two runs')")
    text = p.locator("main").inner_text()
    assert "calculator" in text and "mental-math" in text
    assert "exact McNemar test over 12 tasks" in text
    assert p.locator("main svg.chart").count() == 1
    # the same benchmark run twice: nothing moved, so no whisker, and the chart says why
    assert p.locator("main svg.chart .whisker").count() == 0
    assert p.locator("main svg.chart text.note").first.text_content() == "identical on every task"
    page.shot("compare")
    # a task's outputs in both runs, side by side
    p.fill("#compare-task", "mul-large")
    p.press("#compare-task", "Enter")
    p.wait_for_selector("#compare-pair .pair")
    sides = p.locator("#compare-pair .pair").first.locator(".panel")
    assert sides.count() == 2
    assert [sides.nth(n).get_attribute("data-side") for n in range(2)] == ["A", "B"]
    for n, run in enumerate((a, b)):
        shown = sides.nth(n).inner_text()
        assert run in shown and ("pass" in shown or "fail" in shown), shown
        assert sides.nth(n).locator("pre").count() == 1  # its output
    assert sides.nth(0).bounding_box()["y"] == sides.nth(1).bounding_box()["y"]  # beside
    page.shot("compare-side-by-side")


def test_start_a_skillvault_run_and_watch_it_finish(page: Page, site: dict[str, Any]) -> None:
    p = page.open("#/start?tab=skillvault")
    p.wait_for_selector("#sv-config")
    assert p.locator("#sv-config").input_value() == "benchmarks/skillvault-bench-v0/bench.yaml"
    p.fill("#sv-label", "from the browser")
    page.shot("start-skillvault")
    p.click("#sv-run")
    p.wait_for_selector("#sv-done", timeout=120_000)
    report = p.locator("#sv-report").inner_text()
    assert "curated_vs_no_skill" in report and "+0.400" in report
    assert "verification_failed" in report
    assert "from the browser" in p.locator("#sv-history").inner_text()  # saved, listed
    page.shot("start-report")
    p.click("#sv-run-link")
    p.wait_for_selector("#format-view")
    view = p.locator("#format-view").inner_text()
    assert "curated_skill vs no_skill" in view
    page.shot("run-skillvault")
    # a failed cell's verifier says why
    p.click("a:has-text('Cells')")
    p.select_option("select[name=status]", "fail")
    p.wait_for_function("document.querySelector('#cell-count').textContent.includes('of 4 ')")
    p.click("tr[data-cell]:first-child")
    p.wait_for_selector("#cell-detail h3:has-text('Verifiers')")
    assert "task metadata" in p.locator("#cell-detail").inner_text()


def test_start_any_benchmark_shows_live_progress(page: Page, site: dict[str, Any]) -> None:
    p = page.open("#/start?tab=any")
    p.wait_for_selector("#bm-path")
    p.select_option("#bm-path", "benchmarks/slow/benchmark.yaml")
    p.fill("#bm-concurrency", "1")
    p.click("#bm-run")
    p.wait_for_selector("#live-progress")
    p.wait_for_selector("#feed li")  # a cell as it finished, from server-sent events
    # one count of cells on the page, the job's progress (also read out as ARIA values)
    counts = re.findall(r"\d+/\d+ cells", p.locator("main").inner_text())
    assert len(counts) == 1, counts
    bar = p.locator("#live-progress [role=progressbar]")
    assert bar.get_attribute("aria-valuemax") == "24"
    assert 0 < int(bar.get_attribute("aria-valuenow") or "0") <= 24
    # the tables fill in while it runs
    p.wait_for_function(
        "document.querySelector('#conditions table') && "
        "!document.querySelector('#conditions table').innerText.includes('0/0')"
    )
    if p.locator("#live-progress").count():
        page.shot("run-live")
    p.wait_for_selector(".badge.finished", timeout=120_000)
    assert p.locator("#live-progress").count() == 0
    assert "12/12" in p.locator("#conditions table").inner_text()  # condition a: all right


def test_cancel_then_resume_from_the_run_page(page: Page, site: dict[str, Any]) -> None:
    p = page.open("#/start?tab=any")
    p.wait_for_selector("#bm-path")
    p.select_option("#bm-path", "benchmarks/slow/benchmark.yaml")
    p.fill("#bm-concurrency", "1")
    p.click("#bm-run")
    p.wait_for_selector("#feed li")
    p.click("#cancel-run")
    p.wait_for_selector("#resume-run", timeout=60_000)  # interrupted: nothing finished is lost
    assert p.locator(".badge.interrupted").count() == 1
    run_id = p.url.split("#/run/")[1]
    with httpx.Client(base_url=site["url"]) as client:
        stored = client.get(f"/api/runs/{run_id}").json()["run"]
    assert 0 < stored["cells"] < 24
    assert stored["stopped_by"] == "cancelled"  # the store says why
    assert "This run was interrupted (cancelled)." in p.locator("#interrupted").inner_text()
    p.click("#resume-run")
    p.wait_for_selector(".badge.finished", timeout=120_000)
    assert "24/24 cells" in p.locator("#run-head").inner_text()


def test_codeforge_page_runs_a_dataset_against_a_model(page: Page, site: dict[str, Any]) -> None:
    p = page.open("#/start?tab=codeforge")
    p.wait_for_selector("#cf-dataset")
    # The metrics offered are exactly the server's (GET /api/v1/benchmarks/metrics), the
    # endpoints the server's configured ones: the page never asks for a URL.
    offered = p.locator("fieldset input[type=checkbox]").evaluate_all(
        "(b) => b.map((x) => x.value)"
    )
    assert offered == [
        "correctness",
        "tool_correctness",
        "faithfulness",
        "answer_relevancy",
        "contextual_precision",
    ]
    p.fill("#cf-model", "model-under-test")
    p.select_option("#cf-endpoint", "fake")
    p.fill("#cf-judge-model", "judge")
    p.select_option("#cf-judge-endpoint", "fake")
    page.shot("start-codeforge")
    p.click("#cf-run")
    p.wait_for_selector("#run-results")
    p.wait_for_selector(".badge.finished", timeout=120_000)
    p.wait_for_selector("#format-view")
    view = p.locator("#format-view").inner_text()
    assert "By difficulty" in view and "easy" in view
    # the judge scored the one right answer (Paris) high: a mean strictly between 0 and 1
    assert re.search(r"model-under-test\s+0\.[1-9]\d\d", view), view
    page.shot("run-codeforge")


def test_narrow_window_has_no_page_wide_scroll(browser: Any, site: dict[str, Any]) -> None:
    narrow = Page(browser, site["url"], width=420)
    try:
        p = narrow.open(f"#/run/{site['demo'][0]}")
        p.wait_for_selector("#conditions")
        width = p.evaluate("document.documentElement.scrollWidth")
        assert width <= 421, width
        narrow.shot("run-narrow")
        # long condition names are cut in the middle to fit, and still read differently
        p.goto(f"{narrow.base}/#/run/{site['broken']}")
        p.wait_for_selector("h1:has-text('Half broken')")
        labels = p.evaluate(LABELS)
        assert all("…" in t for t in labels) and len(set(labels)) == 2, labels
    finally:
        narrow.close()


def test_the_html_report_is_self_contained(
    browser: Any, site: dict[str, Any], tmp_path: Path
) -> None:
    report = tmp_path / "report.html"
    _cli(
        "runs",
        "show",
        site["demo"][0],
        "--store",
        str(site["store"]),
        "--format",
        "html",
        "-o",
        str(report),
        cwd=site["root"],
    )
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(report.as_uri())
    assert page.locator("svg.chart").count() == 2  # conditions and comparisons
    assert "Failing cells (7)" in page.locator("body").inner_text()
    page.click("details summary:has-text('mul-large')")
    assert 'Expected "144" but got "145"' in page.locator("details[open]").inner_text()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    if os.environ.get("BENCHKIT_SCREENSHOTS"):
        shutil.copy(ARTIFACTS / "report.png", Path(os.environ["BENCHKIT_SCREENSHOTS"]))
    context.close()
    assert requests == [report.as_uri()]  # nothing but the file itself
    assert errors == []


def test_the_api_answers_what_the_ui_reads(site: dict[str, Any]) -> None:
    """The two API additions the explorer needs, checked without a browser."""
    with httpx.Client(base_url=site["url"]) as client:
        runs = client.get("/api/runs").json()["runs"]
        demo = next(r for r in runs if r["run_id"] == site["demo"][0])
        assert demo["pass_rates"]["mental-math"] == {
            "passed": 5,
            "cells": 12,
            "pass_rate": 5 / 12,
        }
        task = client.get(f"/api/runs/{site['demo'][0]}/task", params={"task": "div"}).json()
        assert task["input"] == {"expression": "100 / 4"} and task["expected"] == "25.0"
        missing = client.get(f"/api/runs/{site['demo'][0]}/task", params={"task": "nope"})
        assert missing.status_code == 404 and missing.json()["code"] == "TASK_NOT_FOUND"
        wait_for(client, "/api/jobs", lambda body: all(j["ended_at"] for j in body["jobs"]))


def test_memory_explore_opens_on_its_run(browser: Any, site: dict[str, Any]) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchkit",
            "memory",
            "explore",
            "--run",
            site["memory"],
            "--port",
            "0",
            "--store",
            str(site["store"]),
        ],
        stderr=subprocess.PIPE,
        text=True,
        cwd=site["root"],
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert f"exploring run {site['memory']} on http://127.0.0.1:" in line, line
        explorer = Page(browser, line.split(" on ")[1].strip().rstrip("/"))
        try:
            p = explorer.open("")
            p.wait_for_selector("#format-view")
            assert f"#/run/{site['memory']}" in p.url
            assert "MemoryBench" in p.locator("#format-view").inner_text()
            p.click("a:has-text('Cells')")
            p.wait_for_selector("tr[data-cell]")
            p.click("tr[data-cell]:first-child")
            p.wait_for_selector("#cell-detail h3:has-text('Retrieved')")
        finally:
            explorer.close()
    finally:
        process.terminate()
        process.wait(30)


#: MemoryBench's own explorer UI, built outside this repository (its code is not ours to
#: ship): a directory holding its ``index.html``, ``styles.css`` and ``frontend.js`` (the
#: bundle of ``src/explorer/frontend.tsx``; docs/compatibility.md says how it was built).
MEMORYBENCH_UI = os.environ.get("BENCHKIT_MEMORYBENCH_UI", "")
_MODULE = (sys.executable, "-m", "benchkit")


def _original_ui(page: Any, base: str, forward_without_cookies: bool) -> None:
    """Serve the original UI's three files at ``base`` in ``page`` (its API calls go to
    ``memory explore`` itself, or through a forwarder that drops cookies, as a separate
    static server forwarding ``/api/*`` would); other hosts (its CDNs) are refused."""
    ui = Path(MEMORYBENCH_UI)
    files = {
        "/": ("index.html", "text/html"),
        "/styles.css": ("styles.css", "text/css"),
        "/frontend.js": ("frontend.js", "text/javascript"),
    }

    def handle(route: Any) -> None:
        url: str = route.request.url
        if not url.startswith(base):
            route.abort()
            return
        path = url[len(base) :].split("?")[0] or "/"
        if path in files:
            name, kind = files[path]
            route.fulfill(path=str(ui / name), content_type=kind)
        elif forward_without_cookies:
            answer = httpx.get(url, timeout=30)
            route.fulfill(
                status=answer.status_code, body=answer.content, headers=dict(answer.headers)
            )
        else:
            route.continue_()

    page.route("**/*", handle)


@pytest.mark.parametrize("forward_without_cookies", [False, True])
def test_memorybench_original_ui_switches_runs(
    browser: Any, site: dict[str, Any], tmp_path: Path, forward_without_cookies: bool
) -> None:
    """MemoryBench's own UI, unchanged, over ``memory explore``: its run picker switches
    the run on screen, whether the browser sends the cookie or the API is reached through
    something that drops it."""
    if not MEMORYBENCH_UI or not (Path(MEMORYBENCH_UI) / "frontend.js").is_file():
        pytest.skip("BENCHKIT_MEMORYBENCH_UI names no built MemoryBench explorer UI")
    store = tmp_path / "memory.db"
    bench = "benchmarks/memorybench/rag-handbook"
    first, second = (
        _run_id(_cli("run", bench, "--store", str(store), cwd=site["root"])) for _ in range(2)
    )
    process = subprocess.Popen(
        [*_MODULE, "memory", "explore", "--run", first, "--port", "0", "--store", str(store)],
        stderr=subprocess.PIPE,
        text=True,
        cwd=site["root"],
    )
    context = browser.new_context()
    try:
        assert process.stderr is not None
        base = process.stderr.readline().split(" on ")[1].strip().rstrip("/")
        page = context.new_page()
        page.set_default_timeout(20_000)
        _original_ui(page, base, forward_without_cookies)
        page.goto(base + "/")
        page.wait_for_selector(f"text={first}")
        page.click("button:has-text('Select Run')")
        page.click(f"button:has-text('{second}')")
        page.wait_for_selector(f"text={second}")
        page.wait_for_function(f"!document.body.innerText.includes({first!r})")
        # what a plain HTTP client is served now: the run switched to
        assert httpx.get(f"{base}/api/data").json()["manifest"]["run_id"] == second
        page.reload()
        page.wait_for_selector(f"text={second}")  # and the page, loaded again
    finally:
        context.close()
        process.terminate()
        process.wait(30)


def test_a_server_with_a_token_asks_for_it_once(browser: Any, site: dict[str, Any]) -> None:
    with serve(site["root"], site["store"], "--token", "s3cret") as (_, url):
        assert httpx.get(url + "/").status_code == 200  # the page and its files are public
        assert httpx.get(url + "/api/runs").status_code == 401  # the data is not
        guarded = Page(browser, url)
        try:
            p = guarded.open(f"#/run/{site['demo'][0]}")
            p.wait_for_selector("#token-form")
            p.fill("#token", "s3cret")
            p.press("#token", "Enter")
            p.wait_for_selector("#conditions svg.chart")  # the link it was opened on
            p.click("a:has-text('Cells')")
            p.wait_for_selector("tr[data-cell]")
            # a running job's progress is polled (an event stream cannot carry the token)
            started = httpx.post(
                url + "/api/runs",
                json={"benchmark": "benchmarks/slow/benchmark.yaml", "options": {"concurrency": 1}},
                headers={"Authorization": "Bearer s3cret"},
            ).json()
            p.goto(f"{url}/#/run/{started['run_id']}")
            p.wait_for_selector("#live-progress")
            p.wait_for_selector(".badge.finished", timeout=120_000)
            assert "24/24 cells" in p.locator("#run-head").inner_text()
        finally:
            guarded.close()


# -- what a new user met (issue #25) ---------------------------------------------------------


def test_the_cell_detail_stays_in_view_for_a_row_far_down(
    browser: Any, site: dict[str, Any]
) -> None:
    short = Page(browser, site["url"], height=600)
    try:
        p = short.open(f"#/run/{site['demo'][0]}/cells")
        p.wait_for_selector("tr[data-cell]")
        last = p.locator("tr[data-cell]").last
        key = last.get_attribute("data-cell")
        last.scroll_into_view_if_needed()
        assert p.evaluate("window.scrollY") > 100  # the list is longer than the window
        last.click()
        p.wait_for_selector(f"tr.selected[data-cell='{key}']")
        p.wait_for_selector("#cell-detail h3:has-text('Output')")
        top, bottom = p.evaluate(
            "(() => { const r = document.querySelector('#cell-detail').getBoundingClientRect();"
            " return [r.top, r.bottom]; })()"
        )
        assert 0 <= top < 600 and bottom > top, (top, bottom)
        assert p.locator(f"tr[data-cell='{key}']").get_attribute("aria-current") == "true"
    finally:
        short.close()


def test_start_opens_on_any_benchmark_with_the_files_own_options(
    page: Page, site: dict[str, Any]
) -> None:
    p = page.open("#/start")
    p.wait_for_selector("#bm-path")  # the generic form is the first tab
    assert p.locator("#tab-any").get_attribute("aria-current") == "page"
    offered = p.locator("#bm-path option").all_inner_texts()
    assert not [o for o in offered if o.startswith("tests/")], offered  # no fixtures
    assert all(" 0 tasks" not in o for o in offered)
    assert "tests/fixtures/demo/benchmark.yaml" in (p.locator("#bm-others").text_content() or "")
    p.select_option("#bm-path", "benchmarks/three-epochs/benchmark.yaml")
    assert p.locator("#bm-epochs").input_value() == "3"  # the file's run.epochs
    assert p.locator("#bm-cells").inner_text().endswith("= 12 cells")
    page.shot("start")
    bodies: list[str] = []
    p.on("request", lambda r: bodies.append(r.post_data or "") if r.method == "POST" else None)
    p.click("#bm-run")
    try:
        p.wait_for_selector(".badge.finished, .badge.failed, .badge.interrupted", timeout=120_000)
    except Exception:  # say what the page and the server's jobs were at the time
        jobs = httpx.get(site["url"] + "/api/jobs").text[:3000]
        pytest.fail(f"the run did not end: {p.url}\n{p.locator('main').inner_text()}\n{jobs}")
    assert p.locator(".badge.finished").count() == 1, p.locator("main").inner_text()
    assert bodies and '"epochs"' not in bodies[0], bodies  # nothing overrides the file
    assert "12/12 cells" in p.locator("#run-head").inner_text()  # 2 tasks × 2 × 3 epochs


def test_a_broken_condition_is_said_and_not_drawn(page: Page, site: dict[str, Any]) -> None:
    p = page.open("#/runs")
    row = p.locator(f"tr[data-run='{site['broken']}']")
    cells = row.locator("td").all_inner_texts()
    assert cells[6:8] == ["8/8", "4"]  # cells, errors
    row.focus()
    p.keyboard.press(" ")  # Space opens a row as Enter does
    p.wait_for_selector("#broken")
    banner = p.locator("#broken").inner_text()
    assert f"Broken: Condition {BREAKS} errored on every cell (4 of 4" in banner
    assert "the service is down" in banner
    assert p.locator("#conditions svg .whisker").count() == 1  # the working one only
    assert p.locator("#conditions svg .bar").count() == 1
    labels = p.evaluate(LABELS)
    assert len(labels) == 2 and labels[0] != labels[1], labels  # cut, still distinct
    assert "broken" in p.locator("#conditions table").inner_text()
    page.shot("run-broken")


def test_compare_counts_tasks_and_colours_only_significant_deltas(
    page: Page, site: dict[str, Any]
) -> None:
    a, b = site["compare"]
    p = page.open(f"#/compare?a={a}&b={b}")
    p.wait_for_selector("#compare-table")
    head = p.locator("#compare-table thead").inner_text()
    assert "paired tasks" not in head and "tasks" in head
    row = p.locator("#compare-table tbody tr").first
    cells = row.locator("td").all_inner_texts()
    assert cells[0] == "a" and cells[1:3] == ["6", "12"], cells  # 6 tasks, 12 cells
    assert cells[5] == "+0.167"  # B right on one task more: far from significant
    delta = row.locator("td").nth(5).locator("span")
    assert delta.get_attribute("class") == "", "a non-significant delta is not coloured"
    assert "not significant" in (delta.get_attribute("title") or "")


def test_a_slow_answer_does_not_paint_over_the_next_screen(
    page: Page, site: dict[str, Any]
) -> None:
    # the compare route answers 1.5 s late; the user moves on to the runs list meanwhile
    page.page.add_init_script(
        "const real = window.fetch; window.fetch = async (u, o) => {"
        " if (String(u).includes('/api/compare')) await new Promise(r => setTimeout(r, 1500));"
        " return real(u, o); };"
    )
    a, b = site["demo"]
    p = page.page
    p.goto(f"{page.base}/#/compare?a={a}&b={b}")
    p.evaluate("location.hash = '#/runs'")
    p.wait_for_selector("tr[data-run]")
    p.wait_for_timeout(2500)
    assert p.locator("h1").inner_text() == "Runs"
    assert p.locator("tr[data-run]").count() >= 3
    assert p.locator("#live").inner_text() == "Runs: page loaded"  # route change announced
    p.click("a[data-nav='start']")
    p.wait_for_function("document.querySelector('#live').textContent.startsWith('Start a run')")


def test_dark_mode_follows_the_system(browser: Any, site: dict[str, Any]) -> None:
    dark = Page(browser, site["url"], scheme="dark")
    try:
        p = dark.open(f"#/run/{site['demo'][0]}")
        p.wait_for_selector("#conditions svg.chart")
        background = p.evaluate("getComputedStyle(document.body).backgroundColor")
        r, g, b = (int(v) for v in re.findall(r"\d+", background)[:3])
        assert max(r, g, b) < 60, background
        dark.shot("run-dark")  # axe checks the contrast of the dark colours too
        p.goto(f"{dark.base}/#/run/{site['demo'][0]}/cells?cell=div|mental-math|0")
        p.wait_for_selector("#cell-detail h3:has-text('Output')")
        dark.assert_accessible()
    finally:
        dark.close()


def test_charts_are_as_wide_as_the_page(browser: Any, site: dict[str, Any]) -> None:
    widths = []
    for width in (900, 1400):
        sized = Page(browser, site["url"], width=width)
        try:
            p = sized.open(f"#/run/{site['demo'][0]}")
            p.wait_for_selector("#conditions svg.chart")
            widths.append(
                p.evaluate(
                    "document.querySelector('#conditions svg.chart').getBoundingClientRect().width"
                )
            )
        finally:
            sized.close()
    assert widths[1] > widths[0] + 200, widths


def test_every_screen_passes_axe(page: Page, site: dict[str, Any]) -> None:
    """The screens the other tests photograph are checked as they are photographed; these
    are the rest."""
    if not AXE.is_file():
        _unavailable(f"no axe-core at {AXE}: make browser installs it (npm)")
    p = page.open("#/runs")
    p.wait_for_selector("tr[data-run]")
    page.assert_accessible()
    for screen, ready in (
        (f"#/run/{site['memory']}", "#format-view"),
        (f"#/run/{site['demo'][0]}/cells", "tr[data-cell]"),
        ("#/start?tab=skillvault", "#sv-config"),
        ("#/start?tab=codeforge", "#cf-dataset"),
        ("#/compare", "h1"),
    ):
        p.goto(f"{page.base}/{screen}")
        p.wait_for_selector(ready)
        page.assert_accessible()


# -- the new screens (issue #25), against docs/server.md's contract --------------------------
#
# The API these screens read (the outputs matrix, transcripts, ratings, re-runs) comes from
# the explorer-api work. Two kinds of tests:
# - "contract" tests run now: the real server and run, with the new routes answered in the
#   browser (playwright's page.route) by JSON of the contract's shapes — they test how the
#   page draws and what it sends, and take the screenshots;
# - "live" tests run the same screens against the server's own routes (a route that is gone
#   fails them: they never skip for it).

MATRIX = re.compile(r"/api/runs/[^/]+/matrix\?")
CELL = re.compile(r"/api/runs/[^/]+/cell\?")
RATINGS = re.compile(r"/api/runs/[^/]+/ratings(\?.*)?$")
RERUN = re.compile(r"/api/runs/[^/]+/rerun$")


def _mcell(condition: str, status: str, output: str, **extra: Any) -> dict[str, Any]:
    return {
        "condition": condition,
        "epoch": 0,
        "attempt": 0,
        "status": status,
        "passed": status == "pass",
        "score": 1.0 if status == "pass" else 0.0,
        "reason": None,
        "output": output,
        "output_truncated": False,
        "rating": None,
        **extra,
    }


MATRIX_ROWS = [
    {
        "task_id": "div",
        "input": '{"expression": "100 / 4"}',
        "expected": "25.0",
        "tags": ["arith"],
        "disagree": True,
        "cells": {
            "calculator": _mcell("calculator", "pass", "The answer is 25.0 exactly"),
            "mental-math": _mcell(
                "mental-math",
                "fail",
                "The answer is 42 exactly",
                reason='Expected "25.0" but got "42"',
                rating={"verdict": False, "score": None, "comment": "wrong", "rater": "ana"},
            ),
        },
    },
    {
        "task_id": "add",
        "input": '{"expression": "2 + 2"}',
        "expected": "4",
        "tags": ["arith"],
        "disagree": False,
        "cells": {
            "calculator": _mcell("calculator", "pass", "4"),
            "mental-math": _mcell("mental-math", "pass", "4"),
        },
    },
]

EVENTS = [
    {"t": 0.0, "kind": "request", "title": "input sent", "data": {"expression": "100 / 4"}},
    {"t": 0.01, "kind": "message", "title": "assistant", "data": "I think it is 42."},
    {"t": 0.02, "kind": "tool_call", "title": "calc", "data": {"expr": "100/4"}, "duration": 0.004},
    {"t": 0.03, "kind": "judge_reply", "title": "exact", "data": "no match"},
    {"t": 0.04, "kind": "odd_new_kind", "title": "something else", "data": None},
]


class ContractApi:
    """The contract's new routes, answered in the page; records what the page sends."""

    def __init__(self, page: Any, run_id: str) -> None:
        self.run_id = run_id
        self.matrix_queries: list[str] = []
        self.posted: list[tuple[str, Any]] = []
        self.ratings: list[dict[str, Any]] = [
            {
                "task": "div",
                "condition": "mental-math",
                "epoch": 0,
                "attempt": 0,
                "verdict": False,
                "score": None,
                "comment": "wrong",
                "rater": "ana",
                "created": "2026-11-26T10:00:00Z",
            }
        ]
        page.route(MATRIX, self.matrix)
        page.route(CELL, self.cell)
        page.route(RATINGS, self.rating)
        page.route(RERUN, self.rerun)
        page.route(re.compile(r"/api/runs/[^/?]+$"), self.run)

    def matrix(self, route: Any) -> None:
        query = route.request.url.split("?", 1)[1]
        self.matrix_queries.append(query)
        rows = MATRIX_ROWS[:1] if "only=" in query or "q=" in query else MATRIX_ROWS
        body = {"columns": ["calculator", "mental-math"], "by": "condition", "total": len(rows)}
        route.fulfill(json={**body, "offset": 0, "limit": 50, "rows": rows})

    def cell(self, route: Any) -> None:
        real = route.fetch()
        body = real.json()
        attempt = 0 if "attempt=0" in route.request.url else 1
        transcript = {"events": EVENTS, "truncated": True, "bytes": 1234}
        body.update(attempt=attempt, stored_attempts=2, transcript=transcript)
        route.fulfill(response=real, json=body)

    def rating(self, route: Any) -> None:
        request = route.request
        if request.method == "POST":
            sent = request.post_data_json
            self.posted.append(("rating", sent))
            saved = {**sent, "attempt": 1, "created": "2026-11-27T00:00:00Z"}
            self.ratings = [r for r in self.ratings if r["rater"] != sent["rater"]] + [saved]
            route.fulfill(status=201, json={"rating": saved})
        elif "format=csv" in request.url:
            csv = "task,condition,epoch,rater,verdict\ndiv,mental-math,0,ana,false\n"
            disposition = 'attachment; filename="ratings.csv"'
            route.fulfill(
                body=csv, content_type="text/csv", headers={"Content-Disposition": disposition}
            )
        else:
            route.fulfill(json={"ratings": self.ratings})

    def rerun(self, route: Any) -> None:
        self.posted.append(("rerun", route.request.post_data_json))
        route.fulfill(status=202, json={"job": {"run_id": self.run_id, "status": "queued"}})

    def run(self, route: Any) -> None:
        real = route.fetch()
        body = real.json()
        agreement = [{"evaluator": "exact", "n": 2, "agree": 1, "kappa": None}]
        body["ratings"] = {"count": len(self.ratings), "agreement": agreement}
        route.fulfill(response=real, json=body)


def test_outputs_matrix_draws_the_contract(page: Page, site: dict[str, Any]) -> None:
    run = site["demo"][0]
    stub = ContractApi(page.page, run)
    p = page.open(f"#/run/{run}/outputs")
    p.wait_for_selector("#matrix")
    assert p.locator("#matrix thead th").all_inner_texts() == ["task", "calculator", "mental-math"]
    assert p.locator("#matrix-count").inner_text() == "tasks 1–2 of 2"
    div = p.locator("tr[data-task='div']")
    assert "disagree" in div.inner_text()
    wrong = div.locator("td[data-column='mental-math']")
    assert wrong.locator("mark.ins").all_inner_texts() == ["42"]  # the word that differs
    assert div.locator("td[data-column='calculator'] mark").count() == 0
    assert "ana: fail" in wrong.inner_text() and 'got "42"' in wrong.inner_text()
    assert p.locator("tr[data-task='add'] mark").count() == 0  # same outputs: nothing marked
    sticky = p.evaluate("getComputedStyle(document.querySelector('#matrix thead th')).position")
    assert sticky == "sticky"
    page.shot("outputs")
    p.select_option("select[name=only]", "failures")
    p.wait_for_function("document.querySelector('#matrix-count').textContent.endsWith('of 1')")
    assert "only=failures" in p.url and "only=failures" in stub.matrix_queries[-1]
    p.fill("input[name=q]", "twenty five")
    with p.expect_request(lambda r: "/matrix?" in r.url and "q=twenty" in r.url):
        p.press("input[name=q]", "Enter")
    p.wait_for_function("document.querySelector('#matrix-count').textContent.endsWith('of 1')")
    assert "q=twenty+five" in stub.matrix_queries[-1] and "only=failures" in stub.matrix_queries[-1]
    # a cell's status opens its detail
    wrong = p.locator("tr[data-task='div'] td[data-column='mental-math']")
    wrong.locator("a").first.click()
    p.wait_for_selector("#cell-detail #transcript")
    assert "cell=div%7Cmental-math%7C0" in p.url or "cell=div|mental-math|0" in p.url


def test_a_cell_shows_its_transcript_ratings_and_reruns(page: Page, site: dict[str, Any]) -> None:
    run = site["demo"][0]
    stub = ContractApi(page.page, run)
    page.page.set_viewport_size({"width": 1280, "height": 1900})  # the whole detail in view
    p = page.open(f"#/run/{run}/cells?cell=div|mental-math|0")
    p.wait_for_selector("#transcript ol.timeline")
    events = p.locator("#transcript li")
    assert events.count() == 5
    assert (
        "+0.01 s" in events.nth(1).inner_text()
        and "I think it is 42." in events.nth(1).inner_text()
    )
    assert "tool call" in events.nth(2).inner_text() and "4 ms" in events.nth(2).inner_text()
    assert "odd_new_kind" in events.nth(4).inner_text()  # an unknown kind, shown plainly
    assert p.locator("#transcript-truncated").count() == 1
    # beside the evaluators' verdict, the people's
    ratings = p.locator("#ratings").inner_text()
    assert "Evaluators say exact: fail" in ratings and "ana" in ratings and "wrong" in ratings
    assert "attempt" in p.locator("#attempts").inner_text()  # attempt 2 of 2 shown
    page.shot("cell-transcript")
    p.fill("#rater", "bo")
    p.select_option("#rating-verdict", "pass")
    p.fill("#rating-comment", "42 is the answer to everything")
    p.click("#rating-form button[type=submit]")
    p.wait_for_selector("#cell-ratings :text('bo')")
    kind, sent = stub.posted[-1]
    assert kind == "rating" and sent == {
        "task": "div",
        "condition": "mental-math",
        "epoch": 0,
        "verdict": True,
        "score": None,
        "comment": "42 is the answer to everything",
        "rater": "bo",
    }
    p.reload()
    p.wait_for_selector("#rating-form")
    assert p.locator("#rater").input_value() == "bo"  # the rater's name is remembered
    # an older attempt, then a re-run of this cell
    p.click("#attempts button")
    p.wait_for_function("location.hash.includes('attempt=0')")
    p.wait_for_selector("#attempts :text('older one')")
    p.click("#rerun-cell")
    p.wait_for_selector("#run-head")
    assert stub.posted[-1] == ("rerun", {"task": "div", "condition": "mental-math", "epoch": 0})


def test_ratings_download_and_agreement_on_the_run_page(page: Page, site: dict[str, Any]) -> None:
    run = site["demo"][0]
    ContractApi(page.page, run)
    p = page.open(f"#/run/{run}")
    p.wait_for_selector("#run-ratings")
    assert "2 ratings" not in p.locator("#run-ratings").inner_text()  # one, from "ana"
    assert "exact" in p.locator("#agreement").inner_text()
    with p.expect_download() as info:
        p.click("#ratings-csv")
    download = info.value
    assert download.suggested_filename == f"{run}-ratings.csv"
    assert Path(download.path()).read_text().startswith("task,condition,epoch,rater")


def test_screens_say_when_the_server_lacks_the_new_routes(page: Page, site: dict[str, Any]) -> None:
    page.page.route(MATRIX, lambda r: r.fulfill(status=404, json={"error": "not found"}))
    page.page.route(RATINGS, lambda r: r.fulfill(status=404, json={"error": "not found"}))

    def older_cell(route: Any) -> None:
        """The cell as a server without the explorer-api routes sends it."""
        answer = route.fetch()
        body = {
            k: v
            for k, v in answer.json().items()
            if k not in ("attempt", "stored_attempts", "transcript")
        }
        route.fulfill(response=answer, json=body)

    page.page.route(CELL, older_cell)
    run = site["demo"][0]
    p = page.open(f"#/run/{run}/outputs")
    p.wait_for_selector("#needs-server")
    p.goto(f"{page.base}/#/run/{run}/cells?cell=div|mental-math|0")
    p.wait_for_selector("#ratings #needs-server")
    assert p.locator("#transcript").count() == 0  # an older server sends no transcript
    # the browser logs each 404 it was answered; those are the point of this test
    page.errors[:] = [e for e in page.errors if "status of 404" not in e]


@pytest.fixture
def explorer_api(site: dict[str, Any]) -> dict[str, Any]:
    """A fresh finished run (2 tasks × 2 conditions × 3 epochs) on the server, whose
    explorer routes the live tests use (the matrix answers for the demo run: a removed route
    fails here, it never turns the tests into skips)."""
    with httpx.Client(base_url=site["url"]) as client:
        probe = client.get(f"/api/runs/{site['demo'][0]}/matrix")
        assert probe.status_code == 200, probe.text
        started = client.post(
            "/api/runs", json={"benchmark": "benchmarks/three-epochs/benchmark.yaml"}
        ).json()
        run_id = started["run_id"]
        wait_for(client, f"/api/runs/{run_id}", lambda b: b["run"]["status"] == "finished")
    return {**site, "run": run_id}


def test_live_outputs_matrix_filters_and_searches(page: Page, explorer_api: dict[str, Any]) -> None:
    demo = explorer_api["demo"][0]
    p = page.open(f"#/run/{demo}/outputs")
    p.wait_for_selector("#matrix")
    assert p.locator("#matrix thead th").all_inner_texts() == ["task", "calculator", "mental-math"]
    assert p.locator("#matrix-count").inner_text() == "tasks 1–12 of 12"
    p.select_option("select[name=only]", "failures")
    p.wait_for_function("document.querySelector('#matrix-count').textContent.endsWith('of 7')")
    p.select_option("select[name=only]", "disagree")
    p.wait_for_function("document.querySelector('#matrix-count').textContent.endsWith('of 7')")
    assert p.locator("#matrix td[data-column='mental-math'] mark.ins").count() >= 1
    p.select_option("select[name=only]", "")
    p.fill("input[name=q]", "145")  # mul-large's wrong answer
    p.press("input[name=q]", "Enter")
    p.wait_for_selector("tr[data-task='mul-large']")
    page.assert_accessible()


def test_a_cell_with_no_stored_result_says_so(page: Page, explorer_api: dict[str, Any]) -> None:
    """While a re-run runs, its cell has no stored result (the last attempt waits aside):
    the detail says so and offers to look again, instead of failing the whole page."""
    run = explorer_api["run"]
    p = page.open(f"#/run/{run}/cells?cell=t1|b|9")
    p.wait_for_selector("#cell-missing")
    assert p.locator("tr[data-cell='t1|b|0']").count() == 1  # the list is still there
    assert p.locator("#cell-detail h2").inner_text() == "t1 · b · epoch 9"
    p.click("#cell-missing button")
    p.wait_for_selector("#cell-missing")
    # the browser logs each 404 it was answered; nothing else went wrong
    assert page.errors and all("404" in e for e in page.errors), page.errors
    page.errors.clear()


def test_live_rating_a_cell_and_rerunning_it(page: Page, explorer_api: dict[str, Any]) -> None:
    run = explorer_api["run"]
    p = page.open(f"#/run/{run}/cells?cell=t1|b|0")
    p.wait_for_selector("#transcript")
    p.fill("#rater", "carol")
    p.select_option("#rating-verdict", "fail")
    p.click("#rating-form button[type=submit]")
    p.wait_for_selector("#cell-ratings :text('carol')")
    with httpx.Client(base_url=explorer_api["url"]) as client:
        ratings = client.get(f"/api/runs/{run}/ratings").json()["ratings"]
        assert [(r["task"], r["condition"], r["verdict"], r["rater"]) for r in ratings] == [
            ("t1", "b", False, "carol")
        ]
    p.goto(f"{page.base}/#/run/{run}/outputs")
    p.wait_for_selector("tr[data-task='t1'] .rating")
    with p.expect_download() as info:
        p.click("#ratings-jsonl")
    assert "carol" in Path(info.value.path()).read_text()
    p.goto(f"{page.base}/#/run/{run}/cells?cell=t1|b|0")
    p.wait_for_selector("#rerun-cell")
    p.click("#rerun-cell")
    p.wait_for_url(re.compile(rf".*#/run/{run}$"))  # the run's page, where the job shows
    # its header's badge is the job's status until the job ends (the run's stored status
    # said finished while the re-run waited; the page left behind had the badge too)
    p.wait_for_selector("#run-head .badge.finished", timeout=120_000)
    asked = len(page.requests)
    p.goto(f"{page.base}/#/run/{run}/cells?cell=t1|b|0")
    p.wait_for_selector("#attempts")
    assert "of 2" in p.locator("#attempts").inner_text()
    # the run as it was before the re-run is not reused for the cells' header
    assert any(u.endswith(f"/api/runs/{run}") for u in page.requests[asked:])


def test_the_word_diff_and_the_label_cutter_hold_their_properties(
    page: Page, site: dict[str, Any]
) -> None:
    """Properties of the page's own word diff and label cutter, over random texts run in
    the page (hypothesis draws them; one call to the page per batch)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    p = page.open("#/start")
    p.wait_for_selector("#bm-path")
    WORD = re.compile(r"\s+|\w+|[^\s\w]")  # the page's words: spaces, letters+digits, a sign
    words = st.lists(st.sampled_from(["the", "cat", "dog", "sat", "42", "é", ".", " ", "\n"]))
    texts = words.map("".join)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(texts, texts), min_size=1, max_size=20))
    def diffs(pairs: list[tuple[str, str]]) -> None:
        out = p.evaluate("pairs => pairs.map(([a, b]) => benchkitExplorer.wordDiff(a, b))", pairs)
        for (a, b), parts in zip(pairs, out, strict=True):
            assert "".join(t for t, _ in parts) == b  # the text, whole and in order
            if a == b:
                assert not any(c for _, c in parts)  # nothing marked
            # the words left unmarked appear in the first text, in the same order
            kept = [w for t, c in parts if not c for w in WORD.findall(t) if not w.isspace()]
            rest = iter(w for w in WORD.findall(a) if not w.isspace())
            assert all(w in rest for w in kept), (a, b, parts)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.text(min_size=1, max_size=60), min_size=1, max_size=8, unique=True))
    def labels(names: list[str]) -> None:
        out = p.evaluate("names => benchkitExplorer.shortLabels(names, 16)", names)
        assert len(set(out)) == len(out)  # distinct names stay distinct
        assert all(len(t) <= 16 or t == n for t, n in zip(out, names, strict=True))

    diffs()
    labels()


def test_outputs_matrix_pages_through_ten_thousand_tasks(page: Page, site: dict[str, Any]) -> None:
    """50 rows a page from the server, whatever the total; long outputs are diffed."""
    queries: list[str] = []
    long_text = " ".join(f"word{n}" for n in range(300))  # ~2,000 characters

    def matrix(route: Any) -> None:
        query = route.request.url.split("?", 1)[1]
        queries.append(query)
        offset = int(re.search(r"offset=(\d+)", query).group(1))  # type: ignore[union-attr]
        rows: list[dict[str, Any]] = [
            {
                "task_id": f"task-{offset + n:05d}",
                "input": "x",
                "expected": None,
                "tags": [],
                "disagree": False,
                "cells": {
                    "epoch 0": {**_mcell("a", "pass", long_text), "epoch": 0},
                    "epoch 1": {**_mcell("a", "pass", long_text + " extra"), "epoch": 1},
                },
            }
            for n in range(50)
        ]
        body = {"columns": ["epoch 0", "epoch 1"], "by": "epoch", "total": 10_000}
        route.fulfill(json={**body, "offset": offset, "limit": 50, "rows": rows})

    page.page.route(MATRIX, matrix)
    p = page.open(f"#/run/{site['demo'][0]}/outputs?by=epoch")
    p.wait_for_selector("#matrix")
    assert p.locator("#matrix-count").inner_text() == "tasks 1–50 of 10000"
    assert p.locator("#matrix tbody tr").count() == 50
    assert p.locator("td[data-column='epoch 1'] mark.ins").first.inner_text() == "extra"
    assert p.locator("select[name=epoch]").count() == 0  # columns are the epochs already
    assert "by=epoch" in queries[-1]
    p.click("#matrix-next")
    p.wait_for_selector("tr[data-task='task-00050']")
    assert "offset=50" in queries[-1]
    assert p.locator("#matrix-count").inner_text() == "tasks 51–100 of 10000"


def test_a_run_going_on_in_another_process_is_followed(page: Page, site: dict[str, Any]) -> None:
    """A run the CLI is running beside the server: stored as running, no job here."""
    run_id = "run_20261127T000000_e15e3e"
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "benchkit", "run", "benchmarks/slow", "--run-id", run_id),
            *("--store", str(site["store"]), "-c", "1", "--no-progress"),
        ],
        cwd=site["root"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with httpx.Client(base_url=site["url"]) as client:
            wait_for(
                client,
                "/api/runs?status=running",
                lambda b: any(r["run_id"] == run_id for r in b["runs"]),
            )
        p = page.open(f"#/run/{run_id}")
        p.wait_for_selector("#running-elsewhere")
        p.wait_for_selector(".badge.finished", timeout=120_000)  # followed to its end
        assert p.locator("#running-elsewhere").count() == 0
        assert "24/24 cells" in p.locator("#run-head").inner_text()
    finally:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err


def test_the_api_page_reads_without_help(page: Page, site: dict[str, Any]) -> None:
    """``GET /docs``: the OpenAPI document as a page in the explorer's style, loading
    nothing from another host (``Page.close`` checks), passing axe, with working links
    from an operation to the schemas it names."""
    p = page.page
    p.goto(site["url"] + "/docs")
    document = httpx.get(site["url"] + "/openapi.json").json()
    operations = sum(
        method in item
        for item in document["paths"].values()
        for method in ("get", "post", "delete")
    )
    assert p.locator("section.op .method").count() == operations
    post = p.locator("#op-post--api-runs")
    assert "Start a run" in post.inner_text() or "run" in post.inner_text().lower()
    assert "benchmark" in post.locator("ul.schema").first.inner_text()
    assert "required" in post.locator("ul.schema").first.inner_text()
    post.locator("a[href='#schema-accepted']").first.click()
    p.wait_for_function("location.hash === '#schema-accepted'")
    assert p.locator("#schema-accepted").is_visible()
    # the explorer's colours and header: the report's stylesheet, inline
    accent = p.evaluate("getComputedStyle(document.body).getPropertyValue('--accent').trim()")
    assert accent, "the explorer's custom properties are defined"
    assert p.locator("header.top a.brand").inner_text() == "benchkit"
    assert p.locator("script").count() == 0 and p.locator("link[rel=stylesheet]").count() == 0
    page.shot("api-docs")


# ---------------------------------------------------------------- reads without help (#39)


def test_the_live_region_is_heard_not_seen(page: Page, site: dict[str, Any]) -> None:
    """The screen reader's live region takes no room on the screen (it was a visible,
    empty note in the header) and still holds what is announced."""
    p = page.open("#/runs")
    live = p.locator("#live")
    assert live.get_attribute("aria-live") == "polite"
    p.evaluate("document.getElementById('live').textContent = 'rating saved'")
    box = live.bounding_box()
    assert box is not None and box["width"] <= 1 and box["height"] <= 1, box
    assert p.evaluate("getComputedStyle(document.getElementById('live')).overflow") == "hidden"
    assert live.text_content() == "rating saved"  # read, not shown


def test_the_runs_list_draws_pass_rates_and_marks_the_newest(
    page: Page, site: dict[str, Any]
) -> None:
    p = page.open("#/runs")
    p.wait_for_selector("tr[data-run]")
    newest = httpx.get(site["url"] + "/api/runs?limit=1").json()["runs"][0]
    row = p.locator("tr:has(#newest-run)")
    assert row.count() == 1 and row.get_attribute("data-run") == newest["run_id"]
    assert p.locator("#newest-run").inner_text() == "newest"
    demo = p.locator(f"tr[data-run='{site['demo'][0]}'] .rate")
    assert demo.count() == 2  # one bar per condition
    for n in range(2):
        rate = float(demo.nth(n).inner_text().split(": ")[1].split(" ")[0])
        bar = demo.nth(n).locator(".rate-bar").bounding_box()
        fill = demo.nth(n).locator(".rate-bar > span").bounding_box()
        assert bar is not None and fill is not None
        assert abs(fill["width"] - rate * (bar["width"] - 2)) <= 1.5, (rate, fill, bar)
    page.shot("runs-bars")


def test_counts_read_in_the_singular_for_one(page: Page, site: dict[str, Any]) -> None:
    p = page.open("#/start")
    p.wait_for_selector("#bm-path")
    p.select_option("#bm-path", "benchmarks/three-epochs/benchmark.yaml")
    p.fill("#bm-epochs", "1")
    p.wait_for_function("document.querySelector('#bm-cells').textContent.includes('× 1 epoch =')")
    said = p.locator("#bm-cells").inner_text()
    assert said == "2 tasks × 2 conditions × 1 epoch = 4 cells", said
    p.fill("#bm-epochs", "3")
    p.wait_for_function("document.querySelector('#bm-cells').textContent.includes('3 epochs')")


def test_errored_cells_show_no_score_and_no_empty_output(page: Page, site: dict[str, Any]) -> None:
    """A cell that errored measured nothing: the list, the detail, the task's other cells
    and the outputs matrix draw no score and no empty output box for it."""
    run = site["broken"]
    p = page.open(f"#/run/{run}/cells?condition={BREAKS}")
    p.wait_for_selector("tr[data-cell]")
    for score in p.locator("tr[data-cell] td:nth-child(5)").all_inner_texts():
        assert score == "—"
    p.locator("tr[data-cell]").first.click()
    p.wait_for_selector("#cell-detail #cell-error")
    detail = p.locator("#cell-detail")
    assert "score" not in detail.locator("h2 + p").inner_text()
    assert detail.locator("h3:text-is('Output')").count() == 0
    assert detail.locator("h3:text-is('Scores')").count() == 0
    errored = detail.locator("#side-by-side .panel:has(span.error)")
    assert errored.count() == 1 and errored.locator("pre").count() == 0
    assert "score" not in errored.inner_text()
    working = detail.locator("#side-by-side .panel:has(span.pass)")
    assert "score 1.000" in working.inner_text() and working.locator("pre").count() == 1
    p = page.open(f"#/run/{run}/outputs")
    p.wait_for_selector("#matrix")
    cells = p.locator(f"td.st-error[data-column='{BREAKS}']")
    assert cells.count() == 4
    for n in range(4):
        assert cells.nth(n).locator("pre").count() == 0
        assert cells.nth(n).locator(".mhead").inner_text().strip() == "error"


def test_following_a_failure_opens_it_in_the_filtered_cells_list(
    page: Page, site: dict[str, Any]
) -> None:
    p = page.open(f"#/run/{site['demo'][0]}")
    p.wait_for_selector("#errors a.failure")
    failure = p.locator("#errors a.failure").first
    task = failure.inner_text()
    failure.click()
    p.wait_for_selector("#cell-detail h2")
    assert p.locator("select[name=condition]").input_value() == "mental-math"
    assert p.locator("select[name=status]").input_value() == "fail,error,timeout"
    rows = p.locator("tr[data-cell]")
    assert rows.count() >= 1
    assert {
        r.split("|")[0]
        for r in (rows.nth(n).get_attribute("data-cell") or "" for n in range(rows.count()))
    } == {task}
    chosen = p.locator("tr[aria-current='true']")
    assert chosen.count() == 1 and chosen.is_visible()
    assert p.evaluate("document.activeElement.getAttribute('aria-current')") == "true"
    box = chosen.bounding_box()
    assert box is not None and 0 <= box["y"] <= p.viewport_size["height"] - box["height"]
    assert task in p.locator("#cell-detail h2").inner_text()
    page.shot("failure-followed")


def test_the_run_page_and_the_cli_agree_on_an_exact_test_and_its_interval(
    page: Page, site: dict[str, Any]
) -> None:
    """Beside an exact test the interval is the one that inverts it (#43), so "the interval
    excludes 0 but the test does not reject" can no longer be said: the CLI and the run
    page show the same not-significant comparison, with no such note."""
    shown = _cli(
        "runs", "show", site["compare"][1], "--store", str(site["store"]), cwd=site["root"]
    )
    assert "b vs a" in shown and "excludes 0 but" not in shown
    p = page.open(f"#/run/{site['compare'][1]}")
    p.wait_for_selector("#comparisons table")
    comparisons = p.locator("#comparisons").inner_text()
    assert "b vs a" in comparisons and "excludes 0 but" not in comparisons
    assert p.locator("#comparisons td span[title='not significant']").count() >= 1


class MatrixRows(ContractApi):
    """The contract's routes, with rows that exercise folding, search and the diff."""

    ROWS = [
        {
            "task_id": "long",
            "input": "Summarise: " + "the quick brown fox jumps over the lazy dog. " * 12,
            "expected": "A fox jumps over a dog.",
            "tags": [],
            "disagree": True,
            "cells": {
                "calculator": _mcell("calculator", "pass", "The answer is 25.0 exactly, as asked"),
                "mental-math": _mcell("mental-math", "fail", "The answer is 42 exactly, as asked"),
            },
        },
        {
            "task_id": "short",
            "input": "2 + 2",
            "expected": "4",
            "tags": [],
            "disagree": True,
            "cells": {
                "calculator": _mcell("calculator", "pass", "The answer is four"),
                "mental-math": _mcell("mental-math", "error", "", reason="the service is down"),
            },
        },
        {
            "task_id": "other",
            "input": "3 + 3",
            "expected": "6",
            "tags": [],
            "disagree": True,
            "cells": {
                "calculator": _mcell("calculator", "pass", "six"),
                "mental-math": _mcell("mental-math", "fail", "I would say the answer is 7"),
            },
        },
    ]

    def matrix(self, route: Any) -> None:
        self.matrix_queries.append(route.request.url.split("?", 1)[1])
        body = {"columns": ["calculator", "mental-math"], "by": "condition", "total": 3}
        route.fulfill(json={**body, "offset": 0, "limit": 50, "rows": self.ROWS})


def test_matrix_shows_inputs_search_hits_and_helpful_diffs(
    page: Page, site: dict[str, Any]
) -> None:
    run = site["demo"][0]
    MatrixRows(page.page, run)
    p = page.open(f"#/run/{run}/outputs?q=answer")
    p.wait_for_selector("#matrix")
    # inputs in the row: short ones shown, long ones folded (and unfold)
    short = p.locator("tr[data-task='short'] th.mtask")
    assert "input: 2 + 2" in short.inner_text().replace("\n", " ")
    fold = p.locator("tr[data-task='long'] th.mtask details.minput-fold")
    assert fold.count() == 1 and not fold.locator("pre").is_visible()
    fold.locator("summary").click()
    assert fold.locator("pre").is_visible()
    # search hits: their own mark, apart from the diff's
    long_wrong = p.locator("tr[data-task='long'] td[data-column='mental-math']")
    assert long_wrong.locator("mark.ins").all_inner_texts() == ["42"]  # the diff helps here
    assert long_wrong.locator("mark.hit").all_inner_texts() == ["answer"]
    hit = long_wrong.locator("mark.hit").first
    ins = long_wrong.locator("mark.ins").first
    style = "(e) => [getComputedStyle(e).backgroundColor, getComputedStyle(e).outlineStyle]"
    assert hit.evaluate(style) != ins.evaluate(style)
    assert p.locator("tr[data-task='long'] td[data-column='calculator'] mark.hit").count() == 1
    # mostly different: no word marked, one line says so
    other = p.locator("tr[data-task='other'] td[data-column='mental-math']")
    assert other.locator("mark.ins").count() == 0
    assert "differs from the first column throughout" in other.inner_text()
    # an errored cell: no score, no empty output box
    errored = p.locator("tr[data-task='short'] td[data-column='mental-math']")
    assert errored.locator("pre").count() == 0
    assert errored.locator(".mhead").inner_text().strip() == "error"
    page.shot("outputs-search")


def _agent_transcript() -> dict[str, Any]:
    """The transcript of a real agent cell (the loop against a scripted model: a call, a
    tool error told to the model, then a turn limit), with the spans a traced agent adds."""
    from benchkit import Benchmark, Condition, Suite, Task
    from benchkit import run as run_suite
    from benchkit.providers import AgentProvider
    from benchkit.traces import Span

    from ._llm_server import Reply

    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    with FakeOpenAI() as llm:
        llm.queue(
            Reply.tools({"name": "divide", "arguments": {"a": 100, "b": 4}}, text="Dividing."),
            Reply.tools({"name": "divide", "arguments": {"a": 1, "b": 0}}),
        )
        agent = AgentProvider(
            model="m",
            base_url=llm.url,
            api_key_env=[],
            cache=False,
            tools=[divide],
            limits={"turns": 2},
        )
        suite = Suite(
            Benchmark("a", tasks=[Task("div", input="100 / 4?")]), [Condition("a", agent)]
        )
        cell = run_suite(suite, store=False).cells[0]
    assert cell.transcript is not None and cell.error_category == "turn_limit"
    events = [dict(e) for e in cell.transcript.to_dict()["events"]]
    root = Span("a" * 32, "1" * 16, "agent.run", duration_ms=40.0)
    tool = Span(
        "a" * 32,
        "2" * 16,
        "execute_tool divide",
        parent_id="1" * 16,
        start_ms=10.0,
        duration_ms=5.0,
        status="error",
        status_message="division by zero",
        attributes={"gen_ai.operation.name": "execute_tool"},
    )
    events += [
        {"t": 0.1, "kind": "span", "title": s.name, "data": s.to_dict(), "duration": 0.0}
        for s in (root, tool)
    ]
    return {"events": events, "truncated": False, "bytes": 2000}


def test_an_agent_cell_reads_as_a_conversation_with_its_span_tree(
    page: Page, site: dict[str, Any]
) -> None:
    story = _agent_transcript()

    def cell(route: Any) -> None:
        real = route.fetch()
        body = real.json()
        body.update(attempt=0, stored_attempts=1, transcript=story)
        route.fulfill(response=real, json=body)

    run = site["demo"][0]
    page.page.route(CELL, cell)
    page.page.set_viewport_size({"width": 1280, "height": 2200})
    p = page.open(f"#/run/{run}/cells?cell=div|mental-math|0")
    p.wait_for_selector("#conversation ol.conversation")
    turns = p.locator("#conversation li.turn")
    assert turns.count() == 2
    assert "Dividing." in turns.nth(0).inner_text() and "→ divide" in turns.nth(0).inner_text()
    assert "← divide" in turns.nth(0).inner_text() and "25" in turns.nth(0).inner_text()
    failed = p.locator("#conversation li.turn.failed")
    assert failed.count() == 1 and failed.get_attribute("id") == "turn-2"
    assert "Ended: turn_limit" in failed.inner_text()
    assert "ZeroDivisionError" in failed.inner_text()  # the error told to the model
    assert "ended in turn 2" in p.locator("#conversation h3").inner_text()
    tree = p.locator("#spans ol.span-tree li.span")
    assert tree.count() == 2 and "division by zero" in tree.nth(1).inner_text()
    assert "failed" in (tree.nth(1).get_attribute("class") or "")
    name_pad = p.locator("#spans li.span .span-name").nth(1).get_attribute("style")
    assert name_pad and "padding-left:1.1rem" in name_pad  # the tool span sits under its parent
    assert not re.search(
        r"\b(undefined|NaN)\b|\[object ", p.locator("#conversation, #spans").all_inner_texts()[0]
    )
    # (the raw timeline below shows the model's reply as JSON, where a text is `null`)
    page.assert_accessible()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    p.locator("#conversation").screenshot(path=str(ARTIFACTS / "cell-conversation.png"))
    p.locator("#spans").screenshot(path=str(ARTIFACTS / "cell-spans.png"))


def test_a_weak_judge_is_said_on_the_run_page(browser: Any, tmp_path: Path) -> None:
    """The one weak-judge line the CLI summary and the reports print (#39) heads the run
    page too, for a run whose judge passes everything while exact fails half."""
    import benchkit
    from benchkit import Benchmark, Condition, EvaluatorSpec, MockProvider, RunOptions, Suite
    from benchkit import Task as BTask

    with FakeOpenAI() as llm:
        llm.respond = lambda body: '{"score": 8, "reason": "always"}'
        judge = EvaluatorSpec(
            "llm_rubric",
            {"prompt": "Answer: {output}. Rate 0-10.", "base_url": llm.url, "model": "j"},
        )
        tasks = [BTask(f"t{i}", input=str(i), expected="yes") for i in range(10)]
        suite = Suite(
            Benchmark("weak", tasks=tasks, evaluators=[EvaluatorSpec("exact"), judge]),
            (
                Condition(
                    "m", MockProvider(lambda r: "yes" if int(str(r.task.input)) % 2 else "no")
                ),
            ),
            RunOptions(concurrency=2),
        )
        store = tmp_path / "s.db"
        result = benchkit.run(suite, store=store)
    (line,) = result.warnings
    assert "its scores are not evidence" in line
    with serve(tmp_path, store) as (_, url):
        page = Page(browser, url)
        p = page.open(f"#/run/{result.run_id}")
        shown = p.locator("#warnings").inner_text()
        assert line in shown and shown.startswith("Warning: ")
        page.shot("run-weak-judge")
        page.close()
