"""The run store from the command line, with real processes: SIGKILL and resume, two
writers at once, Ctrl-C, a read-only or full disk, and the runs / compare commands."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import benchkit
from benchkit import RunResult
from benchkit.cli import main
from benchkit.store import Store

from ._support import FIXTURES, REPO, one_paragraph_error

STORE = FIXTURES / "store"
STEPS = STORE / "steps.yaml"
OK = FIXTURES / "cli" / "ok.yaml"
ALL_STEPS = {(c, f"t{i}", 0) for c in ("careful", "sloppy") for i in range(30)}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHKIT_")}
    env["PYTHONPATH"] = str(REPO / "src")
    env.update(extra)
    return env


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "benchkit", *args]


def run_cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _command(*args),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=_env(**env),
        timeout=120,
    )


def start_cli(*args: str, cwd: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        _command(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=_env(**env),
    )


def stored_cells(path: Path) -> set[tuple[str, str, int]]:
    """The (condition, task, epoch) of every cell in the store (empty while it is created)."""
    if not path.exists():
        return set()
    db = sqlite3.connect(path, timeout=10)
    try:
        return set(db.execute("SELECT condition_id, task_id, epoch FROM cells"))
    except sqlite3.OperationalError:  # the schema is not there yet
        return set()
    finally:
        db.close()


def wait_for_cells(path: Path, count: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while len(stored_cells(path)) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run stored too few cells"
        time.sleep(0.02)


def calls(log: Path) -> list[tuple[str, str, int]]:
    out = []
    for line in log.read_text().splitlines():
        cond, task, epoch = line.split(":")
        out.append((cond, task, int(epoch)))
    return out


# -- every CLI run goes to the store -----------------------------------------------


def test_a_cli_run_writes_to_the_default_store_and_prints_the_run_id(tmp_path: Path) -> None:
    proc = run_cli("run", str(OK), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    store = tmp_path / ".benchkit" / "benchkit.db"
    (summary,) = Store(store).runs()
    assert f"run {summary.run_id}: stored in {store}" in proc.stderr
    assert (summary.status, summary.cells) == ("finished", 8)
    assert not (tmp_path / ".benchkit" / "runs").exists()  # the store replaces them

    env_store = tmp_path / "env.db"
    proc = run_cli("run", str(OK), cwd=tmp_path, BENCHKIT_STORE=str(env_store))
    assert proc.returncode == 0 and f"stored in {env_store}" in proc.stderr
    flag_store = tmp_path / "flag.db"
    proc = run_cli("run", str(OK), "--store", str(flag_store), cwd=tmp_path)
    assert proc.returncode == 0 and f"stored in {flag_store}" in proc.stderr
    assert len(Store(store).runs()) == len(Store(env_store).runs()) == 1


def test_no_store_writes_nothing_unless_asked_and_refuses_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(OK), "--no-store", "--run-id", "plain"]) == 0
    assert "run plain: not stored (--no-store" in capsys.readouterr().err
    assert not (tmp_path / ".benchkit").exists()  # no store, no .benchkit/runs/plain/
    out = Path("kept") / "result.json"
    assert main(["run", str(OK), "--no-store", "--run-id", "plain", "-o", str(out)]) == 0
    assert f"run plain: results in {out}" in capsys.readouterr().err
    assert RunResult.from_json((tmp_path / out).read_text())
    assert not (tmp_path / ".benchkit" / "benchkit.db").exists()
    assert main(["run", str(OK), "--no-store", "--resume"]) == 2
    assert "need the run store" in capsys.readouterr().err


def test_output_file_is_written_beside_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, out = tmp_path / "s.db", tmp_path / "r.json"
    assert main(["run", str(OK), "--store", str(store), "-o", str(out), "-d"]) == 0
    err = capsys.readouterr().err
    assert f"stored in {store}; results in {out}" in err
    with Store(store) as opened:
        assert RunResult.from_json(out.read_text()) == opened.load(opened.runs()[0].run_id)


# -- crash safety -----------------------------------------------------------------------


def test_sigkill_mid_run_then_resume_equals_an_uninterrupted_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.db"
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    args = ("run", str(STEPS), "-d", "-f", "json", "--store", str(store))

    proc = start_cli(
        *args, cwd=tmp_path, BENCHKIT_TEST_DELAY="0.25", BENCHKIT_TEST_LOG=str(first_log)
    )
    try:
        wait_for_cells(store, 10, proc)
        busy = run_cli(*args, "--resume", cwd=tmp_path)
        assert f"still running in process {proc.pid}" in one_paragraph_error(busy)
    finally:
        proc.kill()
        proc.wait()
    kept = stored_cells(store)
    assert 10 <= len(kept) < len(ALL_STEPS)
    (crashed,) = Store(store).runs()
    assert crashed.status == "crashed"
    assert main(["runs", "show", crashed.run_id, "--store", str(store)]) == 0
    shown = capsys.readouterr().out
    assert f"run {crashed.run_id} · crashed · {len(kept)}/60 cells" in shown
    assert f"continue it: python -m benchkit run {STEPS} --resume --run-id {crashed.run_id}" in (
        shown
    )

    resumed = run_cli(*args, "--resume", cwd=tmp_path, BENCHKIT_TEST_LOG=str(second_log))
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming run {crashed.run_id}: {len(kept)} finished cells kept" in resumed.stderr
    rerun = calls(second_log)
    assert len(rerun) == len(set(rerun))  # nothing ran twice...
    assert set(rerun) == ALL_STEPS - kept  # ...and exactly what was not stored ran again

    assert main([*args[:-2], "--store", str(tmp_path / "reference.db")]) == 0
    uninterrupted = capsys.readouterr().out
    assert resumed.stdout == uninterrupted  # deterministic: byte for byte, run id included
    with Store(store) as opened:
        assert opened.load(crashed.run_id).to_json() + "\n" == uninterrupted
        (summary,) = opened.runs()
    assert (summary.status, summary.cells, summary.errors) == ("finished", 60, 4)
    assert [(s.kind, s.status, s.reused) for s in summary.sessions] == [
        ("start", "crashed", 0),
        ("resume", "finished", len(kept)),
    ]
    with sqlite3.connect(store) as db:
        keys = db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT task_id || '|' || condition_id || '|' || epoch) "
            "FROM cells"
        ).fetchone()
    assert keys == (60, 60)


def test_ctrl_c_marks_the_run_interrupted_and_says_how_to_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.db"
    args = ("run", str(STEPS), "--store", str(store))
    proc = start_cli(*args, cwd=tmp_path, BENCHKIT_TEST_DELAY="0.1")
    wait_for_cells(store, 4, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    kept = len(stored_cells(store))
    assert f"{kept} finished cells kept in {store} as run " in stderr
    assert "\nto continue it: " in stderr and f"--store {store}" in stderr
    (summary,) = Store(store).runs()
    assert (summary.status, summary.cells) == ("interrupted", kept)

    assert main([*args, "--resume", "--retry-errors"]) == 0
    err = capsys.readouterr().err
    assert f"resuming run {summary.run_id}: " in err
    (summary,) = Store(store).runs()
    assert (summary.status, summary.cells, len(summary.sessions)) == ("finished", 60, 2)


def test_two_processes_write_runs_to_one_store_at_once(tmp_path: Path) -> None:
    store = tmp_path / "shared" / "benchkit.db"  # both processes race to create it
    together = str(STORE / "together.yaml")
    procs = [
        start_cli(
            "run",
            together,
            "--store",
            str(store),
            cwd=tmp_path,
            BENCHKIT_TEST_DIR=str(tmp_path),
            BENCHKIT_TEST_ME=me,
            BENCHKIT_TEST_OTHER=other,
            BENCHKIT_TEST_DELAY="0.005",
        )
        for me, other in (("a", "b"), ("b", "a"))
    ]
    deadline = time.monotonic() + 120
    while any(proc.poll() is None for proc in procs) and time.monotonic() < deadline:
        if any(proc.poll() not in (None, 0) for proc in procs):
            break  # one failed: the other would wait at its rendezvous for a minute a cell
        time.sleep(0.05)
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
    outputs = [proc.communicate() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    runs = Store(store).runs()
    assert len(runs) == 2
    assert all((r.status, r.cells) == ("finished", 40) for r in runs)
    printed = {line.split(":")[0][4:] for _, err in outputs for line in err.splitlines()}
    assert {r.run_id for r in runs} <= printed


# -- a store that cannot be written fails the run before any cell runs --------------------


def _unshare_available() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt"], capture_output=True
    )
    return probe.returncode == 0


def _script(tmp_path: Path, body: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a shell script in a private mount namespace (mounts vanish with it)."""
    python = f"{sys.executable} -m benchkit"
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", body.replace("BENCHKIT", python)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(**env),
        timeout=120,
    )


def test_a_read_only_store_fails_the_run_before_any_cell_runs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    store = data / "benchkit.db"
    assert main(["run", str(OK), "--store", str(store)]) == 0
    log = tmp_path / "calls.log"
    args = f"run {STEPS} --store {store}"
    if os.geteuid() != 0:  # the permission bits are enough
        store.chmod(0o444)
        data.chmod(0o555)
        try:
            proc = run_cli(*args.split(), cwd=tmp_path, BENCHKIT_TEST_LOG=str(log))
        finally:
            data.chmod(0o755)
            store.chmod(0o644)
    elif _unshare_available():  # root ignores permission bits: mount the directory read-only
        proc = _script(
            tmp_path,
            f"mount --bind {data} {data} && mount -o remount,bind,ro {data} && "
            f"exec BENCHKIT {args}",
            BENCHKIT_TEST_LOG=str(log),
        )
    else:
        pytest.skip("running as root without mount namespaces: cannot make a read-only store")
    message = one_paragraph_error(proc)
    assert "is not writable" in message and str(store) in message
    assert "--no-store" in message
    assert not log.exists()  # no cell ran


def test_a_full_disk_fails_the_run_with_a_clear_message(tmp_path: Path) -> None:
    if not _unshare_available():
        pytest.skip("needs root and mount namespaces to mount a small tmpfs")
    disk = tmp_path / "disk"
    disk.mkdir()
    big = STORE / "big.yaml"
    proc = _script(
        tmp_path,
        f"mount -t tmpfs -o size=320k tmpfs {disk} && "
        f"BENCHKIT run {big} --store {disk}/s.db; echo exit=$? >&2; "
        f"BENCHKIT runs list --store {disk}/s.db -f json",
        BENCHKIT_TEST_DELAY="0.01",  # one cell per batch: the disk fills mid-run
    )
    assert "exit=2" in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("benchkit: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr
    assert "is full" in errors[0] and "--resume" in errors[0]
    (summary,) = json.loads(proc.stdout)
    assert 0 < summary["cells"] < 50  # what finished before the disk filled is kept

    tiny = _script(
        tmp_path,
        f"mount -t tmpfs -o size=8k tmpfs {disk} && head -c 8192 /dev/zero > {disk}/fill; "
        f"BENCHKIT run {STEPS} --store {disk}/s.db",
    )
    assert "is full" in one_paragraph_error(tiny)


def test_a_damaged_store_is_a_one_paragraph_error(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    store.write_bytes(b"\x00garbage" * 1000)
    proc = run_cli("runs", "list", "--store", str(store), cwd=tmp_path)
    assert "damaged or is not a benchkit store" in one_paragraph_error(proc)
    assert store.read_bytes() == b"\x00garbage" * 1000


# -- runs list | show | export | delete, and compare ------------------------------------


def test_runs_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "s.db")
    assert main(["run", str(OK), "--store", store, "--run-id", "first", "-e", "2"]) == 0
    assert main(["run", str(STEPS), "--store", store, "--run-id", "second"]) == 0
    capsys.readouterr()

    assert main(["runs", "list", "--store", store]) == 0
    listing = capsys.readouterr().out
    assert listing.index("second") < listing.index("first")
    assert "cli-ok v2.0.0" in listing and "16/16" in listing and "finished" in listing
    assert main(["runs", "list", "--store", store, "-f", "json", "--benchmark", "cli-ok"]) == 0
    (only,) = json.loads(capsys.readouterr().out)
    assert (only["run_id"], only["cells"], only["sessions"][0]["kind"]) == ("first", 16, "start")

    assert main(["runs", "show", "fir", "--store", store]) == 0
    shown = capsys.readouterr().out
    assert "run first · finished · 16/16 cells" in shown and "4/8" in shown
    assert main(["runs", "show", "second", "--store", store, "-f", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert markdown.startswith("# Store test v1.0.0")
    with sqlite3.connect(store) as db:  # a finished run shows from its stored outcome:
        db.execute("UPDATE cells SET data = 'not json' WHERE run_id = 'second'")  # no cell read
    assert main(["runs", "show", "second", "--store", store, "-f", "markdown"]) == 0
    assert capsys.readouterr().out == markdown

    out = tmp_path / "export" / "first.jsonl"
    assert (
        main(["runs", "export", "first", "--store", store, "--format", "jsonl", "-o", str(out)])
        == 0
    )
    assert main(["report", str(out), "-f", "json"]) == 0
    capsys.readouterr()
    assert main(["runs", "export", "first", "--store", store]) == 0
    exported = RunResult.from_json(capsys.readouterr().out)
    assert exported == Store(store).load("first") and len(exported.cells) == 16

    assert main(["runs", "delete", "first", "second", "--store", store]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "deleted run first (16 cells)",
        "deleted run second (60 cells)",
    ]
    assert main(["runs", "show", "first", "--store", store]) == 2
    assert "no run 'first'" in capsys.readouterr().err
    assert main(["runs", "list", "--store", store]) == 0
    assert "no runs yet" in capsys.readouterr().out


def test_compare_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "s.db")
    assert main(["run", str(STEPS), "--store", store, "--run-id", "a", "-d"]) == 0
    assert main(["run", str(STEPS), "--store", store, "--run-id", "b", "-d"]) == 0
    with sqlite3.connect(store) as db:  # in run b, careful fails t5 and sloppy passes t1
        for task, cond, status in (("t5", "careful", "fail"), ("t1", "sloppy", "pass")):
            row = db.execute(
                "SELECT data FROM cells WHERE run_id = 'b' AND task_id = ? AND condition_id = ?",
                (task, cond),
            ).fetchone()
            data = json.loads(row[0])
            data.update(status=status, score=1.0 if status == "pass" else 0.0)
            data.update(error_category="assertion_failed" if status == "fail" else "none")
            db.execute(  # the cell JSON and the columns that mirror it
                "UPDATE cells SET data = ?, status = ?, score = ? "
                "WHERE run_id = 'b' AND task_id = ? AND condition_id = ?",
                (json.dumps(data), status, repr(data["score"]), task, cond),
            )
    capsys.readouterr()

    assert main(["compare", "a", "b", "--store", store, "-f", "json"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    careful, sloppy = cmp["conditions"]
    assert (careful["condition_a"], careful["paired"]) == ("careful", 30)
    assert careful["comparison"]["regressed"] == ["t5"]
    assert sloppy["comparison"]["improved"] == ["t1"]
    assert main(["compare", "a", "b", "--store", store, "-f", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert markdown.startswith("**b** vs baseline **a**: careful Δ -0.033")
    assert "careful regressed (pass → fail): t5" in markdown
    assert main(["compare", "a", "b", "--store", store, "--pair", "careful:sloppy"]) == 0
    assert "careful → sloppy" in capsys.readouterr().out
    assert main(["compare", "a", "b", "--store", store, "--pair", ":x"]) == 2
    assert "names no condition" in capsys.readouterr().err


def test_latest_and_minus_n_name_runs_newest_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.db"
    for epochs in ("1", "2"):
        assert main(["run", str(OK), "--store", str(store), "-e", epochs, "--no-progress"]) == 0
    with Store(store) as opened:
        newest, older = (r.run_id for r in opened.runs())
        assert opened.load("latest").run_id == newest == opened.load("-1").run_id
        assert opened.load("-2").run_id == older
        with pytest.raises(benchkit.RunNotFoundError, match="holds 2 run"):
            opened.load("-3")
    capsys.readouterr()
    assert main(["runs", "show", "-2", "--store", str(store), "-f", "json"]) == 0
    assert older in capsys.readouterr().out
    assert main(["compare", "-2", "latest", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert older in out and newest in out
    # --resume --run-id takes the same names: the newest run is resumed, nothing re-runs.
    assert (
        main(["run", str(OK), "--store", str(store), "-e", "2", "--resume", "--run-id", "-1"]) == 0
    )
    assert f"resuming run {newest}" in capsys.readouterr().err


def test_runs_show_of_a_deterministic_run_says_when_it_was_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A deterministic run's document is dated 1970-01-01 on purpose; the report says so,
    # and runs show adds when the store recorded the run.
    store = tmp_path / "s.db"
    assert main(["run", str(OK), "--store", str(store), "-d", "--no-progress"]) == 0
    with Store(store) as opened:
        (summary,) = opened.runs()
    assert summary.started_at.startswith("20")
    capsys.readouterr()
    assert main(["runs", "show", "latest", "--store", str(store), "-f", "markdown"]) == 0
    header = capsys.readouterr().out.splitlines()[2]
    assert header == (
        f"Run `{summary.run_id}` · stored {summary.started_at} · "
        "created 1970-01-01T00:00:00Z (fixed by deterministic mode)"
    )
    assert main(["runs", "show", "latest", "--store", str(store), "-f", "html"]) == 0
    page = capsys.readouterr().out
    assert f"stored {summary.started_at} · created 1970-01-01T00:00:00Z (fixed by" in page
    # Not stored, not deterministic: the document's own time alone.
    result = benchkit.run(benchkit.load(OK), store=False)
    assert f"· created {result.info.created_at}\n" in result.to_markdown()
    assert "deterministic" not in result.to_markdown().split("\n")[2]
