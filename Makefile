# Set-up and the two jobs the README names. Both create and fill .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: all venv samples test test-avx2-host budget pytest lit fuzz fuzz-differential cross-check clean

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

# Every test, after the budget: pytest unit tests (on every core: pytest-xdist) and lit text
# tests; then, on an AVX-512 host, the schedule tests once more with the host shown as an
# AVX2-only one (below), where a test that assumes the host's vector width shows first.
test: $(STAMP) budget
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python -m pytest -n auto --dist worksteal testsuite
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/lit -sv testsuite
	$(AS_AVX2_HOST) $(BIN)/python -m pytest -n auto --dist worksteal -q testsuite/tir_schedule

# Every test again with this x86-64 host shown as an AVX2-only AMD Zen 3
# (testsuite/avx2_host/sitecustomize.py): on an AVX-512 machine, what an AVX2 one would run.
AS_AVX2_HOST := RELAX_TEST_HOST=avx2 PYTHONPATH=$(CURDIR)/testsuite/avx2_host PATH=$(CURDIR)/$(BIN):$$PATH
test-avx2-host: $(STAMP)
	$(AS_AVX2_HOST) $(BIN)/python -m pytest -n auto --dist worksteal testsuite
	$(AS_AVX2_HOST) $(BIN)/lit -sv testsuite

# Fuzzing for about SECONDS seconds (make test runs a short fixed budget of each).
# fuzz: robustness, the tools on mutated sources, artifacts and inputs (testsuite/robustness/);
#   fails on exit 70, a traceback, a signal or a hang, each saved with a reproducer under
#   build/fuzz-findings/. SEED=N repeats a run (default: a new seed, printed).
# fuzz-differential: random programs, every build configuration against the others and numpy;
#   a failing program is saved under testsuite/differential/found/.
SECONDS ?= 60
SEED ?=
fuzz: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python testsuite/robustness/fuzz_robustness.py --seconds $(SECONDS) \
		$(if $(SEED),--seed $(SEED))

fuzz-differential: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python testsuite/differential/fuzz.py --seconds $(SECONDS)

# aarch64 artifacts built here, run under qemu-user in a Debian arm64 sysroot cached under
# build/cross/ (scripts/cross_check.py), and one run by the host's relaxrun --remote on an
# aarch64 relaxrun --serve there; skipped, with a line saying why, where qemu or the
# packages cannot be had.
cross-check: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python scripts/cross_check.py

clean:
	rm -rf $(VENV) build *.egg-info
