"""A CodeForge run exported as CodeForge's results JSON, and written to a file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchkit.errors import ConfigError
from benchkit.formats.codeforge._loader import FORMAT_NAME, load
from benchkit.formats.codeforge._summary import metric_order
from benchkit.model import Benchmark, Suite

if TYPE_CHECKING:
    from benchkit.results import RunResult


def _benchmark_of(result: RunResult, benchmark: Benchmark | Suite | None) -> Benchmark:
    if isinstance(benchmark, Suite):
        return benchmark.benchmark
    if benchmark is not None:
        return benchmark
    path = result.info.source_path
    if result.info.source_format != FORMAT_NAME or path is None:
        raise ConfigError(
            f"run {result.run_id!r} is not of a CodeForge dataset "
            f"(format {result.info.source_format!r})",
            fix="pass the dataset (benchmark=...) the run was made from.",
        )
    return load(path).benchmark


def _output_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def export_results(
    result: RunResult, benchmark: Benchmark | Suite | None = None
) -> list[dict[str, Any]]:
    """One record per cell in CodeForge's result shape.

    Keys: ``task_id``, ``task_name``, ``scores`` (metric → value, None for a metric that
    errored or did not run), ``actual_output``, ``expected_output``, ``tool_calls``
    (``[{name, args}]``), ``cost_usd`` (None when unknown), ``tokens_in``, ``tokens_out``,
    ``duration_ms`` (the model call's, in whole milliseconds; the cell's when the call
    failed) — then ``condition_id``, ``epoch``, ``status`` and ``error``, which CodeForge
    ignores. ``benchmark`` is the dataset the run was made from (default: loaded again
    from the result's source path).
    """
    bench = _benchmark_of(result, benchmark)
    tasks = {task.id: task for task in bench.iter_tasks()}
    names = metric_order(result.cells, None) or [s.label for s in bench.evaluators]
    records: list[dict[str, Any]] = []
    for cell in result.cells:
        task = tasks.get(cell.task_id)
        if task is None:
            raise ConfigError(
                f"task {cell.task_id!r} of run {result.run_id!r} is not in dataset {bench.id!r}",
                fix="pass the dataset the run was made from.",
            )
        response = cell.response
        usage = response.usage if response is not None else None
        values = {s.name: s.value for s in cell.scores}
        latency = response.latency_ms if response is not None else None
        records.append(
            {
                "task_id": task.id,
                "task_name": task.metadata.get("name", task.description or task.id),
                "scores": {name: values.get(name) for name in names},
                "actual_output": _output_text(response.output if response else None),
                "expected_output": _output_text(task.expected),
                "tool_calls": [
                    {"name": c.name, "args": dict(c.arguments)}
                    for c in (response.tool_calls if response else ())
                ],
                "cost_usd": usage.cost_usd if usage is not None else None,
                "tokens_in": usage.prompt_tokens if usage is not None else 0,
                "tokens_out": usage.completion_tokens if usage is not None else 0,
                "duration_ms": round(latency if latency is not None else cell.duration_ms),
                "condition_id": cell.condition_id,
                "epoch": cell.epoch,
                "status": cell.status,
                "error": cell.error,
            }
        )
    return records


def write_results(
    result: RunResult,
    path: str | os.PathLike[str],
    benchmark: Benchmark | Suite | None = None,
) -> Path:
    """Write :func:`export_results` as a JSON array (UTF-8, indented by 2) to ``path``."""
    target = Path(path)
    text = json.dumps(export_results(result, benchmark), indent=2, ensure_ascii=False)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text + "\n", encoding="utf-8")
    return target
