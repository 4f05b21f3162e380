"""Agent tasks acted on: initial files, the model's files or patch, the test command."""

from __future__ import annotations

import difflib

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchkit import Condition, MockProvider, Response, Runner, Task
from benchkit.errors import ConfigError
from benchkit.evaluators import CodeTestsEvaluator
from benchkit.evaluators._workspace import PatchError, apply_patch, changed_files, safe_path
from benchkit.formats.codeforge import codeforge_suite

from ._support import REPO

pytestmark = pytest.mark.anyio

AGENT = REPO / "benchmarks" / "codeforge" / "agent-coding.yaml"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# --------------------------------------------------------------------------- files and patches


def test_a_reply_names_its_files_in_the_ways_models_write_them() -> None:
    reply = (
        "Here is the module.\n\n**slug.py**\n```python\ndef slugify(t):\n    return t\n```\n"
        '```python title="pkg/util.py"\nX = 1\n```\n'
        "```python\n# file: notes.txt\nhello\n```\n"
        "```js app.js\nlet a\n```\n"
    )
    files, patches = changed_files(reply)
    assert files == {
        "slug.py": "def slugify(t):\n    return t\n",
        "pkg/util.py": "X = 1\n",
        "notes.txt": "hello\n",
        "app.js": "let a\n",
    }
    assert patches == []


def test_one_unnamed_block_goes_to_the_one_file_the_prompt_names() -> None:
    assert changed_files("```python\nx = 1\n```", "Create lru.py with ...")[0] == {
        "lru.py": "x = 1\n"
    }
    assert changed_files("```python\nx = 1\n```", "Edit a.py and b.py")[0] == {}
    assert changed_files({"files": {"a.py": "1"}, "patch": ""}) == ({"a.py": "1"}, [])


def test_a_patch_applies_to_the_initial_files() -> None:
    files = {"stats.py": "def mean(v):\n    return sum(v) / len(v)\n"}
    diff = (
        "--- a/stats.py\n+++ b/stats.py\n@@ -1,2 +1,4 @@\n def mean(v):\n"
        "+    if not v:\n+        return 0.0\n     return sum(v) / len(v)\n"
        "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+NEW = 1\n"
    )
    out = apply_patch(files, diff)
    assert (
        out["stats.py"]
        == "def mean(v):\n    if not v:\n        return 0.0\n    return sum(v) / len(v)\n"
    )
    assert out["new.py"] == "NEW = 1\n"
    with pytest.raises(PatchError, match="does not apply"):
        apply_patch({"stats.py": "other\n"}, diff)
    with pytest.raises(PatchError, match="leaves the workspace"):
        apply_patch({}, "--- /dev/null\n+++ b/../escape.py\n@@ -0,0 +1 @@\n+x\n")


@given(
    st.lists(st.sampled_from(["a", "b", "c", "def f():", "    return 1", ""]), max_size=12),
    st.lists(st.sampled_from(["a", "b", "x", "def f():", "    return 2", ""]), max_size=12),
)
def test_a_difflib_diff_turns_the_old_text_into_the_new(old: list[str], new: list[str]) -> None:
    before, after = "\n".join(old) + "\n", "\n".join(new) + "\n"
    diff = "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), "a/m.py", "b/m.py"
        )
    )
    assert apply_patch({"m.py": before}, diff)["m.py"] == (after if diff else before)


def test_paths_that_leave_the_workspace_are_refused() -> None:
    assert [safe_path(p) for p in ("a/b.py", "/etc/x", "../x", "~/x", "")] == [
        "a/b.py",
        None,
        None,
        None,
        None,
    ]


# --------------------------------------------------------------------------- the evaluator


async def test_the_test_command_decides_with_the_reason() -> None:
    evaluator = CodeTestsEvaluator(mode="workspace", timeout=30)
    task = Task(
        "t",
        input="Fix stats.py.",
        metadata={
            "initial_files": {"stats.py": "def mean(v):\n    return sum(v) / len(v)\n"},
            "test_command": 'python -c "from stats import mean; assert mean([]) == 0.0"',
        },
    )
    fixed = "```python\ndef mean(v):\n    return sum(v) / len(v) if v else 0.0\n```"
    passed = await evaluator.evaluate(task, Response(fixed))
    assert (passed.passed, passed.reason, passed.details["written"]) == (
        True,
        "the test command passed",
        ["stats.py"],
    )
    unchanged = await evaluator.evaluate(task, Response("```python\n# file: other.py\nx = 1\n```"))
    assert not unchanged.passed
    assert unchanged.reason is not None and "ZeroDivisionError" in unchanged.reason
    nothing = await evaluator.evaluate(task, Response("I would rather not."))
    assert nothing.reason == "the response names no file and gives no patch to apply"
    bad = await evaluator.evaluate(task, Response({"files": {"../x.py": "1"}}))
    assert bad.reason == "the response writes '../x.py', which leaves the workspace"
    no_command = await CodeTestsEvaluator(mode="workspace").evaluate(Task("t"), Response("x"))
    assert no_command.error is not None and "no test command" in no_command.error


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ConfigError, match="mode must be program or workspace"):
        CodeTestsEvaluator(mode="agent")


# --------------------------------------------------------------------------- CodeForge


REPLIES = {
    "ag-001": "Sure:\n```python\n# slug.py\nimport re\n\ndef slugify(title):\n"
    "    return re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')\n```",
    "ag-002": "```diff\n--- a/stats.py\n+++ b/stats.py\n@@ -4,2 +4,4 @@\n def mean(values):\n"
    "+    if not values:\n+        return 0.0\n     return total(values) / len(values)\n```",
    "ag-003": "test_inventory.py:\n```python\nimport pytest\nfrom inventory import Inventory\n\n"
    "def test_add():\n    i = Inventory(); i.add('a', 2); assert i.items['a'] == 2\n\n"
    "def test_refuse():\n    i = Inventory()\n    with pytest.raises(ValueError):\n"
    "        i.remove('a', 1)\n```",
    "ag-004": "settings.py\n```python\ndef load_settings(path):\n    return {}\n```",
    "ag-005": "```python\nclass LRU:\n    pass\n```",
}


async def test_codeforge_agent_tasks_run_their_test_command_in_the_sandbox() -> None:
    suite = codeforge_suite(AGENT, model="m", metrics=["tests"], concurrency=4)
    answers = MockProvider(lambda request: REPLIES[request.task.id])
    suite = attrs.evolve(suite, conditions=(Condition("m", answers),))
    result = await Runner().run(suite)
    outcome = {c.task_id: (c.passed, c.scores[0].name, c.scores[0].reason) for c in result.cells}
    assert outcome["ag-001"] == (True, "tests", "the test command passed")
    assert outcome["ag-002"] == (True, "tests", "the test command passed")
    assert outcome["ag-003"] == (True, "tests", "the test command passed")
    assert outcome["ag-004"][0] is False and "AssertionError" in str(outcome["ag-004"][2])
    assert outcome["ag-005"][0] is False and "TypeError" in str(outcome["ag-005"][2])


def test_the_tests_metric_needs_a_test_command() -> None:
    basic = REPO / "benchmarks" / "codeforge" / "basic-coding.yaml"
    with pytest.raises(ConfigError, match="needs a `test_command`"):
        codeforge_suite(basic, model="m", metrics=["tests"])
    with pytest.raises(ConfigError, match="did you mean `tests`"):
        codeforge_suite(AGENT, model="m", metrics=["testz"])
