"""Rescore: a stored run's outputs graded again, as a new run recording its parent, with no
call to the system under test (#44): through the CLI with exit codes, from Python, with a
judge through the reply cache, verifiers' verdicts carried over, and runs of other formats
and of the server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import benchkit
from benchkit import EvaluatorSpec, Score, Task, Verdict
from benchkit.cli import main
from benchkit.model import Benchmark, Condition, Response, Suite, VerifierSpec
from benchkit.protocols import VerifyContext
from benchkit.registry import Registries
from benchkit.runner import Runner, sync_run
from benchkit.store import Store

from ._llm_server import FakeOpenAI
from ._serve import running, wait_for, write_benchmark

BENCH = """\
benchkit: 1
id: rescored
evaluators: [exact]
conditions:
  - id: sys
    provider: {type: python, file: answers.py, function: answer}
tasks:
""" + "".join(f'  - {{id: t{i}, input: {i}, expected: "{i}"}}\n' for i in range(6))

ANSWERS = """\
from pathlib import Path

CALLS = Path(__file__).with_name("calls.txt")


def answer(task_input: int) -> str:
    with CALLS.open("a") as log:
        log.write(f"{task_input}\\n")
    return "nope" if task_input < 2 else f"answer {task_input}"
"""


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    (tmp_path / "answers.py").write_text(ANSWERS, encoding="utf-8")
    path = tmp_path / "rescored.yaml"
    path.write_text(BENCH, encoding="utf-8")
    return path


def _calls(bench: Path) -> int:
    return len((bench.parent / "calls.txt").read_text().splitlines())


def test_the_cli_rescores_without_calling_the_system(
    bench: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "s.db")
    argv = ["run", str(bench), "--store", store, "--run-id", "parent", "--no-progress"]
    assert main(argv) == 0
    assert _calls(bench) == 6
    capsys.readouterr()
    # exact fails every task ("answer 2" is not "2"); contains passes t2..t5.
    rescore = ["runs", "rescore", "parent", "--store", store, "--run-id", "child", "-f", "json"]
    assert main([*rescore, "--evaluator", "contains"]) == 0
    assert _calls(bench) == 6  # no provider call
    result = json.loads(capsys.readouterr().out)
    assert result["info"]["parent_run_id"] == "parent"
    statuses = {c["task_id"]: c["status"] for c in result["cells"]}
    assert statuses == {"t0": "fail", "t1": "fail", **{f"t{i}": "pass" for i in range(2, 6)}}
    outputs = {c["task_id"]: c["response"]["output"] for c in result["cells"]}
    assert outputs["t3"] == "answer 3"

    # compare shows what the new scorer changed: t2..t5 went fail → pass.
    assert main(["compare", "parent", "child", "--store", store, "-f", "json"]) == 0
    (pair,) = json.loads(capsys.readouterr().out)["conditions"]
    assert pair["comparison"]["improved"] == ["t2", "t3", "t4", "t5"]
    assert not pair["comparison"]["regressed"]
    with Store(store) as opened:
        assert opened.load("child").info.parent_run_id == "parent"
        assert opened.load("parent").info.parent_run_id is None

    # Options as a YAML mapping; bad input is one paragraph and exit 2.
    spec = '{type: regex, patterns: ["^nope$"], name: is-nope}'
    assert main(["runs", "rescore", "parent", "--store", store, "--evaluator", spec]) == 0
    assert "rescored from run parent" in capsys.readouterr().err
    for bad, said in (
        (["--evaluator", "{patterns: [x]}"], "has no `type`"),
        (["--evaluator", "{type: regex, pattern: x}"], "pattern"),
        (["--evaluator", "no-such-evaluator"], "no-such-evaluator"),
        (["--evaluator", "{type: [unclosed"], "not a YAML mapping"),
    ):
        assert main(["runs", "rescore", "parent", "--store", store, *bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("benchkit: error:") and said in err, err
    assert main(["runs", "rescore", "missing", "--store", store, "--evaluator", "exact"]) == 2
    with pytest.raises(SystemExit) as usage:
        main(["runs", "rescore", "parent", "--store", store])
    assert usage.value.code == 2
    assert _calls(bench) == 6


def test_a_judge_is_asked_through_the_reply_cache(
    bench: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    store = tmp_path / "s.db"
    benchkit.run(str(bench), store=store, run_id="parent")
    with FakeOpenAI() as llm:
        llm.respond = lambda body: "8"
        judge = EvaluatorSpec(
            "llm_rubric", {"prompt": "Rate {output}", "model": "judge", "base_url": llm.url}
        )
        first = benchkit.rescore("parent", [judge], store=store)
        asked = len(llm.requests)
        assert asked == 6
        again = benchkit.rescore("parent", [judge], store=store)
        assert len(llm.requests) == asked  # every verdict came from the cache
        # the CLI's --judge names the judges' model, as on every command that runs judges
        spec = json.dumps({"type": "llm_rubric", "prompt": "Rate {output}", "base_url": llm.url})
        argv = ["runs", "rescore", "parent", "--store", str(store), "--evaluator", spec]
        assert main([*argv, "--judge", "other-judge", "-f", "json"]) == 0
        assert {r.body["model"] for r in llm.requests[asked:]} == {"other-judge"}
        assert main([*argv, "--evaluator", "exact", "--judge", "x"]) == 0
        assert main(["runs", "rescore", "parent", "--store", str(store), "--evaluator",
                     "exact", "--judge", "x"]) == 2  # fmt: skip
    assert [c.status for c in first.cells] == ["pass"] * 6
    assert [c.scores for c in again.cells] == [c.scores for c in first.cells]
    assert first.run_id != again.run_id and again.info.parent_run_id == "parent"


class _Checked:
    """A verifier that passes even inputs and counts its calls."""

    calls = 0

    async def verify(self, task: Task, response: Response, context: VerifyContext) -> Verdict:
        _Checked.calls += 1
        return Verdict(name="even", passed=task.input % 2 == 0, message=f"{task.input} is odd")


class _Echo:
    async def invoke(self, request: benchkit.Request) -> Response:
        return Response(output=str(request.task.input))


class _Down:
    async def invoke(self, request: benchkit.Request) -> Response:
        raise benchkit.InvocationError("the service is down", retryable=False)


def test_verdicts_are_carried_over_and_errors_stay_errors(tmp_path: Path) -> None:
    registries = Registries.create()
    registries.verifiers.add("even", lambda: _Checked())
    tasks = [
        Task(f"t{i}", input=i, expected=str(i), verifiers=[VerifierSpec("even")]) for i in range(4)
    ]
    suite = Suite(
        Benchmark("verified", tasks=tasks, evaluators=[EvaluatorSpec("exact")]),
        conditions=[Condition("echo", _Echo()), Condition("broken", _Down())],
    )
    with Store(tmp_path / "s.db") as store:
        prepared = store.prepare(suite, run_id="parent", registries=registries)
        runner = Runner(sinks=[prepared.sink], registries=registries)
        parent = sync_run(suite, runner=runner, run_id="parent")
        seen = _Checked.calls
        child = store.rescore("parent", ["contains"], registries=registries)
    assert _Checked.calls == seen  # the verifier did not run again
    before = {c.key: (c.status, c.error_category) for c in parent.cells}
    after = {c.key: (c.status, c.error_category) for c in child.cells}
    assert after == before
    assert after[("t1", "echo", 0)] == ("fail", "verification_failed")
    assert after[("t0", "echo", 0)] == ("pass", "none")
    assert {after[(f"t{i}", "broken", 0)] for i in range(4)} == {("error", "execution_error")}
    assert {c.error for c in child.cells if c.condition_id == "broken"} == {"the service is down"}
    assert [s.name for s in child.cells[0].scores] == ["contains"]
    assert isinstance(child.cells[0].scores[0], Score)


def test_an_unfinished_run_is_refused(bench: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    benchkit.run(str(bench), store=store, run_id="parent")
    with Store(store) as opened:
        db = opened.reader._db()
        db.execute("DELETE FROM cells WHERE run_id = 'parent' AND task_id = 't5'")
        db.execute("UPDATE runs SET status = 'interrupted', outcome = NULL WHERE run_id = 'parent'")
        db.commit()
        with pytest.raises(benchkit.ConfigError, match="did not finish"):
            opened.rescore("parent", ["exact"])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[httpx.Client]:
    from benchkit.serve import create_app

    write_benchmark(tmp_path / "root" / "quick", tasks=4)
    app = create_app(store=tmp_path / "store.db", root=tmp_path / "root")
    with running(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield client


def test_runs_of_the_server_and_of_memorybench_can_be_rescored(
    served: httpx.Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = served.post("/api/runs", json={"benchmark": "quick"})
    assert started.status_code == 202, started.text
    run_id = started.json()["run_id"]
    wait_for(served, f"/api/runs/{run_id}", lambda body: body["run"]["status"] == "finished")
    store = str(tmp_path / "store.db")
    assert main(["runs", "rescore", run_id, "--store", store, "--evaluator", "contains"]) == 0
    assert f"rescored from run {run_id}" in capsys.readouterr().err

    memory = ["memory", "eval", "--providers", "LocalBaseline", "--benchmarks", "rag-handbook"]
    assert main([*memory, "--store", store]) == 0
    capsys.readouterr()
    with Store(store) as opened:
        parent = opened.load("latest")
        assert parent.info.source_format == "memorybench"
        child = opened.rescore("latest", ["contains"])
    assert child.info.parent_run_id == parent.run_id
    assert child.info.source_format == "memorybench"
    assert {c.key for c in child.cells} == {c.key for c in parent.cells}
    assert [c.response for c in child.cells] == [c.response for c in parent.cells]
    assert main(["runs", "show", child.run_id, "--store", store, "-f", "markdown"]) == 0
    assert f"rescored from run `{parent.run_id}`" in capsys.readouterr().out
