"""bundle_file_exists / bundle_file_contains: skillvault's checks, order, messages, confinement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import benchkit
from benchkit.formats import skillvault
from benchkit.formats.skillvault.report import build_run
from benchkit.formats.skillvault.verifiers import BundleFileContains, BundleFileExists
from benchkit.formats.skillvault.verifiers._bundle import confined_path
from benchkit.model import Condition, ProviderSpec, Response, Task
from benchkit.protocols import VerifyContext
from benchkit.registry import default_registries
from benchkit.results import Verdict

pytestmark = pytest.mark.anyio

TASK = Task("t", domain="d")


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    (root / "sub").mkdir(parents=True)
    (root / "answer.txt").write_text("Curated output with guardrails.\nReceipt validated.\n")
    (root / "binary.txt").write_bytes(b"\xff\xfe receipt \xc3")
    (tmp_path / "outside.txt").write_text("receipt")
    return root


def context(bundle: Path | None, *, deterministic: bool = True) -> VerifyContext:
    return VerifyContext(
        condition=Condition("c", ProviderSpec("bundle"), bundle=bundle),
        deterministic=deterministic,
    )


async def check(verifier: BundleFileExists | BundleFileContains, bundle: Path | None) -> Verdict:
    return await verifier.verify(TASK, Response(), context(bundle))


def outcome(verdict: Verdict) -> tuple[bool, str, str | None, int | None]:
    return verdict.passed, verdict.category, verdict.message, verdict.exit_code


async def test_exists_passes_for_files_and_directories(bundle: Path) -> None:
    for path in ("answer.txt", "sub", ".", " answer.txt ", "sub/../answer.txt"):
        assert outcome(await check(BundleFileExists(path=path), bundle)) == (
            True,
            "none",
            None,
            0,
        )


async def test_exists_fails_with_the_path_as_written(bundle: Path) -> None:
    verdict = await check(BundleFileExists(path=" missing.txt"), bundle)
    assert outcome(verdict) == (
        False,
        "assertion_failed",
        "expected file to exist:  missing.txt",
        1,
    )
    assert verdict.duration_ms == 0  # deterministic


async def test_contains_is_a_case_sensitive_utf8_substring_test(bundle: Path) -> None:
    assert (
        await check(BundleFileContains(path="answer.txt", contains="guardrails"), bundle)
    ).passed
    assert (await check(BundleFileContains(path="answer.txt", contains=""), bundle)).passed
    assert (await check(BundleFileContains(path="binary.txt", contains="receipt"), bundle)).passed
    verdict = await check(BundleFileContains(path="answer.txt", contains="receipt"), bundle)
    assert outcome(verdict) == (
        False,
        "assertion_failed",
        'expected answer.txt to contain "receipt"',
        1,
    )


@pytest.mark.parametrize("path", ["missing.txt", "sub"])
async def test_contains_on_a_missing_or_unreadable_file(bundle: Path, path: str) -> None:
    verdict = await check(BundleFileContains(path=path, contains="x"), bundle)
    assert outcome(verdict) == (
        False,
        "assertion_failed",
        f"expected file to exist for content check: {path}",
        1,
    )


@pytest.mark.parametrize(
    ("verifier", "message"),
    [
        (BundleFileExists(), "bundle_file_exists requires args.path"),
        (BundleFileExists(path="  "), "bundle_file_exists requires args.path"),
        (BundleFileExists(path=5), "bundle_file_exists requires args.path"),
        (
            BundleFileContains(path="answer.txt"),
            "bundle_file_contains requires args.path + args.contains",
        ),
        (
            BundleFileContains(path="answer.txt", contains=3),
            "bundle_file_contains requires args.path + args.contains",
        ),
        (
            BundleFileContains(path="", contains="x"),
            "bundle_file_contains requires args.path + args.contains",
        ),
        (BundleFileExists(path="/etc/passwd"), "verifier path must be relative"),
        (BundleFileExists(path="../outside.txt"), "verifier path escapes bundle root"),
        (BundleFileExists(path="sub/../../outside.txt"), "verifier path escapes bundle root"),
        (
            BundleFileContains(path="../outside.txt", contains="receipt"),
            "verifier path escapes bundle root",
        ),
        (BundleFileExists(path="../bundle-sibling"), "verifier path escapes bundle root"),
    ],
)
async def test_bad_arguments_and_escaping_paths_are_execution_errors(
    bundle: Path, verifier: BundleFileExists | BundleFileContains, message: str
) -> None:
    assert outcome(await check(verifier, bundle)) == (False, "execution_error", message, 1)


async def test_a_missing_bundle_is_checked_first(bundle: Path) -> None:
    # skillvault checks the bundle before the arguments: bad args still give this message
    for verifier in (BundleFileExists(), BundleFileContains(path="../x", contains=1)):
        assert outcome(await check(verifier, None)) == (
            False,
            "assertion_failed",
            "bundle path is required for function verifiers",
            1,
        )


async def test_the_providers_artifacts_win_over_the_condition_bundle(
    bundle: Path, tmp_path: Path
) -> None:
    other = tmp_path / "generated"
    other.mkdir()
    (other / "only-here.txt").write_text("x")
    verifier = BundleFileExists(path="only-here.txt")
    assert not (await check(verifier, bundle)).passed
    verdict = await verifier.verify(TASK, Response(artifacts=str(other)), context(bundle))
    assert verdict.passed


async def test_durations_are_whole_milliseconds_when_not_deterministic(bundle: Path) -> None:
    verdict = await BundleFileExists(path="answer.txt").verify(
        TASK, Response(), context(bundle, deterministic=False)
    )
    assert isinstance(verdict.duration_ms, int) and verdict.duration_ms >= 0


def test_confinement_is_lexical_like_skillvaults(tmp_path: Path) -> None:
    root = tmp_path / "b"
    assert confined_path(root, "a/./b/../c") == root / "a" / "c"
    assert confined_path(root, ".") == root
    with pytest.raises(ValueError, match="escapes bundle root"):
        confined_path(root, "..")


def test_the_verifiers_are_registered_and_validate_nothing_at_build_time() -> None:
    verifiers = default_registries().verifiers
    built = verifiers.build("bundle_file_contains", {"path": 3, "contains": None})
    assert isinstance(built, BundleFileContains)  # bad args surface at run time, as in skillvault
    assert repr(verifiers.build("bundle_file_exists", {"path": "a"})) == (
        "BundleFileExists(path='a')"
    )


def test_function_verifiers_are_retried_and_report_the_last_attempt(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    config = {
        "execution": {"retries": 2, "deterministic": True},
        "conditions": [
            {"id": "no_skill"},
            {"id": "curated_skill", "bundle_path": "./b"},
            {"id": "self_generated_skill", "bundle_path": "./b"},
        ],
        "tasks": [
            {
                "id": "t",
                "domain": "d",
                "timeout_ms": 100,
                "verifier": {"function": "bundle_file_exists", "args": {"path": "missing"}},
            }
        ],
    }
    (tmp_path / "bench.json").write_text(json.dumps(config))
    loaded = skillvault.load_config(tmp_path / "bench.json")
    run = build_run(loaded, benchkit.run(skillvault.to_suite(loaded)), git_commit=None)
    assert [(r["attempts"], r["exit_code"], r["error_category"]) for r in run["results"]] == [
        (3, 1, "assertion_failed"),  # no bundle
        (3, 1, "assertion_failed"),
        (3, 1, "assertion_failed"),
    ]
    assert run["results"][0]["error_message"] == "bundle path is required for function verifiers"
    assert run["results"][1]["error_message"] == "expected file to exist: missing"
