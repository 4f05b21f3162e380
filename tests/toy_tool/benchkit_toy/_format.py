"""The toy format: a JSON file ``{"toy": 1, "sums": ["2 + 3 = 5", ...]}``."""

import json
from pathlib import Path
from typing import Any

from benchkit import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    FormatError,
    ProviderSpec,
    Source,
    Suite,
    Task,
)


def read_sums(path: Path) -> list[tuple[str, str]]:
    """The ``(question, answer)`` pairs of a toy file; FormatError naming the sum."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FormatError(f"{path}: {exc}", fix="give a readable JSON file.") from exc
    if not isinstance(document, dict) or document.get("toy") != 1:
        raise FormatError(f"{path}: not a toy file", fix='start the file with {"toy": 1, ...}.')
    pairs = []
    for i, line in enumerate(document.get("sums") or []):
        question, sep, answer = str(line).partition("=")
        if not sep or not question.strip() or not answer.strip():
            raise FormatError(
                f"{path}: sums[{i}] {line!r} is not 'QUESTION = ANSWER'",
                fix="write each sum as '2 + 3 = 5'.",
            )
        pairs.append((question.strip(), answer.strip()))
    return pairs


class ToyFormat:
    """Reads toy files: one task per sum, run by the toy calculator."""

    name = "toy"

    def detect(self, path: Path, head: Any | None) -> bool:
        return isinstance(head, dict) and head.get("toy") == 1

    def load(self, path: Path, **options: Any) -> Suite:
        tasks = [
            Task(f"sum-{i}", input=question, expected=answer)
            for i, (question, answer) in enumerate(read_sums(Path(path)), 1)
        ]
        return Suite(
            Benchmark(
                Path(path).stem,
                tasks=tasks,
                evaluators=[EvaluatorSpec("exact"), EvaluatorSpec("toy-within-one")],
                source=Source(path=str(path), format="toy"),
            ),
            conditions=[Condition("calculator", ProviderSpec("toy-calculator"))],
        )


FORMAT = ToyFormat()
