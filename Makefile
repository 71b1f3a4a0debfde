# Two commands matter: `make build` and `make test`. Both install into .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SOURCES := pyproject.toml requirements-lock.txt
# Pip constraints: the exact versions of everything installed (requirements-lock.txt; `make lock`
# rewrites it from .venv, and the name is one Dependabot updates) and pyproject.toml's floors
# (constraints-min.txt, which Dependabot leaves alone) for `make test-min`.
LOCK     := requirements-lock.txt
MIN_LOCK := constraints-min.txt
# The minimum-versions venv lives inside .venv: ignored by git and removed by `make clean` with it.
MIN_VENV := $(VENV)/min
MUT_VENV := $(VENV)/mutate

.PHONY: build test test-min check validate schema docs fuzz bench mutate lint typecheck lock clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python $(SOURCES)
	$(BIN)/python -m pip install --quiet -c $(LOCK) -e '.[test]'
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

validate: $(STAMP)
	$(BIN)/gpupolicy validate

schema: $(STAMP)
	$(BIN)/gpupolicy schema

# docs/rules/: one page per rule, and compiler/rules_index.json, which `gpupolicy rules` reads
# instead of importing the registry; both from the registry (tests/test_rule_docs.py and
# tests/test_rules_index.py fail when stale)
docs: $(STAMP)
	$(BIN)/gpupolicy rules --docs docs/rules
	$(BIN)/python -m compiler.report.rule_index

typecheck: $(STAMP)
	$(BIN)/python -m mypy

lint: $(STAMP)
	$(BIN)/ruff check compiler tests bench

# Property-based fuzzing with a large example count, in memory and through the CLI, the cache and
# the file system (tests/test_fuzz_cli.py), and every value of every policy field at every place it is
# set (tests/test_field_effects.py), and the simulator's fast path against its reference path
# (tests/test_simulate_fast_path.py); runs as long as it needs.
fuzz: $(STAMP)
	GPUPOLICY_FUZZ_EXAMPLES=$${GPUPOLICY_FUZZ_EXAMPLES:-10000} $(BIN)/python -m pytest -m '' tests/test_fuzz.py tests/test_fuzz_cli.py \
		tests/test_field_effects.py tests/test_simulate_fast_path.py

bench: $(STAMP)
	$(BIN)/python bench/run.py

# Mutation testing of the solvers ([tool.mutmut] in pyproject.toml; bench/mutate.py): exit 1 when a
# mutant survives that bench/mutants-equivalent.txt does not explain. Over an hour on two cores;
# MUTATE_FLAGS='--max-children 1' keeps it to one worker (mutmut's default is one per core).
MUTATE_FLAGS ?=
mutate: $(MUT_VENV)/.installed
	GPUPOLICY_SHARED=$${GPUPOLICY_SHARED:-$(abspath ../shared)} $(MUT_VENV)/bin/python bench/mutate.py $(MUTATE_FLAGS)

$(MUT_VENV)/.installed: pyproject.toml $(LOCK) requirements-mutate.txt
	rm -rf $(MUT_VENV)
	$(PYTHON) -m venv $(MUT_VENV)
	$(MUT_VENV)/bin/python -m pip install --quiet -c $(LOCK) -e '.[test]' -r requirements-mutate.txt
	touch $@

# The suite at the oldest versions pyproject.toml allows (constraints-min.txt), in a venv of its own.
test-min: $(MIN_VENV)/.installed
	$(MIN_VENV)/bin/python -m pytest

$(MIN_VENV)/.installed: pyproject.toml $(MIN_LOCK)
	rm -rf $(MIN_VENV)
	$(PYTHON) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/python -m pip install --quiet -c $(MIN_LOCK) -e '.[test]'
	touch $@

# Re-pin requirements-lock.txt to what .venv holds (after `pip install -U ...` there and a green `make test`).
lock: $(STAMP)
	{ sed -n '/^#/p' $(LOCK); $(BIN)/python -m pip list --format=freeze --exclude-editable | grep -v '^pip==' | LC_ALL=C sort -f; } > $(LOCK).new
	mv $(LOCK).new $(LOCK)

clean:
	rm -rf $(VENV) .gpupolicy-cache .pytest_cache
