"""Anthropic's Messages API, spoken natively by :class:`benchkit.llm.LLMClient` (#44).

The client builds every request in the OpenAI chat shape (what judges, chat providers and
the agent loop write); for an endpoint of the ``anthropic`` protocol this module turns that
request into a Messages API request (``POST {base_url}/messages``, ``x-api-key`` and
``anthropic-version`` headers, ``system`` at the top level, ``max_tokens`` always given,
content blocks, tools with ``input_schema``) and the reply back into the client's terms
(text, tool calls, token counts, a finish reason in OpenAI's words). A JSON-schema
``response_format`` (how judges ask for a verdict) becomes the documented way to get
schema-shaped output: a single tool whose ``input_schema`` is the schema, forced with
``tool_choice: {type: tool}``; the ``tool_use`` block's ``input`` is the reply's text.

A model named ``anthropic:NAME`` (``--model anthropic:claude-sonnet-4-0``, ``--judge
anthropic:...``) selects the protocol wherever a model is named; ``protocol: anthropic``
does the same as an option. docs/llm.md, "Protocols", says what maps to what.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from benchkit.errors import ConfigError, LLMError
from benchkit.llm._prices import Price
from benchkit.model import ToolCall, Usage

__all__ = [
    "ANTHROPIC",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_TOKENS",
    "OPENAI",
    "PROTOCOLS",
    "VERSION",
    "Reply",
    "Settings",
    "error_detail",
    "headers",
    "parse",
    "request",
    "resolve",
    "tokens",
    "url",
]

OPENAI = "openai"
ANTHROPIC = "anthropic"
PROTOCOLS = (OPENAI, ANTHROPIC)
#: The ``anthropic-version`` header sent with every request.
VERSION = "2023-06-01"
#: ``max_tokens`` when the caller gives none (the Messages API requires one).
DEFAULT_MAX_TOKENS = 4096
DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
_PREFIX = ANTHROPIC + ":"
#: 5-minute prompt-cache writes cost 1.25 times the input price (Anthropic's pricing page).
_CACHE_WRITE_PREMIUM = 0.25
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_ROLES = ("system", "user", "assistant", "tool")


@attrs.frozen
class Settings:
    """Where a client of ``protocol`` looks for its settings."""

    protocol: str
    model: str | None
    base_url_env: Sequence[str]
    api_key_env: Sequence[str]
    default_base_url: str | None


def resolve(
    protocol: str | None,
    model: str | None,
    base_url_env: Sequence[str],
    api_key_env: Sequence[str],
) -> Settings:
    """The protocol a client speaks: ``protocol`` if given, else ``anthropic`` for a model
    named ``anthropic:NAME`` (the prefix is dropped), else ``openai``. An Anthropic client
    left with the OpenAI variable names looks in ``ANTHROPIC_BASE_URL`` /
    ``ANTHROPIC_API_KEY`` instead, and defaults to Anthropic's API."""
    if protocol is not None and protocol not in PROTOCOLS:
        raise ConfigError(
            f"protocol {protocol!r} is unknown",
            fix=f"write one of {', '.join(PROTOCOLS)} (docs/llm.md, Protocols).",
        )
    if model is not None and model.startswith(_PREFIX):
        if protocol == OPENAI:
            raise ConfigError(
                f"model {model!r} names the anthropic protocol, and protocol: openai was given",
                fix="drop one of the two.",
            )
        protocol, model = ANTHROPIC, model[len(_PREFIX) :]
    if protocol != ANTHROPIC:
        return Settings(OPENAI, model, base_url_env, api_key_env, None)
    if tuple(base_url_env) == ("OPENAI_BASE_URL",):
        base_url_env = ("ANTHROPIC_BASE_URL",)
    if tuple(api_key_env) == ("OPENAI_API_KEY",):
        api_key_env = ("ANTHROPIC_API_KEY",)
    return Settings(ANTHROPIC, model, base_url_env, api_key_env, DEFAULT_BASE_URL)


def headers(api_key: str | None) -> dict[str, str]:
    """The headers of every request: the key as ``x-api-key``, and the API version."""
    out = {"anthropic-version": VERSION}
    if api_key:
        out["x-api-key"] = api_key
    return out


def url(base_url: str) -> str:
    """Where messages are posted: ``{base_url}/messages``."""
    return base_url.rstrip("/") + "/messages"


def _unsupported(what: str) -> LLMError:
    return LLMError(
        f"the anthropic protocol cannot send {what} (docs/llm.md, Protocols)",
        kind="bad_request",
    )


def _text_blocks(content: Any, role: str) -> str | list[dict[str, Any]]:
    """A message's OpenAI ``content`` as Messages API content (a string stays a string)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if not isinstance(content, Sequence):
        raise _unsupported(f"a {role} message whose content is {type(content).__name__}")
    blocks: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            blocks.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind == "image_url":
            blocks.append(_image(part.get("image_url")))
        else:
            raise _unsupported(f"a content part of type {kind!r}")
    return blocks


def _image(image: Any) -> dict[str, Any]:
    link = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(link, str):
        raise _unsupported("an image_url part without a url")
    if link.startswith("data:"):
        header, _, data = link[5:].partition(",")
        media_type, _, encoding = header.partition(";")
        if encoding != "base64":
            raise _unsupported("a data: image that is not base64")
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": link}}


def _arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as a ``tool_use`` block's ``input`` (an object)."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        with contextlib.suppress(json.JSONDecodeError):
            raw = json.loads(raw) if raw.strip() else {}
    if not isinstance(raw, Mapping):
        raise _unsupported(f"a tool call whose arguments are not a JSON object: {str(raw)[:80]!r}")
    return dict(raw)


def _assistant(message: Mapping[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls") or []
    content = _text_blocks(message.get("content"), "assistant")
    if not calls:
        return {"role": "assistant", "content": content}
    blocks: list[dict[str, Any]] = (
        ([{"type": "text", "text": content}] if content else [])
        if isinstance(content, str)
        else [b for b in content if b.get("text") != ""]
    )
    for call in calls:
        function = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": str(call.get("id")),
                "name": str(function.get("name", "")),
                "input": _arguments(function.get("arguments")),
            }
        )
    return {"role": "assistant", "content": blocks}


def _messages(messages: Sequence[Mapping[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """The system prompt (every system message, joined) and the conversation; the tool
    results that follow an assistant's calls go back as one user message of
    ``tool_result`` blocks."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role not in _ROLES:
            raise _unsupported(f"a message of role {role!r}")
        if role == "system":
            content = _text_blocks(message.get("content"), "system")
            system.append(
                content
                if isinstance(content, str)
                else "".join(str(b.get("text", "")) for b in content)
            )
        elif role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": str(message.get("tool_call_id")),
                "content": _text_blocks(message.get("content"), "tool"),
            }
            last = out[-1] if out else None
            if (
                last is not None
                and last["role"] == "user"
                and isinstance(last["content"], list)
                and all(b.get("type") == "tool_result" for b in last["content"])
            ):
                last["content"].append(result)
            else:
                out.append({"role": "user", "content": [result]})
        elif role == "assistant":
            said = _assistant(message)
            if said["content"] or message is messages[-1]:  # the API refuses an empty turn
                out.append(said)
        else:
            out.append({"role": "user", "content": _text_blocks(message.get("content"), "user")})
    return ("\n\n".join(system) if system else None), out


def _tool(spec: Mapping[str, Any]) -> dict[str, Any]:
    function = spec.get("function") if spec.get("type") == "function" else None
    if not isinstance(function, Mapping):
        raise _unsupported(f"a tool of type {spec.get('type')!r} (only function tools)")
    tool: dict[str, Any] = {
        "name": str(function.get("name", "")),
        "input_schema": dict(function.get("parameters") or {"type": "object", "properties": {}}),
    }
    if function.get("description"):
        tool["description"] = str(function["description"])
    return tool


def _tool_choice(choice: Any) -> dict[str, Any]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        name = (choice.get("function") or {}).get("name")
        if isinstance(name, str):
            return {"type": "tool", "name": name}
    raise _unsupported(f"tool_choice {choice!r}")


def _format_tool(response_format: Mapping[str, Any]) -> dict[str, Any]:
    """A ``json_schema`` response format as the one tool the model must call."""
    spec = response_format.get("json_schema")
    if response_format.get("type") != "json_schema" or not isinstance(spec, Mapping):
        raise _unsupported(f"response_format of type {response_format.get('type')!r}")
    return {
        "name": str(spec.get("name") or "reply"),
        "description": "Reply by calling this tool: its input is the answer.",
        "input_schema": dict(spec.get("schema") or {}),
    }


def request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages API request for a chat request of the OpenAI shape ``body``.

    ``seed`` is dropped (the API has none; it still tells requests apart in the cache);
    other keys the client does not know (``extra``) are passed through as they are.
    """
    system, messages = _messages(body.get("messages") or [])
    out: dict[str, Any] = {
        "model": body["model"],
        "max_tokens": body.get("max_tokens") or DEFAULT_MAX_TOKENS,
        "messages": messages,
    }
    if system is not None:
        out["system"] = system
    known = {"model", "messages", "max_tokens", "seed", "tools", "tool_choice", "response_format"}
    for key, value in body.items():
        if key not in known:
            out[key] = value
    tools = [_tool(t) for t in body.get("tools") or ()]
    response_format = body.get("response_format")
    if response_format is not None:
        if tools:
            raise _unsupported("tools together with a response_format")
        tool = _format_tool(response_format)
        out["tools"] = [tool]
        out["tool_choice"] = {"type": "tool", "name": tool["name"]}
    elif tools:
        out["tools"] = tools
        if body.get("tool_choice") is not None:
            out["tool_choice"] = _tool_choice(body["tool_choice"])
    return out


@attrs.frozen
class Reply:
    """A Messages API reply in the client's terms."""

    text: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    cached_tokens: int
    cache_write_tokens: int
    model: str | None
    finish_reason: str | None

    def cost(self, price: Price) -> float:
        """What the reply cost at ``price``: cache reads at the cached price, cache
        writes at 1.25 times the input price."""
        write = self.cache_write_tokens * price.prompt_per_million * _CACHE_WRITE_PREMIUM
        return price.cost(self.usage, self.cached_tokens) + write / 1_000_000


def _count(usage: Mapping[str, Any], name: str) -> int:
    value = usage.get(name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _shape(f"usage.{name} is not a non-negative integer", usage)
    return value


def _shape(problem: str, payload: Mapping[str, Any]) -> LLMError:
    excerpt = json.dumps(payload, ensure_ascii=False, default=str)
    if len(excerpt) > 200:
        excerpt = excerpt[:200] + "..."
    return LLMError(f"reply {problem}: {excerpt}", kind="invalid_response")


def parse(payload: Mapping[str, Any], sent: Mapping[str, Any]) -> Reply:
    """A Messages API reply (``content`` blocks, ``stop_reason``, ``usage``) as a
    :class:`Reply`; ``sent`` is the request it answers (when it forced the
    response-format tool, that tool's ``input`` is the text)."""
    content = payload.get("content")
    if not isinstance(content, list) or not all(isinstance(b, Mapping) for b in content):
        raise _shape("has no content list", payload)
    raw_usage = payload.get("usage") or {}
    if not isinstance(raw_usage, Mapping):
        raise _shape("usage is not an object", payload)
    read = _count(raw_usage, "cache_read_input_tokens")
    written = _count(raw_usage, "cache_creation_input_tokens")
    usage = Usage(
        _count(raw_usage, "input_tokens") + read + written, _count(raw_usage, "output_tokens")
    )
    response_format = sent.get("response_format")
    forced = _format_tool(response_format)["name"] if response_format is not None else None
    texts = [str(b.get("text", "")) for b in content if b.get("type") == "text"]
    calls = [b for b in content if b.get("type") == "tool_use"]
    text = "".join(texts) if texts else None
    tool_calls: tuple[ToolCall, ...] = ()
    if forced is not None:
        answer = next((b for b in calls if b.get("name") == forced), None)
        if answer is not None:
            text = json.dumps(answer.get("input"), ensure_ascii=False)
    else:
        tool_calls = tuple(
            ToolCall(
                str(b.get("name", "")),
                dict(b["input"])
                if isinstance(b.get("input"), Mapping)
                else {"_value": b.get("input")},
                None if b.get("id") is None else str(b.get("id")),
            )
            for b in calls
        )
    stop = payload.get("stop_reason")
    model = payload.get("model")
    return Reply(
        text=text,
        tool_calls=tool_calls,
        usage=usage,
        cached_tokens=read,
        cache_write_tokens=written,
        model=model if isinstance(model, str) else None,
        finish_reason=_FINISH.get(stop, stop) if isinstance(stop, str) else None,
    )


def tokens(usage: Mapping[str, Any]) -> int | None:
    """The tokens a reply's ``usage`` counts (for the rate limiter), None if it has none."""
    names = (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    )
    values = [usage.get(n) for n in names]
    if not any(isinstance(v, int) for v in values):
        return None
    return sum(v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0)


def error_detail(payload: Any) -> str | None:
    """``TYPE: MESSAGE`` of a Messages API error body (``{type: error, error: {type,
    message}}``), None for any other body."""
    if not isinstance(payload, Mapping) or payload.get("type") != "error":
        return None
    error = payload.get("error")
    if not isinstance(error, Mapping):
        return None
    return f"{error.get('type', 'error')}: {error.get('message', '')}"
