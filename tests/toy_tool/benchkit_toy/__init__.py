"""Toy arithmetic benchmarks: JSON files of sums (``{"toy": 1, "sums": ["2 + 3 = 5"]}``)
and ``.toy`` text files, one sum a line.

A sixth benchkit tool, published as its own distribution (``benchkit-toy``): everything it
brings is declared in :data:`benchkit_toy._tool.TOOL`. This file imports nothing: every
benchkit command lists the tools, which imports the package of each ``Tool``.
"""
