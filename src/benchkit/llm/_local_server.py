"""The local model server's process: ``python -m llama_cpp.server``, tied to its parent.

Run by :class:`benchkit.llm._local.LocalServer` as ``python -m benchkit.llm._local_server
ARGS`` (ARGS are llama_cpp.server's). A thread reads stdin, a pipe from the parent: when it
closes — the parent exited, however it ended, even by SIGKILL — this process exits at once.
The API key comes from ``BENCHKIT_LOCAL_KEY`` (never on the command line, where other
users could read it).
"""

from __future__ import annotations

import os
import runpy
import sys
import threading


def _exit_when_parent_goes() -> None:
    """Exit at once when the parent's pipe closes. Read with ``os.read``, not through
    ``sys.stdin``: a daemon thread blocked in a buffered read holds its lock, and if the
    server ends first (a port taken, a bad model) the interpreter's shutdown dies on that
    lock ("could not acquire lock ... at interpreter shutdown") instead of exiting with
    the server's own error."""
    try:
        while os.read(0, 65536):
            pass
    finally:
        os._exit(0)


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


def main() -> None:
    threading.Thread(target=_exit_when_parent_goes, name="parent-watch", daemon=True).start()
    _plain_cpu_buffers()
    key = os.environ.pop("BENCHKIT_LOCAL_KEY", "")
    sys.argv = ["llama_cpp.server", *sys.argv[1:], *(("--api_key", key) if key else ())]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
