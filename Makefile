# sentcl — the README's two commands:
#   make book   set up .venv, run every chapter notebook in the demo profile, build the HTML book
#   make test   set up .venv, run the tests (the smoke-profile book included)
#   make check  the fast lane of an edit-test loop: lint, types, the tests not marked slow (no smoke book)
#   make wheel  set up .venv, build the release wheel dist/sentcl-<version>-py3-none-any.whl (for Colab:
#               upload it beside a chapter notebook); built from a copy, it leaves no build/ in the checkout
#
# Everything is pinned: torch first (CPU build), then the rest under requirements/lock.txt.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
UV_VERSION := 0.13.9
TORCH := $(shell cat requirements/torch.txt)
# A directory holding the torch wheel (this machine kind has one); otherwise PyTorch's CPU index.
TORCH_WHEELS ?= /opt/wheels
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
EXTRAS := offline,book,test,bench,hf,cluster
# The data root: $SENTCL_DATA if set, else ../shared/data when it exists.
DATA_DIR ?= $(or $(SENTCL_DATA),$(wildcard ../shared/data))
PROFILE ?= demo
PYTEST_ARGS ?=
# pytest-xdist workers for make test and make check: the 2 cores the budgets are measured on (0: one process).
# A module runs on one worker (--dist loadscope), so its fixtures are built once; the smoke book once for all.
TEST_WORKERS ?= 2

.PHONY: setup book test check wheel lock browser clean help

help:
	@echo "make book   set up .venv and build the book (profile $(PROFILE)) into _build/html"
	@echo "make test   set up .venv and run the tests"
	@echo "make check  lint, types and the tests not marked slow (no smoke book): the edit-test loop"
	@echo "make wheel  set up .venv and build the release wheel into dist/ (upload it beside a notebook on Colab)"
	@echo "make lock   re-resolve requirements/lock.txt from pyproject.toml"

MATHJAX := book/_vendor/mathjax/.version

setup: $(VENV)/.installed $(MATHJAX)

# MathJax 3 from the npm registry, served with the book (it must read offline).
$(MATHJAX): scripts/fetch_mathjax.py
	$(PYTHON) scripts/fetch_mathjax.py

$(VENV)/.installed: pyproject.toml requirements/lock.txt requirements/torch.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q "uv==$(UV_VERSION)"
	if [ -d "$(TORCH_WHEELS)" ] && ls "$(TORCH_WHEELS)"/torch-* >/dev/null 2>&1; then \
	  $(BIN)/uv pip install --python $(BIN)/python --find-links "$(TORCH_WHEELS)" "$(TORCH)"; \
	else \
	  $(BIN)/uv pip install --python $(BIN)/python --index-url "$(TORCH_INDEX)" "$(TORCH)"; \
	fi
	$(BIN)/uv pip install --compile-bytecode --python $(BIN)/python -c requirements/lock.txt -e ".[$(EXTRAS)]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

# Headless Chromium for the browser checks of the built book (Debian's package).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || echo "make: could not install chromium; the browser tests will be skipped"; \
	  else echo "make: chromium not found; the browser tests will be skipped"; fi; }

test: setup browser
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope $(PYTEST_ARGS)
	@echo "make: the precision tests again, as on a CPU without bf16 (oneDNN capped at AVX512_CORE)"
	ONEDNN_MAX_CPU_ISA=AVX512_CORE $(BIN)/python -m pytest -m precision -q

# The fast lane: what an edit can break in a couple of minutes; `make test` (CI) stays the whole suite.
check: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -m "not slow" -q -n $(TEST_WORKERS) --dist loadscope $(PYTEST_ARGS)

# sentcl-mini, the demo's encoder, is shipped (data/model/sentcl-mini): checked against its card's sha256, never retrained here
book: setup
	$(BIN)/sentcl pretrain --verify
	$(BIN)/sentcl reproduce --profile $(PROFILE) $(if $(DATA_DIR),--data-dir $(DATA_DIR),)

wheel: $(VENV)/.installed
	$(BIN)/sentcl wheel --out dist

lock:
	test -x $(BIN)/uv || { $(PYTHON) -m venv $(VENV) && $(BIN)/python -m pip install -q "uv==$(UV_VERSION)"; }
	$(BIN)/uv pip compile pyproject.toml $(foreach e,$(subst $(comma), ,$(EXTRAS)),--extra $(e)) \
	  --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
	  --find-links "$(TORCH_WHEELS)" --override requirements/torch.txt -o requirements/lock.txt

comma := ,

clean:
	rm -rf _build .pytest_cache
