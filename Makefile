# Two entry points on a fresh machine:  `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LLM4AD := llm4ad==1.11

.PHONY: setup bytecode demo test test-full test-fast test-under-load bench clean

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

# every process a run or the suite starts (commands, the engine's fork server) imports the plugin: its
# modules compiled once, as a non-editable install has them, where PYTHONDONTWRITEBYTECODE would have each
# process compile them again (only what changed is compiled again)
bytecode: setup
	$(BIN)/python -m compileall -q raise_plugin tasks

demo: bytecode
	$(BIN)/raise-ahd demo --out demo-out

# the whole suite in two test processes (what CI runs), the slow end-to-end cases once in a small size;
# test-full runs them at their full sizes, test-fast leaves them out
test: bytecode
	$(BIN)/python -m pytest -q -n 2 --dist worksteal

test-full: bytecode
	$(BIN)/python -m pytest -q -n 2 --dist worksteal --full-size

test-fast: bytecode
	$(BIN)/python -m pytest -q -n 2 --dist worksteal -m "not slow"

# the whole suite with two busy-loop processes beside it (the tests must hold on a busy machine)
test-under-load: bytecode
	$(BIN)/python tests/stress.py --busy 2 -- $(BIN)/python -m pytest -q -n 2 --dist worksteal

bench: setup
	$(BIN)/python benchmarks/obp_vs_host.py

clean:
	rm -rf $(VENV) demo-out .pytest_cache
	find raise_plugin tasks -name __pycache__ -type d -prune -exec rm -rf {} +
