"""A run's budget: what its finished cells spent, against ``max_cost`` / ``max_tokens`` /
``max_calls`` (#44).

The run state hands every finished cell to :meth:`Meter.add` (a resumed run's kept cells
first, so a resume with a higher budget goes on from what was spent); once a limit is
reached the state stops scheduling cells and cancels those in flight, as Ctrl-C does, and
the result carries the :class:`~benchkit.results.BudgetStop`. Spend is read from the cells
alone — the response's ``usage`` and the judges' ``details["usage"]`` — so any provider or
judge that reports usage is counted, and the figures are what the report sums.

A call with tokens but no cost (a model the price table does not know) cannot be counted
against a cost budget: it stops the run rather than count as free.
"""

from __future__ import annotations

from collections.abc import Mapping

from benchkit.model import RunOptions
from benchkit.results import BudgetStop, CellResult

__all__ = ["Meter"]


class Meter:
    """What a run's cells spent, against its limits."""

    def __init__(self, options: RunOptions) -> None:
        self.max_cost = options.max_cost
        self.max_tokens = options.max_tokens
        self.max_calls = options.max_calls
        self.cost = 0.0
        self.tokens = 0
        self.calls = 0
        self.unpriced: list[str] = []
        self.stop: BudgetStop | None = None

    @staticmethod
    def create(options: RunOptions) -> Meter | None:
        """A meter for a run with a budget; None without one (nothing to count)."""
        if options.max_cost is None and options.max_tokens is None and options.max_calls is None:
            return None
        return Meter(options)

    def add(self, cell: CellResult) -> bool:
        """Count ``cell``; True once a limit is reached (then :attr:`stop` says which)."""
        response = cell.response
        if response is None:
            self.calls += cell.attempts
        elif response.metadata.get("cached") is not True:  # a cached reply is no call
            self.calls += cell.attempts
            usage = response.usage
            if usage is not None:
                model = response.metadata.get("model") or cell.condition_id
                self._spend(usage.total_tokens, usage.cost_usd, model)
        for score in cell.scores:
            spent = score.details.get("usage") if score.details else None
            if isinstance(spent, Mapping):
                self.calls += 1
                tokens = int(spent.get("prompt_tokens") or 0) + int(
                    spent.get("completion_tokens") or 0
                )
                cost = spent.get("cost_usd")
                self._spend(tokens, None if cost is None else float(cost), score.name)
        if self.stop is None:
            reason = self._reached()
            if reason is not None:
                self.stop = BudgetStop(
                    reason=reason,
                    cost_usd=None if self.unpriced else self.cost,
                    tokens=self.tokens,
                    calls=self.calls,
                    max_cost=self.max_cost,
                    max_tokens=self.max_tokens,
                    max_calls=self.max_calls,
                    unpriced=tuple(self.unpriced),
                )
        return self.stop is not None

    def _spend(self, tokens: int, cost: float | None, who: object) -> None:
        self.tokens += tokens
        if cost is not None:
            self.cost += cost
        elif tokens and str(who) not in self.unpriced:
            self.unpriced.append(str(who))

    def _reached(self) -> str | None:
        if self.max_cost is not None:
            if self.unpriced:
                return "cost unknown"
            if self.cost >= self.max_cost:
                return "cost"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return "tokens"
        if self.max_calls is not None and self.calls >= self.max_calls:
            return "calls"
        return None
