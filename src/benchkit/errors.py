"""Errors that benchkit raises for bad input.

Every user-facing failure is a :class:`BenchkitError` that says *what* is wrong, *where*
(file, line, column, JSON path) and *how to fix it*. Each subclass also derives from the
builtin exception it refines, so ``except ValueError`` keeps working for callers who do not
know benchkit::

    >>> try:
    ...     raise FormatError("expected a mapping", file="b.yaml", line=3, json_path="$.tasks[0]")
    ... except ValueError as exc:
    ...     print(exc)
    b.yaml:3: $.tasks[0]: expected a mapping
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "BenchkitError",
    "ConfigError",
    "FormatError",
    "InvocationError",
    "LLMError",
    "NotFoundError",
    "ProviderError",
    "RegistryError",
    "RunNotFoundError",
    "StatsError",
    "StoreError",
]


_ONE_LINE = str.maketrans(
    {"\n": "\\n", "\r": "\\r", "\x0b": "\\v", "\x0c": "\\f", "\x85": "\\x85",
     "\u2028": "\\u2028", "\u2029": "\\u2029"}
)  # fmt: skip


class BenchkitError(Exception):
    """Base class: a message plus optional location and a hint on how to fix it."""

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        column: int | None = None,
        json_path: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.column = column
        self.json_path = json_path
        self.fix = fix
        super().__init__(self.render())

    @property
    def location(self) -> str:
        """``file:line:column`` (whatever parts are known), or an empty string."""
        parts: list[str] = []
        if self.file is not None:
            parts.append(self.file)
            if self.line is not None:
                parts.append(str(self.line))
                if self.column is not None:
                    parts.append(str(self.column))
        return ":".join(parts)

    def render(self) -> str:
        """One paragraph: location, JSON path, message and fix.

        Line breaks (a quoted key or value may hold one) are written as ``\\n``, so the
        CLI's error stays one line whatever the input held, and a lone surrogate as
        ``\\udc00``, so it can always be printed.
        """
        head = [p for p in (self.location, self.json_path) if p]
        text = ": ".join([*head, self.message])
        if self.fix:
            text += f" Fix: {self.fix}"
        return text.translate(_ONE_LINE).encode("utf-8", "backslashreplace").decode("utf-8")


class FormatError(BenchkitError, ValueError):
    """A benchmark, config or result file that cannot be parsed or does not validate."""


class ConfigError(BenchkitError, ValueError):
    """Run options or arguments that are inconsistent or out of range."""


class RegistryError(BenchkitError, LookupError):
    """A provider, evaluator, verifier or format name that nothing is registered under."""


class ProviderError(BenchkitError, RuntimeError):
    """A system under test that cannot be set up (missing executable, bad URL, ...)."""


class StatsError(BenchkitError, ValueError):
    """Statistics asked for with invalid arguments (``k > n`` for pass@k, ...)."""


class NotFoundError(BenchkitError, KeyError):
    """A name looked up in a result or a store that is not there (a condition id, ...).

    A :class:`KeyError` too, so ``except KeyError`` keeps working; unlike KeyError its
    message is not shown in quotes.
    """

    def __str__(self) -> str:
        return self.render()


class StoreError(BenchkitError, RuntimeError):
    """The run store cannot be used: damaged, not a benchkit store, written by a newer
    benchkit, not writable, full, or locked by another process for too long.

    benchkit never resets or rewrites a store it cannot read; the message names the file and
    what to do about it.
    """


class RunNotFoundError(NotFoundError):
    """No run in the store has this id (or the prefix given matches several runs)."""


class InvocationError(RuntimeError):
    """A provider's call failed for one cell; the Runner turns it into an error result.

    Not a :class:`BenchkitError`: it describes the system under test, not the user's input.
    ``category`` is the error category recorded on the cell (``execution_error`` unless
    the provider knows better, e.g. ``timeout``); ``retryable=False`` tells the Runner not
    to retry even when the category is retried (a JSON-RPC error reply is an answer).
    ``response`` is what the system did produce before it failed (a
    :class:`benchkit.Response`: an agent's trajectory up to a limit); the cell keeps it.

    .. versionadded:: 0.2.0
       ``response``.
    """

    def __init__(
        self,
        message: str,
        *,
        category: str = "execution_error",
        retryable: bool = True,
        exit_code: int | None = None,
        stderr: str | None = None,
        response: object | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.category = category
        self.retryable = retryable
        self.exit_code = exit_code
        self.stderr = stderr
        self.response = response


class LLMError(InvocationError):
    """A chat request that failed for good (after the client's own retries).

    ``kind`` says why: ``rate_limited``, ``server_error``, ``connection_error``,
    ``timeout``, ``bad_request``, ``auth_error``, ``invalid_response`` or
    ``response_too_large`` (a reply over the client's ``max_response_bytes``). It is an
    :class:`InvocationError`, so a provider or judge that lets it propagate gives a
    categorised cell error; the Runner does not retry it again (the client already did).
    """

    def __init__(self, message: str, *, kind: str, status: int | None = None, attempts: int = 1):
        super().__init__(
            message,
            category="timeout" if kind == "timeout" else "execution_error",
            retryable=False,
        )
        self.kind = kind
        self.status = status
        self.attempts = attempts
