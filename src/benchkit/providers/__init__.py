"""Built-in providers: the systems under test that benchkit knows how to drive.

* :class:`CallableProvider` — a Python function (sync or async);
* :class:`SubprocessProvider` — a program speaking JSON-RPC 2.0 on stdin/stdout;
* :class:`HttpProvider` — an HTTP JSON endpoint (its request shapes: :class:`HttpBody`);
* :class:`McpProvider` — a tool of an MCP server (extra ``benchkit[mcp]``);
* :class:`MockProvider` — an in-memory stand-in for tests;
* :class:`AgentProvider` — a chat model with tools (:class:`AgentTool`, :class:`McpTools`),
  run in a loop until it answers (docs/agents.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr

if TYPE_CHECKING:
    from benchkit.providers._agent import AgentLimits, AgentProvider
    from benchkit.providers._agent_tools import AgentTool, McpTools, agent_tool
    from benchkit.providers._callable import CallableProvider
    from benchkit.providers._http import HttpBody, HttpProvider
    from benchkit.providers._mcp import McpProvider
    from benchkit.providers._mock import MockProvider
    from benchkit.providers._subprocess import SubprocessProvider

__all__ = [
    "agent_tool",
    "AgentLimits",
    "AgentProvider",
    "AgentTool",
    "CallableProvider",
    "HttpBody",
    "HttpProvider",
    "McpProvider",
    "McpTools",
    "MockProvider",
    "SubprocessProvider",
]

_LAZY = {
    "AgentLimits": "benchkit.providers._agent",
    "AgentProvider": "benchkit.providers._agent",
    "AgentTool": "benchkit.providers._agent_tools",
    "McpTools": "benchkit.providers._agent_tools",
    "agent_tool": "benchkit.providers._agent_tools",
    "CallableProvider": "benchkit.providers._callable",
    "HttpBody": "benchkit.providers._http",
    "HttpProvider": "benchkit.providers._http",
    "McpProvider": "benchkit.providers._mcp",
    "MockProvider": "benchkit.providers._mock",
    "SubprocessProvider": "benchkit.providers._subprocess",
}


# Only at run time: a type checker sees the names declared under TYPE_CHECKING above and
# nothing else, so a typo such as `benchkit.Runer` is an error, not Any.
if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _LAZY)
