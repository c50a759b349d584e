# Fresh machine: `make demo` or `make test` create .venv, install pinned versions and run.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)

.PHONY: install demo lint typecheck chromium test bench seeds results clean

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[dev,train,llm,ray,trl]"
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

## The main job: evaluate oracle, random and no-op on the held-out seeds of every installed
## domain (2 worker processes), print the table, then the report: tables and two PNG plots,
## runs/demo.pass_rate.png and runs/demo.failure_codes.png.
demo: $(STAMP)
	rm -f runs/demo.jsonl
	$(BIN)/backoffice eval --env all --policy oracle --policy random --policy noop --split heldout --workers 2 --out runs/demo.jsonl
	$(BIN)/backoffice report runs/demo.jsonl

## ruff over everything (config in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .

## mypy over the package. The package lives in folders mapped to backoffice.* (package-dir), which
## mypy cannot see through the editable install's import hook: a tree of symlinks in the venv
## gives it backoffice/{envs,graders,training}.
MYPY_PATH := $(VENV)/mypy-path
typecheck: $(STAMP)
	mkdir -p $(MYPY_PATH)/backoffice
	for d in envs graders training; do ln -sfn $(CURDIR)/$$d $(MYPY_PATH)/backoffice/$$d; done
	MYPYPATH=$(MYPY_PATH) $(BIN)/mypy -p backoffice.envs -p backoffice.graders -p backoffice.training

## Headless Chromium for the viewer's browser tests (tests/eval/test_view.py): installed from Debian's
## registry when /usr/bin/chromium (or $$CHROMIUM) is missing and we are root; otherwise a note.
chromium:
	@if [ -z "$$CHROMIUM" ] && [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing chromium (apt-get)"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium missing and not root: install it (apt-get install chromium) or set CHROMIUM=/path; the browser tests will fail"; fi; \
	fi

## Lint and type check, then the whole test suite (2 workers; each domain's tests stay on one worker).
## BACKOFFICE_REQUIRE_BROWSER: the browser tests fail, not skip, without Chromium.
test: lint typecheck chromium
	BACKOFFICE_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -n 2 --dist loadgroup -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_engine.py
	$(BIN)/python benchmarks/bench_scale.py
	$(BIN)/python benchmarks/bench_memory.py
	$(BIN)/python benchmarks/bench_eval.py
	$(BIN)/python benchmarks/bench_catalog.py
	$(BIN)/python benchmarks/bench_learn.py

## The README's results table: every domain x catalog tier (MaskablePPO with 3 seeds on the
## conclusions and facts tiers, 1 on raw, one warm-started run each) beside its baselines and
## ceilings. Resumable: runs whose model, catalog and release are up to date are skipped, so it
## can be filled over several sittings. The table goes to results/README_table.md.
## TIMESTEPS=N overrides every run's budget (default: the catalog's tuned budget, else 200k).
TIMESTEPS ?=
results: $(STAMP)
	$(BIN)/backoffice results --env all $(if $(TIMESTEPS),--timesteps $(TIMESTEPS))

seeds: $(STAMP)
	$(BIN)/backoffice seeds build

## Removes what the tools made (the venv, runs/, caches); never a tracked file: the shipped models
## under models/ stay (`backoffice train` writes to runs/<env> by default).
clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis

## Tag the current commit locally, lightweight: v<version> (pyproject.toml) and seeds-<release>
## (the manifests' "release"), each only if absent; refuses a dirty tree. Pushing is yours:
## `git push origin v<version> seeds-<release>`. The convention: docs/RELEASING.md.
VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
RELEASE = $(shell sed -n 's/.*"release":"\([^"]*\)".*/\1/p' seeds/approvals/manifest.json)
.PHONY: tag
tag:
	@git diff --quiet HEAD -- || { echo "make tag: commit or stash your changes first" >&2; exit 1; }
	@for t in v$(VERSION) seeds-$(RELEASE); do \
	  if git rev-parse -q --verify "refs/tags/$$t" >/dev/null; then echo "$$t: already tagged ($$(git rev-list -n1 $$t))"; \
	  else git tag "$$t" && echo "$$t: tagged $$(git rev-parse --short HEAD)"; fi; done
	@echo "publish with: git push origin v$(VERSION) seeds-$(RELEASE)"
