"""The MemoryBench loader: manifests, data files, flatten, cases, discovery, and LoCoMo."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import benchkit
import benchkit.formats
from benchkit.errors import ConfigError, FormatError
from benchkit.formats import memorybench as mb
from benchkit.formats.memorybench._manifest import Flatten, SessionIngestion

from ._support import FIXTURES, REPO

pytestmark = pytest.mark.anyio
LOCOMO = REPO / "benchmarks" / "memorybench" / "locomo" / "lazy"


def manifest(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "manifest_version": "1",
        "name": "tiny",
        "version": "1.0.0",
        "data_file": "data.jsonl",
        "ingestion": {"strategy": "simple", "content_field": "content"},
        "query": {"question_field": "question", "expected_answer_field": "answer"},
        "evaluation": {"protocol": "exact-match"},
        "metrics": ["correctness"],
        "required_capabilities": ["add_memory", "retrieve_memory"],
    }
    base.update(changes)
    return base


def write(
    directory: Path, data: dict[str, Any], records: Any = None, name: str = "data.jsonl"
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "manifest.json").write_text(json.dumps(data, indent=2))
    if records is not None:
        path = directory / name
        if name.endswith(".jsonl"):
            path.write_text("".join(json.dumps(r) + "\n" for r in records))
        else:
            path.write_text(json.dumps(records))
    return directory


RECORDS = [
    {"id": "c1", "content": "The sky is blue.", "question": "Why blue?", "answer": "Rayleigh"},
    {"id": "c2", "content": "Water freezes at 0°C.", "question": "Freezing?", "answer": 0},
]


# --------------------------------------------------------------------------- manifests


def test_defaults_are_the_originals(tmp_path: Path) -> None:
    data = manifest(
        ingestion={"strategy": "session-based", "sessions_field": "s"},
        evaluation={"protocol": "exact-match"},
    )
    loaded = mb.load_manifest(write(tmp_path, data, []))
    assert loaded.query.retrieval_limit == 10 and loaded.retrieval_limit == 10
    assert loaded.ingestion == SessionIngestion(strategy="session-based", sessions_field="s")
    assert loaded.evaluation.case_sensitive is False  # type: ignore[union-attr]
    assert loaded.evaluation.normalize_whitespace is True  # type: ignore[union-attr]
    adv = mb.load_manifest(
        write(
            tmp_path / "adv",
            manifest(
                ingestion={
                    "strategy": "add-delete-verify",
                    "add_content_field": "a",
                    "delete_target_field": "d",
                },
                evaluation={
                    "protocol": "deletion-check",
                    "verification_query_field": "q",
                    "deleted_content_field": "c",
                },
            ),
            [],
        )
    )
    assert adv.ingestion.phase_delay_ms == 100  # type: ignore[union-attr]
    assert adv.evaluation.fuzzy_match is False  # type: ignore[union-attr]


def test_a_bare_manifest_lists_the_originals_eight_problems(tmp_path: Path) -> None:
    write(tmp_path, {"manifest_version": "1"})
    with pytest.raises(mb.ManifestError) as info:
        mb.load(tmp_path)
    assert [path for path, _ in info.value.problems] == [
        "name",
        "version",
        "data_file",
        "ingestion",
        "query",
        "evaluation",
        "metrics",
        "required_capabilities",
    ]
    error = info.value
    assert (error.line, error.column, error.json_path) == (1, 1, "$.name")
    assert "invalid MemoryBench manifest (8 problems): name: missing required key `name`" in str(
        error
    )


def test_problems_carry_dotted_paths_and_the_first_is_located(tmp_path: Path) -> None:
    text = (
        '{\n "manifest_version": 1,\n "name": "", "version": "1.0.0-beta",\n'
        ' "data_file": "d.jsonl",\n'
        ' "ingestion": {"strategy": "session-based", "sessions_field": "s", "mode": "eager"},\n'
        ' "query": {"question_field": "q", "expected_answer_field": "a", "retrieval_limit": 0},\n'
        ' "evaluation": {"protocol": "judge"},\n'
        ' "metrics": "all", "required_capabilities": []\n}'
    )
    tmp_path.joinpath("manifest.json").write_text(text)
    with pytest.raises(mb.ManifestError) as info:
        mb.load(tmp_path)
    assert dict(info.value.problems) == {
        "manifest_version": 'expected "1", got 1',
        "name": "must not be an empty string",
        "version": '"1.0.0-beta" is not a version MAJOR.MINOR.PATCH',
        "ingestion.mode": '"eager" is not one of: lazy, shared, full',
        "query.retrieval_limit": "0 is out of range (must be >= 1)",
        "evaluation.protocol": '"judge" is not one of: exact-match, llm-as-judge, deletion-check',
        "metrics": 'expected a list, got a string ("all")',
    }
    assert info.value.file is not None and info.value.line is not None
    assert info.value.json_path is not None and info.value.json_path.startswith("$.")


def test_numbers_need_not_be_integers(tmp_path: Path) -> None:
    data = manifest(
        query={
            "question_field": "question",
            "expected_answer_field": "answer",
            "retrieval_limit": 2.5,
        }
    )
    suite = mb.load(write(tmp_path, data, RECORDS))
    task = next(suite.benchmark.iter_tasks())
    assert task.metadata["memory"].limit == 2


def test_unknown_keys_and_names_warn_with_their_location(tmp_path: Path) -> None:
    data = manifest(
        extra=1,
        ingestion={"strategy": "simple", "content_field": "content", "is_aray": True},
        metrics=["correctnes", "retrieval_ndcg", "faithfulness"],
        required_capabilities=["add_memory", "teleport"],
    )
    write(tmp_path, data, RECORDS)
    with pytest.warns(mb.ManifestWarning) as caught:
        suite = mb.load(tmp_path)
    # Only the loader's own: an unclosed socket of an earlier test may be collected here.
    texts = [str(w.message) for w in caught if issubclass(w.category, mb.ManifestWarning)]
    assert any("extra: unknown key `extra` is ignored" in t for t in texts)
    assert any(
        "ingestion.is_aray: unknown key `is_aray` is ignored (did you mean `is_array`?)" in t
        for t in texts
    )
    assert any("metrics.0: unknown metric 'correctnes'" in t and "correctness" in t for t in texts)
    assert any(
        "metrics.1: metric 'retrieval_ndcg' is not reported: retrieval metrics need" in t
        for t in texts
    )
    assert any("required_capabilities.1: unknown capability 'teleport'" in t for t in texts)
    assert all(t.startswith(str(tmp_path / "manifest.json") + ":") for t in texts)
    assert suite.benchmark.metadata["memorybench"]["warnings"] == texts
    assert [e.type for e in suite.benchmark.evaluators] == ["memory_exact_match"]


def test_data_file_problems_are_located(tmp_path: Path) -> None:
    write(tmp_path / "a", manifest(data_file="missing.jsonl"))
    with pytest.raises(FormatError, match=r"data file 'missing\.jsonl' not found") as info:
        mb.load(tmp_path / "a")
    assert info.value.json_path == "$.data_file"
    write(tmp_path / "b", manifest(data_file="../outside.jsonl"))
    # (an empty data file is refused since #31: the one outside holds one case)
    (tmp_path / "outside.jsonl").write_text(json.dumps(RECORDS[0]) + "\n")
    with pytest.raises(FormatError, match="points outside the benchmarks root"):
        mb.load(tmp_path / "b")
    assert mb.load(tmp_path / "b", root=tmp_path).benchmark.task_count == 1
    with pytest.raises(FormatError, match=r"no manifest\.json in this directory"):
        mb.load(tmp_path)


def test_a_benchmarks_directory_is_the_default_root(tmp_path: Path) -> None:
    shared = tmp_path / "benchmarks" / "suite"
    write(shared / "variant", manifest(data_file="../data.json"))
    (shared / "data.json").write_text(json.dumps(RECORDS))
    assert mb.load(shared / "variant").benchmark.task_count == 2


# --------------------------------------------------------------------------- data


def test_jsonl_streams_and_names_a_bad_line(tmp_path: Path) -> None:
    write(tmp_path, manifest(), RECORDS)
    with (tmp_path / "data.jsonl").open("a") as handle:
        handle.write("\n   \n{not json}\n")
    suite = mb.load(tmp_path)
    assert suite.benchmark.task_count == 3  # counted lines; not parsed yet
    tasks = suite.benchmark.iter_tasks()
    assert [next(tasks).id, next(tasks).id] == ["c1", "c2"]
    with pytest.raises(FormatError) as info:
        next(tasks)
    assert info.value.line == 5 and "invalid JSON" in str(info.value)


def test_a_pretty_printed_json_array_saved_as_jsonl_is_named_as_such(tmp_path: Path) -> None:
    """Not "remove the trailing comma": the file is JSON, and the fix is to rename it."""
    write(tmp_path, manifest(), [])
    (tmp_path / "data.jsonl").write_text(json.dumps(RECORDS, indent=2) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "benchkit", "validate", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "this looks like JSON, not JSON Lines" in done.stderr
    assert "rename it to data.json" in done.stderr
    assert "trailing comma" not in done.stderr
    assert "Traceback" not in done.stderr


def test_json_is_a_list_or_one_object(tmp_path: Path) -> None:
    write(tmp_path / "list", manifest(data_file="data.json"), RECORDS, "data.json")
    assert [t.id for t in mb.load(tmp_path / "list").benchmark.iter_tasks()] == ["c1", "c2"]
    write(tmp_path / "one", manifest(data_file="data.json"), RECORDS[0], "data.json")
    assert [t.id for t in mb.load(tmp_path / "one").benchmark.iter_tasks()] == ["c1"]
    write(tmp_path / "bad", manifest(data_file="data.json"), [RECORDS[0], 5], "data.json")
    with pytest.raises(FormatError, match="each case must be a JSON object, got int") as info:
        mb.load(tmp_path / "bad")
    assert info.value.json_path == "$[1]"


def test_case_ids_must_be_unique(tmp_path: Path) -> None:
    write(tmp_path, manifest(data_file="data.json"), [RECORDS[0], RECORDS[0]], "data.json")
    with pytest.raises(FormatError, match=r"duplicate case id 'c1' \(first from \$\[0\]\)"):
        mb.load(tmp_path)


def test_cases_follow_the_original(tmp_path: Path) -> None:
    records = [
        {
            "question_id": 7,
            "content": "x",
            "question": "Q" * 150,
            "answer": 2022,
            "metadata": {"index": 99, "k": "v"},
        },
        {"content": "y", "question": "q2"},
        {"id": None, "question_id": None, "content": "z", "question": "q3", "answer": None},
    ]
    suite = mb.load(write(tmp_path, manifest(), records))
    first, second, third = suite.benchmark.iter_tasks()
    assert (first.id, second.id, third.id) == ("7", "case_1", "case_2")
    assert first.expected == "2022" and second.expected == "" and third.expected == ""
    assert first.description == "Q" * 100 and first.input == "Q" * 150
    assert (
        first.metadata["index"] == 99 and first.metadata["k"] == "v"
    )  # the record's metadata wins
    assert second.metadata["index"] == 1
    assert first.metadata["memory"] == mb.MemoryCase(
        limit=10,
        ingestion=mb.IngestionCounts(total=1, selected=1),
        question="Q" * 150,
    )
    assert [s.content for s in first.setup] == ["x"]


def test_unusable_cases_carry_their_error(tmp_path: Path) -> None:
    records = [{"id": "a", "question": "q"}, {"id": "b", "content": "x"}]
    suite = mb.load(write(tmp_path, manifest(), records))
    a, b = suite.benchmark.iter_tasks()
    assert a.metadata["memory"].setup_error == "Content field 'content' not found in input"
    assert b.metadata["memory"].setup_error == "Query field 'question' not found in input"


# --------------------------------------------------------------------------- flatten


def test_flatten_follows_the_spec_with_unique_ids() -> None:
    rule = Flatten("qa", max_items=0, promote_fields=("question", "answer", "missing"))
    records: list[dict[str, Any]] = [
        {
            "id": "1",
            "context": "c",
            "qa": [{"question": "Q1", "answer": "A1", "extra": 1}, {"question": "Q2"}],
        },
        {"sample_id": "s", "id": "ignored", "qa": [{"question": "Q3", "id": "not promoted"}]},
        {"qa": "not a list", "x": 1},
        {"qa": []},
        {"qa": [{"question": "Q4"}, {"question": "Q5"}]},
    ]
    assert list(mb.flatten(iter(records), rule)) == [
        {"id": "1_0", "context": "c", "question": "Q1", "answer": "A1", "_flatten_index": 0},
        {"id": "1_1", "context": "c", "question": "Q2", "_flatten_index": 1},
        {"id": "s_0", "sample_id": "s", "question": "Q3", "_flatten_index": 0},
        {"qa": "not a list", "x": 1},
        {"id": "rec_4_0", "question": "Q4", "_flatten_index": 0},
        # the original counts the records emitted so far for each item, not once per record
        {"id": "rec_5_1", "question": "Q5", "_flatten_index": 1},
    ]
    capped = list(mb.flatten(iter(records[:1]), Flatten("qa", max_items=1)))
    assert [r["id"] for r in capped] == ["1_0"]


@given(st.lists(st.lists(st.integers(), max_size=4), max_size=6), st.integers(0, 3))
def test_flattened_ids_are_unique(groups: list[list[int]], limit: int) -> None:
    records = [{"qa": [{"n": n} for n in group]} for group in groups]
    ids = [r["id"] for r in mb.flatten(iter(records), Flatten("qa", max_items=limit))]
    assert len(ids) == len(set(ids))
    expected = sum(min(len(g), limit) if limit else len(g) for g in groups)
    assert len(ids) == expected


# --------------------------------------------------------------------------- LoCoMo


def test_the_locomo_shaped_set_loads_eighteen_cases() -> None:
    suite = mb.load(LOCOMO, providers=("LocalBaseline", "Other"))
    bench = suite.benchmark
    tasks = list(bench.iter_tasks())
    assert bench.id == "locomo-shaped" and bench.task_count == 18
    assert len({t.id for t in tasks}) == 18
    assert [t.id for t in tasks[:7]] == [f"chat-a_{i}" for i in range(6)] + ["chat-b_0"]
    first = tasks[0]
    assert first.input == "Which evening of the week is Noor's pottery class?"
    assert first.expected == "Thursday" and tasks[1].expected == "6 April 2024"
    assert first.relevant_ids == ("D1",) and first.tags == ("type:1",)
    assert first.metadata["memory"].question_type == 1
    assert first.metadata["memory"].ingestion == mb.IngestionCounts(total=3, selected=1)
    [step] = first.setup
    assert step.metadata == {
        "_sessionId": "D1",
        "_sessionDate": "9:40 am on 2 March, 2024",
        "_sessionIndex": 0,
    }
    assert step.content.startswith(
        "=== Session: D1 ===\nDate: 9:40 am on 2 March, 2024\n"
        "[USER]: Noor: Morning Tomas! I finally signed up for that evening pottery class"
    )
    assert "\n\n[ASSISTANT]: Tomas: Nice! Which night is it?" in step.content
    two_sessions = tasks[3]  # evidence in D2 and D3: both ingested, in session order
    assert two_sessions.relevant_ids == ("D2", "D3")
    assert [s.metadata["_sessionId"] for s in two_sessions.setup] == ["D2", "D3"]
    adversarial = tasks[5]  # category 5 has no answer, only an adversarial_answer
    assert (adversarial.expected, adversarial.tags) == ("", ("type:5",))
    judge = bench.evaluators[0]
    assert judge.type == "memory_llm_judge" and judge.options["type_instructions"]["2"].startswith(
        "Question type 2, a point in time"
    )
    assert [c.id for c in suite.conditions] == ["LocalBaseline", "Other"]
    assert suite.conditions[0].provider.options == {  # type: ignore[union-attr]
        "provider": "LocalBaseline",
        "answer": "llm",
        "answer_options": {},
    }


def test_the_longmemeval_shaped_manifest_is_valid() -> None:
    loaded = mb.load_manifest(REPO / "benchmarks" / "memorybench" / "longmemeval-mini")
    assert loaded.ingestion.answer_session_ids_field == "answer_session_ids"  # type: ignore[union-attr]
    assert loaded.ingestion.dates_field == "haystack_dates"  # type: ignore[union-attr]


def test_a_missing_type_instructions_file_only_warns(tmp_path: Path) -> None:
    data = json.loads((LOCOMO / "manifest.json").read_text())
    data["evaluation"]["type_instructions_file"] = "nope.json"
    data["data_file"] = "data.json"
    write(tmp_path, data, RECORDS[:1], "data.json")  # (an empty one is refused: #31)
    with pytest.warns(mb.ManifestWarning, match="cannot load type instructions"):
        suite = mb.load(tmp_path)
    assert suite.benchmark.evaluators[0].options["type_instructions"] == {}


# --------------------------------------------------------------------------- detection, discovery


def test_the_format_is_detected_and_registered(tmp_path: Path) -> None:
    assert benchkit.formats.detect_format(LOCOMO) == "memorybench"
    assert benchkit.formats.detect_format(LOCOMO / "manifest.json") == "memorybench"
    provider_manifest = FIXTURES / "memorybench" / "providers" / "keyword-store.manifest.json"
    assert not mb.detect(provider_manifest, json.loads(provider_manifest.read_text()))
    suite = benchkit.load(write(tmp_path, manifest(), RECORDS))
    assert suite.benchmark.source.format == "memorybench"


def test_discovery_skips_and_reports(tmp_path: Path) -> None:
    root = tmp_path / "benchmarks"
    write(root / "a", manifest(name="one"), RECORDS)
    write(root / "b" / "deeper", manifest(name="two"), RECORDS)
    write(root / "c", manifest(name="one"), RECORDS)
    write(root / "broken", {"manifest_version": "1"})
    for skipped in ("node_modules", "tests", "fixtures", ".hidden"):
        write(root / skipped / "x", manifest(name=skipped), RECORDS)
    found = mb.discover(root)
    assert list(found.benchmarks) == ["one", "two"]
    assert found.paths["one"] == root / "a" / "manifest.json"
    problems = {path.parent.name: str(error) for path, error in found.problems}
    assert set(problems) == {"broken", "c"}
    assert (
        f"duplicate benchmark name 'one': {root / 'a' / 'manifest.json'} defines it too"
        in problems["c"]
    )
    with pytest.raises(ConfigError, match="does not exist"):
        mb.discover(tmp_path / "nowhere")


def test_the_shipped_benchmarks_load_without_warnings() -> None:
    # Earlier tests' garbage is finalized first, under the usual filters: the MCP SDK's
    # HTTP clients leave memory streams unclosed when a connection is given up on, and
    # their ResourceWarning would otherwise land here whenever the collector runs.
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = mb.discover(REPO / "benchmarks")
    assert not found.problems
    assert set(found.benchmarks) >= {
        "rag-handbook",
        "locomo-shaped",
        "locomo-shaped-full",
        "locomo-shaped-exact",
        "LongMemEval-mini",
        "deletion-basics",
    }
    for suite in found.benchmarks.values():
        assert not suite.benchmark.metadata["memorybench"]["warnings"]
        assert sum(1 for _ in suite.benchmark.iter_tasks()) > 0


def test_schema_ships_with_the_package() -> None:
    schema = mb.schema()
    assert schema["required"][:3] == ["manifest_version", "name", "version"]


def test_providers_are_checked(tmp_path: Path) -> None:
    write(tmp_path, manifest(), RECORDS)
    with pytest.raises(ConfigError, match="each once"):
        mb.load(tmp_path, providers=("LocalBaseline", "LocalBaseline"))
    assert [c.id for c in mb.load(tmp_path, providers="LocalBaseline").conditions] == [
        "LocalBaseline"
    ]


def test_case_data_is_typed_and_keys_like_the_mapping_it_replaces() -> None:
    """Each case's data is a MemoryCase; a hand-written mapping reads the same, and the
    run store keys a typed case exactly as it keyed the mapping (resume keeps working)."""
    from benchkit.memory import MemoryQuery
    from benchkit.registry import default_registries
    from benchkit.store._keys import suite_keys

    suite = mb.load(LOCOMO)
    typed = list(suite.benchmark.iter_tasks())
    case = typed[0].metadata["memory"]
    assert isinstance(case, mb.MemoryCase) and isinstance(case, MemoryQuery)
    as_mapping = []
    for task in typed:
        data = task.metadata["memory"]
        plain = {"limit": data.limit, "question": data.question}
        plain["ingestion"] = {"total": data.ingestion.total, "selected": data.ingestion.selected}
        if data.question_type is not None:
            plain["question_type"] = data.question_type
        if data.deleted is not None:
            plain["deleted"] = list(data.deleted)
        if data.setup_error:
            plain["setup_error"] = data.setup_error
        as_mapping.append(attrs.evolve(task, metadata={**task.metadata, "memory": plain}))
        assert mb.MemoryCase.of(as_mapping[-1]) == data
    plain_suite = attrs.evolve(
        suite, benchmark=attrs.evolve(suite.benchmark, tasks=tuple(as_mapping))
    )
    regs = default_registries()
    plain_keys, keys = suite_keys(plain_suite, regs), suite_keys(suite, regs)
    assert (plain_keys.ids, plain_keys.task_keys) == (keys.ids, keys.task_keys)


def test_hand_written_memory_data_is_checked() -> None:
    from benchkit.memory import MemoryQuery

    task = benchkit.Task("t", metadata={"memory": {"limit": "3"}})
    with pytest.raises(ConfigError, match=r"task 't': metadata\.memory\.limit must be an integer"):
        MemoryQuery.of(task)
    task = benchkit.Task("t", metadata={"memory": {"deleted": "code 4512"}})
    with pytest.raises(ConfigError, match="deleted must be a list of texts"):
        mb.MemoryCase.of(task)
    assert MemoryQuery.of(benchkit.Task("t")) == MemoryQuery()
    assert mb.MemoryCase.of(benchkit.Task("t", metadata={"memory": MemoryQuery(limit=2)})) == (
        mb.MemoryCase(limit=2)
    )
