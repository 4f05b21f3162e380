"""The sandbox: where benchkit runs code it did not write, and nowhere else.

Every evaluator that executes what a model wrote (``code_tests``, CodeForge's agent tasks,
skillvault's ``command`` verifier given the model's output) runs it through one
:class:`Sandbox`: a fresh temporary directory per execution, removed afterwards; limits on
CPU seconds, wall-clock seconds, memory, processes, open files, file size and output; an
environment built from an allow-list; on Linux, new namespaces — a read-only file system
but the working directory, no network, its own PID namespace so that nothing it starts
outlives it — and, where available, the same interface in a container (``docker`` /
``podman``). Every end is a categorised :class:`Execution`, never an exception::

    import anyio
    from benchkit.sandbox import Limits, Sandbox

    sandbox = Sandbox(Limits(cpu_seconds=2, wall_seconds=5, memory_mb=256))
    result = anyio.run(lambda: sandbox.run([sandbox.python, "-c", "print(6 * 7)"]))
    print(result.outcome, result.stdout)        # passed 42

docs/code.md says what is isolated, and what is not, on each platform.

.. versionadded:: 0.2.0
"""

from benchkit.sandbox._sandbox import (
    DEFAULT_PASS_ENV,
    OUTCOMES,
    Execution,
    Isolation,
    Limits,
    Outcome,
    Sandbox,
)

__all__ = [
    "DEFAULT_PASS_ENV",
    "OUTCOMES",
    "Execution",
    "Isolation",
    "Limits",
    "Outcome",
    "Sandbox",
]
