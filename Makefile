# Two commands matter: `make build` and `make test`. Both install into .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SOURCES := pyproject.toml

.PHONY: build test check schema fuzz bench lint typecheck clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python $(SOURCES)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

build: $(STAMP)
	$(BIN)/gpupolicy build

# Lint and types first (seconds), then the suite.
test: $(STAMP)
	$(BIN)/ruff check compiler tests bench
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest

check: $(STAMP)
	$(BIN)/gpupolicy check

schema: $(STAMP)
	$(BIN)/gpupolicy schema

typecheck: $(STAMP)
	$(BIN)/python -m mypy

lint: $(STAMP)
	$(BIN)/ruff check compiler tests bench

# Property-based fuzzing with a large example count, in memory and through the CLI, the cache and
# the file system (tests/test_fuzz_cli.py), and every value of every policy field at every place it is
# set (tests/test_field_effects.py); runs as long as it needs.
fuzz: $(STAMP)
	GPUPOLICY_FUZZ_EXAMPLES=$${GPUPOLICY_FUZZ_EXAMPLES:-10000} $(BIN)/python -m pytest -m '' tests/test_fuzz.py tests/test_fuzz_cli.py \
		tests/test_field_effects.py

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .gpupolicy-cache .pytest_cache
