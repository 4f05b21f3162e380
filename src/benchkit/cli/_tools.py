"""``python -m benchkit tools``: the tools found, what each brings, and whether it loaded.

    python -m benchkit tools [--check] [-f table|json]

One row per entry point of ``benchkit.tools`` (and tool added in code): its name, version,
distribution, status (``ok``; ``broken``: it cannot be imported, raises, or is not a Tool;
``refused``: it claims a name benchkit or another tool has; ``off``: left out by
``$BENCHKIT_TOOLS``), what it brings, and why it did not load. ``--check`` also imports
every part of every loaded tool and reports those that cannot be imported (status
``broken part``), so a broken plug-in is found before a run needs it. Exit status 0, also
when a tool is broken: the listing is the report (``--check``: 1 when a part is broken).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from benchkit.cli_toolkit import EXIT_FAIL_UNDER, EXIT_OK, console

__all__ = ["add_commands"]


def add_commands(sub: Any) -> None:
    """Add ``tools`` to the ``python -m benchkit`` parser."""
    parser = sub.add_parser(
        "tools",
        help="the installed tools: version, distribution, what each brings, status",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument(
        "--check", action="store_true", help="also import every part of every loaded tool"
    )
    parser.add_argument("-f", "--format", choices=("table", "json"), default="table")
    parser.set_defaults(func=_cmd_tools)


def _part_problems(tool: Any) -> list[str]:
    """The parts of ``tool`` that cannot be imported, each with its error."""
    from benchkit.errors import BenchkitError

    references = [
        *(ref for kind in ("formats", "providers", "evaluators", "verifiers",
                           "memory_providers", "jobs") for ref in getattr(tool, kind).values()),
        *(command.add for command in tool.commands),
        *(ref for ref in (tool.run_hook, tool.routes, tool.report_html, tool.report_markdown)
          if ref is not None),
    ]  # fmt: skip
    problems = []
    for reference in dict.fromkeys(references):
        try:
            tool.load(reference)
        except BenchkitError as exc:
            problems.append(exc.message)
    return problems


def _cmd_tools(args: argparse.Namespace) -> int:
    from benchkit.registry import default_registries

    rows: list[dict[str, Any]] = []
    broken_parts = False
    for record in default_registries().tools.records():
        tool = record.tool
        status: str = record.status
        problem = record.problem
        if args.check and tool is not None and record.status == "ok":
            found = _part_problems(tool)
            if found:
                status, problem, broken_parts = "broken part", "; ".join(found), True
        rows.append(
            {
                "name": record.name,
                "title": tool.title if tool is not None else None,
                "version": record.version,
                "distribution": record.distribution,
                "builtin": record.builtin,
                "status": status,
                "parts": tool.parts() if tool is not None else [],
                "problem": problem,
            }
        )
    code = EXIT_FAIL_UNDER if broken_parts else EXIT_OK
    if args.format == "json":
        sys.stdout.write(json.dumps({"tools": rows}, indent=2, ensure_ascii=False) + "\n")
        return code
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="benchkit tools", title_justify="left")
    for column in ("name", "version", "distribution", "status", "parts"):
        table.add_column(column)
    for row in rows:
        distribution = "benchkit (built in)" if row["builtin"] else row["distribution"]
        table.add_row(
            escape(row["name"]),
            escape(row["version"] or ""),
            escape(distribution or "added in code"),
            escape(row["status"]),
            escape("; ".join(row["parts"])),
        )
    out = console(sys.stdout)
    out.print(table)
    for row in rows:
        if row["problem"]:
            out.print(
                f"[yellow]{escape(row['name'])}[/] ({row['status']}): {escape(row['problem'])}"
            )
    return code
