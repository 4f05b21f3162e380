"""What the command line costs before it does anything — printed, never asserted.

    python perf/cli_startup.py                # 15 runs of each
    python perf/cli_startup.py --runs 30

Fresh subprocesses of this interpreter, bytecode cached, alternating so that a machine that
slows down weighs on all alike (as perf/import_time.py does):

* ``import benchkit`` — ``python -c "import benchkit"``: the interpreter and the package;
* ``--version`` — ``python -m benchkit --version``;
* ``--help`` — ``python -m benchkit --help``: every command listed, the tools' from their
  ``Tool`` declarations alone;
* the same two with a *sleepy tool* installed: a distribution (written into a temporary
  directory on ``PYTHONPATH``) whose command module sleeps 20 s when imported. Listing
  commands never imports a tool's command module (#41), so these stay where the first are;
  were it imported, they would take 20 s more.

Printed: the median wall time of each, its ratio to ``import benchkit`` (issue #41's
budget: ``--version`` within 1.5x), and the number of modules each imports
(``-X importtime``; the issue measured 484 for ``--version`` before).
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchkit

SLEEPY_TOOL = """
from benchkit.tools import Command, Tool

TOOL = Tool(
    name="sleepy",
    title="Sleepy",
    package="bk_sleepy",
    commands=(Command(name="sleepy", help="sleeps when imported", add="bk_sleepy._cli:add"),),
)
"""
SLEEPY_CLI = "import time\ntime.sleep(20)\n\ndef add(sub):\n    sub.add_parser('sleepy')\n"


def sleepy_site(root: Path) -> Path:
    """A directory holding the sleepy tool's distribution, as pip would install it."""
    dist = root / "sleepy-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: sleepy\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[benchkit.tools]\nsleepy = bk_sleepy._tool:TOOL\n")
    package = root / "bk_sleepy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_tool.py").write_text(SLEEPY_TOOL)
    (package / "_cli.py").write_text(SLEEPY_CLI)
    return root


def environment(extra_path: Path | None = None) -> dict[str, str]:
    """This process's environment, allowed to use cached bytecode (and ``extra_path`` on
    ``PYTHONPATH``)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if extra_path is not None:
        parts = [str(extra_path), env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    return env


def once(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def modules(argv: list[str], env: dict[str, str]) -> int:
    """How many modules ``argv`` imports (``-X importtime`` rows)."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return sum(1 for line in done.stderr.splitlines() if line.startswith("import time:"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    compileall.compile_dir(Path(benchkit.__file__).parent, quiet=1)
    py = sys.executable
    with tempfile.TemporaryDirectory() as scratch:
        site = sleepy_site(Path(scratch))
        compileall.compile_dir(site, quiet=1)
        plain, sleepy = environment(), environment(site)
        cases = {
            "import benchkit": ([py, "-c", "import benchkit"], plain),
            "--version": ([py, "-m", "benchkit", "--version"], plain),
            "--help": ([py, "-m", "benchkit", "--help"], plain),
            "--version, sleepy tool": ([py, "-m", "benchkit", "--version"], sleepy),
            "--help, sleepy tool": ([py, "-m", "benchkit", "--help"], sleepy),
        }
        for argv, env in cases.values():
            once(argv, env)  # warm the bytecode caches
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (argv, env) in cases.items():
                times[name].append(once(argv, env))
        counts = {name: modules(argv, env) for name, (argv, env) in cases.items()}
    floor = statistics.median(times["import benchkit"])
    print(f"CLI start-up, median of {args.runs} runs (load: {os.getloadavg()[0]:.2f})")
    print(f"{'program':<26}{'median':>10}{'x import':>10}{'modules':>9}")
    for name, seen in times.items():
        median = statistics.median(seen)
        print(f"{name:<26}{median * 1000:>8.0f}ms{median / floor:>10.2f}{counts[name]:>9}")
    ratio = statistics.median(times["--version"]) / floor
    print(f"--version within 1.5x of import benchkit: {'yes' if ratio <= 1.5 else 'no'}")


if __name__ == "__main__":
    main()
