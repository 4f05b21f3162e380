"""The built wheel ships the built-in benchmarks and example skills: installed into a fresh
venv, ``list`` and ``eval --benchmark coding-easy --skills calculator`` work from an empty
directory, far from the checkout."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from ._support import REPO

pytestmark = pytest.mark.slow


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BENCHKIT_STORE")}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh venv holding the wheel built from this checkout.

    The wheel goes in with ``--no-deps``; the venv finds the runtime dependencies in the
    test environment's site-packages through a ``.pth`` line, which adds that directory
    but not the editable install's own ``.pth`` hooks — so ``benchkit`` can only come from
    the wheel (checked below), and no download is needed."""
    root = tmp_path_factory.mktemp("wheel")
    dist = root / "dist"
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist)]
    if importlib.util.find_spec("hatchling") is not None:
        build.append("--no-build-isolation")
    proc = _run([*build, str(REPO)], cwd=root)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = dist.glob("benchkit-*.whl")
    venv = root / "venv"
    proc = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root)
    assert proc.returncode == 0, proc.stderr
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
    proc = _run([*install, "--no-deps", "--no-index", str(wheel)], cwd=root)
    assert proc.returncode == 0, proc.stderr
    purelib = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root
    ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "_test_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    return python


def test_the_wheel_is_what_runs(installed: Path, tmp_path: Path) -> None:
    proc = _run([str(installed), "-c", "import benchkit; print(benchkit.__file__)"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    where = Path(proc.stdout.strip())
    assert where.is_relative_to(installed.parent.parent), where
    assert not where.is_relative_to(REPO)


def test_list_finds_the_shipped_benchmarks_from_any_directory(
    installed: Path, tmp_path: Path
) -> None:
    proc = _run([str(installed), "-m", "benchkit", "list"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "coding-easy" in proc.stdout and "eval-skills" in proc.stdout
    assert "benchkit/benchmarks" in proc.stdout.replace(os.sep, "/")
    for fmt in ("native", "skillvault", "memorybench", "codeforge"):
        assert fmt in proc.stdout


def test_eval_runs_the_shipped_calculator_on_coding_easy(installed: Path, tmp_path: Path) -> None:
    argv = [str(installed), "-m", "benchkit", "eval", "--benchmark", "coding-easy"]
    argv += ["--skills", "calculator", "--no-store", "--no-progress", "--format", "json"]
    proc = _run(argv, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (report,) = (tmp_path / ".benchkit" / "reports").glob("eval-result-*.json")
    data = json.loads(report.read_text())
    reports = data if isinstance(data, list) else [data]
    assert [r["skillId"] for r in reports] == ["calculator"]
    assert reports[0]["benchmarkId"] == "coding-easy"
    assert reports[0]["summary"]["completionRate"] > 0


def test_the_wheel_ships_the_explorer_and_the_report_styles(
    installed: Path, tmp_path: Path
) -> None:
    code = (
        "from importlib import resources; "
        "s = resources.files('benchkit.serve') / 'static'; "
        "print(sorted(p.name for p in s.iterdir())); "
        "from benchkit.reports.html import stylesheet; print('.bk' in stylesheet())"
    )
    proc = _run([str(installed), "-c", code], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["['app.css', 'app.js', 'index.html']", "True"]


def test_the_wheel_ships_each_tools_explorer_view(installed: Path, tmp_path: Path) -> None:
    code = (
        "from importlib import resources; "
        "from benchkit.registry import default_registries; "
        "print(sorted(t.name for t in default_registries().all_tools() if t.explorer_view "
        "and resources.files(t.package).joinpath(*t.explorer_view.split('/')).is_file()))"
    )
    proc = _run([str(installed), "-c", code], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['codeforge', 'memorybench', 'skillvault']"
