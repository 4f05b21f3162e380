"""skillvault's example suite (corpus/skillvault-bench-v0) end to end, byte for byte against
what skillvault itself wrote for it (corpus/skillvault-bench-v0-golden).

Those golden files have the config directory written ``<CONFIG_DIR>`` and ``git_commit``
null (the run was outside a git work tree). The tests run a writable copy of the suite in a
temporary directory that git is told not to look above, so ``git_commit`` is null here too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import benchkit
from benchkit.formats import detect_format, skillvault
from benchkit.formats.skillvault.report import (
    build_run,
)
from benchkit.model import VerifierSpec
from benchkit.reports import to_markdown

from ..test_skillvault_golden import assert_builders_match, assert_cli_matches, copy_outside_git
from ._corpus import CORPUS

SUITE = CORPUS / "skillvault-bench-v0"
GOLDEN = CORPUS / "skillvault-bench-v0-golden"


@pytest.fixture
def suite_dir(corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A writable copy of the example suite where `git rev-parse` finds no repository."""
    return copy_outside_git(SUITE, tmp_path, monkeypatch)


def test_cli_run_and_report_equal_skillvaults_own_output(suite_dir: Path) -> None:
    assert_cli_matches(GOLDEN, suite_dir)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_library_builders_equal_skillvaults_own_output(suite_dir: Path, concurrency: int) -> None:
    assert_builders_match(GOLDEN, suite_dir, concurrency)


def test_results_follow_config_order(suite_dir: Path) -> None:
    loaded = skillvault.load_config(suite_dir / "bench.yaml")
    run = build_run(loaded, benchkit.run(skillvault.to_suite(loaded)), git_commit=None)
    order = [(r["condition_id"], r["task_id"]) for r in run["results"]]
    conditions = ["no_skill", "curated_skill", "self_generated_skill"]
    tasks = ["has_response_file", "mentions_guardrails", "mentions_receipt"]
    assert order == [(c, t) for c in conditions for t in tasks]


def test_the_suite_maps_onto_the_core_model(suite_dir: Path) -> None:
    loaded = skillvault.load_config(suite_dir / "bench.yaml")
    suite = skillvault.to_suite(loaded)
    assert [c.id for c in suite.conditions] == [
        "no_skill",
        "curated_skill",
        "self_generated_skill",
    ]
    assert suite.conditions[2].options == {"adapter_id": "stub"}
    assert (suite.options.retries, suite.options.seed, suite.options.deterministic) == (
        0,
        42,
        True,
    )
    task = suite.benchmark.tasks[1]  # type: ignore[index]
    assert (task.id, task.domain, task.timeout) == ("mentions_guardrails", "safety_alignment", 1.0)
    assert task.verifiers == (
        VerifierSpec("bundle_file_contains", {"path": "answer.txt", "contains": "guardrails"}),
    )
    bench = suite.benchmark
    assert (bench.id, bench.source.format) == ("v0-example", "skillvault")
    assert bench.metadata == {"model_label": "local-deterministic", "environment_label": "dev"}


def test_benchkit_load_detects_the_format_and_the_native_report_compares(
    suite_dir: Path,
) -> None:
    config = suite_dir / "bench.yaml"
    assert detect_format(config) == "skillvault"
    suite = benchkit.load(config)
    assert suite.benchmark.source.format == "skillvault"
    assert suite.base_dir == suite_dir
    result = benchkit.run(suite)
    pairs = {(c.baseline, c.target): c for c in result.comparisons}
    curated = pairs[("no_skill", "curated_skill")]
    assert curated.improved == ("mentions_guardrails", "mentions_receipt")
    assert curated.regressed == ()
    assert curated.paired.mcnemar_p == 0.5  # 2 flips, both one way: 2 * (1/2)**2
    assert curated.paired.interval.low <= curated.paired.delta <= curated.paired.interval.high
    regressed = pairs[("curated_skill", "self_generated_skill")]
    assert regressed.regressed == ("mentions_receipt",)
    assert "| curated_skill vs no_skill | +0.667 |" in to_markdown(result)
