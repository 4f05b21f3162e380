"""The Runner: drives tasks × conditions × epochs through providers, verifiers, evaluators.

Design points, each measured or tested:

* The Runner decides what runs; an executor (:mod:`benchkit.executors`) decides where. The
  default, in-process one is a fixed pool of ``concurrency`` workers pulling cells from one
  shared iterator; there is no task (or memory stream) per cell, so a 200,000-cell run
  costs 200,000 loop iterations, not 200,000 tasks. A condition's ``concurrency`` adds a
  per-provider cap. Whatever the executor, finished cells come back to this process, which
  alone writes them to the sinks.
* Every finished cell goes to the sinks at once, in completion order; nothing that finished
  is lost when a later cell, the process or the user stops the run.
* All state lives in a per-run object: any number of runs may share an event loop.
* Works on asyncio and trio (anyio), and has a sync twin (:func:`benchkit.run`).
* A recorded cell is bounded: every string in its output and raw reply is cut at
  :data:`MAX_OUTPUT_CHARS`, every reason, message and string in score or verdict details or
  response metadata at :data:`MAX_TEXT_CHARS`, the cell's error at 2,000 characters; a cut
  text ends with ``"…[truncated N characters]"``. Evaluators see the whole output first.

The package, one module per job: :mod:`~benchkit.runner._runner` (the :class:`Runner`:
configuration and its runs in progress; :class:`RunStream`), :mod:`~benchkit.runner._state`
(per-run state: which cells run and in what order, recording, the result),
:mod:`~benchkit.runner._cells` (cell execution: the plug-ins built in the process that
runs the cells, attempts, retries, graders — and :func:`open_cells`, the seam through which
an executor runs cells anywhere), :mod:`~benchkit.runner._bounded` (what a recorded cell
may hold) and :mod:`~benchkit.runner._sync` (the sync bridge, :func:`sync_run`).

    >>> import benchkit
    >>> from benchkit import Benchmark, Condition, Suite, Task, EvaluatorSpec
    >>> suite = Suite(
    ...     Benchmark("echo", tasks=[Task("t1", input="hi", expected="hi")],
    ...               evaluators=[EvaluatorSpec("exact")]),
    ...     conditions=[Condition("echo", benchkit.CallableProvider(lambda x: x))],
    ... )
    >>> benchkit.run(suite).aggregate("echo").pass_rate
    1.0
"""

from __future__ import annotations

from benchkit.runner._bounded import MAX_OUTPUT_CHARS, MAX_TEXT_CHARS
from benchkit.runner._cells import GRADER_GRACE, Cells, open_cells
from benchkit.runner._runner import Runner, RunStream, check_suite
from benchkit.runner._state import Progress, ProgressCallback, new_run_id
from benchkit.runner._sync import sync_run

__all__ = [
    "Cells",
    "GRADER_GRACE",
    "MAX_OUTPUT_CHARS",
    "MAX_TEXT_CHARS",
    "Progress",
    "ProgressCallback",
    "RunStream",
    "Runner",
    "check_suite",
    "new_run_id",
    "open_cells",
    "sync_run",
]
