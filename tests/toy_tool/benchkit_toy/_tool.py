"""The toy tool's declaration: the one object benchkit finds (entry point ``toy``)."""

from benchkit.tools import Command, ServerSetting, Tool

TOOL = Tool(
    name="toy",
    title="Toy arithmetic",
    package="benchkit_toy",
    description="Sums written one per line, answered by a calculator.",
    formats={
        "toy": "benchkit_toy._format:FORMAT",
        "toy-lines": "benchkit_toy._format:LINES_FORMAT",
    },
    providers={"toy-calculator": "benchkit_toy._plugins:Calculator"},
    evaluators={"toy-within-one": "benchkit_toy._plugins:WithinOne"},
    commands=(
        Command(name="toy", help="toy arithmetic benchmarks", add="benchkit_toy._cli:add_commands"),
    ),
    report_html="benchkit_toy._report:html_section",
    report_markdown="benchkit_toy._report:markdown_section",
    explorer_view="static/view.js",
    routes="benchkit_toy._serve:ROUTES",
    jobs={"toy": "benchkit_toy._serve:JOB"},
    server_settings=(ServerSetting(name="toy_greeting", help="what GET /toy/hello says"),),
)
