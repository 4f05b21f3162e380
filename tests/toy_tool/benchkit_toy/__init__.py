"""Toy arithmetic benchmarks: JSON files of sums (``{"toy": 1, "sums": ["2 + 3 = 5"]}``).

A sixth benchkit tool, published as its own distribution (``benchkit-toy``): everything it
brings is declared in :data:`benchkit_toy._tool.TOOL`.
"""

from benchkit_toy._format import FORMAT, ToyFormat
from benchkit_toy._plugins import Calculator, WithinOne

__all__ = ["FORMAT", "Calculator", "ToyFormat", "WithinOne"]
