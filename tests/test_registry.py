"""Registries: lazy built-ins, decorators, entry points, clear errors for unknown names."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import benchkit
from benchkit import ConfigError, RegistryError
from benchkit.registry import Registry, default_registries


def test_builtins_are_lazy_until_first_use() -> None:
    reg: Registry[Any] = Registry(
        "evaluator", "benchkit.test.none", {"exact": "benchkit.evaluators._basic:ExactEvaluator"}
    )
    assert "exact" in reg
    assert reg.names() == ["exact"]
    from benchkit.evaluators import ExactEvaluator

    assert reg.get("exact") is ExactEvaluator


def test_unknown_name_lists_the_known_ones() -> None:
    reg: Registry[Any] = Registry("provider", "benchkit.test.none", {"a": "x:y", "b": "x:z"})
    with pytest.raises(RegistryError, match=r"unknown provider 'c'.*use one of: a, b"):
        reg.get("c")
    with pytest.raises(LookupError):
        reg.get("c")


def test_broken_lazy_target_is_a_registry_error() -> None:
    reg: Registry[Any] = Registry("verifier", "benchkit.test.none", {"bad": "no.such.module:thing"})
    with pytest.raises(RegistryError, match="cannot be imported"):
        reg.get("bad")


def test_decorator_registers_into_the_default_registry_and_copy_isolates() -> None:
    registries = default_registries().copy()
    registries.evaluators.register("always", aliases=("always_pass",))(dict)
    assert registries.evaluators.get("always_pass") is dict
    assert "always" not in default_registries().evaluators


def test_build_passes_options_and_base_dir_and_rejects_bad_options(tmp_path: Path) -> None:
    seen: dict[str, object] = {}

    def factory(*, size: int, base_dir: Path | None = None) -> dict[str, object]:
        seen.update(size=size, base_dir=base_dir)
        return seen

    def no_base_dir(*, size: int) -> int:
        return size

    reg: Registry[Any] = Registry("widget", "benchkit.test.none")  # no method to check
    reg.add("f", factory)
    reg.add("g", no_base_dir)
    assert reg.build("f", {"size": 3}, base_dir=tmp_path) == {"size": 3, "base_dir": tmp_path}
    assert reg.build("g", {"size": 4}, base_dir=tmp_path) == 4
    with pytest.raises(ConfigError, match=r"widget 'g' rejected its options \['colour'\]"):
        reg.build("g", {"colour": "red"})


def test_add_without_replace_refuses_a_built_in_name() -> None:
    reg: Registry[Any] = Registry("format", "benchkit.test.none", {"native": "x:y"})
    with pytest.raises(RegistryError, match="is built in"):
        reg.add("native", "a:b")
    with pytest.raises(RegistryError, match="is built in"):
        reg.copy().add("native", "c:d")
    reg.add("native", "a:b", replace=True)
    assert reg._lazy["native"] == "a:b"


def test_entry_points_are_discovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "benchkit_plugin_demo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: benchkit-plugin-demo\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[benchkit.evaluators]\nshouty = benchkit_plugin_demo:Shouty\n"
    )
    (tmp_path / "benchkit_plugin_demo.py").write_text(
        "class Shouty:\n    async def evaluate(self, task, response):\n        return None\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry[Any] = Registry(
        "evaluator", "benchkit.evaluators", {"exact": "benchkit.evaluators._basic:ExactEvaluator"}
    )
    assert "shouty" in reg.names()
    shouty = reg.get("shouty")
    assert shouty.__name__ == "Shouty"
    assert shouty.__module__ == "benchkit_plugin_demo"
    monkeypatch.delitem(sys.modules, "benchkit_plugin_demo")


def test_top_level_decorators_exist() -> None:
    assert benchkit.evaluator is not None and benchkit.provider is not None
    assert set(default_registries().providers.names()) >= {"python", "subprocess", "http", "mock"}
    assert set(default_registries().evaluators.names()) >= {
        "exact",
        "contains",
        "regex",
        "json_schema",
        "numeric",
    }


def test_entry_point_groups_are_the_documented_ones() -> None:
    """Plug-ins register under these groups; moving modules must never rename them."""
    regs = default_registries()
    groups = [r.group for r in (regs.providers, regs.evaluators, regs.verifiers, regs.formats)]
    assert groups == [
        "benchkit.providers",
        "benchkit.evaluators",
        "benchkit.verifiers",
        "benchkit.formats",
    ]


def test_registries_travel_pickled_and_keep_their_lock_of_their_own() -> None:
    """The Ray executor pickles the run's registries to its workers; the lock that makes
    a registry's first fill thread-safe (#31) stays behind and the copy gets its own."""
    import pickle

    from benchkit.registry import default_registries

    original = default_registries().copy()
    original.evaluators.add("shouty_copy", "json:dumps")  # a lazy entry, by reference
    clone = pickle.loads(pickle.dumps(original))
    assert clone.evaluators.names() == original.evaluators.names()
    assert "shouty_copy" in clone.evaluators.names()
    assert clone.evaluators._lock is not original.evaluators._lock
    clone.evaluators.add("only_in_the_clone", "json:loads")
    assert "only_in_the_clone" not in original.evaluators.names()
