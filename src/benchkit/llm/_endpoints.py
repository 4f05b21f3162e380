"""The endpoints a server may call, by name, and the credential each one gets.

A server (``benchkit serve``) runs what requests ask for, and a request must never choose
where the server's credentials go: a URL in a request could point at a listener that
records the ``Authorization`` header, and the name of an environment variable in a
request could pick any secret of the server's environment. So the URLs a server may call,
and which environment variable holds each one's key, are the server's configuration —
an :class:`EndpointRegistry` of :class:`NamedEndpoint` — and a request names an endpoint.

    >>> registry = EndpointRegistry(["gw=https://llm.example/v1,key-env=GW_KEY"])
    >>> registry.get("gw")
    NamedEndpoint(name='gw', url='https://llm.example/v1', key_env='GW_KEY')
    >>> registry.get("gw").chat_options()
    {'base_url': 'https://llm.example/v1', 'api_key_env': ['GW_KEY']}

Other parts of benchkit register endpoints of their own the same way (an embedded local
model serving an OpenAI-compatible API on loopback registers ``NamedEndpoint("local",
url)``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import attrs

from benchkit import _secrets
from benchkit.errors import ConfigError

__all__ = ["ENDPOINT_SYNTAX", "EndpointRegistry", "NamedEndpoint"]

#: How ``serve --endpoint`` writes one.
ENDPOINT_SYNTAX = "NAME=URL[,key-env=VAR]"

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _check_name(instance: Any, attribute: Any, value: str) -> None:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ConfigError(
            f"endpoint name {value!r} is not a name",
            fix="use letters, digits, '_', '.', '-' (at most 64), e.g. 'gateway'.",
        )


def _check_url(instance: Any, attribute: Any, value: str) -> None:
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        shown = _secrets.known().scrub(value) if isinstance(value, str) else value
        raise ConfigError(
            f"endpoint URL {shown!r} is not an http(s) URL",
            fix="write e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1.",
        )
    if parts.username or parts.password:
        raise ConfigError(
            "an endpoint URL must not carry a user name or password",
            fix="put the key in an environment variable and name it with key-env=VAR.",
        )
    # A key in the query string would be shown to every reader of the server's endpoint
    # list, and sent to the endpoint in clear in every URL: the configuration names the
    # variable that holds it instead.
    for name, _ in parse_qsl(parts.query, keep_blank_values=True):
        if _secrets.credential_name(name.lower()):
            raise ConfigError(
                f"an endpoint URL must not carry a credential (its query names {name!r})",
                fix="put the key in an environment variable and name it with key-env=VAR.",
            )


def _check_env(instance: Any, attribute: Any, value: str | None) -> None:
    if value is not None and (not isinstance(value, str) or not _ENV.fullmatch(value)):
        raise ConfigError(
            f"key-env {value!r} is not an environment variable name",
            fix="write e.g. key-env=OPENAI_API_KEY (the variable's name, never the key).",
        )


def _same_url(a: str, b: str) -> bool:
    """URLs equal but for a trailing slash and the case of the scheme and host."""

    def norm(url: str) -> tuple[str, str, str, str]:
        parts = urlsplit(url.strip())
        return (parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query)

    return norm(a) == norm(b)


@attrs.frozen
class NamedEndpoint:
    """One endpoint a server may call: its ``name`` (what requests say), its ``url``, and
    the environment variable holding its key (``key_env``; None sends no key)."""

    name: str = attrs.field(validator=_check_name)
    url: str = attrs.field(validator=_check_url)
    key_env: str | None = attrs.field(default=None, validator=_check_env)

    @classmethod
    def parse(cls, text: str) -> NamedEndpoint:
        """``NAME=URL[,key-env=VAR]``, as ``serve --endpoint`` takes it."""
        name, sep, rest = text.partition("=")
        url, _, options = rest.partition(",")
        shown = _secrets.known().scrub(text)  # what an error may quote of it
        key_env: str | None = None
        for option in filter(None, (o.strip() for o in options.split(","))):
            key, eq, value = option.partition("=")
            if key.strip() != "key-env" or not eq:
                raise ConfigError(
                    f"endpoint {shown!r}: unknown option {_secrets.known().scrub(option)!r}",
                    fix=f"write {ENDPOINT_SYNTAX}, e.g. gw=https://llm.example/v1,key-env=GW_KEY.",
                )
            key_env = value.strip()
        if not sep or not name.strip() or not url.strip():
            raise ConfigError(
                f"endpoint {shown!r} is not {ENDPOINT_SYNTAX}",
                fix="write e.g. --endpoint gw=https://llm.example/v1,key-env=GW_KEY.",
            )
        return cls(name.strip(), url.strip(), key_env)

    def chat_options(self) -> dict[str, Any]:
        """Options of a ``chat`` provider or a judge that calls this endpoint."""
        return {"base_url": self.url, "api_key_env": [self.key_env] if self.key_env else []}

    def http_options(self) -> dict[str, Any]:
        """Options of an ``http`` provider that calls this endpoint."""
        return {"url": self.url, "api_key_env": self.key_env}


class EndpointRegistry:
    """The endpoints a server may call, by name (see the module's docstring).

    Built from :class:`NamedEndpoint` values, ``NAME=URL[,key-env=VAR]`` strings, or a
    mapping of names to URLs; a name given twice is a :class:`ConfigError`.
    """

    def __init__(
        self, endpoints: Iterable[NamedEndpoint | str] | Mapping[str, str] | None = None
    ) -> None:
        self._by_name: dict[str, NamedEndpoint] = {}
        if isinstance(endpoints, Mapping):
            endpoints = [NamedEndpoint(name, url) for name, url in endpoints.items()]
        for endpoint in endpoints or ():
            self.register(
                endpoint if isinstance(endpoint, NamedEndpoint) else NamedEndpoint.parse(endpoint)
            )

    def register(self, endpoint: NamedEndpoint) -> None:
        """Add ``endpoint``; its name must be new."""
        if endpoint.name in self._by_name:
            raise ConfigError(
                f"endpoint {endpoint.name!r} is configured twice",
                fix="give each --endpoint its own name.",
            )
        self._by_name[endpoint.name] = endpoint

    def __iter__(self) -> Iterator[NamedEndpoint]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def __repr__(self) -> str:
        return f"EndpointRegistry({sorted(self._by_name)})"

    @property
    def names(self) -> list[str]:
        return sorted(self._by_name)

    def get(self, name: str, *, field: str = "endpoint") -> NamedEndpoint:
        """The endpoint called ``name``; a :class:`ConfigError` naming ``field`` when the
        server has none by that name."""
        found = self._by_name.get(name) if isinstance(name, str) else None
        if found is None:
            known = ", ".join(self.names) or "none is configured"
            raise ConfigError(
                f"{field}: the server has no endpoint {name!r} (endpoints: {known})",
                fix=f"name one of the server's endpoints, or configure it: serve --endpoint "
                f"{ENDPOINT_SYNTAX}.",
                json_path=field,
            )
        return found

    def by_url(self, url: str) -> NamedEndpoint | None:
        """The configured endpoint whose URL is ``url`` (but for a trailing slash)."""
        for endpoint in self._by_name.values():
            if _same_url(endpoint.url, url):
                return endpoint
        return None
