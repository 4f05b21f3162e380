"""A tool served over the Model Context Protocol as the system under test.

Built on the official ``mcp`` SDK (the ``benchkit[mcp]`` extra), which is imported only
when an :class:`McpProvider` is created, so ``import benchkit`` never loads it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc
import attrs

from benchkit import _procs, _secrets, transcript
from benchkit._public import public
from benchkit._reentrant import Reentrant
from benchkit.errors import ConfigError, InvocationError, ProviderError
from benchkit.model import Request, Response, Task, ToolCall
from benchkit.providers._subprocess import (
    _check_positive_int,
    _child_env,
    _resolve_cwd,
    _resolve_executable,
    _signal_name,
    _split_command,
    rlimits,
)

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult, Tool

__all__ = ["McpProvider", "list_tools"]

Transport = Literal["stdio", "streamable-http", "sse"]
OutputMode = Literal["auto", "text", "json", "structured", "content"]
_TRANSPORTS = ("auto", "streamable-http", "sse")
_OUTPUTS = ("auto", "text", "json", "structured", "content")
_ROOTS = ("input", "expected", "metadata", "id", "description", "tags")
_STDERR_TAIL = 4096
_EXCERPT = 200
_CONNECTION_CLOSED = -32000  # JSON-RPC code the SDK gives calls when the transport ends
_REQUEST_TIMEOUT = -32001
_BACKOFF_MAX = 10.0  # seconds: the longest wait before starting a failed server again
_INSTALL_FIX = "install the extra: pip install 'benchkit[mcp]'."


def _require_sdk() -> None:
    """ProviderError naming the extra when the ``mcp`` SDK is not installed."""
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ProviderError(
            f"the MCP provider needs the `mcp` package, which cannot be imported: {exc}",
            fix=_INSTALL_FIX,
        ) from exc


@attrs.define(eq=False)
class _Connection:
    """One live MCP session and what is known about the server behind it."""

    session: ClientSession
    transport: Transport
    closed: anyio.Event = attrs.field(factory=anyio.Event)
    process: anyio.abc.Process | None = None
    stderr: bytearray = attrs.field(factory=bytearray)
    stopped_because: str | None = None  # set when benchkit stopped the server itself
    ended: anyio.Event | None = None  # set when a stdio server's stdout reaches EOF
    counted: bool = False  # its end has been counted against ``reconnects``
    overflow: list[str] = attrs.field(factory=list)  # set when a reply passed the size cap

    def is_dead(self) -> bool:
        """True once the session is closed or the server's stdout has ended."""
        return self.closed.is_set() or (self.ended is not None and self.ended.is_set())

    def describe_end(self) -> str:
        """Why the connection ended, with the server's exit status and stderr tail."""
        if self.stopped_because is not None:
            return f"the MCP server was stopped because {self.stopped_because}"
        process = self.process
        if process is None or process.returncode is None:
            return "the MCP server closed the connection"
        code = process.returncode
        how = f"killed by signal {_signal_name(-code)}" if code < 0 else f"exited with code {code}"
        tail = self.stderr.decode("utf-8", errors="replace").strip()[-_EXCERPT:]
        return f"the MCP server {how}" + (f": {tail}" if tail else "")


@public("benchkit.providers")
class McpProvider(Reentrant):
    """Calls one tool of an MCP server for every cell, over one session per condition.

    Give either ``command`` (a stdio server: a list, or a string split with
    :func:`shlex.split`) or ``url`` (an HTTP server)::

        >>> provider = McpProvider(command="python3 server.py", tool="add",
        ...                        arguments={"a": "input.x", "b": "input.y"})

    **Arguments.** Without ``arguments`` the task input, which must be a JSON object, is
    the tool's arguments. With it, each entry maps a tool argument to a dotted path into the
    task: ``input``, ``input.x``, ``metadata.lang``, ``expected``, ``id``, ``description``
    or ``tags`` (numeric parts index lists). A path that is missing is an error for the cell.

    **Output.** ``output`` picks the Response's ``output``: ``"auto"`` (the default) is the
    structured content when the server sent some, else the text items joined with newlines
    and JSON-parsed when they parse, else the content blocks; ``"json"`` is the joined text,
    JSON-parsed when possible (eval-skills' rule); ``"text"`` the joined text as is;
    ``"structured"`` the structured content (None without); ``"content"`` the content
    blocks as JSON objects. Whatever the mode, ``metadata`` holds ``text``,
    ``structured_content`` and ``content_types``, ``raw`` the whole result, and
    ``tool_calls`` the call itself, so tool-use evaluators can score it.

    **Errors** are :class:`InvocationError` with a category: a result with ``isError`` is
    ``tool_error``; a JSON-RPC error reply (unknown method, invalid params...) or a reply
    that breaks the protocol is ``protocol_error``; neither is retried. A server that cannot
    be started or reached, or that ends the connection (a crash), is ``execution_error``
    (retryable); the next call starts the server again — after ``reconnect_backoff``
    seconds, doubled for each further failure in a row (at most 10 s) — up to ``reconnects``
    times (default 3) over the provider's life (one condition of a run), after which every
    call fails at once with ``execution_error`` saying so.

    **Bounds.** ``connect_timeout`` bounds starting the server and the ``initialize``
    handshake; ``call_timeout`` (default 300 s, None for none) each tool call, whatever the
    cell's timeout: past it the call is a ``timeout`` and the server is presumed hung
    (stopped as below, the next call starts a new one). A stdio server's reply (one JSON-RPC line) longer than ``max_response_bytes``
    (default 10 MB) is not read further: the calls in flight fail with a non-retryable
    ``execution_error`` naming the cap, the server is stopped, and the next call starts a new
    one (this does not use up a reconnect). Over streamable HTTP the same cap applies to each
    reply (a JSON body or one SSE event): the call fails the same way, the session stays.

    **Sessions.** Inside ``async with provider:`` (the Runner enters every provider that
    supports it for the duration of a run) one session serves every call and is opened by
    the first; at most ``max_in_flight`` calls are in flight on it. Outside, each call opens
    and closes a session of its own. The latency recorded is the tool call's own, without
    the time spent starting the server and initializing the session.

    **stdio sandbox** (the rules of :class:`~benchkit.providers.SubprocessProvider`): no
    shell; the server runs under benchkit's supervisor (:mod:`benchkit._procs`: it and
    every process it starts die with benchkit, SIGKILL included) with only PATH, HOME,
    LANG, LC_ALL and TZ from the parent environment (plus ``env``) unless
    ``inherit_env=True``; ``cwd`` is resolved against the benchmark's directory;
    ``memory_mb`` / ``cpu_seconds`` set resource limits (off by default: Node servers
    reserve a large address space). A call that is cancelled — the cell's timeout — means
    the server is presumed hung: every process of it gets SIGTERM, then SIGKILL after
    ``kill_grace`` seconds; calls in flight
    on it fail (retryable) and the next call starts a new server (this does not use up a
    reconnect). stderr is kept (the last 4 KB) to explain a server that exits.

    **HTTP**: ``transport="auto"`` (the default) tries streamable HTTP, then SSE for older
    servers; ``"streamable-http"`` or ``"sse"`` force one. ``headers`` (API keys) are sent
    with every request and never appear in errors or the repr. A timed-out call closes the
    session and the next call opens a new one.
    """

    def __init__(
        self,
        *,
        tool: str,
        command: Sequence[str] | str | None = None,
        url: str | None = None,
        arguments: Mapping[str, str] | None = None,
        output: OutputMode = "auto",
        transport: str = "auto",
        headers: Mapping[str, str] | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = False,
        memory_mb: int | None = None,
        cpu_seconds: int | None = None,
        max_in_flight: int = 4,
        reconnects: int = 3,
        connect_timeout: float = 30.0,
        kill_grace: float = 0.3,
        reconnect_backoff: float = 0.5,
        max_response_bytes: int = 10_000_000,
        call_timeout: float | None = 300.0,
        base_dir: Path | None = None,
    ) -> None:
        _require_sdk()
        if not isinstance(tool, str) or not tool:
            raise ConfigError(f"tool must be a non-empty string, got {tool!r}")
        if (command is None) == (url is None):
            raise ConfigError(
                "give exactly one of `command` (a stdio MCP server) or `url` (an HTTP one)",
                fix="write e.g. command: [python3, server.py] or url: http://127.0.0.1:8000/mcp",
            )
        if output not in _OUTPUTS:
            raise ConfigError(
                f"output {output!r} is unknown", fix=f"use one of {', '.join(_OUTPUTS)}."
            )
        if transport not in _TRANSPORTS:
            raise ConfigError(
                f"transport {transport!r} is unknown", fix=f"use one of {', '.join(_TRANSPORTS)}."
            )
        _check_positive_int("max_in_flight", max_in_flight, optional=False)
        if not isinstance(reconnects, int) or isinstance(reconnects, bool) or reconnects < 0:
            raise ConfigError(f"reconnects must be an integer >= 0, got {reconnects!r}")
        for name, value in (
            ("connect_timeout", connect_timeout),
            ("kill_grace", kill_grace),
            ("reconnect_backoff", reconnect_backoff),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ConfigError(f"{name} must be a number of seconds >= 0, got {value!r}")
        _check_positive_int("max_response_bytes", max_response_bytes, optional=False)
        if call_timeout is not None and (
            isinstance(call_timeout, bool)
            or not isinstance(call_timeout, (int, float))
            or not 0 < call_timeout < math.inf
        ):
            raise ConfigError(
                f"call_timeout must be a number of seconds > 0 or null, got {call_timeout!r}"
            )
        self.tool = tool
        self.arguments = _check_arguments(arguments)
        self.output: OutputMode = output
        self.max_in_flight = max_in_flight
        self.reconnects = reconnects
        self.connect_timeout = float(connect_timeout)
        self.kill_grace = float(kill_grace)
        self.reconnect_backoff = float(reconnect_backoff)
        self.max_response_bytes = max_response_bytes
        self.call_timeout = None if call_timeout is None else float(call_timeout)
        self.url: str | None = None
        self.argv: tuple[str, ...] = ()
        self._headers: dict[str, str] = {}
        self._transports: tuple[Transport, ...] = ("stdio",)
        if command is not None:
            if headers:
                raise ConfigError("headers apply to `url` servers only", fix="remove `headers`.")
            _check_positive_int("memory_mb", memory_mb, optional=True)
            _check_positive_int("cpu_seconds", cpu_seconds, optional=True)
            args = _split_command(command)
            self.cwd: Path | None = _resolve_cwd(cwd, base_dir)
            self.env = _child_env(env, inherit_env)
            executable = _resolve_executable(args[0], self.cwd, self.env.get("PATH"))
            self.argv = (executable, *args[1:])
            self._rlimits = rlimits(memory_mb, cpu_seconds)
        else:
            self.url = _check_url(url)
            self._headers = _check_headers(headers)
            self.cwd = None
            self.env = {}
            self._rlimits = {}
            if transport == "sse":
                self._transports = ("sse",)
            elif transport == "streamable-http":
                self._transports = ("streamable-http",)
            else:
                self._transports = ("streamable-http", "sse")
        self._tg: anyio.abc.TaskGroup | None = None
        self._conn: _Connection | None = None
        self._lock: anyio.Lock | None = None  # made on entry, in the loop that uses them
        self._limiter: anyio.CapacityLimiter | None = None
        self._failures = 0
        self._streak = 0  # failures since the last answer: the backoff's exponent
        self._gave_up: str | None = None

    def __repr__(self) -> str:
        where = " ".join(self.argv) if self.url is None else _redact(self.url)
        return f"McpProvider({where!r}, tool={self.tool!r})"

    # -- lifecycle ----------------------------------------------------------------------

    async def _first_enter(self) -> None:
        """Keep one session for every call until the matching exit (``async with`` is
        re-entrant)."""
        self._lock = anyio.Lock()
        self._limiter = anyio.CapacityLimiter(self.max_in_flight)
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg

    async def _last_exit(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        tg, self._tg = self._tg, None
        conn, self._conn = self._conn, None
        assert tg is not None
        if conn is not None:
            conn.stopped_because = "the provider was closed"
            conn.closed.set()
        # Shield the group's own scope (a new scope here would break LIFO exit) so the
        # hosts close their sessions and stop their servers even when the caller is cancelled.
        tg.cancel_scope.shield = True
        await tg.__aexit__(None, None, None)

    async def aclose(self) -> None:
        """Close the session (the next call opens a new one); the provider stays usable."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.stopped_because = "the provider was closed"
            conn.closed.set()

    # -- calls --------------------------------------------------------------------------

    async def invoke(self, request: Request) -> Response:
        return await self.call(self.tool, self.arguments_for(request.task))

    async def call(self, tool: str, arguments: dict[str, Any]) -> Response:
        """Call ``tool`` (any tool of the server) with ``arguments``: the Response, and the
        errors, of :meth:`invoke` (the ``agent`` provider calls its MCP tools so).

        .. versionadded:: 0.2.0
        """
        if self._tg is None:  # not entered: a session for this call alone
            async with self._open() as conn:
                return await self._call(conn, tool, arguments)
        assert self._limiter is not None
        async with self._limiter:
            conn = await self._connection()
            return await self._call(conn, tool, arguments)

    def arguments_for(self, task: Task) -> dict[str, Any]:
        """The tool arguments for ``task``: its input, or the ``arguments`` mapping applied."""
        if self.arguments is None:
            if not isinstance(task.input, Mapping):
                raise InvocationError(
                    f"task input is {type(task.input).__name__}, but MCP tool arguments are a "
                    "JSON object; give the provider an `arguments` mapping "
                    "(e.g. arguments: {text: input})",
                    retryable=False,
                )
            return dict(task.input)
        return {name: _lookup(task, path) for name, path in self.arguments.items()}

    async def _call(self, conn: _Connection, tool: str, arguments: dict[str, Any]) -> Response:
        from mcp import MCPError

        started = time.perf_counter()
        transcript.record("tool_call", f"MCP {tool}", arguments)
        try:
            with anyio.fail_after(self.call_timeout):
                result = await conn.session.call_tool(tool, arguments)
        except TimeoutError as exc:
            self._stop(conn, f"a call to it took longer than call_timeout={self.call_timeout:g}s")
            raise InvocationError(
                f"tool {tool!r} did not answer within {self.call_timeout:g}s (call_timeout)",
                category="timeout",
            ) from exc
        except anyio.get_cancelled_exc_class():
            self._stop(conn, "a call to it timed out or was cancelled")
            raise
        except MCPError as exc:
            # The SDK's "Connection closed" shares -32000 with servers' own generic errors.
            if conn.overflow:
                raise self._overflowed(conn) from exc
            if exc.code == _CONNECTION_CLOSED and (
                conn.is_dead() or exc.message == "Connection closed"
            ):
                await self._lost(conn)
                raise InvocationError(conn.describe_end(), retryable=True) from exc
            if conn.transport != "stdio" and any(m in exc.message for m in _TOO_LARGE):
                raise InvocationError(
                    f"MCP reply exceeded max_response_bytes={self.max_response_bytes}: "
                    f"{exc.message[:_EXCERPT]}",
                    retryable=False,
                ) from exc
            if exc.code == _REQUEST_TIMEOUT:
                raise InvocationError(
                    f"MCP request timed out: {exc.message}", category="timeout"
                ) from exc
            raise InvocationError(
                f"MCP error {exc.code}: {exc.message}", category="protocol_error", retryable=False
            ) from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            if conn.overflow:
                raise self._overflowed(conn) from exc
            await self._lost(conn)
            raise InvocationError(conn.describe_end(), retryable=True) from exc
        except Exception as exc:  # a reply that breaks the protocol (validation, input-required)
            raise InvocationError(
                f"MCP reply from tool {tool!r} is not usable: {type(exc).__name__}: "
                f"{str(exc)[:_EXCERPT]}",
                category="protocol_error",
                retryable=False,
            ) from exc
        latency_ms = (time.perf_counter() - started) * 1000.0  # the call, not the connect
        self._streak = 0
        if transcript.active():
            transcript.record(
                "tool_result",
                f"MCP {tool}{' (error)' if result.is_error else ''}",
                result.model_dump(mode="json", by_alias=True, exclude_none=True),
                duration=latency_ms / 1000.0,
            )
        return self._response(result, tool, arguments, conn.transport, latency_ms)

    def _response(
        self,
        result: CallToolResult,
        tool: str,
        arguments: dict[str, Any],
        transport: Transport,
        latency_ms: float,
    ) -> Response:
        blocks = [
            b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in result.content
        ]
        text = "\n".join(str(b["text"]) for b in blocks if b.get("type") == "text")
        if result.is_error:
            raise InvocationError(
                f"tool {tool!r} reported an error: {text[:_EXCERPT] or '(no text)'}",
                category="tool_error",
                retryable=False,
            )
        structured = result.structured_content
        output: Any
        if self.output == "text":
            output = text
        elif self.output == "json":
            output = _parse_json(text)
        elif self.output == "structured":
            output = structured
        elif self.output == "content":
            output = blocks
        elif structured is not None:
            output = structured
        elif any(b.get("type") == "text" for b in blocks):
            output = _parse_json(text)
        else:
            output = blocks
        return Response(
            output=output,
            latency_ms=latency_ms,
            tool_calls=(ToolCall(name=tool, arguments=arguments),),
            raw=result.model_dump(mode="json", by_alias=True, exclude_none=True),
            metadata={
                "transport": transport,
                "text": text,
                "structured_content": structured,
                "content_types": [b.get("type") for b in blocks],
            },
        )

    async def list_tools(self) -> list[Tool]:
        """Every tool the server offers (all pages), with its input schema."""
        async with AsyncExitStack() as stack:
            if self._tg is None:
                conn = await stack.enter_async_context(self._open())
            else:
                conn = await self._connection()
            tools: list[Tool] = []
            cursor: str | None = None
            while True:
                from mcp.types import PaginatedRequestParams

                params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
                page = await conn.session.list_tools(params=params)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools

    # -- connections --------------------------------------------------------------------

    async def _connection(self) -> _Connection:
        """The live session, opening one when there is none (one opener at a time)."""
        conn = self._conn
        if conn is not None and not conn.is_dead():
            return conn
        assert self._lock is not None
        async with self._lock:
            conn = self._conn
            if conn is not None and not conn.is_dead():
                return conn
            if conn is not None:
                await self._lost(conn)
            if self._gave_up is not None:
                raise InvocationError(self._gave_up, retryable=False)
            assert self._tg is not None
            if self._streak:  # the server failed: give it a moment before starting it again
                await anyio.sleep(
                    min(_BACKOFF_MAX, self.reconnect_backoff * 2 ** (self._streak - 1))
                )
            try:
                opened: _Connection = await self._tg.start(self._host)
            except InvocationError as exc:
                self._failed(str(exc))
                raise
            self._conn = opened
            return opened

    async def _host(self, *, task_status: anyio.abc.TaskStatus[_Connection]) -> None:
        """Own one session for as long as it lives (a task in the provider's task group).

        Errors before the session is up reach the caller of ``start``; once it is up,
        nothing may escape, or it would cancel the run that entered the provider.
        """
        started = False
        try:
            async with self._open() as conn:
                task_status.started(conn)
                started = True
                await conn.closed.wait()
        except Exception:
            if not started:
                raise

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[_Connection]:
        """Connect and initialize a session over the first transport that works."""
        errors: list[str] = []
        for kind in self._transports:
            entered = False
            try:
                async with AsyncExitStack() as stack:
                    # Entered first, so it also bounds a transport that waits for the server
                    # before ``initialize`` is even sent (SSE's endpoint event); lifted once
                    # the session is up.
                    deadline = stack.enter_context(anyio.CancelScope())
                    if self.connect_timeout:
                        deadline.deadline = anyio.current_time() + self.connect_timeout
                    conn = await self._enter(stack, kind)
                    deadline.deadline = math.inf
                    entered = True
                    # Reconnects try the transport that worked first.
                    self._transports = (kind, *(t for t in self._transports if t != kind))
                    try:
                        yield conn
                    finally:
                        conn.closed.set()
                if not entered:  # the deadline ran out (the scope swallowed its cancellation)
                    errors.append(f"{kind}: {_no_initialize(self.connect_timeout)}")
                    continue
                return
            except Exception as exc:
                if entered:
                    raise
                errors.append(f"{kind}: {_describe(exc)}")
        where = " ".join(self.argv) if self.url is None else _redact(self.url)
        raise InvocationError(f"cannot connect to MCP server {where}: {'; '.join(errors)}")

    async def _enter(self, stack: AsyncExitStack, kind: Transport) -> _Connection:
        from mcp import ClientSession

        holder: dict[str, Any] = {}
        if kind == "stdio":
            streams = await stack.enter_async_context(self._stdio(holder))
        elif kind == "sse":
            from mcp.client.sse import sse_client

            assert self.url is not None
            streams = await stack.enter_async_context(
                sse_client(self.url, headers=self._headers or None, timeout=self.connect_timeout)
            )
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            assert self.url is not None
            client = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=self._headers,
                    timeout=httpx2.Timeout(self.connect_timeout, read=None),
                    follow_redirects=False,
                    transport=_capped_transport(self.max_response_bytes),
                )
            )
            streams = await stack.enter_async_context(
                streamable_http_client(
                    self.url, http_client=client, max_sse_event_size=self.max_response_bytes
                )
            )
        read, write = streams
        session = await stack.enter_async_context(ClientSession(read, write))
        conn = _Connection(session=session, transport=kind, process=holder.get("process"))
        if "stderr" in holder:
            conn.stderr = holder["stderr"]
            conn.ended = holder["ended"]
            conn.overflow = holder["overflow"]
        try:
            with anyio.fail_after(self.connect_timeout or None):
                await session.initialize()
        except TimeoutError as exc:
            raise InvocationError(_no_initialize(self.connect_timeout)) from exc
        except Exception as exc:
            process = conn.process
            if process is not None:  # a server that died while starting: say how
                with anyio.move_on_after(max(self.kill_grace, 0.5)):
                    await process.wait()
                if process.returncode is not None:
                    raise InvocationError(conn.describe_end()) from exc
            raise
        return conn

    @asynccontextmanager
    async def _stdio(self, holder: dict[str, Any]) -> AsyncIterator[tuple[Any, Any]]:
        """The server as a sandboxed child: newline-delimited JSON-RPC on stdin/stdout.

        benchkit's own transport rather than the SDK's ``stdio_client``, which merges in
        more of the parent's environment and hides the process (its pid is needed to kill
        the whole group the moment a call times out, and its stderr explains an exit).
        """
        import mcp.types as types
        from mcp.shared.message import SessionMessage

        try:
            process = await _procs.open_process(
                self.argv,
                limits=self._rlimits,
                grace=self.kill_grace,
                cwd=self.cwd,
                env=self.env,
            )
        except OSError as exc:
            raise InvocationError(f"cannot start {self.argv[0]}: {exc}", retryable=False) from exc
        holder["process"] = process
        stderr = holder["stderr"] = bytearray()
        ended = holder["ended"] = anyio.Event()
        overflow: list[str] = []
        holder["overflow"] = overflow
        limit = self.max_response_bytes
        read_send, read_recv = anyio.create_memory_object_stream[Any](0)
        write_send, write_recv = anyio.create_memory_object_stream[Any](0)
        assert process.stdin is not None and process.stdout is not None
        assert process.stderr is not None
        stdin, stdout, errpipe = process.stdin, process.stdout, process.stderr

        async def read_stdout() -> None:
            # A line is gathered in a bytearray (appending to bytes would copy it whole for
            # every chunk) and given up on once it passes ``limit``: the session then ends.
            pending = bytearray()
            async with read_send:
                with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    async for chunk in stdout:
                        start = 0
                        while (end := chunk.find(b"\n", start)) >= 0:
                            pending += chunk[start:end]
                            start = end + 1
                            if len(pending) > limit:
                                break
                            line = bytes(pending)
                            pending.clear()
                            if not line.strip():
                                continue
                            try:
                                message: Any = SessionMessage(
                                    types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                                )
                            except ValueError as exc:
                                message = exc
                            await read_send.send(message)
                        else:
                            pending += chunk[start:]
                        if len(pending) > limit:
                            overflow.append(f"{len(pending)}+ bytes read")
                            break
            ended.set()

        async def write_stdin() -> None:
            async with write_recv:
                with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    async for item in write_recv:
                        data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await stdin.send(data.encode() + b"\n")

        async def keep_stderr() -> None:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                async for chunk in errpipe:
                    stderr.extend(chunk)
                    del stderr[:-_STDERR_TAIL]

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(read_stdout)
                tg.start_soon(write_stdin)
                tg.start_soon(keep_stderr)
                try:
                    yield read_recv, write_send
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._stop_process(process)
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await process.aclose()

    async def _stop_process(self, process: anyio.abc.Process) -> None:
        """Close stdin, give the server ``kill_grace`` to exit, then end every process of
        it (SIGTERM, SIGKILL after ``kill_grace``)."""
        if process.stdin is not None:
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await process.stdin.aclose()
        if process.returncode is None:
            with anyio.move_on_after(self.kill_grace):
                await process.wait()
        await _procs.stop(process, self.kill_grace)

    def _stop(self, conn: _Connection, reason: str) -> None:
        """Give up on a session the caller can no longer wait for (a hung server)."""
        if conn.closed.is_set():
            return
        conn.counted = True  # benchkit's own doing: not a failure of the server
        conn.stopped_because = reason
        if conn.process is not None and conn.process.returncode is None:
            _procs.terminate(conn.process.pid)
        conn.closed.set()  # the host closes the transport; SIGKILL follows after kill_grace

    async def _lost(self, conn: _Connection) -> None:
        """The session ended without benchkit asking: count it against ``reconnects``.

        Waits a moment for an exiting server to be reaped, so the error can give its exit
        status; calls that see the same loss count it once.
        """
        if conn.counted:
            return
        if conn.overflow:  # an unasked-for reply over the cap: benchkit stops the server
            self._overflowed(conn)
            return
        conn.counted = True
        conn.closed.set()
        if conn.process is not None and conn.process.returncode is None:
            with anyio.move_on_after(max(self.kill_grace, 0.5)):
                await conn.process.wait()
        if conn.stopped_because is None:
            self._failed(conn.describe_end())

    def _overflowed(self, conn: _Connection) -> InvocationError:
        """The error for calls on a session whose server sent a reply over the size cap;
        the server is stopped (it cannot be read further), which uses up no reconnect."""
        message = (
            f"MCP reply exceeded max_response_bytes={self.max_response_bytes} "
            f"({conn.overflow[0]}); the server was stopped"
        )
        self._stop(conn, f"a reply exceeded max_response_bytes={self.max_response_bytes}")
        return InvocationError(message, retryable=False)

    def _failed(self, why: str) -> None:
        self._streak += 1
        self._failures += 1
        if self._failures > self.reconnects:
            self._gave_up = (
                f"MCP server unavailable, not reconnecting after {self._failures} failures "
                f"(reconnects={self.reconnects}); last: {why}"
            )


async def list_tools(provider: McpProvider, *, timeout: float = 30.0) -> list[Tool]:
    """The tools of ``provider``'s server, with a deadline (for ``benchkit mcp tools``)."""
    with anyio.fail_after(timeout):
        return await provider.list_tools()


#: How the SDK reports a streamable-HTTP reply over the cap: an SSE event past
#: ``max_sse_event_size``, or a JSON body stopped by :func:`_capped_transport`.
_TOO_LARGE = ("byte limit", "max_response_bytes=")


def _capped_transport(limit: int) -> Any:
    """An httpx2 transport whose JSON replies to POSTs (one JSON-RPC message each) stop
    with a ``StreamError`` past ``limit`` bytes: the SDK answers the call with a JSON-RPC
    error instead of reading on. (SSE replies are capped by the SDK's own event limit.)"""
    import httpx2

    class TooLarge(httpx2.StreamError):
        pass

    class Capped(httpx2.AsyncByteStream):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __aiter__(self) -> AsyncIterator[bytes]:
            size = 0
            async for chunk in self.inner:
                size += len(chunk)
                if size > limit:
                    raise TooLarge(f"reply exceeded max_response_bytes={limit} ({size}+ bytes)")
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    class Transport(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx2.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            response = await self.inner.handle_async_request(request)
            kind = response.headers.get("content-type", "").lower()
            if request.method == "POST" and kind.startswith("application/json"):
                response.stream = Capped(response.stream)
            return response

        async def aclose(self) -> None:
            await self.inner.aclose()

    return Transport()


def _no_initialize(timeout: float) -> str:
    return f"no answer to initialize within {timeout:g}s (connect_timeout)"


def _check_arguments(arguments: Mapping[str, str] | None) -> dict[str, str] | None:
    if arguments is None:
        return None
    if not isinstance(arguments, Mapping):
        raise ConfigError(
            f"arguments must map tool argument names to task paths, got {arguments!r}",
            fix="write e.g. arguments: {a: input.x, b: input.y}",
        )
    checked: dict[str, str] = {}
    for name, path in arguments.items():
        root = path.split(".", 1)[0] if isinstance(path, str) else None
        if not isinstance(name, str) or root not in _ROOTS:
            raise ConfigError(
                f"arguments.{name}: {path!r} is not a task path",
                fix=f"start the path with one of {', '.join(_ROOTS)} (e.g. input.x).",
            )
        checked[name] = path
    return checked


def _lookup(task: Task, path: str) -> Any:
    root, *parts = path.split(".")
    value: Any = {
        "input": task.input,
        "expected": task.expected,
        "metadata": dict(task.metadata),
        "id": task.id,
        "description": task.description,
        "tags": list(task.tags),
    }[root]
    for part in parts:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif (
            isinstance(value, list) and part.isascii() and part.isdigit() and int(part) < len(value)
        ):
            value = value[int(part)]
        else:
            raise InvocationError(
                f"argument path {path!r} is not in task {task.id!r}", retryable=False
            )
    return value


def _parse_json(text: str) -> Any:
    """``text`` JSON-parsed when it parses (as JavaScript's JSON.parse would), else as is."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return text


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _check_url(url: object) -> str:
    import httpx

    try:
        parsed = httpx.URL(url) if isinstance(url, str) else None
    except httpx.InvalidURL:
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(
            f"url {url!r} is not an http(s) URL",
            fix="write e.g. url: 'http://127.0.0.1:8000/mcp' (streamable HTTP) or '.../sse'.",
        )
    assert isinstance(url, str)
    return url


def _redact(url: str) -> str:
    import httpx

    parsed = httpx.URL(url)
    return str(parsed.copy_with(query=None, fragment=None, username=None, password=None))


def _check_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    checked: dict[str, str] = {}
    for name, value in (headers or {}).items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ConfigError(  # the value may be an API key: name only its type
                f"header {name!r} must be a string, got {type(value).__name__}",
                fix='quote the value, e.g. X-Retries: "3".',
            )
        checked[name] = value
        _secrets.add_header(name, value)  # redacted wherever benchkit shows text
    return checked


def _describe(exc: BaseException) -> str:
    """A one-line account of a connect failure, unwrapping exception groups."""
    inner = getattr(exc, "exceptions", None)  # an exception group of one: unwrap it
    while isinstance(inner, tuple) and len(inner) == 1 and isinstance(inner[0], BaseException):
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    if isinstance(exc, InvocationError):
        return exc.message
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:_EXCERPT] if text else ''}".rstrip(": ")
