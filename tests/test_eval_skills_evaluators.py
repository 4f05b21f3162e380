"""eval-skills scorer semantics, through the evaluator specs the loader produces.

Each test loads a one-task benchmark, builds its evaluator from the registry as the Runner
does, and scores outputs — so the mapping and the evaluator are checked together.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchkit.errors import ConfigError
from benchkit.evaluators import RegexEvaluator
from benchkit.formats.eval_skills import load
from benchkit.model import Response, Task
from benchkit.registry import default_registries
from benchkit.results import Score

pytestmark = pytest.mark.anyio


class Judge:
    """Scores outputs against the single task of a benchmark written from ``fields``."""

    def __init__(self, tmp_path: Path, **fields: Any) -> None:
        item = {"id": "t", "inputData": {}, **fields}
        data = {
            "id": "b",
            "name": "B",
            "version": "1.0.0",
            "domain": "d",
            "scoringMethod": "mean",
            "tasks": [item],
        }
        path = tmp_path / "b.json"
        path.write_text(json.dumps(data))
        (self.task,) = load(path).benchmark.iter_tasks()
        (spec,) = self.task.evaluators
        self.evaluator = default_registries().evaluators.build(spec.type, spec.options)

    async def __call__(self, output: Any) -> Score:
        score: Score = await self.evaluator.evaluate(self.task, Response(output=output))
        return score


def exact(tmp_path: Path, value: Any, **evaluator: Any) -> Judge:
    return Judge(
        tmp_path,
        expectedOutput={"type": "exact", "value": value},
        evaluator={"type": "exact", **evaluator},
    )


def contains(tmp_path: Path, keywords: list[str] | None, **evaluator: Any) -> Judge:
    expected: dict[str, Any] = {"type": "contains"}
    if keywords is not None:
        expected["keywords"] = keywords
    return Judge(tmp_path, expectedOutput=expected, evaluator={"type": "contains", **evaluator})


def regex(tmp_path: Path, patterns: list[str] | None, **evaluator: Any) -> Judge:
    expected: dict[str, Any] = {"type": "regex"}
    if patterns is not None:
        expected["patterns"] = patterns
    return Judge(tmp_path, expectedOutput=expected, evaluator={"type": "regex", **evaluator})


def schema(tmp_path: Path, value: dict[str, Any]) -> Judge:
    return Judge(
        tmp_path,
        expectedOutput={"type": "schema", "schema": value},
        evaluator={"type": "json_schema"},
    )


# --------------------------------------------------------------------------- exact


async def test_exact_unwraps_result_then_output_then_answer(tmp_path: Path) -> None:
    judge = exact(tmp_path, "42")
    assert (await judge({"result": "42", "output": "no"})).passed
    assert (await judge({"output": "42", "answer": "no"})).passed
    assert (await judge({"answer": 42})).passed
    assert (await judge("42")).passed
    assert (await judge(42)).passed


async def test_exact_takes_the_first_key_present_even_when_null(tmp_path: Path) -> None:
    score = await exact(tmp_path, "42")({"result": None, "answer": "42"})
    assert not score.passed
    assert score.reason == 'Expected "42" but got "null"'


async def test_exact_does_not_unwrap_arrays(tmp_path: Path) -> None:
    score = await exact(tmp_path, "[1,2]")([1, 2])
    assert score.passed  # compact JSON; JavaScript's String() would give "1,2"


async def test_exact_trims_both_sides(tmp_path: Path) -> None:
    assert (await exact(tmp_path, " hello ")("hello\n")).passed
    assert (await exact(tmp_path, "a")("\u00a0a\u00a0")).passed  # NBSP, as JS trim


async def test_exact_is_case_sensitive_unless_told(tmp_path: Path) -> None:
    assert not (await exact(tmp_path, "Hello")("hello")).passed
    assert (await exact(tmp_path, "Hello", caseSensitive=False)("hello")).passed


async def test_exact_stringifies_the_python_json_way(tmp_path: Path) -> None:
    judge = exact(tmp_path, "25.0")
    assert (await judge({"result": 25.0})).passed  # JS String(25.0) would give "25"
    assert not (await judge({"result": 25})).passed
    assert (await exact(tmp_path, "true")(True)).passed
    assert (await exact(tmp_path, "null")({"answer": None})).passed


async def test_exact_with_a_null_value_expects_null(tmp_path: Path) -> None:
    judge = exact(tmp_path, None)
    assert (await judge(None)).passed
    assert not (await judge("x")).passed


async def test_exact_fail_reason(tmp_path: Path) -> None:
    score = await exact(tmp_path, "olleh")("hello")
    assert (score.value, score.passed) == (0.0, False)
    assert score.reason == 'Expected "olleh" but got "hello"'


# --------------------------------------------------------------------------- contains


@pytest.mark.parametrize("keywords", [None, []])
async def test_contains_without_keywords_passes(tmp_path: Path, keywords: list[str] | None) -> None:
    score = await contains(tmp_path, keywords)("anything")
    assert (score.value, score.passed, score.reason) == (1.0, True, "No keywords to check")


async def test_contains_scores_the_fraction_found(tmp_path: Path) -> None:
    score = await contains(tmp_path, ["Hinton", "Hopfield", "Nobel"])("hinton won")
    assert score.value == pytest.approx(1 / 3)
    assert not score.passed
    assert score.reason == 'Missing keywords: "Hopfield", "Nobel" (1/3 matched)'


async def test_contains_counts_duplicates(tmp_path: Path) -> None:
    score = await contains(tmp_path, ["a", "a", "z"])("a")
    assert score.value == pytest.approx(2 / 3)


async def test_contains_searches_objects_as_compact_json(tmp_path: Path) -> None:
    judge = contains(tmp_path, ["result", '"source":"x"', "café"])
    assert (await judge({"result": "café", "source": "x"})).passed
    assert (await contains(tmp_path, ["null"])(None)).passed


async def test_contains_is_case_insensitive_by_default_and_honours_the_flag(
    tmp_path: Path,
) -> None:
    assert (await contains(tmp_path, ["PLAIN"])("plain")).passed
    # the original ignores caseSensitive; benchkit honours it as documented
    assert not (await contains(tmp_path, ["PLAIN"], caseSensitive=True)("plain")).passed
    assert (await contains(tmp_path, ["PLAIN"], caseSensitive=False)("plain")).passed


async def test_contains_invalid_contains_valid(tmp_path: Path) -> None:
    score = await contains(tmp_path, ["valid", "json"])("invalid input")
    assert score.value == 0.5  # skill_004 against the calculator, as in the original


# --------------------------------------------------------------------------- regex


@pytest.mark.parametrize("patterns", [None, []])
async def test_regex_without_patterns_fails(tmp_path: Path, patterns: list[str] | None) -> None:
    score = await regex(tmp_path, patterns)("anything")
    assert (score.value, score.passed) == (0.0, False)


async def test_regex_scores_the_fraction_matched(tmp_path: Path) -> None:
    judge = regex(tmp_path, [r"\d+", "^abc", "z$"])
    score = await judge("abc 42")
    assert score.value == pytest.approx(2 / 3)
    assert score.reason == "Matched 2/3 patterns"
    assert (await regex(tmp_path, [r"\d+"])("x1")).reason == "All regex patterns matched"


async def test_regex_searches_objects_as_json(tmp_path: Path) -> None:
    assert (await regex(tmp_path, ['"result":"ok"'])({"result": "ok"})).passed


async def test_a_pattern_that_does_not_compile_is_a_miss(tmp_path: Path) -> None:
    score = await regex(tmp_path, ["(", "b"])("abc")
    assert score.value == 0.5
    assert "(" in score.details["errors"]


async def test_regex_case_folding_follows_case_sensitive(tmp_path: Path) -> None:
    assert not (await regex(tmp_path, ["^hello"])("HELLO")).passed
    assert (await regex(tmp_path, ["^hello"], caseSensitive=False)("HELLO")).passed


# --------------------------------------------------------------------------- json_schema


SEARCH_008 = {
    "type": "object",
    "properties": {"result": {"type": "string", "minLength": 10}, "source": {"type": "string"}},
    "required": ["result"],
}


async def test_schema_accepts_objects_and_json_strings(tmp_path: Path) -> None:
    judge = schema(tmp_path, SEARCH_008)
    assert (await judge({"result": "long enough text", "source": "s"})).passed
    assert (await judge(json.dumps({"result": "long enough text"}))).passed
    assert (await schema(tmp_path, {"type": "number"})("42")).passed


async def test_schema_failure_reasons(tmp_path: Path) -> None:
    judge = schema(tmp_path, SEARCH_008)
    short = await judge({"result": "short"})
    assert (short.value, short.passed) == (0.0, False)
    assert short.reason is not None and short.reason.startswith("Schema validation failed: /result")
    missing = await judge({})
    assert missing.reason is not None and missing.reason.startswith("Schema validation failed: /")
    garbage = await judge("not json")
    assert garbage.reason == "Output is not valid JSON: not json"


async def test_schema_defaults_to_draft_07(tmp_path: Path) -> None:
    # tuple validation with an items array is draft-07 (2020-12 calls it prefixItems)
    judge = schema(tmp_path, {"type": "array", "items": [{"type": "string"}, {"type": "number"}]})
    assert (await judge(["a", 1])).passed
    assert not (await judge([1, "a"])).passed


async def test_schema_formats_are_checked(tmp_path: Path) -> None:
    judge = schema(tmp_path, {"type": "string", "format": "date"})
    assert (await judge('"2026-01-31"')).passed
    assert not (await judge('"31/01/2026"')).passed


async def test_regex_on_invalid_option() -> None:
    with pytest.raises(ConfigError, match="does not compile"):
        RegexEvaluator(patterns=["("])  # the default stays strict
    lenient = RegexEvaluator(patterns=["(", "a"], on_invalid="miss")
    score = await lenient.evaluate(Task("t"), Response("a"))
    assert (score.value, score.details["missing"]) == (0.5, ["("])
    assert "(" in score.details["errors"]
    with pytest.raises(ConfigError, match="on_invalid"):
        RegexEvaluator(patterns=["a"], on_invalid="skip")  # type: ignore[arg-type]
