"""A memory store behind HTTP: six small JSON endpoints, any language, any host.

The contract (``docs/memory-providers.md`` has examples) — every request body is JSON and
carries the scope as ``{"user_id", "run_id", "session_id", "namespace"}``:

========================  ===========================================  ===========================
endpoint                  request body                                 reply
========================  ===========================================  ===========================
``GET  /capabilities``    —                                            ``{"capabilities": [...],
                                                                       "convergence_wait_ms": 0}``
``POST /add``             ``{scope, content, metadata}``               ``{"id": "..."}``
``POST /retrieve``        ``{scope, query, limit}``                    ``{"results": [{id, content,
                                                                       score?, metadata?}]}``
``POST /delete``          ``{scope, id}``                              ``{"deleted": true}``
``POST /update``          ``{scope, id, content, metadata}``           ``{"updated": true}``
``POST /reset``           ``{scope}``                                  anything (2xx)
========================  ===========================================  ===========================

Only ``/add`` and ``/retrieve`` are required; the others exist when the service declares
the capability. HTTP 429 and 5xx, timeouts and connection failures raise a retryable
:class:`~benchkit.errors.InvocationError`; other statuses and malformed replies a final one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import anyio
import attrs
import httpx

from benchkit import _secrets
from benchkit._bounds import BodyTooLarge, read_capped
from benchkit.errors import ConfigError, InvocationError, ProviderError
from benchkit.memory._capabilities import CAPABILITIES, capability
from benchkit.memory._convert import to_items, to_record_id
from benchkit.model import RetrievedItem
from benchkit.protocols import MemoryScope

__all__ = ["HttpMemoryProvider"]

_RETRYABLE = frozenset({429, 500, 502, 503, 504})
_DEFAULT_CAPABILITIES = frozenset({"add", "retrieve", "delete"})
_EXCERPT = 200
_ERROR_BODY = 65_536  # of an error reply only an excerpt is shown: read no more


def _check_url(url: object) -> httpx.URL:
    try:
        parsed = httpx.URL(url) if isinstance(url, str) else None
    except httpx.InvalidURL:
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(
            f"url {url!r} is not an http(s) URL",
            fix="write the service's base URL, e.g. http://127.0.0.1:8080",
        )
    return parsed


def _capabilities(values: Iterable[Any]) -> frozenset[str]:
    found: set[str] = set()
    for value in values:
        ours = capability(value) if isinstance(value, str) else None
        if ours is None:
            raise ConfigError(
                f"unknown memory capability {value!r}",
                fix=f"use names from: {', '.join(CAPABILITIES)}.",
            )
        found.add(ours)
    return frozenset(found)


class HttpMemoryProvider:
    """A memory service speaking the JSON contract above, at base URL ``url``.

    ``capabilities`` default to add, retrieve and delete; :meth:`discover` asks the
    service instead (``GET /capabilities``). ``headers`` (API keys) never appear in
    errors or the repr. One :class:`httpx.AsyncClient` serves every call; :meth:`aclose`
    closes it.

    ``timeout`` bounds each call as a whole (connecting, sending, reading the reply to its
    last byte): a service that drips its reply is a ``timeout`` error, not a slow cell. A
    reply over ``max_response_bytes`` (default 10 MB) is refused while it streams in, with
    a final error, instead of being buffered whole.
    """

    def __init__(
        self,
        url: str,
        *,
        capabilities: Iterable[str] | None = None,
        convergence_wait_ms: float = 0.0,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        name: str | None = None,
        max_response_bytes: int = 10_000_000,
    ) -> None:
        self._base = _check_url(url)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ConfigError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes <= 0
        ):
            raise ConfigError(
                f"max_response_bytes must be a positive integer, got {max_response_bytes!r}"
            )
        self.max_response_bytes = max_response_bytes
        self.capabilities = (
            _DEFAULT_CAPABILITIES if capabilities is None else _capabilities(capabilities)
        )
        if not {"add", "retrieve"} <= self.capabilities:
            raise ConfigError(
                "a memory service must support add and retrieve",
                fix="declare at least the capabilities add and retrieve.",
            )
        self.convergence_wait_ms = float(convergence_wait_ms)
        self.timeout = float(timeout)
        self.name = name or self._base.host
        self._headers = {"Accept": "application/json", "Content-Type": "application/json"}
        for key, value in (headers or {}).items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ConfigError(f"header {key!r} must be a string, got {type(value).__name__}")
            self._headers[key] = value
            _secrets.add_header(key, value)  # redacted wherever benchkit shows text
        self._client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        shown = self._base.copy_with(query=None, fragment=None, username=None, password=None)
        return f"HttpMemoryProvider({str(shown)!r})"

    @classmethod
    async def discover(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        name: str | None = None,
        max_response_bytes: int = 10_000_000,
    ) -> HttpMemoryProvider:
        """A provider whose capabilities and convergence wait come from ``GET /capabilities``."""
        probe = cls(
            url, headers=headers, timeout=timeout, name=name, max_response_bytes=max_response_bytes
        )
        try:
            data = await probe._request("GET", "capabilities", None)
        except InvocationError as exc:
            raise ProviderError(
                f"cannot read the capabilities of the memory service at {probe!r}: {exc}",
                fix="check the service is running and serves GET /capabilities.",
            ) from exc
        finally:
            await probe.aclose()
        declared = data.get("capabilities") if isinstance(data, dict) else None
        wait = data.get("convergence_wait_ms", 0) if isinstance(data, dict) else 0
        if not isinstance(declared, list) or not isinstance(wait, (int, float)):
            raise ProviderError(
                f"the memory service at {probe!r} answered GET /capabilities with "
                f"{json.dumps(data)[:_EXCERPT]}",
                fix='reply {"capabilities": ["add", "retrieve", ...], "convergence_wait_ms": 0}.',
            )
        return cls(
            url,
            capabilities=declared,
            convergence_wait_ms=float(wait),
            headers=headers,
            timeout=timeout,
            name=name,
            max_response_bytes=max_response_bytes,
        )

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(headers=self._headers, timeout=self.timeout)
        return self._client

    def _endpoint(self, name: str) -> httpx.URL:
        path = self._base.path.rstrip("/") + "/" + name
        return self._base.copy_with(path=path)

    async def _request(self, method: str, name: str, body: Any) -> Any:
        content = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        client = self._http()  # made before the deadline starts: it can block for a while
        try:
            with anyio.fail_after(self.timeout):
                status, reason, data = await self._exchange(client, method, name, content)
        except TimeoutError as exc:
            raise InvocationError(
                f"memory service /{name}: no complete reply within {self.timeout:g}s",
                category="timeout",
            ) from exc
        except httpx.TimeoutException as exc:
            raise InvocationError(
                f"memory service /{name}: {type(exc).__name__} after {self.timeout:g}s",
                category="timeout",
            ) from exc
        except httpx.RequestError as exc:
            raise InvocationError(f"memory service /{name}: {type(exc).__name__}: {exc}") from exc
        except BodyTooLarge as exc:
            raise InvocationError(
                f"memory service /{name}: reply exceeded max_response_bytes={exc.limit} "
                f"({exc.seen})",
                retryable=False,
            ) from exc
        text = data[: _EXCERPT * 4].decode("utf-8", errors="replace")[:_EXCERPT]
        if not 200 <= status < 300:
            raise InvocationError(
                f"memory service /{name}: HTTP {status} {reason}: {text}",
                retryable=status in _RETRYABLE or status >= 500,
            )
        if not data:
            return None
        try:
            return json.loads(data)
        except ValueError as exc:
            raise InvocationError(
                f"memory service /{name} did not answer JSON: {text}",
                retryable=False,
            ) from exc

    async def _exchange(
        self, client: httpx.AsyncClient, method: str, name: str, content: bytes | None
    ) -> tuple[int, str, bytes]:
        """Status, reason and body of one request; the body streamed and capped."""
        async with client.stream(method, self._endpoint(name), content=content) as reply:
            if reply.is_success:
                data = await read_capped(reply, self.max_response_bytes)
            else:
                data = await read_capped(reply, _ERROR_BODY, keep=True)
            return reply.status_code, reply.reason_phrase, data

    def _require(self, op: str) -> None:
        if op not in self.capabilities:
            raise InvocationError(
                f"the memory service at {self!r} does not declare the capability {op!r}",
                retryable=False,
            )

    async def add(
        self, scope: MemoryScope, content: str, metadata: Mapping[str, Any] | None = None
    ) -> str:
        body = {"scope": attrs.asdict(scope), "content": content, "metadata": dict(metadata or {})}
        return to_record_id(await self._request("POST", "add", body), "/add")

    async def retrieve(
        self, scope: MemoryScope, query: str, limit: int = 10
    ) -> Sequence[RetrievedItem]:
        body = {"scope": attrs.asdict(scope), "query": query, "limit": limit}
        data = await self._request("POST", "retrieve", body)
        results = data.get("results") if isinstance(data, dict) else None
        if results is None:
            raise InvocationError(
                f"memory service /retrieve answered {json.dumps(data)[:_EXCERPT]}; "
                'expected {"results": [...]}',
                retryable=False,
            )
        return to_items(results, "/retrieve")

    async def delete(self, scope: MemoryScope, record_id: str) -> bool:
        self._require("delete")
        data = await self._request(
            "POST", "delete", {"scope": attrs.asdict(scope), "id": record_id}
        )
        return _flag(data, "deleted", "/delete")

    async def update(
        self,
        scope: MemoryScope,
        record_id: str,
        content: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> bool:
        self._require("update")
        body = {
            "scope": attrs.asdict(scope),
            "id": record_id,
            "content": content,
            "metadata": dict(metadata or {}),
        }
        return _flag(await self._request("POST", "update", body), "updated", "/update")

    async def reset(self, scope: MemoryScope) -> None:
        self._require("reset")
        await self._request("POST", "reset", {"scope": attrs.asdict(scope)})

    async def aclose(self) -> None:
        """Close the HTTP client; a later call opens a new one."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


def _flag(data: Any, key: str, where: str) -> bool:
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, bool):
        raise InvocationError(
            f"memory service {where} answered {json.dumps(data)[:_EXCERPT]}; "
            f'expected {{"{key}": true or false}}',
            retryable=False,
        )
    return value
