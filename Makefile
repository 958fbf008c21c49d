# `make` runs what CI runs: lint, types, tests.
PY ?= .venv/bin/python
BIN := $(dir $(PY))

.PHONY: check lint types test fmt install
check: lint types test

install:
	python3 -m venv .venv && $(PY) -m pip install -e ".[test]"

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
