"""The command verifier given the model's output: it runs in the sandbox, over the output."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchkit.errors import ConfigError
from benchkit.formats.skillvault.verifiers import CommandVerifier
from benchkit.model import Condition, ProviderSpec, Response, Task
from benchkit.protocols import VerifyContext

pytestmark = pytest.mark.anyio

TASK = Task("task-1", domain="checks", input="Write answer.txt")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def context(base_dir: Path) -> VerifyContext:
    return VerifyContext(
        condition=Condition("curated_skill", ProviderSpec("bundle")),
        seed=7,
        deterministic=True,
        base_dir=base_dir,
    )


@pytest.fixture
def bench_dir() -> Iterator[Path]:
    """A benchmark directory others may read, as checked-out benchmarks are (pytest's own
    temporary directories are private to their owner, and the sandbox's user is another)."""
    path = Path(tempfile.mkdtemp(prefix="benchkit-bench-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


async def test_the_command_reads_the_output_and_the_benchmarks_scripts(
    bench_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path = bench_dir
    (tmp_path / "check.sh").write_text('grep -q receipt "$SKILLVAULT_BENCH_OUTPUT_FILE"\n')
    monkeypatch.setenv("BENCHKIT_TEST_SECRET", "not-for-the-command")
    verifier = CommandVerifier(
        command='sh "$SKILLVAULT_BENCH_DIR/check.sh" && test -z "$BENCHKIT_TEST_SECRET" '
        '&& [ "$SKILLVAULT_BENCH_SEED" = 7 ]',
        timeout_ms=20_000,
        output_file="reply.txt",
    )
    ok = await verifier.verify(TASK, Response("here is the receipt"), context(tmp_path))
    assert (ok.passed, ok.exit_code) == (True, 0)
    bad = await verifier.verify(TASK, Response("nothing"), context(tmp_path))
    assert (bad.passed, bad.category, bad.exit_code) == (False, "verification_failed", 1)


async def test_the_outputs_files_are_written_and_a_timeout_is_skillvaults(tmp_path: Path) -> None:
    reply = "answer.txt:\n```\n42\n```\n"
    verifier = CommandVerifier(
        command='test "$(cat answer.txt)" = 42', timeout_ms=20_000, output_file="out.txt"
    )
    assert (await verifier.verify(TASK, Response(reply), context(tmp_path))).passed
    slow = CommandVerifier(command="sleep 30", timeout_ms=500, output_file="out.txt")
    verdict = await slow.verify(TASK, Response("x"), context(tmp_path))
    assert (verdict.passed, verdict.category, verdict.message) == (
        False,
        "timeout",
        "verifier timed out after 500ms",
    )


async def test_nothing_is_written_beside_the_benchmark(bench_dir: Path) -> None:
    tmp_path = bench_dir
    tmp_path.chmod(0o777)  # only the read-only mount may stop the write
    verifier = CommandVerifier(
        command=f"touch {tmp_path}/escaped; touch here", timeout_ms=20_000, output_file="o.txt"
    )
    await verifier.verify(TASK, Response("x"), context(tmp_path))
    assert not (tmp_path / "here").exists()
    from benchkit.sandbox import Sandbox

    if Sandbox().isolation().filesystem_read_only:
        assert not (tmp_path / "escaped").exists()


def test_an_output_file_outside_the_directory_is_refused() -> None:
    with pytest.raises(ConfigError, match="must be a relative file name"):
        CommandVerifier(command="true", output_file="../x")
