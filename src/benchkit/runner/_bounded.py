"""What a recorded cell may hold: every text in it cut to a bound.

Evaluators see the whole output first; only what is recorded is cut. A cut text ends with
``"…[truncated N characters]"`` (:func:`benchkit._bounds.clip`).
"""

from __future__ import annotations

import attrs

from benchkit._bounds import clip, clip_json
from benchkit.model import Response
from benchkit.results import Score, Verdict

__all__ = [
    "MAX_OUTPUT_CHARS",
    "MAX_TEXT_CHARS",
    "bounded_response",
    "bounded_scores",
    "bounded_verdicts",
    "excerpt",
]

#: The longest a string in a recorded cell's output or raw reply may be, in characters;
#: a longer one is cut and ends with ``"…[truncated N characters]"``.
MAX_OUTPUT_CHARS = 1_000_000

#: The same for each reason, message, excerpt and error of a score or verdict, and each
#: string in their ``details`` and in the response's ``metadata`` (a judge's reply, a
#: tool's text): a 10 MB unparseable judge reply is not copied whole into every cell.
MAX_TEXT_CHARS = 20_000


def excerpt(message: str | None, limit: int = 2000) -> str | None:
    """A cell's error message, cut to ``limit`` characters (it may quote a huge output)."""
    if message is None or len(message) <= limit:
        return message
    return f"{message[:limit]}... ({len(message)} characters)"


def bounded_response(response: Response) -> Response:
    """``response`` with its output, raw reply and metadata cut to size (itself when none
    needed cutting)."""
    output = response.output
    if type(output) is not str or len(output) > MAX_OUTPUT_CHARS:
        output = clip_json(output, MAX_OUTPUT_CHARS)
    raw = response.raw
    if raw is not None:
        raw = clip_json(raw, MAX_OUTPUT_CHARS)
    metadata = response.metadata
    if metadata:
        metadata = clip_json(metadata, MAX_TEXT_CHARS)
    if output is response.output and raw is response.raw and metadata is response.metadata:
        return response
    return attrs.evolve(response, output=output, raw=raw, metadata=metadata)


def _text(value: str | None) -> str | None:
    return value if value is None or len(value) <= MAX_TEXT_CHARS else clip(value, MAX_TEXT_CHARS)


def bounded_scores(scores: tuple[Score, ...]) -> tuple[Score, ...]:
    """Each score's reason, error and details cut to :data:`MAX_TEXT_CHARS`."""
    bounded = scores
    for i, s in enumerate(scores):
        if s.reason is None and s.error is None and not s.details:  # `exact` and the like
            continue
        reason, error = _text(s.reason), _text(s.error)
        details = clip_json(s.details, MAX_TEXT_CHARS) if s.details else s.details
        if reason is not s.reason or error is not s.error or details is not s.details:
            new = attrs.evolve(s, reason=reason, error=error, details=details)
            bounded = (*bounded[:i], new, *bounded[i + 1 :])
    return bounded


def bounded_verdicts(verdicts: tuple[Verdict, ...]) -> tuple[Verdict, ...]:
    """Each verdict's message, excerpts and details cut to :data:`MAX_TEXT_CHARS`."""
    bounded = verdicts
    for i, v in enumerate(verdicts):
        message, out, err = _text(v.message), _text(v.stdout_excerpt), _text(v.stderr_excerpt)
        details = clip_json(v.details, MAX_TEXT_CHARS) if v.details else v.details
        if (
            message is v.message
            and out is v.stdout_excerpt
            and err is v.stderr_excerpt
            and details is v.details
        ):
            continue
        new = attrs.evolve(
            v, message=message, stdout_excerpt=out, stderr_excerpt=err, details=details
        )
        bounded = (*bounded[:i], new, *bounded[i + 1 :])
    return bounded
