"""An agent as the system under test: a chat model with tools, run in a loop.

:class:`AgentProvider` (provider ``agent``) sends the task to a model together with its
tools, runs the tool calls of each reply (those of one reply concurrently), gives the
results back, and repeats until the model answers without calling a tool or a limit is
hit. Every turn lands in the cell's transcript and, as a
:class:`~benchkit.trajectory.Trajectory`, in the response's ``metadata["trajectory"]``;
the response's ``tool_calls`` are every call of every turn, in order.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import anyio
import attrs

from benchkit import _limits, transcript
from benchkit._bounds import clip
from benchkit._public import public
from benchkit._reentrant import Reentrant
from benchkit.errors import ConfigError, InvocationError
from benchkit.llm._provider import ChatProvider, task_messages
from benchkit.model import Request, Response, ToolCall, Usage
from benchkit.protocols import ResponseCache
from benchkit.providers._agent_tools import AgentTool, declared_tools, quiet, result_text
from benchkit.trajectory import KEY, ToolStep, Trajectory, Turn

__all__ = ["AgentLimits", "AgentProvider"]

_ON_ERROR = ("message", "end")
#: Characters of each tool result (and reply text) a cell's trajectory keeps; the model is
#: told the whole result (up to ``max_result_chars``), the transcript keeps its start too.
KEPT_RESULT_CHARS = 2_000


def _limit(
    high: float, *, integer: bool = True
) -> Any:  # an attrs validator: None, or a number > 0 and <= high
    def check(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None:
            return
        problem = _limits.out_of_bounds(value, 0, high, above=True, integer=integer)
        if problem is not None:
            raise ConfigError(
                f"limits.{attribute.name} {problem}",
                fix=f"give limits.{attribute.name} a value > 0 and <= {high:,} (or null for "
                "none); docs/limits.md lists the bounds.",
            )

    return check


@public("benchkit.providers")
@attrs.frozen
class AgentLimits:
    """What one agent cell may spend; past a limit the cell ends with the limit's
    category (``turn_limit``, ``tool_call_limit``, ``token_limit``, ``cost_limit``,
    ``time_limit``) and keeps its trajectory so far. None: no limit.

    ``turns``: model replies (10); ``tool_calls``: calls over all turns (50); ``tokens``:
    prompt + completion tokens over all turns; ``cost_usd``: what the replies cost (needs
    the model's ``price``); ``seconds``: the loop's wall time (the cell's ``timeout``
    still holds around it); ``repeats``: the same calls (names and arguments) asked for
    this many turns in a row end the cell as ``tool_loop`` (3).

    .. versionadded:: 0.2.0
    """

    turns: int | None = attrs.field(default=10, validator=_limit(_limits.MAX_AGENT_TURNS))
    tool_calls: int | None = attrs.field(default=50, validator=_limit(_limits.MAX_TOOL_CALLS))
    tokens: int | None = attrs.field(default=None, validator=_limit(_limits.MAX_COUNT))
    cost_usd: float | None = attrs.field(
        default=None, validator=_limit(_limits.MAX_WEIGHT, integer=False)
    )
    seconds: float | None = attrs.field(
        default=None, validator=_limit(_limits.MAX_TIMEOUT_S, integer=False)
    )
    repeats: int | None = attrs.field(default=3, validator=_limit(_limits.MAX_AGENT_TURNS))

    @classmethod
    def of(cls, value: AgentLimits | Mapping[str, Any] | None) -> AgentLimits:
        if value is None:
            return cls()
        if isinstance(value, AgentLimits):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(
                f"limits must be a mapping, got {type(value).__name__}",
                fix="write e.g. limits: {turns: 8, tool_calls: 20, seconds: 60}.",
            )
        known = {f.name for f in attrs.fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ConfigError(
                f"limits has unknown keys {unknown}",
                fix=f"use some of: {', '.join(sorted(known))}.",
            )
        return cls(**dict(value))


@public("benchkit.providers")
class AgentProvider(Reentrant):
    """A chat model with tools, run until it answers without calling one or a limit is hit.

    The model is any chat endpoint (``model``, ``base_url``, ``api_key_env``, ...; the
    options of the ``chat`` provider) or the embedded one (``model: local``). ``tools``
    lists what it may call: Python functions and :class:`AgentTool` objects from code,
    :class:`McpTools` servers, or file declarations (``{python: tools.py:add}``, ``{mcp:
    {command: [...]}, tools: [...]}``); a task whose input is ``{messages, tools}`` adds
    its own for that cell. ``limits`` (an :class:`AgentLimits` or its mapping) bounds each
    cell; ``tool_timeout`` each tool call (seconds; a tool's own ``timeout`` wins).

    A tool that raises or times out is answered to the model as ``error: ...``
    (``on_tool_error: end`` ends the cell as ``tool_error`` instead). A call of an unknown
    tool, or with arguments that fail the tool's schema, ends the cell as ``unknown_tool``
    or ``invalid_arguments`` (``on_invalid_call: message`` tells the model instead, and
    the loop goes on). A tool's result is given to the model as text (JSON for anything but
    a string), cut at ``max_result_chars``.

        >>> def add(a: float, b: float) -> float:
        ...     '''Add two numbers.'''
        ...     return a + b
        >>> agent = AgentProvider(model="local", tools=[add], limits={"turns": 4})  # doctest: +SKIP

    .. versionadded:: 0.2.0
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | Sequence[str] = ("OPENAI_API_KEY",),
        tools: Sequence[Any] = (),
        system: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | str | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        limits: AgentLimits | Mapping[str, Any] | None = None,
        tool_timeout: float = 60.0,
        on_tool_error: Literal["message", "end"] = "message",
        on_invalid_call: Literal["message", "end"] = "end",
        max_result_chars: int = 20_000,
        timeout: float = 60.0,
        max_retries: int = 4,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        max_concurrency: int | None = 16,
        cache: bool = True,
        price: Sequence[float] | None = None,
        protocol: str | None = None,
        client: Any = None,
        base_dir: Path | None = None,
        response_cache: ResponseCache | None = None,
    ) -> None:
        for name, value in (("on_tool_error", on_tool_error), ("on_invalid_call", on_invalid_call)):
            if value not in _ON_ERROR:
                raise ConfigError(f"{name} {value!r} is unknown", fix="use `message` or `end`.")
        problem = _limits.out_of_bounds(tool_timeout, 0, _limits.MAX_TIMEOUT_S, above=True)
        if problem is not None:
            raise ConfigError(f"tool_timeout {problem}", fix="give seconds (docs/limits.md).")
        problem = _limits.out_of_bounds(
            max_result_chars, 0, _limits.MAX_COUNT, above=True, integer=True
        )
        if problem is not None:
            raise ConfigError(f"max_result_chars {problem}", fix="give a number of characters.")
        self.limits = AgentLimits.of(limits)
        if self.limits.cost_usd is not None and price is None and client is None:
            raise ConfigError(
                "limits.cost_usd needs the model's price to know what a reply costs",
                fix="give price: [prompt, completion] USD per million tokens.",
            )
        self.chat = ChatProvider(
            client=client,
            model=model,
            base_url=base_url,
            api_key_env=api_key_env,
            temperature=temperature,
            max_tokens=max_tokens,
            system=system,
            seed=seed,
            timeout=timeout,
            max_retries=max_retries,
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            max_concurrency=max_concurrency,
            cache=cache,
            price=price,
            protocol=protocol,
            response_cache=response_cache,
        )
        self.base_dir = base_dir
        self.tool_choice = tool_choice
        self.tool_timeout = float(tool_timeout)
        self.on_tool_error = on_tool_error
        self.on_invalid_call = on_invalid_call
        self.max_result_chars = int(max_result_chars)
        static, self.servers = declared_tools(tools, base_dir)
        self._static = _by_name(static, "tools")
        self._tools: dict[str, AgentTool] | None = None if self.servers else dict(self._static)
        self._stack: AsyncExitStack | None = None

    def __repr__(self) -> str:
        names = sorted(self._tools or self._static)
        return (
            f"AgentProvider({self.chat.client!r}, tools={names}{', +MCP' if self.servers else ''})"
        )

    @property
    def versions(self) -> dict[str, str]:
        """What the run records about the model (as the ``chat`` provider's)."""
        return self.chat.versions

    # -- lifecycle ----------------------------------------------------------------------

    async def _first_enter(self) -> None:
        """Open the MCP servers' sessions and list their tools, for every cell until the
        matching exit (``async with`` is re-entrant)."""
        if not self.servers:
            return
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            found = list(self._static.values())
            for server in self.servers:
                await stack.enter_async_context(server.provider)
                found.extend(await server.list())
            self._tools = _by_name(found, "tools")
        except BaseException:
            await stack.__aexit__(None, None, None)
            raise
        self._stack = stack

    async def _last_exit(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._stack is not None:
            stack, self._stack = self._stack, None
            self._tools = None
            await stack.__aexit__(exc_type, exc, tb)

    async def aclose(self) -> None:
        await self.chat.aclose()

    # -- a cell -------------------------------------------------------------------------

    async def invoke(self, request: Request) -> Response:
        if self._tools is None:  # MCP servers, not entered: sessions for this cell alone
            async with self:
                return await self._invoke(request)
        return await self._invoke(request)

    async def _invoke(self, request: Request) -> Response:
        assert self._tools is not None
        messages, declared = task_messages(request.task.input, self.chat.system)
        tools = dict(self._tools)
        async with AsyncExitStack() as stack:
            if declared:
                where = f"task {request.task.id!r}: input.tools"
                try:
                    extra, servers = declared_tools(declared, self.base_dir, where=where)
                    for server in servers:
                        await stack.enter_async_context(server.provider)
                        extra.extend(await server.list())
                    tools = _by_name([*tools.values(), *extra], where)
                except ConfigError as exc:
                    raise InvocationError(
                        exc.render(), category="config_error", retryable=False
                    ) from exc
            return await _Loop(self, request, messages, tools).run()


def _by_name(tools: Sequence[AgentTool], where: str) -> dict[str, AgentTool]:
    found: dict[str, AgentTool] = {}
    for tool in tools:
        if tool.name in found:
            raise ConfigError(
                f"{where}: two tools are named {tool.name!r}",
                fix="give one of them another `name`, or offer only one (an MCP server's "
                "`tools` subset).",
            )
        found[tool.name] = tool
    return found


class _End(Exception):
    """The loop stops: ``category`` (one of benchkit.trajectory.ENDINGS) and why."""

    def __init__(self, category: str, reason: str) -> None:
        super().__init__(reason)
        self.category = category
        self.reason = reason


class _Loop:
    """One cell's conversation."""

    def __init__(
        self,
        agent: AgentProvider,
        request: Request,
        messages: list[dict[str, Any]],
        tools: dict[str, AgentTool],
    ) -> None:
        self.agent = agent
        self.request = request
        self.messages = messages
        self.tools = tools
        self.specs = [tool.spec() for tool in tools.values()]
        self.turns: list[Turn] = []
        self.usage = Usage()
        self.calls = 0
        self.signatures: list[str] = []
        self.zero = request.deterministic  # latencies of a deterministic run are 0
        self.started = time.perf_counter()
        self.model: str | None = None
        self.pending: Turn | None = None  # a reply whose calls are running
        self.results: dict[str, str] = {}  # call id -> the result the model is told

    async def run(self) -> Response:
        agent = self.agent
        limits = agent.limits
        transcript.record(
            "request",
            f"agent: {agent.chat.model or 'the model'} with {len(self.tools)} tool(s)",
            {"tools": list(self.tools), "limits": attrs.asdict(limits)},
        )
        for message in self.messages:
            transcript.record("message", str(message.get("role", "")), message)
        deadline = math.inf if limits.seconds is None else anyio.current_time() + limits.seconds
        try:
            with anyio.CancelScope(deadline=deadline) as scope:
                text = await self._converse()
            if scope.cancelled_caught:
                if self.pending is not None:  # the turn in progress, its calls unfinished
                    unfinished = tuple(
                        s
                        if s.result is not None or s.error is not None
                        else attrs.evolve(s, error="not finished: the time limit")
                        for s in self.pending.tools
                    )
                    self.turns.append(attrs.evolve(self.pending, tools=unfinished))
                raise _End(
                    "time_limit",
                    f"the agent ran out of its {limits.seconds:g} s (limits.seconds) in turn "
                    f"{len(self.turns) + 1}",
                )
        except _End as end:
            transcript.record(
                "error",
                f"turn {max(len(self.turns), 1)}: {end.category}",
                {"turn": max(len(self.turns), 1), "ending": end.category, "reason": end.reason},
            )
            trajectory = Trajectory(tuple(self.turns), end.category, None, end.reason)
            raise InvocationError(
                end.reason,
                category=end.category,
                retryable=False,
                response=self._response(trajectory),
            ) from None
        return self._response(Trajectory(tuple(self.turns), "answered", text))

    def _response(self, trajectory: Trajectory) -> Response:
        last = trajectory.final
        if last is None and trajectory.turns:
            last = trajectory.turns[-1].text
        metadata: dict[str, Any] = {KEY: trajectory.to_dict(), "model": self.model}
        if self.agent.chat.versions:
            metadata["versions"] = self.agent.chat.versions
        return Response(
            output=last or "",
            latency_ms=self._ms(time.perf_counter() - self.started),
            usage=self.usage,
            tool_calls=trajectory.tool_calls(),
            metadata=metadata,
        )

    def _ms(self, seconds: float) -> float:
        return 0.0 if self.zero else round(seconds * 1000.0, 3)

    async def _converse(self) -> str | None:
        agent = self.agent
        limits = agent.limits
        chat = agent.chat
        seed = self.request.seed % 2**31 if chat.seed == "cell" else chat.seed
        while True:
            index = len(self.turns) + 1
            if limits.turns is not None and index > limits.turns:
                raise _End(
                    "turn_limit",
                    f"no final answer after {limits.turns} turns (limits.turns)",
                )
            with quiet("request"):  # the agent records the conversation itself, compactly
                result = await chat.client.chat(
                    self.messages,
                    model=chat.model,
                    temperature=chat.temperature,
                    max_tokens=chat.max_tokens,
                    seed=seed if isinstance(seed, int) else None,
                    tools=self.specs or None,
                    tool_choice=agent.tool_choice if self.specs else None,
                )
            self.model = result.model
            self.usage = self.usage + result.usage
            turn = Turn(
                index,
                None if result.text is None else clip(result.text, KEPT_RESULT_CHARS),
                (),
                result.usage,
                0.0 if self.zero else result.latency_ms,
                result.finish_reason,
            )
            if not result.tool_calls:
                self.turns.append(turn)
                return result.text
            steps = [
                ToolStep(call.name, dict(call.arguments), call.id or f"call_{index}_{i}")
                for i, call in enumerate(result.tool_calls)
            ]
            self._check_budget(turn, steps)
            self.pending = attrs.evolve(turn, tools=tuple(steps))
            steps = await self._run_calls(index, steps, turn)
            self.pending = None
            self.turns.append(attrs.evolve(turn, tools=tuple(steps)))
            self.calls += len(steps)
            self.messages.append(_assistant(result.text, steps))
            self.messages.extend(
                {"role": "tool", "tool_call_id": step.id, "content": _told(step, self.results)}
                for step in steps
            )

    def _check_budget(self, turn: Turn, steps: list[ToolStep]) -> None:
        """End before running this turn's calls when a limit is spent (the turn is kept,
        its calls marked as not run)."""
        limits = self.agent.limits
        ending: tuple[str, str] | None = None
        if limits.tokens is not None and self.usage.total_tokens > limits.tokens:
            ending = (
                "token_limit",
                f"{self.usage.total_tokens} tokens spent, over limits.tokens={limits.tokens}",
            )
        elif limits.cost_usd is not None and self.usage.cost_unknown:
            ending = (
                "cost_limit",
                f"{self.usage.total_tokens} tokens spent at an unknown cost (the model has no "
                f"price): limits.cost_usd={limits.cost_usd:g} cannot be held",
            )
        elif limits.cost_usd is not None and (self.usage.cost_usd or 0.0) > limits.cost_usd:
            ending = (
                "cost_limit",
                f"${self.usage.cost_usd or 0.0:.4f} spent, over limits.cost_usd={limits.cost_usd:g}",
            )
        elif limits.tool_calls is not None and self.calls + len(steps) > limits.tool_calls:
            ending = (
                "tool_call_limit",
                f"turn {turn.index} asks for {len(steps)} more tool call(s) after {self.calls}, "
                f"over limits.tool_calls={limits.tool_calls}",
            )
        else:
            signature = json.dumps(
                sorted(
                    json.dumps([s.name, s.arguments], sort_keys=True, default=str) for s in steps
                )
            )
            self.signatures.append(signature)
            repeats = limits.repeats
            if (
                repeats is not None
                and len(self.signatures) >= repeats
                and len(set(self.signatures[-repeats:])) == 1
            ):
                ending = (
                    "tool_loop",
                    f"the same tool call(s) {_shown(steps)} asked for {repeats} turns in a row "
                    "(limits.repeats)",
                )
        if ending is not None:
            unrun = tuple(attrs.evolve(s, error="not run: the cell ended") for s in steps)
            self.turns.append(attrs.evolve(turn, tools=unrun))
            raise _End(*ending)

    async def _run_calls(self, index: int, steps: list[ToolStep], turn: Turn) -> list[ToolStep]:
        """Check and run one reply's calls (concurrently); each step with its outcome."""
        agent = self.agent
        done: list[ToolStep] = list(steps)
        invalid: tuple[str, str] | None = None
        runnable: list[int] = []
        for i, step in enumerate(steps):
            transcript.record(
                "tool_call", step.name, {"turn": index, "id": step.id, "arguments": step.arguments}
            )
            problem = self._problem(step)
            if problem is None:
                runnable.append(i)
                continue
            category, message = problem
            done[i] = attrs.evolve(step, error=message)
            transcript.record(
                "tool_result",
                f"{step.name}: {category.replace('_', ' ')}",
                {"turn": index, "id": step.id, "error": message},
            )
            invalid = invalid or (category, f"turn {index}: {message}")
        if invalid is not None and agent.on_invalid_call == "end":
            self.turns.append(attrs.evolve(turn, tools=tuple(done)))
            raise _End(*invalid)

        async def run_one(i: int) -> None:
            done[i] = await self._call(index, steps[i])

        async with anyio.create_task_group() as group:
            for i in runnable:
                group.start_soon(run_one, i)
        failed = [s for i, s in enumerate(done) if i in runnable and s.error is not None]
        if failed and agent.on_tool_error == "end":
            self.turns.append(attrs.evolve(turn, tools=tuple(done)))
            raise _End("tool_error", f"turn {index}: {failed[0].error}")
        return done

    def _problem(self, step: ToolStep) -> tuple[str, str] | None:
        tool = self.tools.get(step.name)
        if tool is None:
            known = ", ".join(self.tools) or "none"
            return "unknown_tool", f"there is no tool {step.name!r} (the tools: {known})"
        arguments = step.arguments
        if set(arguments) == {"_raw"}:
            return "invalid_arguments", (
                f"the arguments of {step.name!r} are not JSON: {str(arguments['_raw'])[:200]}"
            )
        if set(arguments) == {"_value"}:
            return "invalid_arguments", f"the arguments of {step.name!r} are not a JSON object"
        problem = tool.problem(arguments)
        if problem is not None:
            return (
                "invalid_arguments",
                f"the arguments of {step.name!r} do not fit its schema: {problem}",
            )
        return None

    async def _call(self, index: int, step: ToolStep) -> ToolStep:
        tool = self.tools[step.name]
        timeout = tool.timeout if tool.timeout is not None else self.agent.tool_timeout
        started = time.perf_counter()
        error: str | None = None
        text: str | None = None
        try:
            with anyio.fail_after(timeout):
                value = await tool.run(step.arguments)
            text = result_text(value, self.agent.max_result_chars)
        except TimeoutError:
            error = f"{step.name} timed out after {timeout:g} s"
        except InvocationError as exc:
            if exc.category not in ("tool_error", "timeout", "protocol_error"):
                raise  # the tool's server is gone: the cell's error, not the model's
            error = exc.message
        except Exception as exc:
            error = f"{step.name} raised {type(exc).__name__}: {exc}"
        took = time.perf_counter() - started
        data: dict[str, Any] = {"turn": index, "id": step.id}
        if error is None:
            data["result"] = text
        else:
            data["error"] = error
        transcript.record(
            "tool_result",
            step.name if error is None else f"{step.name}: error",
            data,
            duration=took,
        )
        if text is not None and step.id is not None:
            self.results[step.id] = text  # what the model is told, whole
            text = clip(text, KEPT_RESULT_CHARS)  # what the cell keeps
        return attrs.evolve(step, result=text, error=error, duration_ms=self._ms(took))


def _assistant(text: str | None, steps: Sequence[ToolStep]) -> dict[str, Any]:
    """The assistant message that asked for ``steps``, as the chat API wants it back."""
    return {
        "role": "assistant",
        "content": text or "",
        "tool_calls": [
            {
                "id": step.id,
                "type": "function",
                "function": {
                    "name": step.name,
                    "arguments": json.dumps(dict(step.arguments), ensure_ascii=False),
                },
            }
            for step in steps
        ],
    }


def _told(step: ToolStep, results: Mapping[str, str]) -> str:
    """What the model is told of a call: its result, or ``error: ...``."""
    if step.error is not None:
        return f"error: {step.error}"
    if step.id is not None and step.id in results:
        return results[step.id]
    return step.result if isinstance(step.result, str) else json.dumps(step.result)


def _shown(steps: Sequence[ToolStep]) -> str:
    calls = [ToolCall(s.name, s.arguments) for s in steps]
    return ", ".join(f"{c.name}({json.dumps(dict(c.arguments), sort_keys=True)})" for c in calls)
