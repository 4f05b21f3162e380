"""Web search mock: answers ``{"query": ...}`` from a built-in knowledge base, offline.

The entry whose key equals the lowercased query wins; otherwise the key sharing the most
words with the query; a query sharing no word gets an empty result. The answer is
``{"result": <text>, "source": <URL>}``. JSON-RPC 2.0 on stdin/stdout, one request per run.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

KNOWLEDGE: dict[str, tuple[str, str]] = {
    "2024 nobel prize physics": (
        "The 2024 Nobel Prize in Physics was awarded to John J. Hopfield and Geoffrey "
        "Hinton for foundational discoveries that enable machine learning with artificial "
        "neural networks.",
        "https://www.nobelprize.org/prizes/physics/2024/summary/",
    ),
    "python creator": (
        "Python was created by Guido van Rossum and first released in 1991.",
        "https://en.wikipedia.org/wiki/Guido_van_Rossum",
    ),
    "typescript": (
        "TypeScript is a strongly typed programming language developed by Microsoft that "
        "builds on JavaScript by adding static types.",
        "https://www.typescriptlang.org/",
    ),
    "largest planet": (
        "Jupiter is the largest planet in the Solar System, more than eleven times the "
        "diameter of Earth.",
        "https://science.nasa.gov/jupiter/",
    ),
    "speed of light": (
        "The speed of light in vacuum is exactly 299,792,458 metres per second.",
        "https://en.wikipedia.org/wiki/Speed_of_light",
    ),
    "mcp protocol": (
        "MCP, the Model Context Protocol, is an open protocol that standardises how "
        "applications provide context and tools to large language models.",
        "https://modelcontextprotocol.io/",
    ),
    "machine learning": (
        "Machine learning is a field of artificial intelligence in which systems learn "
        "patterns from data and improve with experience instead of explicit programming.",
        "https://en.wikipedia.org/wiki/Machine_learning",
    ),
    "capital of france": (
        "Paris is the capital and largest city of France.",
        "https://en.wikipedia.org/wiki/Paris",
    ),
}


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def search(query: str) -> dict[str, str]:
    key = query.strip().lower()
    if key not in KNOWLEDGE:
        wanted = words(key)
        overlap = {k: len(wanted & words(k)) for k in KNOWLEDGE}
        best = max(overlap, key=lambda k: overlap[k])
        if overlap[best] == 0:
            return {"result": "", "source": ""}
        key = best
    text, source = KNOWLEDGE[key]
    return {"result": text, "source": source}


def handle(request: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request.get("id")}
    method = request.get("method")
    params = request.get("params")
    if method == "healthcheck":
        reply["result"] = {"status": "ok"}
    elif method != "invoke":
        reply["error"] = {"code": -32601, "message": f"method not found: {method}"}
    elif not isinstance(params, dict) or not isinstance(params.get("query"), str):
        reply["error"] = {"code": -32602, "message": 'params must be {"query": <string>}'}
    else:
        reply["result"] = search(params["query"])
    return reply


def main() -> None:
    try:
        request = json.loads(sys.stdin.readline())
    except ValueError:
        request = None
    if isinstance(request, dict):
        reply = handle(request)
    else:
        error = {"code": -32700, "message": "parse error: expected one JSON-RPC request"}
        reply = {"jsonrpc": "2.0", "id": None, "error": error}
    print(json.dumps(reply))


if __name__ == "__main__":
    main()
