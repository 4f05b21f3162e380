"""Loading a big native benchmark from YAML against the same benchmark from JSON — printed.

    python perf/yaml_loading.py                  # 100,000 tasks
    python perf/yaml_loading.py --tasks 20000    # quicker

Writes one benchmark of ``--tasks`` tasks (an input object, an expectation, tags, a
timeout each) as JSON and as block-style YAML into a temporary directory, then loads each
with :func:`benchkit.formats.load` in a fresh subprocess, so each figure's peak RSS is its
own. The JSON load is the floor; target (issue #14): YAML at most 5x the JSON time and
under 300 MB peak RSS at 100,000 tasks.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import resource, sys, time
from benchkit.formats import load
started = time.perf_counter()
suite = load(sys.argv[1])
elapsed = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(elapsed, peak, len(suite.benchmark.tasks))
"""


def write(directory: Path, tasks: int) -> tuple[Path, Path]:
    head = {
        "benchkit": 1,
        "id": "big",
        "name": "Big",
        "evaluators": ["exact"],
        "conditions": [{"id": "m", "provider": {"type": "mock"}}],
    }
    items = [
        {
            "id": f"task-{i}",
            "input": {"question": f"What is {i} + {i}?", "context": "some words here"},
            "expected": str(2 * i),
            "tags": ["arith", "easy"],
            "timeout": 10,
        }
        for i in range(tasks)
    ]
    as_json = directory / "big.json"
    as_json.write_text(json.dumps({**head, "tasks": items}))
    as_yaml = directory / "big.yaml"
    with as_yaml.open("w") as out:
        out.write("benchkit: 1\nid: big\nname: Big\nevaluators: [exact]\n")
        out.write("conditions:\n  - id: m\n    provider: {type: mock}\ntasks:\n")
        for item in items:
            out.write(
                f"  - id: {item['id']}\n    input:\n"
                f'      question: "{item["input"]["question"]}"\n'
                f"      context: some words here\n"
                f'    expected: "{item["expected"]}"\n'
                f"    tags: [arith, easy]\n    timeout: 10\n"
            )
    return as_json, as_yaml


def measure(path: Path) -> tuple[float, float, int]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], check=True, capture_output=True, text=True
    ).stdout.split()
    return float(out[0]), float(out[1]), int(out[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        as_json, as_yaml = write(Path(tmp), args.tasks)
        print(f"python {sys.version.split()[0]}; {args.tasks} tasks; best of {args.repeat}")
        best: dict[str, tuple[float, float, int]] = {}
        for _ in range(args.repeat):
            for name, path in (("json", as_json), ("yaml", as_yaml)):
                result = measure(path)
                if name not in best or result[0] < best[name][0]:
                    best[name] = result
        for name, (seconds, peak, n) in best.items():
            size = (as_json if name == "json" else as_yaml).stat().st_size / 1e6
            print(
                f"{name:5} {n} tasks  {size:6.1f} MB  load {seconds:6.2f} s  peak RSS {peak:6.1f} MB"
            )
        ratio = best["yaml"][0] / best["json"][0]
        print(
            f"ratio yaml/json load time = {ratio:.2f} (target <= 5); "
            f"yaml peak {best['yaml'][1]:.0f} MB (target < 300)"
        )


if __name__ == "__main__":
    main()
