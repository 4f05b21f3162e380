"""Local stand-ins for the Supermemory and Mem0 REST APIs, for tests: the documented
request and reply shapes of the calls MemoryBench's adapters make (and benchkit's do),
authentication included, over an in-memory store ranked by shared words.

This is what benchkit's adapters are tested against (docs/memory-providers.md says so): the
contract as the services document it and MemoryBench's adapters use it, not the hosted
services themselves.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any

import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

SUPERMEMORY_KEY = "sm-test-key"
MEM0_KEY = "m0-test-key"


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _score(query: str, text: str) -> float:
    asked = _words(query)
    return len(asked & _words(text)) / len(asked) if asked else 0.0


def _now() -> str:
    return datetime.now(UTC).isoformat()


@attrs.define
class _Doc:
    id: str
    owner: str  # Supermemory's container tag, Mem0's user_id
    content: str
    metadata: dict[str, Any]
    created_at: str = attrs.field(factory=_now)


@attrs.define
class Services:
    """Both services' state; ``requests`` records (service, method, path, body) for tests."""

    docs: dict[str, _Doc] = attrs.field(factory=dict)
    requests: list[tuple[str, str, str, Any]] = attrs.field(factory=list)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v3/documents", self._sm_add, methods=["POST"]),
                Route("/v3/search", self._sm_search, methods=["POST"]),
                Route("/v3/documents/{doc_id}", self._sm_patch, methods=["PATCH"]),
                Route("/v3/documents/{doc_id}", self._sm_delete, methods=["DELETE"]),
                Route("/v1/memories/", self._m0_add, methods=["POST"]),
                Route("/v2/memories/search/", self._m0_search, methods=["POST"]),
                Route("/v1/memories/{doc_id}", self._m0_put, methods=["PUT"]),
                Route("/v1/memories/{doc_id}", self._m0_delete, methods=["DELETE"]),
            ]
        )

    async def _body(self, request: Request, service: str, scheme: str, key: str) -> Any:
        if request.headers.get("authorization") != f"{scheme} {key}":
            raise _Unauthorized
        body = await request.json() if await request.body() else None
        self.requests.append((service, request.method, request.url.path, body))
        return body

    # -- Supermemory (v3) ---------------------------------------------------------------

    async def _sm_add(self, request: Request) -> Response:
        try:
            body = await self._body(request, "supermemory", "Bearer", SUPERMEMORY_KEY)
        except _Unauthorized:
            return JSONResponse({"error": "Unauthorized"}, 401)
        doc = _Doc(str(uuid.uuid4()), body["containerTag"], body["content"], body["metadata"])
        self.docs[doc.id] = doc
        return JSONResponse({"id": doc.id, "status": "queued"})

    async def _sm_search(self, request: Request) -> Response:
        try:
            body = await self._body(request, "supermemory", "Bearer", SUPERMEMORY_KEY)
        except _Unauthorized:
            return JSONResponse({"error": "Unauthorized"}, 401)
        tags = set(body.get("containerTags") or [])
        hits = sorted(
            ((_score(body["q"], d.content), d) for d in self.docs.values() if d.owner in tags),
            key=lambda pair: -pair[0],
        )[: body.get("limit", 10)]
        results = [
            {
                "documentId": d.id,
                "chunks": [{"content": d.content, "isRelevant": s > 0, "score": s}],
                "score": s,
                "metadata": d.metadata,
                "createdAt": d.created_at,
            }
            for s, d in hits
        ]
        return JSONResponse({"results": results, "timing": 1, "total": len(results)})

    async def _sm_patch(self, request: Request) -> Response:
        try:
            body = await self._body(request, "supermemory", "Bearer", SUPERMEMORY_KEY)
        except _Unauthorized:
            return JSONResponse({"error": "Unauthorized"}, 401)
        doc = self.docs.get(request.path_params["doc_id"])
        if doc is None:
            return JSONResponse({"error": "Document not found"}, 404)
        doc.content, doc.metadata = body["content"], body.get("metadata") or {}
        return JSONResponse({"id": doc.id, "status": "queued"})

    async def _sm_delete(self, request: Request) -> Response:
        try:
            await self._body(request, "supermemory", "Bearer", SUPERMEMORY_KEY)
        except _Unauthorized:
            return JSONResponse({"error": "Unauthorized"}, 401)
        if self.docs.pop(request.path_params["doc_id"], None) is None:
            return JSONResponse({"error": "Document not found"}, 404)
        return Response(status_code=204)

    # -- Mem0 -----------------------------------------------------------------------------

    async def _m0_add(self, request: Request) -> Response:
        try:
            body = await self._body(request, "mem0", "Token", MEM0_KEY)
        except _Unauthorized:
            return JSONResponse({"detail": "Invalid API key"}, 401)
        text = " ".join(m["content"] for m in body["messages"] if m.get("role") == "user")
        doc = _Doc(str(uuid.uuid4()), body["user_id"], text, body.get("metadata") or {})
        self.docs[doc.id] = doc
        return JSONResponse([{"id": doc.id, "event": "ADD", "data": {"memory": text}}])

    async def _m0_search(self, request: Request) -> Response:
        try:
            body = await self._body(request, "mem0", "Token", MEM0_KEY)
        except _Unauthorized:
            return JSONResponse({"detail": "Invalid API key"}, 401)
        owner = (body.get("filters") or {}).get("user_id")
        hits = sorted(
            ((_score(body["query"], d.content), d) for d in self.docs.values() if d.owner == owner),
            key=lambda pair: -pair[0],
        )[: body.get("top_k", 10)]
        return JSONResponse(
            [
                {
                    "id": d.id,
                    "memory": d.content,
                    "user_id": d.owner,
                    "created_at": d.created_at,
                    "updated_at": d.created_at,
                    "metadata": d.metadata,
                    "score": s,
                }
                for s, d in hits
            ]
        )

    async def _m0_put(self, request: Request) -> Response:
        try:
            body = await self._body(request, "mem0", "Token", MEM0_KEY)
        except _Unauthorized:
            return JSONResponse({"detail": "Invalid API key"}, 401)
        doc = self.docs.get(request.path_params["doc_id"])
        if doc is None:
            return JSONResponse({"detail": "Memory not found"}, 404)
        doc.content, doc.metadata = body["text"], body.get("metadata") or {}
        return JSONResponse(
            {"id": doc.id, "text": doc.content, "updated_at": _now(), "metadata": doc.metadata}
        )

    async def _m0_delete(self, request: Request) -> Response:
        try:
            await self._body(request, "mem0", "Token", MEM0_KEY)
        except _Unauthorized:
            return JSONResponse({"detail": "Invalid API key"}, 401)
        if self.docs.pop(request.path_params["doc_id"], None) is None:
            return JSONResponse({"detail": "Memory not found"}, 404)
        return JSONResponse({"message": "Memory deleted successfully!"})


class _Unauthorized(Exception):
    pass
