"""The YAML reader: limits on hostile documents, and the C and pure parsers agreeing."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchkit.errors import FormatError
from benchkit.formats import _source, load
from benchkit.formats._source import MAX_ALIAS_VALUES, MAX_DEPTH, parse_document


def laughs(levels: int, width: int = 10) -> str:
    """A "billion laughs" document: each level repeats the previous one ``width`` times."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_nested_aliases_are_refused_at_the_alias_that_passes_the_limit(tmp_path: Path) -> None:
    text = laughs(9)  # 10**9 values once expanded; a few hundred bytes
    assert len(text) < 600
    with pytest.raises(FormatError) as info:
        parse_document(text, path="bomb.yaml", kind="yaml")
    err = info.value
    assert f"aliases expand to more than {MAX_ALIAS_VALUES:,} values" in err.message
    # lines 1-5 expand to 123,440 values, each alias on line 6 adds 111,111: the 8th passes
    assert (err.line, err.column) == (6, 45)
    assert err.json_path == "$.a5[7]"
    assert err.fix is not None


@pytest.mark.parametrize("name", ["bench.yaml", "skillvault.bench.yaml", "dataset.yml"])
def test_every_yaml_format_refuses_the_bomb_before_choosing_a_format(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    path.write_text(laughs(9))
    with pytest.raises(FormatError, match="aliases expand"):
        load(path)


def test_aliases_within_the_limit_are_copies() -> None:
    doc = parse_document("a: &x {b: [1, 2]}\nc: *x\nd: *x\n", path="t.yaml", kind="yaml")
    assert doc.data == {"a": {"b": [1, 2]}, "c": {"b": [1, 2]}, "d": {"b": [1, 2]}}
    doc.data["c"]["b"].append(3)
    assert doc.data["d"] == {"b": [1, 2]}  # no shared objects
    assert doc.locate(("d",)) == (3, 4)  # the alias itself


def test_deep_nesting_is_refused_at_the_level_past_the_limit() -> None:
    text = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    with pytest.raises(FormatError, match=f"nests deeper than {MAX_DEPTH} levels") as info:
        parse_document(text, path="deep.yaml", kind="yaml")
    assert (info.value.line, info.value.column) == (1, MAX_DEPTH + 1)
    parse_document("[" * MAX_DEPTH + "]" * MAX_DEPTH, path="ok.yaml", kind="yaml")


def test_very_deep_nesting_never_crashes_the_parser() -> None:
    depth = 300_000  # deep enough to overflow the C stack of a recursive composer
    with pytest.raises(FormatError, match="nests deeper"):
        parse_document("[" * depth + "]" * depth, path="deep.yaml", kind="yaml")


def test_nesting_through_an_alias_counts_too() -> None:
    inner = "[" * 60 + "]" * 60
    text = f"a: &x {inner}\nb: " + "[" * 50 + "*x" + "]" * 50 + "\n"
    with pytest.raises(FormatError, match="through this alias"):
        parse_document(text, path="t.yaml", kind="yaml")


@pytest.mark.parametrize(
    ("text", "message", "where"),
    [
        ("a: 1\n---\nb: 2\n", "expected a single document", (2, 1)),
        ("a: *nope\n", "undefined alias 'nope'", (1, 4)),
        ("a: 1\nb: 2\na: 3\n", "duplicate key 'a'", (3, 1)),
        ("1: x\n", "mapping keys must be strings, got 1", (1, 1)),
        ("? [a]\n: x\n", "mapping keys must be strings, got a list", (1, 3)),
        ("a: !!binary aGk=\n", "unsupported YAML tag tag:yaml.org,2002:binary", None),
        ("a: !!int x\n", "'x' is not a valid int", None),
        ("a: !!set {b}\n", "unsupported YAML tag", None),
        ("a: =\n", "unsupported YAML tag tag:yaml.org,2002:value", (1, 4)),
        ("a: {<<: [1]}\n", "a '<<' merge takes a mapping", (1, 5)),
    ],
)
def test_what_benchmark_files_never_hold_is_refused(
    text: str, message: str, where: tuple[int, int] | None
) -> None:
    with pytest.raises(FormatError, match=message) as info:
        parse_document(text, path="t.yaml", kind="yaml")
    if where is not None:
        assert (info.value.line, info.value.column) == where


def test_scalars_follow_yaml_1_2_and_merges_keep_own_keys_first() -> None:
    text = (
        "base: &b {x: 1, y: 2}\n"
        "m: {<<: *b, y: 3}\n"
        "s: [yes, no, on, ~, null, true, 0o17, 0x1F, 1_000, .5, .inf, 2024-01-01, '1', !!str 2]\n"
        "t: !!float 1\n"
        "u: <<\n"
    )
    data = parse_document(text, path="t.yaml", kind="yaml").data
    assert data["m"] == {"y": 3, "x": 1} and list(data["m"]) == ["y", "x"]
    assert data["s"] == [
        "yes", "no", "on", None, None, True, 15, 31, 1000, 0.5, float("inf"),
        "2024-01-01", "1", "2",
    ]  # fmt: skip
    assert data["t"] == 1.0 and isinstance(data["t"], float)
    assert data["u"] == "<<"


# ----------------------------------------------------------------- C and pure parsers agree

# Benchmark-like data: libyaml and ruamel's pure parser disagree on some exotic flow
# syntax (`{?;: x}`) that ruamel's own dumper writes for odd keys, so keys stay plain.
_KEYS = st.from_regex(r"[a-z][a-z0-9_-]{0,5}", fullmatch=True)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text("abc xyz019.:-#'\"\\é中\n\t", max_size=12),
    st.sampled_from(["yes", "0o17", "1_000", "2024-01-01", "<<", "~", "- x", "a: b", "#c"]),
)
_DATA = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=20,
)


def _dump(data: Any, flow: bool) -> str:
    """Block YAML from ruamel's dumper, or JSON (flow YAML; ruamel's flow dumper writes
    some strings, such as ':0' in a list, that its own parser cannot read back)."""
    from ruamel.yaml import YAML

    if flow:
        return json.dumps(data, ensure_ascii=False, indent=1)

    yaml = YAML(typ="rt", pure=True)
    yaml.default_flow_style = flow
    yaml.allow_unicode = True
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _paths(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _at(data: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        data = data[step]
    return data


@settings(max_examples=150, deadline=None)
@given(data=_DATA, flow=st.booleans())
def test_the_c_and_pure_parsers_give_the_same_data_and_positions(data: Any, flow: bool) -> None:
    if _source._yaml_tools()[0] is None:
        pytest.skip("ruamel's libyaml extension is not installed")
    text = _dump(data, flow)
    fast = _source._YamlBuilder(Path("t.yaml"), 1).build(_source._c_events(text))
    pure = _source._YamlBuilder(Path("t.yaml"), 1).build(_source._pure_events(text))
    assert fast == pure == data
    c_locator = _source._YamlLocator(text, 1, _source._c_events)
    pure_locator = _source._YamlLocator(text, 1, _source._pure_events)
    for path in _paths(data):
        if _at(data, path) is None:  # an empty value: libyaml points after the key, ruamel
            continue  # at the next line; both name the right entry
        assert c_locator.locate(path, False) == pure_locator.locate(path, False), path
        assert c_locator.locate(path, True) == pure_locator.locate(path, True), path


@pytest.mark.parametrize(
    ("text", "kind", "path"),
    [
        ('{"a": [1, "x\\ud800y"]}', "json", "$.a[1]"),
        ('{"\\udc00": 1}', "json", '$["\\udc00"]'),
        ('a: "\\ud800"', "yaml", "$.a"),
    ],
)
def test_a_lone_surrogate_escape_is_refused_and_the_error_prints(
    text: str, kind: str, path: str
) -> None:
    with pytest.raises(FormatError, match="lone UTF-16 surrogate") as info:
        parse_document(text, path="t", kind=kind)  # type: ignore[arg-type]
    assert str(info.value).encode("utf-8")  # printable, whatever the input held
    assert path in str(info.value)


def test_a_surrogate_pair_escape_in_json_is_one_character() -> None:
    assert parse_document('{"a": "\\ud83d\\ude00"}', path="t", kind="json").data == {"a": "😀"}


def test_the_pure_parser_is_fresh_for_each_document() -> None:
    # Found by the fuzz test: a parser left half way (a document refused mid-stream)
    # gave the next document wrong events, or crashed with IndexError.
    events = _source._pure_events("a: 1\nb: {c: [1, 2]}\nd: 3\n")
    for _ in range(5):
        next(events)
    built = _source._YamlBuilder(Path("t.yaml"), 1).build(_source._pure_events("x: 1\ny: [2]\n"))
    assert built == {"x": 1, "y": [2]}
