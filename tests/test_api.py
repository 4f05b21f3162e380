"""The public API: an explicit, sorted __all__ whose every name exists and is documented."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys

import pytest

import benchkit

from ._support import REPO

PUBLIC_MODULES = [
    "benchkit",
    "benchkit.errors",
    "benchkit.model",
    "benchkit.results",
    "benchkit.protocols",
    "benchkit.registry",
    "benchkit.stats",
    "benchkit.serde",
    "benchkit.runner",
    "benchkit.executors",
    "benchkit.providers",
    "benchkit.evaluators",
    "benchkit.formats",
    "benchkit.store",
    "benchkit.reports",
    "benchkit.transcript",
]


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_and_complete(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert list(exported) == sorted(exported), f"{name}.__all__ is not sorted"
    assert len(set(exported)) == len(exported)
    for attr in exported:
        obj = getattr(module, attr)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__doc__, f"{name}.{attr} has no docstring"


def test_top_level_exports_the_core() -> None:
    for name in (
        "Runner",
        "Suite",
        "Task",
        "Benchmark",
        "Condition",
        "RunResult",
        "run",
        "arun",
        "load",
        "BenchkitError",
        "CallableProvider",
        "MockProvider",
    ):
        assert name in benchkit.__all__


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        benchkit.Nope  # type: ignore[attr-defined]  # noqa: B018


def test_import_is_light() -> None:
    code = (
        "import sys, benchkit; "
        "heavy = [m for m in ('httpx', 'jsonschema', 'rich', 'ruamel', 'cattrs', 'ray') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


_NOT_AT_IMPORT = (
    "importlib.metadata",  # entry points: read when a registry is first looked up
    "asyncio",
    "anyio",
    "attrs",
    "cattrs",
    "httpx",
    "jsonschema",
    "sqlite3",
    "ruamel.yaml",
    "benchkit.model",
    "benchkit.registry",
    "benchkit.runner",
    "benchkit.results",
)


def test_import_loads_no_core_until_a_name_is_used() -> None:
    # What `import benchkit` costs is measured in perf/import_time.py; here, what it loads.
    code = (
        "import json, sys; import benchkit; before = sorted(sys.modules); "
        "benchkit.Task; print(json.dumps([before, sorted(sys.modules), 'Task' in vars(benchkit)]))"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    before, after, cached = json.loads(out.stdout)
    assert [name for name in _NOT_AT_IMPORT if name in before] == []
    assert "benchkit.errors" not in before and "benchkit._version" in before
    # The first use of a name imports its module and keeps the name on the package.
    assert "benchkit.model" in after and "attrs" in after
    # Building tasks reads no entry points: that waits for a registry's first lookup.
    assert "importlib.metadata" not in after and "benchkit.registry" not in after
    assert cached


def test_a_subpackage_is_reached_as_an_attribute_after_a_bare_import() -> None:
    # `import benchkit; benchkit.reports.to_markdown(...)` worked while the package imported
    # its subpackages eagerly; the lazy package imports one when it is first named.
    code = (
        "import sys, benchkit; before = 'benchkit.reports' in sys.modules; "
        "md = benchkit.reports.to_markdown; "
        "missing = [hasattr(benchkit, n) for n in ('no_such_module', '_private', '__wrapped__')]; "
        "print(before, md.__module__.startswith('benchkit.reports'), missing)"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.split(None, 2) == ["False", "True", "[False, False, False]\n"]


def test_errors_subclass_matching_builtins() -> None:
    assert issubclass(benchkit.FormatError, ValueError)
    assert issubclass(benchkit.ConfigError, ValueError)
    assert issubclass(benchkit.RegistryError, LookupError)
    assert issubclass(benchkit.ProviderError, RuntimeError)
    err = benchkit.FormatError("bad", file="b.yaml", line=3, column=5, json_path="$.x", fix="do y")
    assert str(err) == "b.yaml:3:5: $.x: bad Fix: do y"


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def test_public_objects_report_public_modules() -> None:
    # Reprs, pickles, docs and error messages show the path users import from, and that
    # path really holds the object (pickle looks it up by module and qualname).
    for name in benchkit.__all__:
        obj = getattr(benchkit, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        assert not _private(obj.__module__), f"benchkit.{name} reports {obj.__module__}"
        module = importlib.import_module(obj.__module__)
        assert getattr(module, obj.__qualname__) is obj, f"{obj.__module__}.{obj.__qualname__}"


def _answer(x: object) -> str:
    return str(x)


def test_model_classes_and_providers_round_trip_through_pickle() -> None:
    import pickle

    from benchkit.providers import CallableProvider, MockProvider

    task = benchkit.Task("t1", input={"q": 1}, expected="1", tags=("a",))
    suite = benchkit.Suite(
        benchkit.Benchmark("b", tasks=(task,), evaluators=[benchkit.EvaluatorSpec("exact")]),
        conditions=[
            benchkit.Condition("spec", benchkit.ProviderSpec("http", {"url": "http://a"})),
            benchkit.Condition("fn", CallableProvider(_answer)),
        ],
        options=benchkit.RunOptions(epochs=2, seed=3),
    )
    for obj in (task, suite, suite.benchmark, suite.options, *suite.conditions):
        assert pickle.loads(pickle.dumps(obj)) == obj
    mock = pickle.loads(pickle.dumps(MockProvider(outputs={"1": "one"})))
    assert type(mock) is MockProvider
    data = pickle.dumps(MockProvider(outputs={"1": "one"}))
    assert b"benchkit.providers" in data and b"_mock" not in data


def test_a_pickle_names_the_public_path_and_loads_in_a_fresh_process() -> None:
    import pickle

    from benchkit.providers import MockProvider

    data = pickle.dumps([MockProvider(outputs={"1": "one"}), benchkit.Store, benchkit.JsonlSink])
    code = (
        "import pickle, sys\n"
        "mock, store, sink = pickle.loads(sys.stdin.buffer.read())\n"
        "print(type(mock).__module__, store.__module__, sink.__qualname__)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], input=data, capture_output=True, check=True, timeout=60
    )
    assert proc.stdout.decode().split() == ["benchkit.providers", "benchkit.store", "JsonlSink"]


def test_a_mock_answers_its_default_and_keeps_it_through_pickle() -> None:
    import pickle

    from benchkit.errors import ConfigError
    from benchkit.providers import MockProvider

    tasks = [
        benchkit.Task("t1", input="q", expected="42"),
        benchkit.Task("t2", input="q", expected="0"),
    ]
    for provider, statuses in [
        (MockProvider(outputs={"t1": "42"}, default="0"), {"t1": "pass", "t2": "pass"}),
        (MockProvider(default="42"), {"t1": "pass", "t2": "fail"}),
        (MockProvider(outputs={"t1": "42"}), {"t1": "pass", "t2": "error"}),
    ]:
        for mock in (provider, pickle.loads(pickle.dumps(provider))):
            bench = benchkit.Benchmark(
                "b", tasks=tasks, evaluators=[benchkit.EvaluatorSpec("exact")]
            )
            suite = benchkit.Suite(bench, conditions=[benchkit.Condition("m", mock)])
            result = benchkit.run(suite, store=False)
            assert {c.task_id: c.status for c in result.cells} == statuses
    with pytest.raises(ConfigError, match="outputs") as refused:
        MockProvider()
    assert '"type": "mock"' in (refused.value.fix or "")
    with pytest.raises(ConfigError, match="must map task ids"):
        MockProvider(outputs=["42"])  # type: ignore[arg-type]
