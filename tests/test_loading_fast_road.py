"""The fast roads of loading agree with the slow ones: same verdict, same error, same model.

Loading a native benchmark takes a fast road (``native._fast``: the header through
jsonschema, each task checked and built by a compiled function; JSON parsed without a
Python hook, ``_json_source._scan`` proving there is no repeated key and no deep nesting)
and falls back to the full schema / the checked parse whenever it cannot vouch for the
document. Here hypothesis generates near-valid documents and JSON texts, and each is
loaded both ways: the decisions, the error messages and the built tasks must be the same.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchkit.errors import FormatError
from benchkit.formats import _json_source
from benchkit.formats._document import Document
from benchkit.formats._json_source import JsonLocator
from benchkit.formats.native import _fast, _loader
from benchkit.model import Task
from benchkit.registry import default_registries

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)

# Values a field of a task may hold: what the schema accepts, and what it refuses by a
# little (a bool for a number, NaN, a bound crossed, an empty string, a wrong item type).
HOSTILE: st.SearchStrategy[Any] = st.sampled_from(
    [
        *(None, True, False, 0, -1, 0.0, 1e-9, 86400, 86401, 1e6, 1e6 + 1, math.nan, math.inf),
        *("", "x", "<<", [], ["a"], ["a", 1], [None], {}, {"k": "v"}, 10**30, 2.5),
        *([""], [{"name": "x"}], [{"type": ""}], [{"x": 1}], [{"action": "jump"}], [{}]),
    ]
)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
SPEC = st.sampled_from(["exact", {"type": "contains"}, {"type": "exact", "name": "e"}])
FIELDS: dict[str, Any] = {
    "id": st.text(st.characters(codec="ascii"), min_size=1, max_size=3),
    "input": JSONISH,
    "expected": JSONISH,
    "timeout": st.floats(1e-6, 86400) | st.integers(1, 86400),
    "weight": st.floats(0, 1e6) | st.integers(0, 1_000_000),
    "tags": st.lists(TEXT, max_size=3),
    "domain": TEXT,
    "difficulty": TEXT,
    "description": TEXT,
    "context": st.lists(TEXT, max_size=2),
    "relevant_ids": st.lists(TEXT, max_size=2),
    "metadata": st.dictionaries(TEXT, JSONISH, max_size=2),
    "evaluators": st.lists(SPEC, max_size=2),
    "verifiers": st.lists(st.sampled_from(["file_exists", {"type": "file_exists"}]), max_size=2),
    "expected_tool_calls": st.lists(
        st.sampled_from([{"name": "f"}, {"name": "f", "arguments": {"a": 1}}]),
        max_size=2,
    ),
    "setup": st.lists(
        st.sampled_from([{"action": "add", "content": "c"}, {"action": "wait", "delay_ms": 5}]),
        max_size=2,
    ),
    "unknown_key": HOSTILE,
}


def _rarely(n: int) -> st.SearchStrategy[bool]:
    """True about once in ``n + 1`` draws (a middle value: hypothesis favours the ends)."""
    return st.integers(0, n).map(lambda drawn: drawn == n // 2)


@st.composite
def tasks(draw: st.DrawFn, index: int) -> Any:
    """A task that is valid most of the time, broken a little some of the time."""
    if draw(_rarely(60)):
        return draw(HOSTILE)  # not even a mapping
    task: dict[str, Any] = {"id": f"t{index}"}
    if draw(_rarely(40)):
        del task["id"]
    for name in draw(st.lists(st.sampled_from(sorted(FIELDS)), max_size=5, unique=True)):
        if name == "unknown_key" and not draw(_rarely(4)):
            continue
        hostile = draw(_rarely(12))  # one field in a dozen is off
        task[name] = draw(HOSTILE if hostile else FIELDS[name])
    if draw(_rarely(40)) and "id" in task:
        task["id"] = "t0"  # a repeated id
    return task


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    data: dict[str, Any] = {"benchkit": 1, "id": "b", "evaluators": ["exact"]}
    count = 0 if draw(_rarely(30)) else draw(st.integers(1, 6))
    data["tasks"] = [draw(tasks(i)) for i in range(count)]
    header = draw(st.integers(0, 40)) - 18  # 0-4 (a broken header) in the middle
    if header == 0:
        data["timeout"] = draw(HOSTILE)
    elif header == 1:
        data["run"] = {"concurrency": draw(HOSTILE)}
    elif header == 2:
        data["conditions"] = [{"id": "c", "provider": draw(st.sampled_from(["mock", "", 1]))}]
    elif header == 3:
        del data["id"]
    elif header == 4:
        data["tasks_file"] = "t.jsonl"
    return data


def _document(data: Any) -> Document:
    text = json.dumps(data, allow_nan=True)
    return Document(Path("b.json"), data, "json", JsonLocator(text, 1))


def _outcome(tmp_path: Path, data: Any, *, fast: bool) -> tuple[str, str]:
    """('ok', the tasks' repr) or ('error', the error's text), loading one way."""
    loader: Any = _loader  # the test swaps the fast road out of the module's globals
    saved = loader.check_and_build
    if not fast:
        loader.check_and_build = lambda *args: None
    try:
        suite = _loader.load(
            tmp_path / "b.json", document=_document(data), registries=default_registries()
        )
    except FormatError as exc:
        return "error", str(exc)
    finally:
        loader.check_and_build = saved
    return "ok", repr(suite.benchmark.tasks) + repr(suite.options) + repr(suite.conditions)


@SETTINGS
@given(data=documents())
def test_the_fast_road_decides_and_explains_as_the_full_schema(
    tmp_path: Path, data: dict[str, Any]
) -> None:
    assert _outcome(tmp_path, data, fast=True) == _outcome(tmp_path, data, fast=False)


def _file_outcome(folder: Path, items: list[Any], suffix: str, *, fast: bool) -> tuple[str, str]:
    """Loading (and reading every task of) a benchmark whose tasks_file holds ``items``:
    one JSON list (``.json``) or one task a line (``.jsonl``), one way or the other."""
    tasks_file = folder / f"tasks{suffix}"
    if suffix == ".jsonl":
        tasks_file.write_text("".join(json.dumps(item) + "\n" for item in items))
    else:
        tasks_file.write_text(json.dumps(items), encoding="utf-8")
    (folder / "b.yaml").write_text(f"benchkit: 1\nid: b\ntasks_file: tasks{suffix}\n")
    loader: Any = _loader  # the test swaps the fast road out of the module's globals
    saved = loader.build_tasks
    if not fast:
        loader.build_tasks = lambda *args: None
    try:
        suite = _loader.load(folder / "b.yaml", registries=default_registries())
        return "ok", repr(list(suite.benchmark.iter_tasks()))
    except FormatError as exc:
        return "error", str(exc)
    finally:
        loader.build_tasks = saved


@SETTINGS
@given(
    items=st.integers(0, 4).flatmap(lambda n: st.tuples(*(tasks(i) for i in range(n)))),
    suffix=st.sampled_from([".json", ".jsonl"]),
)
def test_a_tasks_file_loads_the_same_both_ways(
    tmp_path: Path, items: tuple[Any, ...], suffix: str
) -> None:
    fast = _file_outcome(tmp_path, list(items), suffix, fast=True)
    assert fast == _file_outcome(tmp_path, list(items), suffix, fast=False)


@SETTINGS
@given(data=documents())
def test_the_fast_road_accepts_only_what_the_schema_accepts(data: dict[str, Any]) -> None:
    validators = _loader._validators()
    built = _fast.check_and_build(data, validators.header, validators.task, _loader._structure_task)
    errors = list(validators.document.iter_errors(data))
    if built is not None:
        assert errors == []
        tasks = data.get("tasks", [])
        assert len(built) == len(tasks)
        for task, item in zip(
            built, tasks, strict=True
        ):  # built as cattrs builds it, types included
            assert repr(task) == repr(_loader._structure_task(item))


def test_a_valid_document_takes_the_fast_road() -> None:
    validators = _loader._validators()
    data = {
        "benchkit": 1,
        "id": "b",
        "conditions": [{"id": "m", "provider": {"type": "mock"}}],
        "tasks": [
            {"id": "a", "input": {"q": "1+1"}, "expected": "2", "tags": ["x"], "timeout": 5},
            {"id": "b", "input": "x", "evaluators": ["exact", {"type": "contains"}]},
        ],
    }
    built = _fast.check_and_build(data, validators.header, validators.task, _loader._structure_task)
    assert built is not None and [t.id for t in built] == ["a", "b"]
    broken = {**data, "tasks": [{"id": "a", "timeout": 0}]}
    assert _fast.check_and_build(broken, validators.header, validators.task, Task) is None


def test_a_task_with_every_simple_field_is_built_as_cattrs_builds_it() -> None:
    item = {
        "id": "t",
        "input": {"q": [1, 2]},
        "expected": "x",
        "timeout": 10,
        "weight": 2,
        "tags": ["a", "b"],
        "domain": "d",
        "difficulty": "hard",
        "description": "",
        "context": ["c"],
        "relevant_ids": ["r"],
        "metadata": {"m": 1},
    }
    build = _fast._compile(frozenset(item))
    task = build(item)
    assert isinstance(task, Task)
    assert repr(task) == repr(_loader._structure_task(item))
    assert type(task.timeout) is float and type(task.weight) is float
    assert task.metadata == {"m": 1} and task.metadata is not item["metadata"]
    empty = build({**item, "metadata": {}})
    assert empty is not None and empty.metadata == {}
    assert build({**item, "timeout": True}) is None  # a bool is not a number
    assert build({**item, "tags": ["a", 1]}) is None


# --------------------------------------------------------------------------- JSON parse


@st.composite
def json_texts(draw: st.DrawFn, depth: int = 0) -> str:
    """JSON text, sometimes with a repeated key, a colon or an escaped one in a string."""
    kind = draw(st.integers(0, 5 if depth < 4 else 2))
    if kind == 0:
        return draw(st.sampled_from(["1", "null", "true", "-2.5"]))
    if kind == 1:
        return json.dumps(draw(st.sampled_from(["a", "a:b", ":", "x\\u003ay", "[", "}"])))
    if kind == 2:
        return draw(st.sampled_from(['"\\u003a"', '"\\u003A:"', '"q"']))
    if kind == 3:
        return "[" + ", ".join(draw(st.lists(json_texts(depth + 1), max_size=3))) + "]"
    keys = draw(st.lists(st.sampled_from(["a", "b", "a:", "\\u003a", ":"]), max_size=4))
    values = [draw(json_texts(depth + 1)) for _ in keys]
    return "{" + ", ".join(f'"{k}": {v}' for k, v in zip(keys, values, strict=True)) + "}"


def _parsed(text: str, parse: Any) -> tuple[str, Any]:
    try:
        return "ok", parse(text, Path("t.json"), 1).data
    except FormatError as exc:
        return "error", str(exc)


@settings(max_examples=300, deadline=None, database=None)
@given(text=json_texts())
def test_the_json_parser_without_hook_agrees_with_the_checked_parse(text: str) -> None:
    fast = _parsed(text, _json_source.parse_json)
    assert fast == _parsed(text, _json_source._parse_checked)


@pytest.mark.parametrize("depth", [99, 100, 101, 150])
def test_nesting_is_measured_the_same_both_ways(depth: int) -> None:
    text = '{"a": ' * depth + "1" + "}" * depth
    fast = _parsed(text, _json_source.parse_json)
    assert fast == _parsed(text, _json_source._parse_checked)
    assert (fast[0] == "error") == (depth > 100)


def test_the_scan_walk_without_the_collector_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    data = json.loads('{"a": [{"b": 1, "c": {"d": []}}, [[]]], "e": "x"}')
    fast = _json_source._scan(data)
    monkeypatch.setattr(_json_source, "_items", _json_source._items_walked)
    assert _json_source._scan(data) == fast == (5, False)
