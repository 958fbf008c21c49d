# `make` runs what CI runs: lint, types, tests. In the active virtual environment when there is one
# (VIRTUAL_ENV), else in .venv, which `make` creates with the test extra when it is missing.
ifdef VIRTUAL_ENV
PY ?= $(VIRTUAL_ENV)/bin/python
else
PY ?= .venv/bin/python
endif
BIN := $(dir $(PY))

.PHONY: check lint types test fmt install
check: $(PY) lint types test

$(PY):
	python3 -m venv $(patsubst %/bin/,%,$(BIN)) && $(PY) -m pip install -e ".[test]"

install:
	python3 -m venv .venv && .venv/bin/python -m pip install -e ".[test]"

lint:
	$(BIN)ruff check src tests
	$(BIN)ruff format --check src tests

fmt:
	$(BIN)ruff format src tests
	$(BIN)ruff check --fix src tests

types:
	$(BIN)mypy

test:
	$(BIN)pytest
