"""The local model server's process: llama-cpp-python's server on a socket it inherits.

Run by :class:`benchkit.llm._local.LocalServer` (under benchkit's supervisor, which ends it
when benchkit ends) as ``python -m benchkit.llm._local_server --fd N ARGS``: ``N`` is a
listening TCP socket the parent bound to a loopback port before starting it, so no other
process can take that port in between; ARGS are llama_cpp.server's settings (its
``--host`` and ``--port`` are not used). The API key comes from ``BENCHKIT_LOCAL_KEY``
(never on the command line, where every user can read it).

``--slots K`` loads the model K times in this one process and answers K requests at once,
one per copy. llama-cpp-python's server (0.3.x) has no parallel slots of its own: it holds
one model behind one lock and answers one request at a time, with no continuous batching.
K copies are the honest substitute: each generates in a thread of its own, and llama.cpp
releases the GIL while it computes, so K requests compute at once. The copies share the
weights (the GGUF file is memory-mapped, so its pages are in memory once); each has its own
KV cache (about 190 MB at SmolLM2's 8192 tokens of context).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import AsyncIterator
from typing import Any


def _plain_cpu_buffers() -> None:
    """Load weights into plain CPU buffers, without llama.cpp's "extra" buffer types.

    Those repack weights for AMX and similar units when the CPU says it has them — and
    virtual machines (Firecracker, some CI runners) advertise AMX they cannot run: the
    first matrix product dies of SIGILL. A 135M model needs no repacking to be quick.
    """
    import llama_cpp.llama_cpp as native  # type: ignore[import-not-found,unused-ignore]

    defaults = native.llama_model_default_params

    def params() -> object:
        chosen = defaults()
        if hasattr(chosen, "use_extra_bufts"):
            chosen.use_extra_bufts = False
        return chosen

    native.llama_model_default_params = params


class _Slots:
    """K loaded copies of the model, lent one request at a time: llama_cpp.server's
    ``get_llama_proxy`` (one model behind two locks) replaced by a pool of K."""

    def __init__(self, proxies: list[Any]) -> None:
        import anyio

        self.free = list(proxies)
        self.available = anyio.Semaphore(len(proxies))

    async def lend(self) -> AsyncIterator[Any]:
        async with self.available:
            proxy = self.free.pop()
            try:
                yield proxy
            finally:
                self.free.append(proxy)


def _pooled(app: Any, model: Any, slots: int) -> None:
    """Make ``app`` answer ``slots`` requests at once, each with a copy of ``model``."""
    import llama_cpp.server.app as server_app  # type: ignore[import-not-found,unused-ignore]
    from llama_cpp.server.model import (  # type: ignore[import-not-found,unused-ignore]
        LlamaProxy,
    )

    first = server_app._llama_proxy  # the copy create_app loaded
    pool = _Slots([first, *(LlamaProxy(models=[model]) for _ in range(slots - 1))])
    # The chat and completion routes look the function up at call time; the others took
    # it as a FastAPI dependency when they were declared.
    app.dependency_overrides[server_app.get_llama_proxy] = pool.lend
    server_app.get_llama_proxy = pool.lend


def _app(argv: list[str], key: str, slots: int = 1) -> Any:
    """llama_cpp.server's app for its command-line settings, as its own ``__main__`` builds it,
    answering ``slots`` requests at once."""
    from llama_cpp.server.app import (  # type: ignore[import-not-found,unused-ignore]
        create_app,
    )
    from llama_cpp.server.cli import (  # type: ignore[import-not-found,unused-ignore]
        add_args_from_model,
        parse_model_from_args,
    )
    from llama_cpp.server.settings import (  # type: ignore[import-not-found,unused-ignore]
        ModelSettings,
        ServerSettings,
        Settings,
    )

    parser = argparse.ArgumentParser(prog="benchkit.llm._local_server")
    add_args_from_model(parser, Settings)
    args = parser.parse_args(argv)
    server: Any = parse_model_from_args(ServerSettings, args)
    model: Any = parse_model_from_args(ModelSettings, args)
    if key:
        server.api_key = key
    app = create_app(server_settings=server, model_settings=[model])
    if slots > 1:
        _pooled(app, model, slots)
    return app


def main() -> None:
    import uvicorn

    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--fd", type=int, required=True)
    own.add_argument("--slots", type=int, default=1)
    known, rest = own.parse_known_args(sys.argv[1:])
    sock = socket.socket(fileno=known.fd)
    key = os.environ.pop("BENCHKIT_LOCAL_KEY", "")
    _plain_cpu_buffers()
    app = _app(rest, key, max(1, known.slots))
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
