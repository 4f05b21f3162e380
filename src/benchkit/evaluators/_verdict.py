"""Verdicts in shape: how every LLM judge asks for its verdict and reads the reply.

A judge never fishes "the first number" out of free text (``"The answer is incorrect …
'7 times 6'"`` is not a 7). It asks with a JSON Schema — sent as the request's
``response_format`` (``json_schema``), which an endpoint that can enforce it turns into a
constraint on the reply: the local model's llama.cpp compiles it to a grammar, vLLM and
OpenAI decode against it — and validates the reply against the same schema. Where a reply
still misses its fields, the judge is asked once more, shown its reply and the validator's
complaint; a second miss is a **judge error**: :class:`JudgeFailure`, which
:func:`failure_score` turns into ``Score(value=None, error=...)`` with ``details``
holding ``judge_error`` (its kind, one of :data:`KINDS`) and every reply, kept whole. The
runner files such a cell under the error category ``judge_error``: the judge failed, not the
system, and the cell is left out of the system's pass rate (it counts as unjudged).

A server that refuses ``json_schema`` (HTTP 400 naming it) is asked again without it, and
its client remembers (``LLMClient.json_schema`` becomes False): the schema is then only in
the words of the prompt, and the validator still decides.

Schemas sent to a small model should be bounded — an ``enum`` for a score, ``maxLength``
on a reason, ``maxItems`` on a list — or a grammar lets it write until ``max_tokens`` cuts
the JSON short. :func:`score_schema` builds the usual one.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from benchkit import transcript
from benchkit._jsonschema import make_validator
from benchkit.llm import LLMClient, LLMError
from benchkit.model import Usage
from benchkit.results import JUDGE_ERROR, Score

__all__ = [
    "JUDGE_ERROR",
    "KINDS",
    "JudgeFailure",
    "JudgeReply",
    "ask",
    "bounded",
    "failure_score",
    "parse_verdict",
    "response_format",
    "schema_check",
    "score_schema",
]

#: The kinds of judge error, as ``details["judge_error"]`` names them: the request failed
#: for good; the reply was empty; it held no JSON; its JSON did not match the schema; its
#: JSON matched but the judge's own check refused it (a count of verdicts, say).
KINDS = ("request_failed", "empty_reply", "not_json", "schema_mismatch", "invalid_verdict")

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_EXCERPT = 200


class JudgeFailure(Exception):
    """A judge that gave no usable verdict: its ``kind`` (one of :data:`KINDS`), why, and
    every reply it gave (the retry's too), kept whole for the cell."""

    def __init__(
        self, kind: str, message: str, replies: Sequence[str] = (), usage: Usage | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.replies = tuple(replies)
        self.usage = usage or Usage()


@attrs.frozen
class JudgeReply:
    """A verdict in shape: the reply's JSON (``data``, valid against the schema), its
    text, every reply asked for (two when the first was retried) and their usage."""

    data: Any
    text: str
    replies: tuple[str, ...]
    usage: Usage

    @property
    def retried(self) -> bool:
        return len(self.replies) > 1


def excerpt(text: str | None, limit: int = _EXCERPT) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def text_schema(chars: int) -> dict[str, Any]:
    """A string of at most ``chars`` characters with no quote, backslash or control
    character: what a grammar can hold a small model to (llama-cpp-python's own string
    rule lets it write raw line breaks, and a model that starts writing code in a string
    then runs until ``max_tokens`` cuts the JSON short).

        >>> import re
        >>> pattern = text_schema(9)["pattern"]
        >>> bool(re.match(pattern, "fine text")), bool(re.match(pattern, "two\\nlines"))
        (True, False)
    """
    return {"type": "string", "maxLength": chars, "pattern": f'^[^"\\\\\\x00-\\x1f]{{0,{chars}}}$'}


def score_schema(
    low: float = 0,
    high: float = 10,
    *,
    field: str = "score",
    grid: bool = True,
    reason: int | None = 200,
) -> dict[str, Any]:
    """``{"score": ..., "reason": ...}``, every field required, no other.

    With ``grid`` the score is an ``enum`` a grammar can enforce (a grammar cannot bound a
    plain number): the integers from ``low`` to ``high`` when both are integers (3 to 101
    of them), else eleven evenly spaced values (``[0, 1]``: tenths). Without, a number with ``minimum`` /
    ``maximum``: what a validator accepts from an endpoint that enforces nothing. The
    ``reason`` has at most ``reason`` characters (None: no reason).

        >>> score_schema(0, 2)["properties"]["score"]
        {'type': 'integer', 'enum': [0, 1, 2]}
        >>> score_schema(0, 1)["properties"]["score"]["enum"][:3]
        [0.0, 0.1, 0.2]
        >>> score_schema(0, 1, grid=False, reason=None)["properties"]
        {'score': {'type': 'number', 'minimum': 0, 'maximum': 1}}
    """
    if not grid:
        score: dict[str, Any] = {"type": "number", "minimum": low, "maximum": high}
    elif float(low).is_integer() and float(high).is_integer() and 2 <= high - low <= 100:
        score = {"type": "integer", "enum": list(range(int(low), int(high) + 1))}
    else:
        step = (high - low) / 10
        score = {"type": "number", "enum": [round(low + i * step, 6) for i in range(11)]}
    properties: dict[str, Any] = {field: score}
    if reason is not None:
        properties["reason"] = text_schema(reason)
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def bounded(schema: Mapping[str, Any], *, items: int = 8, chars: int = 160) -> dict[str, Any]:
    """``schema`` with the bounds a grammar needs to end within a small model's reply
    budget: every array without ``maxItems`` gets ``items``, every free string is a
    :func:`text_schema` of ``chars``, and an integer with both
    ``minimum`` and ``maximum`` (at most 101 values) becomes their ``enum``. A
    ``$schema`` key is dropped (it is no constraint). What goes out as the response
    format; the reply is still validated against the unbounded ``schema``.

        >>> bounded({"type": "array", "items": {"type": "string"}}, items=3, chars=9)["maxItems"]
        3
    """

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, Mapping):
            return node
        out = {k: walk(v) for k, v in node.items() if k != "$schema"}
        kind = out.get("type")
        if kind == "array":
            out.setdefault("maxItems", items)
        elif kind == "string" and not {"enum", "const", "pattern"} & out.keys():
            out.update(text_schema(min(chars, out.get("maxLength", chars))))
        elif kind == "integer" and "enum" not in out:
            low, high = out.get("minimum"), out.get("maximum")
            if isinstance(low, int) and isinstance(high, int) and 0 <= high - low <= 100:
                out = {k: v for k, v in out.items() if k not in ("minimum", "maximum")}
                out["enum"] = list(range(low, high + 1))
        return out

    result: dict[str, Any] = walk(schema)
    return result


def response_format(schema: Mapping[str, Any], name: str = "verdict") -> dict[str, Any]:
    """OpenAI's ``json_schema`` response format for ``schema`` (the local client says it
    in llama.cpp's words itself)."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema)}}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(text: str) -> Any:
    # strict=False: a raw line break inside a string is read as one. llama-cpp-python's
    # grammar for a JSON string lets the model write one, so a constrained reply has them.
    return json.loads(text, strict=False, parse_constant=_reject_constant)


def _json_in(text: str) -> Any:
    """The JSON in a reply: a fenced block, the whole text, or its outermost ``{...}``."""
    fenced = _FENCE.search(text)
    body = fenced.group(1).strip() if fenced else text.strip()
    try:
        return _loads(body)
    except ValueError:
        start, end = body.find("{"), body.rfind("}")
        if start == -1 or end <= start:
            raise
        return _loads(body[start : end + 1])


def parse_verdict(
    text: str,
    validate: Callable[[Any], str | None],
    *,
    check: Callable[[Any], str | None] | None = None,
    bare: Callable[[str], Any] | None = None,
    prepare: Callable[[Any], Any] | None = None,
) -> tuple[Any, str | None, str | None]:
    """``(data, None, None)`` for a reply in shape, else ``(None, kind, why)``.

    ``validate`` returns None for data that matches the schema, else what is wrong
    (``schema_mismatch``); ``check`` the same for valid data the judge still cannot use
    (``invalid_verdict``). ``bare`` reads a reply that is not JSON but is the whole verdict
    in a word (``"7"``, ``"A"``) into the data it stands for (None when it is not): the
    originals' prompts ask for one, and an endpoint that ignores ``response_format`` may
    answer so. ``prepare`` tidies the data before it is validated (``"Yes "`` → ``"yes"``).
    """
    if not text.strip():
        return None, "empty_reply", "the reply is empty"
    try:
        data = _json_in(text)
    except ValueError:
        data = None
    if not isinstance(data, (dict, list)) and bare is not None:
        data = bare(text) or data  # "7" is JSON too, but a bare verdict
    if data is None:
        return None, "not_json", "the reply is not JSON"
    if prepare is not None:
        data = prepare(data)
    problem = validate(data)
    if problem is not None:
        return None, "schema_mismatch", problem
    problem = check(data) if check is not None else None
    if problem is not None:
        return None, "invalid_verdict", problem
    return data, None, None


def schema_check(schema: Mapping[str, Any]) -> Callable[[Any], str | None]:
    """A ``validate`` for :func:`parse_verdict`: None when ``data`` matches ``schema``, else
    the first error in plain words with its JSON path."""
    validator = make_validator(dict(schema))

    def check(data: Any) -> str | None:
        from jsonschema.exceptions import best_match

        error = best_match(validator.iter_errors(data))
        if error is None:
            return None
        where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        return f"it does not match the schema at ${where}: {error.message}"

    return check


async def ask(
    client: LLMClient,
    messages: Sequence[Mapping[str, Any]],
    schema: Mapping[str, Any],
    *,
    name: str,
    format_name: str = "verdict",
    send_schema: Mapping[str, Any] | None = None,
    check: Callable[[Any], str | None] | None = None,
    bare: Callable[[str], Any] | None = None,
    prepare: Callable[[Any], Any] | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    seed: int | None = None,
) -> JudgeReply:
    """Ask ``client`` for a verdict matching ``schema``; retry once with the complaint.

    ``send_schema`` is what goes out as the response format when it differs from the
    validating ``schema`` (a tighter one a grammar can enforce, e.g. an enum of tenths for a
    number in [0, 1]). ``check`` refuses valid JSON the judge cannot use (a wrong count of
    verdicts), saying why; ``bare`` and ``prepare`` as in :func:`parse_verdict`. ``name`` labels the
    judge's transcript entries, ``format_name`` the response format. Raises
    :class:`JudgeFailure`.
    """
    validate = schema_check(schema)
    sent = dict(send_schema if send_schema is not None else schema)
    history = list(messages)
    replies: list[str] = []
    spent = Usage()
    kind = why = ""
    for attempt in range(2):
        text, usage = await _chat(
            client, history, sent, name=name, format_name=format_name, temperature=temperature,
            max_tokens=max_tokens, seed=seed, replies=replies, spent=spent,
        )  # fmt: skip
        spent = spent + usage
        replies.append(text)
        data, failed, problem = parse_verdict(
            text, validate, check=check, bare=bare, prepare=prepare
        )
        if failed is None:
            return JudgeReply(data, text, tuple(replies), spent)
        kind, why = failed, problem or failed
        if attempt == 0:
            history += [
                {"role": "assistant", "content": text},
                {
                    "role": "user",
                    "content": f"That reply cannot be used: {why}. Answer again with only a "
                    "JSON object that matches this JSON Schema, and nothing else: "
                    + json.dumps(sent, ensure_ascii=False),
                },
            ]
    raise JudgeFailure(
        kind,
        f'judge reply could not be used ({why}; asked twice): "{excerpt(replies[-1])}"',
        replies,
        spent,
    )


async def _chat(
    client: LLMClient,
    messages: Sequence[Mapping[str, Any]],
    schema: Mapping[str, Any],
    *,
    name: str,
    format_name: str,
    temperature: float,
    max_tokens: int | None,
    seed: int | None,
    replies: Sequence[str],
    spent: Usage,
) -> tuple[str, Usage]:
    """One request: with the schema as ``response_format`` unless the endpoint refused one
    before; a refusal now (HTTP 400) is remembered and the request sent again without."""
    structured = client.json_schema
    for _ in range(2):
        try:
            with transcript.judging(name):
                result = await client.chat(
                    messages,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=seed,
                    response_format=response_format(schema, format_name) if structured else None,
                )
        except LLMError as exc:
            refused = "response_format" in exc.message or "json_schema" in exc.message
            if structured and exc.kind == "bad_request" and refused:
                client.json_schema = structured = False
                continue
            raise JudgeFailure(
                "request_failed", f"judge request failed: {exc}", replies, spent
            ) from None
        return result.text or "", result.usage
    raise AssertionError("unreachable")  # pragma: no cover


def failure_score(name: str, failure: JudgeFailure, **details: Any) -> Score:
    """The Score of a judge that gave no verdict: ``value=None``, the error, and in
    ``details`` the kind (``judge_error``), every reply and the usage — what the runner
    files as a ``judge_error`` cell."""
    usage = failure.usage
    spent: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
    }
    if usage.cost_usd is not None:
        spent["cost_usd"] = usage.cost_usd
    return Score(
        name,
        None,
        False,
        details={
            **details,
            JUDGE_ERROR: failure.kind,
            "replies": list(failure.replies),
            "usage": spent,
        },
        error=failure.message,
    )
