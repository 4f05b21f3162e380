"""benchkit's own benchmark format: one YAML or JSON file (version ``benchkit: 1``).

The file maps one-to-one onto the core model — a :class:`~benchkit.model.Benchmark`, its
:class:`~benchkit.model.Condition` list and :class:`~benchkit.model.RunOptions` — so that
anything built in code can be written out with :func:`write` and read back with
:func:`load`. The full reference is ``docs/formats/native.md``; the JSON Schema ships as
``benchkit/schemas/native.schema.json``.

    >>> import pathlib, tempfile
    >>> from benchkit.model import Benchmark, Task, EvaluatorSpec
    >>> bench = Benchmark(id="arith", tasks=(Task(id="t1", input="1+1", expected="2"),),
    ...                   evaluators=(EvaluatorSpec("exact"),))
    >>> dump(bench)["evaluators"], dump(bench)["tasks"]
    (['exact'], [{'id': 't1', 'input': '1+1', 'expected': '2'}])
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     suite = load(write(bench, pathlib.Path(tmp) / "benchmark.yaml"))
    >>> [t.id for t in suite.benchmark.iter_tasks()]
    ['t1']

Loading validates the whole document against the schema first (a valid one through
the fast road of ``_fast.py``, the full schema only to explain an error), then checks what a
schema cannot: unique task and condition ids, evaluator / verifier / provider types known
to the registries, bundle directories and ``tasks_file`` that exist inside the
benchmark's directory. Every failure is a :class:`~benchkit.errors.FormatError` naming
the file, line, column and JSON path, with a fix.

This package only re-exports: reading is ``_loader.py``, writing ``_writer.py``, what the
two share (format version, keys, the cattrs converter) ``_convert.py``, the formats
registry's entry ``_format.py``, and the fast road for valid tasks ``_fast.py``.
"""

from typing import TYPE_CHECKING

from benchkit._lazy import lazy_getattr

if TYPE_CHECKING:
    from benchkit.formats.native._convert import FORMAT_VERSION
    from benchkit.formats.native._format import FORMAT, NativeFormat, detect
    from benchkit.formats.native._loader import load, schema
    from benchkit.formats.native._writer import dump, write

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "NativeFormat",
    "detect",
    "dump",
    "load",
    "schema",
    "write",
]

#: Everything above, imported on first use: listing the tools (``--help``) imports
#: this package, and nothing of the format until it is used (#41).
_LAZY = {
    "FORMAT": "benchkit.formats.native._format",
    "FORMAT_VERSION": "benchkit.formats.native._convert",
    "NativeFormat": "benchkit.formats.native._format",
    "detect": "benchkit.formats.native._format",
    "dump": "benchkit.formats.native._writer",
    "load": "benchkit.formats.native._loader",
    "schema": "benchkit.formats.native._loader",
    "write": "benchkit.formats.native._writer",
}

# Only at run time: a type checker sees the names imported under TYPE_CHECKING above.
if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _LAZY)
