"""The store and the CLI where the file system says no (issue #31, item 8): a store that
cannot be written is still read by ``runs list`` / ``runs show``; ``--no-store -o`` on a
full disk is one paragraph and exit 2; of two ``--resume``s racing for one run, the loser
never claims to resume it. Real subprocesses, real mounts (as root; skipped otherwise)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._serve import write_benchmark

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "benchmarks" / "demo" / "benchmark.yaml"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchkit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@contextlib.contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'not root'})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, str]:
    store = tmp_path / "made" / "benchkit.db"
    done = _cli("run", str(DEMO), "--store", str(store), "--run-id", "the-run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return store, "the-run"


def assert_readable(store: Path, run_id: str, cwd: Path) -> None:
    listed = _cli("runs", "list", "--store", str(store), cwd=cwd)
    assert listed.returncode == 0, listed.stderr
    assert run_id in listed.stdout
    shown = _cli("runs", "show", run_id, "--store", str(store), cwd=cwd)
    assert shown.returncode == 0, shown.stderr
    assert "calculator" in shown.stdout + shown.stderr
    deleted = _cli("runs", "delete", run_id, "--store", str(store), cwd=cwd)
    assert deleted.returncode == 2
    assert "Traceback" not in deleted.stderr
    assert "not writable" in deleted.stderr


def test_a_store_on_a_read_only_file_system_is_readable(
    stored: tuple[Path, str], tmp_path: Path
) -> None:
    store, run_id = stored
    with _tmpfs(tmp_path / "ro", "8m") as mounted:
        for file in store.parent.iterdir():
            shutil.copy(file, mounted / file.name)
        remount = subprocess.run(
            ["mount", "-o", "remount,ro", str(mounted)], capture_output=True, text=True
        )
        assert remount.returncode == 0, remount.stderr
        assert_readable(mounted / store.name, run_id, tmp_path)


def test_an_immutable_store_is_readable(stored: tuple[Path, str], tmp_path: Path) -> None:
    store, run_id = stored
    # Check the store in (close its WAL) so that the file alone holds every run.
    with contextlib.closing(sqlite3.connect(store)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    frozen: list[Path] = []
    for path in (store, store.parent):
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if done.returncode != 0:
            for thawed in frozen:
                subprocess.run(["chattr", "-i", str(thawed)], capture_output=True)
            pytest.skip(f"chattr +i is not available here: {done.stderr.strip()}")
        frozen.append(path)
    try:
        assert_readable(store, run_id, tmp_path)
    finally:
        for path in frozen:
            subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def test_no_store_output_on_a_full_disk_is_one_paragraph(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "full", "64k") as mounted:
        with contextlib.suppress(OSError), (mounted / "filler").open("wb") as filler:
            while True:
                filler.write(b"\0" * 4096)
                filler.flush()
        done = _cli("run", str(DEMO), "--no-store", "-o", str(mounted / "out.json"), cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert "No space left on device" in done.stderr
        assert done.stderr.count("benchkit: error:") == 1
        (mounted / "filler").unlink()
        (mounted / "filler").write_bytes(b"\0" * (50 * 1024))  # room for the cells, not more
        done = _cli("run", str(DEMO), "--no-store", "-o", str(mounted / "out.json"), cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert "No space left on device" in done.stderr


def test_the_loser_of_two_resumes_never_says_it_resumes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    bench = write_benchmark(root / "slow", tasks=12, sleep=0.5)
    store = tmp_path / "store.db"
    command = [sys.executable, "-m", "benchkit", "run", str(bench), "--store", str(store)]
    first = subprocess.Popen([*command, "--no-progress"], cwd=tmp_path, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not _stored_cells(store) and time.monotonic() < deadline:
        time.sleep(0.1)
    first.send_signal(signal.SIGINT)  # an interrupted run: cells left to resume
    assert first.wait(60) == 130
    # Hold the store's write lock: both resumes prepare (they only read), then wait at the
    # claim of the run; released together, one claims the run and the other is refused.
    lock = sqlite3.connect(store, timeout=30, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    racers = [
        subprocess.Popen(
            [*command, "--resume", "--no-progress"],
            cwd=tmp_path,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(2)
    ]
    time.sleep(8)  # both are started, have prepared, and wait for the lock
    lock.execute("COMMIT")
    lock.close()
    outcomes = []
    for racer in racers:
        _, err = racer.communicate(timeout=180)
        outcomes.append((racer.returncode, err))
    outcomes.sort()
    (won, won_err), (lost, lost_err) = outcomes
    assert won == 0, won_err
    assert "resuming run" in won_err
    assert lost == 2, lost_err
    assert "is still running in process" in lost_err
    assert "resuming run" not in lost_err
    assert "Traceback" not in lost_err


def _stored_cells(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(store, timeout=5)) as db:
            return int(db.execute("SELECT COUNT(*) FROM cells").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.fixture(autouse=True)
def _root_only() -> None:
    if os.geteuid() != 0:
        pytest.skip("mounts and chattr need root (make test runs as root)")
