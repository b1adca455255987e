# gpudash: `make generate` writes every artifact into build/; `make test` runs the whole suite.
# Both set up everything they need on a fresh machine.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
COLLECTED := $(VENV)/.collected

.PHONY: install generate test lint services bench bench-queries bench-panels clean

# One pip call per target: no pip self-upgrade, no version check, and no bytecode written at install
# (most installed modules are never imported: Python compiles the ones that are, once, on first
# import). So bytecode is written here even where the environment sets PYTHONDONTWRITEBYTECODE:
# otherwise every test process and every gpudash start compiles each module it imports again.
PIP    := $(BIN)/pip install --quiet --disable-pip-version-check --no-compile
export PYTHONDONTWRITEBYTECODE :=

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(PIP) -e .
	touch $@

# The test install includes the product's: it stamps both. It then imports, once, what most test
# workers import (boto3, moto's server, the Kubernetes client, pytest's plugins): Python writes their
# bytecode here instead of in each of the suite's workers at once on a fresh clone.
$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) -e '.[test]'
	$(BIN)/python -c 'import pytest, xdist, hypothesis, generator.cli, boto3, moto.server, \
	  moto.cloudwatch.responses, moto.resourcegroupstaggingapi.responses, kubernetes.client, kubernetes.config'
	touch $@ $(STAMP)

# Collected once before the suite: pytest writes each test module's rewritten bytecode (and Python the bytecode of
# what the test modules import) here, instead of every worker rewriting every module at the same time on a fresh
# clone. Done again only when a test file changed.
$(COLLECTED): $(TEST_STAMP) $(wildcard tests/*.py tests/*/*.py)
	$(BIN)/python -m pytest -q -p no:cacheprovider --collect-only >/dev/null
	touch $@

install: $(STAMP)

generate: $(STAMP)
	$(BIN)/gpudash generate --out build

# Lints exactly what build/ holds (what ships), as CI does.
lint: $(STAMP)
	$(BIN)/gpudash lint --from build

# Test services: a real Prometheus from Debian's package (the tests start it themselves), and
# Debian's Chromium, which opens the `gpudash preview` pages headless.
services:
	@missing=""; \
	  command -v prometheus >/dev/null && command -v promtool >/dev/null || missing="$$missing prometheus"; \
	  command -v chromium >/dev/null || missing="$$missing chromium"; \
	  if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	      --no-install-recommends $$missing >/dev/null; \
	  fi
	@prometheus --version 2>&1 | head -1

# The pip install (then the collection) and the apt install run side by side (one is CPU, the other mostly
# download and unpack). Test files run in two workers per CPU plus one (each file in one worker, so its fixtures
# start once): much of the suite's time is waiting (servers starting, Prometheus scraping, Chromium),
# which the extra workers fill. The longest files start first (tests/conftest.py, START_FIRST).
test:
	@$(MAKE) --no-print-directory -j2 $(COLLECTED) services
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $$(( 2 * $$(nproc) + 1 )) --dist loadfile --no-loadscope-reorder

# Each script prints its own figures and appends issue 13's rows to GPUDASH_BENCH_FIGURES; summary.py prints them last.
bench: export GPUDASH_BENCH_FIGURES := $(abspath $(VENV))/bench-figures.jsonl
bench: $(TEST_STAMP)
	@rm -f "$$GPUDASH_BENCH_FIGURES"
	$(BIN)/python benchmarks/generate.py
	$(BIN)/python benchmarks/lint.py
	$(BIN)/python benchmarks/alarms.py
	$(BIN)/python benchmarks/publish.py
	$(BIN)/python benchmarks/verify.py
	$(BIN)/python benchmarks/suite.py
	$(BIN)/python benchmarks/summary.py

# Minutes, not seconds: a fleet's history backfilled into a real Prometheus, then every counter panel and rule timed.
bench-queries: $(TEST_STAMP)
	$(BIN)/python benchmarks/queries.py $(QUERY_BENCH_ARGS)

# Minutes too: every panel and rule of the build, its bytes and Prometheus' CPU per answer on the messy fleet.
bench-panels: $(TEST_STAMP)
	$(BIN)/python benchmarks/panels.py $(PANEL_BENCH_ARGS)

clean:
	rm -rf $(VENV) build
