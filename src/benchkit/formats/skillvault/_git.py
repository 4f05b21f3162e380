"""The git commit skillvault records with a run."""

from __future__ import annotations

import os
import subprocess

from benchkit._js import trim


def git_commit(directory: str | os.PathLike[str]) -> str | None:
    """``git rev-parse --short HEAD`` in ``directory``, or None (no git, no repository).

    What skillvault records as ``run.git_commit``, in every mode (deterministic too).
    """
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    commit = trim(done.stdout)
    return commit if done.returncode == 0 and commit else None
