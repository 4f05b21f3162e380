"""Tools: everything one benchmark tool brings to benchkit, declared in one object.

A tool is a package (one folder under ``benchkit/formats/``, or a third party's
``my_tool``) that reads one family of benchmark files and may bring its own evaluators,
verifiers, providers and memory stores, CLI commands, server routes and jobs, report
sections and an explorer view. It declares all of that in one :class:`Tool` and publishes
it under the entry-point group ``benchkit.tools`` — benchkit's five built-in tools exactly
as a third party's::

    # pyproject.toml of a tool
    [project.entry-points."benchkit.tools"]
    toy = "benchkit_toy._tool:TOOL"

The generic layers (the registries, the CLI, the server, the reports, the explorer) find
every tool through :meth:`benchkit.registry.Registries.tools` and never name one. A tool
refers to its parts by ``"module:attribute"`` strings, so listing the tools imports only
the module of each ``Tool`` (keep it light: it imports nothing but this module): a part is
imported when it is first used (:meth:`Tool.load`).

Plug-ins fail alone (docs/plugins.md, "When a tool cannot load"): a tool whose entry point
cannot be imported, raises, is not a :class:`Tool`, or claims a name that benchkit or
another tool has already (of any kind below) is not loaded, with one :class:`ToolWarning`
naming the tool, its distribution and the fix; everything else works as without it.
``BENCHKIT_TOOLS`` (:data:`ALLOW_ENV`) lists the third-party tools to load.

What each part must be (docs/plugins.md walks through writing a tool):

``formats``, ``providers``, ``evaluators``, ``verifiers``, ``memory_providers``
    ``{name: "module:attr"}``; each name joins the registry of that kind, exactly as an
    entry point in ``benchkit.formats`` (and so on) would.
``answer_generators``
    ``{name: "module:attr"}``: how the ``memory`` provider turns what a store retrieved
    into an answer (``answer: NAME``): a factory of objects with ``async generate(question,
    contexts, task) -> Answer`` (:class:`benchkit.memory.AnswerGenerator`), given the
    ``answer_options`` (and ``response_cache`` when it takes one).
``http_bodies``
    ``{name: "module:attr"}``: request shapes of the ``http`` provider (``body: NAME``): a
    :class:`benchkit.providers.HttpBody` — the JSON sent for a cell, and extra headers.
``commands``
    :class:`Command` values: the name and help of each top-level subcommand the tool adds
    (``--help`` lists them without importing anything), and the ``"module:function"``
    that adds its parser, imported only when that command runs.
``run_hook``, ``run_options``
    A :class:`benchkit.cli_toolkit.RunHook` (``"module:attr"``) that gives the generic
    ``run`` command the options ``run_options`` declares (``("--metrics", ...)``), and
    builds or changes the suite when they are given.
``routes``
    ``"module:attr"``: a :class:`benchkit.serve_toolkit.ToolRoutes` — the Starlette routes
    the tool serves (its original's API, say), their OpenAPI description, and how the
    server treats them (docs/server.md). Only that module imports Starlette.
``jobs``
    ``{kind: "module:attr"}``: :class:`benchkit.serve_toolkit.JobBuilder` objects — the
    kinds of run the server builds and resumes; a kind with a JSON Schema is one the
    generic ``POST /api/runs`` accepts as ``{"kind": KIND, ...}``, checked against that
    schema before the suite is built.
``server_settings``
    :class:`ServerSetting` values: what the tool's routes may be configured with, given
    as ``create_app(NAME=...)`` and ``serve --NAME`` (``_`` written ``-``).
``report_html``, ``report_markdown``
    ``"module:function"`` taking a run's JSON (``RunResult.to_dict()``, the shape ``GET
    /api/runs/{id}`` answers with) and returning the tool's section of the report; used
    for runs loaded from one of the tool's ``formats``.
``explorer_view``
    A ``.js`` file inside the tool's package (``"static/view.js"``, ``/`` between folders,
    no ``..``): an ES module the explorer imports from ``GET /static/tools/NAME/view.js``
    to show the tool's section of a run's page and its tab of "Start a run" (what it
    exports: docs/explorer.md, "A tool's view").
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

from benchkit.errors import RegistryError

__all__ = [
    "ALLOW_ENV",
    "TOOLS_GROUP",
    "Command",
    "ServerSetting",
    "Tool",
    "ToolRecord",
    "ToolWarning",
]

TOOLS_GROUP = "benchkit.tools"
"""The entry-point group every tool — built-in or not — is published under."""

ALLOW_ENV = "BENCHKIT_TOOLS"
"""The environment variable listing the third-party tools to load (names, separated by
commas or spaces; empty: none). Unset, every installed tool loads. benchkit's own tools
always load.

.. versionadded:: 0.2.0
"""

#: The names of Tool's ``{name: "module:attr"}`` fields, by the registry they feed.
CONTRIBUTIONS = (
    "formats",
    "providers",
    "evaluators",
    "verifiers",
    "memory_providers",
    "answer_generators",
    "http_bodies",
)
#: Tool's report-section fields: each feeds a registry of sections keyed by source format
#: (the reports layer's), one entry per format the tool reads.
REPORT_SECTIONS = ("report_html", "report_markdown")

#: Every kind of name a tool claims, as :meth:`Tool.claims` gives them, with how a message
#: calls it. Two tools never share a name of one kind (:func:`find_collisions`).
NAME_KINDS: Mapping[str, str] = {
    "tool": "tool name",
    "formats": "format",
    "providers": "provider",
    "evaluators": "evaluator",
    "verifiers": "verifier",
    "memory_providers": "memory provider",
    "answer_generators": "answer generator",
    "http_bodies": "HTTP body mode",
    "commands": "command",
    "run_options": "run option",
    "jobs": "job kind",
    "server_settings": "server setting",
}

#: The names benchkit's generic layers use themselves, by kind: a tool claiming one is not
#: loaded (the CLI's commands and ``run`` options, the server's own keywords and job kind).
#: tests/test_tool_isolation.py checks these against the real parsers and ``create_app``.
BENCHKIT_NAMES: Mapping[str, frozenset[str]] = {
    "commands": frozenset(
        {"run", "validate", "list", "report", "tools", "runs", "compare", "mcp", "serve", "view"}
    ),
    "run_options": frozenset(
        {
            "--help",
            "--concurrency",
            "--timeout",
            "--retries",
            "--epochs",
            "--seed",
            "--cluster-by",
            "--until-decided",
            "--margin",
            "--judge-repeats",
            "--max-cost",
            "--max-tokens",
            "--max-calls",
            "--deterministic",
            "--output",
            "--junit-xml",
            "--format",
            "--fail-under",
            "--baseline",
            "--regression-margin",
            "--no-progress",
            "--store",
            "--no-store",
            "--resume",
            "--retry-errors",
            "--run-id",
            "--require-isolation",
            "--task",
            "--tag",
            "--condition",
            "--limit",
            "--executor",
            "--ray-address",
            "--workers",
            "--concurrency-per-worker",
            "--ship-files",
            "--model",
            "--judge",
            "--verbose",
            "--version",
        }
    ),
    "server_settings": frozenset(
        {
            "store",
            "root",
            "token",
            "tokens",
            "cors_origins",
            "loopback_origins",
            "allowed_hosts",
            "max_body",
            "max_running",
            "allow_origins",
            "max_raters_per_cell",
            "ratings_per_minute",
            "endpoints",
            "host",
            "port",
            "cors_origin",
            "header_timeout",
            "endpoint",
            "help",
            "run_id",
            "tool",
        }
    ),
    "jobs": frozenset({"benchmark"}),
}

_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")
_REFERENCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
_OPTION = re.compile(r"--[a-z][a-z0-9-]{0,63}")


class ToolWarning(UserWarning):
    """A tool that is not loaded, or a part of one that cannot be imported: one line naming
    the tool, its distribution and the fix. The CLI prints it as ``benchkit: warning: ...``;
    everything else goes on as without that tool.

    .. versionadded:: 0.2.0
    """


def _check_name(_: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not _NAME.fullmatch(value):
        raise RegistryError(
            f"tool name {value!r} is not a short lower-case name",
            fix="name the tool with lower-case letters, digits, '-' and '_' "
            "(starting with a letter), as in 'my-tool'.",
        )


def _check_reference(field: str, value: str) -> None:
    if not isinstance(value, str) or not _REFERENCE.fullmatch(value):
        raise RegistryError(
            f"tool field {field!r}: {value!r} is not a 'module:attribute' reference",
            fix="refer to the part as 'package.module:name' (imported when first used).",
        )


def _references(value: Mapping[str, str] | None) -> dict[str, str]:
    return dict(value or {})


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _check_mapping(_: Any, attribute: attrs.Attribute[dict[str, str]], value: Any) -> None:
    for key, ref in value.items():
        if not isinstance(key, str) or not key:
            raise RegistryError(
                f"tool field {attribute.name!r} has the name {key!r}",
                fix="give every part a non-empty string name.",
            )
        _check_reference(f"{attribute.name}.{key}", ref)


def _check_optional(_: Any, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None:
        _check_reference(attribute.name, value)


_VIEW_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _check_view(_: Any, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is None:
        return
    parts = value.split("/")
    if not value.endswith(".js") or not all(_VIEW_PART.fullmatch(p) for p in parts):
        raise RegistryError(
            f"tool field 'explorer_view': {value!r} is not a .js file inside the package",
            fix="name the view's file by its path inside the tool's package, with '/' "
            "between folders and no '..', as in 'static/view.js'.",
        )


_COMMAND = re.compile(r"[a-z][a-z0-9-]{0,63}")


def _check_command_name(_: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not _COMMAND.fullmatch(value):
        raise RegistryError(
            f"command name {value!r} is not a short lower-case word",
            fix="name the command with lower-case letters, digits and '-', as in 'toy'.",
        )


def _check_add(_: Any, attribute: attrs.Attribute[str], value: str) -> None:
    _check_reference("commands.add", value)


@attrs.frozen(kw_only=True)
class Command:
    """One top-level subcommand a tool adds to ``python -m benchkit``.

    ``name`` and ``help`` are what ``--help`` lists, read from the :class:`Tool` alone;
    ``add`` (``"module:function"``) is imported only when the command runs (or its own
    ``--help`` is asked for): the function takes argparse's subparsers object and adds the
    parser ``name`` (its subcommands, each setting ``func``, which returns the exit code).

    >>> Command(name="toy", help="toy arithmetic benchmarks", add="benchkit_toy._cli:add")
    Command(name='toy', help='toy arithmetic benchmarks', add='benchkit_toy._cli:add')

    .. versionadded:: 0.2.0
    """

    name: str = attrs.field(validator=_check_command_name)
    help: str
    add: str = attrs.field(validator=_check_add)


def _commands(value: Iterable[Command]) -> tuple[Command, ...]:
    return tuple(value)


def _check_commands(_: Any, attribute: attrs.Attribute[tuple[Command, ...]], value: Any) -> None:
    for i, command in enumerate(value):
        if not isinstance(command, Command):
            raise RegistryError(
                f"tool field commands[{i}] is {type(command).__name__!r}, not a "
                "benchkit.tools.Command",
                fix="declare each command as Command(name=..., help=..., add='module:function'): "
                "its name and help are listed without importing the module.",
            )


def _check_run_options(_: Any, attribute: attrs.Attribute[tuple[str, ...]], value: Any) -> None:
    for flag in value:
        if not isinstance(flag, str) or not _OPTION.fullmatch(flag):
            raise RegistryError(
                f"tool field run_options: {flag!r} is not a long option",
                fix="list the options the run hook adds as '--name' strings.",
            )


_SETTING = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _check_setting_name(_: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not _SETTING.fullmatch(value):
        raise RegistryError(
            f"server setting {value!r} is not a lower-case Python name",
            fix="name it like a keyword argument, prefixed with the tool's name "
            "('mytool_datasets').",
        )


@attrs.frozen(kw_only=True)
class ServerSetting:
    """One setting a tool's server routes take: ``create_app(NAME=value)``, ``serve
    --NAME value`` (``_`` written ``-``); the routes read it from the server's state
    (``state.settings[NAME]``, None when not given).

    >>> ServerSetting(name="toy_greeting", help="what the toy's route says").flag
    '--toy-greeting'
    """

    name: str = attrs.field(validator=_check_setting_name)
    """The keyword; prefix it with the tool's name, as settings of all tools share one
    namespace."""
    help: str
    """One line for ``serve --help``."""
    metavar: str = "VALUE"
    path: bool = False
    """A path that must stay inside the server's root: resolved against it when the
    server is built (a path outside is refused then, not at the first request)."""

    @property
    def flag(self) -> str:
        """The ``serve`` option that gives it."""
        return "--" + self.name.replace("_", "-")


def _settings(value: Iterable[ServerSetting]) -> tuple[ServerSetting, ...]:
    return tuple(value)


def _check_settings(
    _: Any, attribute: attrs.Attribute[tuple[ServerSetting, ...]], value: Any
) -> None:
    for i, setting in enumerate(value):
        if not isinstance(setting, ServerSetting):
            raise RegistryError(
                f"tool field {attribute.name}[{i}] is {type(setting).__name__!r}, "
                "not a benchkit.tools.ServerSetting",
                fix="declare each setting as ServerSetting(name=..., help=...).",
            )


@attrs.frozen(kw_only=True, eq=True, hash=False)
class Tool:
    """What one benchmark tool brings: its format, plug-ins, commands, routes, jobs,
    report sections and explorer view, each named by a ``"module:attr"`` reference.

    >>> tool = Tool(name="toy", title="Toy", package="benchkit_toy",
    ...             formats={"toy": "benchkit_toy._format:FORMAT"})
    >>> tool.formats
    {'toy': 'benchkit_toy._format:FORMAT'}

    Checked when built: a malformed name or reference is a :class:`RegistryError` when
    the tool is defined, not when its part is first used.

    .. versionchanged:: 0.2.0
       ``commands`` are :class:`Command` values (name, help, and the adder); ``run_hook``
       and ``run_options`` declare what the tool adds to ``run``.
    """

    name: str = attrs.field(validator=_check_name)
    """The tool's name (``my-tool``): its entry point's and its explorer view's key (its
    report sections are keyed by its formats, which a run records)."""
    title: str
    """How people call it (``My Tool``): report headings, the explorer's tabs."""
    package: str
    """The importable package the tool ships; :attr:`explorer_view` is a file inside it."""
    description: str = ""
    """One sentence: what the tool's benchmarks measure."""
    formats: dict[str, str] = attrs.field(
        factory=dict, converter=_references, validator=_check_mapping
    )
    providers: dict[str, str] = attrs.field(
        factory=dict, converter=_references, validator=_check_mapping
    )
    evaluators: dict[str, str] = attrs.field(
        factory=dict, converter=_references, validator=_check_mapping
    )
    verifiers: dict[str, str] = attrs.field(
        factory=dict, converter=_references, validator=_check_mapping
    )
    memory_providers: dict[str, str] = attrs.field(
        factory=dict, converter=_references, validator=_check_mapping
    )
    answer_generators: dict[str, str] = attrs.field(
        factory=dict, converter=_references, validator=_check_mapping
    )
    """Answer generators of the ``memory`` provider (``answer: NAME``).

    .. versionadded:: 0.2.0
    """
    http_bodies: dict[str, str] = attrs.field(
        factory=dict, converter=_references, validator=_check_mapping
    )
    """Request shapes of the ``http`` provider (``body: NAME``): HttpBody objects.

    .. versionadded:: 0.2.0
    """
    commands: tuple[Command, ...] = attrs.field(
        default=(), converter=_commands, validator=_check_commands
    )
    run_hook: str | None = attrs.field(default=None, validator=_check_optional)
    run_options: tuple[str, ...] = attrs.field(
        default=(), converter=_strings, validator=_check_run_options
    )
    routes: str | None = attrs.field(default=None, validator=_check_optional)
    jobs: dict[str, str] = attrs.field(
        factory=dict, converter=_references, validator=_check_mapping
    )
    server_settings: tuple[ServerSetting, ...] = attrs.field(
        default=(), converter=_settings, validator=_check_settings
    )
    report_html: str | None = attrs.field(default=None, validator=_check_optional)
    report_markdown: str | None = attrs.field(default=None, validator=_check_optional)
    explorer_view: str | None = attrs.field(default=None, validator=_check_view)

    def __attrs_post_init__(self) -> None:
        if bool(self.run_hook) != bool(self.run_options):
            raise RegistryError(
                f"tool {self.name!r}: run_hook and run_options go together",
                fix="name the RunHook in run_hook and list the options it adds to `run` "
                "in run_options (or give neither).",
            )

    def contributions(self, kind: str) -> dict[str, str]:
        """The ``{name: reference}`` this tool adds to the registry of ``kind``: one of
        :data:`CONTRIBUTIONS`, or of :data:`REPORT_SECTIONS` (then keyed by each of the
        tool's formats, since a run's report picks its section by the run's source format).

        >>> Tool(name="toy", title="Toy", package="toy", formats={"toy": "toy:FORMAT"},
        ...      report_html="toy._report:html_section").contributions("report_html")
        {'toy': 'toy._report:html_section'}
        """
        if kind in REPORT_SECTIONS:
            section: str | None = getattr(self, kind)
            return {} if section is None else dict.fromkeys(self.formats, section)
        found: dict[str, str] = getattr(self, kind)
        return found

    def claims(self, kind: str) -> list[str]:
        """The names of one kind of :data:`NAME_KINDS` this tool claims.

        >>> Tool(name="toy", title="Toy", package="toy", run_hook="toy:HOOK",
        ...      run_options=["--sums"]).claims("run_options")
        ['--sums']
        """
        if kind == "tool":
            return [self.name]
        if kind == "commands":
            return [command.name for command in self.commands]
        if kind == "run_options":
            return list(self.run_options)
        if kind == "server_settings":
            return [setting.name for setting in self.server_settings]
        return list(getattr(self, kind))

    def parts(self) -> list[str]:
        """What the tool brings, one short phrase a kind (``benchkit tools`` shows them).

        >>> Tool(name="toy", title="Toy", package="toy", formats={"toy": "toy:F"},
        ...      report_html="toy:html").parts()
        ['formats: toy', 'report: html']
        """
        out = [
            f"{field.replace('_', ' ')}: {', '.join(self.claims(field))}"
            for field in (*CONTRIBUTIONS, "commands", "run_options", "jobs", "server_settings")
            if self.claims(field)
        ]
        if self.routes:
            out.append("routes")
        reports = [kind for kind, ref in (("html", self.report_html), ("markdown",
                   self.report_markdown)) if ref]  # fmt: skip
        if reports:
            out.append(f"report: {', '.join(reports)}")
        if self.explorer_view:
            out.append("explorer view")
        return out

    def load(self, reference: str) -> Any:
        """Import the part ``reference`` (``"module:attr"``) names; a RegistryError naming
        the tool when it cannot be imported, or raises while it is."""
        module_name, _, attr = reference.partition(":")
        try:
            obj: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except Exception as exc:  # a plug-in's module may raise anything at import
            raise RegistryError(
                f"tool {self.name!r}: {reference!r} cannot be imported: "
                f"{type(exc).__name__}: {exc}",
                fix=f"check that the tool's package {self.package!r} is installed and "
                "that its Tool names parts that exist.",
            ) from exc
        return obj


ToolStatus = Literal["ok", "broken", "refused", "off"]


@attrs.frozen(kw_only=True)
class ToolRecord:
    """What discovery made of one entry point of ``benchkit.tools`` (or a tool added in
    code): ``benchkit tools`` prints these.

    ``status`` is ``ok`` (loaded), ``broken`` (its entry point cannot be imported, raises,
    or is not a :class:`Tool`), ``refused`` (it claims a name benchkit or another tool
    has) or ``off`` (left out by ``BENCHKIT_TOOLS``); ``problem`` says why and how to fix it.

    .. versionadded:: 0.2.0
    """

    name: str
    distribution: str | None = None
    """The distribution that publishes it (None: added in code)."""
    version: str | None = None
    builtin: bool = False
    status: ToolStatus = "ok"
    problem: str | None = None
    tool: Tool | None = None

    @property
    def origin(self) -> str:
        """``distribution NAME VERSION``, ``built in`` for benchkit's own, or ``added in
        code``."""
        if self.builtin:
            return "built in"
        if self.distribution is None:
            return "added in code"
        version = f" {self.version}" if self.version else ""
        return f"distribution {self.distribution}{version}"


@attrs.frozen
class Claimant:
    """One tool taking part in :func:`find_collisions`: its key (the entry point's name),
    the tool, whether it is benchkit's own, and where it comes from."""

    key: str
    tool: Tool
    builtin: bool
    origin: str


def find_collisions(
    claimants: Sequence[Claimant], reserved: Mapping[str, Mapping[str, str]]
) -> dict[str, str]:
    """``{key: why}`` for every claimant that may not load because a name it claims is
    taken: by benchkit itself (``reserved``: ``{kind: {name: owner}}``) or by another
    claimant. Between a built-in tool and another, the other is refused; between two
    third-party tools, both are (neither takes the name silently)."""
    claims: dict[tuple[str, str], list[Claimant]] = {}
    for claimant in claimants:
        for kind in NAME_KINDS:
            for name in dict.fromkeys(claimant.tool.claims(kind)):
                claims.setdefault((kind, name), []).append(claimant)
    refused: dict[str, list[str]] = {}
    for (kind, name), who in claims.items():
        what = f"{NAME_KINDS[kind]} {name!r}"
        owner = reserved.get(kind, {}).get(name)
        if owner is not None:
            for claimant in who:
                if not claimant.builtin:
                    refused.setdefault(claimant.key, []).append(f"its {what} is {owner}")
            continue
        if len(who) < 2:
            continue
        builtin = [c for c in who if c.builtin]
        for claimant in who:
            if builtin and claimant.builtin:
                continue
            others = " and ".join(
                f"tool {other.tool.name!r} ({other.origin})"
                for other in who
                if other is not claimant
            )
            refused.setdefault(claimant.key, []).append(f"its {what} is taken by {others}")
    return {key: "; ".join(reasons) for key, reasons in refused.items()}


def allowed_tools(value: str | None) -> frozenset[str] | None:
    """The tool names ``BENCHKIT_TOOLS`` lists (None when it is unset).

    >>> sorted(allowed_tools("toy, csv-qa"))
    ['csv-qa', 'toy']
    >>> allowed_tools("")
    frozenset()
    """
    if value is None:
        return None
    return frozenset(part for part in re.split(r"[\s,]+", value) if part)
