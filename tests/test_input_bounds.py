"""A few bytes of a file or an option cannot take the machine (issue #31, items 2-4).

Each finding of the audit is reproduced first, through the real CLI where the CLI was
concerned, under an address-space cap (``RLIMIT_AS``) so that a regression fails the test
instead of exhausting the machine that runs it:

* workers: never more than cells, whatever ``concurrency`` says; ``1e30`` and
  ``--concurrency 1000000`` are refused, naming the place;
* bounds: every numeric run option and CLI option is finite and bounded (the bounds are
  one table, :mod:`benchkit._limits`, which the schemas and docs/limits.md repeat);
* MemoryBench: ``retrieval_limit`` allocates by what a query has, not by what the file
  claims; ``NaN`` is refused, not a traceback; empty data files are refused;
* YAML aliases that repeat a large string are refused by the characters they add;
* JSON ``NaN`` / ``Infinity`` literals and YAML ``.nan`` / ``.inf`` in numeric options are
  refused with the file, line and path; ``phase_delay_ms: Infinity`` never sleeps forever.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchkit import _limits
from benchkit.errors import BenchkitError, ConfigError, FormatError
from benchkit.executors._base import start_workers
from benchkit.formats import load
from benchkit.formats._source import parse_document
from benchkit.model import Condition, RunOptions
from benchkit.providers import CallableProvider, MockProvider, SubprocessProvider
from benchkit.runner import Runner

from ._support import REPO, make_suite, one_paragraph_error

#: The address space a CLI subprocess gets: ample for benchkit (it validates a file in
#: ~60 MB), far below what each finding took (2 GB to 24 GB).
CAP = 1024 * 1024 * 1024


def cli(*args: str, cwd: Path, cap: int = CAP) -> subprocess.CompletedProcess[str]:
    """``python -m benchkit ARGS`` in ``cwd``, its address space capped at ``cap`` bytes."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    return subprocess.run(
        [sys.executable, "-m", "benchkit", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
        timeout=180,
        preexec_fn=limit,
    )


NATIVE = """\
benchkit: 1
id: bounds
conditions:
  - id: m
    provider: {type: mock, outputs: {a: x, b: x}}
run: {RUN}
tasks:
  - {id: a, input: x, expected: x}
  - {id: b, input: x, expected: x}
"""


def check(command: str, path: Path, *more: str) -> str:
    """The one error line of ``validate PATH`` or ``run PATH --no-store`` (exit 2)."""
    extra = ("--no-store", *more) if command == "run" else more
    return one_paragraph_error(cli(command, str(path), *extra, cwd=path.parent))


def line_of(path: Path, needle: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def native(tmp_path: Path, run: str = "{}", name: str = "b.yaml") -> Path:
    path = tmp_path / name
    path.write_text(NATIVE.replace("{RUN}", run))
    return path


# --------------------------------------------------------------------------- workers


def test_workers_never_outnumber_cells() -> None:
    """concurrency 1000 on a 4-cell run: 4 workers, not 1,000 (each costs memory)."""
    seen: list[int] = []

    async def provider(value: Any) -> str:
        seen.append(len(asyncio.all_tasks()))
        await anyio.sleep(0.01)
        return str(value)

    suite = make_suite({"p": CallableProvider(provider)}, n=4, concurrency=_limits.MAX_CONCURRENCY)
    result = anyio.run(Runner().run, suite)
    assert len(result.cells) == 4 and all(c.status == "pass" for c in result.cells)
    assert max(seen) < 4 + 10, seen  # 4 workers and the run's own few tasks


@pytest.mark.parametrize(("count", "cells", "started"), [(1000, 3, 3), (2, 5, 2), (5, 0, 0)])
def test_start_workers_hands_each_worker_a_cell(count: int, cells: int, started: int) -> None:
    taken: dict[int, list[int]] = {}

    async def worker(number: int, items: Any) -> None:
        taken[number] = []
        for item in items:
            taken[number].append(item[0])
            await anyio.sleep(0)

    async def main() -> None:
        todo = iter([(i, None, 0, None, 0) for i in range(cells)])
        async with anyio.create_task_group() as tg:
            start_workers(tg, count, todo, worker)  # type: ignore[arg-type]

    anyio.run(main)
    assert len(taken) == started
    assert sorted(i for items in taken.values() for i in items) == list(range(cells))
    assert all(taken.values())  # every worker started had a cell


def test_a_run_at_the_bound_starts_one_worker_per_cell_through_the_cli(tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text(
        "import asyncio\n\nasync def solve(request):\n    return str(len(asyncio.all_tasks()))\n"
    )
    bench = tmp_path / "b.yaml"
    bench.write_text(
        "benchkit: 1\nid: w\nevaluators: [exact]\n"
        "conditions: [{id: p, provider: {type: python, file: probe.py, function: solve}}]\n"
        "tasks: [{id: a, input: 1}, {id: b, input: 2}, {id: c, input: 3}, {id: d, input: 4}]\n"
    )
    proc = cli(
        "run", str(bench), "--concurrency", "1000", "--no-store", "-o", "r.json", cwd=tmp_path
    )
    assert proc.returncode in (0, 1), proc.stderr
    cells = json.loads((tmp_path / "r.json").read_text())["cells"]
    outputs = [int(cell["response"]["output"]) for cell in cells]
    assert len(outputs) == 4 and max(outputs) < 4 + 10, outputs


def test_concurrency_1e30_is_refused_at_validate_naming_the_line(tmp_path: Path) -> None:
    bench = native(tmp_path, "{concurrency: 1e30}")
    for command in ("validate", "run"):
        error = check(command, bench)
        assert "b.yaml:6:" in error and "$.run.concurrency" in error
        assert f"<= {_limits.MAX_CONCURRENCY}" in error


def test_concurrency_1000000_on_the_command_line_is_a_usage_error(tmp_path: Path) -> None:
    bench = native(tmp_path)
    error = check("run", bench, "--concurrency", "1000000")
    assert "--concurrency" in error and "1,000" in error


# --------------------------------------------------------------------------- CLI options


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--concurrency", "0"),
        ("--concurrency", "1001"),
        ("--timeout", "nan"),
        ("--timeout", "inf"),
        ("--timeout", "1e999"),
        ("--timeout", "0"),
        ("--timeout", "86401"),
        ("--retries", "101"),
        ("--retries", "-1"),
        ("--epochs", "1001"),
        ("--seed", str(2**63)),
        ("--limit", str(10**10)),
        ("--limit", "0"),
        ("--fail-under", "nan"),
        ("--fail-under", "2"),
        ("--workers", "100000"),
    ],
)
def test_every_numeric_run_option_is_bounded_and_finite(
    tmp_path: Path, option: str, value: str
) -> None:
    from benchkit.cli._main import _parser

    with pytest.raises(SystemExit) as info:
        _parser().parse_args(["run", "b.yaml", option, value])
    assert info.value.code == 2


def test_an_out_of_range_option_names_the_option_and_the_range(tmp_path: Path) -> None:
    error = check("run", native(tmp_path), "--timeout", "nan")
    assert "argument -t/--timeout: must be a finite number, got 'nan'" in error
    assert "> 0 and <= 86,400" in error


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--skills", "x", "--runs", "1001"],
        ["eval", "--skills", "x", "--concurrency", "100000"],
        ["eval", "--skills", "x", "--timeout", "1e12"],
        ["eval", "--skills", "x", "--retries", "1000"],
        ["eval", "--skills", "x", "--seed", str(2**64)],
        ["memory", "eval", "-p", "x", "-b", "y", "--pass-correctness", "nan"],
        ["mcp", "tools", "--command", "x", "--timeout", "inf"],
        ["runs", "list", "-n", str(10**12)],
    ],
)
def test_the_tools_commands_bound_their_options(argv: list[str]) -> None:
    from benchkit.cli._main import _parser

    with pytest.raises(SystemExit) as info:
        _parser().parse_args(argv)
    assert info.value.code == 2


def test_memory_eval_bounds_its_concurrency(tmp_path: Path) -> None:
    error = one_paragraph_error(
        cli("memory", "eval", "-p", "LocalBaseline", "-b", "x", "-c", "1000000", cwd=tmp_path)
    )
    assert "--concurrency must be >= 1 and <= 1,000, got 1000000" in error


# --------------------------------------------------------------------------- run options


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("concurrency", 10**30),
        ("concurrency", 1e30),
        ("timeout", math.nan),
        ("timeout", math.inf),
        ("retries", 10**9),
        ("backoff_base", math.inf),
        ("backoff_max", 1e9),
        ("epochs", 10**6),
        ("seed", 2**64),
        ("epochs", 2.5),
    ],
)
def test_run_options_refuse_non_finite_and_huge_values(field: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"^{field} must be") as info:
        RunOptions(**{field: value})
    assert "docs/limits.md" in str(info.value)


def test_a_condition_cap_is_bounded() -> None:
    with pytest.raises(ConfigError, match="concurrency must be <= 1,000"):
        Condition("c", provider=CallableProvider(str), concurrency=10**6)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e30", "1e999"])
def test_timeout_nan_fails_validate_instead_of_every_cell(
    tmp_path: Path, suffix: str, value: str
) -> None:
    """``timeout: NaN`` passed validate, then every cell failed ("deadline must not be NaN")."""
    if suffix == ".yaml":
        literal = {"nan": ".nan", "inf": ".inf", "-inf": "-.inf"}.get(value, value)
        bench = native(tmp_path, f"{{timeout: {literal}}}")
    else:
        literal = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}.get(value, value)
        doc = json.loads(json.dumps(_native_data()))
        doc["run"] = {"timeout": "@"}
        bench = tmp_path / "b.json"
        bench.write_text(json.dumps(doc, indent=1).replace('"@"', literal))
    with pytest.raises(FormatError) as info:
        load(bench)
    assert info.value.json_path == "$.run.timeout", str(info.value)
    assert info.value.line == line_of(bench, "timeout"), str(info.value)
    if suffix == ".json" and value in ("nan", "inf", "-inf"):
        assert "is not a JSON number" in str(info.value)


def test_timeout_nan_through_the_cli_is_exit_2_at_validate_and_run(tmp_path: Path) -> None:
    bench = native(tmp_path, "{timeout: .nan}")
    for command in ("validate", "run"):
        error = check(command, bench)
        assert "b.yaml:6:" in error and "expected a finite number, got NaN" in error


def _native_data() -> dict[str, Any]:
    from ruamel.yaml import YAML

    data: dict[str, Any] = YAML(typ="safe", pure=True).load(NATIVE.replace("{RUN}", "{}"))
    return data


# --------------------------------------------------------------------------- JSON literals


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_json_nan_and_infinity_literals_are_refused_where_they_are(literal: str) -> None:
    text = '{\n  "tasks": [\n    {"id": "a", "input": [1, ' + literal + "]}\n  ]\n}"
    with pytest.raises(FormatError, match=f"{literal} is not a JSON number") as info:
        parse_document(text, path="b.json", kind="json")
    assert (info.value.line, info.value.column) == (3, text.splitlines()[2].index(literal) + 1)
    assert info.value.json_path == "$.tasks[0].input[1]"


def test_the_strings_nan_and_infinity_stay_strings() -> None:
    doc = parse_document('{"a": "NaN", "b": ["Infinity"]}', path="b.json", kind="json")
    assert doc.data == {"a": "NaN", "b": ["Infinity"]}


# --------------------------------------------------------------------------- YAML aliases


def test_aliases_of_a_large_string_are_refused_by_size(tmp_path: Path) -> None:
    """A 1 MB string repeated by 1,000 aliases took 2 GB and 25 s in validate."""
    aliases = ", ".join(["*s"] * 1000)
    bench = tmp_path / "b.yaml"
    bench.write_text(
        NATIVE.replace("{RUN}", "{}").replace(
            "id: bounds\n", f"id: bounds\ndescription: &s {'x' * 1_000_000}\n"
        )
        + f"  - {{id: c, input: [{aliases}]}}\n"
    )
    error = check("validate", bench)
    assert re.search(r"b\.yaml:11:\d+: \$\.tasks\[2\]\.input\[\d+\]: aliases expand", error)
    assert "characters" in error and "Fix: " in error


def test_aliases_may_repeat_up_to_ten_times_the_file() -> None:
    big = "y" * 100_000
    text = f"a: &s {big}\nb: [{', '.join(['*s'] * 99)}]\n"  # 9.9 MB < 10 MB: allowed
    assert len(parse_document(text, path="t.yaml", kind="yaml").data["b"]) == 99
    many = f"a: &s {'y' * 1_000_000}\nb: [{', '.join(['*s'] * 11)}]\n"
    with pytest.raises(FormatError, match="aliases expand to more than 10,000,"):
        parse_document(many, path="t.yaml", kind="yaml")


# --------------------------------------------------------------------------- MemoryBench

MANIFEST: dict[str, Any] = {
    "manifest_version": "1",
    "name": "bounds",
    "version": "1.0.0",
    "data_file": "data.json",
    "ingestion": {"strategy": "session-based", "sessions_field": "sessions"},
    "query": {"question_field": "question", "expected_answer_field": "answer"},
    "evaluation": {"protocol": "exact-match"},
    "metrics": ["correctness", "retrieval_ndcg"],
    "required_capabilities": ["add_memory", "retrieve_memory"],
}
CASE = {
    "id": "c1",
    "question": "Where did Ana go?",
    "answer": "Lisbon",
    "sessions": [[{"role": "user", "content": "Ana went to Lisbon."}]],
}


def memorybench(tmp_path: Path, manifest: dict[str, Any], data: str) -> Path:
    (tmp_path / "manifest.json").write_text(json.dumps(manifest, indent=2))
    (tmp_path / manifest["data_file"]).write_text(data)
    return tmp_path / "manifest.json"


@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e999", "1e30", "-Infinity"])
def test_retrieval_limit_nan_or_huge_is_exit_2_not_a_traceback(tmp_path: Path, value: str) -> None:
    manifest = json.loads(json.dumps(MANIFEST))
    manifest["query"]["retrieval_limit"] = "@"
    path = memorybench(tmp_path, manifest, json.dumps([CASE]))
    path.write_text(path.read_text().replace('"@"', value))
    where = f"manifest.json:{line_of(path, 'retrieval_limit')}:"
    for command in ("validate", "run"):
        error = check(command, path)
        assert where in error and "$.query.retrieval_limit" in error


def test_retrieval_at_the_bound_allocates_by_what_exists(tmp_path: Path) -> None:
    """retrieval_limit 1e30 grew to 9 GB (a discount per rank up to k); the largest
    allowed limit runs in a few MB more than a small one."""
    manifest = json.loads(json.dumps(MANIFEST))
    manifest["query"]["retrieval_limit"] = _limits.MAX_RETRIEVAL_LIMIT
    path = memorybench(tmp_path, manifest, json.dumps([CASE]))
    proc = cli("run", str(path), "--no-store", "-o", "r.json", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    cell = json.loads((tmp_path / "r.json").read_text())["cells"][0]
    assert cell["status"] in ("pass", "fail"), cell


def test_retrieval_metrics_never_allocate_by_the_cutoff() -> None:
    """Run in a subprocess capped at 1 GB: k = 10**9 used to build 10**9 discounts."""
    code = (
        "from benchkit.metrics.retrieval import evaluate_query\n"
        "print(evaluate_query({'a': 2.0, 'b': 1.0}, {'b': 1}, k=10**9, "
        "metrics=['ndcg', 'map', 'recall', 'precision']))\n"
    )

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))

    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
        timeout=120,
        preexec_fn=limit,
    )
    assert proc.returncode == 0, proc.stderr
    assert "'ndcg': 0.63" in proc.stdout and "'recall': 1.0" in proc.stdout


def test_phase_delay_infinity_is_refused_instead_of_sleeping_forever(tmp_path: Path) -> None:
    manifest = {
        **MANIFEST,
        "ingestion": {
            "strategy": "add-delete-verify",
            "add_content_field": "content",
            "delete_target_field": "content",
            "phase_delay_ms": "@",
        },
        "metrics": ["correctness"],
    }
    for value in ("Infinity", "1e999", str(_limits.MAX_WAIT_S * 1000 + 1)):
        path = memorybench(tmp_path, manifest, json.dumps([{**CASE, "content": "x"}]))
        path.write_text(path.read_text().replace('"@"', value))
        error = check("run", path)
        assert "$.ingestion.phase_delay_ms" in error


@pytest.mark.parametrize(
    ("name", "data"),
    [("data.json", ""), ("data.json", "[]"), ("data.jsonl", ""), ("data.jsonl", "\n  \n")],
)
def test_empty_memorybench_data_files_are_refused(tmp_path: Path, name: str, data: str) -> None:
    path = memorybench(tmp_path, {**MANIFEST, "data_file": name}, data)
    for command in ("validate", "run"):
        error = check(command, path)
        assert f"{name}:" in error and ("no cases" in error or "is empty" in error)


def test_a_flattened_benchmark_whose_lists_are_all_empty_is_refused(tmp_path: Path) -> None:
    manifest = {**MANIFEST, "flatten": {"field": "qa"}}
    path = memorybench(tmp_path, manifest, json.dumps([{"id": "r", "qa": []}]))
    with pytest.raises(BenchkitError, match="holds no cases"):
        load(path)


# --------------------------------------------------------------------------- the table


def _numeric_properties(node: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths (through the schema) of every property declared a number or an integer."""
    found: list[tuple[str, ...]] = []
    if isinstance(node, dict):
        kind = node.get("type")
        kinds = [kind] if isinstance(kind, str) else kind or []
        if "number" in kinds or "integer" in kinds:
            found.append(path)
        for key, value in node.items():
            found += _numeric_properties(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _numeric_properties(value, (*path, str(index)))
    return found


@pytest.mark.parametrize("name", ["native", "eval_skills", "memorybench", "codeforge"])
def test_every_number_in_the_format_schemas_has_a_bound_from_the_table(name: str) -> None:
    from benchkit._jsonschema import load_schema

    schema = load_schema(name)
    allowed = {value for value, _, _ in _limits.BOUNDS.values()}
    allowed |= {_limits.MAX_TIMEOUT_S * 1000, _limits.MAX_WAIT_S * 1000}  # in milliseconds
    for path in _numeric_properties(schema):
        node: Any = schema
        for step in path:
            node = node[int(step)] if isinstance(node, list) else node[step]
        if node.get("exclusiveMaximum") == 1:  # a proportion (until_decided's margin)
            continue
        if (node.get("minimum"), node.get("maximum")) == (0, 1):  # a fraction (reproduces.value)
            continue
        assert node.get("maximum") in allowed, (name, path, node)
        if path[-1] == "seed":
            assert node["minimum"] == _limits.MIN_SEED


def test_docs_limits_lists_every_bound() -> None:
    text = (REPO / "docs" / "limits.md").read_text()
    for name, (value, _, _) in _limits.BOUNDS.items():
        row = next((line for line in text.splitlines() if f"`{name}`" in line), None)
        assert row is not None, name
        assert f"{value:,}" in row, (name, row)


def test_integral_floats_in_integer_options_run_as_integers(tmp_path: Path) -> None:
    """``concurrency: 4.0`` is an integer to JSON Schema; it was a TypeError mid-run."""
    bench = tmp_path / "b.yaml"
    bench.write_text(
        NATIVE.replace("{RUN}", "{concurrency: 4.0, epochs: 2.0, retries: 1.0, seed: 3.0}")
        .replace("provider: {type: mock", "concurrency: 2.0\n    provider: {type: mock")
        .replace("run:", "scoring: {k: 1.0}\nrun:")
    )
    suite = load(bench)
    options = suite.options
    numbers = (options.concurrency, options.epochs, options.retries, options.seed)
    assert numbers == (4, 2, 1, 3) and all(type(n) is int for n in numbers)
    assert type(suite.conditions[0].concurrency) is int and type(suite.benchmark.scoring.k) is int
    result = anyio.run(Runner().run, suite)
    assert len(result.cells) == 4 and all(cell.status == "pass" for cell in result.cells)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: MockProvider(outputs={}, delay=math.inf), "delay"),
        (lambda: SubprocessProvider(command="true", kill_grace=math.inf), "kill_grace"),
        (lambda: SubprocessProvider(command="true", memory_mb=10**9), "memory_mb"),
        (lambda: SubprocessProvider(command="true", cpu_seconds=10**9), "cpu_seconds"),
    ],
)
def test_provider_waits_and_limits_are_bounded(make: Any, name: str) -> None:
    """``delay: .inf`` (mock) or ``kill_grace: .inf`` slept forever."""
    with pytest.raises(ConfigError, match=f"^{name} must be"):
        make()


# --------------------------------------------------------------------------- pipes


def test_a_pipe_named_inside_a_benchmark_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A tasks file or MemoryBench data file that is a FIFO would block the reader (and a
    server's worker thread) forever: it is refused at once, naming the file (#31 item 7)."""
    (tmp_path / "tasks.jsonl").unlink(missing_ok=True)
    os.mkfifo(tmp_path / "tasks.jsonl")
    bench = tmp_path / "b.yaml"
    bench.write_text(
        "benchkit: 1\nid: p\nevaluators: [exact]\ntasks_file: tasks.jsonl\n"
        "conditions: [{id: m, provider: {type: mock}}]\n"
    )
    error = check("validate", bench)
    assert "tasks.jsonl" in error and "not a regular file" in error
    data = tmp_path / "mb"
    data.mkdir()
    os.mkfifo(data / "data.jsonl")
    (data / "manifest.json").write_text(
        json.dumps(
            {
                "manifest_version": "1",
                "name": "pipe",
                "version": "1.0.0",
                "data_file": "data.jsonl",
                "ingestion": {"strategy": "simple", "content_field": "c"},
                "query": {"question_field": "q", "expected_answer_field": "a"},
                "evaluation": {"protocol": "exact-match"},
                "metrics": ["correctness"],
                "required_capabilities": ["add_memory", "retrieve_memory"],
            }
        )
    )
    error = one_paragraph_error(cli("validate", str(data), cwd=tmp_path))
    assert "data.jsonl" in error and "not a regular file" in error
