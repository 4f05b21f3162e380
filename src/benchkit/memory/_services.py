"""Hosted memory services MemoryBench ships adapters for: Supermemory and Mem0.

Each speaks the service's public REST API as MemoryBench's own adapters do
(``providers/supermemory``, ``providers/mem0`` in sdamache/memorybench), with the keys from
the same environment variables:

================  =================================  ==========================================
provider name     key (and URL) variables            calls
================  =================================  ==========================================
``supermemory``   ``SUPERMEMORY_API_KEY``,           ``POST /documents``, ``POST /search``,
                  ``SUPERMEMORY_API_URL`` (default   ``PATCH`` / ``DELETE /documents/{id}``;
                  ``https://api.supermemory.ai/v3``) ``Authorization: Bearer <key>``
``mem0``          ``MEM0_API_KEY``, ``MEM0_API_URL`` ``POST /v1/memories/``,
                  (benchkit's; default               ``POST /v2/memories/search/``,
                  ``https://api.mem0.ai``)           ``PUT`` / ``DELETE /v1/memories/{id}``;
                                                     ``Authorization: Token <key>``
================  =================================  ==========================================

Where benchkit differs from the originals, on purpose (docs/memory-providers.md): every
cell has a scope of its own (the original scopes by user and run, so concurrent cases see
each other's memories), sent as a container tag / user id made from a hash of the whole
scope; a failed delete or update is an error of the cell, not a silent ``false`` (a 404 is
``false``: nothing was there to delete); the convergence wait (the time the service needs to
index, 10 s and 30 s as the originals declare) can be shortened with
``SUPERMEMORY_CONVERGENCE_WAIT_MS`` / ``MEM0_CONVERGENCE_WAIT_MS``. Keys never appear in a
repr, an error or a result.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from benchkit.errors import ConfigError, InvocationError
from benchkit.memory._convert import to_items
from benchkit.model import RetrievedItem
from benchkit.protocols import MemoryScope

__all__ = ["Mem0Provider", "SupermemoryProvider"]

_RETRYABLE = frozenset({408, 429, 500, 502, 503, 504})
_EXCERPT = 200
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)


def _scope_tag(scope: MemoryScope) -> str:
    """A name for one scope that the services accept (letters, digits, ``_``; short)."""
    parts = (scope.user_id, scope.run_id, scope.session_id or "", scope.namespace or "")
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]
    return f"memorybench_{digest}"


def _key(variable: str, service: str) -> str:
    value = os.environ.get(variable, "")
    if not value:
        raise ConfigError(
            f"the {service} memory provider needs an API key: ${variable} is not set",
            fix=f"export {variable}=<your {service} API key> (or use the built-in "
            "LocalBaseline provider, which needs none).",
        )
    return value


def _wait_ms(variable: str, default: float) -> float:
    raw = os.environ.get(variable)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3_600_000:
        raise ConfigError(
            f"${variable} is {raw!r}; expected milliseconds from 0 to 3600000",
            fix=f"set {variable} to a whole number of milliseconds, or unset it.",
        )
    return value


class _Service:
    """What the two services' clients share: settings from the arguments, else the
    service's variables; one HTTP client, JSON calls, errors."""

    name = ""
    _service = ""
    _auth_scheme = "Bearer"
    _url_env = ""
    _default_url = ""
    _key_env = ""
    _wait_env = ""
    _default_wait_ms = 0.0

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        convergence_wait_ms: float | None = None,
    ) -> None:
        url = url or os.environ.get(self._url_env) or self._default_url
        key = api_key or _key(self._key_env, self._service)
        if convergence_wait_ms is None:
            convergence_wait_ms = _wait_ms(self._wait_env, self._default_wait_ms)
        try:
            base = httpx.URL(url)
        except httpx.InvalidURL:
            base = None
        if base is None or base.scheme not in ("http", "https") or not base.host:
            raise ConfigError(
                f"the {self._service} URL {url!r} is not an http(s) URL",
                fix="write the service's base URL, e.g. https://api.example.com",
            )
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ConfigError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        self._base = base
        self._headers = {
            "Authorization": f"{self._auth_scheme} {key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        self.timeout = float(timeout)
        self.convergence_wait_ms = float(convergence_wait_ms)
        self._client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self._base)!r})"

    def _url(self, path: str) -> httpx.URL:
        return self._base.copy_with(path=self._base.path.rstrip("/") + path)

    async def _call(self, method: str, path: str, body: Any = None) -> Any:
        """The JSON answer of one call; a 404 is None. Connection failures, timeouts, 429
        and 5xx are retryable errors of the cell, other statuses final ones."""
        if self._client is None:
            self._client = httpx.AsyncClient(headers=self._headers, timeout=self.timeout)
        content = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        where = f"{self._service} {method} {path}"
        try:
            reply = await self._client.request(method, self._url(path), content=content)
        except httpx.TimeoutException as exc:
            raise InvocationError(
                f"{where}: {type(exc).__name__} after {self.timeout:g}s", category="timeout"
            ) from exc
        except httpx.RequestError as exc:
            raise InvocationError(f"{where}: {type(exc).__name__}: {exc}") from exc
        if reply.status_code == 404:
            return None
        if not reply.is_success:
            raise InvocationError(
                f"{where}: HTTP {reply.status_code} {reply.reason_phrase}: {reply.text[:_EXCERPT]}",
                retryable=reply.status_code in _RETRYABLE,
            )
        if reply.status_code == 204 or not reply.content:
            return {}
        try:
            return reply.json()
        except ValueError as exc:
            raise InvocationError(
                f"{where} did not answer JSON: {reply.text[:_EXCERPT]}", retryable=False
            ) from exc

    def _unexpected(self, path: str, data: Any, expected: str) -> InvocationError:
        return InvocationError(
            f"{self._service} {path} answered {json.dumps(data)[:_EXCERPT]}; expected {expected}",
            retryable=False,
        )

    async def aclose(self) -> None:
        """Close the HTTP client; a later call opens a new one."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


class SupermemoryProvider(_Service):
    """Supermemory's API (v3): documents in a container tag per scope, hybrid search.

    ``url`` defaults to ``$SUPERMEMORY_API_URL``, else the public API; ``api_key`` to
    ``$SUPERMEMORY_API_KEY`` (a ConfigError naming the variable when neither is set).
    """

    name = "supermemory"
    _service = "Supermemory"
    _url_env = "SUPERMEMORY_API_URL"
    _default_url = "https://api.supermemory.ai/v3"
    _key_env = "SUPERMEMORY_API_KEY"
    _wait_env = "SUPERMEMORY_CONVERGENCE_WAIT_MS"
    _default_wait_ms = 10_000.0
    capabilities = frozenset({"add", "retrieve", "delete", "update"})

    async def add(
        self, scope: MemoryScope, content: str, metadata: Mapping[str, Any] | None = None
    ) -> str:
        custom = f"mem_{uuid.uuid4().hex}"
        body = {
            "content": content,
            "containerTag": _scope_tag(scope),
            "customId": custom,
            "metadata": {
                **dict(metadata or {}),
                "scope_user_id": scope.user_id,
                "scope_run_id": scope.run_id,
            },
        }
        data = await self._call("POST", "/documents", body)
        ident = data.get("id") if isinstance(data, dict) else None
        return str(ident) if isinstance(ident, str) and ident else custom

    async def retrieve(
        self, scope: MemoryScope, query: str, limit: int = 10
    ) -> Sequence[RetrievedItem]:
        body = {
            "q": query,
            "containerTags": [_scope_tag(scope)],
            "limit": max(1, min(int(limit), 100)),
            "onlyMatchingChunks": False,
        }
        data = await self._call("POST", "/search", body)
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise self._unexpected("/search", data, '{"results": [...]}')
        found = []
        for result in results:
            if not isinstance(result, dict):
                raise self._unexpected("/search", data, "results that are objects")
            chunks = result.get("chunks") or []
            text = "\n\n".join(str(c.get("content", "")) for c in chunks if isinstance(c, dict))
            found.append(
                {
                    "id": result.get("documentId"),
                    "content": text,
                    "score": result.get("score"),
                    "metadata": result.get("metadata"),
                }
            )
        return to_items(found, "Supermemory /search")

    async def delete(self, scope: MemoryScope, record_id: str) -> bool:
        from urllib.parse import quote

        return await self._call("DELETE", f"/documents/{quote(record_id, safe='')}") is not None

    async def update(
        self,
        scope: MemoryScope,
        record_id: str,
        content: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> bool:
        from urllib.parse import quote

        body = {
            "content": content,
            "metadata": {
                **dict(metadata or {}),
                "scope_user_id": scope.user_id,
                "scope_run_id": scope.run_id,
            },
        }
        path = f"/documents/{quote(record_id, safe='')}"
        return await self._call("PATCH", path, body) is not None

    async def reset(self, scope: MemoryScope) -> None:
        raise InvocationError("Supermemory has no reset of a scope", retryable=False)


class Mem0Provider(_Service):
    """Mem0's platform API: memories extracted from messages per user id (one per scope).

    ``url`` defaults to ``$MEM0_API_URL``, else the public API; ``api_key`` to
    ``$MEM0_API_KEY`` (a ConfigError naming the variable when neither is set).
    """

    name = "mem0"
    _service = "Mem0"
    _auth_scheme = "Token"
    _url_env = "MEM0_API_URL"
    _default_url = "https://api.mem0.ai"
    _key_env = "MEM0_API_KEY"
    _wait_env = "MEM0_CONVERGENCE_WAIT_MS"
    _default_wait_ms = 30_000.0
    capabilities = frozenset({"add", "retrieve", "delete", "update"})

    async def add(
        self, scope: MemoryScope, content: str, metadata: Mapping[str, Any] | None = None
    ) -> str:
        body = {
            "user_id": _scope_tag(scope),
            "messages": [{"role": "user", "content": content}],
            "metadata": dict(metadata or {}),
        }
        data = await self._call("POST", "/v1/memories/", body)
        first = data[0] if isinstance(data, list) and data else None
        ident = first.get("id") if isinstance(first, dict) else None
        if not isinstance(ident, str) or not ident:
            # Mem0 extracted nothing to remember from the message: no record to name.
            return f"mem_{uuid.uuid4().hex}"
        return ident

    async def retrieve(
        self, scope: MemoryScope, query: str, limit: int = 10
    ) -> Sequence[RetrievedItem]:
        body = {
            "query": query,
            "filters": {"user_id": _scope_tag(scope)},
            "version": "v2",
            "top_k": max(1, int(limit)),
        }
        data = await self._call("POST", "/v2/memories/search/", body)
        if isinstance(data, dict) and isinstance(data.get("results"), list):
            data = data["results"]
        if not isinstance(data, list):
            raise self._unexpected("/v2/memories/search/", data, "a list of memories")
        return to_items(data, "Mem0 /v2/memories/search/")

    async def delete(self, scope: MemoryScope, record_id: str) -> bool:
        if not _UUID.match(record_id):
            return False  # an id Mem0 never gave (nothing was extracted): nothing to delete
        return await self._call("DELETE", f"/v1/memories/{record_id}") is not None

    async def update(
        self,
        scope: MemoryScope,
        record_id: str,
        content: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> bool:
        if not _UUID.match(record_id):
            return False
        body = {"text": content, "metadata": dict(metadata or {})}
        return await self._call("PUT", f"/v1/memories/{record_id}", body) is not None

    async def reset(self, scope: MemoryScope) -> None:
        raise InvocationError("Mem0 has no reset of a scope", retryable=False)
