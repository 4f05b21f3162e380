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
refers to its parts by ``"module:attribute"`` strings, so listing the tools imports none of
them: a part is imported when it is first used (:meth:`Tool.load`).

What each part must be (docs/plugins.md walks through writing a tool):

``formats``, ``providers``, ``evaluators``, ``verifiers``, ``memory_providers``
    ``{name: "module:attr"}``; each name joins the registry of that kind, exactly as an
    entry point in ``benchkit.formats`` (and so on) would.
``commands``
    ``"module:function"`` functions taking argparse's subparsers object: they add the
    tool's subcommands (each setting ``func``) and may give the generic ``run`` command
    the tool's options with :func:`benchkit.cli_toolkit.add_run_hook`.
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
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from benchkit.errors import RegistryError

__all__ = ["TOOLS_GROUP", "ServerSetting", "Tool"]

TOOLS_GROUP = "benchkit.tools"
"""The entry-point group every tool — built-in or not — is published under."""

#: The names of Tool's ``{name: "module:attr"}`` fields, by the registry they feed.
CONTRIBUTIONS = ("formats", "providers", "evaluators", "verifiers", "memory_providers")
#: Tool's report-section fields: each feeds a registry of sections keyed by source format
#: (the reports layer's), one entry per format the tool reads.
REPORT_SECTIONS = ("report_html", "report_markdown")

_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")
_REFERENCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def _check_name(_: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not _NAME.fullmatch(value):
        raise RegistryError(
            f"tool name {value!r} is not a short lower-case name",
            fix="name the tool with lower-case letters, digits, '-' and '_' "
            "(starting with a letter), as in 'my-tool'.",
        )


def _check_reference(field: str, value: str) -> None:
    if not _REFERENCE.fullmatch(value):
        raise RegistryError(
            f"tool field {field!r}: {value!r} is not a 'module:attribute' reference",
            fix="refer to the part as 'package.module:name' (imported when first used).",
        )


def _references(value: Mapping[str, str] | None) -> dict[str, str]:
    return dict(value or {})


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


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


def _check_commands(_: Any, attribute: attrs.Attribute[tuple[str, ...]], value: Any) -> None:
    for i, ref in enumerate(value):
        _check_reference(f"{attribute.name}[{i}]", ref)


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
    commands: tuple[str, ...] = attrs.field(
        default=(), converter=_strings, validator=_check_commands
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

    def load(self, reference: str) -> Any:
        """Import the part ``reference`` (``"module:attr"``) names; a RegistryError naming
        the tool when it cannot be imported."""
        module_name, _, attr = reference.partition(":")
        try:
            obj: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            raise RegistryError(
                f"tool {self.name!r}: {reference!r} cannot be imported: {exc}",
                fix=f"check that the tool's package {self.package!r} is installed and "
                "that its Tool names parts that exist.",
            ) from exc
        return obj
