"""Log-likelihood requests: how likely a model finds a continuation of a context.

Published multiple-choice benchmarks (PIQA, HellaSwag, ARC, MMLU as lm-evaluation-harness
runs them) do not ask a model to write an answer: they ask it for log P(choice | prompt)
of every choice and take the most likely. This module holds what every way of answering
that shares:

* :class:`LoglikelihoodRequest` — log P(``continuation`` | ``context``); an empty
  context asks for the log-probability of the continuation as a whole text (the
  model's beginning-of-text token as its only context: perplexity);
* :class:`Loglikelihood` — the answer: the summed log-probability and how many tokens
  the continuation took;
* :func:`boundary` and :func:`encode_pair` — the published tokenisation convention at the
  context/continuation boundary (lm-evaluation-harness's): whitespace at the end of the
  context moves to the start of the continuation, the pair is tokenised whole and the
  continuation is what follows the context's own tokens;
* :func:`echoed_logprob` — the answer read from an OpenAI-compatible ``/completions``
  reply with ``echo`` and ``logprobs`` (the legacy ``text_offset`` / ``token_logprobs``
  shape and llama.cpp server's ``logprobs.content`` shape);
* :class:`ChoiceQuestion` — a task input that asks for the log-likelihood of each of
  several choices (``{"kind": "loglikelihood", "context": ..., "choices": [...]}``),
  which the ``chat`` and ``local`` providers answer (docs/datasets.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from benchkit.errors import LLMError

__all__ = [
    "LOGLIKELIHOOD",
    "ChoiceQuestion",
    "Loglikelihood",
    "LoglikelihoodRequest",
    "boundary",
    "echoed_logprob",
    "encode_pair",
]

LOGLIKELIHOOD = "loglikelihood"
"""The ``kind`` of a task input that asks for log-likelihoods instead of a reply."""


def boundary(context: str, continuation: str) -> tuple[str, str]:
    """The pair as it is tokenised: trailing whitespace of ``context`` moved to the start
    of ``continuation`` (lm-evaluation-harness's convention; a BPE tokenizer joins a space
    to the word after it, so ``"Answer: "`` + ``"yes"`` is scored as ``"Answer:"`` +
    ``" yes"``).

        >>> boundary("Answer: ", "yes")
        ('Answer:', ' yes')
        >>> boundary("Question: q\\nAnswer:", " yes")
        ('Question: q\\nAnswer:', ' yes')
    """
    spaces = len(context) - len(context.rstrip())
    if spaces:
        return context[:-spaces], context[-spaces:] + continuation
    return context, continuation


def encode_pair(
    tokenize: Callable[[str], list[int]], context: str, continuation: str, prefix: int
) -> tuple[list[int], list[int]]:
    """The context's and the continuation's tokens, as lm-evaluation-harness makes them.

    After :func:`boundary`, ``context + continuation`` is tokenised whole and the
    continuation is whatever follows as many tokens as the context alone takes (so a
    merge across the boundary never drops a character of the continuation). An empty
    context is ``[prefix]`` (the beginning-of-text token) and the continuation is
    tokenised alone. Raises ValueError when the continuation takes no token.
    """
    context, continuation = boundary(context, continuation)
    if not context:
        context_tokens, continuation_tokens = [prefix], tokenize(continuation)
    else:
        whole = tokenize(context + continuation)
        context_tokens = tokenize(context)
        continuation_tokens = whole[len(context_tokens) :]
        context_tokens = whole[: len(context_tokens)]
    if not continuation_tokens:
        raise ValueError(f"the continuation {continuation!r} takes no token")
    return context_tokens, continuation_tokens


@attrs.frozen
class LoglikelihoodRequest:
    """Ask for log P(``continuation`` | ``context``). An empty ``context`` asks for the
    log-probability of ``continuation`` as a whole text.

    .. versionadded:: 0.2.0
    """

    context: str
    continuation: str


@attrs.frozen
class Loglikelihood:
    """The answer to a :class:`LoglikelihoodRequest`: ``logprob`` (natural log, summed
    over the continuation's tokens, <= 0) and ``tokens``, how many tokens it took.

    .. versionadded:: 0.2.0
    """

    logprob: float
    tokens: int

    def to_json(self) -> dict[str, Any]:
        return {"logprob": self.logprob, "tokens": self.tokens}

    @classmethod
    def from_json(cls, data: Any) -> Loglikelihood:
        """From :meth:`to_json`'s shape (a cached answer); ValueError for anything else."""
        if not isinstance(data, Mapping):
            raise ValueError("not an object")
        logprob, tokens = data.get("logprob"), data.get("tokens")
        if isinstance(logprob, bool) or not isinstance(logprob, (int, float)):
            raise ValueError("logprob is not a number")
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
            raise ValueError("tokens is not a positive integer")
        if not math.isfinite(logprob) or logprob > 0:
            raise ValueError("logprob is not a finite number <= 0")
        return cls(float(logprob), tokens)


# --------------------------------------------------------------------------- task inputs


def _strings(value: Sequence[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class ChoiceQuestion:
    """A task input asking for the log-likelihood of each choice after a context.

    The continuation of choice ``c`` is ``delimiter + c`` (lm-evaluation-harness's
    ``target_delimiter``, a space by default). ``unconditional`` also asks for each
    continuation without the context (for ``acc_mutual_info``). As JSON (a task's
    ``input``)::

        {"kind": "loglikelihood", "context": "Question: ...\\nAnswer:",
         "choices": ["first", "second"], "delimiter": " ", "unconditional": false}

    .. versionadded:: 0.2.0
    """

    context: str
    choices: tuple[str, ...] = attrs.field(converter=_strings)
    delimiter: str = " "
    unconditional: bool = False

    @property
    def continuations(self) -> list[str]:
        return [self.delimiter + choice for choice in self.choices]

    def requests(self) -> list[LoglikelihoodRequest]:
        """Every request the question makes: one per choice, then (when
        ``unconditional``) one per choice with an empty context."""
        found = [LoglikelihoodRequest(self.context, c) for c in self.continuations]
        if self.unconditional:
            found += [LoglikelihoodRequest("", c) for c in self.continuations]
        return found

    def to_input(self) -> dict[str, Any]:
        """The task input that asks this question."""
        data: dict[str, Any] = {
            "kind": LOGLIKELIHOOD,
            "context": self.context,
            "choices": list(self.choices),
        }
        if self.delimiter != " ":
            data["delimiter"] = self.delimiter
        if self.unconditional:
            data["unconditional"] = True
        return data

    def output(self, answers: Sequence[Loglikelihood]) -> dict[str, Any]:
        """The provider's output for the answers to :meth:`requests`: ``logprobs`` and
        ``tokens`` per choice (and ``unconditional`` log-probabilities when asked)."""
        n = len(self.choices)
        data: dict[str, Any] = {
            "logprobs": [a.logprob for a in answers[:n]],
            "tokens": [a.tokens for a in answers[:n]],
        }
        if self.unconditional:
            data["unconditional"] = [a.logprob for a in answers[n:]]
        return data

    @classmethod
    def of(cls, value: Any) -> ChoiceQuestion | None:
        """The question a task input asks, or None when it asks for a reply (it is not a
        mapping with ``kind: loglikelihood``). A malformed question is a ValueError."""
        if not isinstance(value, Mapping) or value.get("kind") != LOGLIKELIHOOD:
            return None
        context, choices = value.get("context", ""), value.get("choices")
        delimiter, unconditional = value.get("delimiter", " "), value.get("unconditional", False)
        if not isinstance(context, str):
            raise ValueError("input.context is not a string")
        if (
            not isinstance(choices, Sequence)
            or isinstance(choices, str)
            or not choices
            or not all(isinstance(c, str) for c in choices)
        ):
            raise ValueError("input.choices is not a non-empty list of strings")
        if not isinstance(delimiter, str):
            raise ValueError("input.delimiter is not a string")
        if not isinstance(unconditional, bool):
            raise ValueError("input.unconditional is not true or false")
        return cls(context, tuple(choices), delimiter, unconditional)


# --------------------------------------------------------------------------- server replies


def _lacks(url: str, what: str) -> LLMError:
    return LLMError(
        f"{url} cannot score log-likelihoods: {what}. Scoring needs an OpenAI-compatible "
        "/completions endpoint that echoes the prompt's tokens with their log-probabilities "
        "(echo: true, logprobs) — vLLM and llama.cpp's server do; chat-only APIs do not",
        kind="invalid_response",
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _legacy_tokens(logprobs: Mapping[str, Any], url: str) -> list[tuple[int, int, float | None]]:
    """``(start, end, logprob)`` character spans of the legacy shape's tokens."""
    offsets, values, tokens = (
        logprobs.get("text_offset"),
        logprobs.get("token_logprobs"),
        logprobs.get("tokens"),
    )
    if not isinstance(offsets, list) or not isinstance(values, list):
        raise _lacks(url, "its reply has no logprobs.text_offset / token_logprobs")
    if not isinstance(tokens, list) or not (len(offsets) == len(values) == len(tokens)):
        raise _lacks(
            url, "its logprobs lists (tokens, text_offset, token_logprobs) differ in length"
        )
    spans = []
    for i, (offset, value, token) in enumerate(zip(offsets, values, tokens, strict=True)):
        if isinstance(offset, bool) or not isinstance(offset, int) or not isinstance(token, str):
            raise _lacks(url, f"logprobs.text_offset[{i}] or tokens[{i}] is malformed")
        end = offsets[i + 1] if i + 1 < len(offsets) else offset + len(token)
        spans.append((offset, max(offset, end if isinstance(end, int) else offset), _number(value)))
    return spans


def _content_tokens(content: list[Any], url: str) -> list[tuple[int, int, float | None]]:
    """``(start, end, logprob)`` UTF-8 byte spans of llama.cpp's ``logprobs.content``."""
    spans = []
    offset = 0
    for i, entry in enumerate(content):
        if not isinstance(entry, Mapping):
            raise _lacks(url, f"logprobs.content[{i}] is not an object")
        raw = entry.get("bytes")
        if isinstance(raw, list) and all(isinstance(b, int) and 0 <= b < 256 for b in raw):
            size = len(raw)
        elif isinstance(entry.get("token"), str):
            size = len(entry["token"].encode("utf-8"))
        else:
            raise _lacks(url, f"logprobs.content[{i}] has neither bytes nor token")
        spans.append((offset, offset + size, _number(entry.get("logprob"))))
        offset += size
    return spans


def echoed_logprob(payload: Mapping[str, Any], prompt: str, start: int, url: str) -> Loglikelihood:
    """The continuation's log-likelihood from a ``/completions`` reply to ``prompt`` with
    ``echo`` and ``logprobs``: the sum over the echoed prompt tokens that hold characters
    from ``start`` on (a token straddling the boundary counts for the continuation).

    Raises :class:`LLMError` naming what the server lacks when the reply has no
    log-probabilities, did not echo the prompt, or gives none for a continuation token.
    """
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise _lacks(url, "its reply has no choices[0]")
    logprobs = choices[0].get("logprobs")
    if not isinstance(logprobs, Mapping):
        raise _lacks(url, "its reply has no logprobs (logprobs unsupported?)")
    content = logprobs.get("content")
    if isinstance(content, list):
        spans = _content_tokens(content, url)
        size, begin = len(prompt.encode("utf-8")), len(prompt[:start].encode("utf-8"))
    else:
        spans = _legacy_tokens(logprobs, url)
        size, begin = len(prompt), start
    inside = [(s, e, v) for s, e, v in spans if s < size]
    if not inside or inside[-1][1] < size or inside[0][0] > 0:
        raise _lacks(url, "it did not echo the prompt's tokens (echo unsupported?)")
    total, count = 0.0, 0
    for s, e, value in inside:
        if e <= begin:
            continue
        if value is None or not math.isfinite(value):
            what = "the first token of the text" if s == 0 else f"the token at offset {s}"
            raise _lacks(url, f"it gave no log-probability for {what}")
        total += value
        count += 1
    if count == 0:
        raise _lacks(url, "no echoed token covers the continuation")
    return Loglikelihood(min(total, 0.0), count)
