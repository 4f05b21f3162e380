"""Fuzzed files for every loader: only a BenchkitError may escape, as one paragraph.

Each loader starts from a valid file of its format (native YAML and JSON, eval-skills,
skillvault, a MemoryBench manifest and its data, a CodeForge dataset) and hypothesis
mutates it — in the text (cut, repeat, insert YAML/JSON syntax, bad bytes) or in the data
(a value at a random path replaced, a key dropped or added) — then loads it as
``validate`` does: detect the format, load, and read every task with the run's
pre-flight. Anything but a :class:`BenchkitError` fails the test; so does an error that
is not one paragraph (one line). A few fuzzed files also go through the real CLI, which
must exit 2 with one error line and no traceback.

Issue #31's classes are tried on purpose as well: NaN, the infinities, 1e30 and a 31-digit
integer in every numeric option of every format (each must be refused, naming the
option), empty files (refused), and aliases that repeat a large string (refused by the
characters they add) — and the random mutations draw from the same hostile values.

The number of inputs per loader is ``BENCHKIT_FUZZ_EXAMPLES`` (default 40); the bigger
run before a release sets it to thousands.
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchkit.errors import BenchkitError
from benchkit.formats import load
from benchkit.registry import default_registries
from benchkit.store._keys import suite_keys

from ._support import FIXTURES, REPO, one_paragraph_error

# A mutated manifest may carry keys the format does not know: the loader warns (as it
# should for a user) and goes on; here only what escapes as an exception matters.
pytestmark = pytest.mark.filterwarnings("ignore::benchkit.formats.memorybench.ManifestWarning")

EXAMPLES = int(os.environ.get("BENCHKIT_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

MANIFEST = {
    "manifest_version": "1",
    "name": "Fuzz",
    "version": "1.0.0",
    "data_file": "data.json",
    "ingestion": {
        "strategy": "session-based",
        "sessions_field": "sessions",
        "session_ids_field": "session_ids",
    },
    "query": {"question_field": "question", "expected_answer_field": "answer"},
    "evaluation": {"protocol": "exact-match"},
    "metrics": ["correctness", "retrieval_recall"],
    "required_capabilities": ["add_memory", "retrieve_memory"],
}
CASES = [
    {
        "id": f"case-{i}",
        "question": f"Where did {name} go?",
        "answer": place,
        "session_ids": ["s1", "s2"],
        "sessions": [
            [{"role": "user", "content": f"{name} went to {place}."}],
            [{"role": "assistant", "content": "Noted.", "meta": {"n": [1, 2.5, None]}}],
        ],
    }
    for i, (name, place) in enumerate([("Ana", "Lisbon"), ("Bo", "Oslo")])
]


# ------------------------------------------------------------------------ the targets


class Target:
    """A directory holding one valid benchmark of a format; ``fuzzed`` is the file to mutate."""

    def __init__(self, name: str, root: Path, entry: str, fuzzed: str) -> None:
        self.name = name
        self.root = root
        self.entry = root / entry
        self.fuzzed = root / fuzzed
        self.original = self.fuzzed.read_bytes()

    def write(self, data: bytes) -> None:
        self.fuzzed.write_bytes(data)


def _copy(source: Path, into: Path) -> Path:
    if source.is_dir():
        shutil.copytree(source, into, dirs_exist_ok=True)
    else:
        into.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, into / source.name)
    return into


def _targets(root: Path) -> dict[str, Target]:
    native = _copy(FIXTURES / "native", root / "native")
    eval_skills = _copy(FIXTURES / "eval_skills" / "pass-at-k.json", root / "eval_skills")
    skillvault = _copy(REPO / "benchmarks" / "skillvault-bench-v0", root / "skillvault")
    codeforge = _copy(REPO / "benchmarks" / "codeforge" / "basic-coding.yaml", root / "codeforge")
    memory = root / "memorybench"
    memory.mkdir()
    (memory / "manifest.json").write_text(json.dumps(MANIFEST, indent=2))
    (memory / "data.json").write_text(json.dumps(CASES, indent=2))
    lines = root / "memorybench-jsonl"
    lines.mkdir()
    (lines / "manifest.json").write_text(json.dumps({**MANIFEST, "data_file": "data.jsonl"}))
    (lines / "data.jsonl").write_text("".join(json.dumps(case) + "\n" for case in CASES))
    return {
        t.name: t
        for t in [
            Target("native-yaml", native, "full.yaml", "full.yaml"),
            Target("native-json", native, "full.json", "full.json"),
            Target("eval-skills", eval_skills, "pass-at-k.json", "pass-at-k.json"),
            Target("skillvault", skillvault, "bench.yaml", "bench.yaml"),
            Target("memorybench-manifest", memory, "manifest.json", "manifest.json"),
            Target("memorybench-data", memory, "manifest.json", "data.json"),
            Target("memorybench-jsonl", lines, "manifest.json", "data.jsonl"),
            Target("codeforge", codeforge, "basic-coding.yaml", "basic-coding.yaml"),
        ]
    }


@pytest.fixture(scope="module")
def targets() -> Iterator[dict[str, Target]]:
    with tempfile.TemporaryDirectory() as tmp:
        yield _targets(Path(tmp))


class _Verifier:
    """Stands for the verifier types the native fixtures name (never run here)."""

    def __init__(self, **options: object) -> None:  # the fixtures give them options
        self.options = options

    async def verify(self, task: object, response: object, context: object) -> object:
        raise AssertionError("not run")


REGISTRIES = default_registries().copy()
for _name in ("file_exists", "command_exit_code"):
    REGISTRIES.verifiers.add(_name, _Verifier)


def validate_like_the_cli(path: Path) -> None:
    """What ``validate`` does: load, then read every task with the run's pre-flight."""
    suite = load(path, registries=REGISTRIES)
    suite_keys(suite, REGISTRIES)


#: Inputs tried per loader and how they ended ("loaded" or "refused"), for the report.
TRIED: Counter[tuple[str, str]] = Counter()


def check(target: Target, data: bytes) -> None:
    target.write(data)
    try:
        validate_like_the_cli(target.entry)
        TRIED[target.name, "loaded"] += 1
    except BenchkitError as exc:
        text = str(exc)
        assert text and "\n" not in text, f"not one paragraph: {text!r}"
        TRIED[target.name, "refused"] += 1
    finally:
        target.write(target.original)


# ------------------------------------------------------------------------ mutations

_SYNTAX = [
    b": ", b"- ", b"[", b"]", b"{", b"}", b",", b'"', b"'", b"*a", b"&a ", b"!!binary ",
    b"!!python/object ", b"<<: ", b"\t", b"\n", b"\n  ", b"---\n", b"? ", b"|\n", b"#",
    b"\x00", b"\xff\xfe", b"\xe2\x80\xa8", b"1e999", b"-0", b"null", b"true", b"~",
    b"\\u0000", b"\\ud800", b"[" * 200, b"{\"a\":" * 150,
    b"NaN", b"Infinity", b"-Infinity", b".nan", b".inf", b"-.inf", b"1e30", b"9" * 31,
]  # fmt: skip


@st.composite
def text_mutation(draw: st.DrawFn, original: bytes) -> bytes:
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["cut", "insert", "repeat", "byte"]))
        if kind == "cut":
            data[at : at + draw(st.integers(1, 40))] = b""
        elif kind == "insert":
            data[at:at] = draw(st.sampled_from(_SYNTAX) | st.binary(min_size=1, max_size=8))
        elif kind == "repeat":
            end = min(len(data), at + draw(st.integers(1, 60)))
            data[at:at] = data[at:end] * draw(st.integers(1, 3))
        elif at < len(data):
            data[at] = draw(st.integers(0, 255))
    return bytes(data)


_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.sampled_from(["", "exact", "llm_judge", "../../etc/passwd", "/abs", "-1", "1e400"])
    | st.sampled_from([math.nan, math.inf, -math.inf, 1e30, 10**30, -(10**30)]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


@st.composite
def data_mutation(draw: st.DrawFn, original: bytes, suffix: str) -> bytes:
    """Replace, drop or add a value somewhere in the parsed document; write it back."""
    from ruamel.yaml import YAML

    if suffix == ".jsonl":
        docs = [json.loads(line) for line in original.splitlines() if line.strip()]
    elif suffix == ".json":
        docs = [json.loads(original)]
    else:
        docs = [YAML(typ="safe", pure=True).load(original)]
    for _ in range(draw(st.integers(1, 3))):
        doc_index = draw(st.integers(0, len(docs) - 1))
        path = draw(st.sampled_from(_paths(docs[doc_index])))
        if not path:
            docs[doc_index] = draw(_VALUES)
            continue
        parent = docs[doc_index]
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "drop", "add"]))
        if action == "drop":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=10))] = draw(_VALUES)
        else:
            parent[path[-1]] = draw(_VALUES)
    if suffix == ".jsonl":
        return "".join(json.dumps(doc) + "\n" for doc in docs).encode()
    if suffix == ".json":
        return json.dumps(docs[0]).encode()
    out = io.StringIO()
    YAML(typ="safe", pure=True).dump(docs[0], out)
    return out.getvalue().encode()


NAMES = [
    "native-yaml",
    "native-json",
    "eval-skills",
    "skillvault",
    "memorybench-manifest",
    "memorybench-data",
    "memorybench-jsonl",
    "codeforge",
]


def _fuzz(name: str, mutation: Callable[[Target], st.SearchStrategy[bytes]]) -> Any:
    @FUZZ
    @given(data=st.data())
    def run(targets: dict[str, Target], data: st.DataObject) -> None:
        target = targets[name]
        check(target, data.draw(mutation(target)))

    return run


def _tried(name: str) -> int:
    return TRIED[name, "loaded"] + TRIED[name, "refused"]


@pytest.mark.parametrize("name", NAMES)
def test_text_mutations_raise_only_benchkit_errors(targets: dict[str, Target], name: str) -> None:
    before = _tried(name)
    _fuzz(name, lambda t: text_mutation(t.original))(targets)
    assert _tried(name) > before and TRIED[name, "refused"] > 0


@pytest.mark.parametrize("name", NAMES)
def test_data_mutations_raise_only_benchkit_errors(targets: dict[str, Target], name: str) -> None:
    before = _tried(name)
    _fuzz(name, lambda t: data_mutation(t.original, t.fuzzed.suffix))(targets)
    assert _tried(name) > before


def test_report_the_inputs_tried() -> None:
    """After the fuzz tests: with BENCHKIT_FUZZ_REPORT=path, write the counts there."""
    report = os.environ.get("BENCHKIT_FUZZ_REPORT")
    if report:
        lines = [f"{name} {how} {n}" for (name, how), n in sorted(TRIED.items())]
        Path(report).write_text("\n".join([*lines, f"total {sum(TRIED.values())}"]) + "\n")
    assert all(n >= 0 for n in TRIED.values())


def test_the_originals_are_valid(targets: dict[str, Target]) -> None:
    for target in targets.values():
        validate_like_the_cli(target.entry)
    assert len(targets) == len(NAMES)


# ------------------------------------------------------------------------ the real CLI

_BROKEN = {
    "native-yaml": lambda b: b.replace(b"tasks:", b"tasks: [", 1),
    "eval-skills": lambda b: b.replace(b'"tasks"', b'"tasks": 7, "x"', 1),
    "skillvault": lambda b: (
        b
        + b"\n"
        + b"a: &a [x, x]\n"
        + b"".join(
            b"a%d: &a%d [*a%s, *a%s, *a%s, *a%s, *a%s, *a%s, *a%s, *a%s]\n"
            % ((i, i) + (b"" if i == 1 else str(i - 1).encode(),) * 8)
            for i in range(1, 12)
        )
    ),
    "memorybench-jsonl": lambda b: b.replace(b"}\n", b"\n", 1),
    "codeforge": lambda b: b"[" * 5000 + b,
}


@pytest.mark.parametrize("name", sorted(_BROKEN))
def test_the_cli_exits_2_with_one_paragraph(targets: dict[str, Target], name: str) -> None:
    target = targets[name]
    target.write(_BROKEN[name](target.original))
    try:
        for command in ("validate", "run"):
            proc = subprocess.run(
                [sys.executable, "-m", "benchkit", command, str(target.entry), "--no-store"]
                if command == "run"
                else [sys.executable, "-m", "benchkit", command, str(target.entry)],
                capture_output=True,
                text=True,
                cwd=target.root,
                env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
                timeout=120,
            )
            assert one_paragraph_error(proc).startswith("benchkit: error: ")
    finally:
        target.write(target.original)


# ------------------------------------------------------------------------ deep nesting


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = {"content": [value]}
    return value


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_deeply_nested_memorybench_data_is_refused_at_load_naming_file_and_case(
    tmp_path: Path, suffix: str
) -> None:
    cases = [dict(case) for case in CASES]
    cases[1]["sessions"] = [[{"role": "user", "content": "x", "extra": _nested(300)}]]
    data = tmp_path / f"data{suffix}"
    if suffix == ".json":
        data.write_text(json.dumps(cases, indent=1))
    else:
        data.write_text("".join(json.dumps(case) + "\n" for case in cases))
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({**MANIFEST, "data_file": data.name}))
    for command in (["validate", str(manifest)], ["run", str(manifest), "--no-store"]):
        proc = subprocess.run(
            [sys.executable, "-m", "benchkit", *command],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
            timeout=120,
        )
        error = one_paragraph_error(proc)
        assert "nests deeper than 100 levels" in error
        if suffix == ".jsonl":
            assert f"{data}:2:" in error  # the second case's line
        else:
            assert f"{data}:" in error and ": $[1].sessions[0][0].extra" in error


# ------------------------------------------------------------------------ hostile numbers

#: The numeric options of each format: (path to the value's container, key, how the value
#: is wrapped when the container needs more than the number). Issue #31 found that NaN,
#: the infinities and huge numbers passed validate in them.
NUMERIC_OPTIONS: dict[str, list[tuple[tuple[Any, ...], str, Callable[[Any], Any]]]] = {
    "native": [
        ((), "timeout", lambda v: v),
        (("scoring",), "k", lambda v: v),
        (("run",), "concurrency", lambda v: v),
        (("run",), "timeout", lambda v: v),
        (("run",), "retries", lambda v: v),
        (("run",), "backoff_base", lambda v: v),
        (("run",), "backoff_max", lambda v: v),
        (("run",), "epochs", lambda v: v),
        (("run",), "seed", lambda v: v),
        (("conditions", 0), "concurrency", lambda v: v),
        (("tasks", 0), "timeout", lambda v: v),
        (("tasks", 0), "weight", lambda v: v),
        (("tasks", 0), "setup", lambda v: [{"action": "wait", "delay_ms": v}]),
    ],
    "eval-skills": [
        ((), "maxLatencyMs", lambda v: v),
        (("tasks", 0), "timeoutMs", lambda v: v),
        (("tasks", 0), "weight", lambda v: v),
    ],
    "skillvault": [
        (("execution",), "retries", lambda v: v),
        (("execution",), "seed", lambda v: v),
        (("tasks", 0), "timeout_ms", lambda v: v),
    ],
    "memorybench-manifest": [
        (("query",), "retrieval_limit", lambda v: v),
        (("ingestion",), "shared_sample_size", lambda v: v),
        ((), "flatten", lambda v: {"field": "sessions", "max_items": v}),
    ],
}
NUMERIC_OPTIONS["native-yaml"] = NUMERIC_OPTIONS["native-json"] = NUMERIC_OPTIONS.pop("native")

#: Values no count, size or duration may take; "1e999" is written as that literal (a
#: number too large for a double: infinity once read).
HOSTILE = [math.nan, math.inf, -math.inf, 1e30, 10**30, "1e999"]
_HUGE = "__huge_literal__"


def _with_value(target: Target, where: tuple[Any, ...], key: str, value: Any) -> bytes:
    """The target's original file with ``where[key]`` set to ``value``, written in its
    own syntax (YAML ``.nan``, JSON ``NaN``, the literal ``1e999`` for "1e999")."""
    from ruamel.yaml import YAML

    yaml = target.fuzzed.suffix != ".json"
    doc = YAML(typ="safe", pure=True).load(target.original) if yaml else json.loads(target.original)
    parent = doc
    for step in where:
        parent = parent[step]
    parent[key] = _HUGE if value == "1e999" else value
    if not yaml:
        text = json.dumps(doc, indent=2)  # NaN / Infinity for the non-finite floats
    else:
        out = io.StringIO()
        YAML(typ="safe", pure=True).dump(doc, out)
        text = out.getvalue()
    return text.replace(f'"{_HUGE}"', "1e999").replace(_HUGE, "1e999").encode()


def assert_refused(target: Target, data: bytes) -> str:
    """The one-paragraph error the target's file gives with ``data`` in it."""
    target.write(data)
    try:
        with pytest.raises(BenchkitError) as info:
            validate_like_the_cli(target.entry)
    finally:
        target.write(target.original)
    text = str(info.value)
    assert text and "\n" not in text, text
    return text


@pytest.mark.parametrize(
    ("name", "option"),
    [(name, option) for name, options in NUMERIC_OPTIONS.items() for option in options],
    ids=lambda x: x if isinstance(x, str) else x[1],
)
def test_huge_and_non_finite_numbers_in_every_numeric_option_are_refused(
    targets: dict[str, Target], name: str, option: tuple[tuple[Any, ...], str, Any]
) -> None:
    where, key, wrap = option
    for value in HOSTILE:
        error = assert_refused(targets[name], _with_value(targets[name], where, key, wrap(value)))
        assert key in error, (value, error)
        TRIED[name, "refused"] += 1


@pytest.mark.parametrize("name", NAMES)
def test_empty_files_are_refused(targets: dict[str, Target], name: str) -> None:
    target = targets[name]
    empties = [b"", b"\n  \n"]
    if name == "memorybench-data":
        empties.append(b"[]")
    for data in empties:
        assert_refused(target, data)
        TRIED[name, "refused"] += 1


@pytest.mark.parametrize("name", ["native-yaml", "skillvault", "codeforge"])
def test_aliases_of_a_large_string_are_refused(targets: dict[str, Target], name: str) -> None:
    """200 KB repeated by 60 aliases adds 12 MB, past the 10 MB bound: refused at the alias
    that crosses it, before anything grows further."""
    target = targets[name]
    big = b"zz_big: &big " + b"x" * 200_000 + b"\nzz_many: [" + b", ".join([b"*big"] * 60) + b"]\n"
    error = assert_refused(target, target.original.rstrip(b"\n") + b"\n" + big)
    assert "aliases expand to more than 10,000,000 characters" in error
    TRIED[name, "refused"] += 1
