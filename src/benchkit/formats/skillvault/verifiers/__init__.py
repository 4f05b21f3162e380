"""Built-in verifiers: checks of what a condition produced, beyond its output.

* :class:`BundleFileExists` (``bundle_file_exists``) — a path exists inside the bundle;
* :class:`BundleFileContains` (``bundle_file_contains``) — a bundle file contains a string;
* :class:`CommandVerifier` (``command``) — a shell command exits 0.

These are skillvault's verifiers, with its checks, messages and error categories; the
directory they inspect is the provider's ``Response.artifacts`` when it returned one, else
the condition's bundle. Registered by name in :mod:`benchkit.registry`, so a task names them
with a :class:`~benchkit.model.VerifierSpec`::

    VerifierSpec("bundle_file_contains", {"path": "answer.txt", "contains": "receipt"})
    VerifierSpec("command", {"command": "python check.py", "timeout_ms": 2000})
"""

from __future__ import annotations

from benchkit.formats.skillvault.verifiers._bundle import BundleFileContains, BundleFileExists
from benchkit.formats.skillvault.verifiers._command import CommandVerifier

__all__ = ["BundleFileContains", "BundleFileExists", "CommandVerifier"]
