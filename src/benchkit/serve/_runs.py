"""The jobs of ``POST /api/runs``: benchkit's own kind, ``benchmark`` (a benchmark file under
the root, in any format), and every kind a tool declares (``Tool.jobs``), each checked
against its JSON Schema before its suite is built.

A request is ``{"kind": KIND, ...}``. Without ``kind`` it is a ``benchmark`` request; a
tool may add one field to that request (:attr:`JobBuilder.field`: a chat model's settings,
say), and a benchmark request giving it is that tool's job — so every request shape an
older server took means what it meant. A saved spec records its kind as ``route``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from benchkit._limits import MAX_WAIT_S, check_chat_options, out_of_bounds
from benchkit.errors import ConfigError, RegistryError
from benchkit.llm._endpoints import EndpointRegistry
from benchkit.model import Condition, ProviderSpec, Suite
from benchkit.registry import default_registries
from benchkit.serve_toolkit import (
    ENDPOINT_FIX,
    ApiError,
    JobBuilder,
    JobContext,
    PathError,
    ServeState,
    check_body,
    path_error,
    resolve_inside,
)
from benchkit.tools import ALLOW_ENV, Tool, ToolWarning

__all__ = [
    "BENCHMARK",
    "JobKinds",
    "build_benchmark_suite",
    "check_provider_options",
    "load_benchmark",
    "warn_tool",
]

#: benchkit's own kind of job: a benchmark file under the root.
BENCHMARK = "benchmark"

_RUN_OPTIONS = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "concurrency": {"type": "integer", "minimum": 1, "maximum": 1000},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "retries": {"type": "integer", "minimum": 0, "maximum": 100},
        "epochs": {"type": "integer", "minimum": 1, "maximum": 1000},
        "seed": {"type": "integer"},
        "deterministic": {"type": "boolean"},
        "errors_as": {"enum": ["zero", "exclude"]},
        # The run's budget (docs/llm.md): the bounds of docs/limits.md.
        "max_cost": {"type": "number", "exclusiveMinimum": 0, "maximum": 1_000_000},
        "max_tokens": {"type": "integer", "minimum": 1, "maximum": 1_000_000_000},
        "max_calls": {"type": "integer", "minimum": 1, "maximum": 1_000_000_000},
    },
}

#: Provider types a request may name in ``conditions`` (``local``: the embedded model, a
#: name like an endpoint's — the server starts it; no URL comes from the request).
REQUEST_PROVIDERS = ("chat", "http", "mock", "local")

#: The options a request may give each provider type. Never a URL, a header or the name of
#: an environment variable: where the server's credentials go is the server's
#: configuration (its endpoints), and a request names an endpoint (``endpoint: NAME``).
REQUEST_OPTIONS: dict[str, frozenset[str]] = {
    "chat": frozenset(
        {
            "endpoint",
            "model",
            "temperature",
            "max_tokens",
            "system",
            "tools",
            "seed",
            "timeout",
            "max_retries",
            "requests_per_minute",
            "tokens_per_minute",
            "max_concurrency",
            "cache",
            "price",
        }
    ),
    "http": frozenset(
        {"endpoint", "method", "body", "body_options", "output_field", "timeout"}
        | {"max_response_bytes"}
    ),
    "mock": frozenset({"outputs", "default", "delay"}),
    "local": frozenset(
        {"temperature", "max_tokens", "system", "tools", "seed", "timeout", "max_retries"}
        | {"max_concurrency", "cache"}
    ),
}
_MOCK_FIX = (
    'give the mock its outputs by task id, and a default for the others: {"type": "mock", '
    '"options": {"outputs": {"t1": "42"}, "default": "0"}}'
)
#: Options that would choose where a credential goes.
_CREDENTIAL_OPTIONS = ("base_url", "url", "api_key_env", "api_key", "headers")

#: The fields of a ``benchmark`` request (beside ``kind`` and the tools' fields).
BENCHMARK_FIELDS: dict[str, Any] = {
    "benchmark": {"type": "string", "minLength": 1},
    "format": {"type": "string", "minLength": 1},
    "options": _RUN_OPTIONS,
    "conditions": {
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["id", "provider"],
            "properties": {
                "id": {"type": "string", "minLength": 1},
                "label": {"type": "string"},
                "provider": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["type"],
                    "properties": {
                        # Only providers that run no code of the request's choosing
                        # on the server: python and subprocess stay in benchmark files.
                        "type": {"enum": list(REQUEST_PROVIDERS)},
                        "options": {"type": "object"},
                    },
                },
            },
        },
    },
}


def check_provider_options(conditions: Any, endpoints: EndpointRegistry) -> None:
    """Refuse (400, naming the field and the fix) provider options of a request that would
    choose where a credential goes, or that a request may not set at all."""
    for n, condition in enumerate(conditions or ()):
        provider = condition["provider"]
        kind, options = provider["type"], provider.get("options") or {}
        for key in options:
            field = f"conditions.{n}.provider.options.{key}"
            if key in _CREDENTIAL_OPTIONS:
                raise ApiError.bk(
                    400,
                    "ENDPOINT_REQUIRED",
                    f"{field}: a request may not choose a URL, a header or an environment "
                    f"variable; {ENDPOINT_FIX}",
                    field=field,
                    fix=ENDPOINT_FIX,
                )
            if key not in REQUEST_OPTIONS[kind]:
                allowed = ", ".join(sorted(REQUEST_OPTIONS[kind]))
                raise ApiError.bk(
                    400,
                    "INVALID_BODY",
                    f"{field}: not an option a request may give a {kind} provider "
                    f"(it may give: {allowed})",
                    field=field,
                )
        if kind == "mock":
            _check_mock(options, f"conditions.{n}.provider.options")
        if kind in ("chat", "local"):
            try:
                check_chat_options(options, prefix=f"conditions.{n}.provider.options.")
            except ConfigError as exc:
                field = exc.json_path or f"conditions.{n}.provider.options"
                raise ApiError.bk(
                    400, "INVALID_BODY", f"{field}: {exc.message}", field=field, fix=exc.fix
                ) from None
        field = f"conditions.{n}.provider.options.endpoint"
        if "endpoint" in options:
            try:
                endpoints.get(options["endpoint"], field=field)
            except ConfigError as exc:
                raise ApiError.bk(
                    400, "UNKNOWN_ENDPOINT", exc.message, field=field, fix=exc.fix
                ) from None
        elif kind == "http":
            raise ApiError.bk(
                400,
                "ENDPOINT_REQUIRED",
                f"{field} is required: an http provider calls one of the server's endpoints",
                field=field,
                fix=ENDPOINT_FIX,
            )


def _check_mock(options: Mapping[str, Any], prefix: str) -> None:
    """A mock's options in a request, checked before anything runs (400 naming the
    field): ``outputs`` an object of task ids to outputs, ``default`` any JSON value,
    ``delay`` seconds within the bounds — one of ``outputs`` and ``default`` given."""
    if "outputs" not in options and "default" not in options:
        raise ApiError.bk(
            400,
            "INVALID_BODY",
            f"{prefix}.outputs is required: a mock answers each task from outputs "
            "(task id -> output), and the tasks it does not name from default",
            field=f"{prefix}.outputs",
            fix=_MOCK_FIX,
        )
    outputs = options.get("outputs")
    if "outputs" in options and not isinstance(outputs, Mapping):
        raise ApiError.bk(
            400,
            "INVALID_BODY",
            f"{prefix}.outputs must be an object mapping task ids to outputs, "
            f"not {_json_type(outputs)}",
            field=f"{prefix}.outputs",
            fix=_MOCK_FIX,
        )
    if "delay" in options:
        delay = options["delay"]
        problem = (
            "is not a number"
            if isinstance(delay, bool) or not isinstance(delay, (int, float))
            else out_of_bounds(delay, 0, MAX_WAIT_S)
        )
        if problem is not None:
            raise ApiError.bk(
                400,
                "INVALID_BODY",
                f"{prefix}.delay {problem} (seconds, from 0 to {MAX_WAIT_S:,})",
                field=f"{prefix}.delay",
                fix='give delay in seconds, e.g. {"type": "mock", "options": {"default": "0", '
                '"delay": 0.1}}',
            )


def _json_type(value: Any) -> str:
    """``value``'s JSON type, as a message names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else type(value).__name__


def _check_mock_tasks(suite: Suite, conditions: Any) -> None:
    """A mock's ``outputs`` name tasks of the benchmark: a key naming none is a typo the
    run would never show (the task's cell would take the default, or error)."""
    ids: set[str] | None = None
    for n, condition in enumerate(conditions):
        provider = condition["provider"]
        outputs = (provider.get("options") or {}).get("outputs")
        if provider["type"] != "mock" or not isinstance(outputs, Mapping):
            continue
        if ids is None:
            ids = {task.id for task in suite.benchmark.iter_tasks()}
        for key in outputs:
            if key not in ids:
                known = ", ".join(sorted(ids)[:10]) + (" ..." if len(ids) > 10 else "")
                raise ConfigError(
                    f"conditions.{n}.provider.options.outputs.{key}: the benchmark has no "
                    f"task {key!r}",
                    fix=f"key outputs by the benchmark's task ids ({known}).",
                    json_path=f"conditions.{n}.provider.options.outputs.{key}",
                )


def _resolve_conditions(conditions: Any, endpoints: EndpointRegistry) -> tuple[Condition, ...]:
    out = []
    for n, c in enumerate(conditions):
        kind = c["provider"]["type"]
        options = dict(c["provider"].get("options") or {})
        name = options.pop("endpoint", None)
        if name is not None:
            endpoint = endpoints.get(name, field=f"conditions.{n}.provider.options.endpoint")
            options.update(endpoint.http_options() if kind == "http" else endpoint.chat_options())
        out.append(Condition(c["id"], ProviderSpec(kind, options), label=c.get("label")))
    return tuple(out)


def extension_of(
    spec: Mapping[str, Any], extensions: Mapping[str, JobBuilder]
) -> JobBuilder | None:
    """The tool job whose field a benchmark spec (or request) gives, if any."""
    for field, builder in extensions.items():
        if field in spec:
            return builder
    return None


def load_benchmark(
    spec: Mapping[str, Any], context: JobContext, extensions: Mapping[str, JobBuilder]
) -> Suite:
    """The suite of a benchmark spec as its file (and the tool field it gives) make it,
    before the spec's conditions and options: what the explorer reads tasks from."""
    from benchkit import formats

    extension = extension_of(spec, extensions)
    if extension is not None:
        return extension.build(spec, context)
    path = resolve_inside(context.root, spec["path"])
    return formats.load(path, format=spec.get("format"))


def build_benchmark_suite(
    spec: Mapping[str, Any],
    context: JobContext,
    extensions: Mapping[str, JobBuilder] | None = None,
) -> Suite:
    """The suite a ``benchmark`` spec describes (also used to resume its run): its file,
    the tool field it gives, then its conditions and run options; the conditions name the
    server's endpoints (``context.endpoints``)."""
    suite = load_benchmark(spec, context, extensions or {})
    conditions = spec.get("conditions")
    if conditions:
        check_provider_options(conditions, context.endpoints)  # a spec saved by an older server
        _check_mock_tasks(suite, conditions)
        suite = attrs.evolve(suite, conditions=_resolve_conditions(conditions, context.endpoints))
    options = spec.get("options") or {}
    if options:
        suite = suite.with_options(**options)
    if not suite.conditions:
        raise ConfigError(
            f"{spec['path']} declares no conditions to run",
            fix="give conditions in the request (`conditions: [{id, provider: {type}}]`).",
        )
    return suite


def warn_tool(tool: Tool, problem: str) -> None:
    """One line on a part of a tool the server goes on without (its routes, a job kind)."""
    record = default_registries().tools.record(tool.name)
    origin = record.origin if record is not None else "added in code"
    warnings.warn(
        ToolWarning(
            f"tool {tool.name!r} ({origin}): {problem}. Fix: reinstall or fix the tool, or "
            f"leave it out with {ALLOW_ENV}; the server runs without it."
        ),
        stacklevel=3,
    )


def _object_schema(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object" and isinstance(schema.get("properties"), Mapping)


@attrs.frozen
class JobKinds:
    """The kinds of job a server builds: benchkit's ``benchmark`` and the installed tools'.

    ``standalone`` are the kinds with their own requests and specs (a tool's own routes
    start those without a schema); ``extensions`` the fields tools add to the benchmark
    request, by field, with their kinds in ``extension_kinds``.
    """

    standalone: dict[str, JobBuilder] = attrs.field(factory=dict)
    extensions: dict[str, JobBuilder] = attrs.field(factory=dict)
    extension_kinds: dict[str, str] = attrs.field(factory=dict)

    @classmethod
    def of(cls, tools: Iterable[Tool]) -> JobKinds:
        """Every job the ``tools`` declare, imported and checked: one that cannot be
        imported, is not a JobBuilder, has a schema that is not an object's, or adds a field
        the benchmark request (or another tool) has already, is left out with a warning
        (discovery keeps two tools from declaring one kind)."""
        found = cls()
        for tool in tools:
            for kind, reference in tool.jobs.items():
                try:
                    builder = tool.load(reference)
                except RegistryError as exc:
                    warn_tool(tool, f"its job {kind!r} is not served: {exc.message}")
                    continue
                problem = None
                if not isinstance(builder, JobBuilder):
                    problem = f"is {type(builder).__name__!r}, not a JobBuilder"
                elif builder.field is not None:
                    if builder.field in BENCHMARK_FIELDS or builder.field in found.extensions:
                        problem = f"adds the field {builder.field!r}, which is taken"
                elif builder.schema is not None and not _object_schema(builder.schema):
                    problem = "has a schema that is not an object schema with properties"
                if problem is not None:
                    warn_tool(tool, f"its job {kind!r} is not served: it {problem}")
                    continue
                assert isinstance(builder, JobBuilder)
                if builder.format is None and len(tool.formats) == 1:
                    builder = attrs.evolve(builder, format=next(iter(tool.formats)))
                if builder.field is not None:
                    found.extensions[builder.field] = builder
                    found.extension_kinds[kind] = builder.field
                else:
                    found.standalone[kind] = builder
        return found

    def builders(self) -> dict[str, JobBuilder]:
        """What the job queue builds and resumes, by a spec's ``route``."""
        benchmark = JobBuilder(
            build=functools.partial(build_benchmark_suite, extensions=self.extensions),
            schema=self.benchmark_schema(),
            summary="A benchmark file under the root, in any format",
        )
        return {BENCHMARK: benchmark, **self.standalone}

    def benchmark_schema(self) -> dict[str, Any]:
        """The body of a ``benchmark`` request: its fields and the tools' fields."""
        return {
            "type": "object",
            "additionalProperties": False,
            "required": ["benchmark"],
            "properties": {
                "kind": {"enum": [BENCHMARK, *sorted(self.extension_kinds)]},
                **BENCHMARK_FIELDS,
                **{
                    field: dict(builder.schema or {"type": "object"})
                    for field, builder in self.extensions.items()
                },
            },
        }

    def request_schemas(self) -> dict[str, dict[str, Any]]:
        """The body of ``POST /api/runs`` of each kind a request may name (kind ``benchmark``
        and the tools' kinds with a schema), as the server checks it."""
        out = {BENCHMARK: self.benchmark_schema()}
        for kind, builder in sorted(self.standalone.items()):
            if builder.schema is None:
                continue
            schema = dict(builder.schema)
            schema["properties"] = {"kind": {"const": kind}, **schema["properties"]}
            schema["required"] = ["kind", *schema.get("required", ())]
            out[kind] = schema
        return out

    def spec_from_request(self, body: Mapping[str, Any], state: ServeState) -> dict[str, Any]:
        """The spec a checked ``POST /api/runs`` body saves; 4xx naming the field when the
        body is not one of a kind's."""
        kind = body.get("kind", BENCHMARK)
        schemas = self.request_schemas()
        if not isinstance(kind, str) or (kind not in schemas and kind not in self.extension_kinds):
            known = ", ".join(sorted({*schemas, *self.extension_kinds}))
            raise ApiError.bk(
                400,
                "INVALID_BODY",
                f"kind: {kind!r} is not a kind of run this server starts (it starts: {known})",
                field="kind",
            )
        context = state.jobs.context
        if kind in self.standalone:
            check_body(body, schemas[kind])
            builder = self.standalone[kind]
            fields = {k: v for k, v in body.items() if k != "kind"}
            spec = dict(builder.spec(fields, context)) if builder.spec else fields
            return {**spec, "route": kind}
        check_body(body, schemas[BENCHMARK])
        return self._benchmark_spec(body, state, self.extension_kinds.get(kind))

    def _benchmark_spec(
        self, body: Mapping[str, Any], state: ServeState, required: str | None
    ) -> dict[str, Any]:
        given = [field for field in self.extensions if field in body]
        if required is not None and required not in given:
            raise ApiError.bk(400, "INVALID_BODY", f"{required} is required", field=required)
        if len(given) > 1:
            raise ApiError.bk(
                400,
                "INVALID_BODY",
                f"{given[1]}: give one of {', '.join(given)}, not both",
                field=given[1],
            )
        try:
            path = resolve_inside(state.root, body["benchmark"])
        except PathError as exc:
            raise path_error(exc, "benchmark") from None
        if not path.exists():
            raise ApiError.bk(
                404,
                "BENCHMARK_NOT_FOUND",
                "benchmark: no such file under the root",
                field="benchmark",
            )
        if not (path.is_file() or path.is_dir()):
            raise ApiError.bk(
                400,
                "PATH_INVALID",
                "benchmark: not a regular file (a FIFO, socket or device)",
                field="benchmark",
                reason="not_a_file",
            )
        spec: dict[str, Any] = {"route": BENCHMARK, "path": path.relative_to(state.root).as_posix()}
        for key in ("format", "options", "conditions", *given):
            if key in body:
                spec[key] = body[key]
        check_provider_options(body.get("conditions"), state.endpoints)
        for field in given:
            builder = self.extensions[field]
            if builder.spec is not None:
                spec[field] = builder.spec(body[field], state.jobs.context)
        return spec
