"""Starting a job from a request, and the errors it answers with; the endpoints a request
names (a name, or the URL of one of the server's endpoints — never a URL of its own)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchkit.errors import BenchkitError, ConfigError
from benchkit.llm._endpoints import EndpointRegistry
from benchkit.model import Suite
from benchkit.serve_toolkit._http import ApiError, PathError
from benchkit.serve_toolkit._jobs import Job, QueueFull
from benchkit.serve_toolkit._state import ServeState

__all__ = [
    "ENDPOINT_FIX",
    "bad_input",
    "chat_endpoints",
    "check_spec",
    "endpoint_by_url",
    "path_error",
    "start_job",
]

#: How a client names an endpoint instead of giving a URL.
ENDPOINT_FIX = (
    "configure the endpoint on the server (serve --endpoint NAME=URL[,key-env=VAR], "
    'create_app(endpoints=...)) and name it in the request: "endpoint": "NAME".'
)


def path_error(exc: PathError, field: str) -> ApiError:
    """400 ``PATH_INVALID`` naming ``field`` and why its path was refused."""
    return ApiError.bk(400, "PATH_INVALID", f"{field}: {exc}", field=field, reason=exc.reason)


def bad_input(state: ServeState, exc: BaseException) -> ApiError:
    """400 ``INVALID_BENCHMARK`` for a spec whose suite cannot be built: the error's
    message, field, line and fix, scrubbed of the server's paths."""
    if isinstance(exc, BenchkitError):
        details: dict[str, Any] = {}
        if exc.json_path:
            details["field"] = exc.json_path
        if exc.line is not None:
            details["line"] = exc.line
        if exc.fix:
            details["fix"] = state.scrub(exc.fix)
        return ApiError(
            400,
            {"code": "INVALID_BENCHMARK", "error": state.scrub(exc.message), "details": details},
        )
    return ApiError.bk(400, "INVALID_BENCHMARK", state.scrub(str(exc)))


async def check_spec(state: ServeState, spec: Mapping[str, Any]) -> Suite:
    """The suite of ``spec``, built in a worker thread; 400 when it cannot be built."""
    try:
        return await state.in_thread(state.jobs.suite, spec)
    except PathError as exc:
        raise path_error(exc, "benchmark") from None
    except (BenchkitError, ValueError) as exc:
        raise bad_input(state, exc) from None


async def start_job(
    state: ServeState, spec: Mapping[str, Any], *, run_id: str | None = None
) -> tuple[Job, Suite]:
    """Check ``spec`` by building its suite (400 when it cannot), then queue a new run
    (503 when the queue is full)."""
    from benchkit.runner import new_run_id

    suite = await check_spec(state, spec)
    rid = run_id or new_run_id(suite.with_options(deterministic=False))
    try:
        return state.jobs.submit(rid, "start", spec), suite
    except QueueFull as exc:
        raise ApiError.bk(503, "QUEUE_FULL", f"{exc}; try again later") from None


def endpoint_by_url(
    body: Mapping[str, Any],
    url_key: str,
    name_key: str,
    endpoints: EndpointRegistry,
    prefix: str = "",
) -> str | None:
    """The endpoint a body names: ``name_key`` (a name), or ``url_key`` (a URL that must
    be one of the server's endpoints' — it is then read as that endpoint). Anything else is
    :class:`ApiError` 400 naming the field (``prefix`` + key) and the fix."""
    name, url = body.get(name_key), body.get(url_key)
    if name is not None and url is not None:
        raise ApiError.bk(
            400,
            "INVALID_BODY",
            f"give {prefix}{name_key} or {prefix}{url_key}, not both",
            field=prefix + url_key,
        )
    if name is not None:
        try:
            return endpoints.get(name, field=prefix + name_key).name
        except ConfigError as exc:
            raise ApiError.bk(
                400,
                "UNKNOWN_ENDPOINT",
                f"{exc.message}; {exc.fix}",
                field=prefix + name_key,
                fix=exc.fix,
            ) from None
    if url is None or url == "":
        return None
    found = endpoints.by_url(url) if isinstance(url, str) else None
    if found is None:
        raise ApiError.bk(
            400,
            "ENDPOINT_REQUIRED",
            f"{prefix}{url_key}: the server calls only the endpoints it is configured with, "
            f"and this URL is none of them; configure it on the server (serve --endpoint "
            f'NAME=URL[,key-env=VAR]) and send "{name_key}": "NAME"',
            field=prefix + url_key,
            fix=ENDPOINT_FIX,
        )
    return found.name


def chat_endpoints(
    spec: Mapping[str, Any], endpoints: EndpointRegistry, prefix: str = ""
) -> dict[str, Any]:
    """The ``base_url`` / ``api_key_env`` (and ``judge_`` ones) of a saved spec's
    ``endpoint`` and ``judge_endpoint`` (names); a spec saved with a URL maps it to an
    endpoint or fails."""
    out: dict[str, Any] = {}
    for role in ("", "judge_"):
        name = spec.get(f"{role}endpoint")
        if name is None and spec.get(f"{role}base_url"):
            found = endpoints.by_url(str(spec[f"{role}base_url"]))
            if found is None:
                raise ConfigError(
                    f"{prefix}{role}base_url: the server is not configured to call this URL",
                    fix=ENDPOINT_FIX,
                )
            name = found.name
        if name is not None:
            endpoint = endpoints.get(str(name), field=f"{prefix}{role}endpoint")
            options = endpoint.chat_options()
            out[f"{role}base_url"] = options["base_url"]
            out[f"{role}api_key_env"] = options["api_key_env"]
    return out
