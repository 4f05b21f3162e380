"""The local model server's process: llama-cpp-python's server on a socket it inherits.

Run by :class:`benchkit.llm._local.LocalServer` (under benchkit's supervisor, which ends it
when benchkit ends) as ``python -m benchkit.llm._local_server --fd N ARGS``: ``N`` is a
listening TCP socket the parent bound to a loopback port before starting it, so no other
process can take that port in between; ARGS are llama_cpp.server's settings (its
``--host`` and ``--port`` are not used). The API key comes from ``BENCHKIT_LOCAL_KEY``
(never on the command line, where every user can read it).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
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


def _app(argv: list[str], key: str) -> Any:
    """llama_cpp.server's app for its command-line settings, as its own ``__main__`` builds it."""
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
    return create_app(server_settings=server, model_settings=[model])


def main() -> None:
    import uvicorn

    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--fd", type=int, required=True)
    known, rest = own.parse_known_args(sys.argv[1:])
    sock = socket.socket(fileno=known.fd)
    key = os.environ.pop("BENCHKIT_LOCAL_KEY", "")
    _plain_cpu_buffers()
    app = _app(rest, key)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
