"""eval-skills' request shape for skills served over HTTP (``adapterType: http``): the
``http`` provider's ``body: eval-skills``, registered through the Tool (``http_bodies``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchkit.model import Request

__all__ = ["BODY", "EVAL_SKILLS_VERSION"]

#: The protocol version eval-skills sends in ``X-Eval-Skills-Version``.
EVAL_SKILLS_VERSION = "0.1.0"


class EvalSkillsBody:
    """``{"skillId": <condition id>, "version": <body_options.version, else 0.0.0>,
    "input": <the task's input>}``, with the header ``X-Eval-Skills-Version: 0.1.0``."""

    headers: Mapping[str, str] = {"X-Eval-Skills-Version": EVAL_SKILLS_VERSION}

    def payload(self, request: Request, options: Mapping[str, Any]) -> Any:
        return {
            "skillId": request.condition.id,
            "version": str(options.get("version") or "0.0.0"),
            "input": request.task.input,
        }


BODY = EvalSkillsBody()
