"""CodeForge as a tool: published under the entry-point group ``benchkit.tools``."""

from __future__ import annotations

from benchkit.tools import Command, ServerSetting, Tool

__all__ = ["TOOL"]

_PACKAGE = "benchkit.formats.codeforge"

TOOL = Tool(
    name="codeforge",
    title="CodeForge",
    package=_PACKAGE,
    description="Chat models and code generators on YAML datasets, scored by judge metrics.",
    formats={"codeforge": f"{_PACKAGE}:FORMAT"},
    evaluators={
        "codeforge_correctness": f"{_PACKAGE}._metrics:GEvalMetric",
        "codeforge_tool_correctness": f"{_PACKAGE}._metrics:ToolCorrectness",
        "codeforge_faithfulness": f"{_PACKAGE}._metrics:Faithfulness",
        "codeforge_answer_relevancy": f"{_PACKAGE}._metrics:AnswerRelevancy",
        "codeforge_contextual_precision": f"{_PACKAGE}._metrics:ContextualPrecision",
    },
    commands=(
        Command(name="datasets", help="CodeForge datasets", add=f"{_PACKAGE}._cli:add_commands"),
    ),
    run_hook=f"{_PACKAGE}._cli:RUN_HOOK",
    run_options=("--base-url", "--metrics", "--judge-model", "--judge-base-url", "--export"),
    explorer_view="static/view.js",
    routes=f"{_PACKAGE}._serve:ROUTES",
    jobs={
        "codeforge": f"{_PACKAGE}._serve:API_JOB",
        "codeforge-chat": f"{_PACKAGE}._serve:CHAT_JOB",
    },
    server_settings=(
        ServerSetting(
            name="codeforge_datasets",
            help="CodeForge's datasets directory inside the root (default: its "
            "configuration, else benchmarks/codeforge)",
            metavar="DIR",
            path=True,
        ),
    ),
)
