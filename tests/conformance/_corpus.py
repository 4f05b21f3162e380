"""Where the originals' real files are: ``$BENCHKIT_CORPUS``, else ``../shared/corpus``
next to the repository (CI keeps them there). They never enter the repository.

A relative ``BENCHKIT_CORPUS`` is taken from the repository root, not the working directory,
so ``pytest`` gives the same answer wherever it is started.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
CORPUS_ENV = "BENCHKIT_CORPUS"
REQUIRE_ENV = "BENCHKIT_REQUIRE_CORPUS"
"""Set to 1 (as ``.ci/run`` does) and a missing corpus fails the tests instead of skipping."""


def corpus_dir() -> Path:
    """The corpus directory named by ``$BENCHKIT_CORPUS`` (default ``../shared/corpus``)."""
    return (REPO / os.environ.get(CORPUS_ENV, "../shared/corpus")).resolve()


CORPUS = corpus_dir()


def require_corpus() -> Path:
    """The corpus directory; skips the calling test with a one-line reason when it is absent
    (fails instead when ``$BENCHKIT_REQUIRE_CORPUS`` is set)."""
    if CORPUS.is_dir():
        return CORPUS
    reason = f"no corpus of the original tools' files at {CORPUS} (set {CORPUS_ENV})"
    if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
        pytest.fail(f"{reason}, and {REQUIRE_ENV} requires it", pytrace=False)
    pytest.skip(reason)
