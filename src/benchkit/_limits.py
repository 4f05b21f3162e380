"""benchkit's limits: the bounds on what a file, a request or the command line may ask for.

Every count, size and duration read from a benchmark file, a request or a command-line
option is checked against one of the constants below, so that a few bytes cannot ask for a
million workers, a 1e30-item list or an endless sleep. They are generous for real use;
docs/limits.md lists them (a test keeps that table, the shipped JSON Schemas and these
constants in step). A value beyond its bound, or a non-finite number, is an error naming
where it came from and the fix. (Resource limits on the processes benchkit starts are set
by their supervisor, :mod:`benchkit._procs`.)
"""

from __future__ import annotations

from collections.abc import Mapping

from benchkit.errors import ConfigError

__all__ = [
    "BOUNDS",
    "MAX_AGENT_TURNS",
    "CHAT_BOUNDS",
    "MAX_ALIAS_CHARS",
    "MAX_ALIAS_VALUES",
    "MAX_CONCURRENCY",
    "MAX_COST_USD",
    "MAX_COUNT",
    "MAX_DEPTH",
    "MAX_EMBEDDING_BATCH",
    "MAX_EPOCHS",
    "MAX_MEMORY_MB",
    "MAX_OTLP_BYTES",
    "MAX_RETRIES",
    "MAX_RETRIEVAL_LIMIT",
    "MAX_SEED",
    "MAX_SPANS",
    "MAX_TIMEOUT_S",
    "MAX_TOOL_CALLS",
    "MAX_TOKENS",
    "MAX_WAIT_S",
    "MAX_WEIGHT",
    "MIN_SEED",
    "check_chat_options",
    "out_of_bounds",
]

#: Cells (cases, tasks) running at once: ``run.concurrency``, a condition's
#: ``concurrency``, ``--concurrency``, ``--workers``, an MCP server's ``max_in_flight``.
MAX_CONCURRENCY = 1_000
#: Repeats of every task x condition (``run.epochs``, ``--epochs``, ``--runs``), and so
#: the ``k`` of pass@k.
MAX_EPOCHS = 1_000
#: Retries of one cell (``run.retries``, ``--retries``), reconnects of an MCP server.
MAX_RETRIES = 100
#: The longest time limit of one cell or call, in seconds (one day): ``timeout``,
#: ``--timeout``, ``timeoutMs``, ``timeout_ms``, an MCP server's CPU seconds.
MAX_TIMEOUT_S = 86_400
#: The longest wait benchkit is told to make, in seconds (one hour): retry backoff,
#: a setup step's ``delay_ms``, MemoryBench's ``phase_delay_ms``, a kill grace.
MAX_WAIT_S = 3_600
#: The largest task weight (``weight``): a sum of weights stays far from overflowing.
MAX_WEIGHT = 1_000_000
#: Memories fetched per query (MemoryBench ``query.retrieval_limit``).
MAX_RETRIEVAL_LIMIT = 10_000
#: Any other count a file or an option names (``--limit``, ``flatten.max_items``,
#: ``shared_sample_size``, ``runs list -n``): a cap on a slice, never an allocation.
MAX_COUNT = 1_000_000_000
#: The largest budget a run may name, in US dollars (``run.max_cost``, ``--max-cost``).
MAX_COST_USD = 1_000_000
#: Tokens a model may be asked to write in one reply (``max_tokens`` of a chat model).
MAX_TOKENS = 1_000_000
#: An MCP server's address-space cap, in MiB (1 TiB).
MAX_MEMORY_MB = 1_048_576
#: Model replies (turns) in one agent cell (the ``agent`` provider's ``limits.turns``).
MAX_AGENT_TURNS = 1_000
#: Tool calls in one agent cell (``limits.tool_calls``), and the calls one reply may ask
#: for at once.
MAX_TOOL_CALLS = 10_000
#: Spans kept for one cell by the OTLP receiver; later ones are counted, not kept.
MAX_SPANS = 10_000
#: The largest OTLP/HTTP request body the receiver reads, in bytes (after gzip too).
MAX_OTLP_BYTES = 16_000_000
#: Texts sent in one embeddings request (the client's ``batch``; OpenAI's own cap): a
#: longer list is sent as several requests.
MAX_EMBEDDING_BATCH = 2_048
#: Seeds are signed 64-bit integers, as the store keeps them.
MIN_SEED, MAX_SEED = -(2**63), 2**63 - 1

#: Lists and mappings nested deeper than this are refused: no benchmark needs them, and
#: every later walker (schemas, JavaScript semantics) recurses.
MAX_DEPTH = 100
#: Values that YAML aliases (``*name``) may add to a document by repeating what their
#: anchor holds, in all. A few hundred bytes of nested aliases can otherwise expand to
#: billions.
MAX_ALIAS_VALUES = 1_000_000
#: Characters (of strings and scalars) that YAML aliases may add to a document, in all, or
#: ten times the document's own size when that is more: a 1 MB string repeated by a
#: thousand aliases would otherwise take gigabytes.
MAX_ALIAS_CHARS = 10_000_000

#: Every bound above with its unit and what it bounds: the table docs/limits.md shows.
BOUNDS: dict[str, tuple[int, str, str]] = {
    "MAX_CONCURRENCY": (MAX_CONCURRENCY, "cells", "cells (cases, tasks) running at once"),
    "MAX_EPOCHS": (MAX_EPOCHS, "epochs", "repeats of every task x condition; pass@k's k"),
    "MAX_RETRIES": (MAX_RETRIES, "retries", "retries of a cell, reconnects of a server"),
    "MAX_TIMEOUT_S": (MAX_TIMEOUT_S, "seconds", "a cell's or a call's time limit"),
    "MAX_WAIT_S": (MAX_WAIT_S, "seconds", "a wait: retry backoff, delays between steps"),
    "MAX_WEIGHT": (MAX_WEIGHT, "", "a task's weight"),
    "MAX_RETRIEVAL_LIMIT": (MAX_RETRIEVAL_LIMIT, "memories", "memories fetched per query"),
    "MAX_COUNT": (MAX_COUNT, "items", "any other count (a cap on a slice)"),
    "MAX_COST_USD": (MAX_COST_USD, "USD", "a run's cost budget"),
    "MAX_TOKENS": (MAX_TOKENS, "tokens", "tokens a model may write in one reply"),
    "MAX_MEMORY_MB": (MAX_MEMORY_MB, "MiB", "a server's address-space cap"),
    "MAX_AGENT_TURNS": (MAX_AGENT_TURNS, "turns", "model replies in one agent cell"),
    "MAX_TOOL_CALLS": (MAX_TOOL_CALLS, "calls", "tool calls in one agent cell"),
    "MAX_SPANS": (MAX_SPANS, "spans", "spans kept for one cell"),
    "MAX_OTLP_BYTES": (MAX_OTLP_BYTES, "bytes", "an OTLP/HTTP request body"),
    "MAX_EMBEDDING_BATCH": (MAX_EMBEDDING_BATCH, "texts", "texts in one embeddings request"),
    "MAX_SEED": (MAX_SEED, "", "seeds (from MIN_SEED): signed 64-bit"),
    "MAX_DEPTH": (MAX_DEPTH, "levels", "lists and mappings nested in a file"),
    "MAX_ALIAS_VALUES": (MAX_ALIAS_VALUES, "values", "values YAML aliases add to a file"),
    "MAX_ALIAS_CHARS": (MAX_ALIAS_CHARS, "characters", "characters YAML aliases add"),
}


def out_of_bounds(
    value: object, low: float, high: float, *, above: bool = False, integer: bool = False
) -> str | None:
    """Why ``value`` is not a number from ``low`` (excluded when ``above``) to ``high``, as
    the end of a sentence ("must be <= 1,000, got 1e+30"); None when it is one.

    NaN and the infinities are never numbers here; with ``integer`` a value must be a
    whole number (a float such as ``3.0`` is one, as JSON Schema counts it).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be a number, got {value!r}"
    if value != value or value in (float("inf"), float("-inf")):
        return f"must be a finite number, got {value!r}"
    if integer and isinstance(value, float) and not value.is_integer():
        return f"must be a whole number, got {value!r}"
    if (value <= low) if above else (value < low):
        return f"must be {'>' if above else '>='} {low:,}, got {value!r}"
    if value > high:
        return f"must be <= {high:,}, got {value!r}"
    return None


#: The bounds of a chat model's options — the ``chat`` and ``local`` providers', in a
#: benchmark file, from Python or in a request: ``(low, high, low excluded, whole number)``.
CHAT_BOUNDS: dict[str, tuple[float, float, bool, bool]] = {
    "timeout": (0, MAX_TIMEOUT_S, True, False),
    "max_retries": (0, MAX_RETRIES, False, True),
    "max_concurrency": (1, MAX_CONCURRENCY, False, True),
    "max_tokens": (1, MAX_TOKENS, False, True),
    "requests_per_minute": (0, MAX_COUNT, True, False),
    "tokens_per_minute": (0, MAX_COUNT, True, False),
    "temperature": (0, 2, False, False),
    "seed": (MIN_SEED, MAX_SEED, False, True),
}


def check_chat_options(options: Mapping[str, object], *, prefix: str = "") -> None:
    """Refuse a chat model's options beyond their bounds (:data:`CHAT_BOUNDS`; ``None``
    means the default and ``seed: cell`` a seed per cell): a :class:`ConfigError` naming
    the first bad option (its JSON path ``prefix`` + name, when a ``prefix`` is given)
    and the fix. The one check of those options, wherever they come from."""
    for name, (low, high, above, integer) in CHAT_BOUNDS.items():
        value = options.get(name)
        if value is None or (name == "seed" and value == "cell"):
            continue
        problem = out_of_bounds(value, low, high, above=above, integer=integer)
        if problem is not None:
            raise ConfigError(
                f"{name} {problem}",
                json_path=f"{prefix}{name}" if prefix else None,
                fix=f"give {name} {'>' if above else '>='} {low:,} and <= {high:,} "
                "(docs/limits.md lists benchkit's bounds).",
            )
