"""eval-skills as a tool: published under the entry-point group ``benchkit.tools``."""

from __future__ import annotations

from benchkit.tools import Command, Tool

__all__ = ["TOOL"]

TOOL = Tool(
    name="eval-skills",
    title="eval-skills",
    package="benchkit.formats.eval_skills",
    description="Agent skills (skill.json) against eval-skills benchmark files.",
    formats={"eval-skills": "benchkit.formats.eval_skills:FORMAT"},
    evaluators={"llm_judge": "benchkit.formats.eval_skills._judge:EvalSkillsJudge"},
    http_bodies={"eval-skills": "benchkit.formats.eval_skills._http:BODY"},
    commands=(
        Command(
            name="eval",
            help="evaluate eval-skills skills against an eval-skills benchmark",
            add="benchkit.formats.eval_skills._cli:add_commands",
        ),
    ),
)
