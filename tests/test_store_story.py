"""What the store keeps of a cell's story (issue #25): the run's task snapshot, transcripts,
re-runs as new attempts, people's ratings, the outputs matrix and full-text search."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import benchkit
from benchkit import Benchmark, Condition, EvaluatorSpec, LazyTasks, Runner, Suite, Task, transcript
from benchkit.errors import ConfigError
from benchkit.model import Request, Response
from benchkit.store import Rating, Store, _schema, _story

from ._support import make_suite, stored_run_stopped_after


class Recording:
    """Answers the task's input (wrong on every third call) and records what it did."""

    def __init__(self) -> None:
        self.calls = 0

    async def invoke(self, request: Request) -> Response:
        self.calls += 1
        transcript.record(
            "request",
            f"ask {request.task.id}",
            {"input": request.task.input, "headers": {"Authorization": "Bearer sk-secret-value-1"}},
        )
        answer = str(request.task.input) if self.calls % 3 else "wrong"
        transcript.record("response", "answered", answer, duration=0.01)
        return Response(output=answer)


class _Wrong:
    """Answers every task right but those in ``wrong``."""

    def __init__(self, wrong: set[str]) -> None:
        self.wrong = wrong

    async def invoke(self, request: Request) -> Response:
        return Response(output="nope" if request.task.id in self.wrong else request.task.expected)


def _rerun(
    store: Store, suite: Suite, run_id: str, *picked: tuple[str, str | None, int | None]
) -> None:
    prepared = store.prepare(suite, run_id=run_id, rerun=list(picked))

    async def go() -> None:
        await Runner(sinks=[prepared.sink]).run(suite, run_id=run_id, done=prepared.done)

    anyio.run(go)


def test_a_python_built_run_stores_its_tasks_once_each(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    tasks = [
        Task(f"t{i}", input={"q": i}, expected=str(i), tags=("math",), metadata={"n": i})
        for i in range(3)
    ]
    result = benchkit.run(
        make_suite({"a": Recording(), "b": Recording()}, tasks, epochs=2), store=path
    )
    with Store(path) as store:
        assert store.task(result.run_id, "t1") == {
            "id": "t1",
            "input": {"q": 1},
            "expected": "1",
            "tags": ["math"],
            "metadata": {"n": 1},
        }
        assert store.task(result.run_id, "nope") is None
    with sqlite3.connect(path) as db:  # once per task, not per cell (12 cells)
        assert db.execute("SELECT COUNT(*) FROM tasks").fetchone() == (3,)


def test_a_lazy_benchmark_is_snapshot_and_the_snapshot_survives_a_changed_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    made = [Task(f"t{i}", input=i, expected=str(i)) for i in range(4)]
    bench = Benchmark(
        "lazy", tasks=LazyTasks(lambda: iter(made), count=4), evaluators=[EvaluatorSpec("exact")]
    )
    suite = Suite(bench, conditions=[Condition("a", Recording())])
    result = benchkit.run(suite, store=path)
    made[2] = Task("t2", input="changed", expected="x")  # the source changes afterwards
    with Store(path) as store:
        assert store.task(result.run_id, "t2") == {"id": "t2", "input": 2, "expected": "2"}


def _snapshot(path: Path, run_id: str) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as db:
        return list(
            db.execute(
                "SELECT position, task_id FROM tasks WHERE run_id = ? ORDER BY position", (run_id,)
            )
        )


def _counted(n: int) -> tuple[Benchmark, list[int]]:
    """A lazy benchmark of ``n`` tasks and how many times its factory was called."""
    calls = [0]

    def tasks():  # type: ignore[no-untyped-def]
        calls[0] += 1
        for i in range(n):
            yield Task(f"t{i}", input=i, expected=str(i))

    bench = Benchmark("lazy", tasks=LazyTasks(tasks, count=n), evaluators=[EvaluatorSpec("exact")])
    return bench, calls


def test_the_snapshot_is_taken_from_the_tasks_the_run_made(tmp_path: Path) -> None:
    """A generator's tasks are made by the keys pass and by the run, not a third time for
    the snapshot (issue #30: it was most of the store's cost a cell)."""
    path = tmp_path / "s.db"
    bench, calls = _counted(300)
    suite = Suite(
        bench, conditions=[Condition("a", Recording())], options=benchkit.RunOptions(epochs=2)
    )
    result = benchkit.run(suite, store=path)
    assert calls[0] == 2  # Store.prepare's keys pass, the run
    assert _snapshot(path, result.run_id) == [(i, f"t{i}") for i in range(300)]
    with Store(path) as store:
        assert store.task(result.run_id, "t299") == {"id": "t299", "input": 299, "expected": "299"}


def test_an_interrupted_run_snapshots_the_tasks_it_did_not_reach(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    bench, _ = _counted(50)
    suite = Suite(
        bench, conditions=[Condition("a", Recording())], options=benchkit.RunOptions(concurrency=1)
    )
    with Store(path) as store:
        run_id, partial = stored_run_stopped_after(store, suite, 3)
    assert partial.interrupted and len(partial.cells) == 3 and partial.not_run == 47
    assert _snapshot(path, run_id) == [(i, f"t{i}") for i in range(50)]
    # resumed: the snapshot is taken again, whole, from the resumed run's tasks
    resumed = benchkit.run(suite, store=path, resume=True)
    assert resumed.run_id == run_id and len(resumed.cells) == 50
    assert _snapshot(path, run_id) == [(i, f"t{i}") for i in range(50)]


class _Peeking:
    """Answers right, and on its first call reads the run's snapshot from another
    connection, as the explorer does while the run goes on."""

    def __init__(self, path: Path, run_id: str) -> None:
        self.path, self.run_id = path, run_id
        self.seen: list[tuple[int, str]] | None = None

    async def invoke(self, request: Request) -> Response:
        if self.seen is None:
            self.seen = _snapshot(self.path, self.run_id)
        return Response(output=request.task.expected)


def test_a_resumed_run_keeps_showing_every_task(tmp_path: Path) -> None:
    """While a run is resumed its snapshot stays whole: the explorer shows a task the
    resumed run has not reached yet (the snapshot was emptied when a resume claimed it,
    so its cell pages answered 404 until the run reached the task)."""
    path = tmp_path / "s.db"
    bench, _ = _counted(50)
    one = benchkit.RunOptions(concurrency=1)
    with Store(path) as store:
        run_id, _ = stored_run_stopped_after(
            store, Suite(bench, conditions=[Condition("a", Recording())], options=one), 3
        )
    peeking = _Peeking(path, run_id)
    resumed = benchkit.run(
        Suite(bench, conditions=[Condition("a", peeking)], options=one),
        store=path,
        resume=True,
        run_id=run_id,
    )
    assert resumed.run_id == run_id and len(resumed.cells) == 50
    assert peeking.seen == [(i, f"t{i}") for i in range(50)]
    assert _snapshot(path, run_id) == [(i, f"t{i}") for i in range(50)]


def test_a_run_resumed_with_changed_tasks_snapshots_the_new_ones(tmp_path: Path) -> None:
    """Tasks gone, new, moved or edited since the run started: after the resume the
    snapshot holds the resumed benchmark's tasks exactly, each at its new position."""
    path = tmp_path / "s.db"
    old = [Task(f"t{i}", input=i, expected=str(i)) for i in range(10)]
    suite = make_suite({"a": Recording()}, old)
    first = benchkit.run(suite, store=path)
    new = [
        old[0],
        Task("t1", input="edited", expected="1"),
        old[9],  # moved up
        Task("n1", input="new", expected="n"),
        old[4],
    ]
    resumed = benchkit.run(
        make_suite({"a": Recording()}, new), store=path, resume=True, run_id=first.run_id
    )
    assert {c.task_id for c in resumed.cells} == {"t0", "t1", "t9", "n1", "t4"}
    assert _snapshot(path, first.run_id) == [(0, "t0"), (1, "t1"), (2, "t9"), (3, "n1"), (4, "t4")]
    with Store(path) as store:
        assert store.task(first.run_id, "t1") == {"id": "t1", "input": "edited", "expected": "1"}
        assert store.task(first.run_id, "t5") is None


def test_a_run_that_picks_its_tasks_snapshots_them_in_the_benchmarks_order(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    tasks = [Task(f"q{i}", input=i, expected="yes") for i in range(200)]
    suite = Suite(
        Benchmark("decide", tasks=tasks, evaluators=[EvaluatorSpec("exact")]),
        conditions=[
            Condition("base", benchkit.CallableProvider(lambda r: "no", pass_request=True)),
            Condition("tuned", benchkit.CallableProvider(lambda r: "yes", pass_request=True)),
        ],
        options=benchkit.RunOptions(until_decided=True, seed=4),
    )
    result = benchkit.run(suite, store=path)
    assert result.early_stop is not None and result.early_stop.stopped
    assert len({c.task_id for c in result.cells}) < 200
    assert _snapshot(path, result.run_id) == [(i, f"q{i}") for i in range(200)]


def test_a_sink_not_shown_the_tasks_snapshots_them_from_the_benchmark(tmp_path: Path) -> None:
    """``see_task`` is optional: a store sink driven without it (here behind a wrapper that
    has only open, write and close) writes the whole snapshot when the run ends."""
    path = tmp_path / "s.db"
    bench, calls = _counted(20)
    suite = Suite(bench, conditions=[Condition("a", Recording())])

    class Plain:
        def __init__(self, sink: benchkit.ResultSink) -> None:
            self.sink = sink

        async def open(self, info: benchkit.RunInfo) -> None:
            await self.sink.open(info)

        async def write(self, cell: benchkit.CellResult) -> None:
            await self.sink.write(cell)

        async def close(self, result: benchkit.RunResult) -> None:
            await self.sink.close(result)

    with Store(path) as store:
        prepared = store.prepare(suite)
        anyio.run(lambda: Runner(sinks=[Plain(prepared.sink)]).run(suite, run_id=prepared.run_id))
    assert calls[0] == 3  # the keys pass, the run, the snapshot
    assert _snapshot(path, prepared.run_id) == [(i, f"t{i}") for i in range(20)]


def test_transcripts_are_stored_with_the_cell_bounded_and_without_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_API_KEY", "env-secret-123456")
    path = tmp_path / "s.db"

    class Talkative(Recording):
        async def invoke(self, request: Request) -> Response:
            transcript.record("note", "key", f"uses env-secret-123456 and {'x' * 10_000}")
            return await super().invoke(request)

    result = benchkit.run(make_suite({"a": Talkative()}, n=2), store=path)
    with Store(path) as store:
        found = store.transcript(result.run_id, "t0", "a", 0)
    assert found is not None
    assert [e.kind for e in found.events] == ["note", "request", "response"]
    assert found.truncated and "…[truncated" in found.events[0].data
    text = json.dumps(found.to_dict())
    assert "env-secret-123456" not in text and "sk-secret-value-1" not in text
    assert "[redacted]" in text and found.events[1].data["input"] == 0
    assert found.events[2].duration == pytest.approx(0.01)
    assert found.bytes < 6000
    with sqlite3.connect(path) as db:  # not part of the cell's JSON
        (data,) = db.execute("SELECT data FROM cells WHERE task_id = 't0'").fetchone()
        assert "transcript" not in json.loads(data)


def test_a_cell_that_records_nothing_stores_no_transcript(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    result = benchkit.run(
        make_suite({"a": benchkit.MockProvider(outputs={"t0": "0", "t1": "1"})}, n=2), store=path
    )
    with Store(path) as store:
        assert store.transcript(result.run_id, "t0", "a", 0) is None
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM transcripts").fetchone() == (0,)


def test_a_transcript_keeps_at_most_its_bounds() -> None:
    with transcript.recording() as recorder:
        for i in range(transcript.MAX_EVENTS + 20):
            transcript.record("note", f"event {i}")
    found = recorder.transcript()
    assert found is not None and found.truncated
    assert len(found.events) == transcript.MAX_EVENTS + 1
    assert found.events[-1].title == "…[truncated: 20 more event(s) not kept]"
    transcript.record("note", "outside a cell: nothing happens")


def test_rerun_keeps_the_old_attempt_and_statistics_use_the_latest(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    provider = Recording()  # calls 3, 6, ... answer wrong (one at a time: in cell order)
    suite = make_suite({"a": provider, "b": provider}, n=3, concurrency=1)
    first = benchkit.run(suite, store=path, run_id="r1")
    wrong = {(c.task_id, c.condition_id) for c in first.cells if c.status == "fail"}
    assert wrong == {("t1", "a"), ("t2", "b")}
    with Store(path) as store:
        _rerun(store, suite, "r1", ("t1", None, None))  # task t1, both conditions
        attempts = store.cell_attempts("r1", "t1", "a", 0)
        assert [c.status for c in attempts] == ["fail", "pass"]
        assert len(store.cell_attempts("r1", "t1", "b", 0)) == 2
        assert len(store.cell_attempts("r1", "t0", "a", 0)) == 1
        loaded = store.load("r1")
        assert loaded.aggregate("a").passed == 3  # the latest attempt counts
        assert len(loaded.cells) == 6
        old = store.transcript("r1", "t1", "a", 0, attempt=0)
        new = store.transcript("r1", "t1", "a", 0)
        assert old is not None and new is not None and old.events[-1].data == "wrong"
        assert new.events[-1].data == "1"
        _rerun(store, suite, "r1", ("t2", "b", 0))  # one cell
        assert len(store.cell_attempts("r1", "t2", "b", 0)) == 2
        assert len(store.cell_attempts("r1", "t2", "a", 0)) == 1
        page = store.matrix("r1")
        row = next(r for r in page["rows"] if r["task_id"] == "t1")
        assert row["cells"]["a"]["attempt"] == 1 and row["cells"]["b"]["attempt"] == 1
        with pytest.raises(ConfigError, match="needs the run's id"):
            store.prepare(suite, rerun=[("t1", None, None)])


def test_ratings_are_stored_replaced_exported_and_given_as_labels(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    result = benchkit.run(make_suite({"a": Recording(), "b": Recording()}, n=3), store=path)
    rid = result.run_id
    with Store(path) as store:
        first = store.rate(rid, "t1", "a", 0, rater="ana", verdict=True, comment="fine")
        assert isinstance(first, Rating) and first.attempt == 0 and first.created.endswith("Z")
        store.rate(rid, "t1", "a", 0, rater="ana", verdict=False, comment="on second look")
        store.rate(rid, "t2", "b", 0, rater="bo", score=0.25)
        found = store.ratings(rid)
        assert [(r.task, r.rater, r.verdict, r.score) for r in found] == [
            ("t1", "ana", False, None),
            ("t2", "bo", None, 0.25),
        ]
        assert store.rating_labels(rid) == {("t1", "a", 0): False, ("t2", "b", 0): 0.25}
        assert store.rating_labels(rid, rater="bo") == {("t2", "b", 0): 0.25}
        for bad, match in (
            ({"verdict": None, "score": None}, "verdict .* or a score"),
            ({"score": 1.5}, r"\[0, 1\]"),
            ({"verdict": True, "rater": " "}, "rater"),
        ):
            kwargs = {"rater": "ana", **bad}
            with pytest.raises(ConfigError, match=match):
                store.rate(rid, "t1", "a", 0, **kwargs)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="has no cell"):
            store.rate(rid, "t9", "a", 0, rater="ana", verdict=True)
        out = io.StringIO()
        store.export(rid, out, format="jsonl")
        lines = [json.loads(line) for line in out.getvalue().splitlines()]
        assert [line["rating"]["rater"] for line in lines if "rating" in line] == ["ana", "bo"]
        out = io.StringIO()
        store.export(rid, out, format="json")
        assert [r["comment"] for r in json.loads(out.getvalue())["ratings"]] == [
            "on second look",
            "",
        ]
        assert store.unrate(rid, "t1", "a", 0, "ana") and not store.unrate(rid, "t1", "a", 0, "ana")
        assert store.delete(rid) == 6
    with sqlite3.connect(path) as db:
        for table in ("tasks", "transcripts", "ratings", "cell_attempts"):
            assert db.execute(f"SELECT COUNT(*) FROM {table}").fetchone() == (0,), table


def test_the_matrix_pages_and_filters_in_sql(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    tasks = [
        Task(f"t{i}", input=f"question number {i}", expected=str(i), tags=("odd",) if i % 2 else ())
        for i in range(6)
    ]
    result = benchkit.run(
        make_suite({"a": _Wrong({"t1", "t4"}), "b": _Wrong({"t4"})}, tasks, epochs=2), store=path
    )
    rid = result.run_id
    with Store(path) as store:
        page = store.matrix(rid, limit=2)
        assert page["columns"] == ["a", "b"] and page["total"] == 6
        assert [r["task_id"] for r in page["rows"]] == ["t0", "t1"]
        assert store.matrix(rid, offset=4, limit=10)["rows"][-1]["task_id"] == "t5"
        cell = page["rows"][0]["cells"]["a"]
        assert cell["status"] in ("pass", "fail") and cell["epoch"] == 0
        assert page["rows"][0]["input"] == "question number 0"
        fails = {c.task_id for c in result.cells if c.status == "fail" and c.epoch == 0}
        failures = store.matrix(rid, only="failures", limit=50)
        assert {r["task_id"] for r in failures["rows"]} == fails
        assert fails == {"t1", "t4"}
        disagree = store.matrix(rid, only="disagree", limit=50)
        assert [r["task_id"] for r in disagree["rows"]] == ["t1"]  # t4 fails in both arms
        assert disagree["rows"][0]["disagree"] and disagree["total"] == 1
        assert store.matrix(rid, tag="odd")["total"] == 3
        by_epoch = store.matrix(rid, by="epoch", condition="b")
        assert by_epoch["columns"] == ["epoch 0", "epoch 1"]
        assert set(by_epoch["rows"][0]["cells"]) == {"epoch 0", "epoch 1"}
        store.rate(rid, "t3", "a", 0, rater="ana", verdict=True)
        rated = store.matrix(rid, rated="yes")
        assert [r["task_id"] for r in rated["rows"]] == ["t3"]
        assert rated["rows"][0]["cells"]["a"]["rating"]["rater"] == "ana"
        assert store.matrix(rid, rated="no")["total"] == 5
        assert [r["task_id"] for r in store.matrix(rid, q="number 4")["rows"]] == ["t4"]
        assert store.matrix(rid, q="nothing-like-this")["total"] == 0


def test_search_finds_inputs_outputs_and_reasons_and_follows_new_cells(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    tasks = [
        Task("cat", input="the cat sat", expected="cat"),
        Task("dog", input="a dog ran", expected="dog"),
    ]
    provider = benchkit.MockProvider(outputs={"cat": "a feline answer", "dog": "dog"})
    first = benchkit.run(make_suite({"a": provider}, tasks), store=path)
    with Store(path) as store:
        results, total = store.search("feline")
        assert total == 1 and results[0]["task_id"] == "cat" and "[feline]" in results[0]["snippet"]
        assert store.search("dog", run_id=first.run_id)[1] == 1
        assert store.search("fel")[1] == 1  # the last word is a prefix
        assert store.search('"quoted" OR NOT')[1] == 0  # FTS5 syntax is plain words
        with pytest.raises(ConfigError, match="empty"):
            store.search("  ")
    second = benchkit.run(make_suite({"a": provider}, tasks), store=path)
    with Store(path) as store:
        assert store.search("feline")[1] == 2
        assert store.search("feline", run_id=second.run_id)[1] == 1
        store.delete(second.run_id)
        assert store.search("feline")[1] == 1


def test_schema_4_stores_migrate_to_5(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    result = benchkit.run(make_suite({"a": Recording()}, n=2), store=path)
    with sqlite3.connect(path) as db:
        for table in ("tasks", "transcripts", "cell_attempts", "ratings"):
            db.execute(f"DROP TABLE {table}")
        db.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    with Store(path) as store:
        assert store.task(result.run_id, "t0") is None  # stored before tasks were
        assert store.ratings(result.run_id) == []
        assert store.load(result.run_id) == result
    with sqlite3.connect(path) as db:
        version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert version == (str(_schema.SCHEMA_VERSION),) == ("7",)


def test_a_retried_cell_replaces_its_transcript(tmp_path: Path) -> None:
    path = tmp_path / "s.db"

    class FailsOnce:
        def __init__(self) -> None:
            self.seen: set[str] = set()

        async def invoke(self, request: Request) -> Response:
            first = request.task.id not in self.seen
            self.seen.add(request.task.id)
            transcript.record("note", "first call" if first else "second call")
            if first and request.task.id == "t1":
                raise RuntimeError("flaky")
            return Response(output=str(request.task.input))

    provider = FailsOnce()
    suite = make_suite({"a": provider}, n=3)
    first = benchkit.run(suite, store=path)
    assert first.aggregate("a").errors == 1
    with Store(path) as store:
        found = store.transcript(first.run_id, "t1", "a", 0)
        assert found is not None and [e.kind for e in found.events] == ["note", "error"]
    again = benchkit.run(suite, store=path, retry_errors=True)
    assert again.run_id == first.run_id and again.aggregate("a").errors == 0
    with Store(path) as store:
        found = store.transcript(first.run_id, "t1", "a", 0)
        assert found is not None and [e.title for e in found.events] == ["second call"]
        assert store.task(first.run_id, "t2") is not None


def test_runs_show_cell_prints_the_task_verdict_and_transcript(tmp_path: Path) -> None:
    from ._support import one_paragraph_error
    from .test_store_cli import run_cli

    path = tmp_path / "s.db"
    suite = make_suite({"a": Recording()}, n=3)
    benchkit.run(suite, store=path, run_id="r1")
    with Store(path) as store:
        _rerun(store, suite, "r1", ("t2", "a", 0))
    shown = run_cli("runs", "show", "r1", "--store", str(path), "--cell", "t2/a/0", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("cell t2/a/0 of run r1 · attempt 1 of 2 · ")
    assert "  input:    2" in lines and "  expected: 2" in lines
    assert any(" request " in line and "ask t2" in line for line in lines)
    assert "[redacted]" in shown.stdout and "sk-secret-value-1" not in shown.stdout
    as_json = run_cli(
        "runs",
        "show",
        "r1",
        "--store",
        str(path),
        "--cell",
        "t2/a",
        "--attempt",
        "0",
        "-f",
        "json",
        cwd=tmp_path,
    )
    record = json.loads(as_json.stdout)
    assert (record["attempt"], record["attempts"], record["task"]["id"]) == (0, 2, "t2")
    assert [e["kind"] for e in record["transcript"]["events"]] == ["request", "response"]
    missing = run_cli("runs", "show", "r1", "--store", str(path), "--cell", "t9/a/0", cwd=tmp_path)
    assert "has no cell t9/a/0" in one_paragraph_error(missing)
    bad = run_cli("runs", "show", "r1", "--store", str(path), "--cell", "t2", cwd=tmp_path)
    assert "TASK/CONDITION[/EPOCH]" in one_paragraph_error(bad)


def test_without_fts5_search_says_so_and_the_other_filters_still_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchkit.errors import StoreError
    from benchkit.store import _story

    path = tmp_path / "s.db"
    result = benchkit.run(make_suite({"a": _Wrong({"t1"})}, n=3), store=path)
    monkeypatch.setattr(_story, "fts5_available", lambda db: False)
    with Store(path) as store:
        with pytest.raises(StoreError, match="no FTS5") as caught:
            store.search("anything")
        assert "the matrix's other filters work" in (caught.value.fix or "")
        with pytest.raises(StoreError, match="no FTS5"):
            store.matrix(result.run_id, q="anything")
        assert store.matrix(result.run_id, only="failures")["total"] == 1
    assert Store(tmp_path / "none.db").search("x") == ([], 0)
    assert not (tmp_path / "none.db").exists()


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    input=_JSON,
    expected=_JSON,
    tags=st.lists(st.text(), max_size=2),
    description=st.none() | st.text(),
    metadata=st.dictionaries(st.text(), _JSON | st.tuples(st.integers()), max_size=2),
)
def test_the_snapshot_rows_are_the_snapshot_encoders_text(
    input: object,
    expected: object,
    tags: list[str],
    description: str | None,
    metadata: dict[str, Any],
) -> None:
    """task_rows uses the snapshot's C encoder built once: the same text as encoding each
    task with ``_SNAPSHOT_ENCODER`` (floats' repr, NaN, non-ASCII kept, tuples as lists)."""
    task = Task(
        "t\u00e9",
        input=input,
        expected=expected,
        tags=tags,
        description=description,
        metadata=metadata,
    )
    bench = Benchmark("b", tasks=[task, Task("u")], evaluators=[EvaluatorSpec("exact")])
    rows = list(_story.task_rows("r", enumerate(bench.iter_tasks())))
    assert [row[:3] for row in rows] == [("r", "t\u00e9", 0), ("r", "u", 1)]
    assert [row[3] for row in rows] == [
        _story._SNAPSHOT_ENCODER.encode(_story.task_snapshot(t)) for t in bench.iter_tasks()
    ]
