"""The tools' explorer views: ``GET /api/tools``, each tool's ES module served from its own
package, and a sixth tool installed as its own distribution (tests/toy_tool) whose view the
explorer shows in a real Chromium beside the built-in tools' views."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchkit.errors import RegistryError
from benchkit.serve import create_app
from benchkit.serve._app import create_explorer_app
from benchkit.tools import Tool

from ._serve import running, serve
from ._toy import TOY_BENCHMARK, toy_env

# `browser` (one headless Chromium for the module) is the explorer's browser tests' fixture
from .test_explorer_browser import Page, _cli, _run_id, browser  # noqa: F401

VIEWS = {"codeforge", "memorybench", "skillvault"}


@pytest.mark.parametrize("view", ["static/view.js", "view.js", "ui/v1.2/tool-view.js"])
def test_a_view_is_a_js_file_inside_the_package(view: str) -> None:
    assert Tool(name="t", title="T", package="t", explorer_view=view).explorer_view == view


@pytest.mark.parametrize(
    "view", ["../view.js", "static/../../x.js", "/etc/view.js", "static/view.css", "a//b.js", ""]
)
def test_a_view_outside_the_package_is_refused_when_the_tool_is_defined(view: str) -> None:
    with pytest.raises(RegistryError, match="explorer_view"):
        Tool(name="t", title="T", package="t", explorer_view=view)


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("views")
    with running(create_app(store=root / "s.db", root=root)) as url:
        yield url


def test_api_tools_lists_the_built_in_tools_and_their_views(app_url: str) -> None:
    tools = {t["name"]: t for t in httpx.get(f"{app_url}/api/tools").json()["tools"]}
    assert {"codeforge", "eval-skills", "memorybench", "native", "skillvault"} <= set(tools)
    assert tools["codeforge"] == {
        "name": "codeforge",
        "title": "CodeForge",
        "description": tools["codeforge"]["description"],
        "formats": ["codeforge"],
        "view": "/static/tools/codeforge/view.js",
    }
    assert {n for n, t in tools.items() if t["view"]} >= VIEWS
    assert tools["native"]["view"] is None and tools["eval-skills"]["view"] is None


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_a_view_is_the_file_of_its_package(app_url: str, name: str) -> None:
    answer = httpx.get(f"{app_url}/static/tools/{name}/view.js")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/javascript; charset=utf-8"
    shipped = resources.files(f"benchkit.formats.{name}").joinpath("static", "view.js")
    assert answer.content == shipped.read_bytes()
    assert b"export " in answer.content and b"runView(" in answer.content


@pytest.mark.parametrize(
    "path",
    [
        "/static/tools/native/view.js",  # a tool without a view
        "/static/tools/nope/view.js",  # no such tool
        "/static/tools/..%2F..%2Fserve/view.js",
        "/static/tools/codeforge/../../app.js/view.js",
        "/static/tools/codeforge/_tool.py",
        "/static/tools/codeforge/static/view.js",
    ],
)
def test_nothing_but_a_declared_view_is_served(app_url: str, path: str) -> None:
    answer = httpx.get(f"{app_url}{path}")
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/json"
    assert "export" not in answer.text and "import" not in answer.text


def test_views_are_public_on_a_server_with_a_token(tmp_path: Path) -> None:
    app = create_app(store=tmp_path / "s.db", root=tmp_path, token="s3cret")
    with running(app) as url:
        assert httpx.get(f"{url}/static/tools/skillvault/view.js").status_code == 200
        assert httpx.get(f"{url}/api/tools").status_code == 401  # data: the token's
        bearer = {"Authorization": "Bearer s3cret"}
        assert httpx.get(f"{url}/api/tools", headers=bearer).status_code == 200


def test_memory_explore_serves_the_tools_beside_its_own_api(tmp_path: Path) -> None:
    app = create_explorer_app(
        run_id="run_x", store=tmp_path / "s.db", root=tmp_path, tool="memorybench"
    )
    with running(app) as url:
        tools = httpx.get(f"{url}/benchkit/api/tools").json()["tools"]
        (memory,) = [t for t in tools if t["name"] == "memorybench"]
        # the view sits beside the page at the root, whatever the API's base
        assert httpx.get(url + memory["view"]).status_code == 200


# -- the toy sixth tool, in a browser ------------------------------------------------------


@pytest.fixture(scope="module")
def toy_server(
    toy_site: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """A store holding a toy run and a native one, served with the toy tool installed."""
    root = tmp_path_factory.mktemp("toy-root")
    (root / "sums.json").write_text(TOY_BENCHMARK, encoding="utf-8")
    demo = Path(__file__).resolve().parent.parent / "benchmarks" / "demo" / "benchmark.yaml"
    env = toy_env(toy_site)
    store = root / "store.db"
    toy = _run_id(_cli("run", "sums.json", "--store", str(store), cwd=root, env=env))
    native = _run_id(_cli("run", str(demo), "--store", str(store), cwd=root, env=env))
    with serve(root, store, env=env) as (_, url):
        yield {"url": url, "toy": toy, "native": native}


@pytest.mark.slow
def test_the_toy_tools_view_shows_on_its_runs_page(
    request: pytest.FixtureRequest, toy_server: dict[str, Any]
) -> None:
    tools = httpx.get(toy_server["url"] + "/api/tools").json()["tools"]
    (toy,) = [t for t in tools if t["name"] == "toy"]
    assert toy["view"] == "/static/tools/toy/view.js" and toy["formats"] == ["toy", "toy-lines"]
    page = Page(request.getfixturevalue("browser"), toy_server["url"])
    try:
        p = page.open(f"#/run/{toy_server['toy']}")
        p.wait_for_selector("#format-view[data-tool='toy']")
        view = p.locator("#format-view").inner_text()
        assert "Toy arithmetic" in view
        assert p.locator("#toy-sums li").all_inner_texts() == ["calculator: 3 of 4 sums right"]
        page.shot("run-toy")
        # a run of a tool without a view: the generic section, never the toy's
        p.goto(f"{page.base}/#/run/{toy_server['native']}")
        p.wait_for_function(  # the hash changed: wait for the native run's page itself
            "(id) => document.body.innerText.includes(id) && document.querySelector("
            "'#conditions') && !document.querySelector(\"#format-view[data-tool='toy']\")",
            arg=toy_server["native"],
        )
        assert p.locator("#format-view[data-tool]").count() == 0
        # the runs list filters on the installed tools' formats, the toy's among them
        p.goto(f"{page.base}/#/runs")
        p.wait_for_selector("tr[data-run]")
        offered = p.locator("select[name=format] option").evaluate_all(
            "(o) => o.map((x) => x.value)"
        )
        assert {"", "toy", "native", "codeforge", "skillvault"} <= set(offered)
        p.select_option("select[name=format]", "toy")
        p.wait_for_function("document.querySelectorAll('tr[data-run]').length === 1")
        assert toy_server["toy"] in p.locator("tr[data-run]").inner_text()
        # its start tab sits beside the built-in tools' ones
        p.goto(f"{page.base}/#/start?tab=toy")
        p.wait_for_selector("#toy-start")
        tabs = p.locator("nav.tabs a").all_inner_texts()
        assert tabs[0] == "Any benchmark"
        assert {"Toy sums", "Skill Benchmarks", "Benchmarks (CodeForge)"} <= set(tabs)
        assert p.locator("#tab-toy").get_attribute("aria-current") == "page"
        page.shot("start-toy")
    finally:
        page.close()


@pytest.mark.slow
def test_a_view_that_fails_is_said_and_the_page_still_works(
    request: pytest.FixtureRequest, toy_server: dict[str, Any]
) -> None:
    page = Page(request.getfixturevalue("browser"), toy_server["url"])
    # the browser gets a broken module instead of the toy's view
    page.page.route(
        "**/static/tools/toy/view.js",
        lambda route: route.fulfill(
            status=200, content_type="text/javascript", body="export function runView( {"
        ),
    )
    try:
        p = page.open(f"#/run/{toy_server['toy']}")
        p.wait_for_selector("#format-view[data-tool='toy'] .problem")
        assert "Toy arithmetic's view failed" in p.locator("#format-view").inner_text()
        assert p.locator("#conditions table").count() == 1  # the rest of the page is there
        page.errors.clear()  # the browser logs the module's syntax error: expected here
    finally:
        page.close()


def test_the_docs_show_the_toy_view_as_it_is() -> None:
    """docs/explorer.md's example is the toy tool's view, word for word."""
    from ._support import REPO

    doc = (REPO / "docs" / "explorer.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"^```js\n(.*?)^```", doc, re.DOTALL | re.MULTILINE)
    view = REPO / "tests" / "toy_tool" / "benchkit_toy" / "static" / "view.js"
    assert example in view.read_text(encoding="utf-8")


def test_the_page_names_no_tool() -> None:
    """app.js learns the tools from GET /api/tools: no tool's name or format is in it."""
    from ._support import REPO

    page = (REPO / "src" / "benchkit" / "serve" / "static" / "app.js").read_text(encoding="utf-8")
    found = re.findall(r"eval[_-]skills|skillvault|memorybench|codeforge|native|toy", page, re.I)
    assert found == []
