"""The one redaction: every text benchkit stores or shows passes through it.

What is a secret:

- the **values of configured keys and credential headers**: every part of benchkit that is
  given one (an LLM client's key, a provider's ``Authorization`` or ``X-API-Key`` header,
  an endpoint's ``key-env`` variable, an MCP server's headers, the server's tokens, the
  local model's key) calls :func:`add`, and the value is redacted wherever it appears from
  then on in this process;
- the **values of environment variables whose names say they hold one** (``*KEY*``,
  ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``), 8 characters or more;
- **common key shapes**: a bearer or basic ``Authorization`` value, the password (or
  token) in a URL's user part (``https://user:pw@host``), and a credential given as a
  name and a value — ``?api_key=…``, ``&token=…``, ``"password": "…"``, ``secret=…``.

Each is replaced by ``[redacted]``. Two walks use it: :meth:`Secrets.scrub_value` redacts
the strings inside any JSON-like value (a cell's output, error, reasons: data keeps its
shape), and :meth:`Secrets.redact` also replaces every value under a key that names a
credential (``authorization``, ``api_key``, ``token``, ``password``, ``cookie``...): what
a transcript and a run's recorded configuration get. A value is checked by a fast scan
first, so a text with nothing to redact costs one pass and is returned as it is.

The values :func:`add` is given are kept for the life of the process (a set that only
grows, never more than :data:`MAX_ADDED` values): a key known to one run is redacted in
every other run of the process too, which only ever hides more.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote

import attrs

__all__ = [
    "MAX_ADDED",
    "REDACTED",
    "LogFilter",
    "SECRET_ENV",
    "SECRET_KEY",
    "Secrets",
    "add",
    "add_env",
    "add_header",
    "credential_name",
    "known",
    "recent",
]

REDACTED = "[redacted]"
#: The shortest value treated as a secret: shorter ones would redact ordinary words.
MIN_CHARS = 8
#: Most values :func:`add` keeps (later ones are still redacted by their shape only).
MAX_ADDED = 10_000
#: A secret's first characters that mark it: a text holding them followed by more of the
#: secret (a key cut short by an excerpt) has that part redacted.
HEAD_CHARS = 12

#: Keys of mappings whose values are credentials (headers, options, JSON bodies).
SECRET_KEY = re.compile(
    r"^(proxy-)?authori[sz]ation$|^(x-)?api[-_]?key$|[-_]api[-_]?key$|^apikey$"
    r"|^((access|auth|bearer|refresh|id|session)[-_]?)?token$|secret|password|passwd"
    r"|^(set-)?cookie$|^credentials?$|private[-_]?key$",
    re.IGNORECASE,
)
#: Names of headers whose values are credentials.
_SECRET_HEADER = re.compile(
    r"auth|key|token|secret|passw|cookie|session|signature|credential", re.I
)
#: Names of environment variables whose values are secrets.
SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)

# Key shapes, found without scanning every text with a regular expression (Python's are
# slow at that: ~100 µs for a cell's JSON): the lowered text is searched for a few words,
# and only where one occurs does an anchored pattern check what follows it.
#: Words one of which every key shape contains.
_WORDS = ("bearer", "basic", "://", "key", "token", "secret", "passw", "pwd", "credential")
_MORE_WORDS = ("cookie", "auth", "sig")
_ALL_WORDS = (*_WORDS, *_MORE_WORDS)
#: After ``bearer`` / ``basic``: the credential.
_SCHEME_VALUE = re.compile(r"[ \t]+(?!\[redacted\])([a-z0-9._~+/=-]{8,})")
#: After ``scheme://``: a user part (``user:password@`` or ``token@``).
_USERINFO = re.compile(r"(?<=://)(?!\[redacted\])([^\s/?#@\"'<>]+)@")
#: After (a part of) a name that says credential: the rest of the name, ``=`` or ``:``
#: (quoted or not) and the value.
_NAMED_VALUE = re.compile(
    r"([a-z0-9_-]*)[\"']?[ \t]*[:=][ \t]*[\"']?(?!\[redacted\])([^\s\"'&#,;{}<>\\]{8,})"
)
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


def credential_name(word: str) -> bool:
    """Whether a (lowered) word names a credential: ``api_key``, ``X-Auth-Token``,
    ``password``, ``client_secret``, ``sig``, ``auth``... (not ``author``, ``design``)."""
    if any(part in word for part in ("key", "token", "secret", "passw", "pwd", "credential")):
        return not word.startswith("tokeniz")
    if "cookie" in word or word in ("auth", "sig", "signature", "authorization"):
        return True
    return word.endswith(("-auth", "_auth", "-sig", "_sig", "signature")) or word.startswith(
        ("auth-", "auth_")
    )


def _spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds a key shape's secret part: (start, end) pairs, maybe
    overlapping; none when no word of :data:`_WORDS` occurs in it (the common case)."""
    low = text.lower()
    for word in _ALL_WORDS:
        if word in low:
            break
    else:
        return []
    if len(low) != len(text):  # a few characters lower to two: keep the positions
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    spans: list[tuple[int, int]] = []
    for scheme in ("bearer", "basic"):
        at = low.find(scheme)
        while at >= 0:
            found = _SCHEME_VALUE.match(low, at + len(scheme))
            if found and (at == 0 or low[at - 1] not in _WORD_CHARS):
                spans.append(found.span(1))
            at = low.find(scheme, at + 1)
    at = low.find("://")
    while at >= 0:
        found = _USERINFO.match(low, at + 3)
        if found:
            spans.append(found.span(1))
        at = low.find("://", at + 3)
    for word in (*_WORDS[3:], *_MORE_WORDS):
        at = low.find(word)
        while at >= 0:
            found = _NAMED_VALUE.match(low, at + len(word))  # the word's rest, "=", a value
            if found:
                start = at
                while start > 0 and low[start - 1] in _WORD_CHARS:
                    start -= 1
                if credential_name(low[start : found.end(1)]):
                    spans.append(found.span(2))
            at = low.find(word, at + 1)
    return spans


def _holds_credential(key: object, item: object) -> bool:
    """Whether ``item`` under ``key`` is a credential to redact in data."""
    return (
        isinstance(key, str)
        and isinstance(item, str)
        and len(item) >= MIN_CHARS
        and item != REDACTED
        and key.lower() != "token"
        and SECRET_KEY.search(key) is not None
    )


def _replace(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the (merged) spans replaced by ``[redacted]``."""
    out: list[str] = []
    last = 0
    for start, end in sorted(spans):
        if end <= last:
            continue
        start = max(start, last)
        out += [text[last:start], REDACTED]
        last = end
    out.append(text[last:])
    return "".join(out)


T = TypeVar("T")

_lock = threading.Lock()
_added: set[str] = set()
_version = 0


def add(*values: object) -> None:
    """Treat ``values`` as secrets from now on, in this process (None, non-strings and
    values shorter than 8 characters are ignored). A value written ``Bearer X`` or
    ``Basic X`` also adds ``X``."""
    global _version
    found: set[str] = set()
    for value in values:
        if not isinstance(value, str):
            continue
        value = value.strip()
        scheme, _, rest = value.partition(" ")
        if scheme.lower() in ("bearer", "basic", "token") and rest.strip():
            value = rest.strip()
        if len(value) >= MIN_CHARS:
            found.add(value)
            encoded = quote(value, safe="")
            if encoded != value:
                found.add(encoded)
    with _lock:
        fresh = found - _added
        if fresh and len(_added) < MAX_ADDED:
            _added.update(fresh)
            _version += 1


def add_header(name: str, value: object) -> None:
    """:func:`add` ``value`` when header ``name`` says it carries a credential
    (``Authorization``, ``X-API-Key``, ``X-Auth-Token``, ``Cookie``...)."""
    if _SECRET_HEADER.search(str(name)):
        add(value)


def add_env(env: Mapping[str, object]) -> None:
    """:func:`add` the values of ``env`` (a child process's environment) whose names say
    they hold a secret."""
    for name, value in env.items():
        if SECRET_ENV.search(str(name)):
            add(value)


def known() -> Secrets:
    """The secrets known now: the values given to :func:`add` and those of the secret
    environment variables (read now: the environment may have changed)."""
    with _lock:
        added, version = tuple(_added), _version
    return Secrets(added, version)


_recent: tuple[float, int, int, Secrets] | None = None
#: How long :func:`recent` reuses what it read (seconds).
RECENT_S = 1.0


def recent() -> Secrets:
    """:func:`known`, reused while :func:`add` learnt nothing, the environment has as many
    variables, and less than :data:`RECENT_S` passed: for each answer of a server, where
    reading the environment every time would cost more than the answer."""
    global _recent
    now = time.monotonic()
    kept = _recent
    fresh = kept is not None and now - kept[0] < RECENT_S
    if kept is not None and fresh and kept[1] == _version and kept[2] == len(os.environ):
        return kept[3]
    found = known()
    _recent = (now, found._version, len(os.environ), found)
    return found


class Secrets:
    """The secret values known at one moment, and the one redaction with them.

    Make one with :func:`known` where a run (or a request) starts and keep it: reading the
    environment costs more than redacting a text; :meth:`current` gives a fresh one when
    :func:`add` learnt a value since.
    """

    __slots__ = ("_heads", "_version", "values")

    def __init__(self, added: Iterable[str] = (), version: int = 0) -> None:
        env = {v for k, v in os.environ.items() if len(v) >= MIN_CHARS and SECRET_ENV.search(k)}
        self.values: tuple[str, ...] = tuple(sorted({*env, *added}, key=len, reverse=True))
        # Each value with the start that marks it: a text cut inside a key (an excerpt of
        # 200 characters) keeps only a prefix, which is redacted too.
        self._heads = tuple((value, value[:HEAD_CHARS]) for value in self.values)
        self._version = version

    def current(self) -> Secrets:
        """Itself, or a fresh :func:`known` when a value was added since it was made."""
        return self if self._version == _version else known()

    # -- text ------------------------------------------------------------------------

    def dirty(self, text: str) -> bool:
        """Whether :meth:`scrub` would change ``text`` (a fast check first)."""
        for _, head in self._heads:
            if head in text:
                return True
        return bool(_spans(text))

    def scrub(self, text: str) -> str:
        """``text`` with every secret value (or the start of one, cut short) and key shape
        replaced by ``[redacted]`` (``text`` itself when there is none)."""
        for value, head in self._heads:
            if head in text:
                text = _cut_out(text, value, head)
        spans = _spans(text)
        return _replace(text, spans) if spans else text

    # -- values ----------------------------------------------------------------------

    def scrub_value(self, value: Any) -> Any:
        """``value`` (JSON-like: strings, numbers, lists, tuples, mappings) with its
        strings scrubbed — mapping keys too — and every string of 8 characters or more
        under a key that names a credential (but a bare ``token``, which data uses:
        a model's tokens) replaced; the same object when nothing changed."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, Mapping):
            changed = False
            out: dict[Any, Any] = {}
            for key, item in value.items():
                new_key = self.scrub(key) if isinstance(key, str) else key
                if _holds_credential(key, item):
                    new_item: Any = REDACTED
                else:
                    new_item = self.scrub_value(item)
                changed = changed or new_key is not key or new_item is not item
                out[new_key] = new_item
            return out if changed else value
        if isinstance(value, (list, tuple)):
            items = [self.scrub_value(item) for item in value]
            if all(new is old for new, old in zip(items, value, strict=True)):
                return value
            return items if isinstance(value, list) else tuple(items)
        return value

    def redact(self, value: Any) -> Any:
        """:meth:`scrub_value`, and every value under a key naming a credential replaced
        by ``[redacted]`` (None and booleans are kept: they say whether one was set)."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for key, item in value.items():
                if (
                    isinstance(key, str)
                    and SECRET_KEY.search(key)
                    and item is not None
                    and not isinstance(item, bool)
                ):
                    out[key] = REDACTED
                else:
                    out[self.scrub(key) if isinstance(key, str) else key] = self.redact(item)
            return out
        if isinstance(value, (list, tuple)):
            return [self.redact(item) for item in value]
        return value

    def scrub_known(self, text: str) -> str:
        """A JSON text in which a known secret value occurs, scrubbed (as :meth:`scrub_json`);
        ``text`` itself otherwise — a check that costs a substring search per value, for
        texts made of data the store already holds clean (a server's answers)."""
        for _, head in self._heads:
            if head in text:
                return self.scrub_json(text)
        return text

    def scrub_json(self, text: str, *, keys: bool = False) -> str:
        """A JSON text with its strings scrubbed (with ``keys``, :meth:`redact`); ``text``
        itself when nothing is to be redacted, which a fast scan of the text says."""
        if not keys and not self.dirty(text):
            return text
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return self.scrub(text)
        clean = self.redact(value) if keys else self.scrub_value(value)
        if clean is value:
            return text
        return json.dumps(clean, ensure_ascii=False, separators=(",", ":"), allow_nan=True)

    # -- results ---------------------------------------------------------------------

    def scrub_cell(self, cell: T) -> T:
        """A cell result (:class:`~benchkit.results.CellResult`) with every text scrubbed:
        its error, its response's output, raw reply, metadata, tool calls, retrieved items
        and artifacts, its scores' and verdicts' texts. The same cell when nothing
        changed (the common case costs a fast look at each text: a run's hot path)."""
        changes: dict[str, Any] = {}
        error = getattr(cell, "error", None)
        if error is not None and (new := self.scrub(error)) is not error:
            changes["error"] = new
        response = getattr(cell, "response", None)
        if response is not None and (fresh := self._fields(response, _RESPONSE)) is not response:
            changes["response"] = fresh
        for name, fields in (("scores", _SCORE), ("verdicts", _VERDICT)):
            items = getattr(cell, name, ())
            if items and (clean := self._each(items, fields)) is not items:
                changes[name] = clean
        return attrs.evolve(cell, **changes) if changes else cell  # type: ignore[misc]

    def _each(self, items: tuple[T, ...], names: tuple[str, ...]) -> tuple[T, ...]:
        clean = [self._fields(item, names) for item in items]
        for new, old in zip(clean, items, strict=True):
            if new is not old:
                return tuple(clean)
        return items

    def _fields(self, item: T, names: tuple[str, ...]) -> T:
        changes: dict[str, Any] = {}
        for name in names:
            value = getattr(item, name)
            if not value:  # None, "", (), an empty mapping
                continue
            new = self._each(value, _NESTED[name]) if name in _NESTED else self.scrub_value(value)
            if new is not value:
                changes[name] = new
        return attrs.evolve(item, **changes) if changes else item  # type: ignore[misc]


#: The texts of a cell's parts that :meth:`Secrets.scrub_cell` scrubs, by part.
_SCORE = ("reason", "error", "details")
_VERDICT = ("message", "stdout_excerpt", "stderr_excerpt", "details")
_RESPONSE = ("output", "raw", "metadata", "artifacts", "tool_calls", "retrieved")
_NESTED = {"tool_calls": ("arguments",), "retrieved": ("content", "metadata")}


def _cut_out(text: str, value: str, head: str) -> str:
    """``text`` with each run of characters that starts like ``value`` (``head``) and
    follows it as far as it goes replaced by ``[redacted]``."""
    text = text.replace(value, REDACTED)
    start = text.find(head)
    while start >= 0:
        end = start + len(head)
        while end < len(text) and end - start < len(value) and text[end] == value[end - start]:
            end += 1
        text = text[:start] + REDACTED + text[end:]
        start = text.find(head, start + len(REDACTED))
    return text


class LogFilter(logging.Filter):
    """A logging filter that scrubs each record's message and traceback (put it on a
    handler: a logger's own filters do not see its children's records)."""

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = known()
        message = record.getMessage()
        clean = secrets.scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = secrets.scrub(record.exc_text)
        return True
