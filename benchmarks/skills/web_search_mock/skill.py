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
    "sqlite": (
        "SQLite is a self-contained, serverless SQL database engine: a whole database "
        "lives in a single file, and the library links straight into the application.",
        "https://sqlite.org/about.html",
    ),
    "http 418": (
        "HTTP status 418 (I'm a teapot) comes from RFC 2324, an April Fools' document of "
        "1998 about controlling coffee pots over HTTP.",
        "https://www.rfc-editor.org/rfc/rfc2324",
    ),
    "mount everest height": (
        "Mount Everest stands 8,849 metres above sea level, the figure announced in 2020 "
        "by surveyors from China and Nepal.",
        "https://en.wikipedia.org/wiki/Mount_Everest",
    ),
    "water boiling point": (
        "Pure water boils at 100 degrees Celsius at sea level.",
        "https://en.wikipedia.org/wiki/Boiling_point",
    ),
    "unix epoch": (
        "The Unix epoch is 00:00:00 UTC on 1 January 1970; Unix time counts the seconds "
        "elapsed since then, leap seconds aside.",
        "https://en.wikipedia.org/wiki/Unix_time",
    ),
    "json specification": (
        "JSON is specified twice, in IETF RFC 8259 and in ECMA-404, which agree on the "
        "grammar: objects, arrays, strings, numbers, true, false and null.",
        "https://www.rfc-editor.org/rfc/rfc8259",
    ),
    "wilson score interval": (
        "The Wilson score interval, published by Edwin B. Wilson in 1927, is a confidence "
        "interval for a binomial proportion that stays within 0 and 1 and behaves well for "
        "small samples and proportions near 0 or 1.",
        "https://en.wikipedia.org/wiki/Binomial_proportion_confidence_interval",
    ),
    "rust language": (
        "Rust is a systems programming language whose 1.0 release came in May 2015; its "
        "ownership and borrowing rules give memory safety without a garbage collector.",
        "https://www.rust-lang.org/",
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
