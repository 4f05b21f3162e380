"""An agent's trajectory: the turns of a tool-calling conversation, as a cell keeps them.

The ``agent`` provider (:class:`benchkit.providers.AgentProvider`) runs a model with tools
until it answers without calling one or a limit is hit. What it did is kept twice: as
events of the cell's transcript (:mod:`benchkit.transcript`, for people: the explorer's
conversation view, ``runs show --cell``), and as a :class:`Trajectory` in the response's
``metadata["trajectory"]`` (for evaluators: the trajectory scorers of
``benchkit.evaluators``). Any other provider's response reads as a trajectory of one turn:
its text and its ``tool_calls``, so the trajectory scorers apply to a chat model's single
reply or an MCP call too.

    >>> from benchkit.model import Response, ToolCall
    >>> trajectory = Trajectory.of(Response(output="5", tool_calls=[ToolCall("add", {"a": 2})]))
    >>> [call.name for call in trajectory.tool_calls()], trajectory.final
    (['add'], '5')

.. versionadded:: 0.2.0
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from benchkit.model import Response, ToolCall, Usage

__all__ = ["ENDINGS", "KEY", "ToolStep", "Trajectory", "Turn"]

#: Where a trajectory lives in ``Response.metadata``.
KEY = "trajectory"

#: How an agent's cell can end, besides ``answered`` (the model replied without a tool
#: call): each is the cell's error category when it happens.
ENDINGS = (
    "turn_limit",
    "tool_call_limit",
    "token_limit",
    "cost_limit",
    "time_limit",
    "tool_loop",
    "unknown_tool",
    "invalid_arguments",
    "tool_error",
)


@attrs.frozen
class ToolStep:
    """One tool call the model made and what came of it: the ``result`` the model was
    given (text or JSON, cut to the agent's ``max_result_chars``), or the ``error`` it was
    told instead (the tool raised or timed out, the tool is unknown, the arguments failed
    its schema); how long the call took."""

    name: str
    arguments: Mapping[str, Any] = attrs.field(factory=dict)
    id: str | None = None
    result: Any = None
    error: str | None = None
    duration_ms: float | None = None

    def call(self) -> ToolCall:
        """The call as a :class:`~benchkit.model.ToolCall` (name, arguments, id)."""
        return ToolCall(self.name, self.arguments, self.id)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "arguments": dict(self.arguments)}
        for key in ("id", "result", "error", "duration_ms"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolStep:
        arguments = data.get("arguments")
        duration = data.get("duration_ms")
        return cls(
            name=str(data.get("name", "")),
            arguments=dict(arguments) if isinstance(arguments, Mapping) else {},
            id=None if data.get("id") is None else str(data["id"]),
            result=data.get("result"),
            error=None if data.get("error") is None else str(data["error"]),
            duration_ms=float(duration) if isinstance(duration, (int, float)) else None,
        )


@attrs.frozen
class Turn:
    """One reply of the model (numbered from 1): its text, the tool calls it made with
    their outcomes, its token usage and latency, and the API's ``finish_reason``."""

    index: int
    text: str | None = None
    tools: tuple[ToolStep, ...] = ()
    usage: Usage = attrs.field(factory=Usage)
    latency_ms: float | None = None
    finish_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index, "text": self.text}
        out["tools"] = [step.to_dict() for step in self.tools]
        out["usage"] = {
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
        }
        if self.usage.cost_usd is not None:
            out["usage"]["cost_usd"] = self.usage.cost_usd
        if self.latency_ms is not None:
            out["latency_ms"] = self.latency_ms
        if self.finish_reason is not None:
            out["finish_reason"] = self.finish_reason
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Turn:
        usage = data.get("usage") if isinstance(data.get("usage"), Mapping) else {}
        assert isinstance(usage, Mapping)
        cost = usage.get("cost_usd")
        latency = data.get("latency_ms")
        text = data.get("text")
        return cls(
            index=int(data.get("index", 0)),
            text=text if isinstance(text, str) else None,
            tools=tuple(
                ToolStep.from_dict(step)
                for step in data.get("tools") or ()
                if isinstance(step, Mapping)
            ),
            usage=Usage(
                int(usage.get("prompt_tokens") or 0),
                int(usage.get("completion_tokens") or 0),
                float(cost) if isinstance(cost, (int, float)) else None,
            ),
            latency_ms=float(latency) if isinstance(latency, (int, float)) else None,
            finish_reason=None if data.get("finish_reason") is None else str(data["finish_reason"]),
        )


@attrs.frozen
class Trajectory:
    """The turns of one cell's conversation, how it ended and the final answer.

    ``ending`` is ``answered`` when the model replied without calling a tool, else one of
    :data:`ENDINGS` (then ``reason`` says what happened and ``final`` is None).
    """

    turns: tuple[Turn, ...] = ()
    ending: str = "answered"
    final: str | None = None
    reason: str | None = None

    def tool_steps(self) -> tuple[ToolStep, ...]:
        """Every tool call of every turn, in the order they were made."""
        return tuple(step for turn in self.turns for step in turn.tools)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        """Every tool call as a :class:`~benchkit.model.ToolCall`, in order."""
        return tuple(step.call() for step in self.tool_steps())

    @property
    def usage(self) -> Usage:
        """The tokens (and cost) of every turn together."""
        total = Usage()
        for turn in self.turns:
            total = total + turn.usage
        return total

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape kept in ``Response.metadata["trajectory"]``."""
        out: dict[str, Any] = {"ending": self.ending, "final": self.final}
        if self.reason is not None:
            out["reason"] = self.reason
        out["turns"] = [turn.to_dict() for turn in self.turns]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trajectory:
        """The trajectory of :meth:`to_dict`'s shape (unknown keys are ignored)."""
        final = data.get("final")
        return cls(
            turns=tuple(
                Turn.from_dict(turn)
                for turn in data.get("turns") or ()
                if isinstance(turn, Mapping)
            ),
            ending=str(data.get("ending") or "answered"),
            final=final if isinstance(final, str) else None,
            reason=None if data.get("reason") is None else str(data["reason"]),
        )

    @classmethod
    def of(cls, response: Response) -> Trajectory:
        """The trajectory an agent recorded in ``response``; for any other response, one
        turn made of its output (as text) and its tool calls."""
        kept = response.metadata.get(KEY) if response.metadata else None
        if isinstance(kept, Mapping):
            return cls.from_dict(kept)
        output = response.output
        text = output if isinstance(output, str) else None
        steps = tuple(
            ToolStep(call.name, dict(call.arguments), call.id) for call in response.tool_calls
        )
        turn = Turn(1, text, steps, response.usage or Usage(), response.latency_ms)
        return cls((turn,), "answered", text)
