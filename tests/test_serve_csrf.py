"""Cross-site requests (issue #31, item 5), the loopback CORS default (issue #27) and trust
by origin, exactly (#42): every state-changing route refuses what a page of another site
can send; a page served from another loopback port may read through the API but changes
nothing unless its origin is allowed (``--allow-origin``) — against a real server, and in
real Chromium from pages of other origins."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchkit.serve import create_app

from ._serve import running, wait_for, write_benchmark
from .test_explorer_browser import ARGS, CHROMIUM, _unavailable

JSON = {"Content-Type": "application/json"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    write_benchmark(base / "slow", tasks=40, sleep=0.1)
    return base


@pytest.fixture
def site(root: Path, tmp_path: Path) -> Iterator[str]:
    with running(create_app(store=tmp_path / "store.db", root=root)) as url:
        yield url


def _start(client: httpx.Client) -> str:
    started = client.post(
        "/api/runs", json={"benchmark": "slow/benchmark.yaml", "options": {"concurrency": 1}}
    )
    assert started.status_code == 202, started.text
    run_id: str = started.json()["run_id"]
    wait_for(client, f"/api/runs/{run_id}", lambda b: b["run"]["status"] == "running")
    return run_id


def _still_running(client: httpx.Client, run_id: str) -> None:
    job = client.get(f"/api/runs/{run_id}").json()["run"]["job"]
    assert (job["status"], job["cancel_requested"]) == ("running", False), job


def test_a_cancel_a_form_could_send_is_refused(site: str) -> None:
    with httpx.Client(base_url=site, timeout=60) as client:
        run_id = _start(client)
        cancel = f"/api/runs/{run_id}/cancel"
        for headers, body, status in (
            ({}, None, 415),  # no body, no content type: what a bare form or no-cors fetch sends
            ({"Content-Type": "text/plain"}, b"{}", 415),
            ({"Content-Type": "application/x-www-form-urlencoded"}, b"a=1", 415),
            ({**JSON, "Origin": "http://evil.example"}, b"{}", 403),
            ({**JSON, "Origin": "null"}, b"{}", 403),
            ({**JSON, "Sec-Fetch-Site": "cross-site"}, b"{}", 403),
        ):
            refused = client.post(cancel, content=body, headers=headers)
            assert refused.status_code == status, (headers, refused.text)
            assert refused.json()["code"] in ("UNSUPPORTED_MEDIA_TYPE", "CROSS_SITE")
            _still_running(client, run_id)
        resume = client.post(f"/api/runs/{run_id}/resume")
        assert resume.status_code == 415
        assert (
            client.delete(
                f"/api/runs/{run_id}", headers={"Origin": "http://evil.example"}
            ).status_code
            == 403
        )
        # Another loopback port is another origin (#42): refused, saying how to allow it.
        port = int(site.rsplit(":", 1)[1])
        for other in ("http://localhost:5173", "http://[::1]:3000", f"http://127.0.0.1:{port + 1}"):
            refused = client.post(cancel, json={}, headers={"Origin": other})
            assert refused.status_code == 403, (other, refused.text)
            assert f"--allow-origin {other}" in refused.json()["error"]
            _still_running(client, run_id)
        # The same request with JSON from this origin works (a default port is its own too).
        same = client.post(cancel, json={}, headers={"Origin": site + "/"})
        assert same.status_code == 202, same.text
        wait_for(client, f"/api/runs/{run_id}", lambda b: b["run"]["status"] == "interrupted")
        again = client.post(f"/api/runs/{run_id}/resume", json={}, headers={"Origin": site})
        assert again.status_code == 202, again.text
        client.post(cancel, json={}, headers={"Origin": site})
        wait_for(client, f"/api/runs/{run_id}", lambda b: b["run"]["status"] == "interrupted")


def test_every_state_changing_route_is_guarded(site: str) -> None:
    evil = {**JSON, "Origin": "http://evil.example"}
    with httpx.Client(base_url=site, timeout=60) as client:
        for method, path in (
            ("POST", "/api/runs"),
            ("POST", "/api/runs/r/cancel"),
            ("POST", "/api/runs/r/resume"),
            ("DELETE", "/api/runs/r"),
            ("POST", "/bench/runs"),
            ("POST", "/api/v1/benchmarks/runs"),
            ("DELETE", "/api/v1/benchmarks/runs/r"),
            ("POST", "/api/v1/benchmarks/compare"),
            ("PUT", "/api/runs"),
            ("PATCH", "/api/runs/r"),
        ):
            refused = client.request(method, path, content=b"{}", headers=evil)
            assert refused.status_code == 403, (method, path)
            assert "evil.example" in refused.json()["error"]
            if method == "POST":
                plain = client.request(method, path, content=b"{}", headers={"Origin": site})
                assert plain.status_code == 415, (method, path)
        # CodeForge's routes answer in CodeForge's shape.
        cf = client.post("/api/v1/benchmarks/runs", content=b"{}")
        assert cf.json() == {
            "error": "the request must be sent with Content-Type: application/json "
            "(send {} when there is nothing to say)"
        }
        # A DELETE without a body needs no content type (no browser sends one cross-site).
        assert client.delete("/api/runs/nope").status_code == 404


def test_loopback_origins_get_cors_and_others_do_not(root: Path, tmp_path: Path) -> None:
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    with running(create_app(store=tmp_path / "a.db", root=root)) as url:
        for origin in ("http://localhost:5173", "http://127.0.0.1:3000", "http://[::1]:8080"):
            allowed = httpx.options(f"{url}/bench/runs", headers={**preflight, "Origin": origin})
            assert allowed.status_code == 200
            assert allowed.headers["access-control-allow-origin"] == origin
            listed = httpx.get(f"{url}/bench/runs", headers={"Origin": origin})
            assert listed.headers["access-control-allow-origin"] == origin
        for origin in ("http://evil.example", "https://localhost:5173", "http://localhost.evil:80"):
            refused = httpx.options(f"{url}/bench/runs", headers={**preflight, "Origin": origin})
            assert "access-control-allow-origin" not in refused.headers
        # The Host check stays: a rebound name is refused, loopback origin or not.
        rebound = httpx.get(
            f"{url}/api/runs", headers={"Host": "evil.example", "Origin": "http://localhost:1"}
        )
        assert rebound.status_code == 421
    off = create_app(store=tmp_path / "b.db", root=root, loopback_origins=False)
    with running(off) as url:
        origin = "http://localhost:5173"
        listed = httpx.get(f"{url}/bench/runs", headers={"Origin": origin})
        assert "access-control-allow-origin" not in listed.headers
        posted = httpx.post(f"{url}/api/runs", json={}, headers={"Origin": origin})
        assert posted.status_code == 403


# -- real Chromium --------------------------------------------------------------------------

ATTACK = """<!doctype html><title>another site</title>
<iframe name="sink"></iframe>
<form id="f" method="POST" target="sink" action="{cancel}"><input name="a" value="1"></form>
<form id="t" method="POST" target="sink" enctype="text/plain" action="{cancel}">
<input name='{{"x":"' value='"}}'></form>
<script>
window.attempts = (async () => {{
  const out = [];
  document.getElementById("f").submit();
  document.getElementById("t").submit();
  for (const opts of [
    {{ method: "POST", mode: "no-cors" }},
    {{ method: "POST", mode: "no-cors", body: "{{}}", headers: {{ "Content-Type": "text/plain" }} }},
    {{ method: "POST", body: "{{}}", headers: {{ "Content-Type": "application/json" }} }},
    {{ method: "POST", mode: "no-cors", body: "{{}}", headers: {{ "Content-Type": "text/plain" }}, url: "{resume}" }},
  ]) {{
    try {{ const r = await fetch(opts.url || "{cancel}", opts); out.push(r.type + ":" + r.status); }}
    catch (e) {{ out.push("refused"); }}
  }}
  return out;
}})();
</script>"""

#: A page of a local tool on another loopback port: it tries to start a run, delete one and
#: cancel one, and reads what the server answers (CORS lets it read).
LOCAL_PAGE = """<!doctype html><title>a local page</title><script>
async function attempt(method, url, body) {{
  try {{
    const r = await fetch(url, {{ method, body, headers: {{ "Content-Type": "application/json" }} }});
    return [r.status, await r.text()];
  }} catch (e) {{ return ["refused", String(e)]; }}
}}
window.attempts = (async () => [
  await attempt("POST", "{site}/api/runs", JSON.stringify({{ benchmark: "slow/benchmark.yaml" }})),
  await attempt("DELETE", "{site}/api/runs/{finished}", undefined),
  await attempt("POST", "{site}/api/runs/{running}/cancel", "{{}}"),
])();
</script>"""


@pytest.fixture
def pages() -> Iterator[tuple[dict[str, str], int]]:
    """A second tiny web server on another port: ``pages[path]`` is the HTML it serves."""
    served: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = served.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Headless Chromium in which ``evil.test`` — another site — resolves to 127.0.0.1."""
    import os

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("no playwright: pip install -e '.[test]'")
    if not os.path.exists(CHROMIUM):
        _unavailable(f"no Chromium at {CHROMIUM}: apt-get install chromium")
    with sync_playwright() as driver:
        instance = driver.chromium.launch(
            executable_path=CHROMIUM,
            args=[*ARGS, "--host-resolver-rules=MAP evil.test 127.0.0.1"],
        )
        yield instance
        instance.close()


def test_a_page_of_another_site_cannot_stop_a_run_in_chromium(
    site: str, pages: tuple[dict[str, str], int], chromium: Any
) -> None:
    served, port = pages
    with httpx.Client(base_url=site, timeout=60) as client:
        run_id = _start(client)
        cancel = f"{site}/api/runs/{run_id}/cancel"
        served["/attack"] = ATTACK.format(cancel=cancel, resume=f"{site}/api/runs/{run_id}/resume")
        context = chromium.new_context()
        try:
            attacked = context.new_page()
            attacked.goto(f"http://evil.test:{port}/attack")
            outcome = attacked.evaluate("window.attempts")
            # The no-cors fetches were sent (opaque answers); the JSON one failed its preflight.
            assert outcome == ["opaque:0", "opaque:0", "refused", "opaque:0"], outcome
            attacked.wait_for_timeout(500)  # let the two form posts land too
            _still_running(client, run_id)
        finally:
            context.close()
        client.post(f"/api/runs/{run_id}/cancel", json={}, headers={"Origin": site})


def _finished_run(root: Path, store: Path) -> str:
    """A finished run of a quick benchmark, stored in ``store``."""
    import benchkit
    import benchkit.formats

    write_benchmark(root / "quick", tasks=2, ident="quick")
    return benchkit.run(benchkit.formats.load(root / "quick"), store=store).run_id


def test_a_page_on_another_loopback_port_changes_nothing_unless_allowed_in_chromium(
    root: Path, tmp_path: Path, pages: tuple[dict[str, str], int], chromium: Any
) -> None:
    """#42: a tokenless loopback server trusts its own origin — scheme, host and port — not
    every loopback port. A page another local server serves (a dev server, a notebook's
    output) tries to start, delete and cancel runs: 403 each time, with a message saying
    how to allow it; the explorer on the server's own origin keeps working; and a server
    started with that origin allowed takes the same requests."""
    served, port = pages
    local = f"http://127.0.0.1:{port}"
    for allowed in ((), (local,)):
        store = tmp_path / f"s{len(allowed)}.db"
        finished = _finished_run(root, store)
        app = create_app(store=store, root=root, allow_origins=allowed)
        with running(app) as url, httpx.Client(base_url=url, timeout=60) as client:
            running_id = _start(client)
            served["/local"] = LOCAL_PAGE.format(site=url, finished=finished, running=running_id)
            context = chromium.new_context()
            try:
                page = context.new_page()
                page.goto(f"{local}/local")
                (start, started), (delete, deleted), (stop, stopped) = page.evaluate(
                    "window.attempts"
                )
                if not allowed:
                    assert (start, delete, stop) == (403, 403, 403), (started, deleted, stopped)
                    assert f"--allow-origin {local}" in json.loads(started)["error"]
                    _still_running(client, running_id)
                    assert client.get(f"/api/runs/{finished}").status_code == 200
                    # The explorer, on the server's own origin, starts and stops runs.
                    own = context.new_page()
                    own.goto(f"{url}/")
                    status = own.evaluate(
                        """async (id) => (await fetch(`/api/runs/${id}/cancel`, {
                             method: "POST", body: "{}",
                             headers: {"Content-Type": "application/json"}})).status""",
                        running_id,
                    )
                    assert status == 202
                else:
                    assert (start, delete, stop) == (202, 200, 202), (started, deleted, stopped)
                    assert client.get(f"/api/runs/{finished}").status_code == 404
                    client.post(
                        f"/api/runs/{json.loads(started)['run_id']}/cancel",
                        json={},
                        headers={"Origin": url},
                    )
            finally:
                context.close()
            done = wait_for(
                client, f"/api/runs/{running_id}", lambda b: b["run"]["status"] != "running"
            )
            assert done["run"]["status"] == "interrupted"
