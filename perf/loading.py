"""Loading a big native benchmark against its floors, JSON and YAML side by side — printed.

    python perf/loading.py                  # 100,000 tasks, medians of 3
    python perf/loading.py --tasks 20000 --repeat 5

Writes one benchmark of ``--tasks`` tasks (an input object, an expectation, tags, a
timeout each; the same document as perf/yaml_loading.py) as JSON and as block-style YAML,
then, in one process and in rounds, times four things back to back:

* ``json floor``  — ``json.load`` of the JSON file;
* ``json``        — :func:`benchkit.formats.load` of the JSON file (parse, schema checks,
  the model built: a ``Suite`` of ``Task`` objects);
* ``yaml floor``  — libyaml's event stream for the YAML file (ruamel's C parser, each
  event taken, nothing built);
* ``yaml``        — :func:`benchkit.formats.load` of the YAML file.

Times are this process's CPU time (``time.process_time``): the VM is shared, and wall
time there mostly measures the other tenants. Each round gives a ratio per pair (benchkit / its floor, measured seconds apart); the
figures printed are the medians over rounds. Targets (issue #30): JSON <= 3x json.load,
YAML <= 3x the event stream. A warm-up load runs first (imports, compiled schema).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from yaml_loading import write  # the same document as the YAML-vs-JSON script


def timed(work: Callable[[], object]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``work``. The ratios use this process's CPU time: on
    a shared VM, wall time mostly measures the other tenants."""
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    work()
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="rounds (medians are printed)")
    args = parser.parse_args()

    from ruamel.yaml import cyaml

    from benchkit.formats import load

    def json_floor(path: Path) -> object:
        with path.open("rb") as handle:
            return json.load(handle)

    def yaml_floor(path: Path) -> object:
        events = cyaml.CParser(path.read_text(encoding="utf-8"))  # type: ignore[attr-defined]
        count = 0
        while events.check_event():
            events.get_event()
            count += 1
        return count

    with tempfile.TemporaryDirectory() as tmp:
        as_json, as_yaml = write(Path(tmp), args.tasks)
        for path in (as_json, as_yaml):
            assert len(load(path).benchmark.tasks) == args.tasks  # type: ignore[arg-type]
        work = {
            "json floor": lambda: json_floor(as_json),
            "json": lambda: load(as_json),
            "yaml floor": lambda: yaml_floor(as_yaml),
            "yaml": lambda: load(as_yaml),
        }
        print(
            f"python {sys.version.split()[0]}; {args.tasks} tasks "
            f"(JSON {as_json.stat().st_size / 1e6:.1f} MB, YAML {as_yaml.stat().st_size / 1e6:.1f}"
            f" MB); medians of {args.repeat} rounds"
        )
        times: dict[str, list[float]] = {name: [] for name in work}
        walls: dict[str, list[float]] = {name: [] for name in work}
        ratios: dict[str, list[float]] = {"json": [], "yaml": []}
        wall_ratios: dict[str, list[float]] = {"json": [], "yaml": []}
        for round_ in range(1, args.repeat + 1):
            for name, run in work.items():
                cpu, wall = timed(run)
                times[name].append(cpu)
                walls[name].append(wall)
            for kind in ratios:
                ratios[kind].append(times[kind][-1] / times[f"{kind} floor"][-1])
                wall_ratios[kind].append(walls[kind][-1] / walls[f"{kind} floor"][-1])
            print(
                f"round {round_}   json {times['json'][-1]:6.3f} s / {times['json floor'][-1]:6.3f}"
                f" s = {ratios['json'][-1]:5.2f}x   yaml {times['yaml'][-1]:6.3f} s / "
                f"{times['yaml floor'][-1]:6.3f} s = {ratios['yaml'][-1]:5.2f}x   (wall "
                f"{wall_ratios['json'][-1]:.2f}x, {wall_ratios['yaml'][-1]:.2f}x)"
            )
        for name, values in times.items():
            per_task = statistics.median(values) / args.tasks * 1e6
            print(
                f"{name:11} {statistics.median(values):7.3f} s CPU ({per_task:5.1f} µs a task), "
                f"{statistics.median(walls[name]):7.3f} s wall"
            )
        print(
            f"ratio       json / json.load = {statistics.median(ratios['json']):.2f} (target <= 3);"
            f" yaml / libyaml events = {statistics.median(ratios['yaml']):.2f} (target <= 3);"
            f" wall: {statistics.median(wall_ratios['json']):.2f}, "
            f"{statistics.median(wall_ratios['yaml']):.2f}"
        )


if __name__ == "__main__":
    main()
