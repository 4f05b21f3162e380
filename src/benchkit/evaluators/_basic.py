"""The five basic evaluators: ``exact``, ``contains``, ``regex``, ``json_schema``, ``numeric``.

Each reads its expectation from its own options first and falls back to ``task.expected``,
so a benchmark can set one evaluator for all tasks and vary only the expectations. A wrong
answer is a Score with ``value`` in [0, 1]; an evaluator that cannot judge (no expectation,
a broken schema in ``task.expected``) returns a Score with ``value=None`` and ``error`` set,
so it never counts as a silent 0. Bad options raise :class:`~benchkit.errors.ConfigError`
when the evaluator is built, before any task runs.

Non-string values become text the Python/JSON way: ``None`` is ``"null"``, ``True`` is
``"true"``, ``25.0`` stays ``"25.0"`` (JavaScript's ``String()`` would give ``"25"``), and
lists and objects are compact JSON with non-ASCII characters kept as they are.
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from benchkit import _js
from benchkit._jsonschema import DRAFTS, Draft, json_pointer, user_validator
from benchkit.errors import ConfigError
from benchkit.results import Score

if TYPE_CHECKING:
    from benchkit.model import Response, Task

__all__ = [
    "ContainsEvaluator",
    "ExactEvaluator",
    "JsonSchemaEvaluator",
    "NumericEvaluator",
    "RegexEvaluator",
]

_DEFAULT_UNWRAP: tuple[str, ...] = ()  # eval-skills files set their own (its loader)

_RegexMode = Literal["search", "fullmatch"]

_REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}
_EXCERPT = 200
#: How much of each side an exact-match failure quotes in its reason and details.
_REASON_EXCERPT = 500


class _Unset(enum.Enum):
    """Marks an option that was not given (``None`` is a value an expectation may have)."""

    UNSET = "UNSET"


_UNSET = _Unset.UNSET


# --------------------------------------------------------------------------- shared helpers


def _jsonable(value: object) -> Any:
    # json.dumps calls this for what it cannot write: read-only mappings become dicts,
    # anything else (a set, a custom object) its str().
    return dict(value) if isinstance(value, Mapping) else str(value)


def _to_json(value: Any, *, sort_keys: bool = False) -> str:
    """Compact JSON that keeps non-ASCII text, as JavaScript's ``JSON.stringify`` writes it."""
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, default=_jsonable
    )


def _text(value: Any) -> str:
    """What contains and regex search in: a string as is, anything else compact JSON."""
    return value if isinstance(value, str) else _to_json(value)


def _unwrap(output: Any, keys: tuple[str, ...]) -> Any:
    """The value of the first of ``keys`` present in an object output (even when it is None)."""
    if isinstance(output, Mapping):
        for key in keys:
            if key in output:
                return output[key]
    return output


def _strings(value: object) -> tuple[str, ...] | None:
    """A string as one item, a sequence of strings as a tuple; None for anything else."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return None


def _quoted(items: Sequence[str]) -> str:
    return ", ".join(f'"{item}"' for item in items)


def _error(name: str, why: str) -> Score:
    return Score(name=name, value=None, passed=False, error=why)


def _no_expectation(name: str, option: str, expected: object, kind: str) -> Score:
    """The error score of a task that gives this evaluator nothing usable to compare with."""
    if expected is None:
        return _error(
            name, f"nothing to compare against: set the {option!r} option or task.expected"
        )
    return _error(name, f"task.expected is not {kind}: {expected!r}")


def _option_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(
            f"option {name!r} must be true or false, got {value!r}",
            fix=f"write {name}: true or {name}: false (not a string).",
        )
    return value


def _option_strings(name: str, value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    strings = _strings(value)
    if strings is None:
        raise ConfigError(
            f"option {name!r} must be a string or a list of strings, got {value!r}",
            fix=f'e.g. {name}: ["first", "second"]',
        )
    return strings


def _option_threshold(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(
            f"option 'threshold' must be a number in [0, 1], got {value!r}",
            fix="use 1.0 (everything must match, the default) or a fraction such as 0.5.",
        )
    return float(value)


def _number(value: object) -> float | None:
    """A real number as a float: ints, floats, or a string ``float()`` reads after strip.

    Booleans are not numbers; ``"25%"`` or ``"about 25"`` are not either (no guessing).
    Returns None for anything else, or for an int too large for a float.
    """
    if isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            return float(value.strip())
    except (ValueError, OverflowError):
        return None
    return None


# --------------------------------------------------------------------------- exact

_EXACT_MATCH = Score(name="exact", value=1.0, passed=True, reason="Exact match")


class ExactEvaluator:
    """Passes when the output, as text, equals the expected value (score 1 or 0).

    The expectation is the ``value`` option (``value=None`` expects ``null``), else
    ``task.expected``; with neither the score is an error. An object output is unwrapped to
    the first key present among ``unwrap`` (present even when its value is None), unless
    the expectation is itself an object, which is compared with the whole output. Both sides
    are stringified (see the module docstring; object keys are sorted so key order does not
    matter), trimmed as JavaScript's ``String.prototype.trim`` does when ``trim`` (as
    eval-skills: U+FEFF goes, U+001C-U+001F and U+0085 stay), and compared after
    :meth:`str.lower` when not ``case_sensitive`` (as JavaScript's ``toLowerCase``, not
    casefold). By default ``unwrap`` is empty and an object output is compared whole;
    eval-skills files set ``unwrap=["result", "output", "answer"]``, that tool's rule.

        >>> import anyio
        >>> from benchkit.model import Response, Task
        >>> task, response = Task("t", expected="25.0"), Response({"result": "25.0"})
        >>> anyio.run(ExactEvaluator(unwrap=["result"]).evaluate, task, response).passed
        True
        >>> anyio.run(ExactEvaluator(value="25", unwrap=["result"]).evaluate, task, response).reason
        'Expected "25" but got "25.0"'
    """

    def __init__(
        self,
        *,
        value: Any = _UNSET,
        case_sensitive: bool = True,
        trim: bool = True,
        unwrap: Sequence[str] = _DEFAULT_UNWRAP,
    ) -> None:
        self.value = value
        self.case_sensitive = _option_bool("case_sensitive", case_sensitive)
        self.trim = _option_bool("trim", trim)
        self.unwrap = _option_strings("unwrap", unwrap) or ()

    def _normalise(self, value: Any) -> str:
        if isinstance(value, str):
            text = value
        else:
            try:
                text = _to_json(value, sort_keys=True)
            except TypeError:  # keys of mixed types (1 and "a") cannot be sorted
                text = _to_json(value)
        return _js.trim(text) if self.trim else text

    async def evaluate(self, task: Task, response: Response) -> Score:
        expected = task.expected if self.value is _UNSET else self.value
        if self.value is _UNSET and expected is None:
            return _no_expectation("exact", "value", None, "a value")
        output = response.output
        if type(output) is str and type(expected) is str:  # the usual case: two strings
            want, got = (_js.trim(expected), _js.trim(output)) if self.trim else (expected, output)
        else:
            if not isinstance(expected, Mapping):
                output = _unwrap(output, self.unwrap)
            want, got = self._normalise(expected), self._normalise(output)
        passed = want == got if self.case_sensitive else want.lower() == got.lower()
        if passed:  # no details on the hot path: a pass says all there is to say
            return _EXACT_MATCH
        want, got = _clip(want), _clip(got)
        return Score(
            name="exact",
            value=0.0,
            passed=False,
            reason=f'Expected "{want}" but got "{got}"',
            details={"expected": want, "actual": got},
        )


def _clip(text: str, limit: int = _REASON_EXCERPT) -> str:
    """``text``, or its first ``limit`` characters and its length when longer.

    A failure's reason quotes the output; a 200 MB output must not become a 200 MB reason
    in every cell record.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


# --------------------------------------------------------------------------- contains


class ContainsEvaluator:
    """Scores the fraction of keywords found in the output; passes at ``threshold``.

    Keywords come from the ``keywords`` option, else ``task.expected`` (a list of strings,
    or one string). An empty list scores 1.0 ("No keywords to check"); no keywords at all is
    an error score. A string output is searched as is, anything else as compact JSON, so
    the keyword ``"result"`` matches the object key in ``{"result": ...}``. Matching is
    case-insensitive by default (both sides :meth:`str.lower`-ed); duplicate keywords count
    once each time they are listed.

        >>> import anyio
        >>> from benchkit.model import Response, Task
        >>> score = anyio.run(
        ...     ContainsEvaluator(keywords=["valid", "json"]).evaluate,
        ...     Task("t"),
        ...     Response("invalid input"),
        ... )
        >>> score.value, score.reason
        (0.5, 'Missing keywords: "json" (1/2 matched)')
    """

    def __init__(
        self,
        *,
        keywords: str | Sequence[str] | None = None,
        case_sensitive: bool = False,
        threshold: float = 1.0,
    ) -> None:
        self.keywords = _option_strings("keywords", keywords)
        self.case_sensitive = _option_bool("case_sensitive", case_sensitive)
        self.threshold = _option_threshold(threshold)

    async def evaluate(self, task: Task, response: Response) -> Score:
        keywords = self.keywords if self.keywords is not None else _strings(task.expected)
        if keywords is None:
            return _no_expectation("contains", "keywords", task.expected, "a keyword list")
        if not keywords:
            return Score(
                name="contains",
                value=1.0,
                passed=True,
                reason="No keywords to check",
                details={"matched": [], "missing": []},
            )
        haystack = _text(response.output)
        if not self.case_sensitive:
            haystack = haystack.lower()
        matched: list[str] = []
        missing: list[str] = []
        for keyword in keywords:
            needle = keyword if self.case_sensitive else keyword.lower()
            (matched if needle in haystack else missing).append(keyword)
        score = len(matched) / len(keywords)
        reason = "All keywords found"
        if missing:
            count = f"{len(matched)}/{len(keywords)}"
            reason = f"Missing keywords: {_quoted(missing)} ({count} matched)"
        return Score(
            name="contains",
            value=score,
            passed=score >= self.threshold,
            reason=reason,
            details={"matched": matched, "missing": missing},
        )


# --------------------------------------------------------------------------- regex


class RegexEvaluator:
    """Scores the fraction of regular expressions that match the output.

    Patterns come from the ``patterns`` option (compiled at once: an invalid one is a
    ConfigError, or with ``on_invalid="miss"`` a miss) or ``task.expected`` (a string or a
    list; one that does not compile counts as a miss). A miss of that kind carries its
    compile error in ``details["errors"]``. No patterns scores 0 — the
    opposite of contains, as the original eval-skills scorer. ``flags`` holds letters from
    ``imsx`` (IGNORECASE, MULTILINE, DOTALL, VERBOSE); ``mode`` is ``search`` (anywhere in
    the output) or ``fullmatch`` (the whole output). The output is searched as contains
    searches it: a string as is, anything else as compact JSON.

        >>> import anyio
        >>> from benchkit.model import Response, Task
        >>> evaluator = RegexEvaluator(patterns=[r"\\d+", "^hello"], flags="i")
        >>> score = anyio.run(evaluator.evaluate, Task("t"), Response("Hello 42"))
        >>> score.value, score.reason
        (1.0, 'All regex patterns matched')
    """

    def __init__(
        self,
        *,
        patterns: str | Sequence[str] | None = None,
        flags: str = "",
        threshold: float = 1.0,
        mode: _RegexMode = "search",
        on_invalid: Literal["error", "miss"] = "error",
    ) -> None:
        if not isinstance(flags, str) or not set(flags) <= set(_REGEX_FLAGS):
            raise ConfigError(
                f"option 'flags' must be letters from 'imsx', got {flags!r}",
                fix="e.g. flags: i (ignore case) or flags: ms (multiline, dot matches newline).",
            )
        if mode not in ("search", "fullmatch"):
            raise ConfigError(
                f"option 'mode' must be 'search' or 'fullmatch', got {mode!r}",
                fix="use search to match anywhere, fullmatch to match the whole output.",
            )
        if on_invalid not in ("error", "miss"):
            raise ConfigError(
                f"option 'on_invalid' must be 'error' or 'miss', got {on_invalid!r}",
                fix="use error to reject a bad pattern at once, miss to count it as a miss.",
            )
        self.flags = flags
        self.mode = mode
        self.on_invalid = on_invalid
        self.threshold = _option_threshold(threshold)
        self._flags = 0
        for letter in flags:
            self._flags |= _REGEX_FLAGS[letter]
        sources = _option_strings("patterns", patterns)
        self._option_errors: dict[str, str] = {}
        self._compiled = None if sources is None else self._compile_all(sources)

    def _compile_all(
        self, sources: Sequence[str]
    ) -> tuple[tuple[str, re.Pattern[str] | None], ...]:
        """The option's patterns compiled; a bad one raises, or is a recorded miss."""
        compiled: list[tuple[str, re.Pattern[str] | None]] = []
        for source in sources:
            try:
                compiled.append((source, re.compile(source, self._flags)))
            except re.error as exc:
                if self.on_invalid == "error":
                    raise ConfigError(
                        f"regex pattern {source!r} does not compile: {exc}",
                        fix="patterns use Python's re syntax; escape literal characters with "
                        "a backslash.",
                    ) from exc
                self._option_errors[source] = str(exc)
                compiled.append((source, None))
        return tuple(compiled)

    async def evaluate(self, task: Task, response: Response) -> Score:
        errors: dict[str, str] = {}
        compiled: list[tuple[str, re.Pattern[str] | None]] = []
        if self._compiled is not None:
            compiled = list(self._compiled)
            errors = dict(self._option_errors)
        else:
            sources = _strings(task.expected)
            if sources is None:
                return _no_expectation("regex", "patterns", task.expected, "a pattern list")
            for source in sources:
                try:
                    compiled.append((source, re.compile(source, self._flags)))
                except re.error as exc:
                    errors[source] = str(exc)
                    compiled.append((source, None))
        if not compiled:
            return Score(name="regex", value=0.0, passed=False, reason="No patterns to match")
        haystack = _text(response.output)
        matched: list[str] = []
        missing: list[str] = []
        for source, pattern in compiled:
            hit = pattern is not None and (
                pattern.search(haystack) if self.mode == "search" else pattern.fullmatch(haystack)
            )
            (matched if hit else missing).append(source)
        score = len(matched) / len(compiled)
        reason = "All regex patterns matched"
        if missing:
            reason = f"Matched {len(matched)}/{len(compiled)} patterns"
        return Score(
            name="regex",
            value=score,
            passed=score >= self.threshold,
            reason=reason,
            details={"matched": matched, "missing": missing, "errors": errors},
        )


# --------------------------------------------------------------------------- json_schema


class JsonSchemaEvaluator:
    """Passes (1.0) when the output validates against a JSON Schema, else 0.0.

    The schema is the ``schema`` option (checked at once: an invalid one is a ConfigError)
    or ``task.expected`` (an invalid one gives an error score). A string output is parsed as
    JSON first when ``parse_strings``, so ``"42"`` is valid against ``{"type": "number"}``.
    Every validation error is reported, each with the JSON pointer of the failing value.
    ``format`` keywords are checked (as the original's ajv-formats did) for the formats
    jsonschema can check; unknown keywords are ignored (Ajv's strict mode rejected them).

        >>> import anyio
        >>> from benchkit.model import Response, Task
        >>> evaluator = JsonSchemaEvaluator(schema={"type": "number"})
        >>> anyio.run(evaluator.evaluate, Task("t"), Response("42")).passed
        True
        >>> anyio.run(evaluator.evaluate, Task("t"), Response("x")).reason
        'Output is not valid JSON: x'
    """

    def __init__(
        self,
        *,
        schema: Mapping[str, Any] | None = None,
        parse_strings: bool = True,
        draft: Draft | None = None,
    ) -> None:
        if draft is not None and draft not in DRAFTS:
            raise ConfigError(
                f"option 'draft' must be one of {sorted(DRAFTS)}, got {draft!r}",
                fix="leave it out to follow the schema's $schema (default 2020-12).",
            )
        if schema is not None and not isinstance(schema, Mapping):
            raise ConfigError(
                f"option 'schema' must be a JSON Schema object, got {schema!r}",
                fix='e.g. schema: {"type": "object", "required": ["result"]}',
            )
        self.schema = schema
        self.parse_strings = _option_bool("parse_strings", parse_strings)
        self.draft = draft
        self._validator = None if schema is None else user_validator(schema, draft)

    async def evaluate(self, task: Task, response: Response) -> Score:
        from referencing.exceptions import Unresolvable

        validator = self._validator
        if validator is None:
            if not isinstance(task.expected, Mapping):
                return _no_expectation(
                    "json_schema", "schema", task.expected, "a JSON Schema object"
                )
            try:
                validator = user_validator(task.expected, self.draft)
            except ConfigError as exc:
                return _error("json_schema", exc.message)
        instance = response.output
        if self.parse_strings and isinstance(instance, str):
            try:
                instance = json.loads(instance)
            except ValueError:
                return Score(
                    name="json_schema",
                    value=0.0,
                    passed=False,
                    reason=f"Output is not valid JSON: {instance[:_EXCERPT]}",
                )
        try:
            errors = [
                {"path": json_pointer(error.absolute_path), "message": error.message}
                for error in validator.iter_errors(instance)
            ]
        except Unresolvable as exc:
            return _error("json_schema", f"the schema has a $ref that cannot be resolved: {exc}")
        if errors:
            reason = "Schema validation failed: " + "; ".join(
                f"{e['path']} {e['message']}" for e in errors
            )
        else:
            reason = "Output matches the schema"
        return Score(
            name="json_schema",
            value=0.0 if errors else 1.0,
            passed=not errors,
            reason=reason,
            details={"errors": errors},
        )


# --------------------------------------------------------------------------- numeric


def _option_tolerance(name: str, value: object) -> float:
    number = None if isinstance(value, str) else _number(value)
    if number is None or math.isnan(number) or number < 0:
        raise ConfigError(
            f"option {name!r} must be a number >= 0, got {value!r}",
            fix=f"e.g. {name}: 0.001",
        )
    return number


class NumericEvaluator:
    """Passes (1.0) when the output is a number close to the expected one, else 0.0.

    The expectation is the ``value`` option, else ``task.expected`` (a number or a numeric
    string); with neither the score is an error. An object output is unwrapped as
    :class:`ExactEvaluator` does. The output must be an int, a float or a string that
    :func:`float` reads after stripping whitespace — ``"25%"``, ``"about 25"`` and booleans
    are not numbers. Closeness is :func:`math.isclose` with ``rel_tol`` and ``abs_tol``, on
    floats; a NaN output never passes, and an infinity only matches the same infinity.

        >>> import anyio
        >>> from benchkit.model import Response, Task
        >>> evaluator = NumericEvaluator(value=3.14, abs_tol=0.01, unwrap=["result"])
        >>> anyio.run(evaluator.evaluate, Task("t"), Response({"result": "3.1416"})).passed
        True
    """

    def __init__(
        self,
        *,
        value: float | str | None = None,
        abs_tol: float = 1e-9,
        rel_tol: float = 0.0,
        unwrap: Sequence[str] = _DEFAULT_UNWRAP,
    ) -> None:
        self.value = None if value is None else _number(value)
        if value is not None and (self.value is None or math.isnan(self.value)):
            raise ConfigError(
                f"option 'value' must be a number or a numeric string, got {value!r}",
                fix="e.g. value: 25 or value: '25.0'",
            )
        self.abs_tol = _option_tolerance("abs_tol", abs_tol)
        self.rel_tol = _option_tolerance("rel_tol", rel_tol)
        self.unwrap = _option_strings("unwrap", unwrap) or ()

    async def evaluate(self, task: Task, response: Response) -> Score:
        expected = self.value
        if expected is None:
            expected = _number(task.expected)
            if expected is None or math.isnan(expected):
                return _no_expectation("numeric", "value", task.expected, "a number")
        output = _unwrap(response.output, self.unwrap)
        actual = _number(output)
        if actual is None or math.isnan(actual):
            reason = f"Output is not a number: {_text(output)[:_EXCERPT]}"
            if actual is not None:
                reason = "Output is NaN, which never matches"
            return Score(
                name="numeric",
                value=0.0,
                passed=False,
                reason=reason,
                details={"expected": expected, "actual": None},
            )
        passed = math.isclose(actual, expected, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
        reason = "Within tolerance"
        if not passed:
            reason = (
                f"Expected {expected!r} but got {actual!r} "
                f"(abs_tol={self.abs_tol!r}, rel_tol={self.rel_tol!r})"
            )
        return Score(
            name="numeric",
            value=1.0 if passed else 0.0,
            passed=passed,
            reason=reason,
            details={"expected": expected, "actual": actual},
        )
