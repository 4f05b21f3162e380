"""JSON Schema tooling: the shipped schemas, fast validators, and errors in plain words.

Every loader and evaluator that checks data against a JSON Schema uses this module:

* :func:`load_schema` — a schema shipped as ``benchkit/schemas/<name>.schema.json``;
* :func:`make_validator` — a Draft 2020-12 validator, with a compiled fast path for valid
  instances of simple schemas (:func:`inline_refs` makes more schemas simple);
* :func:`validate` — raise a :class:`~benchkit.errors.FormatError` located at the most
  relevant violation (file, line, column, JSON path) with a concrete fix;
* :func:`user_validator` — a validator for a schema a user wrote (any draft, format
  checks), and :func:`json_pointer` to name a failing value in its errors;
* :func:`describe` — one violation as (message, path, fix, point-at-key), for callers that
  collect several; :func:`did_you_mean` for misspelt keys; :func:`render_path` for
  ``$.tasks[3].type`` paths.

``jsonschema`` is imported on first use, keeping ``import benchkit`` fast.

    >>> render_path(("tasks", 3, "type"))
    '$.tasks[3].type'
    >>> validator = make_validator({"type": "object", "required": ["id"]})
    >>> [e.message for e in validator.iter_errors({})]
    ["'id' is a required property"]
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import numbers
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from importlib import resources
from typing import Any, Literal, Protocol

from benchkit.errors import ConfigError, FormatError

__all__ = [
    "DRAFTS",
    "Draft",
    "JsonPath",
    "Located",
    "SchemaValidator",
    "describe",
    "did_you_mean",
    "inline_refs",
    "json_pointer",
    "load_schema",
    "make_validator",
    "render_path",
    "user_validator",
    "validate",
]

JsonPath = tuple[str | int, ...]
"""A JSON path: mapping keys (``str``) and list indexes (``int``)."""

Draft = Literal["draft7", "2019-09", "2020-12"]
"""The JSON Schema versions a user's schema may name (``draft`` options)."""

_DRAFT_VALIDATORS = {
    "draft7": "Draft7Validator",
    "2019-09": "Draft201909Validator",
    "2020-12": "Draft202012Validator",
}
DRAFTS: tuple[str, ...] = tuple(_DRAFT_VALIDATORS)
"""The values a ``draft`` option accepts."""

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


class SchemaValidator(Protocol):
    """What :func:`validate` needs of a jsonschema validator (``iter_errors``)."""

    def iter_errors(self, instance: Any) -> Iterator[Any]: ...


def render_path(path: Iterable[str | int]) -> str:
    """``("tasks", 3, "type")`` → ``$.tasks[3].type``; odd keys are quoted: ``$["a b"]``."""
    out = ["$"]
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENT.match(part):
            out.append(f".{part}")
        else:
            out.append(f"[{json.dumps(part, ensure_ascii=False)}]")
    return "".join(out)


class Located(Protocol):
    """A parsed document that can point at one of its nodes
    (:class:`benchkit.formats._source.Document` is one)."""

    @property
    def data(self) -> Any: ...

    def error(
        self, message: str, path: JsonPath = (), *, fix: str | None = None, key: bool = False
    ) -> FormatError: ...


def load_schema(name: str) -> dict[str, Any]:
    """The JSON Schema shipped as ``benchkit/schemas/<name>.schema.json``."""
    resource = resources.files("benchkit").joinpath(f"schemas/{name}.schema.json")
    schema: dict[str, Any] = json.loads(resource.read_text(encoding="utf-8"))
    return schema


def inline_refs(schema: Mapping[str, Any], *, root: Mapping[str, Any] | None = None) -> Any:
    """``schema`` with every local ``{"$ref": "#/$defs/name"}`` replaced by its target.

    Validation then skips reference lookups — several times faster for a small schema
    applied to many instances (one JSONL line each). ``root`` holds the ``$defs`` (default:
    ``schema`` itself). Recursive definitions cannot be inlined: ValueError.
    """
    defs: Mapping[str, Any] = (root if root is not None else schema).get("$defs", {})

    def walk(node: Any, active: tuple[str, ...]) -> Any:
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and len(node) == 1:
                name = ref[len("#/$defs/") :]
                if name in active:
                    raise ValueError(f"recursive schema definition {name!r}")
                return walk(defs[name], (*active, name))
            return {k: walk(v, active) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v, active) for v in node]
        return node

    return walk(schema, ())


def make_validator(schema: Mapping[str, Any]) -> SchemaValidator:
    """A Draft 2020-12 validator for ``schema`` (checked first: a bad schema is a bug).

    When ``schema`` keeps to a simple subset of keywords (see :func:`_quick_check`), valid
    instances are recognised by a compiled Python predicate and only invalid ones go
    through jsonschema, which explains what is wrong — the same verdicts, several times
    faster on a stream of small documents such as JSONL tasks.
    """
    cls = _finite_validator()
    cls.check_schema(schema)
    return _Validator(cls(schema), _quick_check(schema))


@functools.cache
def _finite_validator() -> Any:
    """Draft 2020-12 where ``number`` and ``integer`` are finite: NaN and the infinities
    (``.nan``, ``.inf`` in YAML, ``1e999`` in JSON) satisfy no bound, so benchkit's own
    schemas refuse them as numbers instead of letting them through every ``maximum``."""
    from jsonschema import Draft202012Validator, validators

    base = Draft202012Validator.TYPE_CHECKER
    checker = base.redefine_many(
        {
            "number": lambda _checker, v: _is_number(v),
            "integer": lambda _checker, v: _TYPE_TESTS["integer"](v),
        }
    )
    return validators.extend(Draft202012Validator, type_checker=checker)  # type: ignore[no-untyped-call]


class _Validator:
    __slots__ = ("_inner", "_quick")

    def __init__(self, inner: Any, quick: Callable[[Any], bool] | None) -> None:
        self._inner = inner
        self._quick = quick

    def iter_errors(self, instance: Any) -> Iterator[Any]:
        if self._quick is not None and self._quick(instance):
            return iter(())
        errors: Iterator[Any] = self._inner.iter_errors(instance)
        return errors


#: Keywords that never change a verdict; ``x-expected`` says in words what a ``pattern``
#: accepts, for the error message (see :func:`describe`).
_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "default", "x-expected"}
)


def _is_number(value: Any) -> bool:
    """A JSON number: not a bool, and (a float) finite."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and math.isfinite(v) and v.is_integer())
    ),
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}

_BOUNDS: dict[str, Callable[[Any, Any], bool]] = {
    "minimum": operator.ge,
    "exclusiveMinimum": operator.gt,
    "maximum": operator.le,
    "exclusiveMaximum": operator.lt,
}


def _quick_check(schema: Any) -> Callable[[Any], bool] | None:
    """A predicate true exactly when ``schema`` accepts an instance, for the keyword
    subset benchkit's own schemas use (type, enum/const of strings, bounds, pattern,
    minLength, minItems, required, properties, additionalProperties, items); None for any other
    keyword, leaving validation to jsonschema alone. A property test checks the two agree.
    """
    if isinstance(schema, bool):
        return lambda _: schema
    if not isinstance(schema, Mapping):
        return None
    checks: list[Callable[[Any], bool]] = []
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        check = _quick_keyword(schema, key, value)
        if check is None:
            return None
        checks.append(check)
    return lambda v: all(check(v) for check in checks)


def _quick_keyword(schema: Mapping[str, Any], key: str, value: Any) -> Callable[[Any], bool] | None:
    if key == "type":
        names = [value] if isinstance(value, str) else list(value)
        if not all(n in _TYPE_TESTS for n in names):
            return None
        tests = [_TYPE_TESTS[n] for n in names]
        return lambda v: any(t(v) for t in tests)
    if key in ("enum", "const"):
        values = list(value) if key == "enum" else [value]
        if not all(isinstance(x, str) for x in values):
            return None  # jsonschema's equality keeps 1, 1.0 and true apart
        allowed = frozenset(values)
        return lambda v: isinstance(v, str) and v in allowed
    if key in _BOUNDS and _is_number(value):
        compare = _BOUNDS[key]
        return lambda v: not _is_number(v) or compare(v, value)
    if key == "pattern" and isinstance(value, str):
        compiled = re.compile(value)  # as jsonschema: re.search, strings only
        return lambda v: not isinstance(v, str) or compiled.search(v) is not None
    if key == "minLength" and isinstance(value, int):
        return lambda v: not isinstance(v, str) or len(v) >= value
    if key == "minItems" and isinstance(value, int):
        return lambda v: not isinstance(v, list) or len(v) >= value
    if key == "required":
        required = list(value)
        return lambda v: not isinstance(v, dict) or all(k in v for k in required)
    if key == "properties":
        subs = {name: _quick_check(sub) for name, sub in value.items()}
        if any(f is None for f in subs.values()):
            return None
        props: dict[str, Callable[[Any], bool]] = subs  # type: ignore[assignment]
        return lambda v: not isinstance(v, dict) or all(f(v[k]) for k, f in props.items() if k in v)
    if key == "additionalProperties" and "patternProperties" not in schema:
        known = frozenset(schema.get("properties", {}))
        extra = _quick_check(value)
        if extra is None:
            return None
        return lambda v: (
            not isinstance(v, dict) or all(extra(item) for k, item in v.items() if k not in known)
        )
    if key == "items" and "prefixItems" not in schema:
        item_check = _quick_check(value)
        if item_check is None:
            return None
        return lambda v: not isinstance(v, list) or all(item_check(x) for x in v)
    return None


def validate(
    document: Located,
    schema: Mapping[str, Any] | SchemaValidator,
    *,
    fix_hint: str | None = None,
) -> None:
    """Raise :class:`FormatError` for the most relevant way ``document`` breaks ``schema``.

    The error carries the file, line and column of the offending node (of its nearest
    existing ancestor when a key is missing), the JSON path, a plain-words message and a
    fix; ``fix_hint`` (e.g. "see docs/formats/native.md") is appended to every fix.
    """
    from jsonschema.exceptions import best_match

    validator = make_validator(schema) if isinstance(schema, Mapping) else schema
    error = best_match(validator.iter_errors(document.data))
    if error is None:
        return
    message, path, fix, key = describe(error)
    if fix_hint:
        fix = f"{fix}; {fix_hint}" if fix else fix_hint
    raise document.error(message, path, fix=fix, key=key)


_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true/false)",
    "null": "null",
}


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "a mapping" if isinstance(value, dict) else type(value).__name__


def _show(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _either(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The closest of ``choices`` to a misspelt ``word``, if any is close enough."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def describe(error: Any) -> tuple[str, JsonPath, str | None, bool]:
    """(message, path, fix, point-at-key) for one jsonschema ValidationError."""
    path: JsonPath = tuple(error.absolute_path)
    kind = error.validator
    value = error.validator_value
    instance = error.instance

    if kind == "required":
        missing = [k for k in value if k not in instance] or list(value)
        return f"missing required key `{missing[0]}`", path, f"add the `{missing[0]}` key", False
    if kind == "additionalProperties" and value is False:
        allowed = list(error.schema.get("properties", {}))
        patterns = list(error.schema.get("patternProperties", {}))
        extras = [
            k for k in instance if k not in allowed and not any(re.search(p, k) for p in patterns)
        ]
        extra = extras[0] if extras else "?"
        close = did_you_mean(extra, allowed)
        fix = f"remove `{extra}`" + (
            f" (did you mean `{close}`?)" if close else f"; allowed keys: {', '.join(allowed)}"
        )
        return f"unknown key `{extra}`", (*path, extra), fix, True
    if kind in ("oneOf", "anyOf"):
        context = list(error.context or ())
        if context and all(e.validator == "required" for e in context):
            keys = [f"`{k}`" for e in context for k in e.validator_value]
            return (
                f"needs one of the keys {', '.join(keys)}",
                path,
                f"add {_either(keys)}",
                False,
            )
        if context:
            from jsonschema.exceptions import best_match

            return describe(best_match(context))
        return "matches more than one of the allowed shapes", path, None, False
    if kind == "type":
        names = [value] if isinstance(value, str) else list(value)
        if isinstance(instance, float) and not math.isfinite(instance):
            shown = "NaN" if instance != instance else "-Infinity" if instance < 0 else "Infinity"
            return (
                f"expected a finite number, got {shown}",
                path,
                "write a finite number (a bound's limits are listed in docs/limits.md)",
                False,
            )
        wanted = _either([_TYPE_NAMES.get(n, n) for n in names])
        shown = f" ({_show(instance)})" if not isinstance(instance, (dict, list)) else ""
        return f"expected {wanted}, got {_type_of(instance)}{shown}", path, f"use {wanted}", False
    if kind == "enum":
        options = ", ".join(str(v) for v in value)
        return f"{_show(instance)} is not one of: {options}", path, f"use one of: {options}", False
    if kind == "const":
        return (
            f"expected {_show(value)}, got {_show(instance)}",
            path,
            f"set it to {_show(value)}",
            False,
        )
    bounds = {
        "minimum": ">=",
        "exclusiveMinimum": ">",
        "maximum": "<=",
        "exclusiveMaximum": "<",
    }
    if kind in bounds:
        rule = f"{bounds[kind]} {value}"
        limit = " (docs/limits.md lists benchkit's bounds)" if "aximum" in kind else ""
        return (
            f"{_show(instance)} is out of range (must be {rule})",
            path,
            f"use a number {rule}{limit}",
            False,
        )
    if kind == "minItems":
        if value == 1:
            return "must not be empty", path, "add at least one item", False
        return f"needs at least {value} items", path, f"add items until there are {value}", False
    if kind == "minLength":
        return "must not be an empty string", path, "use a non-empty string", False
    if kind == "uniqueItems":
        return "has duplicate items", path, "remove the repeated items", False
    if kind == "pattern":
        # A schema may say in words what its pattern accepts (``x-expected``): a long
        # pattern (semver's) helps nobody as a message.
        expected = error.schema.get("x-expected")
        if isinstance(expected, str):
            return f"{_show(instance)} is not {expected}", path, f"use {expected}", False
        return (
            f"{_show(instance)} does not match the pattern {value}",
            path,
            f"use a value matching {value}",
            False,
        )
    return str(error.message), path, None, False


# --------------------------------------------------------------------------- user schemas


def json_pointer(path: Sequence[object]) -> str:
    """A JSON pointer (RFC 6901) for a jsonschema error path; ``"/"`` for the root."""
    parts = (str(p).replace("~", "~0").replace("/", "~1") for p in path)
    return "".join(f"/{p}" for p in parts) or "/"


def user_validator(schema: Mapping[str, Any], draft: Draft | None = None) -> Any:
    """A jsonschema validator (with format checks) for a schema a user wrote (an evaluator's
    option, a task's expected value); ConfigError if it is invalid.

    ``draft`` names the JSON Schema version; without it the schema's ``$schema`` decides,
    defaulting to 2020-12. jsonschema is imported here so ``import benchkit`` stays fast.
    """
    import jsonschema

    if draft is None:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    else:
        cls = getattr(jsonschema, _DRAFT_VALIDATORS[draft])
    try:
        cls.check_schema(dict(schema))
    except jsonschema.SchemaError as exc:
        raise ConfigError(
            f"invalid JSON Schema at {json_pointer(exc.absolute_path)}: {exc.message}",
            fix="check the schema against the JSON Schema specification of its draft.",
        ) from exc
    return cls(schema, format_checker=cls.FORMAT_CHECKER)
