# memstrata: `make run` serves the memory over HTTP, `make test` runs every check.
# Both create .venv and install what they need on a fresh machine.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSPECTOR_VERSION := 0.15.0
INSPECTOR := .inspector/node_modules/.bin/mcp-inspector

.PHONY: run test lint typecheck unit e2e browser install dev inspector bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamps re-run the install whenever pyproject.toml changes.
$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed-run

# The MCP Inspector CLI, an external client the end-to-end tests drive (0.15.0 runs on Node 20).
$(INSPECTOR):
	npm install --silent --no-audit --no-fund --prefix .inspector \
		@modelcontextprotocol/inspector@$(INSPECTOR_VERSION)

install: $(VENV)/.installed-run
dev: $(VENV)/.installed-dev
inspector: $(INSPECTOR)

run: install
	$(BIN)/memstrata serve --http

lint: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/hadolint Dockerfile
	$(BIN)/python docs/gen_tools.py --check
	$(BIN)/python docs/gen_config.py --check

typecheck: dev
	$(BIN)/mypy

unit: dev
	$(BIN)/pytest -m "not e2e"

e2e: dev inspector
	MEMSTRATA_INSPECTOR=$(abspath $(INSPECTOR)) $(BIN)/pytest -m e2e

# Only the dashboard's browser tests (headless chromium); they rewrite docs/screenshots/*.png
# (other test runs write their screenshots to a temporary folder).
browser: dev
	MEMSTRATA_SCREENSHOTS=$(abspath docs/screenshots) $(BIN)/pytest tests/browser

# The dashboard's browser tests (tests/browser) need Debian's chromium: `apt-get install -y
# chromium` (.ci/run installs it). Without it they skip and say so, unless
# MEMSTRATA_REQUIRE_BROWSER=1 (set by .ci/run), where they fail. Never `playwright install`.
test: dev inspector lint typecheck
	@command -v chromium >/dev/null || echo "note: chromium is not installed; the dashboard's browser tests will skip (apt-get install -y chromium)"
	MEMSTRATA_INSPECTOR=$(abspath $(INSPECTOR)) $(BIN)/pytest --cov --cov-report=term

bench: dev
	$(BIN)/python -m bench.locomo --json bench/results/locomo_dev.json

clean:
	rm -rf $(VENV) .inspector .pytest_cache .mypy_cache .ruff_cache .coverage
