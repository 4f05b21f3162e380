"""What the embedded 135M judge can do: its agreement with ``exact`` — printed, never asserted.

    python perf/local_judge.py            # a few minutes on 2 cores (needs benchkit[local])
    python perf/local_judge.py --tasks 10 # quicker, wider intervals

Short factual questions (arithmetic and capitals), each answered once right and once
wrong, so ``exact`` passes exactly half the cells. Three judges, all with the local model
and every verdict grammar-constrained (:mod:`benchkit.evaluators._verdict`), grade the same
cells:

1. ``rubric-0-10`` — ``llm_rubric`` asking for a 0–10 score, passing at 5;
2. ``yes-no`` — ``llm_rubric`` with ``parse: json`` and a schema allowing only
   ``{"correct": 0|1}`` after a one-line rubric naming the expected answer;
3. ``pairwise`` — ``llm_pairwise`` (the answer against the reference, in both orders).

For each: cells judged, judge errors, agreement with ``exact`` and Cohen's kappa with its
task-bootstrap 95 % interval (:func:`benchkit.judges.judge_report`), and the run's weak-judge
warning when there is one. docs/llm.md quotes the figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from benchkit import (  # noqa: E402
    Benchmark,
    Condition,
    EvaluatorSpec,
    MockProvider,
    Request,
    RunOptions,
    Suite,
    Task,
    run,
)

QUESTIONS = [
    ("What is 6 times 7?", "42", "48"),
    ("What is the capital of France?", "Paris", "Lyon"),
    ("What is 12 plus 30?", "42", "32"),
    ("What is the capital of Japan?", "Tokyo", "Osaka"),
    ("What is 9 minus 4?", "5", "3"),
    ("What is the capital of Italy?", "Rome", "Milan"),
    ("What is 3 times 3?", "9", "6"),
    ("What is the capital of Spain?", "Madrid", "Seville"),
    ("What is 100 divided by 4?", "25", "40"),
    ("What is the capital of Germany?", "Berlin", "Munich"),
    ("What is 2 plus 2?", "4", "5"),
    ("What is the capital of Canada?", "Ottawa", "Toronto"),
]

JUDGES = {
    "rubric-0-10": EvaluatorSpec(
        "llm_rubric",
        {
            "model": "local",
            "prompt": "Question: {input}\nExpected answer: {expected}\nAnswer given: {output}\n"
            "Rate the answer given from 0 (wrong) to 10 (right).",
            "threshold": 0.5,
        },
    ),
    "yes-no": EvaluatorSpec(
        "llm_rubric",
        {
            "model": "local",
            "prompt": "Question: {input}\nExpected answer: {expected}\nAnswer given: {output}\n"
            "Is the answer given the expected answer? correct is 1 for yes, 0 for no.",
            "parse": "json",
            "schema": {
                "type": "object",
                "properties": {"correct": {"type": "integer", "enum": [0, 1]}},
                "required": ["correct"],
                "additionalProperties": False,
            },
            "score_field": "correct",
            "scale": [0, 1],
            "threshold": 0.5,
        },
    ),
    "pairwise": EvaluatorSpec("llm_pairwise", {"model": "local"}),
}


def _answer(request: Request) -> str:
    right, wrong = request.task.metadata["answers"]
    return str(right if request.task.metadata["right"] else wrong)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=len(QUESTIONS), help="questions (≤ 12)")
    args = parser.parse_args()
    os.environ.setdefault("BENCHKIT_LOCAL_MAX_TOKENS", "512")
    tasks = [
        Task(
            f"q{i}-{'right' if right else 'wrong'}",
            input=q,
            expected=good,
            metadata={"answers": (good, bad), "right": right},
        )
        for i, (q, good, bad) in enumerate(QUESTIONS[: args.tasks])
        for right in (True, False)
    ]
    print(f"{len(tasks)} cells ({args.tasks} questions, one right and one wrong answer each)")
    for name, spec in JUDGES.items():
        started = time.perf_counter()
        suite = Suite(
            Benchmark(
                "judge-agreement",
                tasks=tasks,
                evaluators=[EvaluatorSpec("exact"), spec],
            ),
            (Condition("local", MockProvider(_answer)),),
            RunOptions(concurrency=2),
        )
        result = run(suite)
        wall = time.perf_counter() - started
        judge_scores = [s for c in result.cells for s in c.scores if s.name != "exact"]
        errors = sum(1 for s in judge_scores if s.error is not None)
        report = result.judge_report()
        agreed = sum(
            1
            for c in result.cells
            if len({s.passed for s in c.scores if s.error is None}) == 1
            and len([s for s in c.scores if s.error is None]) == 2
        )
        print(f"\n{name}: {len(judge_scores) - errors} judged, {errors} judge errors, {wall:.0f} s")
        print(f"  agreed with exact on {agreed} of {len(result.cells)} cells")
        for line in report.lines():
            print(f"  {line}")
        for line in result.warnings:
            print(f"  warning: {line}")


if __name__ == "__main__":
    main()
