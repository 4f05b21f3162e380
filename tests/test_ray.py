"""The Ray executor against a real local Ray cluster (2 CPUs, no dashboard), one per module.

Providers are named by spec (``tests._ray_support:NAME``) and built on the workers, as a
benchmark file's would be; the driver (this process) records every cell.
"""

from __future__ import annotations

import collections
import itertools
import os
import signal
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import benchkit
from benchkit import (
    Benchmark,
    CellResult,
    Condition,
    EvaluatorSpec,
    ProviderSpec,
    RunInfo,
    RunOptions,
    RunResult,
    Suite,
    Task,
)
from benchkit.errors import ConfigError

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray instance for this module; yields its GCS address for other drivers."""
    previous = os.environ.get("PYTHONPATH")
    # Workers import tests._ray_support by name, like a user's own package.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), previous) if p)
    # A small object store: the tests move kilobytes, and the machine is shared.
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="warning",
        object_store_memory=128 * 2**20,
    )
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()
        if previous is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = previous


def spec(name: str) -> ProviderSpec:
    return ProviderSpec("python", {"callable": f"tests._ray_support:{name}", "pass_request": True})


class ListSink:
    """Keeps every cell written to it, in order, and whether it was opened."""

    def __init__(self) -> None:
        self.opened = False
        self.cells: list[CellResult] = []

    async def open(self, info: RunInfo) -> None:
        self.opened = True

    async def write(self, cell: CellResult) -> None:
        self.cells.append(cell)

    async def close(self, result: RunResult) -> None:
        pass


def seeded_suite(tasks: int = 12) -> Suite:
    bench = Benchmark(
        "seeded",
        tasks=[Task(f"t{i}", input=i, expected=str(i)) for i in range(tasks)],
        evaluators=[EvaluatorSpec("exact")],
    )
    return Suite(
        bench,
        conditions=[Condition("a", spec("seeded")), Condition("b", spec("seeded"))],
        options=RunOptions(epochs=2, seed=7, deterministic=True),
    )


def run(suite: Suite, executor: Any = None, **kwargs: Any) -> RunResult:
    runner = benchkit.Runner(executor=executor, **kwargs)
    return anyio.run(runner.run, suite)


def test_same_cells_on_ray_as_in_process(cluster: str) -> None:
    suite = seeded_suite()
    local = run(suite)
    remote = run(suite, benchkit.RayExecutor(workers=2))
    assert len(remote.cells) == 12 * 2 * 2
    assert remote.cells == local.cells  # deterministic: timings are zero, all else equal
    assert {c.status for c in remote.cells} == {"pass", "fail"}
    assert remote.aggregates == local.aggregates
    assert remote.info == local.info


def test_results_come_back_as_they_finish_and_reach_the_sinks(cluster: str) -> None:
    sink = ListSink()
    seen: list[int] = []
    runner = benchkit.Runner(
        sinks=[sink],
        progress=lambda p: seen.append(p.done),
        executor=benchkit.RayExecutor(workers=2, concurrency_per_worker=2),
    )

    async def main() -> list[CellResult]:
        got = []
        async with runner.stream(seeded_suite(4)) as cells:
            async for cell in cells:
                got.append(cell)
        assert cells.result is not None and not cells.result.interrupted
        return got

    streamed = anyio.run(main)
    assert len(streamed) == 16 and sink.cells == streamed
    assert len(seen) == 16 and max(seen) == 16  # one progress event per cell


def test_trio_driver(cluster: str) -> None:
    suite = seeded_suite(3)
    runner = benchkit.Runner(executor=benchkit.RayExecutor(workers=1))
    result = anyio.run(runner.run, suite, backend="trio")
    assert result.cells == run(suite).cells


def test_a_killed_worker_s_cells_run_again_elsewhere(cluster: str, tmp_path: Path) -> None:
    tasks = [
        Task(f"t{i}", input={"dir": str(tmp_path), "victim": i == 3}, expected=None)
        for i in range(10)
    ]
    suite = Suite(Benchmark("kill", tasks=tasks), conditions=[Condition("c", spec("whoami"))])
    sink = ListSink()
    marker = tmp_path / "victim"
    killed: list[int] = []

    async def killer() -> None:
        while not marker.exists() or not marker.read_text():
            await anyio.sleep(0.05)
        killed.append(int(marker.read_text()))
        os.kill(killed[0], signal.SIGKILL)

    async def main() -> RunResult:
        runner = benchkit.Runner(sinks=[sink], executor=benchkit.RayExecutor(workers=2))
        async with anyio.create_task_group() as tg:
            tg.start_soon(killer)
            result = await runner.run(suite)
        return result  # noqa: RET504 - out of the task group, which may swallow a raise

    result = anyio.run(main)
    counts = collections.Counter(c.key for c in sink.cells)
    assert sorted(counts) == sorted(("t" + str(i), "c", 0) for i in range(10))
    assert set(counts.values()) == {1}  # nothing lost, nothing recorded twice
    assert all(c.status == "pass" for c in result.cells)
    victim = next(c for c in result.cells if c.task_id == "t3")
    assert victim.response is not None and victim.response.output != killed[0]


def test_a_cell_that_keeps_crashing_its_worker_is_an_error_and_the_run_goes_on(
    cluster: str,
) -> None:
    tasks = [Task(f"t{i}", input="crash" if i == 1 else f"ok{i}") for i in range(5)]
    suite = Suite(
        Benchmark("crash", tasks=tasks),
        conditions=[Condition("c", spec("crash"))],
    )
    result = run(suite, benchkit.RayExecutor(workers=2, max_attempts=2))
    by_task = {c.task_id: c for c in result.cells}
    assert len(by_task) == 5 and not result.interrupted
    crashed = by_task["t1"]
    assert (crashed.status, crashed.error_category, crashed.attempts) == ("error", "worker_lost", 2)
    assert crashed.error is not None and "died 2 times" in crashed.error
    assert all(by_task[f"t{i}"].status == "pass" for i in (0, 2, 3, 4))


def test_a_provider_that_cannot_be_built_on_the_worker_stops_the_run(cluster: str) -> None:
    suite = Suite(
        Benchmark("bad", tasks=[Task("t", input=1)]),
        conditions=[Condition("c", ProviderSpec("python", {"callable": "tests.nope:nothing"}))],
    )
    with pytest.raises(ConfigError, match=r"cannot import callable 'tests\.nope:nothing'"):
        run(suite, benchkit.RayExecutor(workers=1))


def closure_suite() -> Suite:
    seen: list[str] = []

    def remember(text: str) -> str:
        seen.append(text)
        return text

    return Suite(
        Benchmark("c", tasks=[Task("t", input="x", expected="x")]),
        conditions=[Condition("local", benchkit.CallableProvider(remember))],
    )


def test_a_closure_over_local_state_is_refused_before_the_run() -> None:
    sink = ListSink()
    with pytest.raises(
        ConfigError, match=r"condition 'local'.*cannot travel to Ray workers"
    ) as err:
        run(closure_suite(), benchkit.RayExecutor(), sinks=[sink])
    assert "ProviderSpec" in str(err.value)
    assert not sink.opened  # refused before anything opened, let alone ran


def test_benchkit_run_refuses_before_the_store_records_a_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with pytest.raises(ConfigError, match="cannot travel"):
        benchkit.run(closure_suite(), store=db, executor=benchkit.RayExecutor())
    with benchkit.Store(db) as store:
        assert store.runs() == []


def test_a_module_level_function_travels(cluster: str) -> None:
    from tests import _ray_support

    suite = Suite(
        Benchmark(
            "m", tasks=[Task("t", input="x", expected="x")], evaluators=[EvaluatorSpec("exact")]
        ),
        conditions=[
            Condition("c", benchkit.CallableProvider(_ray_support.crash, pass_request=True))
        ],
    )
    result = run(suite, benchkit.RayExecutor(workers=1))
    assert [c.status for c in result.cells] == ["pass"]


def test_a_run_on_ray_stores_its_tasks_and_the_workers_transcripts(
    cluster: str, tmp_path: Path
) -> None:
    from benchkit.store import Store

    suite = Suite(
        Benchmark(
            "r",
            tasks=[Task(f"t{i}", input=i, expected=str(i)) for i in range(3)],
            evaluators=[EvaluatorSpec("exact")],
        ),
        conditions=[Condition("c", spec("recording"))],
    )
    db = tmp_path / "s.db"
    result = benchkit.run(suite, store=db, executor=benchkit.RayExecutor(workers=1))
    with Store(db) as store:
        assert store.task(result.run_id, "t2") == {"id": "t2", "input": 2, "expected": "2"}
        found = store.transcript(result.run_id, "t1", "c", 0)
    assert found is not None
    (event,) = found.events
    assert event.data == {"input": 1} and event.title != f"on pid {os.getpid()}"


def test_import_benchkit_does_not_import_ray() -> None:
    import subprocess

    # sniffio blocked too: it is trio's dependency, not one of benchkit's.
    code = (
        "import sys; sys.modules['sniffio'] = None; import benchkit; benchkit.RayExecutor; "
        "print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


SLOW_YAML = """\
benchkit: 1
id: slow
evaluators: [exact]
conditions:
  - id: c
    provider: {type: python, callable: "tests._ray_support:slow"}
tasks:
"""


def test_an_interrupted_then_killed_driver_s_run_is_finished_by_resume(
    cluster: str, tmp_path: Path
) -> None:
    """Ctrl-C stops a Ray run gracefully; the resumed run's driver is killed outright; a
    last resume, in-process this time, finishes it — one run in the store, every cell once."""
    import sqlite3
    import subprocess
    import time

    total = 40
    bench = tmp_path / "slow.yaml"
    lines = [f'  - {{id: t{i}, input: "{i}", expected: "{i}"}}' for i in range(total)]
    bench.write_text(SLOW_YAML + "\n".join(lines) + "\n")
    db = tmp_path / "runs.db"
    command = [sys.executable, "-m", "benchkit", "run", str(bench), "--store", str(db)]
    command += ["--executor", "ray", "--ray-address", cluster, "--workers", "2", "--no-progress"]

    def stored() -> int:
        if not db.exists():
            return 0
        with sqlite3.connect(db) as conn:
            try:
                return int(conn.execute("SELECT count(*) FROM cells").fetchone()[0])
            except sqlite3.OperationalError:  # not created yet
                return 0

    def start_and_stop(extra: list[str], at_least: int, sig: int) -> subprocess.Popen[str]:
        driver = subprocess.Popen(
            [*command, *extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 120
        while stored() < at_least and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        driver.send_signal(sig)
        return driver

    interrupted = start_and_stop([], 3, signal.SIGINT)
    _, err = interrupted.communicate(timeout=120)
    assert interrupted.returncode == 130, err
    assert "interrupted: signal;" in err and "to continue it: " in err
    assert "--resume" in err.split("to continue it: ", 1)[1]
    first = stored()
    assert 3 <= first < total

    killed = start_and_stop(["--resume"], first + 3, signal.SIGKILL)
    killed.communicate(timeout=120)
    second = stored()
    assert first + 3 <= second < total  # the resume ran more cells before it was killed

    result = benchkit.run(bench, store=db, resume=True)  # locally: the store is the same
    with benchkit.Store(db) as store:
        (summary,) = store.runs()
        loaded = store.load(result.run_id)
    assert summary.run_id == result.run_id  # the same run, finished
    assert sorted(c.task_id for c in loaded.cells) == sorted(f"t{i}" for i in range(total))
    assert all(c.status == "pass" for c in loaded.cells) and stored() == total


def test_the_demo_benchmark_runs_its_skill_and_file_provider_on_the_workers(cluster: str) -> None:
    demo = ROOT / "benchmarks" / "demo" / "benchmark.yaml"
    local = benchkit.run(demo, store=False, deterministic=True)
    remote = benchkit.run(
        demo, store=False, deterministic=True, executor=benchkit.RayExecutor(workers=2)
    )
    assert remote.cells == local.cells
    assert {a.condition_id for a in remote.aggregates} == {"calculator", "mental-math"}
    assert any(c.status == "pass" for c in remote.cells)


def test_cli_refuses_ray_options_without_the_ray_executor(tmp_path: Path) -> None:
    import subprocess

    demo = ROOT / "benchmarks" / "demo" / "benchmark.yaml"
    out = subprocess.run(
        [sys.executable, "-m", "benchkit", "run", str(demo), "--workers", "2", "--no-store"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 2
    assert "add --executor ray" in out.stderr and "Traceback" not in out.stderr


def test_leaving_the_stream_early_stops_the_run_and_keeps_what_finished(cluster: str) -> None:
    sink = ListSink()
    runner = benchkit.Runner(sinks=[sink], executor=benchkit.RayExecutor(workers=2))

    async def main() -> RunResult | None:
        async with runner.stream(seeded_suite(20)) as cells:
            async for _cell in cells:
                if len(sink.cells) >= 3:
                    break
        return cells.result

    result = anyio.run(main)
    assert result is not None and result.interrupted
    assert 3 <= len(result.cells) < 80 and result.not_run == 80 - len(result.cells)
    assert all(c in result.cells for c in sink.cells)  # what reached the sinks is kept


WHERE_YAML = """\
benchkit: 1
id: where
conditions:
  - id: c
    provider: {type: python, file: where.py, function: where}
tasks:
  - {id: t, input: x}
"""


def test_ship_files_runs_the_workers_in_a_copy_of_the_benchmark_s_directory(
    cluster: str, tmp_path: Path
) -> None:
    (tmp_path / "where.py").write_text(
        "import os\n\ndef where(_):\n    return os.path.dirname(os.path.abspath(__file__))\n"
    )
    (tmp_path / "bench.yaml").write_text(WHERE_YAML)
    suite = benchkit.load(tmp_path / "bench.yaml")
    here = run(suite, benchkit.RayExecutor(workers=1))
    shipped = run(suite, benchkit.RayExecutor(workers=1, ship_files=True))
    assert [c.status for c in shipped.cells] == ["pass"]
    assert here.cells[0].response is not None and shipped.cells[0].response is not None
    assert here.cells[0].response.output == str(tmp_path)  # the same path, no copy
    copy = Path(shipped.cells[0].response.output)
    assert copy != tmp_path and (copy / "bench.yaml").read_text() == WHERE_YAML


def test_ship_files_needs_a_directory() -> None:
    with pytest.raises(ConfigError, match="ship_files=True sends the suite's directory"):
        run(seeded_suite(1), benchkit.RayExecutor(ship_files=True))


def test_skillvault_bundles_and_command_verifiers_run_from_the_shipped_copy(cluster: str) -> None:
    suite = benchkit.load(ROOT / "benchmarks" / "skillvault-bench-v0" / "bench.yaml")
    suite = suite.with_options(deterministic=True)
    local = run(suite)
    shipped = run(suite, benchkit.RayExecutor(workers=2, ship_files=True))
    assert shipped.cells == local.cells  # artifacts paths come back as the driver's
    assert {"cites_issues", "stays_short"} <= {c.task_id for c in shipped.cells}  # commands
    assert {c.status for c in shipped.cells} == {"pass", "fail"}


def test_a_condition_s_concurrency_cap_holds_across_the_cluster(cluster: str) -> None:
    tasks = [Task(f"t{i}", input=i) for i in range(6)]
    capped = Condition("capped", spec("span"), concurrency=1)
    suite = Suite(Benchmark("cap", tasks=tasks), conditions=[capped])
    result = run(suite, benchkit.RayExecutor(workers=2, concurrency_per_worker=2))
    spans = sorted(c.response.output for c in result.cells if c.response is not None)
    assert len(spans) == 6
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))  # never two at once


def test_an_mcp_provider_keeps_one_session_per_worker(cluster: str) -> None:
    server = [sys.executable, str(ROOT / "tests" / "mcp_servers" / "tools_server.py")]
    options = {"command": server, "tool": "pid", "arguments": {}, "output": "json"}
    suite = Suite(
        Benchmark("mcp", tasks=[Task(f"t{i}", input={}) for i in range(8)]),
        conditions=[Condition("c", ProviderSpec("mcp", options))],
    )
    result = run(suite, benchkit.RayExecutor(workers=2))
    assert [c.status for c in result.cells] == ["pass"] * 8
    pids = {c.response.output for c in result.cells if c.response is not None}
    assert 1 <= len(pids) <= 2  # a session per worker, entered once, not one per cell


def test_shipped_paths_move_only_from_inside_the_directory() -> None:
    from benchkit.executors._ray import _move

    old, new = Path("/bench/suite"), Path("/tmp/copy")
    value = {
        "bundle": Path("/bench/suite/conditions/a"),
        "script": "/bench/suite/check.sh",
        "sibling": "/bench/suite-other/x",  # a prefix, not a parent: stays
        "elsewhere": Path("/etc/hosts"),
        "args": ["/bench/suite", "--flag", 3],
    }
    assert _move(value, old, new) == {
        "bundle": Path("/tmp/copy/conditions/a"),
        "script": "/tmp/copy/check.sh",
        "sibling": "/bench/suite-other/x",
        "elsewhere": Path("/etc/hosts"),
        "args": ["/tmp/copy", "--flag", 3],
    }


# -- concurrency across the cluster, and batches ----------------------------------------


# No deadline: the function is arithmetic, but this module runs a Ray cluster whose threads
# share the process, and on a busy machine an example once waited past 200 ms for them.
@settings(deadline=None)
@given(
    concurrency=st.integers(1, 1000),
    workers=st.integers(1, 64),
    per_worker=st.none() | st.integers(1, 1000),
)
def test_slots_share_the_run_s_concurrency_evenly_and_never_exceed_it(
    concurrency: int, workers: int, per_worker: int | None
) -> None:
    from benchkit.executors._ray import plan_slots

    slots = plan_slots(concurrency, workers, per_worker)
    cap = per_worker if per_worker is not None else -(-concurrency // workers)
    assert sum(slots) == min(concurrency, workers * cap)  # the whole share, no more
    assert len(slots) == min(workers, sum(slots))  # a worker without a slot is not started
    assert all(1 <= n <= cap for n in slots) and max(slots) - min(slots) <= 1


def in_flight_suite(directory: Path, tasks: int, **options: Any) -> Suite:
    directory.mkdir()
    bench = Benchmark(
        "flight", tasks=[Task(f"t{i}", input={"dir": str(directory)}) for i in range(tasks)]
    )
    return Suite(
        bench, conditions=[Condition("c", spec("in_flight"))], options=RunOptions(**options)
    )


def most_in_flight(result: RunResult) -> int:
    assert all(c.status == "pass" for c in result.cells), result.cells[0]
    return max(int(c.response.output) for c in result.cells if c.response is not None)


@pytest.mark.parametrize(
    ("concurrency", "per_worker", "expected"),
    [(6, None, 6), (5, None, 5), (6, 2, 4)],
)
def test_the_run_s_concurrency_holds_across_the_cluster_and_is_reached(
    cluster: str, tmp_path: Path, concurrency: int, per_worker: int | None, expected: int
) -> None:
    """Each cell counts the cells in flight on every worker: never more than the run's
    concurrency (or workers × concurrency_per_worker, when that is less), and that many."""
    suite = in_flight_suite(tmp_path / "flight", 30, concurrency=concurrency)
    ex = benchkit.RayExecutor(workers=2, concurrency_per_worker=per_worker)
    assert most_in_flight(run(suite, ex)) == expected


FLIGHT_YAML = """\
benchkit: 1
id: flight
conditions:
  - id: c
    provider: {{type: python, callable: "tests._ray_support:in_flight", pass_request: true}}
run: {{concurrency: 8, concurrency_per_worker: 2}}
tasks:
{tasks}
"""


def test_concurrency_per_worker_comes_from_the_file_then_the_command_line(
    cluster: str, tmp_path: Path
) -> None:
    import json
    import subprocess

    flight = tmp_path / "flight"
    flight.mkdir()
    tasks = "\n".join(f'  - {{id: t{i}, input: {{dir: "{flight}"}}}}' for i in range(16))
    bench = tmp_path / "flight.yaml"
    bench.write_text(FLIGHT_YAML.format(tasks=tasks))

    def most(*extra: str) -> int:
        out = tmp_path / "result.json"
        command = [sys.executable, "-m", "benchkit", "run", str(bench), "--no-store"]
        command += ["--executor", "ray", "--ray-address", cluster, "--workers", "2"]
        command += ["--no-progress", "--output", str(out), *extra]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        cells = json.loads(out.read_text())["cells"]
        assert len(cells) == 16 and {c["status"] for c in cells} == {"pass"}
        return max(int(c["response"]["output"]) for c in cells)

    assert most() == 4  # the file's 2 per worker, under its concurrency of 8
    assert most("--concurrency-per-worker", "1") == 2  # the command line wins


def test_cli_refuses_concurrency_per_worker_without_the_ray_executor(tmp_path: Path) -> None:
    import subprocess

    demo = ROOT / "benchmarks" / "demo" / "benchmark.yaml"
    command = [sys.executable, "-m", "benchkit", "run", str(demo), "--no-store"]
    out = subprocess.run(
        [*command, "--concurrency-per-worker", "4"], capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode == 2
    assert "--concurrency-per-worker" in out.stderr and "add --executor ray" in out.stderr


def mixed_suite(tasks: int = 40) -> Suite:
    kinds = ["ok", "wrong", "boom", "flaky", "hang"]
    bench = Benchmark(
        "mixed",
        tasks=[
            Task(
                f"t{i}",
                input=kinds[i % len(kinds)],
                expected=str(i),
                timeout=0.3 if kinds[i % len(kinds)] == "hang" else None,
            )
            for i in range(tasks)
        ],
        evaluators=[EvaluatorSpec("exact")],
    )
    return Suite(
        bench,
        conditions=[Condition("a", spec("mixed")), Condition("b", spec("mixed"))],
        options=RunOptions(concurrency=8, retries=1, backoff_base=0, deterministic=True),
    )


def test_batched_cells_store_what_the_local_executor_stores(cluster: str, tmp_path: Path) -> None:
    """Passes, failures, errors, retried cells and timeouts, many to a round trip: the same
    result, the same cells in the same order, the same store contents and transcripts."""
    from benchkit.store import Store

    suite = mixed_suite()
    local = benchkit.run(suite, store=tmp_path / "local.db")
    remote = benchkit.run(
        suite, store=tmp_path / "ray.db", executor=benchkit.RayExecutor(workers=2)
    )
    assert remote.cells == local.cells and remote.aggregates == local.aggregates
    statuses = collections.Counter((c.status, c.error_category, c.attempts) for c in remote.cells)
    assert statuses == {
        ("pass", "none", 1): 16,
        ("fail", "assertion_failed", 1): 16,
        ("error", "execution_error", 2): 16,  # boom, retried once
        ("pass", "none", 2): 16,  # flaky, passed on its retry
        ("timeout", "timeout", 1): 16,
    }
    with Store(tmp_path / "local.db") as a, Store(tmp_path / "ray.db") as b:
        assert b.load(remote.run_id).cells == a.load(local.run_id).cells
        for cell in remote.cells:
            key = (cell.task_id, cell.condition_id, cell.epoch)
            theirs, ours = a.transcript(local.run_id, *key), b.transcript(remote.run_id, *key)
            assert ours is not None and ours == theirs
    # the task snapshot, taken in the driver from the tasks it hands out: the same rows
    snapshot = "SELECT position, task_id, data FROM tasks WHERE run_id = ? ORDER BY position"
    with sqlite3.connect(tmp_path / "local.db") as x, sqlite3.connect(tmp_path / "ray.db") as y:
        rows = y.execute(snapshot, (remote.run_id,)).fetchall()
        assert rows == x.execute(snapshot, (local.run_id,)).fetchall()
        assert [r[:2] for r in rows] == [
            (i, t.id) for i, t in enumerate(suite.benchmark.iter_tasks())
        ]


def test_cancelling_a_run_keeps_every_finished_cell_in_the_store(
    cluster: str, tmp_path: Path
) -> None:
    from benchkit.store import Store

    suite = seeded_suite(40).with_options(deterministic=False)
    db = tmp_path / "s.db"
    runner: benchkit.Runner | None = None

    def progress(p: benchkit.Progress) -> None:
        if p.done == 10 and runner is not None:
            runner.cancel()

    with Store(db) as store:
        prepared = store.prepare(suite)
        runner = benchkit.Runner(
            sinks=[prepared.sink], progress=progress, executor=benchkit.RayExecutor(workers=2)
        )
        result = anyio.run(lambda: runner.run(suite, run_id=prepared.run_id))
        kept = store.load(prepared.run_id)
    assert result.interrupted and 10 <= len(result.cells) < 160
    assert result.not_run == 160 - len(result.cells)
    assert sorted(c.key for c in kept.cells) == sorted(c.key for c in result.cells)


def test_cells_travel_in_batches(cluster: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchkit.executors import _ray as ray_executor

    sizes: list[int] = []
    exchange = ray_executor._Feeder._exchange

    async def counted(self: Any, batch: list[Any]) -> bool:
        sizes.append(len(batch))
        return await exchange(self, batch)

    monkeypatch.setattr(ray_executor._Feeder, "_exchange", counted)
    suite = seeded_suite(100).with_options(concurrency=20)  # 400 cells
    result = run(suite, benchkit.RayExecutor(workers=2))
    assert len(result.cells) == 400 and sum(sizes) == 400
    assert max(sizes) >= 10  # each worker's first batch fills its 10 slots
    assert len(sizes) <= 400 / 2  # far fewer round trips than cells


def test_a_provider_the_workers_cannot_import_stops_the_run_with_a_clear_error(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider pickles here, but its module exists on the driver only: no worker can
    start, so the run stops at once instead of waiting for workers to come back."""
    (tmp_path / "driver_only.py").write_text("def echo(text):\n    return text\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import driver_only  # type: ignore[import-not-found]

    suite = Suite(
        Benchmark("d", tasks=[Task("t", input="x", expected="x")]),
        conditions=[Condition("c", benchkit.CallableProvider(driver_only.echo))],
    )
    sink = ListSink()
    with pytest.raises(ConfigError, match="No module named 'driver_only'") as err:
        run(suite, benchkit.RayExecutor(workers=1), sinks=[sink])
    assert "cannot start this run" in str(err.value) and sink.cells == []
