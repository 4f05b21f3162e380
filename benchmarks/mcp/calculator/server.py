"""The example calculator skill served over MCP (stdio): one tool, ``calculate``.

It answers exactly what ``benchmarks/skills/calculator`` answers — the arithmetic and the
string operations are that skill's own code, imported from its directory — but over the
Model Context Protocol, so the two run side by side::

    python -m benchkit eval --skills benchmarks/skills/calculator benchmarks/mcp/calculator \\
        --benchmark coding-easy

The reply is one text item holding ``{"result": "<value>"}`` as JSON (what eval-skills'
MCP adapter JSON-parses); a request it cannot answer is a tool error. Needs the ``mcp``
package (``pip install 'benchkit[mcp]'``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "skills" / "calculator"))
import skill  # noqa: E402  (the subprocess calculator's module, found through the path above)

server = MCPServer("benchkit-calculator", log_level="WARNING")


@server.tool(structured_output=False)
def calculate(
    expression: str | None = None, operation: str | None = None, input: str | None = None
) -> str:
    """Evaluate ``expression`` (arithmetic, or ``N!``), or apply ``operation``
    (``reverse`` or ``is_palindrome``) to ``input``."""
    params = {
        key: value
        for key, value in (("expression", expression), ("operation", operation), ("input", input))
        if value is not None
    }
    try:
        return json.dumps({"result": skill.invoke(params)})
    except skill.SkillError as exc:
        raise ToolError(str(exc)) from None


if __name__ == "__main__":
    server.run("stdio")
