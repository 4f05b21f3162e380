"""The repository holds only what was written here: no tracked file (benchmarks/, tests/
fixtures, anything) has the bytes of a file of the originals' corpus."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from ._corpus import REPO

_NOTES = {"PROVENANCE.md", "README.md"}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_no_tracked_file_is_a_byte_copy_of_the_corpus(corpus: Path) -> None:
    originals = {
        _digest(p): p.relative_to(corpus)
        for p in corpus.rglob("*")
        if p.is_file() and p.name not in _NOTES
    }
    assert originals, f"{corpus} holds no files"
    listed = subprocess.run(
        ["git", "ls-files", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    tracked = [REPO / name for name in listed.split("\0") if name]
    assert len(tracked) > 50  # really the repository's files
    copies = [
        f"{p.relative_to(REPO)} = corpus/{originals[_digest(p)]}"
        for p in tracked
        if p.is_file() and _digest(p) in originals
    ]
    assert copies == []
