"""``python -m benchkit mcp tools``: list an MCP server's tools, to write a benchmark against it.

    python -m benchkit mcp tools --command "python3 server.py"
    python -m benchkit mcp tools --url http://127.0.0.1:8000/mcp --json

Prints each tool's name, description and input schema (``--json``: the whole list, with
output schemas). A server that cannot be started or reached exits 2 with one paragraph.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchkit._limits import MAX_TIMEOUT_S
from benchkit.cli_toolkit import bounded
from benchkit.errors import ConfigError, InvocationError, ProviderError

__all__ = ["add_commands"]


def add_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add ``mcp tools`` to ``python -m benchkit``."""
    parser = subparsers.add_parser(
        "mcp",
        help="inspect MCP servers (list their tools)",
        description="Inspect a Model Context Protocol server (needs benchkit[mcp]).",
    )
    sub = parser.add_subparsers(dest="mcp_command", required=True, parser_class=type(parser))
    tools = sub.add_parser(
        "tools",
        help="list a server's tools with their input schemas",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    where = tools.add_mutually_exclusive_group(required=True)
    where.add_argument("--command", metavar="CMD", help='a stdio server, e.g. "python3 server.py"')
    where.add_argument("--url", metavar="URL", help="an HTTP server (streamable HTTP or SSE)")
    tools.add_argument(
        "--transport",
        choices=("auto", "streamable-http", "sse"),
        default="auto",
        help="for --url: auto tries streamable HTTP, then SSE",
    )
    tools.add_argument(
        "--header", action="append", default=[], metavar="NAME=VALUE", help="HTTP header (repeat)"
    )
    tools.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="server env (repeat)"
    )
    tools.add_argument("--cwd", type=Path, metavar="DIR", help="the stdio server's directory")
    tools.add_argument(
        "--timeout",
        type=bounded(float, 0, MAX_TIMEOUT_S, above=True),
        default=30.0,
        metavar="SECONDS",
        help="default: 30",
    )
    tools.add_argument("--json", action="store_true", help="print the tools as JSON")
    tools.set_defaults(func=_cmd_tools)


def _pairs(values: list[str], option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name:
            raise ConfigError(f"{option} {value!r} is not NAME=VALUE", fix=f"write {option} A=b.")
        pairs[name] = text
    return pairs


def _cmd_tools(args: argparse.Namespace) -> int:
    import anyio

    from benchkit.providers._mcp import McpProvider, list_tools

    options: dict[str, Any] = {"tool": "(listing)", "connect_timeout": args.timeout}
    if args.command is not None:
        options.update(command=args.command, env=_pairs(args.env, "--env"))
        if args.cwd is not None:
            options["cwd"] = str(args.cwd.resolve())
    else:
        options.update(
            url=args.url, transport=args.transport, headers=_pairs(args.header, "--header")
        )
    provider = McpProvider(**options)
    try:
        found = anyio.run(lambda: list_tools(provider, timeout=args.timeout))
    except InvocationError as exc:
        raise ProviderError(exc.message, fix="check the command or URL.") from exc
    except TimeoutError as exc:
        raise ProviderError(
            f"the server listed no tools within {args.timeout:g}s", fix="raise --timeout."
        ) from exc
    out = sys.stdout
    if args.json:
        dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in found]
        out.write(json.dumps(dumped, indent=2, ensure_ascii=False) + "\n")
        return 0
    if not found:
        out.write("(the server offers no tools)\n")
    for tool in found:
        summary = (tool.description or "").strip().splitlines()
        out.write(f"{tool.name}" + (f" — {summary[0]}" if summary else "") + "\n")
        schema = json.dumps(tool.input_schema, indent=2, ensure_ascii=False)
        out.write("  input schema: " + schema.replace("\n", "\n  ") + "\n\n")
    return 0
