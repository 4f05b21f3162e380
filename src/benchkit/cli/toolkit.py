"""The CLI toolkit's former address: :mod:`benchkit.cli_toolkit`, re-exported.

Tools written against ``benchkit.cli.toolkit`` keep working; new code (benchkit's own tool
packages included) imports :mod:`benchkit.cli_toolkit`, which is outside the ``cli``
package, so a tool's commands do not import the CLI that loads them.
"""

from __future__ import annotations

from benchkit import cli_toolkit as _moved
from benchkit.cli_toolkit import *  # noqa: F403  (every public name, as before)

__all__ = list(_moved.__all__)
