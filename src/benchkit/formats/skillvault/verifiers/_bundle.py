"""skillvault's function verifiers: does a file exist in the bundle, does it contain a string.

Both check the directory the condition produced: the response's ``artifacts`` when the
provider returned one, else the condition's ``bundle``. They reproduce skillvault's checks,
in its order, with its messages and error categories:

1. no bundle: ``assertion_failed`` "bundle path is required for function verifiers";
2. a missing or blank ``path`` (or a non-string ``contains``): ``execution_error``
   "bundle_file_exists requires args.path" / "bundle_file_contains requires args.path +
   args.contains";
3. an absolute path: ``execution_error`` "verifier path must be relative";
4. a path that resolves outside the bundle (``..``; the bundle root itself is allowed;
   symlinks are not followed when resolving): ``execution_error`` "verifier path escapes
   bundle root";
5. the check itself: ``assertion_failed`` "expected file to exist: <path>", "expected <path>
   to contain "<needle>"" or "expected file to exist for content check: <path>".

A pass has exit code 0 and a failure exit code 1, as in skillvault. The task's timeout does
not apply (the checks are local file operations).

    >>> BundleFileContains(path="answer.txt", contains="receipt")
    BundleFileContains(path='answer.txt', contains='receipt')
"""

from __future__ import annotations

import abc
import os
import time
from pathlib import Path

import anyio.to_thread

from benchkit._js import trim
from benchkit.model import Response, Task
from benchkit.protocols import VerifyContext
from benchkit.results import Verdict

__all__ = ["BundleFileContains", "BundleFileExists", "bundle_dir", "confined_path"]

_Check = tuple[bool, str, str | None]


class _PathEscapeError(ValueError):
    """A verifier path that is absolute or climbs out of the bundle (message = skillvault's)."""


def bundle_dir(response: Response, context: VerifyContext) -> Path | None:
    """The directory a verifier inspects: the provider's artifacts, else the condition's bundle."""
    if response.artifacts:
        return Path(response.artifacts)
    return context.bundle


def confined_path(bundle: Path, relative: str) -> Path:
    """``relative`` resolved inside ``bundle``, as skillvault resolves it (no symlinks).

    Raises :class:`ValueError` with skillvault's message for an absolute path or one that
    escapes the bundle root (the root itself is allowed).
    """
    if os.path.isabs(relative):
        raise _PathEscapeError("verifier path must be relative")
    root = os.path.normpath(os.path.abspath(bundle))
    target = os.path.normpath(os.path.join(root, relative))
    if target != root and not target.startswith(root + os.sep):
        raise _PathEscapeError("verifier path escapes bundle root")
    return Path(target)


def _exists(path: Path) -> bool:
    """``fs.access(path)``: true for anything that exists (a file, a directory)."""
    try:
        return os.access(path, os.F_OK)
    except (OSError, ValueError):  # ValueError: an embedded NUL byte
        return False


def _read_text(path: Path) -> str | None:
    """The file as UTF-8 text (bad bytes replaced, as Node does), or None if unreadable."""
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return None


class _FunctionVerifier(abc.ABC):
    """Shared plumbing: the bundle lookup, the timing and the Verdict."""

    name = ""

    async def verify(self, task: Task, response: Response, context: VerifyContext) -> Verdict:
        started = time.perf_counter_ns()
        bundle = bundle_dir(response, context)
        check: _Check = (
            False,
            "assertion_failed",
            "bundle path is required for function verifiers",
        )
        if bundle is not None:
            check = await anyio.to_thread.run_sync(self._check, bundle)
        passed, category, message = check
        elapsed = 0 if context.deterministic else (time.perf_counter_ns() - started) // 1_000_000
        return Verdict(
            name=self.name,
            passed=passed,
            category="none" if passed else category,
            message=message,
            exit_code=0 if passed else 1,
            duration_ms=elapsed,
        )

    @abc.abstractmethod
    def _check(self, bundle: Path) -> _Check:
        """(passed, category, message) for this verifier's check of ``bundle``."""


class BundleFileExists(_FunctionVerifier):
    """Passes when ``path`` exists inside the bundle (a file or a directory, like ``fs.access``).

    ``path`` is whatever the config holds: a non-string or blank value is reported at run
    time as an ``execution_error``, exactly as skillvault does, not refused at load time.
    """

    name = "bundle_file_exists"

    def __init__(self, *, path: object = None) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"BundleFileExists(path={self.path!r})"

    def _check(self, bundle: Path) -> _Check:
        path = self.path
        if not isinstance(path, str) or not trim(path):
            return False, "execution_error", "bundle_file_exists requires args.path"
        try:
            target = confined_path(bundle, trim(path))
        except _PathEscapeError as exc:
            return False, "execution_error", str(exc)
        if _exists(target):
            return True, "none", None
        return False, "assertion_failed", f"expected file to exist: {path}"


class BundleFileContains(_FunctionVerifier):
    """Passes when the file at ``path`` in the bundle contains ``contains`` (UTF-8, case-
    sensitive; an empty needle passes). Arguments are checked at run time, like skillvault.
    """

    name = "bundle_file_contains"

    def __init__(self, *, path: object = None, contains: object = None) -> None:
        self.path = path
        self.contains = contains

    def __repr__(self) -> str:
        return f"BundleFileContains(path={self.path!r}, contains={self.contains!r})"

    def _check(self, bundle: Path) -> _Check:
        path, needle = self.path, self.contains
        if not isinstance(path, str) or not trim(path) or not isinstance(needle, str):
            return (
                False,
                "execution_error",
                "bundle_file_contains requires args.path + args.contains",
            )
        try:
            target = confined_path(bundle, trim(path))
        except _PathEscapeError as exc:
            return False, "execution_error", str(exc)
        content = _read_text(target)
        if content is None:
            return False, "assertion_failed", f"expected file to exist for content check: {path}"
        if needle in content:
            return True, "none", None
        return False, "assertion_failed", f'expected {path} to contain "{needle}"'
