"""Unit tests of the server's helpers: paths inside the root, scrubbed messages, loopback."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchkit.serve_toolkit import is_loopback
from benchkit.serve_toolkit._http import PathError, Scrubber, resolve_inside, validate_body


def test_resolve_inside_keeps_paths_in_the_root(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / "a").mkdir()
    assert resolve_inside(root, "a/b.yaml") == root / "a" / "b.yaml"
    assert resolve_inside(root, "a/../c.yaml") == root / "c.yaml"
    assert resolve_inside(root, str(root / "a")) == root / "a"
    assert resolve_inside(root, " a ") == root / "a"
    (root / "out").symlink_to("/etc", target_is_directory=True)
    for raw, reason in (
        ("", "empty"),
        ("  ", "empty"),
        (3, "empty"),
        ("../x", "outside"),
        ("/etc/passwd", "outside"),
        ("out/passwd", "outside"),
        ("https://example.com/x", "url"),
        ("HTTP://example.com/x", "url"),
        ("s3://bucket/x", "url"),
        ("file:/etc/passwd", "url"),
        ("a\x00b", "nul"),
    ):
        with pytest.raises(PathError) as info:
            resolve_inside(root, raw)
        assert info.value.reason == reason, raw


@given(st.lists(st.sampled_from(["..", ".", "a", "b", "/", "c.yaml"]), max_size=8))
def test_whatever_resolves_stays_inside(parts: list[str]) -> None:
    root = Path("/srv/root")
    try:
        path = resolve_inside(root, "/".join(parts))
    except PathError:
        return
    assert path == root or root in path.parents


def test_scrubber_hides_the_store_and_outside_paths() -> None:
    scrub = Scrubber(Path("/srv/root"), Path("/var/lib/store.db"))
    text = "cannot open /var/lib/store.db; see /srv/root/a.yaml and /etc/shadow"
    assert scrub(text) == "cannot open <store>; see /srv/root/a.yaml and <outside root>"


def test_loopback_addresses() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "example.com"))


def test_body_problems_name_the_field() -> None:
    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}}},
    }
    assert validate_body({}, schema) == [("a", "a is required")]
    assert validate_body({"a": {"b": "x"}}, schema) == [("a.b", "a.b: must be of type integer")]


def test_docs_server_md_documents_every_route(tmp_path: Path) -> None:
    import re

    from benchkit.serve import create_app

    text = (Path(__file__).resolve().parents[1] / "docs" / "server.md").read_text()
    app = create_app(store=tmp_path / "s.db", root=tmp_path)
    missing = []
    for route in app.routes:
        for method in sorted(getattr(route, "methods", None) or ()):
            if method == "HEAD":
                continue
            path = route.path  # type: ignore[attr-defined]
            # Documented either in full or, in a table of a route group, by its tail.
            tail = re.sub(r"^/(api/v1/benchmarks|memorybench)", "", path)
            shapes = {path, path.replace("{run_id}", "{runId}"), tail}
            if tail != path:
                shapes.add(tail.replace("{run_id}", "{id}"))
            if not any(f"`{method} {shape}" in text for shape in shapes):
                missing.append(f"{method} {path}")
    assert missing == []
