"""What ``import benchkit`` costs over a bare interpreter — printed, never asserted.

    python perf/import_time.py                # 15 runs of each
    python perf/import_time.py --runs 30

Every figure comes from fresh subprocesses of this interpreter with the same environment,
with bytecode cached: the script first compiles ``benchkit`` (``compileall``) and imports
it once with ``PYTHONDONTWRITEBYTECODE`` removed from the environment, so no run pays for
compiling. Then, ``--runs`` times, alternating so a machine that slows down weighs on all
alike:

* ``bare`` — ``python -c pass``;
* ``import benchkit`` — ``python -c "import benchkit"``;
* ``first use`` — ``import benchkit`` then ``benchkit.Runner``, which loads the core (the
  model, results, runner and their dependencies): what a program that runs a benchmark pays
  before its first cell.

Printed: the median wall time of each process, and each over ``bare`` (the figure of
issue #30: ``import benchkit`` at most 100 ms over a bare interpreter); then the modules
that ``python -X importtime -c "import benchkit"`` spends most in (cumulative and self,
microseconds), and which of the heavy modules — entry points (``importlib.metadata``),
httpx, jsonschema, sqlite3, asyncio, attrs, cattrs, ruamel.yaml — ``import benchkit``
loads.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import benchkit

PROGRAMS = {
    "bare": "pass",
    "import benchkit": "import benchkit",
    "first use": "import benchkit; benchkit.Runner",
}
HEAVY = (
    "importlib.metadata",
    "httpx",
    "jsonschema",
    "sqlite3",
    "asyncio",
    "anyio",
    "attrs",
    "cattrs",
    "ruamel.yaml",
)


def environment() -> dict[str, str]:
    """This process's environment, allowed to read and write cached bytecode."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def once(program: str, env: dict[str, str]) -> float:
    """Seconds of wall time for one ``python -c program``."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", program], env=env, check=True)
    return time.perf_counter() - started


def importtime(env: dict[str, str]) -> list[tuple[int, int, str]]:
    """(cumulative µs, self µs, module) for each module ``import benchkit`` imports.

    ``-X importtime`` also lists what the interpreter imports at start-up (``site`` and
    its imports); only the rows of ``benchkit``'s own tree are kept: those after the last
    top-level row before ``benchkit``'s.
    """
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import benchkit"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows: list[tuple[int, int, str]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, total, name = line.removeprefix("import time:").split("|")
        if not name.startswith("  "):  # a top-level import: start-up's, or benchkit's
            if name.strip() == "benchkit":
                return [*rows, (int(total), int(own), "benchkit")]
            rows = []
            continue
        rows.append((int(total), int(own), name.strip()))
    raise SystemExit("no 'benchkit' row in python -X importtime's output")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each program (>= 10)")
    parser.add_argument("--top", type=int, default=12, help="modules listed")
    args = parser.parse_args()
    env = environment()
    source = Path(benchkit.__file__).parent
    compileall.compile_dir(source, quiet=1)
    for program in PROGRAMS.values():
        once(program, env)  # writes any bytecode still missing, warms the file cache
    seconds: dict[str, list[float]] = {name: [] for name in PROGRAMS}
    for _ in range(args.runs):
        for name, program in PROGRAMS.items():
            seconds[name].append(once(program, env))
    median = {name: statistics.median(values) for name, values in seconds.items()}
    print(
        f"python {sys.version.split()[0]}; benchkit {benchkit.__version__} from {source}; "
        f"median of {args.runs} alternating runs, bytecode cached"
    )
    for name, value in median.items():
        over = "" if name == "bare" else f"   {(value - median['bare']) * 1e3:6.1f} ms over bare"
        print(f"  {name:16} {value * 1e3:7.1f} ms{over}")

    rows = importtime(env)
    print(f"\npython -X importtime -c 'import benchkit': {len(rows)} modules")
    print(f"  top {args.top} by cumulative µs:")
    for total, own, name in sorted(rows, reverse=True)[: args.top]:
        print(f"    {total:8} {own:8}  {name}")
    print(f"  top {args.top} by self µs:")
    for total, own, name in sorted(rows, key=lambda row: row[1], reverse=True)[: args.top]:
        print(f"    {total:8} {own:8}  {name}")
    loaded = {name for _, _, name in rows}
    print("  heavy modules loaded: " + (", ".join(m for m in HEAVY if m in loaded) or "none"))
    print("  heavy modules not loaded: " + ", ".join(m for m in HEAVY if m not in loaded))


if __name__ == "__main__":
    main()
