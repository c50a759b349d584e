# Fresh machine: `make demo` or `make test` create .venv, install pinned versions and run.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)

.PHONY: install demo test bench seeds clean

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[dev,train]"
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

## The main job: evaluate oracle, random and no-op on the held-out seeds of every domain.
demo: $(STAMP)
	rm -f runs/demo.jsonl
	$(BIN)/backoffice eval --env all --split heldout --out runs/demo.jsonl --plot runs/demo_pass_rate.png

## The whole test suite (2 workers; each domain's tests stay on one worker).
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_engine.py

seeds: $(STAMP)
	$(BIN)/backoffice seeds build

clean:
	rm -rf $(VENV) runs .pytest_cache
