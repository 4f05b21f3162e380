"""What every route shares: JSON responses, API errors, bodies read with a size limit and
validated by JSON Schema, paths kept inside the root, and messages scrubbed of outside
paths."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import jsonschema
from starlette.requests import Request
from starlette.responses import Response

from benchkit._secrets import recent

__all__ = [
    "ApiError",
    "PathError",
    "Scrubber",
    "check_body",
    "json_response",
    "parse_json",
    "read_body",
    "read_json",
    "resolve_inside",
]

#: What a body may weigh, unless the app is told otherwise (1 MiB).
DEFAULT_MAX_BODY = 1024 * 1024
#: How deep a request body's arrays and objects may nest (deeper: 400). No body of
#: benchkit's or the tools' APIs needs more than a few levels; Python's parser and the
#: schema validator recurse, so a body nested 1,000 deep would exhaust the stack.
MAX_JSON_DEPTH = 64
#: How long a request may take to send its body (seconds; then 408).
BODY_TIMEOUT = 60.0
#: Longest path a request may name (bytes), and longest part of one: the system's limits
#: (PATH_MAX 4096, NAME_MAX 255), so a longer one is refused before any system call.
_PATH_MAX, _NAME_MAX = 4095, 255

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(//|\\\\)|^(https?|file|ftp|data):", re.IGNORECASE)
_JSON_TYPES = ("application/json",)


def _finite(value: Any) -> Any:
    """JSON has no NaN or Infinity: such floats become null (and never reach a client)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """Compact JSON (``JSON.stringify`` style), NaN and Infinity as null."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"))


def json_response(value: Any, status: int = 200, *, raw: str | None = None) -> Response:
    """A JSON response; ``raw`` is JSON text sent as it is (already encoded). A configured
    key or a secret environment variable's value in it is redacted (benchkit._secrets):
    the last line of defence, as what answers hold was redacted where it was stored."""
    text = recent().scrub_known(raw if raw is not None else dumps(value))
    return Response(text.encode("utf-8"), status, media_type="application/json")


class ApiError(Exception):
    """An HTTP error with the JSON body the route family answers with."""

    def __init__(
        self, status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ):
        super().__init__(body.get("error", ""))
        self.status = status
        self.body = dict(body)
        self.headers = dict(headers or {})

    @classmethod
    def bk(
        cls, status: int, code: str, message: str, *, field: str | None = None, **details: Any
    ) -> ApiError:
        """benchkit's own error shape: ``{code, error, details}``."""
        if field is not None:
            details = {"field": field, **details}
        return cls(status, {"code": code, "error": message, "details": details})

    def response(self) -> Response:
        response = json_response(self.body, self.status)
        response.headers.update(self.headers)
        return response


class Scrubber:
    """Removes paths outside the root (the store's, the server's) from messages sent to
    clients: they are replaced by ``<store>`` / ``<outside root>``; and secrets, by the
    one redaction (:mod:`benchkit._secrets`)."""

    def __init__(self, root: Path, store: Path) -> None:
        self.root = root
        self.store = store

    def __call__(self, text: str) -> str:
        text = recent().scrub(text.replace(str(self.store), "<store>"))
        root = str(self.root)

        def outside(match: re.Match[str]) -> str:
            found = match.group(0)
            return found if found.startswith(root) else "<outside root>"

        return re.sub(r"(?<![\w.<])/(?:[^\s'\":,()]+/)*[^\s'\":,()]*", outside, text)


def _field(path: Any) -> str:
    return ".".join(str(p) for p in path)


def validate_body(value: Any, schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every problem of ``value`` against ``schema``: ``(field, message)``, best first."""
    validator = jsonschema.Draft202012Validator(schema)
    problems = sorted(validator.iter_errors(value), key=lambda e: (len(e.path), list(e.path)))
    out: list[tuple[str, str]] = []
    for problem in problems:
        field = _field(problem.absolute_path)
        if problem.validator == "required":
            missing = problem.message.split("'")[1] if "'" in problem.message else ""
            field = _field([*problem.absolute_path, missing])
            out.append((field, f"{field} is required"))
        elif problem.validator == "additionalProperties":
            out.append((field or "body", f"{field or 'body'}: {problem.message}"))
        else:
            shown = field or "body"
            out.append((shown, f"{shown}: {_short(problem)}"))
    return out


def _short(problem: jsonschema.ValidationError) -> str:
    kind = problem.validator
    expected: Any = problem.validator_value
    if kind == "type":
        return f"must be of type {expected if isinstance(expected, str) else ' or '.join(expected)}"
    if kind == "minimum":
        return f"must be >= {expected}"
    if kind == "maximum":
        return f"must be <= {expected}"
    if kind == "minLength":
        return "must not be empty" if expected == 1 else f"must have at least {expected} characters"
    if kind == "enum":
        return "must be one of " + ", ".join(json.dumps(v) for v in expected)
    if kind == "minItems":
        return f"must have at least {expected} item(s)"
    return problem.message


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The request body, refused with 413 once it passes ``max_bytes``, and with 408 when
    it takes longer than :data:`BODY_TIMEOUT` to arrive."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(max_bytes)
    chunks: list[bytes] = []
    size = 0
    with anyio.move_on_after(BODY_TIMEOUT) as scope:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise _too_large(max_bytes)
            chunks.append(chunk)
    if scope.cancelled_caught:
        raise ApiError.bk(
            408, "REQUEST_TIMEOUT", f"the request body took longer than {BODY_TIMEOUT:g} s"
        )
    return b"".join(chunks)


class NotText(ValueError):
    """A JSON body holding a string that is not text: a lone UTF-16 surrogate (``"\\ud800"``),
    which no store, file or answer can encode. ``field`` is its dotted path."""

    def __init__(self, field: str) -> None:
        super().__init__(
            f"{field or 'the body'} holds a lone surrogate (an escape such as \\ud800 "
            "without its pair), which is not text"
        )
        self.field = field


#: A ``\uD800``-``\uDFFF`` escape: only a body that has one can hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


def parse_json(raw: bytes) -> Any:
    """``raw`` parsed as JSON, nested at most :data:`MAX_JSON_DEPTH` deep, every string
    valid text. ValueError (with a message for the client; :class:`NotText` naming the
    field) otherwise; never RecursionError."""
    try:
        value = json.loads(raw)
    except RecursionError:
        value = None
        too_deep = True
    else:
        too_deep = _depth_over(value, MAX_JSON_DEPTH)
    if too_deep:
        raise ValueError(f"it nests arrays and objects more than {MAX_JSON_DEPTH} deep")
    if _SURROGATE_ESCAPE.search(raw):
        field = _not_text(value, ())
        if field is not None:
            raise NotText(field)
    return value


def _not_text(value: Any, path: tuple[str, ...]) -> str | None:
    """The dotted path of the first string (or key) in ``value`` that is not valid text."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return ".".join(path)
        return None
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        if isinstance(key, str) and _not_text(key, path) is not None:
            return ".".join((*path, key.encode("utf-8", "backslashreplace").decode()))
        found = _not_text(item, (*path, str(key)))
        if found is not None:
            return found
    return None


def _depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend(
                (child, depth + 1) for child in children if isinstance(child, (dict, list))
            )
    return False


def _too_large(limit: int) -> ApiError:
    return ApiError.bk(413, "BODY_TOO_LARGE", f"the request body is larger than {limit} bytes")


async def read_json(
    request: Request, schema: Mapping[str, Any], *, max_bytes: int, empty_ok: bool = False
) -> Any:
    """The JSON body, validated against ``schema``; 400 naming the first bad field.

    The content type must be ``application/json`` (a state-changing request that a plain
    HTML form could send is refused: 415).
    """
    raw = await read_body(request, max_bytes)
    if not raw.strip() and empty_ok:
        return {}
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in _JSON_TYPES:
        raise ApiError.bk(
            415,
            "UNSUPPORTED_MEDIA_TYPE",
            "the request body must be JSON sent with Content-Type: application/json",
        )
    try:
        value = parse_json(raw)
    except NotText as exc:
        raise ApiError.bk(400, "INVALID_BODY", str(exc), field=exc.field) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError.bk(
            400, "INVALID_JSON", f"the request body is not valid JSON: {exc}"
        ) from None
    check_body(value, schema)
    return value


def check_body(value: Any, schema: Mapping[str, Any]) -> None:
    """400 ``INVALID_BODY`` naming the first field of ``value`` that ``schema`` refuses."""
    problems = validate_body(value, schema)
    if problems:
        field, message = problems[0]
        raise ApiError.bk(400, "INVALID_BODY", message, field=field)


class PathError(Exception):
    """A path from a request that is empty, a URL, or resolves outside the root."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def resolve_inside(root: Path, raw: Any) -> Path:
    """``raw`` (relative to ``root``, or absolute inside it) as a real path inside ``root``.

    Raises :class:`PathError` for a value that is not a non-empty string, a URL, a path
    with a NUL byte, and any path that resolves — after ``..`` and symlinks — outside the
    root. The path need not exist.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise PathError("path must be a non-empty string", "empty")
    text = raw.strip()
    if _URL.match(text):
        raise PathError("path must be a file path, not a URL", "url")
    if "\x00" in text:
        raise PathError("path must not contain NUL bytes", "nul")
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) > _PATH_MAX or any(len(part) > _NAME_MAX for part in encoded.split(b"/")):
        raise PathError(
            f"path is too long (at most {_PATH_MAX} bytes, {_NAME_MAX} per name)", "too_long"
        )
    candidate = Path(text)
    joined = candidate if candidate.is_absolute() else root / candidate
    real = Path(os.path.realpath(joined))
    if real != root and root not in real.parents:
        raise PathError("path resolves outside the server's root", "outside")
    return real
