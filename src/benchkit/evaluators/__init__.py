"""Built-in evaluators: each scores one response against its task's expectation.

* :class:`ExactEvaluator` (``exact``) — the output, as text, equals the expected value;
* :class:`ContainsEvaluator` (``contains``) — the fraction of keywords found in the output;
* :class:`RegexEvaluator` (``regex``) — the fraction of regular expressions that match;
* :class:`JsonSchemaEvaluator` (``json_schema``) — the output validates against a JSON Schema;
* :class:`NumericEvaluator` (``numeric``) — the output is a number within a tolerance;
* :class:`CodeTestsEvaluator` (``code_tests``) — the code in the output passes the task's
  tests, run in :mod:`benchkit.sandbox` (docs/code.md).

The registry builds them by name from an :class:`~benchkit.model.EvaluatorSpec`, passing its
options as keyword arguments::

    >>> from benchkit.registry import default_registries
    >>> evaluator = default_registries().evaluators.build("contains", {"keywords": ["Jupiter"]})
    >>> type(evaluator).__name__
    'ContainsEvaluator'
"""

from __future__ import annotations

from benchkit.evaluators._basic import (
    ContainsEvaluator,
    ExactEvaluator,
    JsonSchemaEvaluator,
    NumericEvaluator,
    RegexEvaluator,
)
from benchkit.evaluators._code import CodeTestsEvaluator, extract_code

__all__ = [
    "CodeTestsEvaluator",
    "ContainsEvaluator",
    "ExactEvaluator",
    "JsonSchemaEvaluator",
    "NumericEvaluator",
    "RegexEvaluator",
    "extract_code",
]
