"""A Python callable as the system under test."""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchkit import _threads
from benchkit.errors import ConfigError
from benchkit.model import Request, Response

__all__ = ["CallableProvider"]


class CallableProvider:
    """Calls ``fn(input)`` — or ``fn(request)`` with ``pass_request=True`` — per cell.

    ``fn`` may be sync or async and may return a :class:`Response` or any JSON value (taken
    as the output). A sync function runs in a worker thread (at most the run's concurrency
    at once), so a blocking call — ``time.sleep``, a synchronous HTTP client — neither
    serialises the run nor escapes its timeout or Ctrl-C: at the deadline the cell is a
    ``timeout`` and the call is abandoned (it finishes in its daemon thread, its result
    dropped). ``thread=False`` calls it on the event loop instead, for functions known to
    return at once (saves the thread hop, about 20 µs a call).

        >>> provider = CallableProvider(str.upper)

    From a benchmark file, name the function as ``callable: "package.module:function"`` or
    ``file: provider.py`` plus ``function: name`` (the file resolved against the benchmark's
    directory).
    """

    def __init__(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        pass_request: bool = False,
        thread: bool = True,
        callable: str | None = None,
        file: str | None = None,
        function: str | None = None,
        base_dir: Path | None = None,
    ) -> None:
        if fn is None:
            fn = _resolve(callable, file, function, base_dir)
        self.fn = fn
        self.pass_request = pass_request
        self.thread = thread
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
        )

    def __repr__(self) -> str:
        return f"CallableProvider({getattr(self.fn, '__qualname__', self.fn)!r})"

    def config_hash(self) -> str:
        """What identifies this provider in a resume key: the function's module, name and
        compiled code, so editing the function makes the store run its cells again."""
        fn = self.fn
        method = getattr(fn, "__call__", None)  # noqa: B004 - a callable object's code
        code = getattr(fn, "__code__", None) or getattr(method, "__code__", None)
        material = [
            getattr(fn, "__module__", None),
            getattr(fn, "__qualname__", type(fn).__qualname__),
            self.pass_request,
            code.co_code.hex() if code is not None else None,
            repr(code.co_consts) if code is not None else None,
        ]
        return hashlib.sha256(repr(material).encode()).hexdigest()[:16]

    async def invoke(self, request: Request) -> Response:
        arg = request if self.pass_request else request.task.input
        if self._is_async:
            result = await self.fn(arg)
        elif self.thread:
            result = await _threads.run_sync(self.fn, arg)
        else:
            result = self.fn(arg)
        if isinstance(result, Response):
            return result
        return Response(output=result)


def _resolve(
    target: str | None, file: str | None, function: str | None, base_dir: Path | None
) -> Callable[..., Any]:
    import importlib
    import importlib.util

    if target is not None:
        module_name, sep, attr = target.partition(":")
        if not sep or not attr:
            raise ConfigError(
                f"callable {target!r} is not of the form 'module:function'",
                fix="write e.g. callable: 'my_pkg.solver:solve'.",
            )
        try:
            obj: Any = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(
                f"cannot import callable {target!r}: {exc}",
                fix="check the module is importable (installed or on PYTHONPATH).",
            ) from exc
        except Exception as exc:  # a SyntaxError or an error raised while importing
            raise _import_error(exc, None, f"callable {target!r}") from exc
    elif file is not None and function is not None:
        path = Path(file)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.is_file():
            raise ConfigError(
                f"provider file {str(path)!r} does not exist",
                fix="give `file` relative to the benchmark file's directory.",
            )
        spec = importlib.util.spec_from_file_location(f"_benchkit_provider_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"cannot load Python file {str(path)!r}")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise _import_error(exc, path, "the provider file") from exc
        try:
            obj = getattr(module, function)
        except AttributeError as exc:
            raise ConfigError(
                f"{str(path)!r} has no function {function!r}",
                fix="name a function defined at the top level of that file.",
            ) from exc
    else:
        raise ConfigError(
            "a python provider needs `callable: 'module:function'` or `file` + `function`",
            fix="add one of them to the provider's options.",
        )
    if not callable(obj):
        raise ConfigError(f"{obj!r} is not callable")
    fn: Callable[..., Any] = obj
    return fn


def _import_error(exc: Exception, path: Path | None, what: str) -> ConfigError:
    """A ConfigError for ``exc``, raised while importing ``what``, at its file and line."""
    if isinstance(exc, SyntaxError):
        return ConfigError(
            f"cannot import {what}: syntax error: {exc.msg}",
            file=exc.filename or path,
            line=exc.lineno,
            column=exc.offset,
            fix="fix the Python syntax at this position.",
        )
    file: str | Path | None = path
    line: int | None = None
    frame = exc.__traceback__
    while frame is not None:  # the innermost frame in the file itself, else the last one
        code = frame.tb_frame.f_code
        if path is None or code.co_filename == str(path):
            file, line = code.co_filename, frame.tb_lineno
        frame = frame.tb_next
    return ConfigError(
        f"cannot import {what}: {type(exc).__name__}: {exc}",
        file=file,
        line=line,
        fix="fix the error at this line (a missing package: install it in this environment).",
    )
