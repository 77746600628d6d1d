"""Shared code of the book, one folder per stage; every chapter calls into it.

errors       BookError and the one-line command-line wrapper
settings     where data, cache, results and models live; device and dtype
io           atomic file and folder writes, SHA-256 of files, model-folder manifests
provenance   what a chapter run read and wrote, recorded for the book build
codehash     digests of Python code (not comments or docstrings) that key cached results
datasets/    registry (checksummed files, download CLI), tasks (per-task readers, sampling), glove
encode/      models (load a spec), extraction (batched hidden states), collectors (streaming statistics), words
measure/     outliers, geometry, isotropy, positional, transforms, vocabulary, metrics
train/       probe, bpe, pretrain, finetune, calibration
experiments/ the papers' protocols, one module each, and the schemas of their result tables
book/        what a chapter calls: chapter (notebook helpers), results, figures, paper, plotting, scorecard
build/       how the book is built: sources, profiles, reference, runner, cache, edition, exercises, launch
"""

import os as _os
from pathlib import Path as _Path

__version__ = "0.2.0"

_expected = _os.environ.get("BOOK_LIB_ROOT")  # set by the book build: the checkout whose code keys its cache
if _expected and _Path(__file__).resolve().parent.parent != _Path(_expected).resolve():
    raise ImportError(
        f"this process imported lib from {_Path(__file__).resolve().parent} but the book build keys its cache on {_expected}/lib; "
        "run the build from the checkout whose lib you installed, or reinstall it there (pip install -e .)"
    )
