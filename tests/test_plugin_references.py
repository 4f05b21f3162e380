"""Plug-ins without packaging: a benchmark file names them as `module:attr` or `file.py:attr`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import benchkit
from benchkit import FormatError

from ._support import REPO

PLUGINS = '''
from benchkit import Request, Response, Score, Task, Verdict


class Upper:
    """A provider with a plain `def invoke`: it runs in a worker thread."""

    def invoke(self, request: Request) -> Response:
        return Response(output=str(request.task.input).upper())


class MaxLength:
    def __init__(self, max_chars: int = 10) -> None:
        self.max_chars = max_chars

    async def evaluate(self, task: Task, response: Response) -> Score:
        ok = len(str(response.output)) <= self.max_chars
        return Score(name="max_length", value=float(ok), passed=ok, reason=None if ok else "long")


class NotEmpty:
    def verify(self, task, response, context) -> Verdict:
        return Verdict(name="not_empty", passed=bool(response.output))
'''

BENCH = """benchkit: 1
id: refs
evaluators:
  - exact
  - {type: "%(evaluator)s", max_chars: 3}
verifiers: ["%(verifier)s"]
conditions:
  - id: upper
    provider: "%(provider)s"
tasks:
  - {id: t1, input: ab, expected: AB}
  - {id: t2, input: abcd, expected: ABCD}
"""


def write(tmp_path: Path, **refs: str) -> Path:
    (tmp_path / "lib").mkdir(exist_ok=True)
    (tmp_path / "lib" / "checks.py").write_text(PLUGINS)
    names = {
        "provider": "lib/checks.py:Upper",
        "evaluator": "lib/checks.py:MaxLength",
        "verifier": "lib/checks.py:NotEmpty",
    }
    names.update(refs)
    bench = tmp_path / "bench.yaml"
    bench.write_text(BENCH % names)
    return bench


def test_file_references_run_relative_to_the_benchmark_file(tmp_path: Path) -> None:
    result = benchkit.run(write(tmp_path), store=False)
    t1, t2 = result.cells
    assert (t1.status, t2.status) == ("pass", "fail")
    assert t2.error == "long"
    assert [s.name for s in t1.scores] == ["exact", "max_length"]
    assert t1.verdicts[0].name == "not_empty"


def test_module_references_import_from_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "site"
    pkg.mkdir()
    (pkg / "my_checks_for_refs.py").write_text(PLUGINS)
    monkeypatch.syspath_prepend(str(pkg))
    bench = write(
        tmp_path,
        provider="my_checks_for_refs:Upper",
        evaluator="my_checks_for_refs:MaxLength",
    )
    assert benchkit.run(bench, store=False).aggregate("upper").passed == 1


def test_a_bad_reference_is_a_load_error_naming_file_and_line(tmp_path: Path) -> None:
    bench = write(tmp_path, evaluator="lib/checks.py:MaxLen")
    with pytest.raises(FormatError, match="has no attribute 'MaxLen'") as info:
        benchkit.load(bench)
    assert info.value.file == str(bench) and info.value.line == 5
    bench = write(tmp_path, provider="lib/nothere.py:Upper")
    with pytest.raises(FormatError, match="no file") as info:
        benchkit.load(bench)
    assert info.value.line == 9


def test_a_file_reference_must_stay_inside_the_benchmark_directory(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    (tmp_path / "evil.py").write_text("class Upper:\n    pass\n")
    bench = write(inner, provider="../evil.py:Upper")
    with pytest.raises(FormatError, match="points outside"):
        benchkit.load(bench)


def test_validate_and_run_find_file_references_from_any_directory(tmp_path: Path) -> None:
    """A ``file.py:Name`` plug-in is found relative to the benchmark file, as
    docs/plugins.md says, whatever the working directory (validate used to look in the
    working directory)."""
    (tmp_path / "project").mkdir()
    bench = write(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for command in (["validate"], ["run", "--no-store"]):
        proc = subprocess.run(
            [sys.executable, "-m", "benchkit", command[0], str(bench), *command[1:]],
            capture_output=True,
            text=True,
            cwd=elsewhere,
            env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
        )
        assert proc.returncode == 0, (command, proc.stderr)
    assert (
        "ok: native benchmark 'refs'"
        in subprocess.run(
            [sys.executable, "-m", "benchkit", "validate", "../project/bench.yaml"],
            capture_output=True,
            text=True,
            cwd=elsewhere,
            env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
        ).stdout
    )


def test_validate_rejects_a_reference_that_run_would_reject(tmp_path: Path) -> None:
    bench = write(tmp_path, verifier="lib/checks.py:Missing")
    proc = subprocess.run(
        [sys.executable, "-m", "benchkit", "validate", str(bench)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 2
    assert f"{bench}:6" in proc.stderr and "has no attribute 'Missing'" in proc.stderr


@pytest.mark.parametrize(
    ("spec", "line", "message"),
    [
        ("  - {type: regex, pattern: 'x'}\n", 4, "evaluator `regex` does not take these options"),
        ("  - {type: contains, keywords: [a], colour: red}\n", 4, "unexpected keyword"),
    ],
)
def test_validate_names_file_line_and_fix_for_bad_options(
    tmp_path: Path, spec: str, line: int, message: str
) -> None:
    bench = tmp_path / "bench.yaml"
    bench.write_text(
        "benchkit: 1\nid: opts\nevaluators:\n"
        + spec
        + "conditions:\n  - {id: c, provider: {type: python, file: s.py, function: f}}\n"
        + "tasks:\n  - {id: t1, input: a, expected: a}\n"
    )
    (tmp_path / "s.py").write_text("def f(x):\n    return x\n")
    proc = subprocess.run(
        [sys.executable, "-m", "benchkit", "validate", str(bench)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 2
    assert f"{bench}:{line}" in proc.stderr and message in proc.stderr
    assert "Fix: use the options" in proc.stderr


def test_validate_builds_the_providers_as_run_would(tmp_path: Path) -> None:
    bench = tmp_path / "bench.yaml"
    bench.write_text(
        "benchkit: 1\nid: mock\nconditions:\n  - {id: c, provider: mock}\n"
        "tasks:\n  - {id: t1, input: a, expected: a}\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "benchkit", "validate", str(bench)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 2, proc.stdout
    assert "a mock provider needs outputs" in proc.stderr
