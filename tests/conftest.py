"""Shared fixtures: every async test runs on both anyio backends; Hypothesis's profile."""

from __future__ import annotations

import os
import signal
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from ._llm_server import FakeOpenAI

#: Hypothesis on a slow or shared machine (CI's two cores, shared with other jobs): a test
#: whose example takes longer than the default 200 ms deadline there is not wrong, and a
#: deadline missed once and met on the replay fails as "unreliable timings" — timing
#: alone. This profile has no deadline and does not fail on slow data generation; every
#: property is checked as before. `make test` selects it (BENCHKIT_HYPOTHESIS_PROFILE in
#: the Makefile); a plain `pytest` keeps Hypothesis's defaults.
settings.register_profile(
    "slow-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("BENCHKIT_HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(autouse=True, scope="session")
def _run_store_in_a_temporary_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Runs that use the default run store (benchkit.run, the CLI, the notebook's kernel)
    write to a temporary one, never to a .benchkit/ directory in the repository."""
    previous = os.environ.get("BENCHKIT_STORE")
    os.environ["BENCHKIT_STORE"] = str(tmp_path_factory.mktemp("store") / "benchkit.db")
    yield
    if previous is None:
        del os.environ["BENCHKIT_STORE"]
    else:
        os.environ["BENCHKIT_STORE"] = previous


def _signal_state() -> tuple[int, int]:
    """This process's ignored and (main thread's) blocked signals, as the kernel has them
    (/proc: a disposition set from C shows here, not in ``signal.getsignal``); (0, 0)
    where there is no /proc."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return 0, 0
    found = dict(line.split(":\t", 1) for line in lines if ":\t" in line)
    return int(found.get("SigIgn", "0"), 16), int(found.get("SigBlk", "0"), 16)


_ENDING = (signal.SIGINT, signal.SIGTERM)
_ENDING_BITS = sum(1 << (s - 1) for s in _ENDING)
_SESSION_SIGNALS = _signal_state()


@pytest.fixture(autouse=True)
def _signals_as_the_session_began(request: pytest.FixtureRequest) -> None:
    """Every test starts with SIGINT and SIGTERM handled as when the session began: a
    subprocess inherits an ignored or blocked signal, and a test that sends one to its
    child (tests/test_local_model.py's Ctrl-C) must not depend on which tests ran before
    it in the same worker. A change found is undone and named in the warnings summary."""
    if threading.current_thread() is not threading.main_thread():
        return
    ignored, blocked = _signal_state()
    if (ignored ^ _SESSION_SIGNALS[0]) & _ENDING_BITS or (
        blocked ^ _SESSION_SIGNALS[1]
    ) & _ENDING_BITS:
        for sig in _ENDING:
            bit = 1 << (sig - 1)
            default = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
            signal.signal(sig, signal.SIG_IGN if _SESSION_SIGNALS[0] & bit else default)
            how = signal.SIG_BLOCK if _SESSION_SIGNALS[1] & bit else signal.SIG_UNBLOCK
            signal.pthread_sigmask(how, {sig})
        warnings.warn(
            f"before {request.node.nodeid}: SIGINT/SIGTERM ignored {ignored & _ENDING_BITS:#x}, "
            f"blocked {blocked & _ENDING_BITS:#x} (session began with "
            f"{_SESSION_SIGNALS[0] & _ENDING_BITS:#x}, {_SESSION_SIGNALS[1] & _ENDING_BITS:#x}): "
            "an earlier test left them so; restored",
            stacklevel=1,
        )


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs on asyncio and on trio."""
    return str(request.param)


@pytest.fixture
def llm_server() -> Iterator[FakeOpenAI]:
    """A scriptable OpenAI-compatible server on 127.0.0.1 (see tests/_llm_server.py)."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="session")
def toy_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the toy sixth tool's installed distribution (tests/_toy.py)."""
    from ._toy import install_toy

    return install_toy(tmp_path_factory.mktemp("toy-site"))


@pytest.fixture
def toy_work(tmp_path: Path) -> Path:
    """A directory holding a toy benchmark, ``sums.json`` (tests/_toy.py)."""
    from ._toy import TOY_BENCHMARK

    (tmp_path / "sums.json").write_text(TOY_BENCHMARK, encoding="utf-8")
    return tmp_path
