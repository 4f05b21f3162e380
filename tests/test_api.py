"""The public API: an explicit, sorted __all__ whose every name exists and is documented."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

import benchkit

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
        benchkit.Nope  # noqa: B018


def test_import_is_light() -> None:
    code = (
        "import sys, benchkit; "
        "heavy = [m for m in ('httpx', 'jsonschema', 'rich', 'ruamel', 'cattrs', 'ray') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_errors_subclass_matching_builtins() -> None:
    assert issubclass(benchkit.FormatError, ValueError)
    assert issubclass(benchkit.ConfigError, ValueError)
    assert issubclass(benchkit.RegistryError, LookupError)
    assert issubclass(benchkit.ProviderError, RuntimeError)
    err = benchkit.FormatError("bad", file="b.yaml", line=3, column=5, json_path="$.x", fix="do y")
    assert str(err) == "b.yaml:3:5: $.x: bad Fix: do y"
