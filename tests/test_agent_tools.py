"""An agent's tools: JSON Schemas derived from typed Python functions (and the ones that
cannot be), declarations in files, and the tools of a real MCP server written with the SDK,
called by the agent loop against a scripted model."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from types import GenericAlias
from typing import Annotated, Any, Literal, TypedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import benchkit
from benchkit import Benchmark, CellResult, Condition, EvaluatorSpec, ProviderSpec, Suite, Task
from benchkit.errors import ConfigError, FormatError
from benchkit.providers import AgentProvider, AgentTool, McpTools, agent_tool
from benchkit.providers._agent_tools import declared_tools, result_text
from benchkit.trajectory import Trajectory

from ._llm_server import FakeOpenAI, Reply

SERVER = Path(__file__).parent / "mcp_servers" / "tools_server.py"
PY = sys.executable


class Address(TypedDict):
    street: str
    number: int


@pytest.mark.parametrize(
    ("annotation", "schema"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (Any, {}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (tuple[str, ...], {"type": "array", "items": {"type": "string"}}),
        (
            tuple[str, int],
            {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
        (Literal["km", "mi"], {"enum": ["km", "mi"]}),
        (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        (Annotated[float, "in metres"], {"type": "number", "description": "in metres"}),
        (
            Address,
            {
                "type": "object",
                "properties": {"street": {"type": "string"}, "number": {"type": "integer"}},
                "additionalProperties": False,
                "required": ["street", "number"],
            },
        ),
    ],
)
def test_a_schema_is_derived_from_each_annotation(annotation: Any, schema: dict[str, Any]) -> None:
    def fn(x: Any) -> None:
        """Do nothing."""

    fn.__annotations__ = {"x": annotation, "return": None}
    derived = agent_tool(fn).parameters
    assert derived["properties"]["x"] == schema
    assert derived["required"] == ["x"] and derived["additionalProperties"] is False


def google(count: int, unit: str = "km") -> str:
    """Measure something.

    Longer text that is not the summary.

    Args:
        count (int): how many,
            over two lines
        unit: the unit
    """
    return ""


def rest(count: int) -> str:
    """Measure something.

    :param count: how many
    :returns: nothing
    """
    return ""


def numpy(count: int) -> str:
    """Measure something.

    Parameters
    ----------
    count : int
        how many
    """
    return ""


@pytest.mark.parametrize("fn", [google, rest, numpy])
def test_descriptions_come_from_each_docstring_style(fn: Any) -> None:
    tool = agent_tool(fn)
    assert tool.description == "Measure something."
    described = tool.parameters["properties"]["count"]["description"]
    assert described in ("how many", "how many, over two lines")
    if fn is google:
        assert described == "how many, over two lines"
        assert tool.parameters["properties"]["unit"] == {
            "type": "string",
            "description": "the unit",
            "default": "km",
        }


# A type, and values of it, drawn together: the derived schema accepts the values.
_SCALARS: list[tuple[Any, st.SearchStrategy[Any]]] = [
    (str, st.text(max_size=5)),
    (int, st.integers()),
    (float, st.floats(allow_nan=False, allow_infinity=False)),
    (bool, st.booleans()),
]


def _typed(depth: int = 0) -> st.SearchStrategy[tuple[Any, st.SearchStrategy[Any]]]:
    leaves = st.sampled_from(_SCALARS)
    if depth >= 2:
        return leaves
    inner = st.deferred(lambda: _typed(depth + 1))
    return st.one_of(
        leaves,
        inner.map(lambda t: (GenericAlias(list, (t[0],)), st.lists(t[1], max_size=3))),
        inner.map(
            lambda t: (
                GenericAlias(dict, (str, t[0])),
                st.dictionaries(st.text(max_size=3), t[1], max_size=3),
            )
        ),
        inner.map(lambda t: (t[0] | None, st.one_of(st.none(), t[1]))),
    )


@given(st.data())
def test_derived_schemas_accept_the_values_of_their_types(data: st.DataObject) -> None:
    annotation, values = data.draw(_typed())

    def fn(x: Any) -> None:
        """Take x."""

    fn.__annotations__ = {"x": annotation}
    schema = agent_tool(fn).parameters
    value = data.draw(values)
    assert not list(Draft202012Validator(schema).iter_errors({"x": value}))


def test_a_wrong_value_fails_the_schema() -> None:
    tool = agent_tool(google)
    assert tool.problem({"count": 3}) is None
    assert tool.problem({"count": "3"}) == "count: '3' is not of type 'integer'"
    assert tool.problem({"count": 3, "colour": "red"}) is not None


def test_tool_names_and_schemas_are_checked_when_made() -> None:
    with pytest.raises(ConfigError, match="is not 1 to 64 letters"):
        AgentTool("two words", "", {"type": "object"})
    with pytest.raises(ConfigError, match="must be a JSON Schema of type object"):
        AgentTool("t", "", {"type": "string"})
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        AgentTool("t", "", {"type": "object", "properties": {"x": {"type": "nonsense"}}})


def test_results_are_text_cut_with_a_mark() -> None:
    assert result_text("abc", 10) == "abc"
    assert result_text({"a": [1, 2]}, 100) == '{"a": [1, 2]}'
    assert result_text("x" * 30, 10) == "x" * 10 + "…[truncated 20 characters]"


# -- declarations in files -----------------------------------------------------------------

TOOLS_PY = '''
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


def untyped(text):
    return text
'''


def test_file_declarations_resolve_against_the_benchmark_directory(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    tools, servers = declared_tools(
        [
            {"python": "tools.py:shout"},
            {"python": "tools.py:shout", "name": "yell", "description": "Louder."},
            {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}},
        ],
        tmp_path,
    )
    assert [t.name for t in tools] == ["shout", "yell", "search"]
    assert tools[1].description == "Louder." and tools[2].fn is None and servers == []


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"python": "tools.py:untyped"}, r"tools\[0\]: tool 'untyped': parameter 'text' has no"),
        ({"python": "tools.py:missing"}, r"tools\[0\]: .*has no attribute 'missing'"),
        ({"python": "../elsewhere.py:shout"}, "outside the benchmark's directory"),
        ({"python": "no-colon"}, "is not `file.py:function`"),
        ({"pyhton": "tools.py:shout"}, "unknown keys"),
        ({"mcp": {"command": [PY, "x.py"]}, "tool": "add"}, "unknown keys"),
        ({"mcp": {"command": [PY, "x.py"], "tool": "add"}}, "takes `tools`"),
    ],
)
def test_bad_declarations_name_the_entry(tmp_path: Path, entry: Any, message: str) -> None:
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    with pytest.raises(ConfigError, match=message):
        declared_tools([entry], tmp_path)


def test_a_run_from_a_spec_checks_the_tools_before_any_cell(
    tmp_path: Path, llm_server: FakeOpenAI
) -> None:
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    options = {"model": "m", "base_url": llm_server.url, "api_key_env": [], "cache": False}
    suite = Suite(
        Benchmark("b", tasks=[Task("t", input="hi")]),
        conditions=[
            Condition(
                "a", ProviderSpec("agent", {**options, "tools": [{"python": "tools.py:untyped"}]})
            )
        ],
        base_dir=tmp_path,
    )
    with pytest.raises(ConfigError, match="parameter 'text' has no type annotation"):
        benchkit.run(suite, store=False)
    assert llm_server.requests == []


def test_a_declared_tool_without_code_is_told_to_the_model(
    tmp_path: Path, llm_server: FakeOpenAI
) -> None:
    """A task's own tools (CodeForge's ``{messages, tools}`` input): one with code runs, one
    that is only a schema is answered with an error the model reads."""
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    task_input = {
        "messages": [{"role": "user", "content": "shout hi, then search"}],
        "tools": [
            {"python": "tools.py:shout"},
            {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}},
        ],
    }
    llm_server.queue(
        Reply.tools({"name": "shout", "arguments": {"text": "hi"}}, {"name": "search"}),
        Reply.text("HI"),
    )
    provider = AgentProvider(
        model="m", base_url=llm_server.url, api_key_env=[], cache=False, base_dir=tmp_path
    )
    cell = run(provider, Task("t", input=task_input, expected="HI"))
    assert cell.status == "pass", cell.error
    told = [m["content"] for m in llm_server.requests[1].body["messages"] if m["role"] == "tool"]
    assert told == ["HI", "error: tool 'search' is declared without an implementation here"]
    sent = {t["function"]["name"] for t in llm_server.requests[0].body["tools"]}
    assert sent == {"shout", "search"}


def run(provider: AgentProvider, task: Task) -> CellResult:
    suite = Suite(
        Benchmark("b", tasks=[task], evaluators=[EvaluatorSpec("exact")]),
        conditions=[Condition("agent", provider)],
    )
    return benchkit.run(suite, store=False).cells[0]


# -- a real MCP server ---------------------------------------------------------------------


def mcp_agent(server: FakeOpenAI, **options: Any) -> AgentProvider:
    return AgentProvider(
        model="m",
        base_url=server.url,
        api_key_env=[],
        cache=False,
        tools=[McpTools(command=[PY, str(SERVER)], tools=["add", "echo", "fail"])],
        **options,
    )


def test_mcp_tools_are_listed_and_called_over_one_session(llm_server: FakeOpenAI) -> None:
    llm_server.queue(
        Reply.tools({"name": "add", "arguments": {"a": 2, "b": 3}}),
        Reply.tools(
            {"name": "echo", "arguments": {"text": "sum"}},
            {"name": "fail", "arguments": {"message": "no"}},
        ),
        Reply.text("5"),
    )
    cell = run(mcp_agent(llm_server), Task("t", input="2 + 3?", expected="5"))
    assert cell.status == "pass", cell.error
    sent = llm_server.requests[0].body["tools"]
    assert [t["function"]["name"] for t in sent] == ["add", "echo", "fail"]
    assert sent[0]["function"]["parameters"]["properties"]["a"]["type"] == "integer"
    messages = llm_server.requests[2].body["messages"]
    told = [m["content"] for m in messages if m["role"] == "tool"]
    assert json.loads(told[0]) == {"sum": 5}  # the structured result, as the server wrote it
    assert told[1] == "sum"
    assert told[2].startswith("error: tool 'fail' reported an error:") and "refused: no" in told[2]
    assert cell.response is not None
    steps = Trajectory.of(cell.response).tool_steps()
    assert [s.name for s in steps] == ["add", "echo", "fail"] and steps[2].error
    assert cell.transcript is not None
    titles = [e.title for e in cell.transcript.events if e.kind in ("tool_call", "tool_result")]
    assert not [t for t in titles if t.startswith("MCP ")], "the agent records each call once"


@pytest.mark.slow
def test_an_mcp_tool_the_server_lacks_stops_the_run(llm_server: FakeOpenAI) -> None:
    provider = AgentProvider(
        model="m",
        base_url=llm_server.url,
        api_key_env=[],
        tools=[McpTools(command=[PY, str(SERVER)], tools=["add", "multiply"])],
    )
    with pytest.raises(ConfigError, match=r"has no tool 'multiply'; it has .*add"):
        run(provider, Task("t", input="x"))
    assert llm_server.requests == []


@pytest.mark.slow
def test_mcp_servers_declared_in_a_file(tmp_path: Path, llm_server: FakeOpenAI) -> None:
    bench = tmp_path / "bench.yaml"
    bench.write_text(
        textwrap.dedent(
            f"""\
            benchkit: 1
            id: mcp-agent
            evaluators: [exact]
            conditions:
              - id: agent
                provider:
                  type: agent
                  model: m
                  base_url: {llm_server.url}
                  api_key_env: []
                  cache: false
                  limits: {{turns: 4}}
                  tools:
                    - mcp: {{command: [{PY}, {SERVER}]}}
                      tools: [add]
            tasks:
              - {{id: t, input: "2 + 3?", expected: "5"}}
            """
        )
    )
    llm_server.queue(Reply.tools({"name": "add", "arguments": {"a": 2, "b": 3}}), Reply.text("5"))
    result = benchkit.run(benchkit.load(bench), store=False)
    assert result.cells[0].status == "pass", result.cells[0].error


@pytest.mark.parametrize(
    ("provider", "message"),
    [
        ("{type: agent, limits: {tunrs: 3}}", "limits.tunrs: unknown key `tunrs`"),
        ("{type: agent, limits: {turns: 1e9}}", "limits.turns"),
        ("{type: agent, tools: [{pyhton: t.py:f}]}", "tools[0]"),
        ("{type: agent, on_tool_error: ignore}", "on_tool_error"),
        ("{type: traced, provider: {type: mock}, prot: 4318}", "unknown key `prot`"),
    ],
)
def test_a_bad_agent_or_traced_spec_is_an_error_at_its_line(
    tmp_path: Path, provider: str, message: str
) -> None:
    bench = tmp_path / "b.yaml"
    bench.write_text(
        f"benchkit: 1\nid: b\nconditions:\n  - id: a\n    provider: {provider}\ntasks:\n  - {{id: t}}\n"
    )
    with pytest.raises(FormatError) as caught:
        benchkit.load(bench)
    assert caught.value.line == 5 and message in str(caught.value)
