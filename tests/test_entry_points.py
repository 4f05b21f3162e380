"""Every entry-point group the docs name is the one benchkit reads: a tiny distribution that
uses each group is built and installed with pip (into a directory of its own, not the test
environment), and a fresh interpreter finds each of its plug-ins by name.

The groups are taken from the docs themselves (every ``benchkit.*`` name in backticks on a
line that says "entry-point group"), so a page that names a group benchkit does not read
fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ._support import REPO
from ._toy import pip_install_into

pytestmark = pytest.mark.slow

#: The plug-in's entry points, by group: what the tiny distribution declares.
ENTRY_POINTS = {
    "benchkit.providers": 'shouty = "bk_tiny:Shouty"',
    "benchkit.evaluators": 'is_upper = "bk_tiny:IsUpper"',
    "benchkit.verifiers": 'has_output = "bk_tiny:HasOutput"',
    "benchkit.formats": 'tiny = "bk_tiny:FORMAT"',
    "benchkit.memory_providers": 'tiny-store = "bk_tiny:TinyStore"',
    "benchkit.report_sections": 'tiny = "bk_tiny:section"',
    "benchkit.markdown_sections": 'tiny = "bk_tiny:markdown_section"',
    "benchkit.tools": 'tiny-tool = "bk_tiny:TOOL"',
    "benchkit.result_views": 'tiny-view = "bk_tiny:view"',
}

PLUGIN = '''
"""A plug-in of every kind, published through entry points."""

from pathlib import Path

import benchkit
import benchkit.tools
from benchkit import (Benchmark, Condition, EvaluatorSpec, ProviderSpec, Response, Score,
                      Suite, Task, Verdict, VerifierSpec)


class Shouty:
    async def invoke(self, request):
        return Response(output=str(request.task.input).upper())


class IsUpper:
    def evaluate(self, task, response):
        ok = str(response.output).isupper()
        return Score(name="is_upper", value=float(ok), passed=ok)


class HasOutput:
    def verify(self, task, response, context):
        return Verdict(name="has_output", passed=bool(response.output))


class _Tiny:
    """A format for files whose name ends in .tiny: one task per line."""

    name = "tiny"

    def detect(self, path, head):
        return path.suffix == ".tiny"

    def load(self, path, **options):
        lines = Path(path).read_text().split()
        tasks = [Task(f"t{i}", input=line) for i, line in enumerate(lines)]
        return Suite(
            Benchmark("tiny", tasks=tasks, evaluators=[EvaluatorSpec("is_upper")],
                      verifiers=[VerifierSpec("has_output")]),
            conditions=[Condition("shouty", ProviderSpec("shouty"))],
        )


FORMAT = _Tiny()


class TinyStore:
    capabilities = frozenset({"add", "retrieve"})

    def __init__(self):
        self.rows = []

    def add(self, scope, content, metadata=None):
        self.rows.append(content)
        return str(len(self.rows))

    def retrieve(self, scope, query, limit=10):
        return [benchkit.RetrievedItem(str(i), c) for i, c in enumerate(self.rows)][:limit]


def section(run):
    return "<p>tiny section</p>"


def markdown_section(run):
    return "tiny markdown"


def view(result):
    return f"tiny view of {len(result.cells)} cells"


TOOL = benchkit.tools.Tool(
    name="tiny-tool",
    title="Tiny",
    package="bk_tiny",
    evaluators={"tiny_upper": "bk_tiny:IsUpper"},
)
'''

CHECK = """
import benchkit
from benchkit.registry import default_registries
from benchkit.reports import MARKDOWN_SECTIONS
from benchkit.reports.html import SECTIONS

regs = default_registries()
result = benchkit.run(benchkit.load("words.tiny"), store=False)  # format, provider,
assert [c.status for c in result.cells] == ["pass", "pass"], result.cells  # evaluator,
assert all(c.verdicts[0].name == "has_output" for c in result.cells)  # verifier
store = regs.memory_providers.get("tiny-store")()
store.add(None, "kept")
assert [item.content for item in store.retrieve(None, "kept")] == ["kept"]
assert SECTIONS.get("tiny")({}) == "<p>tiny section</p>"
assert MARKDOWN_SECTIONS.get("tiny")({}) == "tiny markdown"
assert regs.tools.get("tiny-tool").title == "Tiny"  # a tool, and what it contributes
assert regs.evaluators.get("tiny_upper").__name__ == "IsUpper"
from benchkit.results import VIEWS
assert VIEWS.get("tiny-view")(result) == "tiny view of 2 cells"
print("every group found")
"""


def documented_groups() -> set[str]:
    """Every ``benchkit.*`` name in backticks in a sentence of README.md or docs/ after the
    words "entry-point group(s)"."""
    groups = set()
    for doc in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        text = " ".join(doc.read_text(encoding="utf-8").split())
        for match in re.finditer(r"entry-point groups? (.*?)(?:\.\s|\(|$)", text):
            groups.update(re.findall(r"`(benchkit\.[a-z_.]+)`", match.group(1)))
    return groups


def test_the_docs_name_only_groups_the_tiny_plugin_uses() -> None:
    documented = documented_groups()
    assert "benchkit.verifiers" in documented  # docs/plugins.md and docs/concepts.md
    assert documented == set(ENTRY_POINTS), documented ^ set(ENTRY_POINTS)


def test_a_distribution_using_every_group_is_found(tmp_path: Path) -> None:
    project = tmp_path / "bk-tiny"
    (project / "bk_tiny").mkdir(parents=True)
    (project / "bk_tiny" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    groups = "\n".join(f'[project.entry-points."{g}"]\n{ep}\n' for g, ep in ENTRY_POINTS.items())
    (project / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [build-system]
            requires = ["hatchling"]
            build-backend = "hatchling.build"

            [project]
            name = "bk-tiny"
            version = "0.1"

            """
        )
        + groups,
        encoding="utf-8",
    )
    site = pip_install_into(tmp_path / "site", project)
    (dist_info,) = site.glob("bk_tiny-*.dist-info")
    assert "benchkit.verifiers" in (dist_info / "entry_points.txt").read_text()
    work = tmp_path / "work"
    work.mkdir()
    (work / "words.tiny").write_text("hello world\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(REPO / "src")]))
    proc = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, cwd=work, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "every group found\n"
