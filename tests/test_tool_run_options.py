"""Every tool command that runs a suite into the store takes ``--resume``, the budget and
``--baseline`` like ``run``, through the shared plumbing (``add_store_options`` and
``stored_run`` in benchkit.cli_toolkit), with the same exit rules (#44)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from benchkit.cli import main
from benchkit.cli._main import _parser
from benchkit.registry import default_registries
from benchkit.store import Store

from ._support import REPO

BENCHMARKS = REPO / "benchmarks"
CALCULATOR = BENCHMARKS / "skills" / "calculator" / "skill.json"
SHARED = {"--resume", "--max-cost", "--max-tokens", "--max-calls", "--baseline"}


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """Every (sub)command's options, by its command words."""
    found = {" ".join(path): {o for a in parser._actions for o in a.option_strings}}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_parsers(sub, (*path, name)))
    return found


def test_every_command_with_the_store_options_has_resume_budget_and_baseline() -> None:
    checked = []
    for tool in default_registries().all_tools():
        for command in tool.commands:
            for words, options in _parsers(_parser(command.name)).items():
                if words.split(" ")[0] == command.name and "--no-store" in options:
                    assert options >= SHARED, (words, SHARED - options)
                    checked.append(words)
    assert {"eval", "memory eval", "bench run"} <= set(checked)
    assert _parsers(_parser("run"))["run"] >= SHARED


def _eval(tmp_path: Path, *more: str) -> int:
    return main(
        [
            "eval",
            "--benchmarks-dir",
            str(BENCHMARKS),
            "--skills",
            str(CALCULATOR),
            "--output-dir",
            str(tmp_path / "out"),
            "--store",
            str(tmp_path / "s.db"),
            "--no-progress",
            *more,
        ]
    )


@pytest.mark.slow
def test_eval_stops_at_its_budget_resumes_and_gates_on_a_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _eval(tmp_path) == 0
    with Store(tmp_path / "s.db") as store:
        (base,) = store.runs()
    total = base.cells
    assert total >= 3
    capsys.readouterr()

    assert _eval(tmp_path, "--max-calls", "2", "--concurrency", "1") == 1
    err = capsys.readouterr().err
    assert "interrupted: budget (calls limit reached" in err
    assert err.count("interrupted: budget") == 1, err  # said once, with the resume hint
    with Store(tmp_path / "s.db") as store:
        stopped = store.runs()[0]
    assert stopped.status == "interrupted" and stopped.cells == 2

    assert _eval(tmp_path, "--resume", "--baseline", base.run_id) == 0
    assert "no regression detectable" in capsys.readouterr().err
    with Store(tmp_path / "s.db") as store:
        resumed = store.summary(stopped.run_id)
        assert resumed.status == "finished" and resumed.cells == total
        assert len(store.runs()) == 2  # the resume continued the stopped run

    assert _eval(tmp_path, "--baseline", "nope") == 2
    assert "nope" in capsys.readouterr().err

    # An eval-skills run can be rescored too (from its task snapshots), calling nothing.
    with Store(tmp_path / "s.db") as store:
        parent = store.load(base.run_id)
        child = store.rescore(base.run_id, ["exact"])
    assert child.info.source_format == parent.info.source_format == "eval-skills"
    assert [c.response for c in child.cells] == [c.response for c in parent.cells]


@pytest.mark.slow
def test_memory_eval_and_bench_run_take_the_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = str(tmp_path / "s.db")
    memory = ["memory", "eval", "-p", "LocalBaseline", "-b", "rag-handbook", "--store", store]
    assert main(memory) == 0
    assert main([*memory, "--baseline", "latest", "--regression-margin", "0.05"]) == 0
    assert "no regression detectable" in capsys.readouterr().err

    config = BENCHMARKS / "skillvault-bench-v0" / "bench.yaml"
    if not config.is_file():
        pytest.skip("the skillvault example is not in benchmarks/")
    bench = ["bench", "run", "--config", str(config), "--store", store, "--format", "json"]
    assert main(bench) == 0
    capsys.readouterr()
    assert main([*bench, "--baseline", "latest"]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)  # the comparison stays off stdout with -f json
    assert "no regression detectable" in captured.err
    # ... and a skillvault run: its verifiers' verdicts are carried over, not re-run.
    with Store(store) as opened:
        parent = opened.load("latest")
        child = opened.rescore("latest", ["contains"])
    assert parent.info.source_format == "skillvault"
    verdicts = {c.key: c.verdicts for c in parent.cells}
    assert any(verdicts.values()) and {c.key: c.verdicts for c in child.cells} == verdicts
    # A budget stop: the run JSON of the cells it allowed, then the stop said once.
    assert main([*bench, "--max-calls", "1"]) == 1
    captured = capsys.readouterr()
    json.loads(captured.out)
    assert captured.err.count("interrupted: budget") == 1, captured.err
    assert "--resume" in captured.err
