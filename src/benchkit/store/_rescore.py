"""Rescore: a stored run's outputs graded again by other evaluators, as a new run (#44).

The new run is an ordinary run of the Runner, so it is stored, aggregated, compared and
reported like any other: its tasks are the parent run's task snapshots (the store keeps
one per task of every run, whatever its format or whoever started it), its conditions
answer each cell with the parent's stored response instead of calling the system under
test, and its evaluators are the ones given. What the parent's verifiers decided is
carried over as it was (they check the world the system acted on — a workspace, a
sandbox — which is gone); cells that errored before answering error the same way. LLM
judges are asked through the store's reply cache, so a rescore repeated costs nothing.

The new run records its parent (:attr:`benchkit.results.RunInfo.parent_run_id`); comparing
the two shows what the new scorer changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from benchkit.errors import ConfigError, InvocationError, StoreError
from benchkit.model import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    Response,
    ScoringSpec,
    Source,
    Suite,
    Task,
    VerifierSpec,
)
from benchkit.results import CellResult, RunInfo, RunResult, Verdict

if TYPE_CHECKING:
    from benchkit.model import Request
    from benchkit.protocols import ResultSink, VerifyContext
    from benchkit.registry import Registries
    from benchkit.store._queries import StoreReader

__all__ = ["Parented", "rescore_suite", "snapshots", "with_parent"]

#: The verifier that hands back a parent cell's stored verdicts, registered on the
#: rescore's own copy of the registries only.
REPLAYED = "benchkit.replayed-verdict"

_Key = tuple[str, str, int]


class _Replay:
    """A condition's provider in a rescore: the parent cell's stored response, or the
    error it ended with (never retried: it is a record, not a call)."""

    def __init__(self, cells: Mapping[_Key, CellResult], parent: str) -> None:
        self._cells = cells
        self._parent = parent

    async def invoke(self, request: Request) -> Response:
        key = (request.task.id, request.condition.id, request.epoch)
        cell = self._cells.get(key)
        if cell is None:
            raise InvocationError(
                f"cell {'/'.join(map(str, key))} is not in run {self._parent!r}",
                retryable=False,
            )
        if cell.response is None:
            raise InvocationError(
                cell.error or f"the cell {cell.status} in run {self._parent!r}",
                category=cell.error_category if cell.errored else "execution_error",
                retryable=False,
            )
        return cell.response


class _ReplayedVerdict:
    """Verifier ``index`` of a parent cell, as it decided then."""

    def __init__(self, cells: Mapping[_Key, CellResult], index: int) -> None:
        self._cells = cells
        self._index = index

    async def verify(self, task: Task, response: Response, context: VerifyContext) -> Verdict:
        cell = self._cells.get((task.id, context.condition.id, context.epoch))
        verdicts = () if cell is None else cell.verdicts
        if self._index < len(verdicts):
            return verdicts[self._index]
        return Verdict(name="not verified", passed=True, message="no such verdict in the parent")


class Parented:
    """A sink that records the run's parent in the info it is handed."""

    def __init__(self, sink: ResultSink, parent: str) -> None:
        self.sink = sink
        self.parent = parent

    async def open(self, info: RunInfo) -> None:
        await self.sink.open(attrs.evolve(info, parent_run_id=self.parent))

    async def write(self, cell: CellResult) -> None:
        await self.sink.write(cell)

    async def close(self, result: RunResult) -> None:
        await self.sink.close(with_parent(result, self.parent))


def with_parent(result: RunResult, parent: str) -> RunResult:
    """``result`` recording ``parent`` as the run it rescored."""
    return attrs.evolve(result, info=attrs.evolve(result.info, parent_run_id=parent))


def _evaluator(spec: EvaluatorSpec | str) -> EvaluatorSpec:
    return EvaluatorSpec(spec) if isinstance(spec, str) else spec


def _task(data: Mapping[str, Any], weight: float, verdicts: int) -> Task:
    """The task a snapshot describes, with the parent cells' weight and ``verdicts``
    replayed verifiers."""
    from benchkit.serde import converter

    fields = dict(data)
    calls = fields.pop("expected_tool_calls", None)
    task = Task(**fields, weight=weight)
    if calls:
        task = attrs.evolve(task, expected_tool_calls=converter.structure(calls, tuple[Any, ...]))
    if verdicts:
        specs = tuple(VerifierSpec(REPLAYED, {"index": i}) for i in range(verdicts))
        task = attrs.evolve(task, verifiers=specs)
    return task


def snapshots(reader: StoreReader, run_id: str) -> list[dict[str, Any]]:
    """Run ``run_id``'s task snapshots, in the run's task order."""
    with reader.doing("read a run's tasks"):
        rows = (
            reader._db()
            .execute("SELECT data FROM tasks WHERE run_id = ? ORDER BY position", (run_id,))
            .fetchall()
        )
    return [json.loads(row[0]) for row in rows]


def rescore_suite(
    parent: RunResult,
    snapshots: Sequence[Mapping[str, Any]],
    evaluators: Sequence[EvaluatorSpec | str],
    registries: Registries,
) -> Suite:
    """The suite whose run is ``parent`` rescored with ``evaluators``: the parent's tasks
    that have cells, in their order; its conditions, answering from its cells; its
    options, without retries or early stopping. Registers the replayed-verdict verifier
    on ``registries`` (a copy: the rescore's own)."""
    info = parent.info
    if not evaluators:
        raise ConfigError(
            f"rescoring run {info.run_id!r} needs at least one evaluator",
            fix="name one: --evaluator exact (repeatable), or evaluators=[...].",
        )
    if parent.interrupted:
        raise ConfigError(
            f"run {info.run_id!r} did not finish ({parent.not_run} cells never ran)",
            fix="finish it first (the same command with --resume), then rescore it.",
        )
    cells = {cell.key: cell for cell in parent.cells}
    by_task: dict[str, list[CellResult]] = {}
    for cell in parent.cells:
        by_task.setdefault(cell.task_id, []).append(cell)
    found = {str(s.get("id")): s for s in snapshots}
    missing = [task_id for task_id in by_task if task_id not in found]
    if missing:
        raise StoreError(
            f"run {info.run_id!r} has no task snapshot for {len(missing)} of its tasks "
            f"({', '.join(missing[:3])}): it was stored before benchkit kept them (schema 5)",
            fix="run the benchmark again; the new run can be rescored.",
        )
    tasks = tuple(
        _task(
            found[task_id],
            by_task[task_id][0].weight,
            max(len(c.verdicts) for c in by_task[task_id]),
        )
        for task_id in sorted(by_task, key=lambda t: by_task[t][0].index)
    )
    registries.verifiers.add(REPLAYED, lambda index: _ReplayedVerdict(cells, index), replace=True)
    replay = _Replay(cells, info.run_id)
    conditions = tuple(Condition(c.id, replay, label=c.label) for c in info.conditions)
    benchmark = Benchmark(
        id=info.benchmark_id,
        name=info.benchmark_name,
        version=info.benchmark_version,
        tasks=tasks,
        scoring=ScoringSpec(info.scoring_method, info.scoring_k),  # type: ignore[arg-type]
        evaluators=tuple(_evaluator(e) for e in evaluators),
        source=Source(path=info.source_path, format=info.source_format),
    )
    options = attrs.evolve(info.options, retries=0, until_decided=False, margin=None)
    return Suite(benchmark, conditions=conditions, options=options)
