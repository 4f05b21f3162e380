"""benchkit: typed, async evaluation benchmarks for the systems people build with LLMs.

    >>> import benchkit
    >>> suite = benchkit.Suite(
    ...     benchkit.Benchmark(
    ...         "arith",
    ...         tasks=[benchkit.Task("t1", input="1+1", expected="2")],
    ...         evaluators=[benchkit.EvaluatorSpec("exact")],
    ...     ),
    ...     conditions=[benchkit.Condition("eval", benchkit.CallableProvider(lambda s: str(eval(s))))],
    ... )
    >>> result = benchkit.run(suite)
    >>> result.aggregate("eval").passed
    1

Everything listed in ``__all__`` is public; modules with a leading underscore are not.
"""

from __future__ import annotations

import os

from benchkit._lazy import lazy_getattr
from benchkit._version import __version__

# typing.TYPE_CHECKING without importing typing (and re, functools, collections with it):
# type checkers take any name TYPE_CHECKING to be true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from benchkit._api import StoreArg
    from benchkit.errors import (
        BenchkitError,
        ConfigError,
        FormatError,
        InvocationError,
        LLMError,
        NotFoundError,
        ProviderError,
        RegistryError,
        RunNotFoundError,
        StatsError,
        StoreError,
    )
    from benchkit.executors import Executor
    from benchkit.executors._ray import RayExecutor
    from benchkit.judges import JudgeReport
    from benchkit.llm import LocalModel
    from benchkit.model import (
        Benchmark,
        Condition,
        EvaluatorSpec,
        LazyTasks,
        ProviderSpec,
        Reproduces,
        Request,
        Response,
        RetrievedItem,
        RunOptions,
        ScoringSpec,
        SetupStep,
        Source,
        Suite,
        Task,
        ToolCall,
        Usage,
        VerifierSpec,
    )
    from benchkit.protocols import (
        Evaluator,
        MemoryProvider,
        MemoryScope,
        Provider,
        ResultSink,
        Verifier,
        VerifyContext,
    )
    from benchkit.providers import (
        AgentProvider,
        AgentTool,
        CallableProvider,
        HttpProvider,
        MockProvider,
        SubprocessProvider,
    )
    from benchkit.registry import Registries, default_registries, evaluator, provider, verifier
    from benchkit.results import (
        CellResult,
        Comparison,
        ConditionAggregate,
        ConditionInfo,
        GroupAggregate,
        Reproduction,
        RunInfo,
        RunResult,
        Score,
        Verdict,
    )
    from benchkit.runner import Progress, ProgressCallback, Runner, RunStream
    from benchkit.sequential import EarlyStop
    from benchkit.store import JsonlSink, Store
    from benchkit.store._story import Rating
    from benchkit.traces import TracedProvider
    from benchkit.trajectory import Trajectory
    from benchkit.transcript import Transcript, TranscriptEvent

__all__ = [
    "AgentProvider",
    "AgentTool",
    "BenchkitError",
    "Benchmark",
    "CallableProvider",
    "CellResult",
    "Comparison",
    "Condition",
    "ConditionAggregate",
    "ConditionInfo",
    "ConfigError",
    "EarlyStop",
    "Evaluator",
    "EvaluatorSpec",
    "FormatError",
    "GroupAggregate",
    "HttpProvider",
    "InvocationError",
    "JsonlSink",
    "JudgeReport",
    "LLMError",
    "LazyTasks",
    "LocalModel",
    "MemoryProvider",
    "MemoryScope",
    "MockProvider",
    "NotFoundError",
    "Progress",
    "Provider",
    "ProviderError",
    "ProviderSpec",
    "Rating",
    "RayExecutor",
    "Registries",
    "RegistryError",
    "Reproduces",
    "Reproduction",
    "Request",
    "Response",
    "ResultSink",
    "RetrievedItem",
    "RunInfo",
    "RunNotFoundError",
    "RunOptions",
    "RunResult",
    "RunStream",
    "Runner",
    "Score",
    "ScoringSpec",
    "SetupStep",
    "Source",
    "StatsError",
    "Store",
    "StoreError",
    "SubprocessProvider",
    "Suite",
    "Task",
    "ToolCall",
    "TracedProvider",
    "Trajectory",
    "Transcript",
    "TranscriptEvent",
    "Usage",
    "Verdict",
    "Verifier",
    "VerifierSpec",
    "VerifyContext",
    "__version__",
    "arun",
    "default_registries",
    "evaluator",
    "load",
    "provider",
    "rescore",
    "run",
    "verifier",
]

_LAZY = {
    "BenchkitError": "benchkit.errors",
    "ConfigError": "benchkit.errors",
    "FormatError": "benchkit.errors",
    "InvocationError": "benchkit.errors",
    "LLMError": "benchkit.errors",
    "NotFoundError": "benchkit.errors",
    "ProviderError": "benchkit.errors",
    "RegistryError": "benchkit.errors",
    "RunNotFoundError": "benchkit.errors",
    "StatsError": "benchkit.errors",
    "StoreError": "benchkit.errors",
    "RayExecutor": "benchkit.executors._ray",
    "JudgeReport": "benchkit.judges",
    "LocalModel": "benchkit.llm",
    "Benchmark": "benchkit.model",
    "Condition": "benchkit.model",
    "EvaluatorSpec": "benchkit.model",
    "LazyTasks": "benchkit.model",
    "ProviderSpec": "benchkit.model",
    "Reproduces": "benchkit.model",
    "Request": "benchkit.model",
    "Response": "benchkit.model",
    "RetrievedItem": "benchkit.model",
    "RunOptions": "benchkit.model",
    "ScoringSpec": "benchkit.model",
    "SetupStep": "benchkit.model",
    "Source": "benchkit.model",
    "Suite": "benchkit.model",
    "Task": "benchkit.model",
    "ToolCall": "benchkit.model",
    "Usage": "benchkit.model",
    "VerifierSpec": "benchkit.model",
    "Evaluator": "benchkit.protocols",
    "MemoryProvider": "benchkit.protocols",
    "MemoryScope": "benchkit.protocols",
    "Provider": "benchkit.protocols",
    "ResultSink": "benchkit.protocols",
    "Verifier": "benchkit.protocols",
    "VerifyContext": "benchkit.protocols",
    "AgentProvider": "benchkit.providers",
    "AgentTool": "benchkit.providers",
    "CallableProvider": "benchkit.providers",
    "HttpProvider": "benchkit.providers",
    "MockProvider": "benchkit.providers",
    "SubprocessProvider": "benchkit.providers",
    "Registries": "benchkit.registry",
    "default_registries": "benchkit.registry",
    "evaluator": "benchkit.registry",
    "provider": "benchkit.registry",
    "verifier": "benchkit.registry",
    "CellResult": "benchkit.results",
    "Comparison": "benchkit.results",
    "ConditionAggregate": "benchkit.results",
    "ConditionInfo": "benchkit.results",
    "GroupAggregate": "benchkit.results",
    "Reproduction": "benchkit.results",
    "RunInfo": "benchkit.results",
    "RunResult": "benchkit.results",
    "Score": "benchkit.results",
    "Verdict": "benchkit.results",
    "Progress": "benchkit.runner",
    "RunStream": "benchkit.runner",
    "Runner": "benchkit.runner",
    "EarlyStop": "benchkit.sequential",
    "JsonlSink": "benchkit.store",
    "Store": "benchkit.store",
    "Rating": "benchkit.store._story",
    "TracedProvider": "benchkit.traces",
    "Trajectory": "benchkit.trajectory",
    "Transcript": "benchkit.transcript",
    "TranscriptEvent": "benchkit.transcript",
}


# Every public name but the functions below is imported on first use, so `import benchkit`
# loads none of the core (attrs classes, asyncio, anyio, entry points): a program pays for
# what it touches (perf/import_time.py). Only at run time: a type checker sees the names
# imported under TYPE_CHECKING above and nothing else, so a typo such as `benchkit.Runer`
# is an error, not Any.
if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _LAZY)


def load(path: str | os.PathLike[str], *, format: str | None = None, **options: Any) -> Suite:
    """Load a benchmark file or directory into a :class:`Suite`, detecting its format.

    ``format`` forces a format by name (``"native"``, or any registered one).
    """
    from benchkit.formats import load as _load

    return _load(path, format=format, **options)


def _prepare(suite: Suite | str | os.PathLike[str], overrides: dict[str, Any]) -> Suite:
    from benchkit.errors import ConfigError
    from benchkit.model import RunOptions, Suite

    if not isinstance(suite, Suite):
        suite = load(suite)
    options = {k: v for k, v in overrides.items() if v is not None}
    known = RunOptions.__attrs_attrs__
    unknown = sorted(set(options) - {a.name for a in known})
    if unknown:
        raise ConfigError(
            f"unknown run option{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}",
            fix="run options are: " + ", ".join(a.name for a in known) + ".",
        )
    return suite.with_options(**options) if options else suite


def _progress_callback(progress: ProgressCallback | bool | None) -> ProgressCallback | None:
    if progress is True:
        from benchkit._progress import ProgressLines

        return ProgressLines(interval=2.0)
    return progress or None


async def arun(
    suite: Suite | str | os.PathLike[str],
    *,
    sinks: Sequence[ResultSink] = (),
    progress: ProgressCallback | bool | None = None,
    run_id: str | None = None,
    store: StoreArg = None,
    resume: bool = False,
    retry_errors: bool = False,
    executor: Executor | None = None,
    **options: Any,
) -> RunResult:
    """Run a suite (or a benchmark file) and return its result; the async API.

    Every run goes to the run store (see docs/store.md) unless ``store=False``: by default
    ``$BENCHKIT_STORE``, else ``.benchkit/benchkit.db`` under the working directory; pass a
    path or a :class:`Store` to choose. ``resume=True`` continues the latest run of the same
    suite (or run ``run_id``), running only the cells it lacks; ``retry_errors=True`` also
    runs its errored cells again. ``executor`` decides where cells run (default: in this
    process; ``benchkit.RayExecutor(...)`` on a Ray cluster, see docs/scale-out.md); results
    come back here and go to the store either way. Keyword ``options`` override the suite's
    :class:`RunOptions` (``concurrency=20``, ``epochs=5``, ``deterministic=True``, ...).
    ``progress`` is a callback given a :class:`Progress` after every cell, or ``True`` for a
    line on stderr every two seconds (done/total, errors, rate, ETA) — in a notebook too.
    """
    from benchkit._api import arun_stored

    return await arun_stored(
        _prepare(suite, options),
        sinks=sinks,
        progress=_progress_callback(progress),
        run_id=run_id,
        store=store,
        resume=resume,
        retry_errors=retry_errors,
        executor=executor,
    )


def run(
    suite: Suite | str | os.PathLike[str],
    *,
    sinks: Sequence[ResultSink] = (),
    progress: ProgressCallback | bool | None = None,
    run_id: str | None = None,
    store: StoreArg = None,
    resume: bool = False,
    retry_errors: bool = False,
    executor: Executor | None = None,
    backend: str = "asyncio",
    **options: Any,
) -> RunResult:
    """Run a suite from synchronous code — also inside a running event loop (Jupyter).

    Same arguments as :func:`arun`, plus ``backend`` (``"asyncio"`` or ``"trio"``) for the
    loop benchkit starts. Ctrl-C stops the run and returns the partial result
    (``result.interrupted`` is true and ``result.not_run`` counts the cells that did not run).
    """
    from benchkit._api import run_stored

    return run_stored(
        _prepare(suite, options),
        sinks=sinks,
        progress=_progress_callback(progress),
        run_id=run_id,
        store=store,
        resume=resume,
        retry_errors=retry_errors,
        executor=executor,
        backend=backend,
    )


def rescore(
    run: str,
    evaluators: Sequence[EvaluatorSpec | str],
    *,
    store: Store | str | os.PathLike[str] | None = None,
    run_id: str | None = None,
) -> RunResult:
    """Grade a stored run's outputs again with ``evaluators``, as a new stored run that
    records its parent (``result.info.parent_run_id``) — no call to the system under test
    (judges are asked through the store's reply cache). ``run`` is an id, a unique prefix,
    ``latest`` or ``-2``...; ``store`` a :class:`Store` or its path (default: the default
    store). See :meth:`Store.rescore` and docs/store.md.

    .. versionadded:: 0.2.0
    """
    from benchkit.store import Store

    if isinstance(store, Store):
        return store.rescore(run, evaluators, run_id=run_id)
    with Store(store) as opened:
        return opened.rescore(run, evaluators, run_id=run_id)
