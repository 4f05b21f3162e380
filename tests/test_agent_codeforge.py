"""CodeForge tool-calling datasets whose tools run: python: and mcp: declarations make the
model an agent, and tool_correctness scores the whole trajectory."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import benchkit
from benchkit.errors import FormatError
from benchkit.formats.codeforge import codeforge_suite, load

from ._llm_server import FakeOpenAI, Reply
from .conformance._corpus import require_corpus

TOOLS = '''
def read_file(path: str) -> str:
    """Read a file of the pretend project."""
    return {"config.yaml": "debug: true"}[path]


def write_file(path: str, content: str) -> str:
    """Write a file of the pretend project."""
    return f"wrote {len(content)} characters to {path}"
'''

DATASET = """\
name: tool-use-agent
description: Tool-use tasks whose tools run
tasks:
  - id: tu-1
    name: Read then write
    input: "Read config.yaml, then write a summary to summary.txt."
    expected_output: "Wrote the summary."
    tools:
      - {python: "tools.py:read_file"}
      - type: function
        function:
          name: write_file
          description: Write a file
          parameters:
            type: object
            properties: {path: {type: string}, content: {type: string}}
            required: [path, content]
        python: "tools.py:write_file"
    expected_tools:
      - {name: read_file, args: '{"path": "config.yaml"}'}
      - {name: write_file, args: '{"path": "summary.txt", "content": "debug is on"}'}
"""


def test_a_dataset_with_running_tools_is_played_by_the_agent(
    tmp_path: Path, llm_server: FakeOpenAI
) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "agent.yaml").write_text(DATASET)
    llm_server.queue(
        Reply.tools({"name": "read_file", "arguments": {"path": "config.yaml"}}),
        Reply.tools(
            {"name": "write_file", "arguments": {"path": "summary.txt", "content": "debug is on"}}
        ),
        Reply.text("Wrote the summary."),
    )
    suite = codeforge_suite(
        tmp_path / "agent.yaml",
        model="fake-model",
        base_url=llm_server.url,
        api_key_env=[],
        metrics=["tool_correctness"],
        cache=False,
    )
    assert suite.conditions[0].provider.type == "agent"  # type: ignore[union-attr]
    cell = benchkit.run(suite, store=False).cells[0]
    assert cell.status == "pass", (cell.error, cell.scores)
    assert [c.name for c in cell.response.tool_calls] == ["read_file", "write_file"]  # type: ignore[union-attr]
    told = [m["content"] for m in llm_server.requests[1].body["messages"] if m["role"] == "tool"]
    assert told == ["debug: true"]


def test_schema_only_tools_stay_with_the_chat_provider() -> None:
    dataset = require_corpus() / "codeforge" / "tool-use-basic.yaml"
    suite = codeforge_suite(
        dataset, model="m", base_url="http://127.0.0.1:9/v1", metrics=["tool_correctness"]
    )
    assert suite.conditions[0].provider.type == "chat"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        ('{python: "missing.py:read"}', "no tool file 'missing.py' beside the dataset"),
        ('{python: "../tools.py:read"}', "outside the dataset's directory"),
        ('{python: "no colon"}', "does not match"),
    ],
)
def test_a_bad_tool_declaration_is_an_error_at_its_line(
    tmp_path: Path, tool: str, message: str
) -> None:
    (tmp_path / "bad.yaml").write_text(
        textwrap.dedent(
            f"""\
            name: bad
            tasks:
              - id: t
                name: t
                input: x
                expected_output: y
                tools:
                  - {tool}
            """
        )
    )
    with pytest.raises(FormatError, match=message) as caught:
        load(tmp_path / "bad.yaml")
    assert caught.value.line == 8
