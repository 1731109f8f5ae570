# `make demo` and `make test` each bootstrap .venv on a fresh machine: the venv
# is (re)built whenever it is missing or pyproject.toml is newer than it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: all install test test-fast lit pytest demo lint bench clean

all: test

# pip's output goes to $(VENV)/install.log, shown only when the install fails.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing xdsl-ane and its pinned dependencies into $(VENV) (log: $(VENV)/install.log)"
	@{ $(BIN)/python -m pip install --quiet --upgrade pip && \
	   $(BIN)/python -m pip install --quiet -e '.[test]'; } > $(VENV)/install.log 2>&1 || \
	  { tail -n 40 $(VENV)/install.log; exit 1; }
	@touch $(STAMP)

install: $(STAMP)

# pytest's workers (pytest-xdist), each running one test file at a time so
# that a file's module fixtures are built once.
WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider -n $(WORKERS) --dist loadfile

# The whole lit suite and pytest; fails if either fails (both always run).
test: $(STAMP)
	@status=0; \
	$(BIN)/lit -sv --order=lexical tests/filecheck || status=1; \
	$(PYTEST) tests || status=1; \
	exit $$status

# The unit tests alone (about a minute): pytest without the tests marked slow.
test-fast: $(STAMP)
	$(PYTEST) -m "not slow" tests

lit: $(STAMP)
	$(BIN)/lit -v tests/filecheck

pytest: $(STAMP)
	$(BIN)/python -m pytest tests

lint: $(STAMP)
	$(BIN)/ruff check xdsl_ane tests bench
	$(BIN)/ruff format --check xdsl_ane tests bench

demo: $(STAMP)
	$(BIN)/python -m xdsl_ane.tools.demo

# `make bench` (not part of `make test`): the test extra plus the bench extra
# (torch, pinned, for coremltools' PyTorch frontend), behind a stamp of its own;
# then bench/results.json and the tables in bench/README.md (its first line
# says how long the last run took and how much memory it needed).
BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): $(STAMP)
	@$(BIN)/python -m pip install --quiet -e '.[test,bench]' >> $(VENV)/install.log 2>&1 || \
	  { tail -n 40 $(VENV)/install.log; exit 1; }
	@touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) build *.egg-info out
