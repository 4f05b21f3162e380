"""Which repeat of a judge is running (``RunOptions.judge_repeats``).

The Runner asks an evaluator several times per cell; a judge at temperature 0 would get
its cached reply back every time. The Runner sets :data:`JUDGE_REPEAT` around each repeat
and :meth:`benchkit.llm.LLMClient.chat` sends repeat ``r > 0`` with ``seed=r`` (unless the
caller chose a seed), so each repeat is its own request and its own cache entry, and the
first repeat is the request a run without repeats makes.
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["JUDGE_REPEAT"]

#: 0 outside repeats and for the first one.
JUDGE_REPEAT: ContextVar[int] = ContextVar("benchkit_judge_repeat", default=0)
