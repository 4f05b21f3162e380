"""What the process supervisor (benchkit._procs, #42) costs a start — printed, never asserted.

    python perf/spawn_overhead.py             # 30 starts of each, alternated
    python perf/spawn_overhead.py --runs 60

Every process benchkit starts runs under the supervisor (a small Python process that owns
it and everything it starts). Printed: the median wall time of starting and reaping
``true`` three ways, alternated so a machine that slows down weighs on all alike —

* ``plain``: ``subprocess.Popen(["true"])`` (the floor: no supervision, no limits);
* ``launcher``: ``python -I -S`` that execs ``true`` after ``setrlimit`` (what benchkit
  ran before #42 whenever a provider had a memory or CPU limit: the subprocess provider's
  default);
* ``supervised``: ``benchkit._procs.popen(["true"])`` (what it runs now, always);

and each over ``plain``, with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from benchkit import _procs

LAUNCHER = "import os, resource; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); " \
    "os.execvp('true', ['true'])"  # fmt: skip


def _plain() -> None:
    subprocess.Popen(["true"]).wait()


def _launcher() -> None:
    subprocess.Popen([sys.executable, "-I", "-S", "-c", LAUNCHER]).wait()


def _supervised() -> None:
    _procs.popen(["true"]).wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    ways: dict[str, Callable[[], None]] = {
        "plain": _plain,
        "launcher": _launcher,
        "supervised": _supervised,
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.runs):
        for name, start in ways.items():
            began = time.perf_counter()
            start()
            times[name].append(time.perf_counter() - began)
    load = os.getloadavg()[0]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {load:.2f}")
    floor = statistics.median(times["plain"])
    for name, found in times.items():
        median = statistics.median(found)
        print(f"{name:>10}: {median * 1000:7.1f} ms a start (+{(median - floor) * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
