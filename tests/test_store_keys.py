"""What goes into a suite key and a cell key — and what deliberately does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from benchkit import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    ProviderSpec,
    RunOptions,
    Suite,
    Task,
    VerifierSpec,
)
from benchkit.errors import ConfigError, RegistryError
from benchkit.model import Request, Response
from benchkit.registry import Registries, default_registries
from benchkit.store._keys import SuiteKeys, suite_keys

TASKS = tuple(Task(f"t{i}", input=i, expected=str(i)) for i in range(3))


class Echo:
    async def invoke(self, request: Request) -> Response:
        return Response(output=str(request.task.input))


class Versioned(Echo):
    def __init__(self, version: str, config: str = "") -> None:
        self.version = version
        self._config = config

    def config_hash(self) -> str:
        return self._config


def _suite(
    tasks: tuple[Task, ...] = TASKS,
    provider: object = None,
    *,
    evaluators: tuple[EvaluatorSpec, ...] = (EvaluatorSpec("exact"),),
    **options: object,
) -> Suite:
    return Suite(
        Benchmark("keys", tasks=tasks, evaluators=evaluators),
        conditions=(Condition("c", provider if provider is not None else Echo()),),  # type: ignore[arg-type]
        options=RunOptions(**options),  # type: ignore[arg-type]
    )


def _keys(suite: Suite, registries: Registries | None = None) -> SuiteKeys:
    return suite_keys(suite, registries or default_registries())


def _task_keys(keys: SuiteKeys) -> dict[str, str]:
    found = {t.id: keys.task(t.id) for t in TASKS}
    return {tid: task[1] for tid, task in found.items() if task is not None}


def test_the_same_suite_built_twice_has_the_same_keys() -> None:
    a, b = _keys(_suite()), _keys(_suite())
    assert a == b
    assert len(a.suite_key) == 32
    assert a.cell_key("t0", "c", 0) == b.cell_key("t0", "c", 0)
    assert len({a.cell_key(t.id, "c", e) for t in TASKS for e in (0,)}) == 3


def test_cells_outside_the_suite_have_no_key() -> None:
    keys = _keys(_suite(epochs=2))
    assert keys.cell_key("t0", "c", 1) is not None
    assert keys.cell_key("t0", "c", 2) is None
    assert keys.cell_key("nope", "c", 0) is None
    assert keys.cell_key("t0", "other", 0) is None


def test_changing_one_task_changes_its_key_and_the_suite_key_only() -> None:
    base = _keys(_suite())
    edited = (TASKS[0], attrs.evolve(TASKS[1], expected="one"), TASKS[2])
    changed = _keys(_suite(edited))
    assert changed.suite_key != base.suite_key
    before, after = _task_keys(base), _task_keys(changed)
    assert before["t0"] == after["t0"] and before["t2"] == after["t2"]
    assert before["t1"] != after["t1"]
    assert base.cell_key("t0", "c", 0) == changed.cell_key("t0", "c", 0)
    assert base.cell_key("t1", "c", 0) != changed.cell_key("t1", "c", 0)


@pytest.mark.parametrize(
    "change",
    [
        {"tags": ("new",)},
        {"weight": 2.0},
        {"timeout": 5.0},
        {"metadata": {"source": "x"}},
        {"evaluators": (EvaluatorSpec("contains"),)},
        {"verifiers": (VerifierSpec("file_exists", {"path": "x"}),)},
    ],
    ids=lambda change: next(iter(change)),
)
def test_every_task_field_is_in_the_task_key(change: dict[str, Any]) -> None:
    base = _task_keys(_keys(_suite()))["t0"]
    edited = (attrs.evolve(TASKS[0], **change), *TASKS[1:])
    registries = default_registries().copy()
    registries.verifiers.add("file_exists", Echo)  # any class: only its version is read
    assert _task_keys(_keys(_suite(edited), registries))["t0"] != base


def test_task_order_changes_the_suite_key_but_not_the_cell_keys() -> None:
    base = _keys(_suite())
    swapped = _keys(_suite((TASKS[2], TASKS[0], TASKS[1])))
    assert swapped.suite_key != base.suite_key
    assert swapped.cell_key("t2", "c", 0) == base.cell_key("t2", "c", 0)
    assert swapped.task("t2") == (0, base.task("t2")[1])  # type: ignore[index]


@pytest.mark.parametrize(
    "options",
    [{"concurrency": 50}, {"timeout": 3.0}, {"retries": 4}, {"errors_as": "exclude"}],
    ids=lambda o: next(iter(o)),
)
def test_how_a_run_goes_is_not_in_the_keys(options: dict[str, Any]) -> None:
    assert _keys(_suite(**options)) == _keys(_suite())


def test_seed_and_deterministic_mode_are_in_every_key_epochs_in_the_suite_key() -> None:
    base = _keys(_suite())
    for options in ({"seed": 1}, {"deterministic": True}):
        other = _keys(_suite(**options))
        assert other.suite_key != base.suite_key
        assert other.cell_key("t0", "c", 0) != base.cell_key("t0", "c", 0)
    more = _keys(_suite(epochs=3))
    assert more.suite_key != base.suite_key
    assert more.cell_key("t0", "c", 0) == base.cell_key("t0", "c", 0)


def test_the_evaluators_and_their_versions_are_in_the_key() -> None:
    class Judge:
        version = "1"

        async def evaluate(self, task: Task, response: Response) -> object: ...

    class JudgeV2(Judge):
        version = "2"

    v1 = default_registries().copy()
    v1.evaluators.add("judge", Judge)
    v2 = default_registries().copy()
    v2.evaluators.add("judge", JudgeV2)
    judged = (EvaluatorSpec("judge", {"model": "m"}),)
    base = _keys(_suite(evaluators=judged), v1)
    assert _keys(_suite(evaluators=judged), v1) == base
    assert _keys(_suite(evaluators=judged), v2).suite_key != base.suite_key
    other_options = (EvaluatorSpec("judge", {"model": "n"}),)
    assert _keys(_suite(evaluators=other_options), v1).suite_key != base.suite_key
    assert _keys(_suite(evaluators=(EvaluatorSpec("exact"),)), v1).suite_key != base.suite_key
    with pytest.raises(RegistryError, match="unknown evaluator 'judge'"):
        _keys(_suite(evaluators=judged))


def test_the_provider_is_keyed_by_spec_or_by_class_version_and_config() -> None:
    def key(provider: object) -> str:
        return _keys(_suite(provider=provider)).conditions["c"]

    spec = ProviderSpec("http", {"url": "http://a"})
    assert key(spec) == key(ProviderSpec("http", {"url": "http://a"}))
    assert key(spec) != key(ProviderSpec("http", {"url": "http://b"}))
    assert key(Echo()) == key(Echo())
    assert key(Echo()) != key(Versioned("1"))
    assert key(Versioned("1")) != key(Versioned("2"))
    assert key(Versioned("1", "a")) != key(Versioned("1", "b"))


def test_condition_options_and_bundle_count_its_label_does_not(tmp_path: Path) -> None:
    def key(**fields: Any) -> str:
        suite = _suite()
        cond = attrs.evolve(suite.conditions[0], **fields)
        return _keys(attrs.evolve(suite, conditions=(cond,))).conditions["c"]

    base = key()
    assert key(label="Pretty name") == base
    assert key(concurrency=2) == base
    assert key(options={"temperature": 0}) != base
    assert key(bundle=tmp_path) != base


def test_two_tasks_with_one_id_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="positions 0 and 2") as info:
        _keys(_suite((TASKS[0], TASKS[1], attrs.evolve(TASKS[2], id="t0"))))
    assert "unique id" in str(info.value)


def test_keys_are_those_earlier_versions_stored() -> None:
    # Pinned values from benchkit 0.1.0's key code: a store written before the compact
    # key table (issue #20) must still resume, so the key format may not drift.
    tasks = tuple(Task(f"t{i}", input=i, expected=str(i), tags=("a",)) for i in range(3))
    suite = Suite(
        Benchmark("pinned", tasks=tasks, evaluators=[EvaluatorSpec("exact")]),
        conditions=[Condition("c", ProviderSpec("callable", {"target": "x:y"}))],
        options=RunOptions(epochs=2, seed=5),
    )
    keys = _keys(suite)
    assert keys.suite_key == "52e6ec76a598c759e8021161347986fb"
    assert keys.conditions["c"] == "7479c4311c977c5787691ff0d75c4968"
    assert keys.cell_key("t1", "c", 1) == "be24808f8ae962cab3b53c56c872fda4"
    assert keys.cell_key("t1", "c", 1, 1) == keys.cell_key("t1", "c", 1, 0)  # a wrong hint
    assert keys.task_count == 3 and keys.total_cells == 6


def test_the_key_table_holds_40_bytes_a_task() -> None:
    tasks = tuple(Task(f"t{i}", input=i) for i in range(1000))
    keys = _keys(_suite(tasks))
    assert len(keys.ids) + len(keys.task_keys) + keys.hashes.itemsize * len(keys.hashes) == 40_000
    assert keys.task("t999") == (999, keys.task_keys[-16:].hex())
    assert keys.task("t1000") is None


def test_holds_at_says_which_task_is_where() -> None:
    """What a resume keeps of a run's task snapshot: a row whose task is still at its
    position (moved, renamed and dropped tasks are not)."""
    keys = _keys(_suite())
    assert [keys.holds_at(t.id, i) for i, t in enumerate(TASKS)] == [True] * 3
    assert not keys.holds_at("t0", 1) and not keys.holds_at("t2", 0)
    assert not keys.holds_at("gone", 0) and not keys.holds_at("t0", 3)
    assert not keys.holds_at("t0", -1)


def test_providers_renamed_to_public_modules_keep_their_keys() -> None:
    # Providers report their public module (benchkit.providers), but a resume key names
    # the class where it was defined, as every earlier benchkit stored it.
    from benchkit.providers import CallableProvider, MockProvider
    from benchkit.store._keys import _provider_key

    suite = Suite(
        Benchmark(
            "pinned", tasks=[Task("t1", input=1, expected="1")], evaluators=[EvaluatorSpec("exact")]
        ),
        conditions=[Condition("m", MockProvider(outputs={"1": "1"}))],
        options=RunOptions(seed=5),
    )
    keys = _keys(suite)
    assert keys.suite_key == "495c133c96b83a8b557ce0cb9241294a"
    assert keys.conditions["m"] == "c50a358c0b4cc0e43e7f8b40235bdd95"
    assert MockProvider.__module__ == "benchkit.providers"
    provider = CallableProvider(str)
    assert _provider_key(provider)["class"] == "benchkit.providers._callable.CallableProvider"
