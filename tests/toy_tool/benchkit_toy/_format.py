"""The toy formats: a JSON file ``{"toy": 1, "sums": ["2 + 3 = 5", ...]}``, and a plain
text file ending in ``.toy``, one sum a line."""

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


def _pair(path: Path, where: str, line: str) -> tuple[str, str]:
    question, sep, answer = str(line).partition("=")
    if not sep or not question.strip() or not answer.strip():
        raise FormatError(
            f"{path}: {where} {line!r} is not 'QUESTION = ANSWER'",
            fix="write each sum as '2 + 3 = 5'.",
        )
    return question.strip(), answer.strip()


def read_sums(path: Path) -> list[tuple[str, str]]:
    """The ``(question, answer)`` pairs of a toy file of either kind; FormatError naming the
    sum."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FormatError(f"{path}: {exc}", fix="give a readable file.") from exc
    if path.suffix == ".toy":
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        return [_pair(path, f"line {n}", line) for n, line in lines]
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise FormatError(f"{path}: {exc}", fix="give a readable JSON file.") from exc
    if not isinstance(document, dict) or document.get("toy") != 1:
        raise FormatError(f"{path}: not a toy file", fix='start the file with {"toy": 1, ...}.')
    return [_pair(path, f"sums[{i}]", line) for i, line in enumerate(document.get("sums") or [])]


class ToyFormat:
    """Reads toy JSON files: one task per sum, run by the toy calculator."""

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
                source=Source(path=str(path), format=self.name),
            ),
            conditions=[Condition("calculator", ProviderSpec("toy-calculator"))],
        )


class ToyLinesFormat(ToyFormat):
    """Reads ``.toy`` text files: not YAML nor JSON, so it says which files are its own."""

    name = "toy-lines"
    suffixes = (".toy",)

    def detect(self, path: Path, head: Any | None) -> bool:
        return path.suffix == ".toy"


FORMAT = ToyFormat()
LINES_FORMAT = ToyLinesFormat()
