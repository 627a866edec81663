# memstrata: `make run` serves the memory over HTTP, `make test` runs every check.
# Both create .venv and install what they need on a fresh machine.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSPECTOR_VERSION := 0.15.0
INSPECTOR := .inspector/node_modules/.bin/mcp-inspector
CLAUDE_VERSION := 2.1.332
CLAUDE_STAMP := .claude-cli/.installed-$(CLAUDE_VERSION)
CLAUDE := .claude-cli/node_modules/.bin/claude

.PHONY: run test lint typecheck unit e2e browser install dev inspector claude-cli bench clean

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

# The real Claude Code CLI, pinned, for tests/e2e/test_claude_code.py (it runs `claude -p` against a
# stub model on 127.0.0.1: no account, no network). The stamp names the version, so changing the
# pin reinstalls it.
$(CLAUDE_STAMP):
	npm install --silent --no-audit --no-fund --prefix .claude-cli \
		@anthropic-ai/claude-code@$(CLAUDE_VERSION)
	touch $@

install: $(VENV)/.installed-run
dev: $(VENV)/.installed-dev
inspector: $(INSPECTOR)
claude-cli: $(CLAUDE_STAMP)

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

e2e: dev inspector claude-cli
	MEMSTRATA_INSPECTOR=$(abspath $(INSPECTOR)) MEMSTRATA_CLAUDE=$(abspath $(CLAUDE)) \
		$(BIN)/pytest -m e2e

# Only the dashboard's browser tests (headless chromium); they rewrite docs/screenshots/*.png
# (other test runs write their screenshots to a temporary folder).
browser: dev
	MEMSTRATA_SCREENSHOTS=$(abspath docs/screenshots) $(BIN)/pytest tests/browser

# The dashboard's browser tests (tests/browser) need Debian's chromium: `apt-get install -y
# chromium` (.ci/run installs it). Without it they skip and say so, unless
# MEMSTRATA_REQUIRE_BROWSER=1 (set by .ci/run), where they fail. Never `playwright install`.
test: dev inspector claude-cli lint typecheck
	@command -v chromium >/dev/null || echo "note: chromium is not installed; the dashboard's browser tests will skip (apt-get install -y chromium)"
	MEMSTRATA_INSPECTOR=$(abspath $(INSPECTOR)) MEMSTRATA_CLAUDE=$(abspath $(CLAUDE)) \
		$(BIN)/pytest --cov --cov-report=term

bench: dev
	$(BIN)/python -m bench.locomo --json bench/results/locomo_dev.json

clean:
	rm -rf $(VENV) .inspector .claude-cli .pytest_cache .mypy_cache .ruff_cache .coverage
