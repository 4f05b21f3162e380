"""The built-in price table: a versioned data file shipped with the package (#44).

``prices.json`` maps model names to USD per million input, output and cached-input tokens,
with the date the prices were read. The client falls back to it for a reply's model when
no price was given (an explicit price always wins); a model it does not know has no cost
— reports say "cost unknown", never 0. A dated snapshot name (``gpt-4o-2024-08-06``,
``claude-3-5-sonnet-20241022``) takes its family's price.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources

import attrs

from benchkit.model import Usage

__all__ = ["Price", "PriceTable", "builtin_prices"]


@attrs.frozen
class Price:
    """USD per million prompt and completion tokens, for cost accounting; ``cached`` is
    the price of prompt tokens the provider served from its prompt cache (None: the
    prompt price). The built-in table (:func:`builtin_prices`) holds the known models' prices.

    .. versionchanged:: 0.2.0
       ``cached_per_million``, and ``cost(usage, cached_tokens=)``.
    """

    prompt_per_million: float
    completion_per_million: float
    cached_per_million: float | None = None

    def cost(self, usage: Usage, cached_tokens: int = 0) -> float:
        """The cost of ``usage``, ``cached_tokens`` of its prompt tokens at the cached price."""
        cached = min(max(cached_tokens, 0), usage.prompt_tokens)
        cached_price = (
            self.prompt_per_million if self.cached_per_million is None else self.cached_per_million
        )
        return (
            (usage.prompt_tokens - cached) * self.prompt_per_million
            + cached * cached_price
            + usage.completion_tokens * self.completion_per_million
        ) / 1_000_000


@attrs.frozen
class PriceTable:
    """Prices by model name, read on ``date`` (table format ``version``).

    .. versionadded:: 0.2.0
    """

    version: int
    date: str
    prices: Mapping[str, Price]

    def find(self, model: str) -> Price | None:
        """The price of ``model``: its own entry, else that of the longest name it extends
        by a dated suffix (``-2024-08-06``, ``-20241022``, ``-latest``); None when unknown."""
        found = self.prices.get(model)
        if found is not None:
            return found
        best: str | None = None
        for name in self.prices:
            rest = model[len(name) + 1 :] if model.startswith(name + "-") else ""
            if (rest[:1].isdigit() or rest == "latest") and (best is None or len(name) > len(best)):
                best = name
        return None if best is None else self.prices[best]


@functools.cache
def builtin_prices() -> PriceTable:
    """The table shipped as ``benchkit/llm/prices.json`` (read once).

    .. versionadded:: 0.2.0
    """
    text = resources.files("benchkit.llm").joinpath("prices.json").read_text(encoding="utf-8")
    data = json.loads(text)
    prices = {
        name: Price(float(row["input"]), float(row["output"]), row.get("cached"))
        for name, row in data["models"].items()
    }
    return PriceTable(int(data["version"]), str(data["date"]), prices)
