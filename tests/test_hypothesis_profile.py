"""The Hypothesis profile for slow machines (tests/conftest.py) and `make test` choosing it."""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, settings

from ._support import REPO


def test_the_slow_machine_profile_has_no_deadline_and_checks_every_property() -> None:
    profile = settings.get_profile("slow-machine")
    default = settings.get_profile("default")
    assert profile.deadline is None and default.deadline is not None
    assert HealthCheck.too_slow in profile.suppress_health_check
    assert profile.max_examples == default.max_examples  # as many examples as ever


def test_make_test_runs_pytest_with_it() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^HYPOTHESIS_PROFILE \?= slow-machine$", makefile, re.MULTILINE)
    recipe = makefile.split("\npytest:", 1)[1].split("\n\n", 1)[0]
    assert "BENCHKIT_HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE)" in recipe


def test_the_profile_named_by_the_environment_is_the_one_loaded() -> None:
    name = os.environ.get("BENCHKIT_HYPOTHESIS_PROFILE", "default")
    assert settings().deadline == settings.get_profile(name).deadline
