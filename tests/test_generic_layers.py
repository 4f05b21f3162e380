"""The generic layers name no tool: everything a tool brings reaches them through its
:class:`~benchkit.tools.Tool` (issue #28).

The registry, the CLI and the server (their toolkits, the explorer's static files) and the
reports are searched for every built-in tool's name, title and package — the strings a
tool-specific branch or a hard-wired module path would contain. A new tool then needs no
edit outside its own folder.

The layers below them — memory, providers, runner, executors, store, the model — are
searched too (#41): they may name a tool only in the lines listed, each group with the
reason it is not a tool-specific branch.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchkit.registry import default_registries

from ._support import REPO

SRC = REPO / "src" / "benchkit"

#: The generic layers, as files and directories under src/benchkit: they name no tool at all.
GENERIC = ("registry.py", "tools.py", "cli", "cli_toolkit.py", "serve", "serve_toolkit", "reports")

#: The layers below them (#41): the memory layer, the providers, the runner (all its
#: modules), the executors, the store and the core model. Each names no tool but in the
#: lines listed in :data:`KNOWN`.
LOWER = (
    "memory",
    "providers",
    "runner",
    "executors",
    "store",
    "model.py",
    "protocols.py",
    "results.py",
    "serde.py",
)

#: Every line of the lower layers that names a tool today, exactly (a new one fails, and
#: so does one listed here that has gone). None is a tool-specific branch:
_MEMORYBENCH_VOCABULARY = {
    # The memory layer takes MemoryBench's vocabulary and reproduces its baseline, so a
    # store written against MemoryBench plugs in unchanged; the prose says whose it is.
    "memory/__init__.py": [
        "* :class:`LocalBaseline` — the built-in store: SQLite FTS5 candidates, MemoryBench's BM25;",
        "* :class:`SupermemoryProvider`, :class:`Mem0Provider` — the hosted services MemoryBench",
        "How to plug a store in: ``docs/memory-providers.md``. MemoryBench itself — its",
        "export — is :mod:`benchkit.formats.memorybench`.",
    ],
    "memory/_adapter.py": [
        "``reset``) or MemoryBench's (``add_memory``, ``retrieve_memory``, ``delete_memory``,",
        "metadata}`` (``context``, ``text`` or ``memory`` for the content), of MemoryBench's",
        "or MemoryBench's ``get_capabilities()``); without either, every operation that has a",
        "``run_id``, ``session_id``, ``namespace``) for stores written against MemoryBench.",
    ],
    "memory/_baseline.py": [
        "``sqlite3`` (built with FTS5). Ranking reproduces MemoryBench's LocalBaseline exactly —",
        '"""MemoryBench\'s tokenizer: lower-case, every non-``[A-Za-z0-9_]`` character a space,',
        '"""The built-in memory store: SQLite FTS5 candidates, MemoryBench\'s BM25 ranking.',
    ],
    "memory/_capabilities.py": [
        "``reset``; MemoryBench manifests say ``add_memory``, ``retrieve_memory``,",
        '"""Capabilities and convergence wait from MemoryBench\'s ``ProviderCapabilities`` object.',
    ],
    "memory/_convert.py": [
        "strings, mappings, objects with attributes, or MemoryBench's ``{record: {id, context}}``.",
        "\"string, or a mapping with 'content' (or MemoryBench's {record: {id, context}})\",",
    ],
    # The hosted services' adapters follow MemoryBench's, and keep each scope's data under
    # the tag MemoryBench's use (docs/memory-providers.md): renaming it moves the data.
    "memory/_services.py": [
        '"""Hosted memory services MemoryBench ships adapters for: Supermemory and Mem0.',
        "Each speaks the service's public REST API as MemoryBench's own adapters do",
        "(``providers/supermemory``, ``providers/mem0`` in sdamache/memorybench), with the keys from",
        'return f"memorybench_{digest}"',
    ],
    # The answer generators are the tools' (Tool.answer_generators); the pipeline's
    # docstring gives MemoryBench's case as the example of a loader's own task data.
    "memory/_pipeline.py": [
        "subclass carrying their own per-task data: MemoryBench's ``MemoryCase``).",
    ],
}
KNOWN: dict[str, list[str]] = {
    **_MEMORYBENCH_VOCABULARY,
    # The subprocess and MCP providers speak contracts eval-skills defined; the prose says so.
    "providers/_subprocess.py": [
        '"""A program speaking JSON-RPC 2.0 on stdin/stdout as the system under test (eval-skills)."""',
    ],
    "providers/_mcp.py": [
        'JSON-parsed when possible (eval-skills\' rule); ``"text"`` the joined text as is;',
    ],
    # Two comments giving MemoryBench's case as the example of typed task metadata.
    "store/_keys.py": [
        "# Typed data a loader keeps in a task's metadata (MemoryBench's MemoryCase) keys like",
    ],
    "store/_story.py": [
        "object (typed metadata such as MemoryBench's cases) as cattrs unstructures it, a",
    ],
}


def _in(entries: tuple[str, ...]) -> list[Path]:
    found: list[Path] = []
    for entry in entries:
        path = SRC / entry
        if path.is_file():
            found.append(path)
        else:
            found.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.is_file() and p.suffix in {".py", ".js", ".html", ".css", ".json"}
            )
    return found


def _files() -> list[Path]:
    return _in(GENERIC)


def _tool_strings() -> set[str]:
    strings: set[str] = set()
    for tool in default_registries().all_tools():
        if not default_registries().tools.is_builtin(tool.name):
            continue
        strings.add(tool.package)
        if tool.name != "native":  # "native" is also benchkit's word for its own files
            strings.update({tool.name, tool.name.replace("-", "_"), tool.title})
    return strings


def test_every_built_in_tool_is_searched_for() -> None:
    strings = _tool_strings()
    assert {"codeforge", "skillvault", "memorybench", "eval-skills", "eval_skills"} <= strings
    assert "benchkit.formats.native" in strings
    assert len(_files()) > 10


def _hits(path: Path) -> list[str]:
    """The lines of ``path`` that name a built-in tool (its name, title or package)."""
    pattern = re.compile("|".join(re.escape(s) for s in sorted(_tool_strings())), re.IGNORECASE)
    text = path.read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if pattern.search(line)]


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(SRC)))
def test_a_generic_layer_names_no_tool(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    pattern = re.compile("|".join(re.escape(s) for s in sorted(_tool_strings())), re.IGNORECASE)
    hits = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        if pattern.search(line)
    ]
    assert hits == []


def _lower() -> list[object]:
    return [pytest.param(path, id=str(path.relative_to(SRC))) for path in _in(LOWER)]


@pytest.mark.parametrize("path", _lower())
def test_a_lower_layer_names_a_tool_only_where_listed(path: Path) -> None:
    assert _hits(path) == KNOWN.get(str(path.relative_to(SRC)), [])


def test_every_listed_line_is_in_a_lower_layer() -> None:
    lower = {str(p.relative_to(SRC)) for p in _in(LOWER)}
    assert set(KNOWN) <= lower
    assert len(_in(LOWER)) > 40
