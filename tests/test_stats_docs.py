"""docs/statistics.md's worked example runs and prints exactly what the page shows."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from ._support import REPO

DOC = REPO / "docs" / "statistics.md"


def test_the_worked_example_prints_what_the_docs_show() -> None:
    text = DOC.read_text(encoding="utf-8")
    example = text.split("## A worked example", 1)[1]
    code = re.search(r"```python\n(.*?)```", example, re.S)
    shown = re.search(r"```text\n(.*?)```", example, re.S)
    assert code is not None and shown is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.group(1), str(DOC), "exec"), {"__name__": "statistics_doc"})
    assert out.getvalue() == shown.group(1)


@pytest.mark.parametrize(
    "section",
    [
        "## How far can a judge be trusted",
        "## Small samples, said plainly",
        "## Stop when the answer is known",
    ],
)
def test_the_issue_26_examples_print_what_the_docs_show(section: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    body = text.split(section, 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", body, re.S)
    shown = re.search(r"```text\n(.*?)```", body, re.S)
    assert code is not None and shown is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.group(1), str(DOC), "exec"), {"__name__": "statistics_doc"})
    assert out.getvalue() == shown.group(1)
