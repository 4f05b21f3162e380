"""skillvault bench v0 as a tool: published under the entry-point group ``benchkit.tools``."""

from __future__ import annotations

from benchkit.tools import Command, Tool

__all__ = ["TOOL"]

_VERIFIERS = "benchkit.formats.skillvault.verifiers"

TOOL = Tool(
    name="skillvault",
    title="skillvault",
    package="benchkit.formats.skillvault",
    description="Skill bundles under three conditions, checked by file and command verifiers.",
    formats={"skillvault": "benchkit.formats.skillvault:FORMAT"},
    providers={"bundle": "benchkit.formats.skillvault._provider:BundleProvider"},
    verifiers={
        "bundle_file_exists": f"{_VERIFIERS}._bundle:BundleFileExists",
        "bundle_file_contains": f"{_VERIFIERS}._bundle:BundleFileContains",
        "command": f"{_VERIFIERS}._command:CommandVerifier",
    },
    commands=(
        Command(
            name="bench",
            help="skillvault bench v0: run a suite, report a run (skillvault's own contracts)",
            add="benchkit.formats.skillvault._cli:add_commands",
        ),
    ),
    routes="benchkit.formats.skillvault._serve:ROUTES",
    jobs={"skillvault": "benchkit.formats.skillvault._serve:JOB"},
    report_html="benchkit.formats.skillvault._html:html_section",
    explorer_view="static/view.js",
)
