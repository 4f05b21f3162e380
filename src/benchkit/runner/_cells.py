"""Cell execution: one run's plug-ins, built in the process that runs its cells, and what
one cell is — the provider's attempts with their retries, the verifiers and evaluators,
the recorded (bounded) result.

:class:`Cells` is the seam every executor meets: the Runner's own run state holds one for
cells run in its process, and :func:`open_cells` opens one anywhere else (a Ray worker,
through :class:`RemoteRun`), so the cell logic exists once.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, TypeGuard, cast

import anyio
import attrs

from benchkit import _threads
from benchkit._aggregate import task_cluster
from benchkit._public import public
from benchkit._repeat import JUDGE_REPEAT
from benchkit.errors import ConfigError, InvocationError
from benchkit.model import (
    Condition,
    EvaluatorSpec,
    ProviderSpec,
    Request,
    Response,
    Suite,
    Task,
    VerifierSpec,
)
from benchkit.protocols import Evaluator, Provider, ResponseCache, Verifier, VerifyContext
from benchkit.registry import Registries, Registry, default_registries
from benchkit.results import CellResult, CellStatus, Score, Verdict
from benchkit.runner._bounded import bounded_response, bounded_scores, bounded_verdicts, excerpt
from benchkit.transcript import _CURRENT as _TRANSCRIPT
from benchkit.transcript import Recorder, record

__all__ = ["GRADER_GRACE", "Cells", "RemoteRun", "open_cells"]

# The runner's log (retries at INFO, each provider call at DEBUG): one name for the package.
_log = logging.getLogger("benchkit.runner")

#: Added to the cell's timeout for each verifier and evaluator: a grader that honours the
#: timeout itself (a command verifier) reports its own, more precise, timeout first.
GRADER_GRACE = 1.0


@public("benchkit.runner")
class Cells:
    """One run's cells as one process runs them: the providers, evaluators and verifiers
    built from the suite's specs, and the logic of a cell.

    Build the plug-ins with :meth:`build_plugins` and :meth:`build_providers` (each raises
    what a bad spec raises), enter the providers that keep a session with
    :meth:`enter_providers`, run cells with :meth:`run` or :meth:`run_cell`, and
    :meth:`close` at the end — or let :func:`open_cells` do all but the running. An
    evaluator or verifier named only by a task is built when a cell first needs it.
    """

    def __init__(
        self,
        suite: Suite,
        run_id: str,
        *,
        registries: Registries,
        keep_raw: bool = False,
        response_cache: ResponseCache | None = None,
    ) -> None:
        self.suite = suite
        self.options = suite.options
        self.base_dir = suite.base_dir
        self.run_id = run_id
        self.registries = registries
        self.keep_raw = keep_raw
        self.response_cache = response_cache
        #: The provider of each condition, in the suite's order (once built).
        self.providers: list[Provider] = []
        #: The evaluators and verifiers built so far, one per distinct spec.
        self.evaluators: dict[str, Evaluator] = {}
        self.verifiers: dict[str, Verifier] = {}
        self._owned: list[Provider] = []  # built from a spec here, so closed here
        self._blocking: set[int] = set()  # ids of plug-ins whose sync methods run in threads
        self._default_evaluators = suite.benchmark.evaluators
        self._default_verifiers = suite.benchmark.verifiers

    # -- set-up -----------------------------------------------------------------------

    def build_providers(self) -> None:
        """Build (or take) each condition's provider; raises for one without ``invoke``."""
        reg = self.registries.providers
        for cond in self.suite.conditions:
            if isinstance(cond.provider, ProviderSpec):
                built = reg.build(
                    cond.provider.type,
                    cond.provider.options,
                    base_dir=self.base_dir,
                    response_cache=self.response_cache,
                    registries=self.registries,
                )
                self._owned.append(built)
                self.providers.append(built)
            else:
                self.providers.append(cond.provider)
            provider = self.providers[-1]
            invoke = getattr(provider, "invoke", None)
            if not callable(invoke):
                raise ConfigError(
                    f"condition {cond.id!r}: {type(provider).__name__} has no invoke() method",
                    fix="a provider needs `async def invoke(self, request)` (a plain def runs "
                    "in a worker thread); see docs/plugins.md.",
                )
            if not inspect.iscoroutinefunction(invoke) and getattr(provider, "thread", True):
                self._blocking.add(id(provider))

    def build_plugins(self) -> None:
        """Build every evaluator and verifier up front when the tasks are in memory, so a
        bad spec or a missing judge key stops the run before any cell runs."""
        for spec in self._default_evaluators:
            self.evaluator(spec)
        for vspec in self._default_verifiers:
            self.verifier(vspec)
        tasks = self.suite.benchmark.tasks
        if isinstance(tasks, tuple):
            for task in tasks:
                if self.options.cluster_by is not None:  # a task without the field fails now
                    task_cluster(task, self.options.cluster_by)
                for spec in task.evaluators:
                    self.evaluator(spec)
                for vspec in task.verifiers:
                    self.verifier(vspec)

    async def enter_providers(self, entered: AsyncExitStack) -> None:
        """Enter, on ``entered``, each provider that is an async context manager (one
        keeping a session, like MCP's), once however many conditions share it."""
        seen: set[int] = set()
        for prov in self.providers:
            if id(prov) not in seen and _is_async_context(prov):
                seen.add(id(prov))
                await entered.enter_async_context(prov)

    async def close(self) -> None:
        """``aclose`` the providers built here and every evaluator and verifier (shielded)."""
        with anyio.CancelScope(shield=True):
            for prov in self._owned:
                aclose = getattr(prov, "aclose", None)
                if aclose is not None:
                    await aclose()
            for ev in (*self.evaluators.values(), *self.verifiers.values()):
                aclose = getattr(ev, "aclose", None)
                if aclose is not None:
                    await aclose()

    def evaluator(self, spec: EvaluatorSpec) -> Evaluator:
        """The evaluator for ``spec``, built on first use (a bad spec raises)."""
        if not spec.options and spec.name is None:  # the common case, without the key
            found = self.evaluators.get(spec.type)
            if found is not None:
                return found
        built: Evaluator = self._build(self.evaluators, self.registries.evaluators, spec)
        return built

    def verifier(self, spec: VerifierSpec) -> Verifier:
        """The verifier for ``spec``, built on first use (a bad spec raises)."""
        built: Verifier = self._build(self.verifiers, self.registries.verifiers, spec)
        return built

    def _build(
        self, cache: dict[str, Any], registry: Registry[Any], spec: EvaluatorSpec | VerifierSpec
    ) -> Any:
        """The plug-in for ``spec``, built once per distinct spec in this run."""
        key = _spec_key(spec)
        found = cache.get(key)
        if found is None:
            found = cache[key] = registry.build(
                spec.type,
                spec.options,
                base_dir=self.base_dir,
                response_cache=self.response_cache,
                registries=self.registries,
            )
            method = getattr(found, "evaluate" if registry.kind == "evaluator" else "verify", None)
            if (
                method is not None
                and not inspect.iscoroutinefunction(method)
                and getattr(found, "thread", True)
            ):
                self._blocking.add(id(found))
        return found

    # -- one cell -----------------------------------------------------------------------

    async def run(self, index: int, task: Task, cond_index: int, epoch: int) -> CellResult:
        """Run one cell here (:class:`benchkit.executors.CellsHere`)."""
        cond = self.suite.conditions[cond_index]
        return await self.run_cell(index, task, cond_index, cond, epoch)

    async def run_cell(
        self, index: int, task: Task, cond_index: int, cond: Condition, epoch: int
    ) -> CellResult:
        """Run one cell here: its attempts, graders and bounded result."""
        # Every cell records its transcript (benchkit.transcript.record) into a recorder
        # of its own: a context variable, so concurrent cells never mix their events.
        recorder = Recorder(self.options.deterministic)
        token = _TRANSCRIPT.set(recorder)
        try:
            return await self._run_recorded(index, task, cond_index, cond, epoch, recorder)
        finally:
            _TRANSCRIPT.reset(token)

    async def _run_recorded(
        self,
        index: int,
        task: Task,
        cond_index: int,
        cond: Condition,
        epoch: int,
        recorder: Recorder,
    ) -> CellResult:
        options = self.options
        deterministic = options.deterministic
        cluster_by = options.cluster_by
        cluster = None if cluster_by is None else task_cluster(task, cluster_by)
        provider = self.providers[cond_index]
        timeout = task.timeout if task.timeout is not None else self.suite.benchmark.timeout
        if timeout is None:
            timeout = options.timeout
        seed = _cell_seed(options.seed, task.id, cond.id, epoch)
        started_at = 0.0 if deterministic else time.time()
        t0 = time.perf_counter()
        attempt = 1
        rng: random.Random | None = None
        while True:
            outcome = await self._attempt(task, cond, provider, epoch, attempt, seed, timeout)
            if not self._should_retry(outcome, attempt):
                break
            if rng is None:
                rng = random.Random(seed)
            delay = min(options.backoff_max, options.backoff_base * 2 ** (attempt - 1))
            delay *= 0.5 + rng.random()
            _log.info(
                "%s/%s epoch %d attempt %d: %s (%s); retrying in %.2fs",
                cond.id,
                task.id,
                epoch,
                attempt,
                outcome.category,
                outcome.error,
                delay,
            )
            recorder.add(
                "retry",
                f"attempt {attempt} ended {outcome.category}; retrying",
                {"error": outcome.error, "delay": round(delay, 3)},
            )
            if delay > 0:
                await anyio.sleep(delay)
            attempt += 1
        duration = 0.0 if deterministic else (time.perf_counter() - t0) * 1000.0
        status, response, scores = outcome.status, outcome.response, outcome.scores
        if response is not None:
            raw = response.raw if self.keep_raw else None
            if deterministic and response.latency_ms:
                response = _replace_response(response, 0.0, raw)
            elif response.raw is not raw:
                response = _replace_response(response, response.latency_ms, raw)
            response = bounded_response(response)
        score: float | None = None
        if len(scores) == 1:
            score = scores[0].value
        elif scores:
            values = [s.value for s in scores if s.value is not None]
            if values:
                score = sum(values) / len(values)
        elif status == "pass" or status == "fail":
            score = 1.0 if status == "pass" else 0.0
        return CellResult(
            task_id=task.id,
            condition_id=cond.id,
            epoch=epoch,
            status=status,
            index=index,
            error_category=outcome.category,
            error=excerpt(outcome.error),
            score=score,
            scores=bounded_scores(scores),
            verdicts=bounded_verdicts(outcome.verdicts),
            response=response,
            attempts=attempt,
            started_at=started_at,
            duration_ms=duration,
            weight=task.weight,
            tags=task.tags,
            domain=task.domain,
            difficulty=task.difficulty,
            cluster=cluster,
            transcript=recorder.transcript(),
        )

    def _should_retry(self, outcome: _Outcome, attempt: int) -> bool:
        if attempt > self.options.retries:
            return False
        if outcome.status == "pass" or not outcome.retryable:
            return False
        retry_on = self.options.retry_on
        return outcome.category in retry_on or "any" in retry_on

    async def _attempt(
        self,
        task: Task,
        cond: Condition,
        provider: Provider,
        epoch: int,
        attempt: int,
        seed: int,
        timeout: float | None,
    ) -> _Outcome:
        deterministic = self.options.deterministic
        request = Request(task, cond, epoch, attempt, seed, timeout, self.run_id, deterministic)
        t0 = time.perf_counter()
        try:
            if timeout is None:
                response = await self._invoke(provider, request)
            else:
                with anyio.fail_after(timeout):
                    response = await self._invoke(provider, request)
        except TimeoutError:
            record("error", f"attempt {attempt}: timed out after {timeout:g}s")
            return _Outcome("timeout", "timeout", f"timed out after {timeout:g}s")
        except InvocationError as exc:
            status: CellStatus = "timeout" if exc.category == "timeout" else "error"
            record("error", f"attempt {attempt}: {exc.category}", exc.message)
            partial = exc.response if isinstance(exc.response, Response) else None
            if partial is not None and _bad_response(partial) is not None:
                partial = None  # what the provider got so far, kept only when recordable
            return _Outcome(status, exc.category, exc.message, partial, retryable=exc.retryable)
        except Exception as exc:
            record("error", f"attempt {attempt}: {type(exc).__name__}", str(exc))
            return _Outcome("error", "execution_error", f"{type(exc).__name__}: {exc}")
        problem = _bad_response(response)
        if problem is not None:  # say so on the cell, instead of crashing the store later
            return _Outcome("error", "execution_error", problem, retryable=False)
        if response.latency_ms is None:
            response = _replace_response(
                response, (time.perf_counter() - t0) * 1000.0, response.raw
            )

        verdicts: tuple[Verdict, ...] = ()
        verifier_specs = task.verifiers or self._default_verifiers
        if verifier_specs:
            context = VerifyContext(
                condition=cond,
                epoch=epoch,
                attempt=attempt,
                seed=self.options.seed,
                deterministic=deterministic,
                base_dir=self.base_dir,
                timeout=timeout,
            )
            verdicts = tuple(
                [await self._verify(s, task, response, context, timeout) for s in verifier_specs]
            )

        scores: tuple[Score, ...] = ()
        evaluator_specs = task.evaluators or self._default_evaluators
        if self.options.judge_repeats > 1:
            scores = tuple(
                [await self._evaluate_repeated(s, task, response, timeout) for s in evaluator_specs]
            )
        elif len(evaluator_specs) == 1:  # the usual case, without a comprehension's frame
            scores = (await self._evaluate(evaluator_specs[0], task, response, timeout),)
        elif evaluator_specs:
            scores = tuple(
                [await self._evaluate(s, task, response, timeout) for s in evaluator_specs]
            )

        for verdict in verdicts:
            if not verdict.passed:
                cat = verdict.category if verdict.category != "none" else "verification_failed"
                vstatus: CellStatus = (
                    "timeout"
                    if cat == "timeout"
                    else "error"
                    if cat == "execution_error"
                    else "fail"
                )
                return _Outcome(vstatus, cat, verdict.message, response, scores, verdicts)
        failed: Score | None = None
        for score in scores:
            if score.error is not None:
                return _Outcome(
                    "error", "evaluation_error", score.error, response, scores, verdicts
                )
            if failed is None and not score.passed:
                failed = score
        if failed is not None:
            return _Outcome("fail", "assertion_failed", failed.reason, response, scores, verdicts)
        return _Outcome("pass", "none", None, response, scores, verdicts)

    async def _invoke(self, provider: Provider, request: Request) -> Response:
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug(
                "calling %s for %s/%s epoch %d attempt %d",
                type(provider).__name__,
                request.condition.id,
                request.task.id,
                request.epoch,
                request.attempt,
            )
        if id(provider) in self._blocking:  # a plain `def invoke`: off the event loop
            invoke = cast(Callable[[Request], Any], provider.invoke)
            response = await _threads.run_sync(invoke, request)
            if inspect.isawaitable(response):  # an async callable that did not look async
                response = await response
            return cast(Response, response)
        return await provider.invoke(request)

    async def _verify(
        self,
        spec: VerifierSpec,
        task: Task,
        response: Response,
        context: VerifyContext,
        timeout: float | None,
    ) -> Verdict:
        verifier = self.verifier(spec)  # a bad spec stops the run: it is the user's input
        deadline = _grader_deadline(timeout)
        try:
            if id(verifier) in self._blocking:  # a sync method: in a worker thread
                verify = cast(Callable[..., Verdict], verifier.verify)
                pending = _threads.run_sync(verify, task, response, context)
            else:
                pending = verifier.verify(task, response, context)
            if not inspect.isawaitable(pending):  # a sync method with thread = False
                verdict = pending
            elif deadline is None:  # no cancel scope to enter: ≈ 10 µs a cell saved
                verdict = await pending
            else:
                with anyio.fail_after(deadline):
                    verdict = await pending
        except TimeoutError:
            return Verdict(
                name=spec.label,
                passed=False,
                category="timeout",
                message=f"verifier {spec.label!r} timed out after {deadline:g}s",
            )
        except Exception as exc:
            return Verdict(
                name=spec.label,
                passed=False,
                category="execution_error",
                message=f"verifier {spec.label!r} raised {type(exc).__name__}: {exc}",
            )
        if not isinstance(verdict, Verdict):  # a broken plug-in: stop the run, name it
            raise _wrong_return("verifier", spec.type, "verify", "Verdict", verdict)
        return verdict

    async def _evaluate_repeated(
        self, spec: EvaluatorSpec, task: Task, response: Response, timeout: float | None
    ) -> Score:
        """Ask the evaluator ``judge_repeats`` times: the majority verdict (a tie fails),
        the mean score, each repeat in ``details["repeats"]`` and the usage summed. A
        repeat that fails makes the score a judge error, as one failed request would."""
        repeats = self.options.judge_repeats
        found: list[Score] = []
        for repeat in range(repeats):
            token = JUDGE_REPEAT.set(repeat)
            try:
                score = await self._evaluate(spec, task, response, timeout)
            finally:
                JUDGE_REPEAT.reset(token)
            if score.error is not None or score.value is None:
                return attrs.evolve(
                    score, error=f"repeat {repeat + 1} of {repeats}: {score.error or 'no value'}"
                )
            found.append(score)
        passes = sum(1 for s in found if s.passed)
        values = [s.value for s in found if s.value is not None]
        details = dict(found[0].details)
        details["repeats"] = [{"value": s.value, "passed": s.passed} for s in found]
        spent = [s.details.get("usage") for s in found if s.details]
        usage = [u for u in spent if isinstance(u, Mapping)]
        if usage:
            details["usage"] = {
                key: sum(float(u.get(key) or 0) for u in usage)
                if key == "cost_usd"
                else sum(int(u.get(key) or 0) for u in usage)
                for key in {k for u in usage for k in u}
            }
        first = found[0]
        return Score(
            name=first.name,
            value=sum(values) / len(values),
            passed=2 * passes > repeats,
            reason=f"{first.reason or first.name} — {passes} of {repeats} repeats passed",
            details=details,
        )

    async def _evaluate(
        self, spec: EvaluatorSpec, task: Task, response: Response, timeout: float | None
    ) -> Score:
        evaluator = self.evaluator(spec)  # a bad spec stops the run: it is the user's input
        deadline = _grader_deadline(timeout)
        try:
            if id(evaluator) in self._blocking:  # a sync method: in a worker thread
                evaluate = cast(Callable[..., Score], evaluator.evaluate)
                pending = _threads.run_sync(evaluate, task, response)
            else:
                pending = evaluator.evaluate(task, response)
            if not inspect.isawaitable(pending):  # a sync method with thread = False
                score = pending
            elif deadline is None:  # as the provider's call: no scope without a deadline
                score = await pending
            else:
                with anyio.fail_after(deadline):
                    score = await pending
        except TimeoutError:
            return Score(
                name=spec.label,
                value=None,
                passed=False,
                error=f"evaluator {spec.label!r} timed out after {deadline:g}s",
            )
        except Exception as exc:
            return Score(
                name=spec.label,
                value=None,
                passed=False,
                error=f"evaluator {spec.label!r} raised {type(exc).__name__}: {exc}",
            )
        if not isinstance(score, Score):  # a broken plug-in: stop the run, name it
            raise _wrong_return("evaluator", spec.type, "evaluate", "Score", score)
        if spec.name is not None and score.name != spec.name:
            score = attrs.evolve(score, name=spec.name)
        return score


@attrs.frozen
class RemoteRun:
    """A run's cells as another process (a Ray worker) receives them; see
    :class:`benchkit.executors.RemoteCells`."""

    suite: Suite
    run_id: str
    registries: Registries
    keep_raw: bool

    def with_suite(self, suite: Suite) -> RemoteRun:
        return attrs.evolve(self, suite=suite)

    def open(self) -> AbstractAsyncContextManager[Cells]:
        return open_cells(
            self.suite, run_id=self.run_id, registries=self.registries, keep_raw=self.keep_raw
        )


@asynccontextmanager
async def open_cells(
    suite: Suite,
    *,
    run_id: str,
    registries: Registries | None = None,
    keep_raw: bool = False,
    response_cache: ResponseCache | None = None,
) -> AsyncIterator[Cells]:
    """Open ``suite``'s cells in this process: ``async with open_cells(s, run_id=r) as
    cells: await cells.run(index, task, cond_index, epoch)``.

    It builds every provider, evaluator and verifier as a run would (raising what a bad
    spec raises) and enters the providers that keep a session; leaving the block closes
    them. Enter and leave it in one task. This is how an executor runs cells somewhere
    else (:class:`benchkit.executors.RemoteCells`); the result of a cell is the one the
    Runner makes in-process.

    .. versionadded:: 0.2.0
    """
    cells = Cells(
        suite,
        run_id,
        registries=registries or default_registries(),
        keep_raw=keep_raw,
        response_cache=response_cache,
    )
    cells.build_plugins()
    cells.build_providers()
    try:
        async with AsyncExitStack() as entered:
            await cells.enter_providers(entered)
            yield cells
    finally:
        await cells.close()


@attrs.define
class _Outcome:
    """What one attempt at a cell produced."""

    status: CellStatus
    category: str = "none"
    error: str | None = None
    response: Response | None = None
    scores: tuple[Score, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    retryable: bool = True


def _cell_seed(seed: int, task_id: str, condition_id: str, epoch: int) -> int:
    digest = hashlib.blake2b(
        f"{seed}\x1f{task_id}\x1f{condition_id}\x1f{epoch}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big") >> 1


def _spec_key(spec: EvaluatorSpec | VerifierSpec) -> str:
    if not spec.options and spec.name is None:
        return spec.type
    return json.dumps([spec.type, spec.name, spec.options], sort_keys=True, default=str)


def _grader_deadline(timeout: float | None) -> float | None:
    """Each grader's own deadline: the cell's timeout plus :data:`GRADER_GRACE`."""
    return None if timeout is None else timeout + GRADER_GRACE


_SCALARS = (str, int, float, bool, type(None))


def _json_value(value: Any, depth: int = 0) -> bool:
    if isinstance(value, _SCALARS):
        return True
    if depth > 100:
        return False
    if isinstance(value, (list, tuple)):
        return all(_json_value(v, depth + 1) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _json_value(v, depth + 1) for k, v in value.items())
    return False


def _bad_response(response: object) -> str | None:
    """Why a provider's return value cannot be recorded, or None when it can."""
    if not isinstance(response, Response):
        return (
            f"the provider returned {type(response).__name__}, not a benchkit.Response; "
            "return Response(output=...)"
        )
    output = response.output
    if type(output) is str or _json_value(output):
        return None
    return (
        f"the provider's output is a {type(output).__name__} ({output!r:.60}), which is not "
        "a string or a JSON value; return str(...) or a dict/list of JSON values"
    )


def _wrong_return(kind: str, name: str, method: str, expected: str, got: object) -> ConfigError:
    return ConfigError(
        f"{kind} {name!r}: {method}() returned {type(got).__name__} {got!r:.80}, "
        f"not a benchkit.{expected}",
        fix=f"make {method}() return benchkit.{expected}(...); see docs/plugins.md.",
    )


def _is_async_context(obj: object) -> TypeGuard[AbstractAsyncContextManager[Any]]:
    return callable(getattr(obj, "__aenter__", None)) and callable(getattr(obj, "__aexit__", None))


def _replace_response(response: Response, latency_ms: float | None, raw: Any) -> Response:
    """``attrs.evolve(response, latency_ms=..., raw=...)`` at a third of the cost (hot path)."""
    return Response(
        response.output,
        latency_ms,
        response.usage,
        response.tool_calls,
        response.retrieved,
        response.artifacts,
        raw,
        response.metadata,
    )
