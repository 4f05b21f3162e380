"""Sync providers, evaluators and verifiers: worker threads, bounded, timed out, cancellable.

The async tests run on asyncio and on trio (conftest), so the threads report back to both."""

from __future__ import annotations

import asyncio
import os
import signal
import threading

import pytest

import benchkit
from benchkit import (
    CallableProvider,
    EvaluatorSpec,
    Response,
    Runner,
    RunResult,
    Score,
    Task,
    Verdict,
    VerifierSpec,
)
from benchkit.protocols import VerifyContext
from benchkit.registry import default_registries

from ._support import make_suite

pytestmark = pytest.mark.anyio


async def test_blocking_functions_run_side_by_side_up_to_the_concurrency() -> None:
    # Five calls meet at a barrier: only possible if five run at once, off the loop.
    barrier = threading.Barrier(5, timeout=20)

    def system(x: int) -> str:
        barrier.wait()
        return str(x)

    result = await Runner().run(make_suite({"s": CallableProvider(system)}, n=10, concurrency=5))
    assert result.aggregate("s").passed == 10


async def test_worker_threads_never_exceed_the_run_concurrency() -> None:
    lock = threading.Lock()
    running, peak = [0], [0]

    def system(x: int) -> str:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        threading.Event().wait(0.01)
        with lock:
            running[0] -= 1
        return str(x)

    result = await Runner().run(make_suite({"s": CallableProvider(system)}, n=30, concurrency=3))
    assert result.aggregate("s").passed == 30
    assert 1 <= peak[0] <= 3


async def test_a_blocking_call_past_the_timeout_is_a_timeout_and_is_abandoned() -> None:
    release = threading.Event()
    returned = threading.Event()

    def hangs(x: int) -> str:
        release.wait(30)
        returned.set()
        return str(x)

    suite = make_suite({"s": CallableProvider(hangs)}, n=2, timeout=0.2)
    try:
        result = await Runner().run(suite)
        # The run ended while the calls were still blocked in their threads.
        assert not returned.is_set()
    finally:
        release.set()
    assert [c.status for c in result.cells] == ["timeout", "timeout"]
    assert result.cells[0].error == "timed out after 0.2s"


async def test_cancelling_a_run_does_not_wait_for_blocked_calls() -> None:
    release = threading.Event()
    runner = Runner()

    def hangs(x: int) -> str:
        if x >= 2:
            runner.cancel_threadsafe()  # from the worker thread, like a signal handler would
            release.wait(30)
        return str(x)

    try:
        result = await runner.run(make_suite({"s": CallableProvider(hangs)}, n=6, concurrency=1))
    finally:
        release.set()
    assert result.interrupted
    assert [c.task_id for c in result.cells] == ["t0", "t1"]


async def test_thread_false_calls_the_function_on_the_event_loop_thread() -> None:
    seen: list[str] = []

    def instant(x: int) -> str:
        seen.append(threading.current_thread().name)
        return str(x)

    await Runner().run(make_suite({"on": CallableProvider(instant, thread=False)}, n=2))
    await Runner().run(make_suite({"off": CallableProvider(instant)}, n=2))
    loop_thread = threading.current_thread().name
    assert seen[:2] == [loop_thread, loop_thread]
    assert all(name != loop_thread for name in seen[2:])


class BlockingEvaluator:
    """A plug-in with a plain ``def evaluate`` that blocks (a sync HTTP judge, say)."""

    def __init__(self, barrier: int = 1) -> None:
        self.barrier = threading.Barrier(barrier, timeout=20)
        self.threads: set[str] = set()

    def evaluate(self, task: Task, response: Response) -> Score:
        self.barrier.wait()
        self.threads.add(threading.current_thread().name)
        ok = response.output == task.expected
        return Score(name="blocking", value=float(ok), passed=ok)


class BlockingVerifier:
    def __init__(self) -> None:
        self.threads: set[str] = set()

    def verify(self, task: Task, response: Response, context: VerifyContext) -> Verdict:
        self.threads.add(threading.current_thread().name)
        return Verdict(name="blocking", passed=True)


async def test_sync_evaluators_and_verifiers_run_in_threads() -> None:
    registries = default_registries().copy()
    built: list[BlockingEvaluator | BlockingVerifier] = []

    def make_evaluator(barrier: int = 1) -> BlockingEvaluator:
        built.append(BlockingEvaluator(barrier))
        return built[-1]  # type: ignore[return-value]

    def make_verifier() -> BlockingVerifier:
        built.append(BlockingVerifier())
        return built[-1]  # type: ignore[return-value]

    registries.evaluators.add("blocking", make_evaluator)
    registries.verifiers.add("blocking", make_verifier)
    tasks = [
        Task(
            f"t{i}",
            input=i,
            expected=str(i),
            evaluators=(EvaluatorSpec("blocking", options={"barrier": 4}),),
            verifiers=(VerifierSpec("blocking"),),
        )
        for i in range(8)
    ]
    suite = make_suite({"s": CallableProvider(str, thread=False)}, tasks, concurrency=4)
    result = await Runner(registries=registries).run(suite)
    assert result.aggregate("s").passed == 8
    loop_thread = threading.current_thread().name
    assert len(built) == 2
    for plugin in built:
        assert plugin.threads and loop_thread not in plugin.threads


def test_ctrl_c_in_a_notebook_returns_the_partial_result() -> None:
    # A loop is running in this thread (as in Jupyter) and SIGINT raises KeyboardInterrupt
    # while sync_run waits for its worker thread. Cell t2 sends it and then blocks, so the
    # run cannot end before the interrupt is seen: no timing involved.
    release = threading.Event()

    def system(x: int) -> str:
        if x == 2:
            os.kill(os.getpid(), signal.SIGINT)
            release.wait(30)
        return str(x)

    async def notebook_cell() -> RunResult:
        return benchkit.run(make_suite({"s": CallableProvider(system)}, n=6, concurrency=1))

    loop = asyncio.new_event_loop()  # no asyncio.Runner: SIGINT raises KeyboardInterrupt
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = loop.run_until_complete(notebook_cell())
    finally:
        release.set()
        signal.signal(signal.SIGINT, previous)
        loop.close()
    assert result.interrupted
    assert [c.task_id for c in result.cells] == ["t0", "t1"]
    assert result.not_run == 4


class InlineEvaluator:
    """A plain `def evaluate` that opts out of the thread: called on the event loop."""

    thread = False

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def evaluate(self, task: Task, response: Response) -> Score:
        self.threads.add(threading.current_thread().name)
        return Score(name="inline", value=1.0, passed=True)


async def test_a_sync_evaluator_with_thread_false_runs_on_the_loop() -> None:
    registries = default_registries().copy()
    built: list[InlineEvaluator] = []

    def make() -> InlineEvaluator:
        built.append(InlineEvaluator())
        return built[-1]

    registries.evaluators.add("inline", make)
    suite = make_suite({"s": CallableProvider(str, thread=False)}, n=3, evaluator="inline")
    result = await Runner(registries=registries).run(suite)
    assert result.aggregate("s").passed == 3
    assert built[0].threads == {threading.current_thread().name}
