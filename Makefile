# Two entry points on a fresh machine:  `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LLM4AD := llm4ad==1.11

.PHONY: setup demo test test-full test-fast test-under-load bench clean

$(BIN)/raise-ahd: pyproject.toml setup.py tasks/common/fastcheck.h $(wildcard tasks/*/_fast*.c)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# the host without its heavy extras (torch, wandb, tensorboardX, ttkbootstrap, numba); what it
	# lacks on purpose is not a conflict to report (pip would print it as an ERROR)
	$(BIN)/pip install -q --no-deps $(LLM4AD)
	# (and setuptools' note on every editable install of a flat layout is not shown)
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install -q --no-warn-conflicts -e '.[test]'
	@touch $@

setup: $(BIN)/raise-ahd

demo: setup
	$(BIN)/raise-ahd demo --out demo-out

# the whole suite in two test processes (what CI runs), the slow end-to-end cases once in a small size;
# test-full runs them at their full sizes, test-fast leaves them out
test: setup
	$(BIN)/python -m pytest -q -n 2 --dist worksteal

test-full: setup
	$(BIN)/python -m pytest -q -n 2 --dist worksteal --full-size

test-fast: setup
	$(BIN)/python -m pytest -q -n 2 --dist worksteal -m "not slow"

# the whole suite with two busy-loop processes beside it (the tests must hold on a busy machine)
test-under-load: setup
	$(BIN)/python tests/stress.py --busy 2 -- $(BIN)/python -m pytest -q -n 2 --dist worksteal

bench: setup
	$(BIN)/python benchmarks/obp_vs_host.py

clean:
	rm -rf $(VENV) demo-out .pytest_cache
