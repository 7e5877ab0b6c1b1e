# Set-up and the two jobs the README names. Both create and fill .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: all venv samples test budget pytest lit fuzz cross-check clean

all: samples

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,cuda]'
	# Bytecode for the sources, as a wheel install writes it: where Python may not write
	# .pyc files itself (PYTHONDONTWRITEBYTECODE), each relaxc run would otherwise compile
	# every module again, a large share of a short build.
	$(BIN)/python -m compileall -q lib relaxc relaxas relaxld relaxrun
	touch $(STAMP)

venv: $(STAMP)

# The main job: run the samples through the toolchain.
samples: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH $(MAKE) -C samples check

# The size and complexity budget (pyproject.toml: [tool.ruff.lint.mccabe] for functions,
# [tool.relax-budget] for modules), checked before the tests.
budget: $(STAMP)
	$(BIN)/ruff check --quiet .
	$(BIN)/python scripts/budget.py

# Every test, after the budget: pytest unit tests (on every core: pytest-xdist) and lit text tests.
test: $(STAMP) budget
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python -m pytest -n auto --dist worksteal testsuite
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/lit -sv testsuite

# Differential fuzzing: random programs for about SECONDS seconds, every build configuration
# against the others and numpy; a failing program is saved under testsuite/differential/found/.
SECONDS ?= 60
fuzz: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python testsuite/differential/fuzz.py --seconds $(SECONDS)

# aarch64 artifacts built here, run under qemu-user in a Debian arm64 sysroot cached under
# build/cross/ (scripts/cross_check.py); skipped, with a line saying why, where qemu or the
# packages cannot be had.
cross-check: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python scripts/cross_check.py

clean:
	rm -rf $(VENV) build *.egg-info
