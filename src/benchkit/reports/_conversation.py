"""An agent's cell as a conversation in plain text (``runs show RUN --cell T/C/E``).

The same reading of the transcript as the explorer's conversation view: the messages the
agent started from, one block per turn (the model's reply, its tokens and latency, each
tool call and its result, long results cut), and the turn the cell ended on, marked.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from benchkit.transcript import TranscriptEvent

__all__ = ["conversation_lines"]

#: How much of one message, argument list or tool result a line shows.
_SHOWN = 200


def _short(value: Any, limit: int = _SHOWN) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _turned(event: TranscriptEvent) -> bool:
    return isinstance(event.data, dict) and "turn" in event.data


def conversation_lines(events: Sequence[TranscriptEvent]) -> list[str]:
    """The conversation's lines (no newline), or none when the transcript is not an
    agent's (no tool event or ending that names its turn)."""
    if not any(e.kind in ("tool_call", "tool_result", "error") and _turned(e) for e in events):
        return []
    ending = next((e.data for e in events if e.kind == "error" and _turned(e)), None)
    failed = ending["turn"] if isinstance(ending, dict) else None
    body: list[str] = []
    turn = 0
    for e in events:
        data = e.data if isinstance(e.data, dict) else {}
        if e.kind == "message" and "role" in data:
            body.append(f"  {data['role']}: {_short(data.get('content'))}")
        elif e.kind == "response":
            turn += 1
            usage = data.get("usage") or {}
            facts = []
            if "prompt" in usage:
                facts.append(f"{usage['prompt']}+{usage.get('completion', 0)} tokens")
            if e.duration is not None:
                facts.append(f"{e.duration * 1000:.0f} ms")
            mark = "   <- the cell ended here" if turn == failed else ""
            text = data.get("text")
            body.append(
                f"  turn {turn}{' (' + ', '.join(facts) + ')' if facts else ''}:"
                f"{' ' + _short(text) if text else ''}{mark}"
            )
        elif e.kind == "tool_call" and _turned(e):
            body.append(f"    -> {e.title} {_short(data.get('arguments'))}")
        elif e.kind == "tool_result" and _turned(e):
            took = "" if e.duration is None else f" ({e.duration * 1000:.0f} ms)"
            said = f"error: {data['error']}" if "error" in data else data.get("result")
            body.append(f"    <- {e.title}{took}: {_short(said)}")
        elif e.kind == "error" and _turned(e):
            body.append(f"  ended: {data.get('ending')} — {_short(data.get('reason'))}")
    head = f"conversation: {turn} turn{'' if turn == 1 else 's'}"
    if isinstance(ending, dict):
        head += f", ended in turn {failed} ({ending.get('ending')})"
    return [head, *body]
