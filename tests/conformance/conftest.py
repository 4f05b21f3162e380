"""Every conformance test needs the corpus: without it, each skips with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._corpus import require_corpus


@pytest.fixture(autouse=True)
def corpus() -> Path:
    """The corpus directory (the test skips, or fails under BENCHKIT_REQUIRE_CORPUS, without it)."""
    return require_corpus()
