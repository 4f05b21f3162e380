"""Shared fixtures: every async test runs on both anyio backends; Hypothesis's profile."""

from __future__ import annotations

import os
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
