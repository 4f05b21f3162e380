"""The ``dataset`` source (#37): JSONL, CSV and Parquet read the same, field mappings and
``{field}`` templates, answers as index / letter / text, aligned label files, few-shot
examples drawn reproducibly, and bad mappings named by file, line and field."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import benchkit
from benchkit import FormatError, Suite
from benchkit.formats import detect_format
from benchkit.formats.dataset import Template
from benchkit.llm import ChoiceQuestion
from benchkit.registry import default_registries

from ._support import REPO, one_paragraph_error

ROWS = [
    {"q": "Is ice cold?", "a": "yes", "b": "no", "answer": 0, "meta": {"topic": "physics"}},
    {"q": "Is fire cold?", "a": "yes", "b": "no", "answer": 1, "meta": {"topic": "physics"}},
    {"q": "Do fish swim?", "a": "yes", "b": "never", "answer": 0, "meta": {"topic": "biology"}},
    {"q": "Do stones fly?", "a": "often", "b": "no", "answer": 1, "meta": {"topic": "physics"}},
    {"q": "Is water wet?", "a": "yes", "b": "no", "answer": 0, "meta": {"topic": "physics"}},
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


CONFIG = """\
dataset:
  path: {data}
id: toy
prompt:
  input: "Question: {{q}}\\nAnswer:"
  choices: ["{{a}}", "{{b}}"]
  target: answer
"""


def questions(suite: Suite) -> list[ChoiceQuestion]:
    found = [ChoiceQuestion.of(t.input) for t in suite.benchmark.iter_tasks()]
    assert all(q is not None for q in found)
    return [q for q in found if q is not None]


def test_jsonl_csv_and_parquet_make_the_same_tasks(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "data.jsonl", ROWS)
    with (tmp_path / "data.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["q", "a", "b", "answer"])
        writer.writeheader()
        writer.writerows({k: r[k] for k in ("q", "a", "b", "answer")} for r in ROWS)
    made = {}
    kinds = ["jsonl", "csv"]
    if importlib.util.find_spec("pyarrow") is not None:
        import pyarrow as pa  # type: ignore[import-not-found,import-untyped,unused-ignore]
        import pyarrow.parquet as pq  # type: ignore[import-not-found,import-untyped,unused-ignore]

        pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "data.parquet")
        kinds.append("parquet")
    for kind in kinds:
        config = write_config(tmp_path / f"{kind}.yaml", CONFIG.format(data=f"data.{kind}"))
        assert detect_format(config) == "dataset"
        suite = benchkit.load(config)
        made[kind] = [(t.id, t.input, t.expected) for t in suite.benchmark.iter_tasks()]
    assert len({json.dumps(v) for v in made.values()}) == 1, made
    first = made["jsonl"][0]
    assert first == (
        "0",
        {
            "kind": "loglikelihood",
            "context": "Question: Is ice cold?\nAnswer:",
            "choices": ["yes", "no"],
        },
        0,
    )
    assert [expected for _, _, expected in made["jsonl"]] == [0, 1, 0, 1, 0]


def test_the_suite_is_scored_by_multiple_choice_and_names_its_source(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "data.jsonl", ROWS)
    config = write_config(
        tmp_path / "toy.yaml",
        CONFIG.format(data="data.jsonl") + "metrics: [acc_norm, acc, acc_mutual_info]\n",
    )
    suite = benchkit.load(config)
    assert [(e.type, dict(e.options)) for e in suite.benchmark.evaluators] == [
        ("multiple_choice", {"metric": "acc_norm"})
    ]
    assert all(q.unconditional for q in questions(suite))
    assert suite.benchmark.source.format == "dataset"
    assert [(c.id, c.provider.type) for c in suite.conditions] == [("model", "chat")]  # type: ignore[union-attr]


def test_answers_may_be_indexes_letters_texts_or_label_files(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"q": "one", "options": ["x", "y", "z"], "gold": "C"},
        {"q": "two", "options": ["x", "y", "z"], "gold": "y"},
        {"q": "three", "options": ["x", "y", "z"], "gold": "0"},
        {"q": "four", "options": ["x", "y", "z"], "gold": 2},
    ]
    write_jsonl(tmp_path / "data.jsonl", rows)
    (tmp_path / "labels.lst").write_text("2\n1\n0\n1\n", encoding="utf-8")
    config = write_config(
        tmp_path / "a.yaml",
        "dataset: {path: data.jsonl}\nid: a\nprompt: {input: '{q}', choices: options, target: gold}\n",
    )
    assert [t.expected for t in benchkit.load(config).benchmark.iter_tasks()] == [2, 1, 0, 2]
    labelled = write_config(
        tmp_path / "b.yaml",
        "dataset: {path: data.jsonl, labels: labels.lst}\nid: b\n"
        "prompt: {input: '{q}', choices: options}\n",
    )
    assert [t.expected for t in benchkit.load(labelled).benchmark.iter_tasks()] == [2, 1, 0, 1]
    (tmp_path / "labels.lst").write_text("2\n1\n", encoding="utf-8")
    with pytest.raises(FormatError, match="2 labels for 4 rows") as caught:
        benchkit.load(labelled)
    assert caught.value.file is not None and caught.value.file.endswith("labels.lst")


def test_templates_read_nested_fields_and_literal_braces(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "data.jsonl", ROWS[:2])
    config = write_config(
        tmp_path / "t.yaml",
        "dataset: {path: data.jsonl}\nid: t\nprompt:\n"
        "  input: '[{meta.topic}] {{braces}} {q}'\n"
        "  choices: ['{a}', b]\n  target: answer\n  target_delimiter: ' => '\n"
        '  description: "Answer briefly.\\n\\n"\n',
    )
    first = questions(benchkit.load(config))[0]
    assert first.context == "Answer briefly.\n\n[physics] {braces} Is ice cold?"
    assert first.continuations == [" => yes", " => no"]
    assert Template.parse("{a}-{b.c}").fields == ["a", "b.c"]


@pytest.mark.parametrize(
    ("prompt", "says"),
    [
        ("{input: '{q!r}', choices: [a, b], target: answer}", "only {field} is allowed"),
        ("{input: '{q:>5}', choices: [a, b], target: answer}", "only {field} is allowed"),
        ("{input: 'Q {', choices: [a, b], target: answer}", "braces"),
        ("{input: '{q}', choices: [a, b], target: answer, n_shot: -1}", "n_shot must be from 0"),
        ("{input: '{q}', choices: [a, b], target: answer, colour: red}", "unknown key 'colour'"),
        ("{input: '{q}', choices: 'a b', target: answer}", "neither a field name"),
    ],
)
def test_a_bad_mapping_is_an_error_at_its_line(tmp_path: Path, prompt: str, says: str) -> None:
    write_jsonl(tmp_path / "data.jsonl", ROWS)
    config = write_config(
        tmp_path / "bad.yaml", f"dataset: {{path: data.jsonl}}\nid: bad\nprompt: {prompt}\n"
    )
    with pytest.raises(FormatError, match=says) as caught:
        benchkit.load(config)
    assert caught.value.file == str(config) and caught.value.line == 3


def test_a_row_without_a_field_is_an_error_naming_file_line_and_field(tmp_path: Path) -> None:
    rows = [dict(ROWS[0]), {k: v for k, v in ROWS[1].items() if k != "b"}]
    data = write_jsonl(tmp_path / "data.jsonl", rows)
    config = write_config(tmp_path / "c.yaml", CONFIG.format(data="data.jsonl"))
    with pytest.raises(FormatError, match="the row has no field 'b'") as caught:
        benchkit.load(config)
    assert (caught.value.file, caught.value.line, caught.value.json_path) == (str(data), 2, "$.b")
    write_jsonl(tmp_path / "data.jsonl", [ROWS[0], {**ROWS[1], "answer": 7}])
    with pytest.raises(FormatError, match=r"the answer 7 .* is not an index 0\.\.1") as bad:
        benchkit.load(config)
    assert bad.value.line == 2 and bad.value.json_path == "$.answer"


def test_a_bad_mapping_is_one_paragraph_from_the_cli(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "data.jsonl", [{"q": "x", "a": "y", "b": "z"}])
    config = write_config(tmp_path / "c.yaml", CONFIG.format(data="data.jsonl"))
    proc = subprocess.run(
        [sys.executable, "-m", "benchkit", "validate", str(config)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    line = one_paragraph_error(proc)
    assert "data.jsonl:1" in line and "$.answer" in line and "no field 'answer'" in line


def test_few_shot_examples_are_drawn_reproducibly_from_another_split(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "test.jsonl", ROWS[:2])
    write_jsonl(tmp_path / "train.jsonl", ROWS)
    text = (
        "dataset: {path: test.jsonl, fewshot: {path: train.jsonl}}\nid: f\n"
        'prompt: {input: "Q: {q}\\nA:", choices: ["{a}", "{b}"], target: answer, n_shot: 2, '
        'fewshot_separator: "\\n---\\n", seed: SEED}\n'
    )
    one = questions(benchkit.load(write_config(tmp_path / "f1.yaml", text.replace("SEED", "7"))))
    again = questions(benchkit.load(write_config(tmp_path / "f2.yaml", text.replace("SEED", "7"))))
    other = [
        questions(
            benchkit.load(write_config(tmp_path / f"s{s}.yaml", text.replace("SEED", str(s))))
        )
        for s in range(8, 14)
    ]
    assert one == again
    assert any(o != one for o in other)
    parts = one[0].context.split("\n---\n")
    assert len(parts) == 3 and parts[-1] == "Q: Is ice cold?\nA:"
    answers = {f"Q: {r['q']}\nA: {r['a'] if r['answer'] == 0 else r['b']}" for r in ROWS}
    assert set(parts[:2]) <= answers  # each example is its prompt and its right answer


def test_few_shot_from_the_same_split_never_shows_the_question_itself(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "data.jsonl", ROWS)
    text = (
        "dataset: {path: data.jsonl}\nid: s\n"
        "prompt: {input: '{q}', choices: ['{a}', '{b}'], target: answer, n_shot: 4}\n"
    )
    for question, row in zip(
        questions(benchkit.load(write_config(tmp_path / "s.yaml", text))), ROWS, strict=True
    ):
        shots = question.context.split("\n\n")[:-1]
        assert len(shots) == 4 and not any(s.startswith(str(row["q"])) for s in shots)
    with pytest.raises(FormatError, match="n_shot 5 needs more examples"):
        benchkit.load(write_config(tmp_path / "t.yaml", text.replace("n_shot: 4", "n_shot: 5")))


def test_limit_and_generation_based_multiple_choice(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "data.jsonl", ROWS)
    config = write_config(
        tmp_path / "g.yaml",
        "dataset: {path: data.jsonl, limit: 3}\nid: g\nmode: generate\n"
        'prompt: {input: "{q}\\nA. {a}\\nB. {b}\\nAnswer with A or B:", choices: ["{a}", "{b}"], '
        "target: answer}\nevaluators: [{type: contains, case_sensitive: false}]\n",
    )
    suite = benchkit.load(config)
    tasks = list(suite.benchmark.iter_tasks())
    assert [t.expected for t in tasks] == ["A", "B", "A"]
    assert tasks[0].input == "Is ice cold?\nA. yes\nB. no\nAnswer with A or B:"
    assert [e.type for e in suite.benchmark.evaluators] == ["contains"]


def test_paths_stay_inside_the_root_and_the_root_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data" / "toy"
    data_dir.mkdir(parents=True)
    write_jsonl(data_dir / "rows.jsonl", ROWS)
    bench = tmp_path / "bench"
    bench.mkdir()
    text = (
        "dataset: {root: {env: TOY_DATA, default: ../data}, path: toy/rows.jsonl}\nid: r\n"
        "prompt: {input: '{q}', choices: ['{a}', '{b}'], target: answer}\n"
    )
    config = write_config(bench / "r.yaml", text)
    monkeypatch.delenv("TOY_DATA", raising=False)
    assert benchkit.load(config).benchmark.task_count == 5
    monkeypatch.setenv("TOY_DATA", str(tmp_path / "elsewhere"))
    with pytest.raises(FormatError, match=r"no data at .*elsewhere.*\$TOY_DATA"):
        benchkit.load(config)
    monkeypatch.setenv("TOY_DATA", str(tmp_path / "data"))
    assert benchkit.load(config).benchmark.task_count == 5
    escape = write_config(bench / "e.yaml", text.replace("toy/rows.jsonl", "../bench/r.yaml"))
    with pytest.raises(FormatError, match="leads outside the dataset root"):
        benchkit.load(escape)


def test_the_tool_is_published_and_list_shows_its_files(tmp_path: Path) -> None:
    assert "dataset-files" in default_registries().tools.names()
    assert "dataset" in default_registries().formats.names()
    write_jsonl(tmp_path / "data.jsonl", ROWS)
    write_config(tmp_path / "toy.yaml", CONFIG.format(data="data.jsonl"))
    proc = subprocess.run(
        [sys.executable, "-m", "benchkit", "list", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert "toy.yaml" in proc.stdout and "dataset" in proc.stdout


def test_a_saved_hugging_face_dataset_is_read_where_the_library_is_installed(
    tmp_path: Path,
) -> None:
    if importlib.util.find_spec("datasets") is None:
        pytest.skip("the datasets library is not installed (pip install 'benchkit[hf]')")
    import datasets  # type: ignore[import-not-found,import-untyped,unused-ignore]

    flat = [{k: v for k, v in r.items() if k != "meta"} for r in ROWS]
    datasets.DatasetDict({"test": datasets.Dataset.from_list(flat)}).save_to_disk(
        str(tmp_path / "hf")
    )
    config = write_config(
        tmp_path / "h.yaml",
        "dataset: {path: hf, split: test}\nid: h\nprompt: {input: '{q}', choices: ['{a}', '{b}'], target: answer}\n",
    )
    assert [t.expected for t in benchkit.load(config).benchmark.iter_tasks()] == [0, 1, 0, 1, 0]
    no_split = write_config(
        tmp_path / "n.yaml", (tmp_path / "h.yaml").read_text().replace(", split: test", "")
    )
    with pytest.raises(benchkit.ConfigError, match="holds the splits test"):
        benchkit.load(no_split)
