"""The run store from the library: round trips, resume, history, errors, the LLM cache."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import threading
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

import benchkit
import benchkit.store._writer as _writer
from benchkit import LazyTasks, Runner, Suite, Task
from benchkit.errors import ConfigError
from benchkit.model import Request, Response, ScoringSpec
from benchkit.results import RunResult
from benchkit.store import (
    RunNotFoundError,
    Store,
    StoreError,
    _schema,
    compare_runs,
    read_jsonl,
)
from benchkit.store._queries import StoreReader
from benchkit.store._sqlite import DEFAULT_STORE, resolve_store_path

from ._support import FIXTURES, make_suite, stored_run_stopped_after

STORE_FIXTURES = FIXTURES / "store"

pytestmark = pytest.mark.anyio


class Counting:
    """Answers str(input), except that inputs in ``wrong`` get "nope" and inputs in
    ``failing`` raise; remembers every (task, epoch) it was asked."""

    def __init__(self, wrong: set[int] = frozenset(), failing: set[int] = frozenset()):  # type: ignore[assignment]
        self.wrong = set(wrong)
        self.failing = set(failing)
        self.calls: list[tuple[str, int]] = []

    async def invoke(self, request: Request) -> Response:
        self.calls.append((request.task.id, request.epoch))
        n = request.task.input
        if n in self.failing:
            raise RuntimeError(f"cannot do {n}")
        return Response(output="nope" if n in self.wrong else str(n))


def _suite(provider: Counting, n: int = 6, **options: Any) -> Suite:
    return make_suite({"c": provider}, n=n, deterministic=True, **options)


def _cells(store: Store, run_id: str) -> list[tuple[str, str, int]]:
    with sqlite3.connect(store.path) as db:
        return sorted(
            db.execute("SELECT task_id, condition_id, epoch FROM cells WHERE run_id = ?", (run_id,))
        )


# -- where the store lives ------------------------------------------------------------


def test_path_comes_from_argument_then_environment_then_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCHKIT_STORE", raising=False)
    assert resolve_store_path() == tmp_path / DEFAULT_STORE
    monkeypatch.setenv("BENCHKIT_STORE", str(tmp_path / "env.db"))
    assert Store().path == tmp_path / "env.db"
    assert Store("arg.db").path == tmp_path / "arg.db"


def test_benchkit_run_writes_to_the_default_store_and_store_false_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCHKIT_STORE", raising=False)
    result = benchkit.run(_suite(Counting()))
    with Store() as store:
        assert [r.run_id for r in store.runs()] == [result.run_id]
        assert store.path == tmp_path / ".benchkit" / "benchkit.db"
    elsewhere = tmp_path / "sub"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    benchkit.run(_suite(Counting()), store=False)
    assert not (elsewhere / ".benchkit").exists()
    with pytest.raises(ConfigError, match="need the run store"):
        benchkit.run(_suite(Counting()), store=False, resume=True)


def test_reading_a_store_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "none" / "benchkit.db")
    assert store.runs() == []
    assert store.cache_get("k") is None
    with pytest.raises(RunNotFoundError, match="does not exist yet"):
        store.load("run_x")
    assert not (tmp_path / "none").exists()


# -- what a stored run holds ------------------------------------------------------------


async def test_load_returns_what_the_runner_returned(tmp_path: Path) -> None:
    provider = Counting(wrong={1, 4}, failing={2})
    suite = make_suite({"a": provider, "b": Counting(wrong={3})}, n=5, epochs=2)
    result = await benchkit.arun(suite, store=tmp_path / "s.db")
    with Store(tmp_path / "s.db") as store:
        loaded = store.load(result.run_id)
        (summary,) = store.runs()
    assert loaded == result
    assert loaded.to_json() == result.to_json()
    assert not loaded.interrupted
    assert (summary.status, summary.cells, summary.errors, summary.total_cells) == (
        "finished",
        20,
        2,
        20,
    )
    assert summary.conditions == ("a", "b")
    assert [(s.kind, s.status, s.reused, s.written) for s in summary.sessions] == [
        ("start", "finished", 0, 20)
    ]


async def test_a_runner_with_a_prepared_sink_and_another_sink(tmp_path: Path) -> None:
    suite = _suite(Counting())
    with Store(tmp_path / "s.db") as store:
        prepared = store.prepare(suite)
        jsonl = benchkit.JsonlSink(tmp_path / "cells.jsonl")
        runner = Runner(sinks=[prepared.sink, jsonl])
        result = await runner.run(suite, run_id=prepared.run_id, done=prepared.done)
        assert store.load(prepared.run_id) == result
        with pytest.raises(ConfigError, match="already used"):
            await prepared.sink.open(result.info)
        other = store.prepare(suite)
        with pytest.raises(ConfigError, match="prepared for run"):
            await Runner(sinks=[other.sink]).run(suite, run_id="run_other")
    assert len(read_jsonl(tmp_path / "cells.jsonl")[1]) == 6


def test_an_output_that_is_not_json_is_a_stored_cell_error(tmp_path: Path) -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd!"

    suite = make_suite({"c": benchkit.CallableProvider(lambda _x: Odd())}, n=2)
    result = benchkit.run(suite, store=tmp_path / "s.db")
    with Store(tmp_path / "s.db") as store:
        loaded = store.load(result.run_id)
    assert [c.status for c in loaded.cells] == ["error", "error"]
    assert all("not a string or a JSON value" in (c.error or "") for c in loaded.cells)


# -- resume ---------------------------------------------------------------------------


async def test_an_interrupted_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    reference = benchkit.run(_suite(Counting(wrong={1}), n=8, epochs=2), store=False)

    first = Counting(wrong={1})
    runner_box: dict[str, Runner] = {}

    def stop_after_five(event: benchkit.Progress) -> None:
        if event.done == 5:
            runner_box["r"].cancel()

    suite = _suite(first, n=8, epochs=2, concurrency=1)  # concurrency is not in the key
    with Store(path) as store:
        prepared = store.prepare(suite)
        runner = runner_box["r"] = Runner(sinks=[prepared.sink], progress=stop_after_five)
        partial = await runner.run(suite, run_id=prepared.run_id)
        assert partial.interrupted and len(partial.cells) == 5
        assert store.runs()[0].status == "interrupted"
        assert store.load(prepared.run_id).not_run == 11

    second = Counting(wrong={1})
    resumed = await benchkit.arun(_suite(second, n=8, epochs=2), store=path, resume=True)
    assert resumed.run_id == prepared.run_id
    assert len(second.calls) == 11
    assert not set(second.calls) & set(first.calls)
    assert resumed.to_json() == reference.to_json()
    with Store(path) as store:
        (summary,) = store.runs()
        assert store.load(resumed.run_id) == resumed
    assert [(s.kind, s.reused, s.written) for s in summary.sessions] == [
        ("start", 0, 5),
        ("resume", 5, 11),
    ]
    assert len(_cells(Store(path), resumed.run_id)) == 16


def test_a_lazy_benchmark_has_a_known_total_in_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    tasks = [Task(f"t{i}", input=i, expected=str(i)) for i in range(5)]
    lazy = make_suite({"c": Counting()}, epochs=2, concurrency=1)
    lazy = attrs.evolve(
        lazy, benchmark=attrs.evolve(lazy.benchmark, tasks=LazyTasks(lambda: iter(tasks)))
    )
    with Store(path) as store:
        run_id, partial = stored_run_stopped_after(store, lazy, 3)
        assert partial.info.total_cells is None and partial.not_run == 7
        (summary,) = store.runs()
        assert (summary.cells, summary.total_cells) == (3, 10)
        assert store.load(run_id).not_run == 7


def test_resume_of_a_finished_run_runs_nothing_and_retry_errors_reruns_errors(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    first = benchkit.run(_suite(Counting(failing={2, 4})), store=path)
    assert first.aggregate("c").errors == 2

    again = Counting(failing={2, 4})
    same = benchkit.run(_suite(again), store=path, resume=True)
    assert again.calls == [] and same.to_json() == first.to_json()

    healed = Counting()
    retried = benchkit.run(_suite(healed), store=path, retry_errors=True)
    assert sorted(healed.calls) == [("t2", 0), ("t4", 0)]
    assert retried.run_id == first.run_id and retried.aggregate("c").errors == 0
    with Store(path) as store:
        assert store.load(first.run_id).aggregate("c").passed == 6
        assert len(store.runs()) == 1


@pytest.mark.skipif(sqlite3.sqlite_version_info < (3, 35), reason="DROP COLUMN needs SQLite 3.35")
def test_a_run_stored_at_schema_1_resumes_after_the_migration(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first = benchkit.run(_suite(Counting(failing={2, 4}), n=8), store=path)
    with sqlite3.connect(path) as db:  # back to what a schema-1 benchkit wrote, after
        db.execute("ALTER TABLE cells DROP COLUMN score")  # the server added its indexes
        for column in ("outcome", "stored_cells", "stored_errors", "plain_cells", "stop"):
            db.execute(f"ALTER TABLE runs DROP COLUMN {column}")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    reader = StoreReader(path)
    reader.ensure_indexes()
    reader.close()
    again = Counting(failing={2, 4})
    same = benchkit.run(_suite(again, n=8), store=path, resume=True)
    assert again.calls == [] and same.to_json() == first.to_json()  # every key still matches
    healed = Counting()
    retried = benchkit.run(_suite(healed, n=8), store=path, retry_errors=True)
    assert sorted(healed.calls) == [("t2", 0), ("t4", 0)]
    with Store(path) as store:  # old cells read their scores from JSON, new ones from the column
        assert store.compare(first.run_id, first.run_id) == compare_runs(retried, retried)
        assert store.summary(first.run_id).errors == 0


def test_resume_with_nothing_to_resume_starts_a_new_run(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as store:
        prepared = store.prepare(_suite(Counting()), resume=True)
        assert not prepared.resumed and prepared.done == ()
        named = store.prepare(_suite(Counting()), resume=True, run_id="mine")
        assert (named.run_id, named.resumed) == ("mine", False)


def test_a_changed_task_reruns_only_its_cells_when_resumed_by_id(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    tasks = [Task(f"t{i}", input=i, expected=str(i)) for i in range(4)]
    first = benchkit.run(make_suite({"c": Counting()}, tasks, epochs=2), store=path, run_id="r1")
    changed = [*tasks[:2], Task("t2", input=2, expected="two"), Task("t9", input=9, expected="9")]
    provider = Counting()
    suite = make_suite({"c": provider}, changed, epochs=2)

    with Store(path) as store:
        nothing = store.prepare(suite, resume=True)  # another suite key: nothing to resume
        assert not nothing.resumed
        prepared = store.prepare(suite, resume=True, run_id="r1")
        assert prepared.resumed and (len(prepared.done), prepared.dropped) == (4, 4)
    result = benchkit.run(suite, store=path, run_id="r1", resume=True)
    assert sorted(provider.calls) == [("t2", 0), ("t2", 1), ("t9", 0), ("t9", 1)]
    assert [c.task_id for c in result.cells] == ["t0", "t0", "t1", "t1", "t2", "t2", "t9", "t9"]
    assert result.aggregate("c").failed == 2
    assert first.run_id == result.run_id == "r1"
    with Store(path) as store:
        assert store.load("r1") == result
        assert ("t3", "c", 0) not in _cells(store, "r1")


def test_an_explicit_run_id_that_exists_needs_resume(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    benchkit.run(_suite(Counting()), store=path, run_id="taken")
    with pytest.raises(ConfigError, match="already in the store") as info:
        benchkit.run(_suite(Counting()), store=path, run_id="taken")
    assert "--resume" in str(info.value)


def test_a_deterministic_rerun_replaces_the_stored_run_of_its_id(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first = benchkit.run(_suite(Counting(wrong={1})), store=path)
    with Store(path) as store:
        prepared = store.prepare(_suite(Counting()))
        assert prepared.replaced and prepared.run_id == first.run_id
    second = benchkit.run(_suite(Counting()), store=path)
    with Store(path) as store:
        (summary,) = store.runs()
        assert store.load(summary.run_id) == second
        assert len(summary.sessions) == 1


def test_duplicate_task_ids_are_refused(tmp_path: Path) -> None:
    tasks = [Task("same", input=1, expected="1"), Task("same", input=2, expected="2")]
    with pytest.raises(ConfigError, match="two tasks with the id 'same'"):
        benchkit.run(make_suite({"c": Counting()}, tasks), store=tmp_path / "s.db")


def test_a_run_still_running_elsewhere_cannot_be_resumed_or_deleted(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    result = benchkit.run(_suite(Counting()), store=path, run_id="busy")
    with sqlite3.connect(path) as db:  # pretend PID 1 (always alive) is running it
        db.execute("UPDATE runs SET status = 'running', pid = 1 WHERE run_id = 'busy'")
    with Store(path) as store:
        assert store.runs()[0].status == "running"
        with pytest.raises(ConfigError, match="still running in process 1"):
            store.prepare(_suite(Counting()), resume=True)
        with pytest.raises(ConfigError, match="still running in process 1"):
            store.delete("busy")
    dead = _dead_pid()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET pid = ? WHERE run_id = 'busy'", (dead,))
    with Store(path) as store:
        assert store.runs()[0].status == "crashed"
        assert store.prepare(_suite(Counting()), resume=True).run_id == result.run_id


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# -- history ------------------------------------------------------------------------------


def test_runs_lists_newest_first_filters_and_resolves_prefixes(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    ids = [
        benchkit.run(_suite(Counting()), store=path, run_id=rid).run_id
        for rid in ("run_a1", "run_a2", "run_b1")
    ]
    other = make_suite({"c": Counting()}, n=2)
    other = attrs.evolve(other, benchmark=attrs.evolve(other.benchmark, id="other"))
    benchkit.run(other, store=path, run_id="x_other")
    with Store(path) as store:
        assert [r.run_id for r in store.runs()] == ["x_other", *reversed(ids)]
        assert [r.run_id for r in store.runs(benchmark="other")] == ["x_other"]
        assert [r.run_id for r in store.runs(limit=2)] == ["x_other", "run_b1"]
        assert store.load("run_b").run_id == "run_b1"
        assert store.summary("x_").run_id == "x_other"
        with pytest.raises(RunNotFoundError, match="matches several runs"):
            store.load("run_a")
        with pytest.raises(RunNotFoundError, match="no run 'nope'"):
            store.load("nope")
        with pytest.raises(RunNotFoundError, match="no run 'run%'"):
            store.load("run%")  # LIKE wildcards are taken literally


def test_delete_removes_the_run_its_cells_and_sessions(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    keep = benchkit.run(_suite(Counting()), store=path, run_id="keep")
    benchkit.run(_suite(Counting()), store=path, run_id="gone")
    with Store(path) as store:
        assert store.delete("gone") == 6
        assert [r.run_id for r in store.runs()] == ["keep"]
        assert store.load("keep") == keep
        with pytest.raises(RunNotFoundError):
            store.delete("gone")
    with sqlite3.connect(path) as db:
        for table in ("cells", "sessions"):
            count = db.execute(f"SELECT COUNT(*) FROM {table} WHERE run_id = 'gone'").fetchone()
            assert count == (0,)


def test_export_json_and_jsonl_read_back_as_the_same_run(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    result = benchkit.run(_suite(Counting(failing={3})), store=path)
    with Store(path) as store:
        as_json, as_jsonl = io.StringIO(), io.StringIO()
        store.export(result.run_id, as_json)
        store.export(result.run_id, as_jsonl, format="jsonl")
        with pytest.raises(ConfigError, match="unknown export format"):
            store.export(result.run_id, io.StringIO(), format="xml")  # type: ignore[arg-type]
    assert RunResult.from_json(as_json.getvalue()) == result
    lines = tmp_path / "cells.jsonl"
    lines.write_text(as_jsonl.getvalue())
    info, cells = read_jsonl(lines)
    assert info == result.info and tuple(cells) == result.cells
    assert json.loads(as_jsonl.getvalue().splitlines()[-1]) == {
        "end": {"interrupted": False, "not_run": 0}
    }


def test_compare_two_runs_pairs_tasks_and_reports_flips(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    before = benchkit.run(_suite(Counting(wrong={1, 2}), n=8), store=path, run_id="before")
    after = benchkit.run(_suite(Counting(wrong={2, 5, 6}), n=8), store=path, run_id="after")
    with Store(path) as store:
        cmp = store.compare("bef", "after")
    (item,) = cmp.conditions
    assert (cmp.run_a, cmp.run_b) == (before.run_id, after.run_id)
    assert (item.paired, item.only_a, item.only_b) == (8, 0, 0)
    assert (item.pass_rate_a, item.pass_rate_b) == (0.75, 0.625)
    assert item.comparison is not None
    assert item.comparison.improved == ("t1",)
    assert item.comparison.regressed == ("t5", "t6")
    assert item.comparison.paired.b_only == 1 and item.comparison.paired.a_only == 2
    assert item.comparison.paired.mcnemar_p == 1.0


def test_store_compare_equals_comparing_the_loaded_runs(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    providers_a = {"x": Counting(wrong={1, 4}), "y": Counting(failing={2})}
    providers_b = {"y": Counting(wrong={3}), "x": Counting(failing={1, 7}, wrong={5})}
    benchkit.run(make_suite(providers_a, n=12, epochs=2, seed=4), store=path, run_id="a")
    benchkit.run(make_suite(providers_b, n=10, epochs=2, seed=4), store=path, run_id="b")
    with Store(path) as store:
        loaded = compare_runs(store.load("a"), store.load("b"))
        assert store.compare("a", "b") == loaded
        pairs = [("x", "y"), ("y", "x")]
        assert store.compare("a", "b", pairs=pairs) == compare_runs(
            store.load("a"), store.load("b"), pairs=pairs
        )
    assert [item.only_a for item in loaded.conditions] == [4, 4]
    assert loaded.conditions[0].comparison is not None
    assert loaded.conditions[0].comparison.improved == ("t4",)


@pytest.mark.parametrize("method", ["weighted_mean", "pass_at_k"])
def test_store_compare_reads_weights_and_clusters_exactly(tmp_path: Path, method: str) -> None:
    path = tmp_path / "s.db"
    tasks = [
        Task(f"t{i}", input=i, expected=str(i), weight=1 + i / 3, metadata={"p": f"p{i % 3}"})
        for i in range(9)
    ]

    def suite(wrong: set[int]) -> Suite:
        made = make_suite({"c": Counting(wrong=wrong)}, tasks, epochs=2, cluster_by="metadata.p")
        bench = attrs.evolve(made.benchmark, scoring=ScoringSpec(method, 2))  # type: ignore[arg-type]
        return attrs.evolve(made, benchmark=bench)

    benchkit.run(suite({1, 5}), store=path, run_id="a")
    benchkit.run(suite({2, 7, 8}), store=path, run_id="b")
    with sqlite3.connect(path) as db:  # weights and clusters: not plain, the JSON is read
        assert db.execute("SELECT plain_cells FROM runs").fetchall() == [(0,), (0,)]
    with Store(path) as store:
        loaded = compare_runs(store.load("a"), store.load("b"))
        assert store.compare("a", "b") == loaded
    assert loaded.conditions[0].comparison is not None


def _graded(broken: set[int]) -> list[Task]:
    """Six tasks; those in ``broken`` expect nothing, so ``exact`` fails to grade them."""
    return [Task(f"t{i}", input=i, expected=None if i in broken else str(i)) for i in range(6)]


def _compare_leaves_t1_t2_t3_out(path: Path) -> None:
    """Runs a and b of six tasks, t1 (a) and t2, t3 (b) failed by their grader, t4 wrong
    in b: the stored comparison is the loaded one, and leaves the three out."""
    with Store(path) as store:
        loaded = compare_runs(store.load("a"), store.load("b"))
        assert store.compare("a", "b") == loaded
    comparison = loaded.conditions[0].comparison
    assert comparison is not None
    assert comparison.paired.n == 3  # t0, t4, t5: the judged-broken tasks are left out
    assert comparison.regressed == ("t4",)


def test_store_compare_leaves_graders_failures_out_as_loading_does(tmp_path: Path) -> None:
    # A cell whose judge failed (error, evaluation_error) is left out of the averages even
    # with errors_as="zero"; the comparison's outline of a stored cell must know that too.
    path = tmp_path / "s.db"
    benchkit.run(make_suite({"c": Counting()}, _graded({1})), store=path, run_id="a")
    benchkit.run(make_suite({"c": Counting(wrong={4})}, _graded({2, 3})), store=path, run_id="b")
    with sqlite3.connect(path) as db:  # such a cell marks its run as not plain
        assert db.execute("SELECT plain_cells FROM runs ORDER BY run_id").fetchall() == [
            (0,),
            (0,),
        ]
    _compare_leaves_t1_t2_t3_out(path)


def test_store_compare_finds_graders_failures_in_runs_stored_before_schema_4(
    tmp_path: Path,
) -> None:
    # Runs stored before schema 4 have no plain_cells (NULL): their cells' JSON is searched.
    path = tmp_path / "s.db"
    benchkit.run(make_suite({"c": Counting()}, n=6), store=path, run_id="a")
    benchkit.run(make_suite({"c": Counting(wrong={4})}, n=6), store=path, run_id="b")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT plain_cells FROM runs").fetchall() == [(1,), (1,)]
        db.execute("UPDATE runs SET plain_cells = NULL")
        for run_id, task_id in (("a", "t1"), ("b", "t2"), ("b", "t3")):
            (data,) = db.execute(
                "SELECT data FROM cells WHERE run_id = ? AND task_id = ?", (run_id, task_id)
            ).fetchone()
            cell = json.loads(data)
            cell.update(status="error", error_category="evaluation_error", error="judge: no")
            cell.pop("score", None)
            db.execute(
                "UPDATE cells SET status = 'error', score = 'null', data = ? "
                "WHERE run_id = ? AND task_id = ?",
                (json.dumps(cell), run_id, task_id),
            )
    _compare_leaves_t1_t2_t3_out(path)


def test_pages_of_a_run_in_run_order_with_filters(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    providers = {"z": Counting(wrong={1, 4}), "a": Counting(failing={2})}
    result = benchkit.run(make_suite(providers, n=9, epochs=2), store=path)
    with Store(path) as store:
        pages = [store.cells(result.run_id[:10], offset=o, limit=5) for o in range(0, 45, 5)]
        assert tuple(c for page in pages for c in page.cells) == result.cells  # z before a
        assert {page.total for page in pages} == {36}
        assert pages[-1].cells == () and pages[0].run_id == result.run_id
        failed = store.cells(result.run_id, status=["fail", "error"], limit=100)
        assert [(c.task_id, c.condition_id, c.status) for c in failed.cells[::2]] == [
            ("t1", "z", "fail"),
            ("t2", "a", "error"),
            ("t4", "z", "fail"),
        ]
        assert failed.total == 6
        one = store.cells(result.run_id, condition="a", task="t2", offset=1, limit=1)
        assert (one.total, [c.epoch for c in one.cells]) == (2, [1])
        assert store.cells(result.run_id, status="pass", limit=0).cells == ()
        with pytest.raises(ConfigError, match="offset and limit must be >= 0"):
            store.cells(result.run_id, offset=-1)
        with pytest.raises(RunNotFoundError):
            store.cells("nope")


def test_compare_pairs_conditions_by_id_or_by_the_only_ones(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    a = benchkit.run(make_suite({"x": Counting()}, n=3), store=path)
    b = benchkit.run(make_suite({"y": Counting(wrong={0})}, n=4), store=path)
    cmp = compare_runs(a, b)
    (item,) = cmp.conditions
    assert (item.condition_a, item.condition_b, item.label) == ("x", "y", "x → y")
    assert (item.paired, item.only_a, item.only_b) == (3, 0, 1)
    two = benchkit.run(make_suite({"p": Counting(), "q": Counting()}, n=3), store=path)
    with pytest.raises(ConfigError, match="share no condition"):
        compare_runs(a, two)
    assert compare_runs(a, two, pairs=[("x", "q")]).conditions[0].condition_b == "q"
    with pytest.raises(ConfigError, match="has no condition 'z'"):
        compare_runs(a, two, pairs=[("x", "z")])


# -- bad stores: a clear error, never a reset -----------------------------------------


def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database" * 100)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="damaged or is not a benchkit store") as info:
        benchkit.run(_suite(Counting()), store=path)
    assert "never resets" in str(info.value)
    with pytest.raises(StoreError):
        Store(path).runs()
    assert path.read_bytes() == before


def test_a_directory_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        benchkit.run(_suite(Counting()), store=tmp_path)


def test_another_programs_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(StoreError, match=r"not a benchkit store .*users"):
        Store(path).runs()


def test_a_damaged_store_is_an_error_not_a_reset(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    result = benchkit.run(_suite(Counting(), n=200), store=path)
    size = path.stat().st_size
    with path.open("r+b") as handle:  # keep the header, scribble over every later page
        handle.seek(4096)
        handle.write(b"\xa5" * (size - 4096))
    with pytest.raises(StoreError, match="damaged") as info:
        Store(path).load(result.run_id)
    assert "restore it from a backup" in str(info.value)
    assert path.stat().st_size == size


def test_a_store_from_a_newer_benchkit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    benchkit.run(_suite(Counting()), store=path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match=r"newer benchkit .*schema version 99") as info:
        Store(path).runs()
    assert "upgrade benchkit" in str(info.value)
    with pytest.raises(StoreError, match="newer benchkit"):
        benchkit.run(_suite(Counting()), store=path)


def test_an_older_store_is_migrated_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    result = benchkit.run(_suite(Counting()), store=path)
    current = str(_schema.SCHEMA_VERSION)
    steps = (*_schema.MIGRATIONS, ("ALTER TABLE runs ADD COLUMN note TEXT",))
    broken = (*_schema.MIGRATIONS, ("ALTER TABLE runs ADD COLUMN note TEXT", "NOT SQL"))

    monkeypatch.setattr(_schema, "MIGRATIONS", broken)
    monkeypatch.setattr(_schema, "SCHEMA_VERSION", len(broken))
    with pytest.raises(StoreError, match="syntax error"):
        Store(path).runs()
    with sqlite3.connect(path) as db:  # rolled back: still the current version, no new column
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            current,
        )
        assert "note" not in {row[1] for row in db.execute("PRAGMA table_info(runs)")}

    monkeypatch.setattr(_schema, "MIGRATIONS", steps)
    monkeypatch.setattr(_schema, "SCHEMA_VERSION", len(steps))
    with Store(path) as store:
        assert store.load(result.run_id) == result
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            str(len(steps)),
        )
        assert "note" in {row[1] for row in db.execute("PRAGMA table_info(runs)")}


def _outcome(path: Path, run_id: str) -> str | None:
    """The run's stored outcome, after checking its stored counts are there with it."""
    with sqlite3.connect(path) as db:
        text, cells, errors = db.execute(
            "SELECT outcome, stored_cells, stored_errors FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
    assert (cells is None, errors is None) == (text is None, text is None)
    return text  # type: ignore[no-any-return]


def test_a_finished_run_loads_without_its_cells_from_its_stored_outcome(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    providers = {"a": Counting(wrong={1, 4}, failing={2}), "b": Counting(wrong={3})}
    suite = make_suite(providers, n=7, epochs=2, deterministic=True)
    result = benchkit.run(suite, store=path)
    assert result.comparisons and _outcome(path, result.run_id) is not None
    with Store(path) as store:
        outline = store.load(result.run_id, cells=False)
        assert (
            outline
            == attrs.evolve(result, cells=())
            == attrs.evolve(store.load(result.run_id), cells=())
        )
    with sqlite3.connect(path) as db:  # the outcome is what is read: the cells are not
        db.execute("UPDATE cells SET data = 'not json' WHERE run_id = ?", (result.run_id,))
    with Store(path) as store:
        assert store.load(result.run_id, cells=False) == outline
        summary = store.summary(result.run_id)  # counted when the run finished
        assert (summary.cells, summary.errors, summary.total_cells) == (28, 2, 28)
        with pytest.raises(json.JSONDecodeError, match="Expecting value"):  # a full load reads them
            store.load(result.run_id)


def test_an_unfinished_or_resumed_run_recomputes_its_outcome(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first = benchkit.run(_suite(Counting(failing={2, 4}), n=8), store=path)
    with Store(path) as store:
        prepared = store.prepare(_suite(Counting(), n=8), retry_errors=True)
    assert prepared.resumed
    anyio.run(prepared.sink.open, first.info)  # a resume that stops before its end
    assert _outcome(path, first.run_id) is None  # cleared when the resume starts
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = ?", (first.run_id,))
    with Store(path) as store:
        interrupted = store.load(first.run_id, cells=False)
        assert interrupted == attrs.evolve(store.load(first.run_id), cells=())
        assert interrupted.interrupted and interrupted.aggregate("c").errors == 2
        summary = store.summary(first.run_id)  # counted from the cells
        assert (summary.status, summary.cells, summary.errors) == ("interrupted", 8, 2)
    healed = benchkit.run(_suite(Counting(), n=8), store=path, resume=True, retry_errors=True)
    assert healed.aggregate("c").passed == 8 and _outcome(path, first.run_id) is not None
    with Store(path) as store:
        assert store.load(first.run_id, cells=False) == attrs.evolve(healed, cells=())


def test_a_schema_1_store_written_earlier_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    shutil.copy(STORE_FIXTURES / "v1.db", path)
    expected = RunResult.from_json((STORE_FIXTURES / "v1.result.json").read_text())
    with Store(path) as store:
        (summary,) = store.runs()
        assert summary.run_id == expected.run_id
        loaded = store.load(expected.run_id)
        page = store.cells(expected.run_id, offset=3, limit=4)
        assert page.cells == expected.cells[3:7] and page.total == len(expected.cells)
        # its cells have no score column: a comparison reads their scores from the JSON
        assert store.compare(summary.run_id, summary.run_id) == compare_runs(loaded, loaded)
    # The fixture's aggregates are what that version computed; loading recomputes them with
    # today's statistics (task-level since issue 13), from the very same cells.
    assert (loaded.info, loaded.cells) == (expected.info, expected.cells)
    assert [a.passed for a in loaded.aggregates] == [a.passed for a in expected.aggregates]
    assert loaded.aggregates[0].pass_rate_ci.n == 5  # 5 tasks x 2 epochs: the tasks count
    with sqlite3.connect(path) as db:  # migrated on open: the index of run order is there
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            str(_schema.SCHEMA_VERSION),
        )
        assert db.execute("SELECT 1 FROM sqlite_master WHERE name = 'cells_by_position'").fetchone()


async def test_a_writer_failure_mid_run_stops_the_run_with_a_store_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"

    class DeletesTheRun:
        async def invoke(self, request: Request) -> Response:
            if request.task.input == 3:
                await anyio.to_thread.run_sync(Store(path).delete, request.run_id)
            await anyio.sleep(0.01)
            return Response(output=str(request.task.input))

    suite = make_suite({"c": DeletesTheRun()}, n=40, concurrency=1)
    with pytest.raises(StoreError, match="cannot store the cells") as info:
        await benchkit.arun(suite, store=path)
    assert "FOREIGN KEY" in str(info.value)


def test_a_slow_disk_pauses_the_run_instead_of_queueing_without_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_writer, "MAX_PENDING", 10)
    monkeypatch.setattr(_writer, "BATCH_MAX", 4)
    path = tmp_path / "s.db"
    finished: list[int] = []
    finished_while_locked: list[int] = []
    blocker: list[sqlite3.Connection] = []

    def release() -> None:
        finished_while_locked.append(len(finished))
        blocker[0].execute("ROLLBACK")

    def progress(event: benchkit.Progress) -> None:
        finished.append(event.done)
        if event.done == 5:  # another process takes the write lock for a while
            db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            db.execute("BEGIN IMMEDIATE")
            blocker.append(db)
            threading.Timer(0.5, release).start()

    result = benchkit.run(
        make_suite({"c": Counting()}, n=200, concurrency=1), store=path, progress=progress
    )
    blocker[0].close()
    assert len(result.cells) == 200
    (locked,) = finished_while_locked
    assert locked <= 5 + 10 + 4 + 1  # what ran, what may wait, one batch, one in flight
    with Store(path) as store:
        assert store.load(result.run_id) == result


def test_a_cell_that_cannot_be_stored_stops_the_run_with_a_store_error(tmp_path: Path) -> None:
    broken = make_suite({"c": benchkit.CallableProvider(lambda _x: "\ud800")}, n=30)
    with pytest.raises(StoreError, match="UnicodeEncodeError") as info:
        benchkit.run(broken, store=tmp_path / "s.db")
    assert "valid text" in str(info.value)


def test_a_sqlite_without_json_functions_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class NoJson(sqlite3.Connection):
        def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
            if "json_extract" in sql:
                raise sqlite3.OperationalError("no such function: json_extract")
            return super().execute(sql, *args)  # type: ignore[arg-type]

    real = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real(*a, **k, factory=NoJson))
    with pytest.raises(StoreError, match="no JSON functions") as info:
        Store(tmp_path / "s.db").cache_put("k", "1")
    assert "--no-store" in str(info.value)


# -- the LLM response cache ---------------------------------------------------------------


def test_cache_get_and_put_from_many_threads(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as store:
        assert store.cache_get("missing") is None

        def work(i: int) -> None:
            for j in range(20):
                store.cache_put(f"k{i}-{j}", json.dumps({"i": i, "j": j}))
                assert json.loads(store.cache_get(f"k{i}-{j}") or "null") == {"i": i, "j": j}

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        store.cache_put("k0-0", '"replaced"')
        assert store.cache_get("k0-0") == '"replaced"'
    with Store(path) as other:  # another connection sees it: it is in the file
        assert other.cache_get("k3-19") == '{"i": 3, "j": 19}'
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM llm_cache").fetchone() == (80,)
        assert db.execute("SELECT hits FROM llm_cache WHERE key = 'k3-19'").fetchone() == (2,)


def test_cells_table_keys_are_unique(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    benchkit.run(_suite(Counting()), store=path, run_id="r")
    with sqlite3.connect(path) as db, pytest.raises(sqlite3.IntegrityError):
        db.execute(
            "INSERT INTO cells (run_id, task_id, condition_id, epoch, position, status, "
            "cell_key, data) VALUES ('r', 't0', 'c', 0, 0, 'pass', 'k', '{}')"
        )


def test_store_is_exported_from_the_top_level() -> None:
    assert benchkit.Store is Store
    assert "Store" in benchkit.__all__


_RESUMER = """
import sys, time, pathlib
import anyio
from benchkit import Benchmark, CallableProvider, Condition, EvaluatorSpec, Runner, RunOptions
from benchkit import Suite, Task
from benchkit.errors import ConfigError
from benchkit.store import Store

store_path, me, other, log = sys.argv[1:]

def answer(request):
    with open(log, "a") as out:
        out.write(request.task.id + "\\n")
    time.sleep(0.05)
    return str(request.task.input)

tasks = tuple(Task(f"t{i}", input=i, expected=str(i)) for i in range(8))
suite = Suite(
    Benchmark("race", name="Race", tasks=tasks, evaluators=(EvaluatorSpec("exact"),)),
    conditions=(Condition("c", CallableProvider(answer, pass_request=True)),),
    options=RunOptions(deterministic=True),
)
store = Store(store_path)
if me == "-":
    anyio.run(lambda: Runner(sinks=[store.prepare(suite, run_id="race").sink]).run(suite, run_id="race"))
    sys.exit(0)
prepared = store.prepare(suite, resume=True)
pathlib.Path(me).touch()  # both processes have read the run before either claims it
while not pathlib.Path(other).exists():
    time.sleep(0.01)
runner = Runner(sinks=[prepared.sink])
try:
    anyio.run(lambda: runner.run(suite, run_id=prepared.run_id, done=prepared.done))
except ConfigError as exc:
    print(exc)
    sys.exit(2)
"""


def test_two_resumes_of_one_crashed_run_never_both_proceed(tmp_path: Path) -> None:
    import subprocess
    import sys

    script, path, log = tmp_path / "resume.py", tmp_path / "s.db", tmp_path / "calls.log"
    script.write_text(_RESUMER)
    subprocess.run([sys.executable, str(script), str(path), "-", "-", str(log)], check=True)
    with sqlite3.connect(path) as db:  # crash it: four cells lost, its process gone
        db.execute("DELETE FROM cells WHERE task_id IN ('t1', 't3', 't5', 't7')")
        db.execute("UPDATE runs SET status = 'running', pid = ?", (_dead_pid(),))
    log.unlink()
    a, b = tmp_path / "a.ready", tmp_path / "b.ready"
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), str(me), str(other), str(log)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for me, other in ((a, b), (b, a))
    ]
    outcomes = [(proc.wait(60), proc.communicate()) for proc in procs]
    codes = sorted(code for code, _ in outcomes)
    assert codes == [0, 2], outcomes
    refused = next(out for code, (out, _) in outcomes if code == 2)
    winner = next(proc.pid for proc, (code, _) in zip(procs, outcomes, strict=True) if code == 0)
    assert f"run 'race' is being resumed by pid {winner} on host" in refused or (
        f"still running in process {winner}" in refused
    )
    assert sorted(log.read_text().split()) == ["t1", "t3", "t5", "t7"], outcomes  # each ran once
    with Store(path) as store:
        assert len(_cells(store, "race")) == 8


_OPENER = """
import sys, time
from benchkit.store import Store

path, start = sys.argv[1], float(sys.argv[2])
while time.time() < start:  # every process opens the new store at the same moment
    pass
with Store(path) as store:  # creates the store: one row in its reply cache
    store.cache_put(f"k{sys.argv[3]}", "{}")
"""


def test_processes_that_create_one_store_at_the_same_moment_all_open_it(
    tmp_path: Path,
) -> None:
    """Switching a new file to WAL mode fails at once, without SQLite's busy handler,
    while another process holds a lock on it; the switch is retried until the timeout."""
    import subprocess
    import sys
    import time

    script = tmp_path / "open.py"
    script.write_text(_OPENER)
    for round_ in range(6):
        path = tmp_path / f"s{round_}.db"
        start = time.time() + 1.0  # after every interpreter has started
        procs = [
            subprocess.Popen(
                [sys.executable, str(script), str(path), str(start), str(i)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(4)
        ]
        outcomes = [(proc.wait(60), *proc.communicate()) for proc in procs]
        assert all(code == 0 for code, _, _ in outcomes), outcomes
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert db.execute("SELECT COUNT(*) FROM llm_cache").fetchone() == (4,)


def test_listing_finished_runs_reads_no_cell(tmp_path: Path) -> None:
    """The runs list (rows and per-condition pass counts) costs the same whatever the size
    of the runs: a finished run's counts are the ones it stored when it finished (#30).
    An unfinished run (its counts NULL) is counted from its cells, and both agree."""
    path = tmp_path / "s.db"
    finished = benchkit.run(_suite(Counting(wrong={1}, failing={2}), n=6, epochs=2), store=path)
    other = benchkit.run(
        make_suite({"a": Counting(), "b": Counting(wrong={0, 3})}, n=4), store=path
    )
    reader = StoreReader(path)
    try:
        statements: list[str] = []
        reader._db().set_trace_callback(statements.append)
        rows, total = reader.runs()
        counts = reader.pass_counts([r.run_id for r in rows])
        assert total == 2
        assert not [s for s in statements if "FROM cells" in s], statements
        assert {r.run_id: (r.cells, r.errors) for r in rows} == {
            finished.run_id: (12, 2),
            other.run_id: (8, 0),
        }
        assert counts == {
            finished.run_id: {"c": (8, 12)},
            other.run_id: {"a": (4, 4), "b": (2, 4)},
        }
        with sqlite3.connect(path) as db:  # as a run that has not finished yet
            db.execute("UPDATE runs SET outcome = NULL, stored_cells = NULL, stored_errors = NULL")
        statements.clear()
        rows, _ = reader.runs()
        assert reader.pass_counts([r.run_id for r in rows]) == counts
        assert {r.run_id: (r.cells, r.errors) for r in rows}[finished.run_id] == (12, 2)
        assert [s for s in statements if "FROM cells" in s]
    finally:
        reader.close()


# -- how the writer meets the run (issue #30) ----------------------------------------------


def test_the_run_is_registered_on_the_calling_thread_when_the_store_is_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hops: list[object] = []
    real = anyio.to_thread.run_sync

    async def counted(func: object, *args: object, **kwargs: object) -> object:
        hops.append(func)
        return await real(func, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    result = benchkit.run(_suite(Counting(), n=8), store=tmp_path / "s.db")
    assert hops == []  # neither opening nor closing the sink went through a worker thread
    with Store(tmp_path / "s.db") as store:
        assert store.load(result.run_id) == result
        assert store.summary(result.run_id).status == "finished"


async def test_a_run_whose_store_is_locked_waits_for_the_lock_in_a_worker_thread(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    suite = _suite(Counting(), n=8)
    with Store(path) as store:
        prepared = store.prepare(suite)
        blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        blocker.execute("BEGIN IMMEDIATE")  # another process writing as the run opens
        released: list[bool] = []

        def release() -> None:
            released.append(True)
            blocker.execute("ROLLBACK")

        timer = threading.Timer(0.3, release)
        timer.start()
        try:
            result = await Runner(sinks=[prepared.sink]).run(suite, run_id=prepared.run_id)
        finally:
            timer.join()
            blocker.close()
        assert released == [True]  # the run registered once the lock was let go
        assert store.load(result.run_id) == result


def test_is_locked_tells_a_held_lock_from_other_errors(tmp_path: Path) -> None:
    """The one test every wait for the store's lock uses, on SQLite's real errors."""
    from benchkit.store._schema import is_locked

    path = tmp_path / "s.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        with pytest.raises(sqlite3.OperationalError) as held:
            other.execute("BEGIN IMMEDIATE")
        assert is_locked(held.value)
        with pytest.raises(sqlite3.OperationalError) as missing:
            other.execute("SELECT * FROM nowhere")
        assert not is_locked(missing.value)
        assert not is_locked(ValueError("locks are fine"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        other.close()


def test_a_full_batch_wakes_the_writer_before_its_wait_is_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_writer, "BATCH_WAIT", 60.0)  # gathering would outlast the test
    monkeypatch.setattr(_writer, "BATCH_MAX", 4)
    path = tmp_path / "s.db"
    seen: list[int] = []

    class WaitsForTheStore:
        """The ninth call waits until the first eight cells are stored."""

        def __init__(self) -> None:
            self.calls = 0

        async def invoke(self, request: Request) -> Response:
            self.calls += 1
            if self.calls == 9:
                for _ in range(3000):
                    with sqlite3.connect(path) as db:
                        (stored,) = db.execute("SELECT COUNT(*) FROM cells").fetchone()
                    if stored >= 8:
                        break
                    await anyio.sleep(0.01)
                seen.append(stored)
            return Response(output=str(request.task.input))

    result = benchkit.run(make_suite({"c": WaitsForTheStore()}, n=12, concurrency=1), store=path)
    assert seen and seen[0] >= 8  # two full batches were written while the run went on
    with Store(path) as store:  # and closing did not wait the gathering out either
        assert store.load(result.run_id) == result
