"""Plug-ins fail alone (#41): a tool that cannot load is skipped with one warning naming the
tool, its distribution and the fix; two tools never share a name; a tool's modules are
imported only when used; ``BENCHKIT_TOOLS`` picks the tools; ``benchkit tools`` lists them.

The distributions here are written by hand into a directory on ``sys.path`` (a
``.dist-info`` and the modules, as pip leaves them: :func:`tests._toy.fake_distribution`),
and the CLI runs in this process against fresh registries that read them.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

import benchkit.registry
from benchkit import Condition, ProviderSpec, Request, Task
from benchkit.cli import main
from benchkit.errors import ConfigError, RegistryError
from benchkit.memory import Answer
from benchkit.registry import Registries, default_registries
from benchkit.tools import BENCHKIT_NAMES, Command, Tool, ToolWarning

from ._support import FIXTURES, REPO
from ._toy import fake_distribution

#: A directory of native benchmarks: what ``list`` and ``validate`` read below.
NATIVE = FIXTURES / "cli"

GOOD_TOOL = """
from benchkit.tools import Command, Tool

TOOL = Tool(
    name="{name}",
    title="{name}",
    package="{package}",
    commands=(Command(name="{name}", help="the {name} tool", add="{package}._cli:add"),),
    {extra}
)
"""

SLOW_CLI = """
import os
os.environ["BK_{upper}_CLI_IMPORTED"] = "1"  # a module that sleeps 20 s would slow this

def add(sub):
    parser = sub.add_parser("{name}", help="the {name} tool")
    parser.set_defaults(func=lambda args: print("{name} ran") or 0)
"""


def _tool(site: Path, name: str, extra: str = "", version: str = "1.0") -> None:
    package = "bk_" + name.replace("-", "_")
    fake_distribution(
        site,
        f"{name}-dist",
        version=version,
        tools={name: f"{package}._tool:TOOL"},
        files={
            f"{package}/__init__.py": "",
            f"{package}/_tool.py": GOOD_TOOL.format(name=name, package=package, extra=extra),
            f"{package}/_cli.py": SLOW_CLI.format(name=name, upper=package.upper()),
        },
    )


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on ``sys.path`` for hand-made distributions; the default registries are
    fresh ones (reading it) for the test, and its modules are forgotten afterwards."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delenv("BENCHKIT_TOOLS", raising=False)
    before = set(sys.modules)
    yield root
    for name in set(sys.modules) - before:
        if name.startswith("bk_"):
            del sys.modules[name]


def _fresh(monkeypatch: pytest.MonkeyPatch) -> Registries:
    importlib.invalidate_caches()
    fresh = Registries.create()
    monkeypatch.setattr(benchkit.registry, "_DEFAULT", fresh)
    return fresh


def _cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[int, str, list[str]]:
    """``main(args)`` against fresh registries: exit code, stdout, and stderr's lines."""
    _fresh(monkeypatch)
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's --help
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def _warnings(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("benchkit: warning:")]


def _broken_site(site: Path) -> None:
    """Three tools that cannot load: a missing module, one that raises, one not a Tool."""
    fake_distribution(site, "gone-dist", tools={"gone": "bk_gone._tool:TOOL"})
    fake_distribution(
        site,
        "boom-dist",
        version="2.5",
        tools={"boom": "bk_boom:TOOL"},
        files={"bk_boom.py": "raise RuntimeError('boom at import')\n"},
    )
    fake_distribution(
        site, "odd-dist", tools={"odd": "bk_odd:TOOL"}, files={"bk_odd.py": "TOOL = 42\n"}
    )


@pytest.mark.parametrize(
    "args",
    [
        ("list", str(NATIVE)),
        ("validate", str(NATIVE / "ok.yaml")),
        ("run", str(NATIVE / "ok.yaml"), "--no-store", "-f", "json", "-d", "--no-progress"),
        ("validate", str(NATIVE / "bad_evaluator.yaml")),
        ("runs", "list", "--store", "{tmp}/s.db", "-f", "json"),
    ],
    ids=["list", "validate", "run", "bad-input", "runs"],
)
def test_tools_that_cannot_load_change_nothing_but_one_warning_each(
    site: Path,
    tmp_path: Path,
    args: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    code, out, err = _cli(capsys, monkeypatch, *argv)
    _broken_site(site)
    broken_code, broken_out, broken_err = _cli(capsys, monkeypatch, *argv)
    assert (broken_code, broken_out) == (code, out)
    said = _warnings(broken_err)
    assert [line for line in broken_err if line not in said] == err  # nothing else changed
    assert len(said) == 3, said
    gone, boom, odd = sorted(said, key=lambda line: ("gone" not in line, "boom" not in line))
    assert "tool 'gone' (distribution gone-dist 1.0) is not loaded" in gone
    assert "ModuleNotFoundError" in gone and "pip install --force-reinstall gone-dist" in gone
    assert "tool 'boom' (distribution boom-dist 2.5)" in boom and "boom at import" in boom
    assert "BENCHKIT_TOOLS" in boom
    assert "is 'int', not a benchkit.tools.Tool" in odd
    assert not any("Traceback" in line for line in broken_err)


def test_the_server_starts_and_answers_without_the_broken_tools(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from benchkit.serve import create_app

    _broken_site(site)
    _fresh(monkeypatch)
    with pytest.warns(ToolWarning, match="not loaded"):
        app = create_app(root=tmp_path, store=tmp_path / "s.db")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        tools = client.get("/api/tools")
        assert tools.status_code == 200
        names = {t["name"] for t in tools.json()["tools"]}
        assert {"native", "codeforge"} <= names and not names & {"gone", "boom", "odd"}
        assert client.get("/api/runs").status_code == 200


def test_help_version_and_list_import_no_tools_command_module(
    site: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool's command module is imported when its command runs, never to list commands:
    one whose import takes 20 s does not slow ``--help``, ``--version`` or ``list``."""
    _tool(site, "hog")
    flag = "BK_BK_HOG_CLI_IMPORTED"
    monkeypatch.delenv(flag, raising=False)
    code, out, _ = _cli(capsys, monkeypatch, "--help")
    assert code == 0 and re.search(r"hog\s+the hog tool", out)
    assert _cli(capsys, monkeypatch, "--version")[0] == 0
    assert _cli(capsys, monkeypatch, "list", str(NATIVE))[0] == 0
    assert _cli(capsys, monkeypatch, "run", "--help")[0] == 0
    import os

    assert flag not in os.environ
    code, out, _ = _cli(capsys, monkeypatch, "hog")
    assert (code, out, os.environ.get(flag)) == (0, "hog ran\n", "1")


def test_a_command_module_that_cannot_be_imported_fails_that_command_only(
    site: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tool(site, "half")
    (site / "bk_half" / "_cli.py").write_text("raise ImportError('half gone')\n")
    code, _out, err = _cli(capsys, monkeypatch, "half")
    assert code == 2 and err[-1].startswith("benchkit: error: tool 'half'")
    assert "half gone" in err[-1]
    assert _cli(capsys, monkeypatch, "list", str(NATIVE))[0] == 0


@pytest.mark.parametrize(
    ("extra", "what"),
    [
        ('run_hook="bk_thief._cli:add", run_options=("--model",)', "run option '--model'"),
        ('formats={"native": "bk_thief._cli:add"}', "format 'native'"),
        ('evaluators={"exact": "bk_thief._cli:add"}', "evaluator 'exact'"),
        ('jobs={"benchmark": "bk_thief._cli:add"}', "job kind 'benchmark'"),
        ('providers={"bundle": "bk_thief._cli:add"}', "provider 'bundle'"),
    ],
    ids=["run-option", "format", "evaluator", "job", "built-in-tools-provider"],
)
def test_a_tool_claiming_a_built_in_name_is_refused_and_the_cli_stays_usable(
    site: Path,
    extra: str,
    what: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _tool(site, "thief", extra)
    code, _out, err = _cli(capsys, monkeypatch, "run", str(NATIVE / "ok.yaml"), "--no-store")
    assert code == 0, err
    (said,) = _warnings(err)
    assert f"tool 'thief' (distribution thief-dist 1.0) is not loaded: its {what}" in said
    registries = default_registries()
    assert "thief" not in registries.tools.names()
    native = registries.formats.get("native")
    assert type(native).__module__.startswith("benchkit.formats.native")
    (record,) = [r for r in registries.tools.records() if r.name == "thief"]
    assert record.status == "refused" and record.problem is not None


def test_two_tools_sharing_a_name_are_both_refused_naming_each_other(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tool(site, "twin-a", 'evaluators={"twin": "bk_twin_a._cli:add"}')
    _tool(site, "twin-b", 'evaluators={"twin": "bk_twin_b._cli:add"}')
    _tool(site, "bystander", 'evaluators={"calm": "bk_bystander._cli:add"}')
    registries = _fresh(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        names = registries.tools.names()
    said = sorted(str(w.message) for w in caught if issubclass(w.category, ToolWarning))
    assert "bystander" in names and not {"twin-a", "twin-b"} & set(names)
    assert len(said) == 2
    assert "tool 'twin-a' (distribution twin-a-dist 1.0) is not loaded: its evaluator " in said[0]
    assert "'twin' is taken by tool 'twin-b' (distribution twin-b-dist 1.0)" in said[0]
    assert "'twin' is taken by tool 'twin-a'" in said[1]
    assert "twin" not in registries.evaluators and "calm" in registries.evaluators


def test_a_single_entry_point_cannot_take_a_tools_name(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry point of ``benchkit.formats`` named ``native`` (not a tool: one entry) does
    not take over loading native benchmarks either."""
    fake_distribution(
        site,
        "sneaky",
        entry_points={"benchkit.formats": {"native": "bk_sneaky:FORMAT"}},
        files={"bk_sneaky.py": "FORMAT = None\n"},
    )
    registries = _fresh(monkeypatch)
    with pytest.warns(ToolWarning, match=r"format 'native' of the entry-point group "):
        found = registries.formats.get("native")
    assert type(found).__module__.startswith("benchkit.formats.native")
    assert registries.formats.is_builtin("native")


def test_benchkit_tools_picks_the_third_party_tools_to_load(
    site: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tool(site, "kept")
    _tool(site, "dropped")
    _broken_site(site)  # left out: never imported, never warned about
    monkeypatch.setenv("BENCHKIT_TOOLS", "kept")
    code, out, err = _cli(capsys, monkeypatch, "tools", "-f", "json")
    assert code == 0 and _warnings(err) == []
    rows = {row["name"]: row for row in json.loads(out)["tools"]}
    assert rows["kept"]["status"] == "ok" and rows["dropped"]["status"] == "off"
    assert rows["gone"]["status"] == "off" and rows["native"]["status"] == "ok"
    assert "bk_gone" not in sys.modules and "bk_dropped._tool" not in sys.modules
    monkeypatch.setenv("BENCHKIT_TOOLS", "")
    code, out, err = _cli(capsys, monkeypatch, "tools", "-f", "json")
    loaded = {row["name"] for row in json.loads(out)["tools"] if row["status"] == "ok"}
    assert loaded == {
        "native",
        "eval-skills",
        "skillvault",
        "memorybench",
        "codeforge",
        "humaneval",
        "dataset-files",
    }


def test_benchkit_tools_lists_name_version_distribution_parts_and_status(
    site: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tool(site, "listed", 'formats={"listed": "bk_listed._cli:FORMAT"}', version="3.1")
    fake_distribution(site, "gone-dist", tools={"gone": "bk_gone._tool:TOOL"})
    code, out, _err = _cli(capsys, monkeypatch, "tools")
    assert code == 0
    (row,) = [line for line in out.splitlines() if "│ listed" in line]
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    assert cells[:4] == ["listed", "3.1", "listed-dist", "ok"]
    assert "formats: listed" in cells[4] and "commands: listed" in cells[4]
    assert re.search(r"│ codeforge\s+│ \S+\s+│ benchkit \(built in\)\s+│ ok", out)
    assert "gone (broken): its entry point 'bk_gone._tool:TOOL' cannot be imported" in out
    code, out, _ = _cli(capsys, monkeypatch, "tools", "--check", "-f", "json")
    rows = {row["name"]: row for row in json.loads(out)["tools"]}
    assert code == 1 and rows["listed"]["status"] == "broken part"
    assert "'bk_listed._cli:FORMAT' cannot be imported" in rows["listed"]["problem"]
    assert all(rows[name]["status"] == "ok" for name in ("native", "codeforge", "memorybench"))


def test_a_format_whose_module_fails_is_skipped_by_list_with_one_warning(
    site: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tool(site, "flaky", 'formats={"flaky": "bk_flaky._format:FORMAT"}')
    (site / "bk_flaky" / "_format.py").write_text("raise RuntimeError('flaky format')\n")
    code, out, err = _cli(capsys, monkeypatch, "list", str(NATIVE))
    assert code == 0 and "ok.yaml" in out
    (said,) = _warnings(err)
    assert "format 'flaky' of tool 'flaky' (distribution flaky-dist 1.0)" in said
    assert "flaky format" in said


def test_a_tool_added_in_code_cannot_take_another_tools_name() -> None:
    mine = default_registries().copy()
    thief = Tool(
        name="code-thief",
        title="x",
        package="x",
        verifiers={"command": "benchkit.formats.skillvault.verifiers._command:CommandVerifier"},
    )
    with pytest.raises(
        RegistryError, match=r"its verifier 'command' is taken by tool 'skillvault'"
    ):
        mine.add_tool(thief)
    with pytest.raises(RegistryError, match="its command 'run' is benchkit's own"):
        mine.add_tool(Tool(name="runner", title="x", package="x", commands=_command("run")))


def _command(name: str) -> tuple[Command, ...]:
    return (Command(name=name, help="h", add="x:y"),)


def test_benchkits_own_names_are_the_parsers_and_the_servers() -> None:
    """:data:`benchkit.tools.BENCHKIT_NAMES` (what no tool may claim) lists every command
    and ``run`` option the CLI has of its own, and the server's own keywords."""
    import inspect

    from benchkit.cli._main import _parser

    parser = _parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    tools = {c.name for t in default_registries().all_tools() for c in t.commands}
    assert isinstance(sub.choices, dict)
    assert set(sub.choices) - tools == BENCHKIT_NAMES["commands"]
    run = sub.choices["run"]
    flags = {f for a in run._actions for f in a.option_strings if f.startswith("--")}
    assert flags <= BENCHKIT_NAMES["run_options"]
    from benchkit.serve._app import create_app

    keywords = set(inspect.signature(create_app).parameters) - {"settings"}
    assert keywords <= BENCHKIT_NAMES["server_settings"]


def test_the_server_toolkit_names_no_module_of_the_server() -> None:
    """The import contract sees imports; a module named by a string (``import_module``)
    is checked here: the toolkits reach the server only through what the CLI hands them."""
    for folder in ("serve_toolkit",):
        for path in (REPO / "src" / "benchkit" / folder).glob("*.py"):
            text = path.read_text(encoding="utf-8")
            assert "import_module" not in text and "__import__" not in text, path
    text = (REPO / "src" / "benchkit" / "cli_toolkit.py").read_text(encoding="utf-8")
    assert "import_module" not in text


def test_a_tool_serving_a_taken_path_is_not_served_and_the_server_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Route paths are names too: a tool serving ``POST /api/runs`` (benchkit's) or a path
    another tool serves is left out of the server with a warning; the rest is served."""
    pytest.importorskip("starlette")
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from benchkit.serve import create_app
    from benchkit.serve_toolkit import ToolRoutes

    def answer(text: str) -> ToolRoutes:
        async def say(request: object) -> PlainTextResponse:
            return PlainTextResponse(text)

        paths = {"taker": "/api/runs", "twin-a": "/twin", "twin-b": "/twin", "calm": "/calm"}
        return ToolRoutes(routes=lambda state: [Route(paths[text], say, methods=["POST"])])

    module = sys.modules[__name__]
    registries = default_registries().copy()
    for name in ("taker", "twin-a", "twin-b", "calm"):
        monkeypatch.setattr(module, f"ROUTES_{name.replace('-', '_')}", answer(name), raising=False)
        registries.add_tool(
            Tool(
                name=name,
                title=name,
                package=__name__,
                routes=f"{__name__}:ROUTES_{name.replace('-', '_')}",
            )
        )
    monkeypatch.setattr(benchkit.registry, "_DEFAULT", registries)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app = create_app(root=tmp_path, store=tmp_path / "s.db")
    said = sorted(str(w.message) for w in caught if issubclass(w.category, ToolWarning))
    assert len(said) == 3, said
    assert (
        "tool 'taker' (added in code): its routes are not served: the route POST /api/runs is benchkit's own"
        in said[0]
    )
    assert "POST /twin is also tool 'twin-b''s" in said[1]
    assert "POST /twin is also tool 'twin-a''s" in said[2]
    headers = {"content-type": "application/json"}
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.post("/calm", headers=headers, content="{}").text == "calm"
        assert client.post("/twin", headers=headers, content="{}").status_code == 404
        runs = client.post("/api/runs", headers=headers, content="{}")
        assert runs.status_code == 400 and runs.json()["code"] == "INVALID_BODY"


class Shout:
    """An answer generator a tool brings: the first memory, in capitals."""

    def __init__(self, suffix: str = "!") -> None:
        self.suffix = suffix

    async def generate(self, question: str, contexts: Sequence[str], task: Task) -> Answer:
        return Answer((contexts[0] if contexts else "").upper() + self.suffix)


class Plain:
    """An HTTP body mode a tool brings: the input under a key its options name."""

    headers: Mapping[str, str] = {"X-Plain": "1"}

    def payload(self, request: Request, options: Mapping[str, Any]) -> Any:
        return {str(options.get("key", "q")): request.task.input}


PLAIN = Plain()


def test_answer_generators_and_http_bodies_come_from_the_tools() -> None:
    """What only one tool means (MemoryBench's LLM answer, eval-skills' request shape) is
    the tool's: the memory pipeline and the http provider look them up in the registries,
    where any tool adds its own."""
    from benchkit.memory import LocalBaseline, MemoryPipeline
    from benchkit.providers import HttpProvider

    assert "llm" in default_registries().answer_generators
    assert default_registries().answer_generators.owner("llm") is None  # a built-in tool's
    assert "eval-skills" in default_registries().http_bodies
    mine = default_registries().copy()
    mine.add_tool(
        Tool(
            name="shapes",
            title="Shapes",
            package=__name__,
            answer_generators={"shout": f"{__name__}:Shout"},
            http_bodies={"plain": f"{__name__}:PLAIN"},
        )
    )
    pipeline = MemoryPipeline(
        LocalBaseline(), answer="shout", answer_options={"suffix": "?"}, registries=mine
    )
    answered = anyio.run(pipeline.answer.generate, "q", ["paris"], Task("t"))
    assert answered.text == "PARIS?"
    provider = HttpProvider(
        "http://127.0.0.1:9/x", body="plain", body_options={"key": "ask"}, registries=mine
    )
    request = Request(Task("t", input="2+2"), Condition("c", ProviderSpec("http")))
    assert provider._payload(request) == {"ask": "2+2"}
    assert provider._headers["X-Plain"] == "1"
    with pytest.raises(
        ConfigError, match=r"body .plain. is unknown.*use one of benchkit, eval-skills, input"
    ):
        HttpProvider("http://127.0.0.1:9/x", body="plain")
    with pytest.raises(ConfigError, match="unknown answer generator 'shout'"):
        MemoryPipeline(LocalBaseline(), answer="shout")
