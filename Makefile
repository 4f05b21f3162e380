# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
# Each creates .venv when it is missing and installs what it needs from the package registry
# (the test and dev tools, and the optional extras that tests exercise: mcp).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest perf clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[serve,test,dev,mcp]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m benchkit run benchmarks/demo/benchmark.yaml
	$(BIN)/python -m benchkit eval --skills benchmarks/skills/calculator --benchmark coding-easy \
		--output-dir .benchkit/reports

lint: $(STAMP)
	$(BIN)/ruff check src tests perf
	$(BIN)/ruff format --check src tests perf

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/python -m pytest

test: lint typecheck pytest

perf: $(STAMP)
	$(BIN)/python perf/runner_throughput.py

clean:
	rm -rf $(VENV) .benchkit build dist
