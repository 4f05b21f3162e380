"""docs/ci.md's recipes work: each runs as its CI service would run it (#44).

The GitHub Actions workflow and the GitLab CI file are read from the page itself. A job on
``main`` runs and keeps the run store in a cache; pull-request jobs restore it, run, compare
and post the comment. Every ``run:`` / ``script:`` line runs in bash as the service runs
it (GitHub: one ``bash -e`` per step, ``if:`` conditions honoured; GitLab: the job's
script in one ``bash -e -o pipefail``); ``python`` is this interpreter, and ``pip``,
``gh`` and ``curl`` are stand-ins that install nothing and keep the comment they were
given. The system under test answers every task, or breaks the first ten of forty.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from benchkit.store._compare import COMMENT_MARKER

from ._support import REPO

pytestmark = pytest.mark.slow

PAGE = REPO / "docs" / "ci.md"
_YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.DOTALL | re.MULTILINE)

BENCH = """\
benchkit: 1
id: qa
evaluators: [exact]
conditions:
  - id: sys
    provider: {type: python, file: answers.py, function: answer}
tasks:
""" + "".join(f'  - {{id: t{i}, input: {i}, expected: "{i}"}}\n' for i in range(40))

ANSWERS = """\
import os


def answer(task_input: int) -> str:
    broken = int(os.environ.get("GATE_BROKEN", "0"))
    return "nope" if task_input < broken else str(task_input)
"""

#: The stand-ins on PATH: ``python`` is the interpreter running the tests; ``gh`` and
#: ``curl`` copy the comment's file to $COMMENTS; ``pip`` installs nothing.
STANDINS = {
    "python": f'#!/bin/sh\nexec "{sys.executable}" "$@"\n',
    "pip": "#!/bin/sh\nexit 0\n",
    "gh": """#!/bin/sh
while [ $# -gt 0 ]; do
  if [ "$1" = "--body-file" ]; then cp "$2" "$COMMENTS/$(date +%s%N).md"; fi
  shift
done
""",
    "curl": """#!/bin/sh
while [ $# -gt 0 ]; do
  case "$2" in body@*) cp "${2#body@}" "$COMMENTS/$(date +%s%N).md";; esac
  shift
done
""",
}


def _recipes() -> tuple[dict[str, Any], dict[str, Any]]:
    """The GitHub workflow and the GitLab CI file of docs/ci.md."""
    found = [YAML(typ="safe").load(body) for body in _YAML_BLOCK.findall(PAGE.read_text())]
    github = next(doc for doc in found if "jobs" in doc)
    gitlab = next(doc for doc in found if "stages" in doc)
    return github, gitlab


class Service:
    """A CI service's cache, workspaces and the comments its jobs posted."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache = root / "cache"
        self.cache.mkdir()
        self.comments = root / "comments"
        self.comments.mkdir()
        self.bin = root / "bin"
        self.bin.mkdir()
        for name, text in STANDINS.items():
            (self.bin / name).write_text(text, encoding="utf-8")
            (self.bin / name).chmod(0o755)
        self.jobs = 0

    def workspace(self) -> Path:
        """A fresh checkout: the benchmark, no run store."""
        self.jobs += 1
        work = self.root / f"job{self.jobs}"
        (work / "evals").mkdir(parents=True)
        (work / "evals" / "qa.yaml").write_text(BENCH, encoding="utf-8")
        (work / "evals" / "answers.py").write_text(ANSWERS, encoding="utf-8")
        return work

    def env(self, broken: int, extra: Mapping[str, str]) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHKIT_")}
        env.update(
            PATH=os.pathsep.join([str(self.bin), env.get("PATH", "")]),
            PYTHONPATH=str(REPO / "src"),
            COMMENTS=str(self.comments),
            GATE_BROKEN=str(broken),
            **extra,
        )
        return env

    def bash(self, script: str, work: Path, env: Mapping[str, str], *flags: str) -> int:
        proc = subprocess.run(
            ["bash", *flags, "-c", script],
            cwd=work,
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc.returncode

    def last_comment(self) -> str:
        posted = sorted(self.comments.iterdir())
        assert posted, "no comment was posted"
        return posted[-1].read_text(encoding="utf-8")

    def restore(self, key: str, prefixes: list[str], work: Path) -> None:
        """actions/cache/restore and GitLab's pull: the exact key, else the newest saved
        under a prefix."""
        exact = self.cache / key
        saved = sorted(
            (p for p in self.cache.iterdir() if any(p.name.startswith(x) for x in prefixes)),
            key=lambda p: p.stat().st_mtime_ns,
        )
        chosen = exact if exact.exists() else (saved[-1] if saved else None)
        if chosen is not None:
            shutil.copytree(chosen, work / ".benchkit")

    def save(self, key: str, work: Path) -> None:
        if (work / ".benchkit").exists():
            shutil.rmtree(self.cache / key, ignore_errors=True)
            shutil.copytree(work / ".benchkit", self.cache / key)


# -- GitHub Actions ------------------------------------------------------------------------


def _github_if(condition: str | None, context: Mapping[str, str], failed: bool) -> bool:
    """An ``if:`` of the recipe: success() unless always() is named."""
    if condition is None:
        return not failed
    expr = condition.replace("&&", " and ").replace("||", " or ").replace("always()", "True")
    for name, value in context.items():
        expr = expr.replace(name, repr(value))
    verdict = bool(eval(expr, {"__builtins__": {}}))  # only the recipe's own expressions
    return verdict and ("always()" in condition or not failed)


def _expand(text: str, context: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1).strip()
        assert name in context, f"docs/ci.md uses ${{{{ {name} }}}}, unknown to this test"
        return context[name]

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def github_job(service: Service, workflow: dict[str, Any], *, pr: bool, broken: int) -> bool:
    """One run of the workflow's job; True when it failed."""
    context = {
        "github.event_name": "pull_request" if pr else "push",
        "github.ref": "refs/pull/7/merge" if pr else "refs/heads/main",
        "github.sha": f"sha{service.jobs}",
        "github.token": "token",
        "github.event.pull_request.number": "7",
    }
    work = service.workspace()
    failed = False
    for step in workflow["jobs"]["evals"]["steps"]:
        if not _github_if(step.get("if"), context, failed):
            continue
        uses = step.get("uses", "")
        options = {k: _expand(str(v), context) for k, v in step.get("with", {}).items()}
        if uses.startswith("actions/cache/restore"):
            service.restore(options["key"], options["restore-keys"].split(), work)
        elif uses.startswith("actions/cache/save"):
            service.save(options["key"], work)
        elif "run" in step:
            env = service.env(
                broken, {k: _expand(v, context) for k, v in step.get("env", {}).items()}
            )
            if service.bash(_expand(step["run"], context), work, env, "-e") != 0:
                failed = True
    return failed


@pytest.mark.skipif(shutil.which("bash") is None, reason="the recipes' steps run in bash")
def test_the_github_actions_recipe_gates_and_comments(tmp_path: Path) -> None:
    workflow, _ = _recipes()
    assert set(workflow["on"]) == {"push", "pull_request"}
    service = Service(tmp_path)
    assert not github_job(service, workflow, pr=False, broken=0)  # main: run, save the store
    assert not list(service.comments.iterdir())  # no comment on main

    assert not github_job(service, workflow, pr=True, broken=0)
    comment = service.last_comment()
    assert comment.startswith("✅ ") and "no regression detectable" in comment.splitlines()[0]
    assert comment.rstrip().endswith(COMMENT_MARKER)

    assert github_job(service, workflow, pr=True, broken=10)  # the job fails ...
    comment = service.last_comment()  # ... and the comment is posted anyway
    assert comment.startswith("❌ ") and "<summary>Flipped tasks: 10 worse" in comment


# -- GitLab CI -------------------------------------------------------------------------------


def _gitlab_rule(rule: str, variables: Mapping[str, str]) -> bool:
    expr = re.sub(r"\$(\w+)", lambda m: repr(variables.get(m.group(1), "")), rule)
    return bool(eval(expr, {"__builtins__": {}}))  # only the recipe's own rules


def gitlab_pipeline(service: Service, config: dict[str, Any], *, mr: bool, broken: int) -> bool:
    """The pipeline of a push to main or of a merge request; True when a job failed."""
    variables = {
        "CI_DEFAULT_BRANCH": "main",
        "CI_COMMIT_BRANCH": "" if mr else "main",
        "CI_PIPELINE_SOURCE": "merge_request_event" if mr else "push",
        "CI_API_V4_URL": "https://gitlab.example/api/v4",
        "CI_PROJECT_ID": "1",
        "CI_MERGE_REQUEST_IID": "7",
        "EVALS_BOT_TOKEN": "token",
    }
    jobs = [
        job
        for name, job in config.items()
        if isinstance(job, dict)
        and "script" in job
        and any(_gitlab_rule(r["if"], variables) for r in job.get("rules", []))
    ]
    assert len(jobs) == 1, "one job per pipeline"
    (job,) = jobs
    work = service.workspace()
    cache = job["cache"]
    service.restore(cache["key"], [], work)
    script = "\n".join(job["script"])
    code = service.bash(script, work, service.env(broken, variables), "-e", "-o", "pipefail")
    if code == 0 and cache.get("policy", "pull-push") == "pull-push":
        service.save(cache["key"], work)
    return code != 0


@pytest.mark.skipif(shutil.which("bash") is None, reason="the recipes' scripts run in bash")
def test_the_gitlab_ci_recipe_gates_and_comments(tmp_path: Path) -> None:
    _, config = _recipes()
    service = Service(tmp_path)
    assert not gitlab_pipeline(service, config, mr=False, broken=0)
    assert not list(service.comments.iterdir())

    assert not gitlab_pipeline(service, config, mr=True, broken=0)
    assert service.last_comment().startswith("✅ ")

    assert gitlab_pipeline(service, config, mr=True, broken=10)
    comment = service.last_comment()
    assert comment.startswith("❌ ") and "sys regressed" in comment
    # The merge requests pulled the cache and never pushed: main's store is main's alone.
    assert gitlab_pipeline(service, config, mr=True, broken=10)
