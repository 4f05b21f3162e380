"""``GET /docs``: the API as a page people read, built from the OpenAPI document.

The page is rendered on the server from the same document ``/openapi.json`` serves (so it
cannot drift from it, nor from the validation the document is built from), as one HTML
file: its styles are inline (the report's stylesheet, which the explorer shares, and a few
rules of the explorer's header), it loads nothing from another host and runs no script.
Each operation shows its method and path, what it does, its parameters, its request body
and its responses; a schema named in the document links to its description below.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["api_page"]

_METHODS = ("get", "post", "put", "patch", "delete")
#: How deep a schema's properties are listed inline (deeper ones read "object").
_DEPTH = 3
_STYLE = """
* { box-sizing: border-box; }
body { margin: 0; background: #fff; }
header.top { display: flex; gap: 1.2rem; align-items: center; padding: .55rem 1.2rem;
  border-bottom: 1px solid var(--line); background: var(--soft); flex-wrap: wrap; }
header.top .brand { font-weight: 700; color: var(--fg); text-decoration: none; font-size: 1.05rem; }
header.top nav a { margin-right: .9rem; color: var(--accent); text-decoration: none; }
header.top nav a.active { font-weight: 700; text-decoration: underline; }
main { padding: .8rem 1.2rem 3rem; max-width: 1100px; margin: 0 auto; }
a { color: var(--accent); }
:focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; }
.mono, code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85rem; }
section.op { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .9rem; margin: .7rem 0; }
section.op h3 { margin: .2rem 0 .3rem; font-size: 1rem; }
.method { display: inline-block; min-width: 4.2rem; text-align: center; border-radius: 4px;
  padding: .05rem .4rem; margin-right: .4rem; color: #fff; background: var(--accent);
  font-size: .8rem; text-transform: uppercase; }
.method.delete { background: var(--fail); }
.method.get { background: #176b30; }
.muted { color: var(--muted); }
ul.toc { columns: 2; padding-left: 1.2rem; }
ul.schema { margin: .2rem 0; padding-left: 1.2rem; }
dl.responses dt { font-weight: 600; }
dl.responses dd { margin: 0 0 .3rem 1.2rem; }
"""


def api_page(document: Mapping[str, Any], *, explorer: str = "/") -> str:
    """The HTML page describing ``document`` (an OpenAPI 3.1 document); ``explorer`` is
    the explorer's address, linked from the header."""
    info = document.get("info", {})
    title = f"{info.get('title', 'API')} {info.get('version', '')}".strip()
    by_tag: dict[str, list[tuple[str, str, Mapping[str, Any]]]] = {}
    for path, item in document.get("paths", {}).items():
        for method in _METHODS:
            if method in item:
                operation = item[method]
                tag = (operation.get("tags") or ["other"])[0]
                by_tag.setdefault(tag, []).append((method, path, operation))
    schemas: Mapping[str, Any] = document.get("components", {}).get("schemas", {})
    toc = "".join(
        f'<li><a href="#tag-{_id(tag)}">{_e(tag)}</a> ({len(ops)})</li>'
        for tag, ops in by_tag.items()
    )
    body = [
        f"<h1>{_e(title)} API</h1>",
        f"<p>{_e(info.get('description', ''))}</p>",
        '<p>The machine-readable description is <a href="/openapi.json">/openapi.json</a>. '
        "Errors are JSON naming the field; bodies are JSON sent with "
        "<code>Content-Type: application/json</code>.</p>",
        f'<nav aria-label="sections"><ul class="toc">{toc}'
        '<li><a href="#schemas">Schemas</a></li></ul></nav>',
    ]
    for tag, operations in by_tag.items():
        body.append(f'<h2 id="tag-{_id(tag)}">{_e(tag)}</h2>')
        body += (_operation(method, path, op) for method, path, op in operations)
    body.append('<h2 id="schemas">Schemas</h2>')
    for name, schema in schemas.items():
        body.append(
            f'<section class="op" id="schema-{_id(name)}"><h3 class="mono">{_e(name)}</h3>'
            f"{_description(schema)}{_schema(schema, 0)}</section>"
        )
    from benchkit.reports.html import stylesheet

    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{_e(title)} API</title><link rel="icon" href="data:,">'
        f"<style>{stylesheet()}{_STYLE}</style></head>"
        '<body class="bk"><header class="top">'
        f'<a class="brand" href="{_e(explorer)}#/runs">benchkit</a><nav aria-label="main">'
        f'<a href="{_e(explorer)}#/runs">Runs</a>'
        f'<a href="{_e(explorer)}#/start">Start a run</a>'
        '<a class="active" href="#" aria-current="page">API</a></nav></header>'
        f'<main id="main">{"".join(body)}</main></body></html>\n'
    )


def _operation(method: str, path: str, operation: Mapping[str, Any]) -> str:
    anchor = _id(f"{method} {path}")
    out = [
        f'<section class="op" id="op-{anchor}"><h3><span class="method {method}">{method}</span>'
        f'<a class="mono" href="#op-{anchor}">{_e(path)}</a></h3>',
        f"<p>{_e(operation.get('summary', ''))}</p>",
        _description(operation),
    ]
    parameters = operation.get("parameters") or []
    if parameters:
        rows = "".join(
            f"<tr><td class='mono'>{_e(p.get('name', ''))}</td><td>{_e(p.get('in', ''))}</td>"
            f"<td>{'yes' if p.get('required') else 'no'}</td>"
            f"<td>{_type(p.get('schema', {}))}</td><td>{_e(p.get('description', ''))}</td></tr>"
            for p in parameters
        )
        out.append(
            "<h4>Parameters</h4><table><thead><tr><th scope='col'>name</th>"
            "<th scope='col'>in</th><th scope='col'>required</th><th scope='col'>type</th>"
            f"<th scope='col'>meaning</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    request = operation.get("requestBody")
    if request:
        for kind, content in (request.get("content") or {}).items():
            schema = content.get("schema", {})
            out.append(
                f"<h4>Request body <span class='muted mono'>{_e(kind)}</span></h4>"
                f"{_description(request)}{_schema(schema, 0)}"
            )
    responses = operation.get("responses") or {}
    if responses:
        items = []
        for status, response in responses.items():
            shapes = " or ".join(
                f"{_type(c.get('schema', {}))} <span class='muted mono'>{_e(kind)}</span>"
                for kind, c in (response.get("content") or {}).items()
            )
            items.append(
                f"<dt class='mono'>{_e(status)}</dt><dd>{_e(response.get('description', ''))}"
                f"{': ' + shapes if shapes else ''}</dd>"
            )
        out.append(f"<h4>Responses</h4><dl class='responses'>{''.join(items)}</dl>")
    out.append("</section>")
    return "".join(out)


def _description(node: Mapping[str, Any]) -> str:
    text = node.get("description")
    return f"<p>{_e(text)}</p>" if isinstance(text, str) and text else ""


def _schema(schema: Any, depth: int) -> str:
    """A schema as people read it: its type, then its properties one per line (the
    required ones marked), nested up to :data:`_DEPTH`."""
    if not isinstance(schema, Mapping):
        return ""
    variants = _not_null(schema.get("oneOf") or schema.get("anyOf") or [])
    if len(variants) == 1:
        return _schema(variants[0], depth)
    if variants and depth < _DEPTH:
        items = "".join(f"<li>{_type(v)}{_schema(v, depth + 1)}</li>" for v in variants)
        return f"<p>One of:</p><ul class='schema'>{items}</ul>"
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties or depth >= _DEPTH:
        return "" if depth else f"<p>{_type(schema)}</p>"
    required = set(schema.get("required") or ())
    items = "".join(
        f"<li><code>{_e(name)}</code>{' <b>required</b>' if name in required else ''}: "
        f"{_type(sub)}{' — ' + _e(sub['description']) if _described(sub) else ''}"
        f"{_schema(sub, depth + 1)}</li>"
        for name, sub in properties.items()
    )
    return f"<ul class='schema'>{items}</ul>"


def _described(schema: Any) -> bool:
    return isinstance(schema, Mapping) and isinstance(schema.get("description"), str)


def _type(schema: Any) -> str:
    """A schema's type in a few words: a named schema links to its description; a type
    that admits JSON ``null`` reads "(nullable)", as OpenAPI's own word has it."""
    if not isinstance(schema, Mapping):
        return "any"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        return f'<a class="mono" href="#schema-{_id(name)}">{_e(name)}</a>'
    if "const" in schema:
        return f"<code>{_e(json.dumps(schema['const']))}</code>"
    if "enum" in schema:
        return " | ".join(f"<code>{_e(json.dumps(v))}</code>" for v in schema["enum"])
    variants = schema.get("oneOf") or schema.get("anyOf")
    if variants:
        kept = _not_null(variants)
        words = " or ".join(_type(v) for v in kept)
        return words + (" (nullable)" if len(kept) < len(variants) else "")
    kind = schema.get("type")
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        words = " | ".join(_e(str(k)) for k in kinds) or "any"
        return words + (" (nullable)" if len(kinds) < len(kind) else "")
    if isinstance(kind, str):
        return _e(kind)
    return "any"


def _not_null(variants: Any) -> list[Any]:
    """The variants of a ``oneOf`` but ``{"type": "null"}`` (said as "nullable")."""
    return [v for v in variants if not (isinstance(v, Mapping) and v.get("type") == "null")]


def _id(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").lower()


def _e(value: Any) -> str:
    return html.escape(str(value))
