"""The tools an agent may call: Python callables, MCP servers, and declarations in files.

A Python function becomes an :class:`AgentTool` with :func:`agent_tool`: its name, the first
paragraph of its docstring as the description, and a JSON Schema derived from its type
annotations (``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``, ``list[...]``,
``tuple[...]``, ``dict[str, ...]``, ``Literal[...]``, unions, ``TypedDict``s and
``Annotated[X, "what it is"]``), each parameter described by its entry in the docstring's
``Args:`` section (Google style), ``:param x:`` lines (reST) or ``Parameters`` section
(NumPy). A signature the schema cannot be derived from (a parameter without an annotation,
``*args``, a class the JSON Schema cannot say) is a :class:`~benchkit.errors.ConfigError`
when the tool is made — so when the suite is built, before any cell runs.

:class:`McpTools` names an MCP server (every tool it lists, or a named subset) through
:class:`~benchkit.providers.McpProvider`; its tools are listed when the agent is entered.

In a benchmark file a tool is declared as ``{python: "tools.py:add"}`` (a file relative to
the benchmark's directory, or ``package.module:add``), optionally with ``name``,
``description``, ``timeout`` or an OpenAI ``function`` block giving the schema, or as
``{mcp: {command: [...] | url: ...}, tools: [names]}``; a bare OpenAI tool schema (``{type:
function, function: {...}}``, as tool-calling datasets write them) declares a tool the model
may call but that nothing runs here (the model is told so). :func:`declared_tools` reads
these.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import json
import os
import re
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import attrs

from benchkit import _threads
from benchkit._public import public
from benchkit.errors import ConfigError, InvocationError
from benchkit.model import Response
from benchkit.transcript import _CURRENT, Recorder

__all__ = ["AgentTool", "McpTools", "agent_tool", "declared_tools", "quiet", "result_text"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@public("benchkit.providers")
@attrs.frozen(eq=False)
class AgentTool:
    """One tool an agent may call: what the model is told (``name``, ``description``, the
    JSON Schema of its ``parameters``) and what runs (``fn``, called with the arguments as
    keywords; a plain ``def`` runs in a worker thread, an ``async def`` on the event loop),
    with its own ``timeout`` in seconds (None: the agent's ``tool_timeout``).

    ``fn`` is None for a tool that is only declared (a schema from a file, with nothing
    behind it here): the model may call it, and is told that it cannot be run.

    Make one from a function with :func:`agent_tool`.

    .. versionadded:: 0.2.0
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    fn: Callable[..., Any] | None = attrs.field(default=None, repr=False)
    timeout: float | None = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ConfigError(
                f"tool name {self.name!r} is not 1 to 64 letters, digits, _ or -",
                fix="name the tool as a chat API accepts it, e.g. `unit_convert`.",
            )
        if not isinstance(self.parameters, Mapping) or self.parameters.get("type") != "object":
            raise ConfigError(
                f"tool {self.name!r}: its parameters must be a JSON Schema of type object",
                fix='give e.g. {"type": "object", "properties": {...}}.',
            )
        if self.timeout is not None and not (
            isinstance(self.timeout, (int, float))
            and not isinstance(self.timeout, bool)
            and 0 < self.timeout <= 86_400
        ):
            raise ConfigError(
                f"tool {self.name!r}: timeout must be seconds > 0 and <= 86,400, got "
                f"{self.timeout!r}",
                fix="give a number of seconds (docs/limits.md).",
            )
        _check_schema(self.name, self.parameters)

    def spec(self) -> dict[str, Any]:
        """The tool as an OpenAI ``tools`` entry."""
        function: dict[str, Any] = {"name": self.name, "parameters": dict(self.parameters)}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    def problem(self, arguments: Mapping[str, Any]) -> str | None:
        """Why ``arguments`` do not fit the tool's schema (one line), or None."""
        validator = _validator(json.dumps(self.parameters, sort_keys=True, default=str))
        error = next(iter(sorted(validator.iter_errors(dict(arguments)), key=_error_key)), None)
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{where + ': ' if where else ''}{error.message}"

    async def run(self, arguments: Mapping[str, Any]) -> Any:
        """Call the tool with ``arguments`` (already checked against its schema)."""
        fn = self.fn
        if fn is None:
            raise InvocationError(
                f"tool {self.name!r} is declared without an implementation here",
                category="tool_error",
                retryable=False,
            )
        if _is_async(fn):
            return await fn(**arguments)
        result = await _threads.run_sync(functools.partial(fn, **arguments))
        if inspect.isawaitable(result):
            result = await result
        return result


def agent_tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> Any:
    """Make ``fn`` an :class:`AgentTool`, its schema derived from its signature and
    docstring (or given as ``parameters``); usable as ``@agent_tool`` or
    ``@agent_tool(name=..., timeout=...)``.

        >>> def add(a: float, b: float = 0.0) -> float:
        ...     '''Add two numbers.
        ...
        ...     Args:
        ...         a: the first number
        ...         b: the second number
        ...     '''
        ...     return a + b
        >>> tool = agent_tool(add)
        >>> tool.parameters["required"], tool.parameters["properties"]["b"]["description"]
        (['a'], 'the second number')

    .. versionadded:: 0.2.0
    """
    if fn is None:
        return functools.partial(
            agent_tool, name=name, description=description, parameters=parameters, timeout=timeout
        )
    if isinstance(fn, AgentTool):
        return fn
    if not callable(fn):
        raise ConfigError(
            f"a tool must be a function, got {type(fn).__name__}",
            fix="give a def or async def with annotated parameters.",
        )
    label = name or getattr(fn, "__name__", None) or type(fn).__name__
    summary, documented = _docstring(fn)
    if parameters is None:
        parameters = _parameters(fn, label, documented)
    return AgentTool(
        name=label,
        description=summary if description is None else description,
        parameters=parameters,
        fn=fn,
        timeout=timeout,
    )


def result_text(value: Any, limit: int) -> str:
    """What the model is told a tool returned: a string as is, anything else as JSON,
    cut to ``limit`` characters with a visible mark."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, Response):
        text = _mcp_text(value)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = str(value)
    if len(text) > limit:
        text = f"{text[:limit]}…[truncated {len(text) - limit} characters]"
    return text


def _mcp_text(response: Response) -> str:
    """The text an MCP tool's result gives the model: its text, else its output as JSON."""
    text = response.metadata.get("text") if response.metadata else None
    if isinstance(text, str) and text:
        return text
    output = response.output
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


# -- MCP ----------------------------------------------------------------------------------


@public("benchkit.providers")
class McpTools:
    """The tools of an MCP server as an agent's tools: every tool it lists, or those named
    in ``tools``. Give ``command`` (a stdio server) or ``url`` (an HTTP one) and any other
    option of :class:`~benchkit.providers.McpProvider` (``env``, ``headers``,
    ``call_timeout``, ...). One session serves every call while the agent is entered.

        >>> calc = McpTools(command="python3 server.py", tools=["add"])   # doctest: +SKIP

    .. versionadded:: 0.2.0
    """

    def __init__(
        self,
        *,
        tools: Sequence[str] | None = None,
        base_dir: Path | None = None,
        **server: Any,
    ) -> None:
        from benchkit.providers._mcp import McpProvider

        if "tool" in server or "arguments" in server or "output" in server:
            raise ConfigError(
                "an MCP server of an agent takes `tools` (the names to offer), not "
                "`tool`, `arguments` or `output`",
                fix="write e.g. {mcp: {command: [python3, server.py]}, tools: [add]}.",
            )
        if tools is not None and (
            isinstance(tools, str) or not all(isinstance(t, str) and t for t in tools)
        ):
            raise ConfigError(
                f"tools must be a list of tool names, got {tools!r}",
                fix="write e.g. tools: [add, convert] (or leave it out for all).",
            )
        self.names = None if tools is None else tuple(tools)
        # The provider's one tool is never called: the agent calls tools by name.
        self.provider = McpProvider(tool="*", base_dir=base_dir, **server)

    def __repr__(self) -> str:
        where = self.provider.url or " ".join(self.provider.argv)
        return f"McpTools({where!r}, tools={list(self.names) if self.names else 'all'})"

    async def list(self) -> list[AgentTool]:
        """The server's tools (the named ones, in that order), each calling the server."""
        listed = await self.provider.list_tools()
        by_name = {tool.name: tool for tool in listed}
        if self.names is not None:
            missing = [n for n in self.names if n not in by_name]
            if missing:
                raise ConfigError(
                    f"the MCP server {self!r} has no tool {', '.join(map(repr, missing))}; it "
                    f"has {', '.join(sorted(by_name)) or 'none'}",
                    fix="name tools the server lists (`benchkit mcp tools` shows them).",
                )
            chosen = [by_name[n] for n in self.names]
        else:
            chosen = listed
        tools = []
        for tool in chosen:
            schema = dict(tool.input_schema or {"type": "object"})
            schema.setdefault("type", "object")
            tools.append(
                AgentTool(
                    name=tool.name,
                    description=tool.description or "",
                    parameters=schema,
                    fn=functools.partial(self._call, tool.name),
                )
            )
        return tools

    async def _call(self, name: str, **arguments: Any) -> Response:
        with quiet("tool_call", "tool_result"):  # the agent records the call itself
            return await self.provider.call(name, dict(arguments))


# -- declarations in files ----------------------------------------------------------------


def declared_tools(
    entries: Sequence[Any], base_dir: Path | None, *, where: str = "tools"
) -> tuple[list[AgentTool], list[McpTools]]:
    """The tools of a ``tools`` list: Python callables and :class:`AgentTool` objects (from
    code), declarations from a file (``{python: ...}``, ``{mcp: ...}``, an OpenAI tool
    schema), and :class:`McpTools`. Raises :class:`ConfigError` naming the entry."""
    if isinstance(entries, (str, Mapping)) or not isinstance(entries, Sequence):
        raise ConfigError(
            f"{where} must be a list of tools, got {type(entries).__name__}",
            fix="write e.g. tools: [{python: tools.py:add}].",
        )
    tools: list[AgentTool] = []
    servers: list[McpTools] = []
    for i, entry in enumerate(entries):
        here = f"{where}[{i}]"
        if isinstance(entry, McpTools):
            servers.append(entry)
        elif isinstance(entry, AgentTool):
            tools.append(entry)
        elif isinstance(entry, Mapping):
            if "mcp" in entry:
                servers.append(_mcp_declaration(entry, base_dir, here))
            else:
                tools.append(_declaration(entry, base_dir, here))
        elif callable(entry):
            tools.append(_named(agent_tool, here, entry))
        else:
            raise ConfigError(
                f"{here} is a {type(entry).__name__}, not a tool",
                fix="give {python: 'file.py:function'}, {mcp: {...}}, an OpenAI tool schema, "
                "or (from code) a function.",
            )
    return tools, servers


def _named(make: Callable[..., AgentTool], where: str, *args: Any, **kwargs: Any) -> AgentTool:
    try:
        return make(*args, **kwargs)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc.message}", fix=exc.fix) from exc


_PYTHON_KEYS = frozenset({"python", "name", "description", "timeout", "type", "function"})


def _declaration(entry: Mapping[str, Any], base_dir: Path | None, where: str) -> AgentTool:
    unknown = sorted(set(entry) - _PYTHON_KEYS)
    if unknown:
        raise ConfigError(
            f"{where} has unknown keys {unknown}",
            fix="a tool is {python: 'file.py:function'} (with name, description, timeout, "
            "function), {mcp: {...}, tools: [...]}, or an OpenAI tool schema.",
        )
    function = entry.get("function")
    if function is not None and not isinstance(function, Mapping):
        raise ConfigError(f"{where}.function must be a mapping", fix="see the OpenAI tools format.")
    reference = entry.get("python")
    if reference is None:
        if function is None:
            raise ConfigError(
                f"{where} names no tool",
                fix="give {python: 'file.py:function'} or an OpenAI {type: function, function: {...}}.",
            )
        return _named(
            AgentTool,
            where,
            name=function.get("name", ""),
            description=str(function.get("description") or ""),
            parameters=function.get("parameters") or {"type": "object", "properties": {}},
        )
    fn = _import_callable(reference, base_dir, where)
    options: dict[str, Any] = {"timeout": entry.get("timeout")}
    name = entry.get("name") or (function or {}).get("name")
    description = entry.get("description") or (function or {}).get("description")
    if name is not None:
        options["name"] = name
    if description is not None:
        options["description"] = str(description)
    if function is not None and function.get("parameters") is not None:
        options["parameters"] = function["parameters"]
    return _named(agent_tool, where, fn, **options)


def _mcp_declaration(entry: Mapping[str, Any], base_dir: Path | None, where: str) -> McpTools:
    unknown = sorted(set(entry) - {"mcp", "tools"})
    server = entry["mcp"]
    if unknown or not isinstance(server, Mapping):
        raise ConfigError(
            f"{where}: an MCP server is {{mcp: {{command: ... | url: ...}}, tools: [names]}}"
            + (f"; unknown keys {unknown}" if unknown else ""),
            fix="put the server's options under `mcp` and the tool names under `tools`.",
        )
    try:
        return McpTools(tools=entry.get("tools"), base_dir=base_dir, **dict(server))
    except TypeError as exc:
        raise ConfigError(f"{where}.mcp: {exc}", fix="see the mcp provider's options.") from exc
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc.message}", fix=exc.fix) from exc


def _import_callable(reference: Any, base_dir: Path | None, where: str) -> Callable[..., Any]:
    """The function a ``python:`` reference names; a file stays inside ``base_dir``."""
    from benchkit.registry import _import_reference, is_reference, reference_file

    if not isinstance(reference, str) or not is_reference(reference):
        raise ConfigError(
            f"{where}.python {reference!r} is not `file.py:function` or `module:function`",
            fix="write e.g. python: tools.py:add (the file beside the benchmark).",
        )
    file = reference_file(reference)
    if file is not None and base_dir is not None and not Path(file).is_absolute():
        anchor = os.path.normpath(base_dir)
        if not Path(os.path.normpath(Path(base_dir) / file)).is_relative_to(anchor):
            raise ConfigError(
                f"{where}.python: {file!r} is outside the benchmark's directory",
                fix="keep tool files inside the benchmark's directory.",
            )
    try:
        found = _import_reference("tool", reference, base_dir)
    except ConfigError:
        raise
    except Exception as exc:  # a RegistryError: where to look is the same advice
        message = getattr(exc, "message", str(exc))
        raise ConfigError(f"{where}: {message}", fix=getattr(exc, "fix", None)) from exc
    if not callable(found):
        raise ConfigError(
            f"{where}.python {reference!r} is a {type(found).__name__}, not a function",
            fix="name a def or async def.",
        )
    return typing.cast(Callable[..., Any], found)


# -- schemas from signatures -------------------------------------------------------------


def _parameters(fn: Callable[..., Any], name: str, documented: Mapping[str, str]) -> dict[str, Any]:
    target = fn if inspect.isroutine(fn) or isinstance(fn, functools.partial) else type(fn).__call__
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"tool {name!r}: its signature cannot be read ({exc})",
            fix="give a Python function, or the tool's `parameters` schema.",
        ) from exc
    try:
        hints = typing.get_type_hints(
            target.func if isinstance(target, functools.partial) else target, include_extras=True
        )
    except Exception as exc:
        raise ConfigError(
            f"tool {name!r}: its annotations cannot be resolved ({type(exc).__name__}: {exc})",
            fix="import the names the annotations use at the top of the tool's module.",
        ) from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigError(
                f"tool {name!r}: parameter *{param.name} has no schema a model can fill",
                fix="name each argument the tool takes, with its type.",
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ConfigError(
                f"tool {name!r}: parameter {param.name!r} is positional-only; a model names "
                "its arguments",
                fix="drop the `/` from the signature.",
            )
        if param.name not in hints:
            raise ConfigError(
                f"tool {name!r}: parameter {param.name!r} has no type annotation, so its JSON "
                "Schema cannot be derived",
                fix=f"annotate it (e.g. `{param.name}: str`), or give the tool's `parameters`.",
            )
        schema = _schema(hints[param.name], f"tool {name!r}: parameter {param.name!r}")
        if param.name in documented and "description" not in schema:
            schema["description"] = documented[param.name]
        if param.default is param.empty:
            required.append(param.name)
        elif _json_scalar(param.default):
            schema["default"] = param.default
        properties[param.name] = schema
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


def _json_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


_SCALARS: Mapping[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_LISTS = (list, set, frozenset, collections.abc.Sequence, collections.abc.Set)
_MAPS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def _schema(tp: Any, where: str) -> dict[str, Any]:
    """The JSON Schema of annotation ``tp``; ConfigError naming ``where`` when none fits."""
    if tp is Any or tp is object:
        return {}
    if tp is None or tp is type(None):
        return {"type": "null"}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    origin, args = get_origin(tp), get_args(tp)
    if origin is typing.Annotated:
        inner = _schema(args[0], where)
        notes = [a for a in args[1:] if isinstance(a, str)]
        if notes:
            inner["description"] = " ".join(notes)
        return inner
    if origin is Literal:
        if not all(_json_scalar(a) for a in args):
            raise _cannot(where, tp, "Literal values must be strings, numbers, booleans or None")
        return {"enum": list(args)}
    if origin is Union or origin is types.UnionType:
        options = [_schema(a, where) for a in args]
        return {"anyOf": options}
    if tp in _LISTS or origin in _LISTS:
        return {"type": "array", **({"items": _schema(args[0], where)} if args else {})}
    if tp is tuple or origin is tuple:
        if not args:
            return {"type": "array"}
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0], where)}
        items = [_schema(a, where) for a in args]
        return {
            "type": "array",
            "prefixItems": items,
            "minItems": len(items),
            "maxItems": len(items),
        }
    if tp in _MAPS or origin in _MAPS:
        if args and args[0] is not str:
            raise _cannot(where, tp, "JSON object keys are strings")
        return {
            "type": "object",
            **({"additionalProperties": _schema(args[1], where)} if args else {}),
        }
    if typing.is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        keys: frozenset[str] = getattr(tp, "__required_keys__", frozenset(hints))
        out: dict[str, Any] = {
            "type": "object",
            "properties": {k: _schema(v, f"{where} key {k!r}") for k, v in hints.items()},
            "additionalProperties": False,
        }
        required = [k for k in hints if k in keys]
        if required:
            out["required"] = required
        return out
    raise _cannot(where, tp, "it is not a JSON type")


def _cannot(where: str, tp: Any, why: str) -> ConfigError:
    shown = getattr(tp, "__name__", None) or repr(tp)
    return ConfigError(
        f"{where}: cannot derive a JSON Schema from {shown} ({why})",
        fix="annotate with str, int, float, bool, list[...], dict[str, ...], Literal[...], a "
        "TypedDict or a union of them — or give the tool's `parameters` schema.",
    )


_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns?|Yields?|Raises|Examples?|Notes?|"
    r"Attributes|See Also|References):?\s*$"
)


def _docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The first paragraph of ``fn``'s docstring, and each parameter's description."""
    doc = inspect.getdoc(fn) or ""
    lines = doc.splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()) or line.lstrip().startswith(":"):
            break
        summary.append(line.strip())
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        rest = re.match(r"^:param\s+(?:[^:]+\s)?(\w+):\s*(.*)$", stripped)
        if rest:
            current = rest.group(1)
            params[current] = rest.group(2).strip()
            section = "rest"
            continue
        if stripped.startswith(":"):  # another reST field (:returns:, :raises ...:)
            section = current = None
            continue
        head = _SECTION.match(stripped)
        if head:
            section = (
                head.group(1)
                if head.group(1) in ("Args", "Arguments", "Parameters", "Params")
                else None
            )
            current = None
            continue
        if section is None or not stripped or set(stripped) == {"-"}:
            if not stripped:
                current = None if section == "rest" else current
            continue
        google = re.match(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", stripped)
        numpy = re.match(r"^(\w+)\s*:\s*[^:]*$", stripped) if section == "Parameters" else None
        indent = len(line) - len(line.lstrip())
        if numpy and indent == 0:
            current = numpy.group(1)
            params[current] = ""
        elif google and (current is None or indent <= _indent_of(lines, current)):
            current = google.group(1)
            params[current] = google.group(2).strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return " ".join(summary), {k: v for k, v in params.items() if v}


def _indent_of(lines: Sequence[str], name: str) -> int:
    for line in lines:
        if re.match(rf"^\s*{re.escape(name)}\s*(\([^)]*\))?\s*:", line):
            return len(line) - len(line.lstrip())
    return 0


def _is_async(fn: Callable[..., Any]) -> bool:
    inner = fn.func if isinstance(fn, functools.partial) else fn
    return inspect.iscoroutinefunction(inner) or inspect.iscoroutinefunction(
        getattr(inner, "__call__", None)  # noqa: B004 - an object with an async __call__
    )


def _check_schema(name: str, schema: Mapping[str, Any]) -> None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(dict(schema))
    except SchemaError as exc:
        raise ConfigError(
            f"tool {name!r}: its parameters are not a valid JSON Schema: {exc.message}",
            fix="fix the schema (JSON Schema draft 2020-12).",
        ) from None


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


def _error_key(error: Any) -> tuple[int, str]:
    return (len(error.absolute_path), error.message)


class _Filtered(Recorder):
    """A cell's recorder that drops some kinds of event (see :func:`quiet`)."""

    __slots__ = ("drop", "parent")

    def __init__(self, parent: Recorder, drop: frozenset[str]) -> None:
        super().__init__(parent.deterministic)
        self.parent = parent
        self.drop = drop

    def add(self, kind: str, title: str, data: Any = None, duration: float | None = None) -> None:
        if kind not in self.drop:
            self.parent.add(kind, title, data, duration)


@contextmanager
def quiet(*kinds: str) -> Iterator[None]:
    """Inside, events of ``kinds`` are not recorded in the cell's transcript: the agent
    records its conversation itself, once, instead of the LLM client's whole request body
    every turn or the MCP client's own tool events (a turn's, a call's)."""
    parent = _CURRENT.get()
    if parent is None:
        yield
        return
    token = _CURRENT.set(_Filtered(parent, frozenset(kinds)))
    try:
        yield
    finally:
        _CURRENT.reset(token)
