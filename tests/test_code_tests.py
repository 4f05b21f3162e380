"""The code_tests evaluator: extraction, HumanEval's protocol, pass@k, and hostile code."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchkit import (
    Benchmark,
    Condition,
    EvaluatorSpec,
    MockProvider,
    Request,
    Response,
    Runner,
    RunOptions,
    ScoringSpec,
    Suite,
    Task,
)
from benchkit.errors import ConfigError
from benchkit.evaluators import CodeTestsEvaluator, extract_code
from benchkit.registry import default_registries
from benchkit.reports import to_markdown
from benchkit.stats import pass_at_k

from ._support import REPO

pytestmark = pytest.mark.anyio

PROMPT = 'def add(a, b):\n    """Return a + b."""\n'
TESTS = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def add_task(task_id: str = "add", **metadata: object) -> Task:
    return Task(
        task_id,
        input="Complete add.",
        metadata={"prompt": PROMPT, "tests": TESTS, "entry_point": "add", **metadata},
    )


# --------------------------------------------------------------------------- extraction


def test_extraction_takes_the_python_block_that_defines_the_entry_point() -> None:
    reply = textwrap.dedent(
        """\
        First a helper, in shell:
        ```sh
        echo hi
        ```
        ```python
        import math
        ```
        And the function:
        ```python
        def add(a, b):
            return a + b
        ```
        """
    )
    assert extract_code(reply, entry_point="add") == "def add(a, b):\n    return a + b\n"
    assert extract_code(reply) == "import math\n"
    assert extract_code("no fences\n    return 1") == "no fences\n    return 1"
    assert extract_code("```js\nlet x\n```") == "let x\n"
    assert extract_code("```python\ndef f():\n    pass") == "def f():\n    pass"
    assert extract_code("~~~~ Python\nx = 1\n~~~~\n") == "x = 1\n"
    assert extract_code("```js\na\n```\n```\nb\n```", language="js") == "a\n"


code_lines = st.lists(
    st.text(alphabet=st.characters(blacklist_characters="`~\r", codec="utf-8"), max_size=30),
    max_size=8,
)


@given(code_lines, st.text(alphabet="abc .,\n", max_size=40), st.sampled_from(["python", ""]))
def test_a_fenced_block_round_trips_through_prose(lines: list[str], prose: str, tag: str) -> None:
    code = "".join(line.replace("\n", " ") + "\n" for line in lines)
    reply = f"{prose}\n```{tag}\n{code}```\n{prose}"
    assert extract_code(reply) == code


# --------------------------------------------------------------------------- the evaluator


@pytest.mark.parametrize(
    ("completion", "passed", "outcome", "reason"),
    [
        ("    return a + b\n", True, "passed", "the tests passed"),
        ("    return a - b\n", False, "failed", "AssertionError (line 6: assert candidate(1, 2) == 3)"),
        ("```python\ndef add(a, b):\n    return b + a\n```\n", True, "passed", "the tests passed"),
        ("    raise ValueError('nope')\n", False, "failed", "ValueError: nope (line 3: raise ValueError('nope'))"),
        ("    import os; os._exit(0)\n", False, "failed", "the program ended the process before its tests finished"),
        ("    exit()\n", False, "failed", "SystemExit: None (line 3: exit())"),
        ("    return bytearray(10**11)\n", False, "memory", "MemoryError (line 3: return bytearray(10**11))"),
    ],
)  # fmt: skip
async def test_humaneval_protocol_scores_with_the_reason(
    completion: str, passed: bool, outcome: str, reason: str
) -> None:
    score = await CodeTestsEvaluator(prompt_prefix=True).evaluate(add_task(), Response(completion))
    assert (score.passed, score.value, score.details["outcome"], score.reason) == (
        passed,
        1.0 if passed else 0.0,
        outcome,
        reason,
    )
    assert score.error is None


async def test_the_raw_reply_is_kept_beside_the_extracted_code() -> None:
    reply = "Here you go:\n```python\ndef add(a, b):\n    return a + b\n```\nEnjoy."
    score = await CodeTestsEvaluator().evaluate(add_task(), Response(reply))
    assert score.details["code"] == "def add(a, b):\n    return a + b\n"
    assert score.details["raw"] == reply


async def test_a_timeout_is_its_own_outcome() -> None:
    score = await CodeTestsEvaluator(prompt_prefix=True, timeout=0.5).evaluate(
        add_task(), Response("    while True:\n        pass\n")
    )
    assert (score.passed, score.details["outcome"], score.reason) == (
        False,
        "timeout",
        "timed out after 0.5 s",
    )


async def test_tests_come_from_the_option_then_metadata_then_expected() -> None:
    plain = Task("t", expected="assert f() == 2\n")
    assert (await CodeTestsEvaluator().evaluate(plain, Response("def f(): return 2"))).passed
    option = CodeTestsEvaluator(tests="assert f() == 3\n")
    assert not (await option.evaluate(plain, Response("def f(): return 2"))).passed
    none = await CodeTestsEvaluator().evaluate(Task("t"), Response("x = 1"))
    assert none.value is None and none.error is not None and "no tests" in none.error
    not_text = await CodeTestsEvaluator().evaluate(plain, Response({"code": 1}))
    assert not_text.error == "the output is dict, not code text"


async def test_another_language_runs_through_its_command_template() -> None:
    evaluator = CodeTestsEvaluator(language="sh", command="sh {file}", file="main.sh")
    task = Task("t", expected='[ "$(greet)" = "hello" ] || exit 3\n')
    ok = await evaluator.evaluate(task, Response("```sh\ngreet() { echo hello; }\n```"))
    bad = await evaluator.evaluate(task, Response("greet() { echo bye; }"))
    assert ok.passed and ok.details["outcome"] == "passed"
    assert (bad.passed, bad.details["outcome"], bad.reason) == (
        False,
        "failed",
        "exited with status 3",
    )


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"language": "js"}, "needs a command template"),
        ({"language": "bad lang"}, "language must be a name"),
        ({"timeout": 0}, "'timeout' must be > 0"),
        ({"timeout": 1e9}, "'timeout' must be <="),
        ({"concurrency": 0}, "'concurrency'"),
        ({"file": "../x.py"}, "relative name inside the sandbox"),
        ({"tests": 3}, "'tests' must be a string"),
        ({"command": []}, "command must be a string or a list"),
        ({"memory_mb": -1}, "memory_mb"),
        ({"isolation": "chroot"}, "unknown sandbox isolation"),
    ],
)
def test_bad_options_are_refused_when_built(options: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        default_registries().evaluators.build("code_tests", options)


async def _spans(concurrency: int) -> list[tuple[float, float]]:
    """When each of three programs started and ended, run by one evaluator at once."""
    evaluator = CodeTestsEvaluator(concurrency=concurrency)
    code = "import time\nprint(time.time())\ntime.sleep(0.6)\nprint(time.time())\n"
    spans: list[tuple[float, float]] = []

    async def one() -> None:
        score = await evaluator.evaluate(Task("t", expected="pass"), Response(code))
        start, end = map(float, str(score.details["stdout"]).split())
        spans.append((start, end))

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(one)
    await evaluator.aclose()
    return sorted(spans)


async def test_executions_run_in_parallel_up_to_the_concurrency() -> None:
    one_at_a_time = await _spans(1)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(one_at_a_time))
    together = await _spans(3)
    assert together[0][1] > together[-1][0]  # the last started before the first ended


def test_require_isolation_is_refused_before_any_cell_without_it() -> None:
    with pytest.raises(ConfigError, match="network isolation is unavailable"):
        CodeTestsEvaluator(isolation="process", require_isolation=True)


# --------------------------------------------------------------------------- pass@k in a run


async def test_epochs_feed_unbiased_pass_at_k_with_the_task_as_the_unit() -> None:
    right, wrong = "    return a + b\n", "    return a * b\n"
    passes = {"t0": 3, "t1": 1, "t2": 0}  # correct answers among 4 epochs

    def answer(request: Request) -> str:
        return right if request.epoch < passes[request.task.id] else wrong

    tasks = [add_task(tid) for tid in passes]
    benchmark = Benchmark(
        "humaneval-mini",
        tasks=tasks,
        evaluators=[EvaluatorSpec("code_tests", {"prompt_prefix": True, "concurrency": 2})],
        scoring=ScoringSpec("pass_at_k", 2),
    )
    suite = Suite(benchmark, [Condition("m", MockProvider(answer))], RunOptions(epochs=4))
    before = set(servers_of_this_process())
    result = await Runner().run(suite)
    agg = result.aggregate("m")
    expected = sum(pass_at_k(4, c, 2) for c in passes.values()) / 3
    assert agg.score == pytest.approx(expected)
    assert agg.pass_rate == pytest.approx(4 / 12)
    assert (agg.pass_rate_ci.method, agg.pass_rate_ci.n) == ("task_t", 3)
    assert "(pass@2)" in to_markdown(result)
    assert set(servers_of_this_process()) <= before  # the Runner closed the evaluator's sandbox


def servers_of_this_process() -> list[int]:
    """Sandbox fork servers started by this process that still run."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
            parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"--serve" in cmdline and b"_launcher.py" in cmdline and parent == os.getpid():
            found.append(int(entry.name))
    return found


# --------------------------------------------------------------------------- hostile code


def running_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ_ok = (entry / "stat").read_text().rpartition(")")[2].split()[0] != "Z"
        except OSError:
            continue
        if token.encode() in cmdline and environ_ok:
            found.append(int(entry.name))
    return found


SECRET = "s3cr3t-planted-for-the-environ-test"

HOSTILE: dict[str, tuple[str, str]] = {
    # task id: (the body of solve(), the outcome it must end as)
    "infinite_loop": ("while True:\n    pass", "timeout"),
    "fork_bomb": (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        "timeout",
    ),
    "allocate_10gb": ("x = bytearray(10 * 1024**3)\nreturn 1", "memory"),
    "write_1gb": (
        "with open('big.bin', 'wb') as f:\n    for _ in range(1024):\n"
        "        f.write(b'x' * 1024 * 1024)\nreturn 1",
        "failed",
    ),
    "write_outside": ("open('/tmp/benchkit-hostile-outside', 'w').write('x')\nreturn 1", "failed"),
    "read_environ": (
        f"assert {SECRET!r} not in open('/proc/self/environ').read()\nreturn 1",
        "passed",
    ),
    "socket_to_loopback": (
        "import socket\nsocket.create_connection(('127.0.0.1', PORT), timeout=2)\nreturn 1",
        "failed",
    ),
    "kill_parent": ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nreturn 1", "ANY"),
    "close_stdout": ("import os\nos.close(1)\nos.close(2)\nreturn 1", "passed"),
    "print_100mb": (
        "import sys\nfor _ in range(100):\n    sys.stdout.write('x' * 1024 * 1024)\nreturn 1",
        "passed",
    ),
    "setsid_escape": (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(120)\nreturn 1",
        "passed",
    ),
    "honest": ("return 1", "passed"),
}


async def _listener() -> tuple[anyio.abc.Listener[anyio.abc.SocketStream], int]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    return listener, port


@pytest.mark.slow
async def test_hostile_programs_end_as_their_category_and_leave_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from benchkit.sandbox import Sandbox

    if Sandbox().isolation().mode != "namespaces":
        pytest.skip("no namespaces here: writing outside and the network are not contained")
    monkeypatch.setenv("BENCHKIT_HOSTILE_SECRET", SECRET)
    token = uuid.uuid4().hex
    listener, port = await _listener()
    tasks = []
    for task_id, (body, _) in HOSTILE.items():
        code = f"# {token}\ndef solve():\n" + textwrap.indent(
            body.replace("PORT", str(port)), "    "
        )
        metadata = {"tests": "def check(f):\n    assert f() == 1\n", "entry_point": "solve"}
        tasks.append(Task(task_id, input=code, metadata=metadata))
    # 8 s: on a machine loaded by other work, 100 MB through a pipe took more than 2 s.
    options = {"timeout": 8, "processes": 32, "memory_mb": 512, "file_size_mb": 16}
    benchmark = Benchmark("hostile", tasks=tasks, evaluators=[EvaluatorSpec("code_tests", options)])
    echo = MockProvider(lambda request: str(request.task.input))
    suite = Suite(benchmark, [Condition("m", echo)], RunOptions(concurrency=4))
    started = time.monotonic()
    async with listener:
        result = await Runner().run(suite)
    took = time.monotonic() - started
    outcomes = {c.task_id: c.scores[0].details["outcome"] for c in result.cells}
    assert len(result.cells) == len(HOSTILE)  # every other cell kept
    for task_id, (_, wanted) in HOSTILE.items():
        if wanted != "ANY":
            assert outcomes[task_id] == wanted, (task_id, result.cells)
    assert outcomes["kill_parent"] in ("passed", "crashed", "failed")
    reasons = {c.task_id: c.scores[0].reason or "" for c in result.cells}
    assert "Read-only file system" in reasons["write_outside"]
    assert "File too large" in reasons["write_1gb"]
    assert "Network is unreachable" in reasons["socket_to_loopback"]
    assert not Path("/tmp/benchkit-hostile-outside").exists()
    assert took < 120  # every cell ended within its limits, not at some outer deadline
    deadline = time.monotonic() + 5
    while running_with(token) and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    assert running_with(token) == []
    assert os.getloadavg()[0] >= 0  # the machine still answers


def test_require_isolation_on_the_command_line_refuses_an_unisolated_sandbox(
    tmp_path: Path,
) -> None:
    bench = tmp_path / "b.yaml"
    bench.write_text(
        textwrap.dedent(
            """\
            benchkit: 1
            id: iso
            evaluators: [{type: code_tests, isolation: process}]
            conditions: [{id: m, provider: {type: python, callable: "builtins:str"}}]
            tasks: [{id: t, input: "x = 1", expected: "assert x == 1"}]
            """
        ),
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    command = [sys.executable, "-m", "benchkit", "run", str(bench), "--no-store"]
    refused = subprocess.run(
        [*command, "--require-isolation"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert refused.returncode == 2, refused.stderr
    assert "network isolation is unavailable" in refused.stderr
    assert "Traceback" not in refused.stderr
    allowed = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
